/*
 * `bestfit`: the baseline of XLA's heap simulator. Two orders, sizes largest
 * first and lifetimes longest first (ties: the other key, then trace order);
 * each buffer goes into the smallest gap that fits among the placed buffers
 * sharing its time, else on top. The better of the two plans is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"
#include "strategies/strategy.h"

struct ctx {
	const struct as_problem *pb;
	bool by_length;
};

static bool before(uint32_t a, uint32_t b, const void *cv)
{
	const struct ctx *c = cv;
	const struct as_rect *p = &c->pb->r[a], *q = &c->pb->r[b];
	uint64_t lp = c->pb->times[p->t1] - c->pb->times[p->t0];
	uint64_t lq = c->pb->times[q->t1] - c->pb->times[q->t0];
	if (c->by_length && lp != lq)
		return lp > lq;
	if (p->size != q->size)
		return p->size > q->size;
	if (lp != lq)
		return lp > lq;
	return a < b;
}

int as_order_bestfit(const struct as_problem *pb, bool by_length,
		     uint32_t *order)
{
	struct ctx c = {pb, by_length};
	for (uint32_t i = 0; i < pb->n; i++)
		order[i] = i;
	return as_sort_u32(order, pb->n, before, &c);
}

static int plan_space(const struct as_problem *pb, uint64_t *off, void *unused,
		      struct as_plan *p, struct as_diag *diag)
{
	uint32_t n = pb->n;
	struct as_placer *pl = as_placer_create(pb);
	uint32_t *order = calloc(n, sizeof(uint32_t));
	uint64_t *tmp = calloc(n, sizeof(uint64_t));
	uint64_t best = UINT64_MAX;
	int err = AS_ENOMEM, which = 0;
	if (!pl || !order || !tmp)
		goto out;
	for (int k = 0; k < 2; k++) {
		if (as_order_bestfit(pb, k == 1, order))
			goto out;
		uint64_t peak = as_place_order(pl, order, n, AS_FIT_BEST, tmp);
		if (peak == UINT64_MAX) {
			err = as_placer_nomem(pl) ? AS_ENOMEM
						  : AS_STRATEGY_PAST_2_64;
			goto out;
		}
		if ((err = as_plan_round(p, k ? "length order" : "size order",
					 peak)))
			goto out;
		if (peak < best) {
			best = peak;
			which = k;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
	err = as_plan_stat_int(p, "length_order_won", (uint64_t)which);
out:
	as_placer_destroy(pl);
	free(order);
	free(tmp);
	return err;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	return as_plan_spaces(t, p, plan_space, NULL, diag);
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_bestfit = {
	.info = {
		.name = "bestfit",
		.summary = "XLA heap-simulator baseline: size and lifetime "
			   "orders, smallest fitting gap, the better of two",
		.online = false,
		.options = options,
	},
	.plan = plan,
	.by_default = as_place_baseline_default,
	.memo = true,
};
