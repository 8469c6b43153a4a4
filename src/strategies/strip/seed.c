/*
 * Strategy strip, the seed's method (strip.h): order metrics, risk
 * classification and groups, the tuning rounds, then the skyline greedy or
 * the exact search on what they leave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

const char *const as_strip_metrics[] = {
	"size-length", /* size, then length (lexicographic) */
	"size",
	"length",
	"overlap",     /* sum of time overlaps with all others */
	"area",        /* size x length (product) */
	"sum",         /* size / max size + length / max length */
	"ratio",       /* size / length */
	"length-size",
	"size-overlap",
	"overlap-size",
	NULL,
};
#define NMETRICS (sizeof(as_strip_metrics) / sizeof(as_strip_metrics[0]) - 1)

/* ---- Metrics ---- */

struct keys {
	const double *k1, *k2;
};

static bool by_keys(uint32_t a, uint32_t b, const void *ctx)
{
	const struct keys *k = ctx;
	if (k->k1[a] != k->k1[b])
		return k->k1[a] > k->k1[b];
	if (k->k2[a] != k->k2[b])
		return k->k2[a] > k->k2[b];
	return a < b;
}

int as_strip_order(const struct as_problem *pb, int m, uint32_t *ids,
		   uint32_t n)
{
	uint32_t N = pb->n, S = pb->nsections;
	double *k1 = calloc((size_t)N + 1, sizeof(double));
	double *k2 = calloc((size_t)N + 1, sizeof(double));
	double *cum = NULL;
	int err = AS_ENOMEM;
	if (!k1 || !k2)
		goto out;
	bool want_ovl = m == 3 || m == 8 || m == 9;
	if (want_ovl) {
		/* cum[s]: sum over sections < s of (live - 1) x duration. */
		uint64_t *cnt = calloc((size_t)S + 1, sizeof(uint64_t));
		cum = calloc((size_t)S + 1, sizeof(double));
		if (!cnt || !cum) {
			free(cnt);
			goto out;
		}
		for (uint32_t i = 0; i < N; i++) {
			cnt[pb->r[i].t0]++;
			cnt[pb->r[i].t1]--;
		}
		for (uint32_t s = 1; s < S; s++)
			cnt[s] += cnt[s - 1];
		for (uint32_t s = 0; s < S; s++)
			cum[s + 1] = cum[s] + (double)cnt[s] *
					       (double)(pb->times[s + 1] -
							pb->times[s]);
		free(cnt);
	}
	double maxs = 1, maxl = 1;
	for (uint32_t i = 0; i < N; i++) {
		const struct as_rect *r = &pb->r[i];
		double len = (double)(pb->times[r->t1] - pb->times[r->t0]);
		if ((double)r->size > maxs)
			maxs = (double)r->size;
		if (len > maxl)
			maxl = len;
	}
	for (uint32_t i = 0; i < N; i++) {
		const struct as_rect *r = &pb->r[i];
		double size = (double)r->size;
		double len = (double)(pb->times[r->t1] - pb->times[r->t0]);
		double ovl = want_ovl ? cum[r->t1] - cum[r->t0] - len : 0;
		switch (m) {
		case 0: k1[i] = size; k2[i] = len; break;
		case 1: k1[i] = size; k2[i] = 0; break;
		case 2: k1[i] = len; k2[i] = 0; break;
		case 3: k1[i] = ovl; k2[i] = size; break;
		case 4: k1[i] = size * len; k2[i] = size; break;
		case 5: k1[i] = size / maxs + len / maxl; k2[i] = size; break;
		case 6: k1[i] = size / len; k2[i] = size; break;
		case 7: k1[i] = len; k2[i] = size; break;
		case 8: k1[i] = size; k2[i] = ovl; break;
		default: k1[i] = ovl; k2[i] = size; break;
		}
	}
	struct keys k = {k1, k2};
	err = as_sort_u32(ids, n, by_keys, &k);
out:
	free(k1);
	free(k2);
	free(cum);
	return err;
}

/* ---- Risk classification and groups ---- */

