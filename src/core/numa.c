/*
 * The numa model (docs/numa.md): which core runs each sub-task, its place
 * in the core's task bundle, and the expansion of a parent task into one
 * buffer per sub-task edge ("block") in its core's space. The JSON reader
 * (src/formats/json/numa.c) fills struct as_numa and calls these.
 */
#include <stdio.h>
#include <stdlib.h>

#include "allocscope/numa.h"
#include "core/internal.h"
#include "core/trace_private.h"

int as_numa_load_init(struct as_numa_load *l, uint16_t ncores)
{
	l->ncores = ncores;
	l->load = calloc(ncores, sizeof(*l->load));
	l->count = calloc(ncores, sizeof(*l->count));
	l->heap = malloc((size_t)ncores * sizeof(*l->heap));
	if (!l->load || !l->count || !l->heap) {
		as_numa_load_finish(l);
		return AS_ENOMEM;
	}
	for (uint16_t c = 0; c < ncores; c++)
		l->heap[c] = c; /* all loads 0: in core order, a valid heap */
	return AS_OK;
}

void as_numa_load_finish(struct as_numa_load *l)
{
	free(l->load);
	free(l->count);
	free(l->heap);
	l->load = NULL;
	l->count = NULL;
	l->heap = NULL;
}

/* Core a before core b: fewer bytes, then the lower index. */
static bool lighter(const struct as_numa_load *l, uint16_t a, uint16_t b)
{
	return l->load[a] < l->load[b] ||
	       (l->load[a] == l->load[b] && a < b);
}

/* The root's load grew: sift it down. */
static void sift_down(struct as_numa_load *l)
{
	uint32_t i = 0, n = l->ncores;
	uint16_t *h = l->heap;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && lighter(l, h[c + 1], h[c]))
			c++;
		if (!lighter(l, h[c], h[i]))
			break;
		uint16_t tmp = h[i];
		h[i] = h[c];
		h[c] = tmp;
		i = c;
	}
}

void as_numa_schedule(struct as_numa *nm, uint32_t pi,
		      enum as_numa_rule rule, const uint64_t *vol,
		      struct as_numa_load *l)
{
	struct as_numa_parent *p = &nm->parents[pi];
	uint16_t *core = nm->core + p->first_sub;
	uint32_t *count = l->count;
	if (rule == AS_NUMA_ROUND_ROBIN) {
		for (uint32_t k = 0; k < p->nsubtasks; k++)
			core[k] = (uint16_t)(k % nm->ncores);
	} else if (rule == AS_NUMA_LEAST_LOADED) {
		/* Each sub-task, in index order, to the core with the fewest
		 * bytes so far over all parents (ties: the lowest core): the
		 * root of a heap kept across parents, O(log cores) each. */
		for (uint32_t k = 0; k < p->nsubtasks; k++) {
			uint64_t bytes = 0;
			for (uint32_t e = 0; e < p->nedges; e++)
				bytes += vol[(size_t)e * p->nsubtasks + k];
			uint16_t best = l->heap[0];
			core[k] = best;
			l->load[best] += bytes;
			sift_down(l);
		}
	}
	uint32_t most = 0;
	for (uint32_t k = 0; k < p->nsubtasks; k++) {
		nm->slot[p->first_sub + k] = count[core[k]]++;
		if (count[core[k]] > most)
			most = count[core[k]];
	}
	for (uint32_t k = 0; k < p->nsubtasks; k++)
		count[core[k]] = 0;
	p->duration = (uint64_t)most * p->nops;
}

int as_numa_expand(struct as_builder *b, struct as_numa *nm, uint32_t pi,
		   uint64_t align, const uint64_t *vol, struct as_diag *diag)
{
	struct as_numa_parent *p = &nm->parents[pi];
	p->first_block = as_builder_trace(b)->nbuffers;
	for (uint32_t k = 0; k < p->nsubtasks; k++) {
		uint16_t core = nm->core[p->first_sub + k];
		uint64_t base = p->start +
				(uint64_t)nm->slot[p->first_sub + k] * p->nops;
		for (uint32_t e = 0; e < p->nedges; e++) {
			const struct as_numa_edge *ed =
				&nm->edges[p->first_edge + e];
			char name[256];
			snprintf(name, sizeof(name), "%s/%s/%u", p->name,
				 ed->name, k);
			int64_t idx = as_builder_add_timed(
				b, name, vol[(size_t)e * p->nsubtasks + k],
				align, base + ed->life_start,
				base + ed->life_end, 0, diag);
			if (idx < 0)
				return (int)idx;
			as_builder_buffer(b, (uint32_t)idx)->space =
				(uint16_t)(nm->first_space + core);
		}
	}
	return AS_OK;
}
