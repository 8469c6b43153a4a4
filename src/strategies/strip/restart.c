/*
 * Strategy strip, the skyline greedy and its restarts (strip.h).
 *
 * The skyline greedy (place/skyline.c) drops the rectangle whose skyline
 * offset is lowest, ties by a rank: here the most bytes live under the
 * rectangle (largest first), then its area. The restarts are strip's
 * anytime search: the same greedy again and again with the areas scaled
 * by random factors, so the ties (many rectangles share the most loaded
 * time) fall differently, the lowest plan kept.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"
#include "strategies/strategy.h"

/* The rank's keys per rectangle: bytes live under it, its area. */
struct keys {
	uint64_t *total;
	double *area;
};

static void keys_free(struct keys *k)
{
	free(k->total);
	free(k->area);
	k->total = NULL;
	k->area = NULL;
}

/*
 * Most bytes under each rectangle, from a tree of range maxima over the
 * sections' loads (bottom up: leaf N + t is section t), O(S) memory.
 */
static int keys_make(const struct as_problem *pb, struct keys *k)
{
	uint32_t n = pb->n, S = pb->nsections;
	size_t N = 1;
	while (N < S)
		N *= 2;
	uint64_t *tree = calloc(2 * N, sizeof(uint64_t));
	k->total = calloc((size_t)n + 1, sizeof(uint64_t));
	k->area = calloc((size_t)n + 1, sizeof(double));
	if (!tree || !k->total || !k->area) {
		free(tree);
		keys_free(k);
		return AS_ENOMEM;
	}
	as_problem_load(pb, tree + N);
	for (size_t v = N - 1; v > 0; v--)
		tree[v] = tree[2 * v] > tree[2 * v + 1] ? tree[2 * v]
							 : tree[2 * v + 1];
	for (uint32_t i = 0; i < n; i++) {
		const struct as_rect *r = &pb->r[i];
		uint64_t m = 0;
		for (size_t l = r->t0 + N, h = r->t1 + N; l < h;
		     l >>= 1, h >>= 1) {
			if (l & 1) {
				m = tree[l] > m ? tree[l] : m;
				l++;
			}
			if (h & 1) {
				h--;
				m = tree[h] > m ? tree[h] : m;
			}
		}
		k->total[i] = m;
		k->area[i] = (double)r->size *
			     (double)(pb->times[r->t1] - pb->times[r->t0]);
	}
	free(tree);
	return AS_OK;
}

/* The rank: most bytes under it first, then the (scaled) area, then index. */
struct rank_by {
	const uint64_t *total;
	const double *area;
};

static bool rank_before(uint32_t a, uint32_t b, const void *cv)
{
	const struct rank_by *k = cv;
	if (k->total[a] != k->total[b])
		return k->total[a] > k->total[b];
	if (k->area[a] != k->area[b])
		return k->area[a] > k->area[b];
	return a < b;
}

/*
 * The skyline greedy with areas `area` (ids[] and rank[]: n entries of
 * scratch), until `deadline` (as_place_skyline).
 */
static uint64_t drop(const struct as_problem *pb, const uint64_t *total,
		     const double *area, uint32_t *ids, uint32_t *rank,
		     const struct as_budget *budget, double deadline,
		     uint64_t *out, int *err)
{
	struct rank_by k = {total, area};
	for (uint32_t i = 0; i < pb->n; i++)
		ids[i] = i;
	if (as_sort_u32(ids, pb->n, rank_before, &k)) {
		*err = AS_ENOMEM;
		return 0;
	}
	for (uint32_t r = 0; r < pb->n; r++)
		rank[ids[r]] = r;
	return as_place_skyline(pb, rank, budget, deadline, out, err);
}

uint64_t as_strip_skyline_try(const struct as_problem *pb,
			      const struct as_budget *budget, double deadline,
			      uint64_t *out, int *err)
{
	struct keys k = {0};
	uint32_t *ids = malloc(((size_t)pb->n + 1) * sizeof(uint32_t));
	uint32_t *rank = malloc(((size_t)pb->n + 1) * sizeof(uint32_t));
	uint64_t peak = 0;
	*err = AS_ENOMEM;
	if (ids && rank && keys_make(pb, &k) == AS_OK)
		peak = drop(pb, k.total, k.area, ids, rank, budget, deadline,
			    out, err);
	if (peak == UINT64_MAX) {
		*err = AS_EUNSUPPORTED; /* an offset past 2^64 */
		peak = 0;
	}
	keys_free(&k);
	free(ids);
	free(rank);
	return peak;
}

static double unit_rand(uint64_t *rng)
{
	return (double)(as_splitmix64(rng) >> 11) / 9007199254740992.0;
}