void as_strip_cover(const struct as_problem *pb, const uint8_t *risk,
		    uint8_t lo, uint32_t *mark)
{
	uint32_t S = pb->nsections;
	memset(mark, 0, ((size_t)S + 1) * sizeof(*mark));
	for (uint32_t i = 0; i < pb->n; i++)
		if (risk[i] >= lo) {
			mark[pb->r[i].t0]++;
			mark[pb->r[i].t1]--;
		}
	/* Running count, then prefix sums of "covered" flags. */
	uint32_t run = 0, acc = 0;
	for (uint32_t s = 0; s <= S; s++) {
		run += mark[s];
		uint32_t covered = s < S && run > 0;
		mark[s] = acc;
		acc += covered;
	}
}

static bool touches(const uint32_t *mark, const struct as_rect *r)
{
	return mark[r->t1] - mark[r->t0] > 0;
}

void as_strip_classify(const struct as_problem *pb, const uint64_t *off,
		       uint64_t threshold, uint8_t *risk)
{
	uint32_t n = pb->n;
	uint32_t *mark = malloc(((size_t)pb->nsections + 1) * sizeof(*mark));
	uint8_t *seed = calloc((size_t)n + 1, 1);
	if (!mark || !seed) {
		/* Without scratch, call everything high risk: still valid. */
		memset(risk, AS_RISK_HIGH, n);
		free(mark);
		free(seed);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t top = off[i] + pb->r[i].size;
		seed[i] = top > threshold    ? AS_RISK_HIGH
			  : top == threshold ? AS_RISK_MEDIUM
					     : AS_RISK_NONE;
	}
	/* High: above the threshold, and what shares time with those. */
	as_strip_cover(pb, seed, AS_RISK_HIGH, mark);
	for (uint32_t i = 0; i < n; i++)
		risk[i] = touches(mark, &pb->r[i]) ? AS_RISK_HIGH
						   : AS_RISK_NONE;
	/* Medium: at the threshold, and what shares time with those. */
	for (uint32_t i = 0; i < n; i++)
		if (seed[i] != AS_RISK_MEDIUM)
			seed[i] = AS_RISK_NONE;
	as_strip_cover(pb, seed, AS_RISK_MEDIUM, mark);
	for (uint32_t i = 0; i < n; i++)
		if (risk[i] == AS_RISK_NONE && touches(mark, &pb->r[i]))
			risk[i] = AS_RISK_MEDIUM;
	/* Low: shares time with a high or medium one. */
	as_strip_cover(pb, risk, AS_RISK_MEDIUM, mark);
	for (uint32_t i = 0; i < n; i++)
		if (risk[i] == AS_RISK_NONE && touches(mark, &pb->r[i]))
			risk[i] = AS_RISK_LOW;
	free(mark);
	free(seed);
}

int as_strip_group(const struct as_problem *pb, uint32_t *ids, uint32_t n,
		   uint32_t *first)
{
	if (as_sort_u32(ids, n, as_rect_by_t0, pb))
		return AS_ENOMEM;
	uint32_t g = 0, reach = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct as_rect *r = &pb->r[ids[k]];
		if (k == 0 || r->t0 >= reach)
			first[g++] = k;
		if (k == 0 || r->t1 > reach)
			reach = r->t1;
	}
	first[g] = n;
	return (int)g;
}

/* ---- One address space ---- */

struct space {
	const struct as_problem *pb;
	struct as_strip_cfg *cfg;
	struct as_plan *p;
	struct as_placer *pl;
	uint64_t *off, *best;   /* scratch placement, best placement */
	uint64_t best_peak;
	uint32_t *order, *next, *tmp, *first;
	uint8_t *risk;
	uint64_t *hashes;
	uint32_t nhashes;
	uint64_t metric_use[16]; /* rectangles tuned with each metric */
	uint32_t nrounds;
};

int as_strip_placer_error(struct as_placer *pl)
{
	int err = as_placer_error(pl);
	return err == AS_STRATEGY_PAST_2_64 ? AS_EUNSUPPORTED : err;
}

