/* allocscope explain, and diff --by (two recordings by group). */
#ifndef AS_CLI_EXPLAIN_H
#define AS_CLI_EXPLAIN_H

/* argv after "explain"; returns the exit status (0 ok, 2 bad input). */
int cli_explain(int argc, char **argv);

/* argv after "diff", which holds --by; 0 ok, 1 a group regressed, 2 bad. */
int cli_diff_by(int argc, char **argv);

#endif
