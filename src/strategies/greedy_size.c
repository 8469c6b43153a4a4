/*
 * `greedy-size`: the offline baseline. Buffers by size, largest first (ties:
 * longer lifetime, then trace order); each goes to the lowest offset where it
 * overlaps no placed buffer whose lifetime overlaps its own.
 *
 * The placed buffers sit in the segment tree of place/placer.c: a buffer's
 * free gaps come from a merge of O(log n) sets of merged address ranges.
 * Traces with buffers that start and end at the same time, or with at most
 * 32 pairs sharing time per buffer, keep the static interval tree of
 * place/itree.h (O(log n + k) for the k placed buffers sharing time, and
 * less memory); it gives the instant buffers room as before.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "strategies/place/itree.h"
#include "strategies/place/place.h"
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

/*
 * Place the n buffers ids[] of one space; tr has room for n, ord too. A
 * query's steps are the placed buffers it meets, and one, spent from the
 * run's budget as the placer spends its own (as_placer_budget).
 */
static int place_space(const struct as_trace *t, struct as_itree *tr,
		       struct as_budget *b, struct as_plan *p,
		       const uint32_t *ids, uint32_t n, uint32_t *ord)
{
	uint64_t start = b->left;
	for (uint32_t k = 0; k < n; k++) {
		tr->start[k] = t->buffers[ids[k]].start;
		tr->end[k] = t->buffers[ids[k]].end;
		ord[k] = k;
	}
	struct order_ctx c = {t, ids};
	if (as_itree_build(tr, n) || as_sort_u32(ord, n, by_size, &c))
		return AS_ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t k = ord[j];
		const struct as_buffer *buf = &t->buffers[ids[k]];
		uint64_t off;
		if (as_budget_spent(b) || as_steps_behind(b, start, j, n))
			return as_budget_why(b);
		int r = as_itree_lowest(tr, k, buf->size, buf->align_log2,
					&off);
		if (r < 0)
			return r;
		as_steps_take(b, (uint64_t)tr->nhits + 1);
		/* Beyond 2^64 the allocation fails, as an online one would. */
		if (r == 1) {
			p->offset[ids[k]] = off;
			as_itree_put(tr, k, off, buf->size);
		}
	}
	return AS_OK;
}

/* Size descending, then longer lifetime, then index: by_size on a problem. */
static bool by_size_rect(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_problem *pb = ctx;
	const struct as_rect *p = &pb->r[a], *q = &pb->r[b];
	if (p->size != q->size)
		return p->size > q->size;
	uint64_t lp = pb->times[p->t1] - pb->times[p->t0];
	uint64_t lq = pb->times[q->t1] - pb->times[q->t0];
	if (lp != lq)
		return lp > lq;
	return a < b;
}

int as_order_greedy_size(const struct as_problem *pb, uint32_t *order)
{
	for (uint32_t i = 0; i < pb->n; i++)
		order[i] = i;
	return as_sort_greedy_size(pb, order, pb->n);
}

int as_sort_greedy_size(const struct as_problem *pb, uint32_t *ids,
			uint32_t n)
{
	return as_sort_u32(ids, n, by_size_rect, pb);
}

/*
 * The same plan through the segment-tree placer of place.h, which reads
 * O(log n) merged sets per buffer instead of every placed buffer sharing
 * its time. Its problem leaves out buffers that start and end at the same
 * time, which the interval tree above treats as taking room; plan() sends
 * traces holding such buffers there.
 */
static int plan_placer(const struct as_trace *t, struct as_budget *b,
		       struct as_plan *p)
{
	struct as_spaces sp;
	if (as_spaces_init(&sp, t))
		return AS_ENOMEM;
	for (uint16_t s = 0; s < t->nspaces || s == 0; s++) {
		struct as_problem pb;
		struct as_placer *pl = NULL;
		uint32_t *order = NULL;
		int err = as_problem_init_space(&pb, t, &sp, s);
		if (err == AS_OK && pb.n > 0) {
			pl = as_placer_create(&pb);
			order = malloc((size_t)pb.n * sizeof(*order));
			err = pl && order ? AS_OK : AS_ENOMEM;
			if (pl)
				as_placer_budget(pl, b);
			if (err == AS_OK)
				err = as_order_greedy_size(&pb, order);
		}
		for (uint32_t j = 0; err == AS_OK && j < pb.n; j++) {
			uint32_t i = order[j];
			uint64_t off;
			/* Beyond 2^64 the allocation fails, as online. */
			if (!as_placer_find(pl, i, AS_FIT_LOWEST, &off, NULL)) {
				int why = as_placer_error(pl);
				if (why != AS_STRATEGY_PAST_2_64)
					err = why;
				continue;
			}
			as_placer_put(pl, i, off);
			p->offset[pb.r[i].buf] = off;
		}
		if (err == AS_OK && pl && as_placer_nomem(pl))
			err = AS_ENOMEM;
		as_placer_destroy(pl);
		free(order);
		as_problem_finish(&pb);
		if (err || t->nspaces <= 1) {
			as_spaces_finish(&sp);
			return err;
		}
	}
	as_spaces_finish(&sp);
	return AS_OK;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Whether the buffers overlap little: at most 32 pairs sharing time per
 * buffer (all spaces together). The interval tree then visits O(n) pairs in
 * all and needs less memory than the segment tree. Sets *few; returns 0 or
 * AS_ENOMEM.
 */
static int few_pairs(const struct as_trace *t, bool *few)
{
	size_t n = 0;
	uint64_t *st = malloc(((size_t)t->nbuffers + 1) * sizeof(*st));
	uint64_t *en = malloc(((size_t)t->nbuffers + 1) * sizeof(*en));
	if (!st || !en) {
		free(st);
		free(en);
		return AS_ENOMEM;
	}
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (b->alias_of == AS_NONE && b->size) {
			st[n] = b->start;
			en[n++] = b->end;
		}
	}
	qsort(st, n, sizeof(*st), cmp_u64);
	qsort(en, n, sizeof(*en), cmp_u64);
	/* A buffer starting at s meets those started before and not ended. */
	uint64_t pairs = 0;
	for (size_t i = 0, j = 0; i < n; i++) {
		while (j < n && en[j] <= st[i])
			j++;
		pairs += i - j;
	}
	free(st);
	free(en);
	*few = pairs <= 32 * (uint64_t)n;
	return AS_OK;
}

/* Each address space is planned on its own. */
static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	bool instant = false;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		instant |= b->alias_of == AS_NONE && b->size && b->start >= b->end;
	}
	bool few = false;
	if (!instant && few_pairs(t, &few))
		return AS_ENOMEM;
	if (!instant && !few)
		return plan_placer(t, &run->budget, p);
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
			err = place_space(t, &tr, &run->budget, p, ids + lo,
					  hi - lo, ord);
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
	.by_default = as_place_baseline_default,
	.memo = true,
};