/* Record a round, naming the space when the trace has several. */
int as_strip_note(const struct as_strip_cfg *cfg, struct as_plan *p, const char *what,
		uint64_t peak)
{
	char label[64]; /* as_round keeps 47 characters */
	if (cfg->multi)
		snprintf(label, sizeof(label), "s%u %.40s", cfg->nspace - 1,
			 what);
	else
		snprintf(label, sizeof(label), "%.47s", what);
	return as_plan_round(p, label, peak);
}

static int round_note(struct space *sp, const char *what, uint64_t peak)
{
	sp->nrounds++;
	return as_strip_note(sp->cfg, sp->p, what, peak);
}

static void keep_if_better(struct space *sp, const uint64_t *off,
			   uint64_t peak)
{
	if (peak < sp->best_peak) {
		sp->best_peak = peak;
		memcpy(sp->best, off, sp->pb->n * sizeof(uint64_t));
	}
}

static uint64_t hash_order(const uint32_t *v, uint32_t n)
{
	uint64_t h = 0x243f6a8885a308d3ULL;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ v[i]) * 0x100000001b3ULL;
	return h;
}

/*
 * Tune one group: try the metrics in turn on top of what is placed, keep the
 * order with the lowest top, stop early once under the threshold. Places the
 * group in its best order and appends it to out.
 */
static int tune_group(struct space *sp, uint32_t *ids, uint32_t n,
		      uint32_t *out, uint32_t *nout, double stop)
{
	const struct as_problem *pb = sp->pb;
	uint64_t best_top = UINT64_MAX;
	int best_m = sp->cfg->metric;
	for (uint32_t k = 0; k < NMETRICS; k++) {
		int m = (int)((sp->cfg->metric + k) % NMETRICS);
		if (as_strip_order(pb, m, ids, n))
			return AS_ENOMEM;
		uint64_t top = 0;
		uint32_t j;
		for (j = 0; j < n; j++) {
			uint64_t o;
			if (!as_placer_find(sp->pl, ids[j], AS_FIT_LOWEST, &o,
					    NULL))
				break;
			as_placer_put(sp->pl, ids[j], o);
			if (o + pb->r[ids[j]].size > top)
				top = o + pb->r[ids[j]].size;
		}
		bool failed = j < n;
		while (j-- > 0)
			as_placer_pop(sp->pl, ids[j]);
		/* A find stopped by a cancel says nothing of this order. */
		if (failed && as_placer_error(sp->pl) == AS_ECANCELED)
			return AS_ECANCELED;
		if (top < best_top) {
			best_top = top;
			best_m = m;
		}
		if (best_top <= pb->lower_bound ||
		    as_budget_past(sp->cfg->budget, stop))
			break;
	}
	if (as_strip_order(pb, best_m, ids, n))
		return AS_ENOMEM;
	sp->metric_use[best_m] += n;
	for (uint32_t j = 0; j < n; j++) {
		uint64_t o = 0;
		if (!as_placer_find(sp->pl, ids[j], AS_FIT_LOWEST, &o, NULL) &&
		    as_placer_error(sp->pl) == AS_ECANCELED)
			return AS_ECANCELED;
		as_placer_put(sp->pl, ids[j], o);
		out[(*nout)++] = ids[j];
	}
	return AS_OK;
}

/*
 * The seed's method; leaves the best placement in sp->best. It may use
 * 40% of the time left (`stop`): a round that would run past it is not
 * started, and tuning inside a round stops there (the round is dropped).
 */
