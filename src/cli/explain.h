/* allocscope explain, and diff --by (two recordings by group). */
#ifndef AS_CLI_EXPLAIN_H
#define AS_CLI_EXPLAIN_H

struct as_explain_options;
struct as_explain_rule;

/* The most --rule NAME=REGEX a command line takes. */
#define CLI_MAX_RULES 64

/*
 * --rule NAME=REGEX (arg, cut in place at its '='), appended to rules
 * (room for CLI_MAX_RULES) and o->rules pointed at them; 0, or the exit
 * status of a usage error of command `who` (explain, replay --bands).
 */
int cli_category_rule(const char *who, const char *usage, char *arg,
		      struct as_explain_options *o,
		      struct as_explain_rule *rules);

/* argv after "explain"; returns the exit status (0 ok, 2 bad input). */
int cli_explain(int argc, char **argv);

/* argv after "diff", which holds --by; 0 ok, 1 a group regressed, 2 bad. */
int cli_diff_by(int argc, char **argv);

#endif
