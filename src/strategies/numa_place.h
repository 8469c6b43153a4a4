/*
 * Private to the numa strategies: per-core placement of rectangles, shared
 * by numa-flat (every block) and numa-bundle (every block bundle) so that
 * both are measured with the same placement algorithm.
 */
#ifndef AS_NUMA_PLACE_H
#define AS_NUMA_PLACE_H

#include <stdint.h>

#include "strategies/place/budget.h"
#include "strategies/place/itree.h"

/* A rectangle to place: lifetime [start, end), size, alignment. */
struct numa_item {
	uint64_t size;
	uint64_t start, end;
	uint64_t align;          /* a power of two */
	uint64_t offset;         /* out */
};

/* Scratch memory reused across calls; zero-initialise, then finish. */
struct numa_ws {
	struct as_itree tree;
	uint32_t *order, *idx;
	uint32_t cap;
};

/*
 * Greedy by size: largest first (ties: longer lifetime, then index), each
 * at the lowest aligned offset where it overlaps no placed item whose
 * lifetime meets its own. Placed items sit in a static interval tree, so a
 * call costs O(n log n + sum k log k), k the overlapping items. Writes every
 * item's offset and *peak (largest offset + size); returns 0, AS_ENOMEM, or
 * AS_EUNSUPPORTED when an offset would pass 2^64. Items of size 0 get
 * offset 0. The run's budget (may be NULL) is looked at before the first
 * item and every NUMA_CHECK_EVERY after: canceled, AS_ECANCELED.
 */
#define NUMA_CHECK_EVERY 1024
int as_numa_place(struct numa_ws *ws, struct numa_item *items, uint32_t n,
		  const struct as_budget *budget, uint64_t *peak);
void as_numa_ws_finish(struct numa_ws *ws);

struct as_trace;
struct as_plan;

/*
 * Give the plan one address space per core with its capacity (like
 * as_plan_want_spaces), filling plan->space from the bundle structure in
 * trace order rather than from every buffer. Returns 0 or AS_ENOMEM.
 */
int as_numa_want_spaces(const struct as_trace *t, struct as_plan *p);

/*
 * Add the per-core statistics every numa strategy reports: the largest,
 * smallest and mean per-core peak, and the largest and mean utilisation
 * (peak / capacity, cores with a capacity only). Returns 0 or a code.
 */
int as_numa_core_stats(const struct as_trace *t, struct as_plan *p);

#endif
