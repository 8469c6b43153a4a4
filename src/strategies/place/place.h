/*
 * Private: placement machinery shared by the offline planners (strip,
 * greedy-breadth, bestfit).
 *
 * A planning problem is the set of buffers of one address space that need
 * room of their own: aliases are placed by the driver and zero-size buffers
 * take offset 0, so neither appears here. Lifetimes are compressed to
 * *sections*: the distinct start and end times, sorted, cut time into
 * sections, and a rectangle covers sections [t0, t1). Two rectangles share
 * time exactly when their section ranges intersect.
 *
 * The placer answers "the lowest (or the tightest) offset where rectangle i
 * fits among the already placed rectangles that share time with it". Placed
 * rectangles are kept in a segment tree over sections (each one at the
 * O(log S) nodes that cover its range), so a query visits only the placed
 * rectangles that share time with i, never all pairs.
 */
#ifndef AS_PLACE_H
#define AS_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "strategies/place/budget.h"

struct as_rect {
	uint64_t size;
	uint32_t t0, t1;   /* sections [t0, t1), t0 < t1 */
	uint32_t buf;      /* index in the trace */
	uint8_t align_log2;
};

struct as_problem {
	struct as_rect *r;
	uint32_t n;
	uint32_t nsections;
	uint64_t lower_bound;   /* most bytes live in one section */
	uint64_t *times;        /* nsections + 1 boundaries (trace times) */
};

/*
 * Build the problem of address space `space`; returns 0 or AS_ENOMEM.
 * Release with as_problem_finish (also after a failure).
 */
int as_problem_init(struct as_problem *pb, const struct as_trace *t,
		    uint16_t space);
void as_problem_finish(struct as_problem *pb);
/* log2 of the smallest alignment of the problem's rectangles (0: none). */
uint8_t as_problem_grain(const struct as_problem *pb);

/*
 * The buffers needing room bucketed by space in one pass (the problems of
 * all spaces in O(n log n) instead of a pass over the buffers per space):
 * space s holds idx[first[s] .. first[s + 1]). nspaces is at least 1.
 * Release with as_spaces_finish (also after a failure).
 */
struct as_spaces {
	uint32_t *first;
	uint32_t *idx;
	uint32_t nspaces;
};

/* Index of x in the sorted unique array v[0..n): a time's section. */
uint32_t as_rank_u64(const uint64_t *v, uint32_t n, uint64_t x);

int as_spaces_init(struct as_spaces *sp, const struct as_trace *t);
void as_spaces_finish(struct as_spaces *sp);
/* as_problem_init of `space` from the buckets: the same problem. */
int as_problem_init_space(struct as_problem *pb, const struct as_trace *t,
			  const struct as_spaces *sp, uint16_t space);

/* Bytes live in each section (out has nsections entries). */
void as_problem_load(const struct as_problem *pb, uint64_t *out);

/*
 * Renumber the sections of pb, a part of a larger problem, to its own: the
 * times where one of its rectangles starts or ends, kept in `times` (room
 * for 2 n). Each old section holds the same rectangles as the new
 * one it falls in, so the problem is the same, but what costs per section
 * (the exact search keeps a floor per section and per section of each
 * rectangle) costs the part's size, not the trace's. `mark` is scratch of
 * nsections + 2 entries.
 */
void as_problem_compact(struct as_problem *pb, uint32_t *mark,
			uint64_t *times);

/*
 * A per-space planner: fill off[i] for every rectangle of pb. Returns 0 or
 * a negative code (diag filled).
 */
typedef int (*as_space_plan_fn)(const struct as_problem *pb, uint64_t *off,
				void *ctx, struct as_plan *p,
				struct as_diag *diag);

/*
 * Run `fn` once per address space that has buffers to place and write the
 * offsets into p->offset; zero-size buffers get 0, aliases are left alone.
 */