static int seed_method(struct space *sp, double stop)
{
	const struct as_problem *pb = sp->pb;
	uint32_t n = pb->n;
	uint64_t lb = pb->lower_bound;
	for (uint32_t i = 0; i < n; i++)
		sp->order[i] = i;
	if (as_strip_order(pb, sp->cfg->metric, sp->order, n))
		return AS_ENOMEM;
	uint64_t peak = as_place_order(sp->pl, sp->order, n, AS_FIT_LOWEST,
				       sp->off);
	if (peak == UINT64_MAX)
		return as_strip_placer_error(sp->pl);
	keep_if_better(sp, sp->off, peak);
	char label[48];
	snprintf(label, sizeof(label), "metric=%s",
		 as_strip_metrics[sp->cfg->metric]);
	if (round_note(sp, label, peak))
		return AS_ENOMEM;
	sp->hashes[sp->nhashes++] = hash_order(sp->order, n);
	for (uint64_t round = 1; round <= sp->cfg->rounds && peak > lb;
	     round++) {
		if (as_budget_past(sp->cfg->budget, stop)) {
			if (round_note(sp, "tuning out of time", peak))
				return AS_ENOMEM;
			break;
		}
		as_strip_classify(pb, sp->off, lb, sp->risk);
		uint32_t nn = 0;
		memset(sp->metric_use, 0, sizeof(sp->metric_use));
		as_placer_reset(sp->pl);
		/* Tuned high groups, then tuned medium groups. */
		for (int lvl = AS_RISK_HIGH; lvl >= AS_RISK_MEDIUM; lvl--) {
			uint32_t m = 0;
			for (uint32_t k = 0; k < n; k++)
				if (sp->risk[sp->order[k]] == lvl)
					sp->tmp[m++] = sp->order[k];
			int ng = as_strip_group(pb, sp->tmp, m, sp->first);
			if (ng < 0)
				return ng;
			for (int g = 0; g < ng; g++) {
				uint32_t a = sp->first[g], b = sp->first[g + 1];
				if (as_budget_past(sp->cfg->budget, stop))
					return AS_OK;
				int err = tune_group(sp, sp->tmp + a, b - a,
						     sp->next, &nn, stop);
				if (err)
					return err;
			}
		}
		/* Then low, then no risk, in the current order. */
		for (int lvl = AS_RISK_LOW; lvl >= AS_RISK_NONE; lvl--)
			for (uint32_t k = 0; k < n; k++)
				if (sp->risk[sp->order[k]] == lvl)
					sp->next[nn++] = sp->order[k];
		uint64_t h = hash_order(sp->next, n);
		bool seen = false;
		for (uint32_t k = 0; k < sp->nhashes; k++)
			seen = seen || sp->hashes[k] == h;
		if (seen) {
			if (round_note(sp, "fixed point", peak))
				return AS_ENOMEM;
			break;
		}
		sp->hashes[sp->nhashes++] = h;
		memcpy(sp->order, sp->next, n * sizeof(uint32_t));
		peak = as_place_order(sp->pl, sp->order, n, AS_FIT_LOWEST,
				      sp->off);
		if (peak == UINT64_MAX)
			return as_strip_placer_error(sp->pl);
		keep_if_better(sp, sp->off, peak);
		/* Name the metric that ordered most of the tuned ones. */
		int top_m = 0;
		for (int m = 1; m < (int)NMETRICS; m++)
			if (sp->metric_use[m] > sp->metric_use[top_m])
				top_m = m;
		snprintf(label, sizeof(label), "tuned %u, metric=%s",
			 (unsigned)round, as_strip_metrics[top_m]);
		if (round_note(sp, label, peak))
			return AS_ENOMEM;
	}
	return AS_OK;
}

/*
 * The exact search on the whole space refuted every placement of peak cap
 * or lower: a certified bound of cap + 1 (strip.c writes it down).
 */
static void proved(struct as_strip_cfg *cfg, uint64_t cap, uint64_t nodes)
{
	if (cap + 1 > cfg->proven) {
		cfg->proven = cap + 1;
		cfg->proven_nodes = nodes;
	}
}

/*
 * Exact search: the threshold first (four fifths of the budget), then
 * bisect between it and the best height, each probe taking half of what is
 * left; a probe that fails or runs out sends the bisection higher.
 */
