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

enum { ORDER_SIZE, ORDER_LENGTH, ORDER_BOTH };

static const char *const orders[] = {"size", "length", "both", NULL};
static const char *const round_names[] = {"size order", "length order"};
static const char *const parts[] = {"bestfit:order=size",
				    "bestfit:order=length", NULL};

struct ctx {
	const struct as_problem *pb;
	bool by_length;
};

/* What plan_space gets per space: the order and the run's budget. */
struct order {
	int which;
	struct as_budget *budget;
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

/* One order (ctx: struct order) per address space. */
static int plan_space(const struct as_problem *pb, uint64_t *off, void *ctx,
		      struct as_plan *p, struct as_diag *diag)
{
	const struct order *o = ctx;
	bool by_length = o->which == ORDER_LENGTH;
	struct as_placer *pl = as_placer_create(pb);
	uint32_t *order = calloc(pb->n, sizeof(uint32_t));
	int err = AS_ENOMEM;
	if (pl && order && !as_order_bestfit(pb, by_length, order)) {
		as_placer_budget(pl, o->budget);
		uint64_t peak = as_place_order(pl, order, pb->n, AS_FIT_BEST,
					       off);
		if (peak == UINT64_MAX)
			err = as_placer_error(pl);
		else
			err = as_plan_round(p, round_names[o->which], peak);
	}
	as_placer_destroy(pl);
	free(order);
	return err;
}

/*
 * Both orders: each is planned as the spec "bestfit:order=ORDER", so its
 * plan is kept for reuse, and as_runner_run_many plans the two side by
 * side (bestfit's parts); per address space the lower peak wins, ties to
 * the size order.
 */
static int plan_both(const struct as_trace *t, struct as_run *run,
		     struct as_plan *p, struct as_diag *diag)
{
	uint32_t ns = t->nspaces > 1 ? t->nspaces : 1;
	struct as_plan *q[2] = {NULL, NULL};
	uint64_t *peak = malloc(2 * (size_t)ns * sizeof(uint64_t));
	uint8_t *won = malloc(ns);
	int err = peak && won ? AS_OK : AS_ENOMEM, which = 0;
	for (int k = 0; k < 2 && err == AS_OK; k++) {
		if ((err = as_run_reuse(run, parts[k], &q[k], diag)))
			break;
		as_plan_space_peaks(t, q[k], peak + (size_t)k * ns);
	}
	/* An order that went past 2^64 anywhere fails the plan, as one
	 * planned here would. */
	for (uint32_t s = 0; s < 2 * ns && err == AS_OK; s++)
		if (peak[s] == UINT64_MAX)
			err = AS_STRATEGY_PAST_2_64;
	for (uint32_t s = 0; s < ns && err == AS_OK; s++) {
		uint64_t by_size = peak[s], by_length = peak[ns + s];
		int w = by_length < by_size;
		/* Rounds for a space with buffers to place, as one per
		 * order planned there. */
		if (by_size && (err = as_plan_round(p, round_names[ORDER_SIZE],
						    by_size)) == AS_OK)
			err = as_plan_round(p, round_names[ORDER_LENGTH],
					    by_length);
		which = by_size ? w : which;
		won[s] = (uint8_t)w;
	}
	/* One pass, not one per space: 20,000 spaces cost what one does. */
	for (uint32_t i = 0; i < t->nbuffers && err == AS_OK; i++) {
		uint16_t s = t->buffers[i].space < ns ? t->buffers[i].space : 0;
		p->offset[i] = q[won[s]]->offset[i];
	}
	if (err == AS_OK)
		err = as_plan_stat_int(p, "length_order_won", (uint64_t)which);
	as_plan_destroy(q[0]);
	as_plan_destroy(q[1]);
	free(peak);
	free(won);
	return err;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	int order, err = as_opts_choice(o, "order", orders, ORDER_BOTH,
					&order, diag);
	if (err)
		return err;
	if (order == ORDER_BOTH)
		return plan_both(t, run, p, diag);
	struct order ord = {order, &run->budget};
	return as_plan_spaces(t, p, plan_space, &ord, diag);
}

static const struct as_option_desc options[] = {
	{"order", "both",
	 "size: largest first; length: longest first; both: the better of "
	 "the two, per address space"},
	{NULL, NULL, NULL}};

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
	.parts = parts,
};