int as_plan_spaces(const struct as_trace *t, struct as_plan *p,
		   as_space_plan_fn fn, void *ctx, struct as_diag *diag);

/*
 * The largest trace (buffers) the exact baselines (greedy-size, bestfit,
 * greedy-breadth) take by default: in replay's default set and as strip's
 * incumbents. Their walks grow with fragmentation, not only with n log n:
 * on `place_gen.py random 1000000` greedy-size takes 25 us and about 800
 * bytes a buffer, bestfit 87 us (docs/benchmarks.md). Named with -s they run
 * at any size.
 */
#define AS_PLACE_BASELINE_MAX 4000000
bool as_place_baseline_default(const struct as_trace *t);

enum as_fit {
	AS_FIT_LOWEST,   /* the lowest offset that fits */
	AS_FIT_BEST,     /* the smallest gap that fits, else the top */
};

struct as_placer;

struct as_placer *as_placer_create(const struct as_problem *pb);
void as_placer_destroy(struct as_placer *pl);
/* Forget every placement. */
void as_placer_reset(struct as_placer *pl);
/*
 * Where rectangle i would go; false when the offset would overflow 64 bits.
 * With AS_FIT_BEST, *gap_out (may be NULL) is the size of the chosen gap,
 * UINT64_MAX when it goes on top.
 */
bool as_placer_find(struct as_placer *pl, uint32_t i, enum as_fit fit,
		    uint64_t *off, uint64_t *gap_out);
/* An address range [lo, hi). */
struct as_span {
	uint64_t lo, hi;
};

/*
 * The address ranges of the placed rectangles sharing time with r (runs of
 * touching ones merged), sorted by lo, in the placer's scratch: valid until
 * the next call, and the caller may rewrite them. *n gets their number;
 * NULL when memory ran out.
 */
struct as_span *as_placer_spans(struct as_placer *pl, const struct as_rect *r,
				uint32_t *n);
/*
 * Record rectangle i at offset off. While a processor of the budget's
 * spare ones would otherwise sit idle, a walk without an undo log records
 * its puts on a thread of their own and goes on with its next find, which
 * waits only for the puts of rectangles sharing time with it: the same
 * offsets, in less time (pipe.c).
 */
void as_placer_put(struct as_placer *pl, uint32_t i, uint64_t off);
/* Record puts on a thread of their own whether a processor is spare or not
 * (for the tests). */
void as_placer_threaded(struct as_placer *pl);
/* Whether a placement ran out of memory (finds then fail). */
bool as_placer_nomem(struct as_placer *pl);
/*
 * Spend the finds' steps from now on from budget b (NULL: none), which
 * several placers may share: once it is spent (budget.h) or a walk is
 * behind its pace (as_steps_behind), finds fail. While a processor of
 * b->spare would otherwise sit idle, puts are recorded on it (pipe.c). A
 * walk starts at the reset.
 */
void as_placer_budget(struct as_placer *pl, struct as_budget *b);
/*
 * Why a find or as_place_order failed: AS_ENOMEM, AS_ELIMIT (the budget
 * spent), AS_ECANCELED or AS_STRATEGY_PAST_2_64 (an offset past 2^64).
 */
int as_placer_error(struct as_placer *pl);
/* Take a placed rectangle out again (any order). */
void as_placer_pop(struct as_placer *pl, uint32_t i);
/*
 * Verify the placer's index against a plain scan of the placed rectangles:
 * every node's runs are the merged ranges of the rectangles recorded there,
 * its counts right, every union and snapshot (unless a pop left them stale)
 * and every path union a query would read as fresh the union it stands
 * for, and a few finds the brute-force fit among the placed rectangles
 * sharing time. Drains the puts' thread first. Returns how many invariants
 * are broken and words the first in msg (len bytes, may be NULL); never
 * prints. A placer out of memory is not looked at (its finds fail).
 */
