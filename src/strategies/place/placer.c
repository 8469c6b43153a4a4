/*
 * The segment-tree placer of place.h (as_placer_*, as_place_order).
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

/* ---- The placer ----
 *
 * A segment tree over sections. A placed rectangle is recorded at the nodes
 * of the canonical cover of its range [t0, t1). All rectangles recorded at
 * one node share the node's whole time range, so their offset ranges are
 * disjoint: each node keeps them as a sorted array of *runs*, maximal ranges
 * of touching rectangles, so a tightly packed stack of long-lived buffers
 * costs one entry, not thousands. sub[v] counts the rectangles recorded in
 * v's subtree, v included, so empty subtrees are never walked.
 *
 * A query for [t0, t1) reads the runs of every ancestor of its cover nodes
 * (rectangles covering part of its range) and of every non-empty node below
 * them (rectangles inside its range), sorts them and scans for the gap.
 */
struct runs {
	struct as_span *v;
	uint32_t n, cap;
};

struct as_placer {
	const struct as_problem *pb;
	uint32_t size;          /* leaves, a power of two */
	struct runs *node;      /* 2 * size */
	uint32_t *sub, *vis;
	uint32_t stamp;
	uint64_t *off;
	struct as_span *g;         /* query scratch */
	uint32_t ng, gcap;
	uint32_t *stack;
	bool nomem;
};

#define FOR_COVER(pl, r, v, body)                                    \
	do {                                                         \
		uint32_t l_ = (r)->t0 + (pl)->size;                  \
		uint32_t h_ = (r)->t1 + (pl)->size;                  \
		while (l_ < h_) {                                    \
			if (l_ & 1) {                                \
				uint32_t v = l_++;                   \
				body;                                \
			}                                            \
			if (h_ & 1) {                                \
				uint32_t v = --h_;                   \
				body;                                \
			}                                            \
			l_ >>= 1;                                    \
			h_ >>= 1;                                    \
		}                                                    \
	} while (0)

struct as_placer *as_placer_create(const struct as_problem *pb)
{
	struct as_placer *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->pb = pb;
	pl->size = 1;
	while (pl->size < pb->nsections)
		pl->size <<= 1;
	size_t nodes = 2 * (size_t)pl->size;
	pl->node = calloc(nodes, sizeof(*pl->node));
	pl->sub = calloc(nodes, sizeof(uint32_t));
	pl->vis = calloc(nodes, sizeof(uint32_t));
	pl->off = calloc((size_t)pb->n + 1, sizeof(uint64_t));
	pl->gcap = 1024;
	pl->g = calloc(pl->gcap, sizeof(struct as_span));
	pl->stack = calloc(nodes + 64, sizeof(uint32_t));
	if (!pl->node || !pl->sub || !pl->vis || !pl->off || !pl->g ||
	    !pl->stack) {
		as_placer_destroy(pl);
		return NULL;
	}
	return pl;
}

void as_placer_destroy(struct as_placer *pl)
{
	if (!pl)
		return;
	if (pl->node)
		for (size_t v = 0; v < 2 * (size_t)pl->size; v++)
			free(pl->node[v].v);
	free(pl->node);
	free(pl->sub);
	free(pl->vis);
	free(pl->off);
	free(pl->g);
	free(pl->stack);
	free(pl);
}

void as_placer_reset(struct as_placer *pl)
{
	size_t nodes = 2 * (size_t)pl->size;
	for (size_t v = 0; v < nodes; v++)
		pl->node[v].n = 0;
	memset(pl->sub, 0, nodes * sizeof(uint32_t));
}

