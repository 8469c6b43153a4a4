/* allocscope diff: compare two result sets, or two strategies on traces. */
#ifndef AS_CLI_DIFF_H
#define AS_CLI_DIFF_H

/* argv after "diff"; returns the exit status (0 ok, 1 regression, 2 bad). */
int cli_diff(int argc, char **argv);

#endif
