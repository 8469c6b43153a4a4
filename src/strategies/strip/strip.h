/*
 * Private to strategy strip: the pieces shared by its files. strip.c holds
 * the options and the choice of path per address space; seed.c the seed's
 * method and the searches after it (as_strip_full); large.c the path for
 * traces with many overlapping pairs (as_strip_large); repair.c the peak
 * repair it ends with (as_strip_window_step, as_strip_repair_peak).
 */
#ifndef AS_STRIP_H
#define AS_STRIP_H

#include <stdbool.h>
#include <stdint.h>

#include "strategies/place/place.h"

struct as_plan;

enum { SEARCH_AUTO, SEARCH_EXACT, SEARCH_LOCAL, SEARCH_NONE };

/*
 * Above this many overlapping pairs a pass of the general placer costs
 * seconds: such traces take the sweep (see strip_large).
 */
#define AS_STRIP_PAIRS_MAX 4000000ULL
#define AS_STRIP_PAIRS_TIER 20000000ULL
/*
 * The exact search keeps a sorted list per depth: n^2/2 entries of 16
 * bytes on a full dive (6000 rectangles: 288 MB). It never runs on more.
 */
#define AS_STRIP_EXACT_LIMIT 6000
#define AS_STRIP_REPAIR_MAX 300000
#define AS_STRIP_WINDOW_MAX 3000
/* Rectangles of the largest window the bound search tries (bound.c). */
#define AS_STRIP_CERT_MAX 1024
struct as_strip_cfg {
	int metric, search;
	uint64_t rounds, budget_ms, seed, exact_max, nodes, big;
	double start_ms;        /* the run's start: budget_ms counts from it */
	double search_from;     /* when the baselines were done */
	uint32_t nspace;        /* address spaces planned so far */
	bool multi;             /* the trace has several spaces */
	uint64_t left;          /* rectangles of the spaces not planned yet */
	/* Per trace buffer: the baselines' best offset, or NULL (none). */
	const uint64_t *inc;
	/*
	 * Per rectangle of the space being planned: a plan to start from
	 * (the baselines' best) and its peak, or NULL and UINT64_MAX.
	 */
	const uint64_t *start;
	uint64_t start_peak;
	/*
	 * What stops the search besides its deadlines: the run's cancel flag
	 * (as_budget_past), also handed to the placers, whose finds then fail
	 * with AS_ECANCELED. Never NULL; it counts no steps.
	 */
	struct as_budget *budget;
	/* Processors the restarts may borrow for a second thread; NULL: none. */
	struct as_procs *spare;
	/* Percent of a space's time for its certified bound (bound=). */
	uint64_t bound_pct;
	/*
	 * The least height the exact search on a whole space proved (it
	 * refuted every placement below it), 0: none; reset per space.
	 */
	uint64_t proven;
	uint64_t proven_nodes;
	uint64_t bound_spent;   /* the bound search's nodes, every space */
	const struct as_trace *trace;
};

/*
 * mark[s] (S + 1 entries) = how many of the sections before s the
 * rectangles i with risk[i] >= lo cover (seed.c): rectangle r meets them
 * when mark[r.t1] > mark[r.t0].
 */
void as_strip_cover(const struct as_problem *pb, const uint8_t *risk,
		    uint8_t lo, uint32_t *mark);

/* Record a round, naming the space when the trace has several. */
int as_strip_note(const struct as_strip_cfg *cfg, struct as_plan *p,
		  const char *what, uint64_t peak);

/*
 * Why a find or as_place_order of a strip placer failed, in strip's terms:
 * AS_ENOMEM, AS_ECANCELED, or AS_EUNSUPPORTED (an offset past 2^64).
 */
int as_strip_placer_error(struct as_placer *pl);

/*
 * The skyline greedy, ranked by the most bytes live under a rectangle then
 * its area: its peak, or 0 with *err on an error (AS_EUNSUPPORTED: an
 * offset past 2^64) or AS_ELIMIT when the clock passed `deadline` first.
 */
uint64_t as_strip_skyline_try(const struct as_problem *pb,
			      const struct as_budget *budget, double deadline,
			      uint64_t *out, int *err);

/* The seed's method and the search, on a problem of moderate overlap. */
int as_strip_full(const struct as_problem *pb, uint64_t *off,
		  struct as_strip_cfg *cfg, struct as_plan *p,
		  double deadline);

