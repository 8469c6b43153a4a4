/*
 * allocscope results and comparisons: the rows `replay --json` writes, read
 * back or produced in memory, and the comparison of two sets of them that
 * `allocscope diff` prints and gates on.
 *
 * Ownership: an as_results owns every string of its rows (they are copied
 * in); an as_comparison points into the two as_results it was made from, so
 * destroy it first. Every destroy function accepts NULL. Nothing here prints:
 * the JSON and markdown writers write to the FILE the caller gives them.
 *
 * Kept in its own header so that the core API (allocscope.h) stays about
 * traces, plans and strategies.
 */
#ifndef ALLOCSCOPE_COMPARE_H
#define ALLOCSCOPE_COMPARE_H

#include "allocscope/allocscope.h"

/* One strategy on one trace: a row of `replay --json`. */
struct as_result_row {
	const char *trace;       /* trace name (the path given to replay) */
	const char *strategy;    /* the SPEC, e.g. "greedy-size" */
	uint64_t events;         /* of the trace (alloc + free); 0: unknown */
	uint64_t buffers;        /* of the trace; 0: unknown */
	uint64_t peak;
	uint64_t lower_bound;
	double peak_vs_lb;       /* peak / lower_bound, 0 when lb is 0 */
	bool valid;
	uint64_t overlaps;
	uint64_t violations;
	uint64_t failed;
	double plan_ms;
	/*
	 * No plan: `replay` left the strategy out, stopped at the default
	 * set's step limit (its run's "left_out" in the JSON). Its peak and
	 * counts are 0 and it is never compared by value.
	 */
	bool left_out;
};

struct as_results {
	struct as_result_row *rows;
	size_t nrows;
	size_t capacity;         /* private */
};

struct as_results *as_results_create(void);
void as_results_destroy(struct as_results *r);

/* Append a copy of `row` (its strings are copied). */
int as_results_add(struct as_results *r, const struct as_result_row *row);

/*
 * Append the row of an existing plan of `t` made by SPEC, with its
 * validation report (trace name: t->path).
 */
int as_results_add_plan(struct as_results *r, const struct as_trace *t,
			const char *spec, const struct as_plan *p,
			const struct as_report *rep);

/*
 * Run SPEC on trace `t` (as_strategy_run with options o, NULL: defaults;
 * o->cancel stops it), validate the plan and append its row (trace name:
 * t->path). Errors of the strategy (unknown option, trace it cannot handle)
 * fill diag. An invalid plan is not an error: it is a row with valid=false.
 */
int as_results_run(struct as_results *r, const struct as_trace *t,
		   const char *spec, const struct as_runner_options *o,
		   struct as_diag *diag);

/*
 * Read a file written by `replay --json`, in either shape: one trace
 * {"trace": {...}, "results": [...]} or several
 * {"format": "allocscope-results", "version": 1, "runs": [{trace, results}]}.
 * Rows are appended to `r`. Defined in formats/json/results.c.
 */
int as_results_load(struct as_results *r, const char *path,
		    struct as_diag *diag);
/* The same from memory; `name` is used in diagnostics. */
int as_results_parse(struct as_results *r, const char *name,
		     const char *data, size_t len, struct as_diag *diag);

/* ---- Writing the results of a replay ---- */

/*
 * One strategy's result on a trace, as the caller made and checked it. The
 * peak, failures and moments are taken while the plan still has its
 * offsets; after that the writer reads the plan's offsets only for an
 * invalid plan's violations and, when space_peak is NULL, for the peak of
 * each space of a plan of several.
 */
struct as_replay_result {
	const char *spec;               /* the SPEC, e.g. "greedy-size" */
	const struct as_plan *plan;     /* statistics, notes, spaces, rounds */
	const struct as_report *report; /* as_validate's, of this plan */
	uint64_t peak;                  /* as_plan_peak(plan, trace, -1) */
	uint32_t failed;                /* as_plan_failed */
	const uint64_t *peak_time;      /* the peak moment; NULL: none */
	const uint64_t *space_peak;     /* plan->nspaces peaks, or NULL */
};