uint64_t as_placer_check(struct as_placer *pl, char *msg, size_t len);
/*
 * Log what every put changes from now on (it resets the placer), so popping
 * the rectangles last put first keeps queries as fast as before the puts:
 * for trial placements taken back. Without it a pop leaves the placer exact
 * but slow (every query visits the rectangles it shares time with) until
 * the next reset. The log costs memory per put, so only callers that take
 * back ask for it.
 */
void as_placer_undo(struct as_placer *pl);

/*
 * Place rectangles in `order` (n entries), each where `fit` says; writes
 * off[] and returns the peak, or UINT64_MAX when a find failed
 * (as_placer_error tells why).
 */
uint64_t as_place_order(struct as_placer *pl, const uint32_t *order,
			uint32_t n, enum as_fit fit, uint64_t *off);

/*
 * Place every rectangle in time order, sweeping the sections once: frees
 * first, then the rectangles starting there (larger first), each into a free
 * gap between the live ones (`fit`: the lowest or the tightest), or on top.
 * The gaps sit in balanced trees, so a pass costs O(n log n) whatever the
 * overlaps. With `fixed` (may be NULL), the rectangles marked there keep
 * their off[] and the others go to the lowest offset clear of both the live
 * ones and the fixed ones that share their time, which `obst` (a placer
 * holding exactly the fixed ones) finds. A cancel of `budget` (may be NULL;
 * only its cancel flag and deadline are read) stops it within 256
 * rectangles, its deadline within 4096. Returns the peak, UINT64_MAX on
 * 64-bit overflow, or 0 with *err = AS_ENOMEM, AS_ECANCELED, AS_ELIMIT
 * (the deadline) or AS_EINVAL (fixed rectangles that meet).
 */
uint64_t as_place_sweep(const struct as_problem *pb, enum as_fit fit,
			const uint8_t *fixed, struct as_placer *obst,
			const struct as_budget *budget, uint64_t *off,
			int *err);

/*
 * Skyline greedy: repeatedly drop the unplaced rectangle whose skyline
 * offset (the highest top among the placed ones sharing its time) is
 * lowest, ties by `rank` (lower first, NULL: index), at that offset. It is
 * the exact search's first dive without pruning; it leaves the room under a
 * rectangle's skyline unused, which on packed traces costs less than
 * lowest-fit orders lose. O((n + r) log n) time, r the times a rectangle's
 * offset rose between its pushes (at most the overlapping pairs), O(n + S)
 * memory. It stops when budget (may be NULL) is canceled or the clock
 * passes `deadline` (INFINITY: never). Returns the peak, UINT64_MAX on
 * overflow, or 0 with *err = AS_ENOMEM, AS_ECANCELED or AS_ELIMIT (the
 * deadline).
 */
uint64_t as_place_skyline(const struct as_problem *pb, const uint32_t *rank,
			  const struct as_budget *budget, double deadline,
			  uint64_t *off, int *err);

/* Overlapping pairs of rectangles (what one as_place_order pass visits). */
uint64_t as_problem_pairs(const struct as_problem *pb);

/*
 * Per address space (max(1, nspaces) entries), the peak of plan p over the
 * buffers that need room: UINT64_MAX where one of them has no usable
 * offset (none, past 2^64, or in another space).
 */
void as_plan_space_peaks(const struct as_trace *t, const struct as_plan *p,
			 uint64_t *peak);

/* Peak of a placement: largest off + size. */
uint64_t as_place_peak(const struct as_problem *pb, const uint64_t *off);

/* as_sort_u32 order of rectangle indices by first section (ctx: pb). */
bool as_rect_by_t0(uint32_t a, uint32_t b, const void *pb);

/*
 * The baselines' orders, for strip's incumbents (each defined in its
 * strategy's file): fill order[0..pb->n) and return 0 or AS_ENOMEM.
 * greedy-size: size, then length, largest first, placed AS_FIT_LOWEST;
 * bestfit: the same or length first (by_length), AS_FIT_BEST;
 * greedy-breadth: by the broadest section spanned, then size, AS_FIT_BEST.
 */
