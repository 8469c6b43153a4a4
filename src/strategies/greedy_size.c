/*
 * `greedy-size`: the offline baseline. Buffers by size, largest first (ties:
 * longer lifetime, then trace order); each goes to the lowest offset where it
 * overlaps no placed buffer whose lifetime overlaps its own.
 *
 * The placed buffers sit in the static interval tree of place/itree.h:
 * finding the k placed buffers that share time with a new one costs
 * O(log n + k), so a plan costs O(n log n + sum k log k) instead of O(n^2)
 * over all pairs.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "strategies/place/itree.h"
#include "strategies/strategy.h"

static bool by_space(uint32_t ia, uint32_t ib, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[ia].space < t->buffers[ib].space;
}

struct order_ctx {
	const struct as_trace *t;
	const uint32_t *ids;
};

/* Size descending, then longer lifetime, then trace order (stable sort). */
static bool by_size(uint32_t ka, uint32_t kb, const void *ctx)
{
	const struct order_ctx *c = ctx;
	const struct as_buffer *a = &c->t->buffers[c->ids[ka]];
	const struct as_buffer *b = &c->t->buffers[c->ids[kb]];
	if (a->size != b->size)
		return a->size > b->size;
	return a->end - a->start > b->end - b->start;
}

/* Place the n buffers ids[] of one space; tr has room for n, ord too. */
static int place_space(const struct as_trace *t, struct as_itree *tr,
		       struct as_plan *p, const uint32_t *ids, uint32_t n,
		       uint32_t *ord)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct as_buffer *b = &t->buffers[ids[k]];
		tr->start[k] = b->start;
		tr->end[k] = b->end;
		ord[k] = k;
	}
	struct order_ctx c = {t, ids};
	if (as_itree_build(tr, n) || as_sort_u32(ord, n, by_size, &c))
		return AS_ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t k = ord[j];
		const struct as_buffer *b = &t->buffers[ids[k]];
		uint64_t off;
		int r = as_itree_lowest(tr, k, b->size, b->align_log2, &off);
		if (r < 0)
			return r;
		/* Beyond 2^64 the allocation fails, as an online one would. */
		if (r == 1) {
			p->offset[ids[k]] = off;
			as_itree_put(tr, k, off, b->size);
		}
	}
	return AS_OK;
}

/* Each address space is planned on its own. */
static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	uint32_t n = 0;
	size_t sz = (size_t)t->nbuffers + 1;
	struct as_itree tr = {0};
	uint32_t *ids = malloc(sz * sizeof(*ids));
	uint32_t *ord = malloc(sz * sizeof(*ord));
	int err = AS_ENOMEM;
	if (!ids || !ord)
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].alias_of == AS_NONE && t->buffers[i].size)
			ids[n++] = i;
	if ((err = as_sort_u32(ids, n, by_space, t)))
		goto out;
	for (uint32_t lo = 0, hi; err == AS_OK && lo < n; lo = hi) {
		uint16_t space = t->buffers[ids[lo]].space;
		for (hi = lo; hi < n && t->buffers[ids[hi]].space == space;)
			hi++;
		err = as_itree_reserve(&tr, hi - lo);
		if (!err)
			err = place_space(t, &tr, p, ids + lo, hi - lo, ord);
	}
out:
	free(ids);
	free(ord);
	as_itree_finish(&tr);
	return err;
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_greedy_size = {
	.info = {
		.name = "greedy-size",
		.summary = "offline baseline: largest first, lowest offset "
			   "that fits",
		.online = false,
		.options = options,
	},
	.plan = plan,
};
