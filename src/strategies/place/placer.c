/*
 * The segment-tree placer of place.h: the tree (placer.h says what it
 * keeps), puts and pops, and the undo log of the unions. Queries are in
 * find.c, the puts' thread in pipe.c.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/placer.h"

/*
 * The canonical cover of r's range, the nodes whose ranges are disjoint and
 * make it up, into cov[] (AS_COVER entries), in the order of the bottom-up
 * walk; returns how many. What follows reads the nodes on the paths from
 * both end leaves to the root (where the cover's strict ancestors lie, and
 * each cover node sits next to one of them), and for a cover node its union,
 * or its children when it keeps none: their lines are fetched here,
 * together, instead of a miss at a time (greedy-size on a 1.1M-block
 * malloc trace took 7-13% less time).
 */
uint32_t as_placer_cover(const struct as_placer *pl, const struct marks *mk,
			 const struct as_rect *r, uint32_t *cov)
{
	uint32_t l = pl->map[r->t0] + pl->size, h = pl->map[r->t1] + pl->size;
	uint32_t n = 0;
	for (uint32_t a = l, b = h - 1; a > 1; a >>= 1, b >>= 1) {
		__builtin_prefetch(&pl->node[a]);
		__builtin_prefetch(&pl->node[b]);
		__builtin_prefetch(&pl->sub[a]);
		__builtin_prefetch(&pl->sub[b]);
		__builtin_prefetch(&mk->vis[a]);
		__builtin_prefetch(&mk->vis[b]);
	}
	for (; l < h; l >>= 1, h >>= 1) {
		if (l & 1)
			cov[n++] = l++;
		if (h & 1)
			cov[n++] = --h;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t v = cov[k];
		if (v < pl->nparts) {
			__builtin_prefetch(&pl->part[v]);
		} else if (v < pl->size) {
			__builtin_prefetch(&pl->node[2 * v]);
			__builtin_prefetch(&pl->sub[2 * v]);
		}
	}
	return n;
}

struct as_placer *as_placer_create(const struct as_problem *pb)
{
	struct as_placer *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->pb = pb;
	pl->nolog = true;
	pl->look = AS_PIPE_LOOK;
	pl->map = calloc((size_t)pb->nsections + 1, sizeof(uint32_t));
	if (!pl->map) {
		free(pl);
		return NULL;
	}
	pl->grain = as_problem_grain(pb);
	for (uint32_t i = 0; i < pb->n; i++)
		pl->map[pb->r[i].t0] = 1;
	uint32_t starts = 0;
	for (uint32_t t = 0; t <= pb->nsections; t++) {
		uint32_t here = pl->map[t];
		pl->map[t] = starts;
		starts += here;
	}
	pl->size = starts ? starts : 1;
	size_t nodes = 2 * (size_t)pl->size;
	pl->node = calloc(nodes, sizeof(*pl->node));
	pl->npath = nodes < AS_PLACER_PATH_NODES ? (uint32_t)nodes
						 : AS_PLACER_PATH_NODES;
	pl->path = calloc(pl->npath, sizeof(*pl->path));
	pl->path_at = calloc(pl->npath, sizeof(uint64_t));
	pl->ver = calloc(pl->npath, sizeof(uint64_t));
	pl->nparts = ((pl->size - 1) >> (AS_PART_HEIGHT - 1)) + 1;
	pl->hot_gap = (pl->size + AS_HOT - 1) / AS_HOT;
	pl->nhot = (pl->size + pl->hot_gap - 1) / pl->hot_gap;
	pl->part = calloc((size_t)pl->nparts + pl->nhot, sizeof(*pl->part));
	pl->sub = calloc(nodes, sizeof(uint32_t));
	pl->mk.vis = calloc(nodes, sizeof(uint16_t));
	pl->off = calloc((size_t)pb->n + 1, sizeof(uint64_t));
	pl->placed = calloc((size_t)pb->n + 1, 1);
	pl->gcap = 1024;
	pl->g = calloc(pl->gcap, sizeof(struct as_span));
	if (!pl->node || !pl->part || !pl->path || !pl->path_at ||
	    !pl->ver || !pl->sub || !pl->mk.vis || !pl->off || !pl->placed ||
	    !pl->g) {
		as_placer_destroy(pl);
		return NULL;
	}
	return pl;
}

