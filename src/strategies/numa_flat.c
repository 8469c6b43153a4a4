/*
 * `numa-flat`: the traditional baseline for numa traces. Every block (one
 * sub-task's edge) is an object of its own; each core's blocks are planned
 * together, greedy by size over the whole timeline of that core, with the
 * same placement code as numa-bundle (numa_place.c). Data crossing parent
 * tasks always makes a round trip through global memory.
 */
#include <stdlib.h>

#include "allocscope/numa.h"
#include "strategies/numa_place.h"
#include "strategies/strategy.h"

static bool applies(const struct as_trace *t)
{
	return t->numa != NULL;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	const struct as_numa *nm = t->numa;
	uint32_t n = t->nbuffers, ncores = nm->ncores;
	uint32_t *first = calloc((size_t)ncores + 1, sizeof(*first));
	uint32_t *bycore = malloc(((size_t)n + 1) * sizeof(*bycore));
	struct numa_item *items = malloc(((size_t)n + 1) * sizeof(*items));
	struct numa_ws ws = {0};
	int err = AS_ENOMEM;
	if (!first || !bycore || !items)
		goto out;
	if ((err = as_numa_want_spaces(t, p)))
		goto out;
	/* Counting sort of the blocks by core, trace order inside. */
	for (uint32_t i = 0; i < n; i++)
		first[t->buffers[i].space - nm->first_space + 1]++;
	for (uint32_t c = 0; c < ncores; c++)
		first[c + 1] += first[c];
	for (uint32_t i = 0; i < n; i++)
		bycore[first[t->buffers[i].space - nm->first_space]++] = i;
	for (uint32_t c = ncores; c > 0; c--)
		first[c] = first[c - 1];
	first[0] = 0;
	for (uint32_t c = 0; c < ncores && err == AS_OK; c++) {
		uint32_t lo = first[c], hi = first[c + 1];
		for (uint32_t k = lo; k < hi; k++) {
			const struct as_buffer *b = &t->buffers[bycore[k]];
			items[k - lo] = (struct numa_item){
				b->size, b->start, b->end,
				as_buffer_align(b), 0};
		}
		uint64_t peak;
		if ((err = as_numa_place(&ws, items, hi - lo, &run->budget,
					 &peak)))
			break;
		for (uint32_t k = lo; k < hi; k++)
			p->offset[bycore[k]] = items[k - lo].offset;
	}
	uint64_t trips = 0;
	for (uint32_t pi = 0; pi < nm->nparents; pi++) {
		const struct as_numa_parent *pa = &nm->parents[pi];
		for (uint32_t e = 0; e < pa->nedges; e++)
			if (nm->edges[pa->first_edge + e].src_parent != AS_NONE)
				trips += pa->nsubtasks;
	}
	if (!err)
		err = as_plan_stat_int(p, "blocks", n);
	if (!err)
		err = as_plan_stat_int(p, "objects_analysed", n);
	if (!err)
		err = as_plan_stat_int(p, "round_trips", trips);
	if (!err)
		err = as_plan_stat_int(p, "round_trips_avoided", 0);
	if (!err)
		err = as_numa_core_stats(t, p);
out:
	free(first);
	free(bycore);
	free(items);
	as_numa_ws_finish(&ws);
	return err;
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_numa_flat = {
	.info = {
		.name = "numa-flat",
		.summary = "needs a numa trace: every block planned on its "
			   "own per core (baseline)",
		.online = false,
		.options = options,
	},
	.applies = applies,
	.plan = plan,
};
