/*
 * Helpers the CLI commands share: expanding trace arguments (files and
 * directories) into a list of trace files, and a progress bar on stderr.
 */
#ifndef AS_CLI_SHARED_H
#define AS_CLI_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "allocscope/allocscope.h"

/*
 * Expand `args` into trace paths: a file is kept as given; a directory is
 * walked recursively in name order, keeping files whose extension is a
 * trace format (.ops .txt .json .csv; every file when `all_files`) or
 * whose content is a profiler trace, skipping hidden entries. On success *out is a malloc'ed array of
 * malloc'ed strings (free with cli_paths_free). A directory with no trace
 * in it is an error, described in diag.
 */
int cli_expand_traces(char *const *args, size_t nargs, bool all_files,
		      char ***out, size_t *nout, struct as_diag *diag);
void cli_paths_free(char **paths, size_t n);

/*
 * Print "FILE:LINE: message" on stderr, escaped; `err`, what the failing
 * call returned, says what went wrong when d has no message. Returns exit
 * status 2.
 */
int cli_report_diag(const struct as_diag *d, int err);

/*
 * Whether `path` can be read as an input file (as_open_input: a regular
 * file, or a FIFO, which passes unopened: the check never blocks), for
 * readers the CLI hands a path to; "-"
 * passes when `stdin_ok` (a reader that takes it as standard input). AS_OK,
 * or an error described in diag (with the path as its file).
 */
int cli_check_input(const char *path, bool stdin_ok, struct as_diag *diag);

/*
 * How every command reads a trace: `lo` zeroed, then the input limit
 * ALLOCSCOPE_MAX_INPUT sets (when set). 0, or exit status 2 after saying
 * what is wrong with it.
 */
int cli_load_init(struct as_load_options *lo);

/* `--max-input-bytes VALUE` into lo: 0, or exit status 2 after a message. */
int cli_max_input(const char *value, struct as_load_options *lo);

/*
 * `s` escaped for a terminal (as_escape, AS_ESCAPE_TEXT), in one of four
 * slots reused in turn: valid until the fourth call after this one. For
 * every path and name the CLI prints.
 */
const char *cli_esc(const char *s);
/*
 * "WHO: " and fmt with arg (escaped) on stderr, then the usage text;
 * returns 2, the exit status of a usage error.
 */
int cli_usage_error(const char *who, const char *usage, const char *fmt,
		    const char *arg);

/*
 * The last arm of a command's option loop, for an argument no other arm
 * took: "-h" or "--help" prints the usage on stdout and returns -1 (the
 * command then exits 0); any other "-..." is the usage error "unknown or
 * incomplete option" (2); anything else, "-" too, is appended to args (0).
 */
int cli_rest_arg(char *a, const char *who, const char *usage,
		 char **args, size_t *nargs);

/* Something written to a stream: AS_OK, or an error. */
typedef int (*cli_write_fn)(void *ctx, FILE *f);

/*
 * Write through fn to `path` ("-": stdout), whole or not at all (an atomic
 * replace); on failure say why on stderr ("PATH: cannot write: REASON",
 * "PATH: write failed: REASON") and return 2, else 0.
 */
int cli_write_out(const char *path, cli_write_fn fn, void *ctx);

/*
 * Before any work: each of the nout outputs (NULL entries skipped) is
 * checked against the nin inputs (as_output_check). An output that is an
 * input, or whose name cannot be followed, is reported ("FILE: is an input
 * of this run") and the result is 2; an output that will be written in
 * place, not atomically, gets a note on stderr. 0 otherwise.
 */
int cli_check_outputs(const char *const *outputs, size_t nout,
		      const char *const *inputs, size_t nin);

/*
 * At exit, standard output then standard error flushed and closed
 * (as_close_stream); a failure is "allocscope: write error: REASON" on
 * stderr where it can still be written, and exit status 2.
 */
void cli_close_std_at_exit(void);

/* True when `path` names a directory. */
bool cli_is_dir(const char *path);

/*
 * -j N: strategies run at once (as_runner_options.jobs), 1 to CLI_JOBS_MAX,
 * as the usage texts say; false when `arg` is not such a number.
 */
#define CLI_JOBS_MAX 64
bool cli_parse_jobs(const char *arg, unsigned *jobs);
/*
 * A number from 0 to max (--max-regress, --noise-ms): NULL and *v, or why
 * it is not one ("is not a number", "is negative", "is too large"), for
 * the caller's message, which gives the range.
 */
#define CLI_AMOUNT_MAX 1e9
const char *cli_parse_amount(const char *arg, double max, double *v);
/* The usage error for such an amount: "WHO: OPT: 'ARG' WHY (give 0 to
 * 1000000000 UNIT)" and the usage text; returns 2. */
int cli_amount_error(const char *who, const char *usage, const char *opt,
		     const char *arg, const char *why, const char *unit);
/* A decimal number below 2^64 (digits only); false when it is not. */
bool cli_parse_u64(const char *arg, uint64_t *v);

/*
 * A progress bar on stderr, drawn only when stderr is a terminal, the
 * caller enabled it and the run has lasted long enough to be worth it
 * (half a second), so short runs and pipes see nothing.
 */
struct cli_progress {
	bool enabled, drawn;
	size_t total, done;
	double t0, last;
};

void cli_progress_start(struct cli_progress *p, size_t total, bool enabled);
void cli_progress_step(struct cli_progress *p, const char *what);
void cli_progress_end(struct cli_progress *p);

#endif