void as_placer_destroy(struct as_placer *pl)
{
	if (!pl)
		return;
	as_pipe_stop(pl);
	for (size_t v = 0; pl->node && v < 2 * (size_t)pl->size; v++)
		if (pl->node[v].cap)
			free(pl->node[v].u.v);
	for (uint32_t v = 0; pl->part && v < pl->nparts + pl->nhot; v++)
		if (pl->part[v].cap)
			free(pl->part[v].u.v);
	for (uint32_t v = 0; pl->path && v < pl->npath; v++)
		if (pl->path[v].cap)
			free(pl->path[v].u.v);
	free(pl->map);
	free(pl->node);
	free(pl->part);
	free(pl->path);
	free(pl->path_at);
	free(pl->ver);
	free(pl->sub);
	free(pl->mk.vis);
	free(pl->off);
	free(pl->placed);
	free(pl->g);
	free(pl->src);
	free(pl->ord);
	free(pl->ulog);
	free(pl->uold);
	free(pl->marks);
	free(pl);
}

/* A walk starts (a reset, a new limit): its pace counts from here. */
static void walk_starts(struct as_placer *pl)
{
	pl->start = pl->budget ? pl->budget->left : 0;
	pl->finds = 0;
	pl->over = false;
}

void as_placer_reset(struct as_placer *pl)
{
	as_pipe_stop(pl);
	pl->puts = 0;
	pl->look = AS_PIPE_LOOK;
	size_t nodes = 2 * (size_t)pl->size;
	for (size_t v = 0; v < nodes; v++) {
		pl->node[v].n = 0;
		as_runs_dirty(&pl->node[v], 0);
	}
	for (uint32_t v = 0; v < pl->nparts + pl->nhot; v++) {
		pl->part[v].n = 0;
		as_runs_dirty(&pl->part[v], 0);
	}
	for (uint32_t v = 0; v < pl->npath; v++) {
		pl->path[v].n = 0;
		as_runs_dirty(&pl->path[v], 0);
	}
	memset(pl->path_at, 0, pl->npath * sizeof(uint64_t));
	memset(pl->ver, 0, pl->npath * sizeof(uint64_t));
	pl->stale = false;
	walk_starts(pl);
	pl->nulog = pl->nuold = pl->nmarks = 0;
	pl->nolog = !pl->undo;
	memset(pl->sub, 0, nodes * sizeof(uint32_t));
	memset(pl->placed, 0, pl->pb->n);
}

/* Room for `need` elements of `size` bytes at *p; false: no memory. */
static bool grow(void **p, uint32_t *cap, uint64_t need, size_t size)
{
	if (need <= *cap)
		return true;
	if (need > UINT32_MAX / 2)
		return false;
	uint32_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *np = realloc(*p, (size_t)c * size);
	if (!np)
		return false;
	*p = np;
	*cap = c;
	return true;
}

/* as_runs_unite on part[a], logging what it overwrites. */
static bool part_unite(struct as_placer *pl, uint32_t a, uint64_t lo,
		       uint64_t hi)
{
	struct runs *ru = &pl->part[a];
	if (!pl->nolog) {
		uint32_t i, j;
		as_runs_around(ru, lo, hi, &i, &j);
		if (grow((void **)&pl->ulog, &pl->ulcap, (uint64_t)pl->nulog + 1,
			 sizeof(*pl->ulog)) &&
		    grow((void **)&pl->uold, &pl->uocap,
			 (uint64_t)pl->nuold + (j - i), sizeof(*pl->uold))) {
			if (j > i) /* (nothing overwritten: uold may be NULL) */
				memcpy(pl->uold + pl->nuold, as_runs_v(ru) + i,
				       (j - i) * sizeof(struct as_span));
			pl->ulog[pl->nulog++] =
				(struct undo){a, i, j - i, pl->nuold};
			pl->nuold += j - i;
		} else {
			pl->nolog = true;
		}
	}
	return as_runs_unite(ru, lo, hi);
}

/* Take back one logged union; false: no memory. */
static bool part_undo(struct as_placer *pl, const struct undo *u)
{
	struct runs *ru = &pl->part[u->v];
	as_runs_dirty(ru, u->pos);
	struct as_span *v = as_runs_v(ru);
	if (u->nold == 0) {
		memmove(v + u->pos, v + u->pos + 1,
			(ru->n - u->pos - 1) * sizeof(*v));
		ru->n--;
		return true;
	}
	if (!as_runs_grow(ru, ru->n + u->nold - 1))
		return false;
	v = as_runs_v(ru);
	memmove(v + u->pos + u->nold, v + u->pos + 1,
		(ru->n - u->pos - 1) * sizeof(*v));
	memcpy(v + u->pos, pl->uold + u->at, u->nold * sizeof(*v));
	ru->n += u->nold - 1;
	return true;
}

void as_placer_undo(struct as_placer *pl)
{
	pl->undo = true;
	as_placer_reset(pl);
}