/* A standard normal draw (Box-Muller). */
static double normal_rand(uint64_t *rng)
{
	double u = unit_rand(rng), v = unit_rand(rng);
	return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) *
	       cos(6.283185307179586 * v);
}

/*
 * What the restart threads share: the best plan so far and the counts,
 * under `lock`. A run of `nodes=` has one thread, so its plan is the same
 * everywhere; a run timed by the clock borrows an idle processor for a
 * second one.
 */
struct shared {
	const struct as_problem *pb;
	const struct keys *k;
	struct as_strip_cfg *cfg;
	struct as_plan *p;
	uint64_t *off;
	double deadline;
	pthread_mutex_t lock;
	uint64_t best, tried, wins;
	int err; /* the first error a thread met */
};

struct worker {
	struct shared *sh;
	uint64_t rng;
	pthread_t th;
};

/* Restarts until the bound, the deadline, nodes=, a cancel or an error. */
static void *restart_loop(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	const struct as_problem *pb = sh->pb;
	uint32_t n = pb->n;
	uint64_t work = 0;
	double *area = malloc(((size_t)n + 1) * sizeof(double));
	uint32_t *ids = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *rank = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint64_t *tmp = malloc(((size_t)n + 1) * sizeof(uint64_t));
	int err = area && ids && rank && tmp ? AS_OK : AS_ENOMEM;
	bool more = err == AS_OK;
	while (more && !as_budget_past(sh->cfg->budget, sh->deadline) &&
	       (!sh->cfg->nodes || work < sh->cfg->nodes)) {
		/*
		 * Each restart scales the areas by exp(s g), g standard
		 * normal, s drawn from [0, 0.3): larger spreads and noise on
		 * the bytes under a rectangle did worse on tiled MiniMalloc
		 * and compiler traces (docs/benchmarks.md).
		 */
		double s = 0.3 * unit_rand(&w->rng);
		for (uint32_t i = 0; i < n; i++)
			area[i] = sh->k->area[i] * exp(s * normal_rand(&w->rng));
		uint64_t peak = drop(pb, sh->k->total, area, ids, rank,
				     sh->cfg->budget, sh->deadline, tmp, &err);
		if (err == AS_ELIMIT) {
			err = AS_OK; /* the deadline: the best stands */
			break;
		}
		if (!err && peak == UINT64_MAX)
			err = AS_EUNSUPPORTED;
		work += n;
		pthread_mutex_lock(&sh->lock);
		if (!err) {
			sh->tried++;
			if (peak < sh->best) {
				sh->best = peak;
				memcpy(sh->off, tmp, (size_t)n * sizeof(uint64_t));
				sh->wins++;
				err = as_strip_note(sh->cfg, sh->p,
						    "skyline restart", peak);
			}
		}
		if (err && !sh->err)
			sh->err = err;
		more = !sh->err && sh->best > pb->lower_bound;
		pthread_mutex_unlock(&sh->lock);
	}
	if (err) {
		pthread_mutex_lock(&sh->lock);
		if (!sh->err)
			sh->err = err;
		pthread_mutex_unlock(&sh->lock);
	}
	free(area);
	free(ids);
	free(rank);
	free(tmp);
	return NULL;
}

int as_strip_restarts(const struct as_problem *pb, uint64_t *off,
		      struct as_strip_cfg *cfg, struct as_plan *p,
		      double deadline)
{
	struct keys k = {0};
	struct shared sh = {
		.pb = pb, .k = &k, .cfg = cfg, .p = p, .off = off,
		.deadline = deadline, .best = as_place_peak(pb, off),
	};
	struct worker w[2] = {
		{&sh, cfg->seed * 0x9e3779b97f4a7c15ULL + 39, 0},
		{&sh, cfg->seed * 0x9e3779b97f4a7c15ULL + 40, 0},
	};
	if (keys_make(pb, &k))
		return AS_ENOMEM;
	if (pthread_mutex_init(&sh.lock, NULL)) {
		keys_free(&k);
		return AS_ENOMEM;
	}
	struct as_procs *spare = cfg->nodes ? NULL : cfg->spare;
	bool second = as_procs_claim(spare);
	if (second && pthread_create(&w[1].th, NULL, restart_loop, &w[1])) {
		as_procs_release(spare);
		second = false;
	}
	restart_loop(&w[0]);
	if (second) {
		pthread_join(w[1].th, NULL);
		as_procs_release(spare);
	}
	pthread_mutex_destroy(&sh.lock);
	keys_free(&k);
	int err = sh.err;
	if (!err && !(err = as_plan_stat_int(p, "restarts", sh.tried)) &&
	    !(err = as_plan_stat_int(p, "restart_wins", sh.wins)))
		err = as_plan_stat_int(p, "restart_threads", second ? 2 : 1);
	return err;
}