/* First run of ru with hi > x. */
static uint32_t run_find(const struct runs *ru, uint64_t x)
{
	uint32_t lo = 0, hi = ru->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ru->v[mid].hi <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool run_insert(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t k = run_find(ru, lo);
	/* Runs before k end at or below lo; run k (if any) starts >= hi. */
	bool left = k > 0 && ru->v[k - 1].hi == lo;
	bool right = k < ru->n && ru->v[k].lo == hi;
	if (left && right) {
		ru->v[k - 1].hi = ru->v[k].hi;
		memmove(ru->v + k, ru->v + k + 1,
			(ru->n - k - 1) * sizeof(*ru->v));
		ru->n--;
	} else if (left) {
		ru->v[k - 1].hi = hi;
	} else if (right) {
		ru->v[k].lo = lo;
	} else {
		if (ru->n == ru->cap) {
			uint32_t cap = ru->cap ? 2 * ru->cap : 4;
			struct as_span *nv = realloc(ru->v, cap * sizeof(*nv));
			if (!nv)
				return false;
			ru->v = nv;
			ru->cap = cap;
		}
		memmove(ru->v + k + 1, ru->v + k,
			(ru->n - k) * sizeof(*ru->v));
		ru->v[k].lo = lo;
		ru->v[k].hi = hi;
		ru->n++;
	}
	return true;
}

static bool run_remove(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t k = run_find(ru, lo);
	if (k == ru->n || ru->v[k].lo > lo || ru->v[k].hi < hi)
		return true; /* not recorded: nothing to do */
	struct as_span r = ru->v[k];
	if (r.lo < lo && r.hi > hi) {
		/* Split in two. */
		if (ru->n == ru->cap) {
			uint32_t cap = 2 * ru->cap;
			struct as_span *nv = realloc(ru->v, cap * sizeof(*nv));
			if (!nv)
				return false;
			ru->v = nv;
			ru->cap = cap;
		}
		memmove(ru->v + k + 2, ru->v + k + 1,
			(ru->n - k - 1) * sizeof(*ru->v));
		ru->v[k].hi = lo;
		ru->v[k + 1].lo = hi;
		ru->v[k + 1].hi = r.hi;
		ru->n++;
	} else if (r.lo < lo) {
		ru->v[k].hi = lo;
	} else if (r.hi > hi) {
		ru->v[k].lo = hi;
	} else {
		memmove(ru->v + k, ru->v + k + 1,
			(ru->n - k - 1) * sizeof(*ru->v));
		ru->n--;
	}
	return true;
}

bool as_placer_nomem(const struct as_placer *pl)
{
	return pl->nomem;
}

void as_placer_put(struct as_placer *pl, uint32_t i, uint64_t off)
{
	uint64_t hi = off + pl->pb->r[i].size;
	pl->off[i] = off;
	FOR_COVER(pl, &pl->pb->r[i], v, {
		if (!run_insert(&pl->node[v], off, hi))
			pl->nomem = true;
		for (uint32_t a = v; a >= 1; a >>= 1)
			pl->sub[a]++;
	});
}

void as_placer_pop(struct as_placer *pl, uint32_t i)
{
	uint64_t lo = pl->off[i], hi = lo + pl->pb->r[i].size;
	FOR_COVER(pl, &pl->pb->r[i], v, {
		if (!run_remove(&pl->node[v], lo, hi))
			pl->nomem = true;
		for (uint32_t a = v; a >= 1; a >>= 1)
			pl->sub[a]--;
	});
}

static void take_node(struct as_placer *pl, uint32_t v)
{
	const struct runs *ru = &pl->node[v];
	if (pl->ng + ru->n > pl->gcap) {
		uint32_t cap = pl->gcap;
		while (cap < pl->ng + ru->n)
			cap *= 2;
		struct as_span *ng = realloc(pl->g, cap * sizeof(*ng));
		if (!ng) {
			pl->nomem = true;
			return;
		}
		pl->g = ng;
		pl->gcap = cap;
	}
	memcpy(pl->g + pl->ng, ru->v, ru->n * sizeof(*ru->v));
	pl->ng += ru->n;
}

/* The runs of placed rectangles sharing time with r, into pl->g. */
static uint32_t gather(struct as_placer *pl, const struct as_rect *r)
{
	pl->ng = 0;
	if (++pl->stamp == 0) {
		memset(pl->vis, 0, 2 * (size_t)pl->size * sizeof(uint32_t));
		pl->stamp = 1;
	}
	FOR_COVER(pl, r, v, {
		/* Ancestors (v included) cover part of v's range. */
		for (uint32_t a = v; a >= 1 && pl->vis[a] != pl->stamp;
		     a >>= 1) {
			pl->vis[a] = pl->stamp;
			if (pl->node[a].n)
				take_node(pl, a);
		}
		/* Descendants lie inside r's range. */
		uint32_t sp = 0;
		if (v < pl->size) {
			pl->stack[sp++] = 2 * v;
			pl->stack[sp++] = 2 * v + 1;
		}
		while (sp) {
			uint32_t w = pl->stack[--sp];
			if (!pl->sub[w])
				continue;
			if (pl->node[w].n)
				take_node(pl, w);
			if (w < pl->size) {
				pl->stack[sp++] = 2 * w;
				pl->stack[sp++] = 2 * w + 1;
			}
		}
	});
	return pl->ng;
}

static void span_swap(struct as_span *a, struct as_span *b)
{
	struct as_span t = *a;
	*a = *b;
	*b = t;
}

/*
 * Sort spans by lo: quicksort (median of three) down to short runs, the
 * smaller side first so the stack stays O(log n), then insertion sort.
 */
static void sort_spans(struct as_span *g, uint32_t n)
{
	while (n > 16) {
		uint32_t mid = n / 2, last = n - 1;
		if (g[mid].lo < g[0].lo)
			span_swap(&g[mid], &g[0]);
		if (g[last].lo < g[0].lo)
			span_swap(&g[last], &g[0]);
		if (g[last].lo < g[mid].lo)
			span_swap(&g[last], &g[mid]);
		uint64_t pivot = g[mid].lo;
		uint32_t i = 0, j = last;
		for (;;) {
			while (g[i].lo < pivot)
				i++;
			while (g[j].lo > pivot)
				j--;
			if (i >= j)
				break;
			span_swap(&g[i], &g[j]);
			i++;
			j--;
		}
		/* [0, j] <= pivot <= [j + 1, n) */
		uint32_t left = j + 1;
		if (left < n - left) {
			sort_spans(g, left);
			g += left;
			n -= left;
		} else {
			sort_spans(g + left, n - left);
			n = left;
		}
	}
	for (uint32_t i = 1; i < n; i++) {
		struct as_span x = g[i];
		uint32_t j = i;
		while (j > 0 && g[j - 1].lo > x.lo) {
			g[j] = g[j - 1];
			j--;
		}
		g[j] = x;
	}
}

struct as_span *as_placer_spans(struct as_placer *pl, const struct as_rect *r,
				uint32_t *n)
{
	uint32_t k = gather(pl, r);
	if (pl->nomem)
		return NULL;
	sort_spans(pl->g, k);
	*n = k;
	return pl->g;
}

bool as_placer_find(struct as_placer *pl, uint32_t i, enum as_fit fit,
		    uint64_t *off, uint64_t *gap_out)
{
	const struct as_rect *r = &pl->pb->r[i];
	uint32_t k = gather(pl, r);
	if (pl->nomem)
		return false;
	sort_spans(pl->g, k);
	uint64_t cand = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
	for (uint32_t j = 0; j < k; j++) {
		const struct as_span *s = &pl->g[j];
		if (s->lo > cand) {
			uint64_t a;
			if (!as_align_up(cand, r->align_log2, &a))
				return false;
			if (a <= s->lo && s->lo - a >= r->size) {
				uint64_t gap = s->lo - cand;
				if (fit == AS_FIT_LOWEST) {
					*off = a;
					if (gap_out)
						*gap_out = gap;
					return true;
				}
				if (gap < best_gap) {
					best_gap = gap;
					best = a;
				}
			}
		}
		if (s->hi > cand)
			cand = s->hi;
	}
	if (best != UINT64_MAX) {
		*off = best;
		if (gap_out)
			*gap_out = best_gap;
		return true;
	}
	uint64_t a;
	if (!as_align_up(cand, r->align_log2, &a) || a > UINT64_MAX - r->size)
		return false;
	*off = a;
	if (gap_out)
		*gap_out = UINT64_MAX;
	return true;
}

uint64_t as_place_order(struct as_placer *pl, const uint32_t *order,
			uint32_t n, enum as_fit fit, uint64_t *off)
{
	uint64_t peak = 0;
	as_placer_reset(pl);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = order[j];
		uint64_t o;
		if (!as_placer_find(pl, i, fit, &o, NULL))
			return UINT64_MAX;
		off[i] = o;
		as_placer_put(pl, i, o);
		if (o + pl->pb->r[i].size > peak)
			peak = o + pl->pb->r[i].size;
	}
	return peak;
}
