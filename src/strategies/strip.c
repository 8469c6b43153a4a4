/*
 * `strip`: lifetime strip packing with peak suppression.
 *
 * Each buffer is a rectangle (lifetime x size) dropped into a container
 * whose floor is offset 0; the lower bound is the threshold a perfect plan
 * reaches. Per address space, by size of the problem:
 *
 *  - Up to exact_max= rectangles with few overlapping pairs (strip_full):
 *    1. the seed's method: order by a metric (metric=), place each at the
 *       lowest offset that fits among the placed rectangles sharing its
 *       time; while above the threshold classify (high, medium, low, no
 *       risk), split high and medium into groups linked by time overlap,
 *       tune group by group on top of what earlier groups left (metrics in
 *       turn until the group stays under the threshold, keeping its best),
 *       place tuned high, tuned medium, low and no-risk again; stop at the
 *       threshold, a repeated order (fixed point) or rounds= rounds.
 *    2. the exact branch and bound of place.c, first at the threshold, then
 *       bisecting between it and the best height, until budget_ms=/nodes=.
 *  - More rectangles, still few pairs: the same with the skyline greedy
 *    and a local search over orders instead of the exact search, and the
 *    large-trace path below with half the time; the better plan wins.
 *  - Many overlapping pairs (strip_large): O(n log n) time sweeps, the
 *    skyline greedy when affordable, "big first" (the biggest rectangles
 *    by the method above, the rest swept around them), the window search
 *    (the exact search on a band around the peak with the rest held), a
 *    middle tier and a peak repair.
 *
 * Every step that yields a plan is recorded with as_plan_round (label,
 * peak). Everything is deterministic for a given seed= except where the
 * wall-clock budget cuts; nodes= fixes the effort instead.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"
#include "strategies/strategy.h"

enum { SEARCH_AUTO, SEARCH_EXACT, SEARCH_LOCAL, SEARCH_NONE };
static const char *const search_names[] = {"auto", "exact", "local", "none",
					   NULL};

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

/*
 * Above this many overlapping pairs a pass of the general placer costs
 * seconds: such traces take the sweep (see strip_large).
 */
#define AS_STRIP_PAIRS_MAX 4000000ULL
#define AS_STRIP_PAIRS_TIER 20000000ULL
/*
 * The exact search keeps a sorted list per depth: n^2/2 entries of 16
 * bytes on a full dive (6000 rectangles: 288 MB). It never runs on more.
 */
#define AS_STRIP_EXACT_LIMIT 6000
#define AS_STRIP_REPAIR_MAX 300000
#define AS_STRIP_WINDOW_MAX 3000

struct cfg {
	int metric, search;
	uint64_t rounds, budget_ms, seed, exact_max, nodes, big;
	double start_ms;
	uint32_t nspace;        /* address spaces planned so far */
	bool multi;             /* the trace has several spaces */
};

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

/* mark[s] (S + 1 entries, zeroed): prefix counts of sections covered. */
static void cover(const struct as_problem *pb, const uint8_t *risk,
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
	cover(pb, seed, AS_RISK_HIGH, mark);
	for (uint32_t i = 0; i < n; i++)
		risk[i] = touches(mark, &pb->r[i]) ? AS_RISK_HIGH
						   : AS_RISK_NONE;
	/* Medium: at the threshold, and what shares time with those. */
	for (uint32_t i = 0; i < n; i++)
		if (seed[i] != AS_RISK_MEDIUM)
			seed[i] = AS_RISK_NONE;
	cover(pb, seed, AS_RISK_MEDIUM, mark);
	for (uint32_t i = 0; i < n; i++)
		if (risk[i] == AS_RISK_NONE && touches(mark, &pb->r[i]))
			risk[i] = AS_RISK_MEDIUM;
	/* Low: shares time with a high or medium one. */
	cover(pb, risk, AS_RISK_MEDIUM, mark);
	for (uint32_t i = 0; i < n; i++)
		if (risk[i] == AS_RISK_NONE && touches(mark, &pb->r[i]))
			risk[i] = AS_RISK_LOW;
	free(mark);
	free(seed);
}

static bool by_t0(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_problem *pb = ctx;
	return pb->r[a].t0 < pb->r[b].t0;
}