/*
 * Traces with too many overlapping pairs for the seed's method: the time
 * sweeps, big first, the window search and the peak repair.
 */
int as_strip_large(const struct as_problem *pb, uint64_t *off,
		   struct as_strip_cfg *cfg, struct as_plan *p,
		   double deadline);

/*
 * The large-trace path's repair (repair.c). The window step: top swaps,
 * then the window search, while a window lowers the peak, with `share` of
 * the time left to `deadline`; writes off[] and records a round when the
 * peak went down (*best follows it); stats windows_improved and top_swaps.
 * Returns 0 or a negative code.
 */
int as_strip_window_step(const struct as_problem *pb, uint64_t *off,
			 struct as_strip_cfg *cfg, struct as_plan *p,
			 double deadline, double share, uint64_t *best);

/*
 * Peak repair, a large-neighbourhood search: take a rectangle at the peak,
 * lift out every movable rectangle (fixed[i] == 0) sharing time with it
 * (the window), and put them back one by one at the lowest offset that
 * fits, in a few orders (largest first, earliest first, seeded shuffles).
 * Keep the first order whose highest top is below the peak, else restore
 * the window and widen it once to everything sharing time with the window.
 * Stops when a peak rectangle cannot be lowered, the time is up or the run
 * is canceled. Returns the new peak; *moves gets the windows lowered, *err
 * 0 or a negative code.
 */
uint64_t as_strip_repair_peak(const struct as_problem *pb, uint64_t *off,
			      const uint8_t *fixed, uint64_t seed,
			      double deadline, struct as_budget *budget,
			      uint32_t *moves, int *err);

/*
 * The restarts, strip's anytime search: the skyline greedy again and again
 * with its ties broken by randomly scaled areas, from off[] (the best plan
 * so far), until the bound, the deadline, nodes= (n per restart) or a
 * cancel; on a second thread too when cfg->spare has an idle processor and
 * nodes= is not set. Writes off[] and records a round when a restart is
 * lower; stats restarts, restart_wins and restart_threads. Returns 0 or a
 * negative code.
 */
int as_strip_restarts(const struct as_problem *pb, uint64_t *off,
		      struct as_strip_cfg *cfg, struct as_plan *p,
		      double deadline);

/*
 * A certified bound of pb: bound, at least pb->lower_bound; when higher,
 * the window [wa, wb) of pb's sections proves it (no placement of its
 * rectangles, cut to it, peaks below), found in `nodes` search nodes, the
 * proof itself in proof_nodes. The caller starts it at the load, wa = wb.
 */
struct as_strip_bound_out {
	uint64_t bound, nodes, proof_nodes;
	uint32_t wa, wb;
};

/*
 * The padded load (bound.c): the most, over pb's sections, of the live
 * sizes rounded up to the least alignment among them, less the largest
 * rounding; raises out to it with its one-section window. No time share,
 * O(n log n) per alignment present. Returns 0 or AS_ENOMEM.
 */
int as_strip_padded(const struct as_problem *pb,
		    struct as_strip_bound_out *out);

/*
 * Whether the section of pb of most load holds at most AS_STRIP_CERT_MAX
 * rectangles, so that the window search can start at all.
 */
bool as_strip_bound_windows(const struct as_problem *pb);

/*
 * The certified bound's search (bound.c): from out (the padded load or
 * the load), windows of pb around its most loaded section and the
 * incumbent off's highest rectangles (off may be NULL), each solved
 * exactly, until `deadline`, cap_nodes search nodes (0: none), a cancel,
 * or the bound reaching off's peak; out is raised where a window proves
 * more.
 */
int as_strip_bound(const struct as_problem *pb, const uint64_t *off,
		   const struct as_strip_cfg *cfg, double deadline,
		   uint64_t cap_nodes, struct as_strip_bound_out *out);

/*
 * Certificate c (bound, load, buffers) of pb's window [wa, wb): its
 * rectangles cut to it (wa >= wb: none, the bound needs no sub-problem;
 * wa = 0, wb = nsections: the whole space). c->space is the caller's.
 * Returns 0 or AS_ENOMEM.
 */
int as_strip_certificate(const struct as_problem *pb, uint32_t wa,
			 uint32_t wb, uint64_t bound, uint64_t nodes,
			 struct as_certificate *c);

#endif