/* One trace replayed: what `replay --json` writes of it. */
struct as_replay_run {
	const struct as_trace *trace;
	uint64_t lower_bound;                  /* as_trace_lower_bound */
	const uint64_t *lower_bound_time;      /* its moment; NULL: none */
	const struct as_replay_result *results; /* in the order run */
	size_t nresults;
	/* The strategies that stopped at the step limit, without a plan. */
	const char *const *left_out;
	size_t nleft_out;
	uint64_t step_limit;
};

/*
 * Write `run` to `f` as the JSON object `replay --json` writes for one
 * trace: {"trace": {...}, "results": [...]}, with "left_out" when some
 * strategy was left out, and a newline (docs/diff.md); as_results_load reads
 * it back. The function only reads `run` and what it points to, all of
 * which stays the caller's. The moments (as_plan_peak_moment,
 * as_trace_peak_moment) are the caller's to compute. Returns 0, or AS_EIO when `f` has an
 * error.
 */
int as_replay_write_json(const struct as_replay_run *run, FILE *f);

/* ---- Comparing two result sets ---- */

enum as_metric {
	AS_METRIC_PEAK,
	AS_METRIC_PEAK_VS_LB,
	AS_METRIC_FAILED,
	AS_METRIC_PLAN_MS,
};

int as_metric_from_name(const char *name, enum as_metric *out);
const char *as_metric_name(enum as_metric m);
/* Whether the metric is a time (noisy) rather than a deterministic count. */
bool as_metric_is_timing(enum as_metric m);

struct as_compare_options {
	enum as_metric metric;
	/*
	 * A row regresses when the metric grows by more than this percentage
	 * of its base value (0: any growth). A negative value selects the
	 * metric's default: 0 for sizes and counts, 10 for plan_ms.
	 */
	double max_regress_pct;
	/*
	 * Timing metrics only: a slowdown must also exceed this many
	 * milliseconds to count (negative: default 2 ms). Plans of small
	 * traces take well under a millisecond and their timings jitter by
	 * several hundred percent.
	 */
	double noise_ms;
	/*
	 * Match rows by trace only, not by trace and strategy: comparing two
	 * different strategies on the same traces (`diff -s A -s B`).
	 */
	bool by_trace_only;
	/* Rows of BASE with no match in NEW fail the comparison too. */
	bool missing_fails;
};

/* Fill `o` with the defaults for metric peak. */
void as_compare_defaults(struct as_compare_options *o);

enum as_change {
	AS_CH_SAME,          /* equal, or a timing change within the noise */
	AS_CH_BETTER,        /* the metric went down */
	AS_CH_WORSE,         /* went up, but within --max-regress */
	AS_CH_REGRESSED,     /* went up beyond --max-regress */
	AS_CH_MORE_FAILED,   /* peak looks fine, but more allocations failed */
	AS_CH_INVALID,       /* the new plan is not valid */
	AS_CH_FIXED,         /* the base plan was invalid, the new one is valid */
	AS_CH_TRACE_CHANGED, /* the trace itself differs (lower bound, buffers
				or events): the rows are not comparable */
	AS_CH_ONLY_BASE,     /* no matching row in NEW */
	AS_CH_LEFT_OUT_NEW,  /* NEW left it out at its step limit: no plan to
				compare (BASE may have one, or none) */
	AS_CH_LEFT_OUT_BASE, /* BASE left it out at its step limit */
	AS_CH_ONLY_NEW,      /* no matching row in BASE (the last) */
};

struct as_comparison;
struct as_compare_row;
/*
 * Whether row `r` of `c` fails it: as_change_fails, or with missing_fails a
 * plan of BASE that NEW lacks (no row, or left out).
 */
bool as_compare_row_fails(const struct as_comparison *c,
			  const struct as_compare_row *r);

/* "regressed", "better", "only in base", ... */
const char *as_change_name(enum as_change c);
/* Whether this kind of row makes the comparison fail (exit status 1). */
bool as_change_fails(enum as_change c);

struct as_compare_row {
	const struct as_result_row *base;  /* NULL for AS_CH_ONLY_NEW */
	const struct as_result_row *new_;  /* NULL for AS_CH_ONLY_BASE */
	double base_value, new_value;      /* the metric; 0 when absent */
	double change;                     /* new - base */
	double change_pct;                 /* change * 100 / base; see below */
	bool pct_infinite;                 /* base 0, new above 0 */
	enum as_change status;
};