int as_order_greedy_size(const struct as_problem *pb, uint32_t *order);
/* Sort rectangle indices ids[0..n) into greedy-size's order. */
int as_sort_greedy_size(const struct as_problem *pb, uint32_t *ids,
			uint32_t n);
int as_order_bestfit(const struct as_problem *pb, bool by_length,
		     uint32_t *order);
int as_order_breadth(const struct as_problem *pb, uint32_t *order);

/* ---- Exact search: branch and bound over canonical placements ---- */

enum as_exact_result {
	AS_EXACT_FOUND,      /* off[] holds a placement with peak <= cap */
	AS_EXACT_NONE,       /* proven: no placement has peak <= cap */
	AS_EXACT_TIMEOUT,    /* the budget ran out first */
};

struct as_exact_stats {
	uint64_t nodes;
	uint32_t restarts;
};

/*
 * Look for a placement of every rectangle of pb with peak <= cap before the
 * monotonic clock reaches deadline_ms (see as_now_ms) and within max_nodes
 * search nodes (0: no limit). A cancel of `budget` (may be NULL; only its
 * cancel flag is read) ends it as the deadline does, within 1024 nodes.
 * `seed` picks which priority the rounds start with. The search is
 * deterministic: with the same nodes it gives the same answer; only the
 * deadline and a cancel depend on the machine. off[] is written only on
 * AS_EXACT_FOUND; st (may be NULL) gets the effort added. Returns an enum
 * as_exact_result, or AS_ENOMEM.
 */
int as_exact_solve(const struct as_problem *pb, uint64_t cap,
		   double deadline_ms, const struct as_budget *budget,
		   uint64_t max_nodes, uint64_t seed, uint64_t *off,
		   struct as_exact_stats *st);

/* ---- Strategy strip: the seed's method, exposed for the tests ---- */

enum as_risk { AS_RISK_NONE, AS_RISK_LOW, AS_RISK_MEDIUM, AS_RISK_HIGH };

/*
 * Classify every rectangle of a placement against `threshold`: high risk =
 * tops above it and whatever shares time with them; medium = tops exactly at
 * it and whatever shares time with them (unless high); low = sharing time
 * with a high or medium one; none = the rest. O(n + sections).
 */
void as_strip_classify(const struct as_problem *pb, const uint64_t *off,
		       uint64_t threshold, uint8_t *risk);

/*
 * Split ids[0..n) into groups of rectangles linked by time overlap; ids are
 * reordered group by group (by start inside a group) and first[g] is where
 * group g starts (first[ngroups] == n). Returns the number of groups, or
 * AS_ENOMEM. first needs n + 1 entries.
 */
int as_strip_group(const struct as_problem *pb, uint32_t *ids, uint32_t n,
		   uint32_t *first);

/* The order metrics of option metric=, NULL terminated. */
extern const char *const as_strip_metrics[];

/* Sort ids[0..n) by metric m (an index into as_strip_metrics). */
int as_strip_order(const struct as_problem *pb, int m, uint32_t *ids,
		   uint32_t n);

/*
 * The same with some rectangles held where they are: fixed[i] is the forced
 * offset of rectangle i, or AS_NO_OFFSET when it is free (fixed may be
 * NULL). A fixed rectangle is dropped in canonical order at its own offset
 * (the room between the skyline and it stays empty unless free rectangles
 * fill it first) and takes no part in dominance, which only moves free
 * ones. Used to re-solve a window of a larger plan exactly.
 */
int as_exact_solve_fixed(const struct as_problem *pb, const uint64_t *fixed,
			 uint64_t cap, double deadline_ms,
			 const struct as_budget *budget, uint64_t max_nodes,
			 uint64_t seed, uint64_t *off,
			 struct as_exact_stats *st);

#endif