int as_strip_group(const struct as_problem *pb, uint32_t *ids, uint32_t n,
		   uint32_t *first)
{
	if (as_sort_u32(ids, n, by_t0, pb))
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
	struct cfg *cfg;
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

/* Record a round, naming the space when the trace has several. */
static int note(const struct cfg *cfg, struct as_plan *p, const char *what,
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
	return note(sp->cfg, sp->p, what, peak);
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
		while (j-- > 0)
			as_placer_pop(sp->pl, ids[j]);
		if (top < best_top) {
			best_top = top;
			best_m = m;
		}
		if (best_top <= pb->lower_bound || as_now_ms() > stop)
			break;
	}
	if (as_strip_order(pb, best_m, ids, n))
		return AS_ENOMEM;
	sp->metric_use[best_m] += n;
	for (uint32_t j = 0; j < n; j++) {
		uint64_t o = 0;
		as_placer_find(sp->pl, ids[j], AS_FIT_LOWEST, &o, NULL);
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
		return as_placer_nomem(sp->pl) ? AS_ENOMEM : AS_EUNSUPPORTED;
	keep_if_better(sp, sp->off, peak);
	char label[48];
	snprintf(label, sizeof(label), "metric=%s",
		 as_strip_metrics[sp->cfg->metric]);
	if (round_note(sp, label, peak))
		return AS_ENOMEM;
	sp->hashes[sp->nhashes++] = hash_order(sp->order, n);
	for (uint64_t round = 1; round <= sp->cfg->rounds && peak > lb;
	     round++) {
		if (as_now_ms() > stop) {
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
				if (as_now_ms() > stop)
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
			return as_placer_nomem(sp->pl) ? AS_ENOMEM
						       : AS_EUNSUPPORTED;
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
 * Rank for the skyline greedy: the most bytes live under a rectangle
 * (largest first), then its area (the exact search's favourite priority).
 */
struct sky_key {
	const struct as_problem *pb;
	const uint64_t *total;
};

static bool sky_before(uint32_t a, uint32_t b, const void *cv)
{
	const struct sky_key *k = cv;
	const struct as_rect *p = &k->pb->r[a], *q = &k->pb->r[b];
	if (k->total[a] != k->total[b])
		return k->total[a] > k->total[b];
	double ap = (double)p->size *
		    (double)(k->pb->times[p->t1] - k->pb->times[p->t0]);
	double aq = (double)q->size *
		    (double)(k->pb->times[q->t1] - k->pb->times[q->t0]);
	if (ap != aq)
		return ap > aq;
	return a < b;
}

/* Skyline greedy as one more candidate; returns its peak. */
static uint64_t skyline_try(const struct as_problem *pb, uint64_t *out,
			    int *err)
{
	uint32_t n = pb->n, S = pb->nsections, lv = 1;
	while ((1u << lv) <= S)
		lv++;
	uint64_t *load = calloc((size_t)S + 1, sizeof(uint64_t));
	uint64_t *sp = calloc((size_t)lv * (S + 1), sizeof(uint64_t));
	uint64_t *total = calloc(n, sizeof(uint64_t));
	uint32_t *ids = calloc(n, sizeof(uint32_t));
	uint32_t *rank = calloc(n, sizeof(uint32_t));
	uint64_t peak = 0;
	*err = AS_ENOMEM;
	if (!load || !sp || !total || !ids || !rank)
		goto out;
	/* Most bytes under each rectangle: a sparse table of range maxima. */
	as_problem_load(pb, load);
	memcpy(sp, load, ((size_t)S + 1) * sizeof(uint64_t));
	for (uint32_t l = 1; l < lv; l++)
		for (uint32_t t = 0; t + (1u << l) <= S; t++) {
			uint64_t a = sp[(size_t)(l - 1) * (S + 1) + t];
			uint64_t b = sp[(size_t)(l - 1) * (S + 1) + t +
					(1u << (l - 1))];
			sp[(size_t)l * (S + 1) + t] = a > b ? a : b;
		}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = pb->r[i].t0, b = pb->r[i].t1, l = 0;
		while ((2u << l) <= b - a)
			l++;
		uint64_t x = sp[(size_t)l * (S + 1) + a];
		uint64_t y = sp[(size_t)l * (S + 1) + b - (1u << l)];
		total[i] = x > y ? x : y;
		ids[i] = i;
	}
	struct sky_key k = {pb, total};
	if (as_sort_u32(ids, n, sky_before, &k))
		goto out;
	for (uint32_t r = 0; r < n; r++)
		rank[ids[r]] = r;
	peak = as_place_skyline(pb, rank, out, err);
out:
	free(load);
	free(sp);
	free(total);
	free(ids);
	free(rank);
	return peak;
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
			       nodes ? nodes / 5 * 4 : 0, sp->cfg->seed,
			       sp->off, &st);
	if (r < 0)
		return r;
	if (r == AS_EXACT_FOUND) {
		keep_if_better(sp, sp->off, as_place_peak(pb, sp->off));
		if (round_note(sp, "exact at bound", sp->best_peak))
			return AS_ENOMEM;
	} else {
		lo++;
	}
	while (lo < sp->best_peak && as_now_ms() < deadline &&
	       (!nodes || st.nodes < nodes)) {
		now = as_now_ms();
		uint64_t cap = lo + (sp->best_peak - lo) / 2;
		uint64_t share = nodes ? (nodes - st.nodes + 1) / 2 : 0;
		r = as_exact_solve(pb, cap, now + (deadline - now) * 0.5,
				   share, sp->cfg->seed, sp->off, &st);
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
			lo = cap + 1;
		}
	}
	return as_plan_stat_int(sp->p, "search_nodes", st.nodes);
}

/*
 * Iterated local search over orders: move the rectangles that touch the
 * peak, plus a few random others, to the front of the best order, re-place,
 * keep the result when it is no worse.
 */
static int local_phase(struct space *sp, double deadline)
{
	const struct as_problem *pb = sp->pb;
	uint32_t n = pb->n;
	uint64_t rng = sp->cfg->seed * 0x9e3779b97f4a7c15ULL + 1;
	uint64_t cur_peak = sp->best_peak;
	uint32_t tries = 0, better = 0;
	/* Start from the order of the seed's best. */
	memcpy(sp->off, sp->best, n * sizeof(uint64_t));
	while (sp->best_peak > pb->lower_bound && as_now_ms() < deadline &&
	       (!sp->cfg->nodes || (uint64_t)tries * n < sp->cfg->nodes)) {
		tries++;
		as_strip_classify(pb, sp->off, cur_peak - 1, sp->risk);
		uint32_t m = 0, rest = 0;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = sp->order[k];
			bool pick = sp->risk[i] == AS_RISK_HIGH &&
				    as_splitmix64(&rng) % 4 != 0;
			pick = pick || as_splitmix64(&rng) % 64 == 0;
			if (pick)
				sp->next[m++] = i;
			else
				sp->tmp[rest++] = i;
		}
		/* Shuffle the picked ones a little: adjacent swaps. */
		for (uint32_t k = 1; k < m; k++)
			if (as_splitmix64(&rng) % 3 == 0) {
				uint32_t t = sp->next[k];
				sp->next[k] = sp->next[k - 1];
				sp->next[k - 1] = t;
			}
		memcpy(sp->next + m, sp->tmp, rest * sizeof(uint32_t));
		uint64_t peak = as_place_order(sp->pl, sp->next, n,
					       AS_FIT_LOWEST, sp->off);
		if (peak == UINT64_MAX)
			return as_placer_nomem(sp->pl) ? AS_ENOMEM
						       : AS_EUNSUPPORTED;
		if (peak <= cur_peak) {
			memcpy(sp->order, sp->next, n * sizeof(uint32_t));
			if (peak < sp->best_peak) {
				better++;
				keep_if_better(sp, sp->off, peak);
				if (round_note(sp, "local search", peak))
					return AS_ENOMEM;
			}
			cur_peak = peak;
		} else {
			/* Restore the placement of the kept order. */
			cur_peak = as_place_order(sp->pl, sp->order, n,
						  AS_FIT_LOWEST, sp->off);
		}
	}
	if (as_plan_stat_int(sp->p, "local_tries", tries))
		return AS_ENOMEM;
	return as_plan_stat_int(sp->p, "local_improvements", better);
}

/* The seed's method and the search, on a problem of moderate overlap. */
static int strip_full(const struct as_problem *pb, uint64_t *off,
		      struct cfg *cfg, struct as_plan *p, double deadline)
{
	struct space sp = {.pb = pb, .cfg = cfg, .p = p,
			   .best_peak = UINT64_MAX};
	uint32_t n = pb->n;
	int err = AS_ENOMEM;
	sp.pl = as_placer_create(pb);
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
	err = seed_method(&sp, as_now_ms() + (deadline - as_now_ms()) * 0.4);
	if (err)
		goto out;
	bool exact = n <= AS_STRIP_EXACT_LIMIT &&
		     (cfg->search == SEARCH_EXACT ||
		      (cfg->search == SEARCH_AUTO && n <= cfg->exact_max));
	/* The exact search dives this way itself; others get it here. */
	if (!exact && sp.best_peak > pb->lower_bound) {
		uint64_t peak = skyline_try(pb, sp.off, &err);
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		keep_if_better(&sp, sp.off, peak);
		if ((err = round_note(&sp, "skyline greedy", peak)))
			goto out;
	}
	if (sp.best_peak > pb->lower_bound && cfg->search != SEARCH_NONE) {
		if (exact)
			err = exact_phase(&sp, deadline);
		else
			err = local_phase(&sp, deadline);
		if (err)
			goto out;
	}
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

/*
 * Peak repair, a large-neighbourhood search: take a rectangle at the peak,
 * lift out every movable rectangle sharing time with it (the window), and
 * put them back one by one at the lowest offset that fits, in a few orders
 * (largest first, earliest first, seeded shuffles). Keep the first order
 * whose highest top is below the peak, else restore the window and widen
 * it once to everything sharing time with the window. Stops when a peak
 * rectangle cannot be lowered or the time is up. Returns the new peak.
 */
struct repair {
	const struct as_problem *pb;
	struct as_placer *pl;
	uint64_t *off, *save;
	const uint8_t *fixed;
	uint32_t *win;
	uint32_t nwin;
	uint64_t rng;
};

/* Re-place the window in its current order; highest top, or UINT64_MAX. */
static uint64_t refill(struct repair *rp)
{
	uint64_t high = 0;
	for (uint32_t k = 0; k < rp->nwin; k++)
		as_placer_pop(rp->pl, rp->win[k]);
	for (uint32_t k = 0; k < rp->nwin; k++) {
		uint32_t i = rp->win[k];
		uint64_t y;
		if (!as_placer_find(rp->pl, i, AS_FIT_LOWEST, &y, NULL))
			return UINT64_MAX; /* leaves the window half placed */
		rp->off[i] = y;
		as_placer_put(rp->pl, i, y);
		if (y + rp->pb->r[i].size > high)
			high = y + rp->pb->r[i].size;
	}
	return high;
}

static void restore(struct repair *rp)
{
	for (uint32_t k = 0; k < rp->nwin; k++)
		as_placer_pop(rp->pl, rp->win[k]);
	for (uint32_t k = 0; k < rp->nwin; k++) {
		uint32_t i = rp->win[k];
		rp->off[i] = rp->save[k];
		as_placer_put(rp->pl, i, rp->off[i]);
	}
}

static bool by_start(uint32_t a, uint32_t b, const void *cv)
{
	const struct as_problem *pb = cv;
	return pb->r[a].t0 < pb->r[b].t0 ||
	       (pb->r[a].t0 == pb->r[b].t0 && a < b);
}

static uint64_t repair_peak(const struct as_problem *pb, uint64_t *off,
			    const uint8_t *fixed, uint64_t seed,
			    double deadline, uint32_t *moves, int *err)
{
	uint32_t n = pb->n;
	struct repair rp = {.pb = pb, .off = off, .fixed = fixed,
			    .rng = seed * 0x2545f4914f6cdd1dULL + 7};
	uint64_t peak = as_place_peak(pb, off);
	rp.pl = as_placer_create(pb);
	rp.win = calloc(n, sizeof(uint32_t));
	rp.save = calloc(n, sizeof(uint64_t));
	*err = AS_ENOMEM;
	*moves = 0;
	if (!rp.pl || !rp.win || !rp.save)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		as_placer_put(rp.pl, i, off[i]);
	*err = AS_OK;
	while (peak > pb->lower_bound && as_now_ms() < deadline) {
		uint32_t top = 0;
		while (off[top] + pb->r[top].size != peak)
			top++;
		uint32_t t0 = pb->r[top].t0, t1 = pb->r[top].t1;
		bool done = false;
		for (int wide = 0; wide < 2 && !done; wide++) {
			if (wide) {
				/*
				 * Everything sharing time with the window,
				 * the fixed ones too.
				 */
				for (uint32_t k = 0; k < rp.nwin; k++) {
					const struct as_rect *r =
						&pb->r[rp.win[k]];
					t0 = r->t0 < t0 ? r->t0 : t0;
					t1 = r->t1 > t1 ? r->t1 : t1;
				}
			}
			rp.nwin = 0;
			for (uint32_t i = 0; i < n; i++)
				if ((wide || !fixed[i]) && pb->r[i].t0 < t1 &&
				    t0 < pb->r[i].t1)
					rp.win[rp.nwin++] = i;
			/* A refill cannot be cut short: keep windows small. */
			if (rp.nwin > AS_STRIP_WINDOW_MAX)
				break;
			for (uint32_t k = 0; k < rp.nwin; k++)
				rp.save[k] = off[rp.win[k]];
			for (int o = 0; o < 4 && !done; o++) {
				if (o == 0 &&
				    as_strip_order(pb, 0, rp.win, rp.nwin))
					goto out;
				if (o == 1 && as_sort_u32(rp.win, rp.nwin,
							  by_start, pb))
					goto out;
				for (uint32_t k = rp.nwin; o >= 2 && k > 1;
				     k--) {
					uint32_t j = (uint32_t)(as_splitmix64(
								&rp.rng) %
							k);
					uint32_t t = rp.win[k - 1];
					rp.win[k - 1] = rp.win[j];
					rp.win[j] = t;
				}
				/* save[] follows win[]: refresh it. */
				for (uint32_t k = 0; k < rp.nwin; k++)
					rp.save[k] = off[rp.win[k]];
				uint64_t high = refill(&rp);
				if (high < peak) {
					done = true;
					(*moves)++;
				} else if (high != UINT64_MAX) {
					restore(&rp);
				} else {
					*err = AS_EUNSUPPORTED;
					goto out;
				}
				if (as_now_ms() > deadline)
					break;
			}
		}
		if (!done)
			break;
		peak = as_place_peak(pb, off);
	}
out:
	as_placer_destroy(rp.pl);
	free(rp.win);
	free(rp.save);
	return as_place_peak(pb, off);
}

/*
 * Window search: around a rectangle at the peak, free every rectangle that
 * shares its time (the window), hold every other rectangle that shares
 * time with the window where it is, and ask the exact search for the
 * window below the peak. Repeats while it succeeds and time is left.
 * Returns the number of windows improved; off[] is updated.
 */
#define AS_STRIP_WINDOW_FREE 512

struct by_off_desc_ctx {
	const uint64_t *off;
	const struct as_problem *pb;
};

/* Highest top first. */
static bool by_top_desc_off(uint32_t a, uint32_t b, const void *cv)
{
	const struct by_off_desc_ctx *c = cv;
	uint64_t ta = c->off[a] + c->pb->r[a].size;
	uint64_t tb = c->off[b] + c->pb->r[b].size;
	return ta > tb || (ta == tb && a < b);
}
#define AS_STRIP_WINDOW_ALL 4000

static uint32_t window_exact(const struct as_problem *pb, uint64_t *off,
			     uint64_t seed, double deadline, uint64_t nodes,
			     int *err)
{
	struct as_exact_stats st = {0};
	uint32_t n = pb->n, S = pb->nsections, wins = 0;
	uint32_t *mark = calloc((size_t)S + 2, sizeof(uint32_t));
	uint32_t *map = calloc(n, sizeof(uint32_t));
	uint8_t *role = calloc(n, 1); /* 1 free, 2 held */
	struct as_problem sub = *pb;
	uint64_t *fixed = calloc(AS_STRIP_WINDOW_ALL, sizeof(uint64_t));
	uint64_t *so = calloc(AS_STRIP_WINDOW_ALL, sizeof(uint64_t));
	uint64_t *load = calloc((size_t)S + 1, sizeof(uint64_t));
	sub.r = calloc(AS_STRIP_WINDOW_ALL, sizeof(*sub.r));
	*err = AS_ENOMEM;
	if (!mark || !map || !role || !fixed || !so || !load || !sub.r)
		goto out;
	*err = AS_OK;
	/* Start wide, halve after a failure, double after a success. */
	uint32_t limit = AS_STRIP_WINDOW_FREE;
	while (as_now_ms() < deadline && limit >= 16 &&
	       (!nodes || st.nodes < nodes)) {
		uint64_t peak = as_place_peak(pb, off);
		if (peak <= pb->lower_bound)
			break;
		uint32_t top = 0;
		while (off[top] + pb->r[top].size != peak)
			top++;
		const struct as_rect *rt = &pb->r[top];
		/*
		 * Free: the `want` highest rectangles sharing time with the
		 * top one (a window in time and in space); held: the others
		 * sharing time with those. Halve the window until it fits.
		 */
		uint32_t nf = 0, m = 0;
		uint64_t base = 0;
		bool fits = false;
		for (uint32_t want = limit; want >= 16; want /= 2) {
			m = 0;
			for (uint32_t i = 0; i < n; i++)
				if (pb->r[i].t0 < rt->t1 && rt->t0 < pb->r[i].t1)
					map[m++] = i;
			if (m > want) {
				struct by_off_desc_ctx c = {off, pb};
				if (as_sort_u32(map, m, by_top_desc_off, &c)) {
					*err = AS_ENOMEM;
					goto out;
				}
				m = want;
			}
			nf = m;
			/*
			 * The band: from the lowest free offset (aligned
			 * down) up. Held rectangles wholly below it do not
			 * matter; those reaching into it are clipped to it.
			 */
			uint8_t lg = 0;
			base = UINT64_MAX;
			for (uint32_t k = 0; k < m; k++) {
				uint32_t i = map[k];
				if (off[i] < base)
					base = off[i];
				if (pb->r[i].align_log2 > lg)
					lg = pb->r[i].align_log2;
			}
			base &= ~(((uint64_t)1 << lg) - 1);
			memset(role, 0, n);
			for (uint32_t k = 0; k < m; k++)
				role[map[k]] = 1;
			memset(mark, 0, ((size_t)S + 2) * sizeof(uint32_t));
			for (uint32_t k = 0; k < m; k++) {
				mark[pb->r[map[k]].t0]++;
				mark[pb->r[map[k]].t1]--;
			}
			uint32_t run = 0, acc = 0;
			for (uint32_t t = 0; t <= S; t++) {
				run += mark[t];
				uint32_t c = t < S && run > 0;
				mark[t] = acc;
				acc += c;
			}
			for (uint32_t i = 0; i < n && m <= AS_STRIP_WINDOW_ALL;
			     i++)
				if (!role[i] &&
				    off[i] + pb->r[i].size > base &&
				    mark[pb->r[i].t1] - mark[pb->r[i].t0] > 0) {
					role[i] = 2;
					map[m++] = i;
				}
			if (m <= AS_STRIP_WINDOW_ALL) {
				fits = true;
				break;
			}
		}
		if (!fits)
			break;
		/* Offsets in the band are counted from base. */
		for (uint32_t k = 0; k < m; k++) {
			uint32_t i = map[k];
			sub.r[k] = pb->r[i];
			fixed[k] = AS_NO_OFFSET;
			if (role[i] == 2) {
				uint64_t lo = off[i] > base ? off[i] : base;
				sub.r[k].size = off[i] + pb->r[i].size - lo;
				sub.r[k].align_log2 = 0;
				fixed[k] = lo - base;
			}
		}
		sub.n = m;
		as_problem_load(&sub, load);
		sub.lower_bound = 0;
		for (uint32_t t = 0; t < S; t++)
			if (load[t] > sub.lower_bound)
				sub.lower_bound = load[t];
		double now = as_now_ms();
		if (sub.lower_bound > peak - 1 - base)
			break;
		/* A quarter of the time, at most 0.3 s (nodes= decides alone). */
		double slice = (deadline - now) / 4;
		if (slice > 300)
			slice = 300;
		if (nodes)
			slice = deadline - now;
		/* With nodes=, each window gets an eighth of what is left. */
		uint64_t share = nodes ? (nodes - st.nodes) / 8 + 1 : 0;
		int r = as_exact_solve_fixed(&sub, fixed, peak - 1 - base,
					     now + slice, share, seed, so, &st);
		if (r < 0) {
			*err = r;
			break;
		}
		if (r != AS_EXACT_FOUND) {
			limit = nf / 2; /* a smaller window */
			continue;
		}
		limit = nf * 2 < AS_STRIP_WINDOW_FREE ? nf * 2
						      : AS_STRIP_WINDOW_FREE;
		for (uint32_t k = 0; k < m; k++)
			if (role[map[k]] == 1)
				off[map[k]] = so[k] + base;
		wins++;
	}
out:
	free(mark);
	free(map);
	free(role);
	free(fixed);
	free(so);
	free(load);
	free(sub.r);
	return wins;
}

/*
 * Traces with too many overlapping pairs for the seed's method (hundreds of
 * thousands to millions of buffers): the O(n log n) time sweep, first fit
 * and best fit; then "big first": the big rectangles (where the bytes are)
 * get the full method on their own, and the sweep fits the rest around them.
 * The best of these is kept.
 */
static int strip_large(const struct as_problem *pb, uint64_t *off,
		       struct cfg *cfg, struct as_plan *p, double deadline)
{
	uint32_t n = pb->n;
	uint64_t *tmp = calloc(n, sizeof(uint64_t));
	uint8_t *fixed = calloc(n, 1);
	uint32_t *map = calloc(n, sizeof(uint32_t));
	struct as_problem sub = *pb;
	struct as_placer *obst = NULL;
	uint64_t best = UINT64_MAX, peak;
	int err = AS_ENOMEM;
	sub.r = calloc(n, sizeof(*sub.r));
	if (!tmp || !fixed || !map || !sub.r)
		goto out;
	for (int f = 0; f < 2; f++) {
		peak = as_place_sweep(pb, f ? AS_FIT_BEST : AS_FIT_LOWEST, NULL,
				      NULL, tmp, &err);
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		if ((err = note(cfg, p, f ? "sweep best fit"
					      : "sweep first fit", peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
	/* The skyline greedy over everything, when its pair lists fit. */
	if (as_problem_pairs(pb) <= AS_STRIP_PAIRS_TIER) {
		peak = skyline_try(pb, tmp, &err);
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		if ((err = note(cfg, p, "skyline greedy", peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
	/* Big: at least 1/big of the bound, doubling the cut while too many. */
	uint64_t cut;
	for (cut = pb->lower_bound / cfg->big + 1;; cut *= 2) {
		sub.n = 0;
		if (cut == 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			if (pb->r[i].size >= cut) {
				map[sub.n] = i;
				sub.r[sub.n++] = pb->r[i];
			}
		if (as_problem_pairs(&sub) <= AS_STRIP_PAIRS_MAX &&
		    sub.n <= cfg->exact_max)
			break;
	}
	if ((err = as_plan_stat_int(p, "big_rects", sub.n)))
		goto out;
	if (sub.n == 0 || sub.n == n)
		goto done;
	{
		uint64_t *so = calloc(sub.n, sizeof(uint64_t));
		uint64_t *load = calloc((size_t)sub.nsections + 1,
					sizeof(uint64_t));
		if (!so || !load) {
			free(so);
			free(load);
			goto out;
		}
		as_problem_load(&sub, load);
		sub.lower_bound = 0;
		for (uint32_t t = 0; t < sub.nsections; t++)
			if (load[t] > sub.lower_bound)
				sub.lower_bound = load[t];
		free(load);
		/* No tuning rounds there: the exact search's dive does better. */
		struct cfg c2 = *cfg;
		c2.rounds = 0;
		double now = as_now_ms();
		err = strip_full(&sub, so, &c2, p, now + (deadline - now) / 2);
		for (uint32_t k = 0; err == AS_OK && k < sub.n; k++) {
			tmp[map[k]] = so[k];
			fixed[map[k]] = 1;
		}
		free(so);
		if (err)
			goto out;
	}
	obst = as_placer_create(pb);
	if (!obst)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		if (fixed[i])
			as_placer_put(obst, i, tmp[i]);
	peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, obst, tmp, &err);
	if (err)
		goto out;
	if (peak == UINT64_MAX) {
		err = AS_EUNSUPPORTED;
		goto out;
	}
	if ((err = note(cfg, p, "big first, sweep", peak)))
		goto out;
	if (peak < best) {
		best = peak;
		memcpy(off, tmp, n * sizeof(uint64_t));
	}
	/*
	 * Window search on the best so far, with 60% of the time left; the
	 * middle tier below gets what remains.
	 */
	if (as_now_ms() < deadline) {
		double now = as_now_ms();
		uint32_t wins = window_exact(pb, off, cfg->seed,
					     now + (deadline - now) * 0.6,
					     cfg->nodes, &err);
		if (err)
			goto out;
		best = as_place_peak(pb, off);
		if (wins && (err = note(cfg, p, "window search", best)))
			goto out;
		if ((err = as_plan_stat_int(p, "windows_improved", wins)))
			goto out;
	}
	/*
	 * A middle tier, when the pairs allow one pass of the general placer:
	 * buffers down to cut/16 (all of them when the whole trace allows
	 * one pass) go largest first onto the big ones (lowest fit), the sweep
	 * fits the rest around both.
	 */
	uint64_t cut2 = as_problem_pairs(pb) <= AS_STRIP_PAIRS_TIER ? 1
								  : cut / 16 + 1;
	sub.n = 0;
	for (uint32_t i = 0; i < n; i++)
		if (pb->r[i].size >= cut2)
			sub.r[sub.n++] = pb->r[i];
	if (as_problem_pairs(&sub) <= AS_STRIP_PAIRS_TIER &&
	    as_now_ms() < deadline) {
		uint32_t m = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!fixed[i] && pb->r[i].size >= cut2)
				map[m++] = i;
		if ((err = as_strip_order(pb, 0, map, m)))
			goto out;
		for (uint32_t k = 0; k < m; k++) {
			uint32_t i = map[k];
			if (!as_placer_find(obst, i, AS_FIT_LOWEST, &tmp[i],
					    NULL)) {
				err = AS_EUNSUPPORTED;
				goto out;
			}
			as_placer_put(obst, i, tmp[i]);
			fixed[i] = 1;
		}
		peak = as_place_sweep(pb, AS_FIT_LOWEST, fixed, obst, tmp,
				      &err);
		if (err)
			goto out;
		if (peak == UINT64_MAX) {
			err = AS_EUNSUPPORTED;
			goto out;
		}
		if ((err = note(cfg, p, "big, middle, sweep", peak)))
			goto out;
		if (peak < best) {
			best = peak;
			memcpy(off, tmp, n * sizeof(uint64_t));
		}
	}
done:
	if (n <= AS_STRIP_REPAIR_MAX && as_now_ms() < deadline) {
		uint32_t moves;
		/* The big ones stay; `fixed` marks them, or nothing. */
		if (sub.n == 0 || sub.n == n)
			memset(fixed, 0, n);
		else
			for (uint32_t i = 0; i < n; i++)
				fixed[i] = pb->r[i].size >= cut;
		peak = repair_peak(pb, off, fixed, cfg->seed, deadline, &moves,
				   &err);
		if (err)
			goto out;
		if (moves && (err = note(cfg, p, "peak repair", peak)))
			goto out;
		if ((err = as_plan_stat_int(p, "repair_moves", moves)))
			goto out;
	}
	err = AS_OK;
out:
	as_placer_destroy(obst);
	free(tmp);
	free(fixed);
	free(map);
	free(sub.r);
	return err;
}

static int plan_space(const struct as_problem *pb, uint64_t *off, void *ctx,
		      struct as_plan *p, struct as_diag *diag)
{
	struct cfg *cfg = ctx;
	double deadline = cfg->start_ms + (double)cfg->budget_ms;
	int err;
	cfg->nspace++;
	/*
	 * Beyond the exact search's size the seed's method and the local
	 * search do worse than big-first (measured on tiled real traces).
	 */
	bool many = pb->n > cfg->exact_max && cfg->search == SEARCH_AUTO;
	bool few_pairs = as_problem_pairs(pb) <= AS_STRIP_PAIRS_MAX;
	if (!many && few_pairs) {
		err = strip_full(pb, off, cfg, p, deadline);
	} else if (!few_pairs) {
		err = strip_large(pb, off, cfg, p, deadline);
	} else {
		/* Both, the large path with half the time; keep the better. */
		uint64_t *alt = calloc(pb->n, sizeof(uint64_t));
		if (!alt)
			return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
		double now = as_now_ms();
		err = strip_large(pb, off, cfg, p, now + (deadline - now) / 2);
		if (err == AS_OK)
			err = strip_full(pb, alt, cfg, p, deadline);
		if (err == AS_OK &&
		    as_place_peak(pb, alt) < as_place_peak(pb, off))
			memcpy(off, alt, pb->n * sizeof(uint64_t));
		free(alt);
	}
	if (err == AS_EUNSUPPORTED)
		return as_diag_set(diag, 0, err,
				   "strip: offsets overflow 64 bits");
	return err;
}

static const struct as_option_desc options[] = {
	{"metric", "size-length",
	 "first order: size-length, size, length, overlap, area, sum, ratio, "
	 "length-size, size-overlap, overlap-size"},
	{"rounds", "8", "seed tuning rounds (0-1000)"},
	{"budget_ms", "3000",
	 "time for the improving search, per trace (0-3600000)"},
	{"seed", "1", "seed of the search's tie-breaks"},
	{"search", "auto", "auto, exact, local or none"},
	{"exact_max", "3000",
	 "largest rectangle count for the exact search under auto (0-6000)"},
	{"big", "256",
	 "large traces: buffers of at least 1/big of the bound go first "
	 "(2-65536)"},
	{"nodes", "0",
	 "search effort cap, machine independent (0: the budget only)"},
	{NULL, NULL, NULL},
};

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	struct cfg cfg = {0};
	int err;
	cfg.start_ms = as_now_ms();
	cfg.multi = t->nspaces > 1;
	if ((err = as_opts_choice(o, "metric", as_strip_metrics, 0,
				  &cfg.metric, diag)) ||
	    (err = as_opts_u64(o, "rounds", 8, 0, 1000, &cfg.rounds, diag)) ||
	    (err = as_opts_u64(o, "budget_ms", 3000, 0, 3600000,
			       &cfg.budget_ms, diag)) ||
	    (err = as_opts_u64(o, "seed", 1, 0, UINT64_MAX, &cfg.seed,
			       diag)) ||
	    (err = as_opts_choice(o, "search", search_names, SEARCH_AUTO,
				  &cfg.search, diag)) ||
	    (err = as_opts_u64(o, "exact_max", 3000, 0, AS_STRIP_EXACT_LIMIT,
			       &cfg.exact_max, diag)) ||
	    (err = as_opts_u64(o, "nodes", 0, 0, UINT64_MAX, &cfg.nodes,
			       diag)) ||
	    (err = as_opts_u64(o, "big", 256, 2, 65536, &cfg.big, diag)))
		return err;
	return as_plan_spaces(t, p, plan_space, &cfg, diag);
}

const struct as_strategy_impl as_strategy_strip = {
	.info = {
		.name = "strip",
		.summary = "lifetime strip packing with peak suppression and "
			   "an exact/local search under a time budget",
		.online = false,
		.options = options,
	},
	.plan = plan,
};