/* Whether both sides of r have a plan, so that it shows a change. */
static inline bool as_compare_row_paired(const struct as_compare_row *r)
{
	return r->base && r->new_ && !r->base->left_out && !r->new_->left_out;
}

/*
 * One side of row r as reports show it: the metric formatted into buf,
 * "left out", or NULL when that side has no row.
 */
const char *as_compare_value(const struct as_comparison *c,
			     const struct as_compare_row *r, bool new_side,
			     char *buf, size_t len);

struct as_comparison {
	struct as_compare_options opts;    /* with defaults resolved */
	struct as_compare_row *rows;       /* BASE order, then NEW-only rows */
	size_t nrows;
	size_t count[AS_CH_ONLY_NEW + 1];  /* rows per status */
	size_t nfailing;                   /* rows that fail (see below) */
};

/*
 * Match the rows of `base` and `new_` and classify each pair. Rows match by
 * trace name and strategy; a trace name that matches nothing exactly is
 * matched by its file name (the part after the last '/') when that is
 * unique on both sides, so results written from different directories
 * still line up. A key that occurs several times on one side matches in
 * order. Options may be NULL (defaults). The result points into both sets.
 */
int as_compare(const struct as_results *base, const struct as_results *new_,
	       const struct as_compare_options *opts,
	       struct as_comparison **out);
void as_comparison_destroy(struct as_comparison *c);

/*
 * The comparison fails: some row regressed, failed more allocations or is
 * invalid (or, with missing_fails, is missing from NEW).
 */
static inline bool as_comparison_failed(const struct as_comparison *c)
{
	return c->nfailing != 0;
}

/*
 * The comparison as a Markdown table for a CI job summary or a pull-request
 * comment: a one-line verdict, then the rows that fail, then the other
 * changed rows and the unmatched ones; unchanged rows are summarised in one
 * line unless `all_rows`. Returns 0, AS_ENOMEM or AS_EIO.
 */
int as_comparison_write_markdown(const struct as_comparison *c, FILE *f,
				 bool all_rows);

/*
 * The comparison's counts in words, the one sentence the text and the
 * Markdown reports print: "N rows: N regressed, N invalid, ..., N only in
 * new" and the rows left out at the step limit, without a final stop.
 * Written as snprintf writes (cut to fit, always terminated); returns buf.
 */
const char *as_comparison_counts(const struct as_comparison *c, char *buf,
				 size_t len);

/*
 * The rows in report order: failing rows first, then worse, better, fixed,
 * unmatched and unchanged rows; within a group, the largest change first.
 * `order` receives c->nrows indices into c->rows. Returns 0 or AS_ENOMEM.
 */
int as_comparison_order(const struct as_comparison *c, size_t *order);

/* ---- Comparing two plans of one trace (the visual diff) ---- */

enum {
	AS_MARK_MOVED = 1 << 0,    /* offset, space or placed/failed differs */
	AS_MARK_AT_PEAK = 1 << 1,  /* live in plan b when its peak is reached */
};

struct as_plan_delta {
	uint64_t peak_a, peak_b;
	uint32_t moved;          /* buffers marked AS_MARK_MOVED */
	uint32_t at_peak;        /* buffers marked AS_MARK_AT_PEAK */
	/*
	 * The first buffer (trace order) whose top reaches plan b's peak, or
	 * AS_NONE when b places nothing; the AS_MARK_AT_PEAK buffers are those
	 * of its space live at its start: the cross-section at the peak.
	 */
	uint32_t peak_buffer;
};

/*
 * How plan b of trace t differs from plan a: which buffers moved and which
 * sit at b's peak. `marks` is NULL or t->nbuffers bytes that receive the
 * AS_MARK_* bits of each buffer. O(n).
 */
int as_plan_delta(const struct as_trace *t, const struct as_plan *a,
		  const struct as_plan *b, uint8_t *marks,
		  struct as_plan_delta *out);

/* Format a metric value the way reports show it ("12345", "1.0532"). */
const char *as_metric_format(enum as_metric m, double v, char *buf,
			     size_t len);

#endif
