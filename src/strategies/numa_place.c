/*
 * Per-core placement for the numa strategies (numa_place.h).
 *
 * The placed items sit in the static interval tree of place/itree.h, the
 * one greedy-size uses.
 */
#include <stdlib.h>

#include "allocscope/numa.h"
#include "strategies/numa_place.h"
#include "core/internal.h"

struct order_ctx {
	const struct numa_item *it;
	const uint32_t *idx;
};

/* Size descending, then longer lifetime, then index (stable sort). */
static bool by_size(uint32_t ka, uint32_t kb, const void *ctx)
{
	const struct order_ctx *c = ctx;
	const struct numa_item *a = &c->it[c->idx[ka]], *b = &c->it[c->idx[kb]];
	if (a->size != b->size)
		return a->size > b->size;
	return a->end - a->start > b->end - b->start;
}

static int reserve(struct numa_ws *ws, uint32_t n)
{
	if (n <= ws->cap)
		return as_itree_reserve(&ws->tree, n);
	uint32_t *o = realloc(ws->order, (size_t)n * sizeof(*o));
	if (o)
		ws->order = o;
	uint32_t *x = realloc(ws->idx, (size_t)n * sizeof(*x));
	if (x)
		ws->idx = x;
	if (!o || !x)
		return AS_ENOMEM;
	ws->cap = n;
	return as_itree_reserve(&ws->tree, n);
}

static uint8_t log2_of(uint64_t align)
{
	uint8_t lg = 0;
	while (lg < 63 && ((uint64_t)1 << lg) < align)
		lg++;
	return lg;
}

int as_numa_place(struct numa_ws *ws, struct numa_item *items, uint32_t n,
		  const struct as_budget *budget, uint64_t *peak)
{
	if (as_budget_spent(budget))
		return as_budget_why(budget);
	int err = reserve(ws, n);
	if (err)
		return err;
	struct as_itree *tr = &ws->tree;
	uint32_t m = 0;
	uint64_t top = 0;
	for (uint32_t i = 0; i < n; i++) {
		items[i].offset = 0;
		if (items[i].size == 0)
			continue;
		tr->start[m] = items[i].start;
		tr->end[m] = items[i].end;
		ws->idx[m] = i;
		ws->order[m] = m;
		m++;
	}
	struct order_ctx c = {items, ws->idx};
	if (as_itree_build(tr, m) || as_sort_u32(ws->order, m, by_size, &c))
		return AS_ENOMEM;
	for (uint32_t j = 0; j < m; j++) {
		if (j % NUMA_CHECK_EVERY == NUMA_CHECK_EVERY - 1 &&
		    as_budget_spent(budget))
			return as_budget_why(budget);
		uint32_t k = ws->order[j];
		struct numa_item *b = &items[ws->idx[k]];
		uint64_t off;
		int r = as_itree_lowest(tr, k, b->size, log2_of(b->align), &off);
		if (r < 0)
			return r;
		if (r == 0)
			return AS_EUNSUPPORTED; /* beyond 2^64 */
		b->offset = off;
		if (off + b->size > top)
			top = off + b->size;
		as_itree_put(tr, k, off, b->size);
	}
	*peak = top;
	return AS_OK;
}

void as_numa_ws_finish(struct numa_ws *ws)
{
	free(ws->order);
	free(ws->idx);
	as_itree_finish(&ws->tree);
	*ws = (struct numa_ws){0};
}

int as_numa_want_spaces(const struct as_trace *t, struct as_plan *p)
{
	const struct as_numa *nm = t->numa;
	if (!p->space) {
		p->space = malloc(((size_t)p->nbuffers + 1) * sizeof(*p->space));
		if (!p->space)
			return AS_ENOMEM;
		for (uint32_t pi = 0; pi < nm->nparents; pi++) {
			const struct as_numa_parent *pa = &nm->parents[pi];
			uint16_t *sp = p->space + pa->first_block;
			for (uint32_t k = 0; k < pa->nsubtasks; k++) {
				uint16_t s = (uint16_t)(nm->first_space +
							nm->core[pa->first_sub +
								 k]);
				for (uint32_t e = 0; e < pa->nedges; e++)
					*sp++ = s;
			}
		}
	}
	return as_plan_want_spaces(p, t, t->nspaces);
}

int as_numa_core_stats(const struct as_trace *t, struct as_plan *p)
{
	const struct as_numa *nm = t->numa;
	uint64_t *peak = calloc((size_t)p->nspaces + 1, sizeof(*peak));
	if (!peak)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		uint64_t off = p->offset[i];
		uint16_t sp = as_plan_space_of(p, t, i);
		if (off == AS_NO_OFFSET || sp >= p->nspaces)
			continue;
		if (off + t->buffers[i].size > peak[sp])
			peak[sp] = off + t->buffers[i].size;
	}
	uint64_t max = 0, min = UINT64_MAX;
	double sum = 0, umax = 0, usum = 0;
	uint32_t ncap = 0;
	for (uint16_t c = 0; c < nm->ncores; c++) {
		uint16_t sp = (uint16_t)(nm->first_space + c);
		uint64_t pk = sp < p->nspaces ? peak[sp] : 0;
		uint64_t cap = p->space_capacity && sp < p->nspaces
				       ? p->space_capacity[sp]
				       : 0;
		max = pk > max ? pk : max;
		min = pk < min ? pk : min;
		sum += (double)pk;
		if (cap) {
			double u = (double)pk / (double)cap;
			umax = u > umax ? u : umax;
			usum += u;
			ncap++;
		}
	}
	free(peak);
	int err = as_plan_stat_int(p, "core_peak_max", max);
	if (!err)
		err = as_plan_stat_int(p, "core_peak_min", min);
	if (!err)
		err = as_plan_stat(p, "core_peak_mean", sum / nm->ncores);
	if (!err && ncap)
		err = as_plan_stat(p, "core_util_max", umax);
	if (!err && ncap)
		err = as_plan_stat(p, "core_util_mean", usum / ncap);
	return err;
}