static int exact_phase(struct space *sp, double deadline)
{
	const struct as_problem *pb = sp->pb;
	uint64_t lo = pb->lower_bound, nodes = sp->cfg->nodes;
	struct as_exact_stats st = {0};
	char label[48];
	double now = as_now_ms();
	int r = as_exact_solve(pb, lo, now + (deadline - now) * 0.8,
			       sp->cfg->budget, nodes ? nodes / 5 * 4 : 0,
			       sp->cfg->seed, sp->off, &st);
	if (r < 0)
		return r;
	if (r == AS_EXACT_FOUND) {
		keep_if_better(sp, sp->off, as_place_peak(pb, sp->off));
		if (round_note(sp, "exact at bound", sp->best_peak))
			return AS_ENOMEM;
	} else {
		if (r == AS_EXACT_NONE)
			proved(sp->cfg, lo, st.nodes);
		lo++;
	}
	while (lo < sp->best_peak &&
	       !as_budget_past(sp->cfg->budget, deadline) &&
	       (!nodes || st.nodes < nodes)) {
		now = as_now_ms();
		uint64_t cap = lo + (sp->best_peak - lo) / 2;
		uint64_t share = nodes ? (nodes - st.nodes + 1) / 2 : 0;
		r = as_exact_solve(pb, cap, now + (deadline - now) * 0.5,
				   sp->cfg->budget, share, sp->cfg->seed,
				   sp->off, &st);
		if (r < 0)
			return r;
		if (r == AS_EXACT_FOUND) {
			keep_if_better(sp, sp->off, as_place_peak(pb, sp->off));
			snprintf(label, sizeof(label), "exact <= %llu",
				 (unsigned long long)cap);
			if (round_note(sp, label, sp->best_peak))
				return AS_ENOMEM;
		} else {
			/* Proven or not found in time: look higher. */
			if (r == AS_EXACT_NONE)
				proved(sp->cfg, cap, st.nodes);
			lo = cap + 1;
		}
	}
	return as_plan_stat_int(sp->p, "search_nodes", st.nodes);
}

/* The seed's method and the search, on a problem of moderate overlap. */
int as_strip_full(const struct as_problem *pb, uint64_t *off,
		      struct as_strip_cfg *cfg, struct as_plan *p, double deadline)
{
	struct space sp = {.pb = pb, .cfg = cfg, .p = p,
			   .best_peak = UINT64_MAX};
	uint32_t n = pb->n;
	int err = AS_ENOMEM;
	sp.pl = as_placer_create(pb);
	if (sp.pl) {
		as_placer_undo(sp.pl); /* trials are taken back */
		as_placer_budget(sp.pl, cfg->budget);
	}
	sp.off = calloc(n, sizeof(uint64_t));
	sp.best = calloc(n, sizeof(uint64_t));
	sp.order = calloc(n, sizeof(uint32_t));
	sp.next = calloc(n, sizeof(uint32_t));
	sp.tmp = calloc(n, sizeof(uint32_t));
	sp.first = calloc((size_t)n + 1, sizeof(uint32_t));
	sp.risk = calloc(n, 1);
	sp.hashes = calloc(cfg->rounds + 2, sizeof(uint64_t));
	if (!sp.pl || !sp.off || !sp.best || !sp.order || !sp.next ||
	    !sp.tmp || !sp.first || !sp.risk || !sp.hashes)
		goto out;
	if (cfg->start)
		keep_if_better(&sp, cfg->start, cfg->start_peak);
	err = seed_method(&sp, as_now_ms() + (deadline - as_now_ms()) * 0.4);
	if (err)
		goto out;
	bool exact = n <= AS_STRIP_EXACT_LIMIT &&
		     (cfg->search == SEARCH_EXACT ||
		      (cfg->search == SEARCH_AUTO && n <= cfg->exact_max));
	/* The exact search dives this way itself; others get it here. */
	if (!exact && sp.best_peak > pb->lower_bound) {
		uint64_t peak = as_strip_skyline_try(pb, cfg->budget, deadline,
						     sp.off, &err);
		if (err == AS_ELIMIT) {
			err = AS_OK; /* out of time: the seed's best stands */
			goto done;
		}
		if (err)
			goto out;
		keep_if_better(&sp, sp.off, peak);
		if ((err = round_note(&sp, "skyline greedy", peak)))
			goto out;
	}
	/* Without the exact search, the restarts (strip.c) get the time. */
	if (exact && sp.best_peak > pb->lower_bound &&
	    (err = exact_phase(&sp, deadline)))
		goto out;
done:
	memcpy(off, sp.best, n * sizeof(uint64_t));
	err = AS_OK;
out:
	as_placer_destroy(sp.pl);
	free(sp.off);
	free(sp.best);
	free(sp.order);
	free(sp.next);
	free(sp.tmp);
	free(sp.first);
	free(sp.risk);
	free(sp.hashes);
	return err;
}
