/*
 * `greedy-breadth`: TensorFlow Lite GPU's "greedy by breadth". Operators
 * (here: the sections of time between consecutive start/end times) are
 * walked by breadth, the total size of the buffers live across them, largest
 * first; at each, the buffers live there that have no offset yet are taken
 * largest first and given the smallest gap that fits among the placed
 * buffers sharing their time, else the top.
 *
 * A buffer is handled at the broadest section it spans, so the walk is one
 * sort: by the rank of that section (a range minimum over the section
 * ranks, from a sparse table), then by size. O(n log n + S log S) plus the
 * placements.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"
#include "strategies/strategy.h"

struct ctx {
	const struct as_problem *pb;
	const uint32_t *first;  /* rank of the broadest section spanned */
};

static bool before(uint32_t a, uint32_t b, const void *cv)
{
	const struct ctx *c = cv;
	if (c->first[a] != c->first[b])
		return c->first[a] < c->first[b];
	if (c->pb->r[a].size != c->pb->r[b].size)
		return c->pb->r[a].size > c->pb->r[b].size;
	return a < b;
}

static bool by_load(uint32_t a, uint32_t b, const void *cv)
{
	const uint64_t *load = cv;
	if (load[a] != load[b])
		return load[a] > load[b];
	return a < b;
}

int as_order_breadth(const struct as_problem *pb, uint32_t *order)
{
	uint32_t n = pb->n, S = pb->nsections, levels = 1;
	while ((1u << levels) <= S)
		levels++;
	uint64_t *load = calloc((size_t)S + 1, sizeof(uint64_t));
	uint32_t *secs = calloc((size_t)S + 1, sizeof(uint32_t));
	uint32_t *sparse = calloc((size_t)levels * (S + 1), sizeof(uint32_t));
	uint32_t *first = calloc(n, sizeof(uint32_t));
	int err = AS_ENOMEM;
	if (!load || !secs || !sparse || !first)
		goto out;
	as_problem_load(pb, load);
	for (uint32_t s = 0; s < S; s++)
		secs[s] = s;
	if (as_sort_u32(secs, S, by_load, load))
		goto out;
	/* sparse[0][s] = rank of section s; level k: min over 2^k. */
	for (uint32_t k = 0; k < S; k++)
		sparse[secs[k]] = k;
	for (uint32_t l = 1; l < levels; l++)
		for (uint32_t s = 0; s + (1u << l) <= S; s++) {
			uint32_t a = sparse[(size_t)(l - 1) * (S + 1) + s];
			uint32_t b = sparse[(size_t)(l - 1) * (S + 1) + s +
					    (1u << (l - 1))];
			sparse[(size_t)l * (S + 1) + s] = a < b ? a : b;
		}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = pb->r[i].t0, b = pb->r[i].t1, l = 0;
		while ((2u << l) <= b - a)
			l++;
		uint32_t x = sparse[(size_t)l * (S + 1) + a];
		uint32_t y = sparse[(size_t)l * (S + 1) + b - (1u << l)];
		first[i] = x < y ? x : y;
		order[i] = i;
	}
	struct ctx c = {pb, first};
	if (as_sort_u32(order, n, before, &c))
		goto out;
	err = AS_OK;
out:
	free(load);
	free(secs);
	free(sparse);
	free(first);
	return err;
}

static int plan_space(const struct as_problem *pb, uint64_t *off, void *unused,
		      struct as_plan *p, struct as_diag *diag)
{
	struct as_placer *pl = as_placer_create(pb);
	uint32_t *order = calloc(pb->n, sizeof(uint32_t));
	int err = AS_ENOMEM;
	if (!pl || !order || as_order_breadth(pb, order))
		goto out;
	if (as_place_order(pl, order, pb->n, AS_FIT_BEST, off) == UINT64_MAX) {
		err = as_placer_nomem(pl) ? AS_ENOMEM : AS_STRATEGY_PAST_2_64;
		goto out;
	}
	err = AS_OK;
out:
	as_placer_destroy(pl);
	free(order);
	return err;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	return as_plan_spaces(t, p, plan_space, NULL, diag);
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_greedy_breadth = {
	.info = {
		.name = "greedy-breadth",
		.summary = "TFLite GPU baseline: operators by breadth, largest "
			   "tensor first, smallest fitting gap",
		.online = false,
		.options = options,
	},
	.plan = plan,
	.memo = true,
};