/* The snapshots [*j, *e) of leaves in [l, h). */
void as_placer_hot_range(const struct as_placer *pl, uint32_t l, uint32_t h,
			 uint32_t *j, uint32_t *e)
{
	uint32_t g = pl->hot_gap, half = g / 2;
	*j = l > half ? (l - half + g - 1) / g : 0;
	*e = h > half ? (h - half + g - 1) / g : 0;
	if (*e > pl->nhot)
		*e = pl->nhot;
	if (*j > *e)
		*j = *e;
}

/*
 * Record rectangle i at [off, hi) in the nodes of its cover, the unions
 * above them and the snapshots it covers, walking with mk; false: out of
 * memory.
 */
bool as_placer_record(struct as_placer *pl, struct marks *mk, uint32_t i,
		      uint64_t off, uint64_t hi)
{
	bool ok = true;
	as_placer_next_stamp(pl, mk);
	const struct as_rect *r = &pl->pb->r[i];
	uint32_t cov[AS_COVER], ncov = as_placer_cover(pl, mk, r, cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		ok &= as_runs_insert(&pl->node[v], off, hi);
		if (v < pl->npath)
			pl->ver[v] = as_placer_tick(pl);
		for (uint32_t a = v; a >= 1; a >>= 1)
			pl->sub[a]++;
		for (uint32_t a = v; a >= 1 && mk->vis[a] != mk->stamp;
		     a >>= 1) {
			mk->vis[a] = mk->stamp;
			if (!pl->stale && a < pl->nparts)
				ok &= part_unite(pl, a, off, hi);
		}
	}
	if (pl->stale)
		return ok;
	uint32_t j, e;
	as_placer_hot_range(pl, pl->map[r->t0], pl->map[r->t1], &j, &e);
	for (; j < e; j++)
		ok &= part_unite(pl, pl->nparts + j, off, hi);
	return ok;
}

void as_placer_put(struct as_placer *pl, uint32_t i, uint64_t off)
{
	uint64_t hi = as_placer_top(pl, i, off);
	pl->off[i] = off;
	pl->placed[i] = 1;
	if (!pl->stale && !pl->nolog) {
		if (grow((void **)&pl->marks, &pl->mcap,
			 (uint64_t)pl->nmarks + 1, sizeof(*pl->marks)))
			pl->marks[pl->nmarks++] =
				(struct put_mark){i, pl->nulog, pl->nuold};
		else
			pl->nolog = true;
	}
	if (!pl->pipe && pl->nolog && !pl->stale &&
	    (pl->threaded || ++pl->puts >= pl->look)) {
		pl->puts = 0;
		as_pipe_start(pl);
	}
	if (pl->pipe)
		as_pipe_put(pl, i, off, hi);
	else if (!as_placer_record(pl, &pl->mk, i, off, hi))
		pl->nomem = true;
	as_placer_audit(pl);
}

void as_placer_threaded(struct as_placer *pl)
{
	pl->threaded = true;
}

bool as_placer_nomem(struct as_placer *pl)
{
	as_pipe_drain(pl);
	return pl->nomem;
}

void as_placer_pop(struct as_placer *pl, uint32_t i)
{
	as_pipe_stop(pl);
	uint64_t lo = pl->off[i], hi = as_placer_top(pl, i, lo);
	pl->placed[i] = 0;
	if (!pl->stale && !pl->nolog && pl->nmarks &&
	    pl->marks[pl->nmarks - 1].i == i) {
		/* The last put: its unions are undone, part[] stays exact. */
		struct put_mark m = pl->marks[--pl->nmarks];
		while (pl->nulog > m.ulog)
			if (!part_undo(pl, &pl->ulog[--pl->nulog]))
				pl->nomem = true;
		pl->nuold = m.uold;
	} else {
		pl->stale = true;
	}
	uint32_t cov[AS_COVER],
		ncov = as_placer_cover(pl, &pl->mk, &pl->pb->r[i], cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		if (!as_runs_remove(&pl->node[v], lo, hi))
			pl->nomem = true;
		if (v < pl->npath)
			pl->ver[v] = as_placer_tick(pl);
		for (uint32_t a = v; a >= 1; a >>= 1)
			pl->sub[a]--;
	}
	as_placer_audit(pl);
}

void as_placer_budget(struct as_placer *pl, struct as_budget *b)
{
	pl->budget = b;
	walk_starts(pl);
}

int as_placer_error(struct as_placer *pl)
{
	as_pipe_drain(pl);
	if (pl->broken)
		return AS_EINVAL; /* a sampled check failed (as_placer_audit) */
	if (pl->nomem)
		return AS_ENOMEM;
	return pl->over ? as_budget_why(pl->budget) : AS_STRATEGY_PAST_2_64;
}
