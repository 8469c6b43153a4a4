/*
 * The placer's queries (as_placer_find, as_placer_spans, as_place_order):
 * the sorted sets whose union is what a rectangle shares time with, and the
 * walk over them to the lowest or the tightest fit.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/placer.h"

/*
 * A cursor into one of the sorted sets of a query: j is the first run that
 * ends above the query's position (see src_fit).
 */
struct src {
	struct runs *ru;
	const struct as_span *v; /* its runs, n of them */
	uint32_t n;
	struct as_span next;     /* run j, {UINT64_MAX, UINT64_MAX} past the
				  * end */
	uint64_t below;          /* the end of run j - 1, 0 for none */
	uint32_t j;
	uint32_t steps;          /* src_fit's calls and runs passed (see
				  * as_placer_find) */
	bool plain;              /* the gathered runs (after a pop): no block
				  * maxima */
};

/*
 * Skip c's runs that end at or below x: a galloping search from c->j (the
 * runs are disjoint, so their ends ascend).
 */
static void src_skip(struct src *c, uint64_t x)
{
	const struct as_span *v = c->v;
	uint32_t n = c->n, lo = c->j, step = 1;
	while (lo + step <= n && v[lo + step - 1].hi <= x) {
		lo += step;
		step *= 2;
	}
	uint32_t hi = lo + step - 1 < n ? lo + step - 1 : n;
	/* Runs before lo end at or below x; v[hi] (if any) ends above. */
	c->j = as_spans_above(v, lo, hi, x);
}

/* Move c to run j, and keep its neighbours at hand: next is run j, below
 * the end of run j - 1. */
static void src_at(struct src *c, uint32_t j)
{
	c->j = j;
	c->below = j ? c->v[j - 1].hi : 0;
	c->next = j < c->n ? c->v[j]
			   : (struct as_span){UINT64_MAX, UINT64_MAX};
}

/*
 * Where a walk of c's runs from run m (m + 1 < c->n) goes on: the last run
 * of m's block when m starts a block whose inner gaps are all below size
 * (the gap after that run lies outside the block), else m itself.
 */
static uint32_t block_skip(struct src *c, uint32_t m, uint64_t size)
{
	if (c->plain || m % AS_BLK != 0 ||
	    as_runs_block_max(c->ru, m / AS_BLK) >= size)
		return m;
	return m + AS_BLK - 1 < c->n - 1 ? m + AS_BLK - 1 : c->n - 1;
}

/*
 * The lowest y >= x such that [y, y + size) misses every run of c: x
 * itself, or the end of the first run after x followed by a gap of at least
 * size. Blocks whose largest inner gap is below size are passed whole. c->j
 * ends at the first run that ends above y.
 */
static AS_ALWAYS_INLINE uint64_t src_fit(struct src *c, uint64_t x,
					 uint64_t size)
{
	c->steps++;
	/* The copy of the next run tells most sets apart without a look at
	 * their runs. */
	if (c->next.lo >= x && c->next.lo - x >= size)
		return x;
	const struct as_span *v = c->v;
	uint32_t n = c->n, m;
	src_skip(c, x);
	m = c->j;
	if (m == n || (v[m].lo > x && v[m].lo - x >= size)) {
		src_at(c, m);
		return x;
	}
	/* Run m is in the way. */
	for (;; c->steps++) {
		if (m + 1 == n) {
			src_at(c, n);
			return v[m].hi;
		}
		uint32_t e = block_skip(c, m, size);
		if (e != m) {
			m = e;
			continue;
		}
		if (v[m + 1].lo - v[m].hi >= size) {
			src_at(c, m + 1);
			return v[m].hi;
		}
		m++;
	}
}

static void take(struct as_placer *pl, const struct runs *ru)
{
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
	memcpy(pl->g + pl->ng, as_runs_cv(ru), ru->n * sizeof(struct as_span));
	pl->ng += ru->n;
}

/* The runs of placed rectangles sharing time with r, into pl->g. */
static uint32_t gather(struct as_placer *pl, const struct as_rect *r)
{
	pl->ng = 0;
	as_placer_next_stamp(pl, &pl->mk);
	uint32_t cov[AS_COVER], ncov = as_placer_cover(pl, &pl->mk, r, cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		/* Ancestors (v included) cover part of v's range. */
		for (uint32_t a = v; a >= 1 && pl->mk.vis[a] != pl->mk.stamp;
		     a >>= 1) {
			pl->mk.vis[a] = pl->mk.stamp;
			if (pl->node[a].n)
				take(pl, &pl->node[a]);
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
				take(pl, &pl->node[w]);
			if (w < pl->size) {
				pl->stack[sp++] = 2 * w;
				pl->stack[sp++] = 2 * w + 1;
			}
		}
	}
	return pl->ng;
}

static void add_src(struct as_placer *pl, struct runs *ru, bool plain)
{
	if (pl->nsrc == pl->srccap) {
		uint32_t cap = pl->srccap ? 2 * pl->srccap : 64;
		struct src *ns = realloc(pl->src, cap * sizeof(*ns));
		if (ns)
			pl->src = ns;
		struct ask *no = ns ? realloc(pl->ord, cap * sizeof(*no)) : NULL;
		if (!no) {
			pl->nomem = true;
			return;
		}
		pl->ord = no;
		pl->srccap = cap;
	}
	/* Its first run is read once every set is known (sources): the
	 * fetches of the sets' runs overlap instead of waiting in turn. */
	pl->src[pl->nsrc++] = (struct src){.ru = ru, .v = as_runs_cv(ru),
					   .n = ru->n, .plain = plain};
	__builtin_prefetch(as_runs_cv(ru));
}

/* The depth of node v (v >= 1), the root's 0. */
static uint32_t depth(uint32_t v)
{
	return 31 - (uint32_t)__builtin_clz(v);
}

/*
 * The union of the runs of every node on the path from the root down to
 * `leaf`, as far as the cached top nodes reach: path[a] is the union of
 * node[] over a's ancestors and a, rebuilt from its parent's when a's runs
 * or the parent's union changed since (ver[], path_at[] are stamps of one
 * clock). A node without runs of its own keeps no union: it reads its
 * parent's. *top gets the deepest node it covers; the caller reads the runs
 * below it one by one. NULL when memory ran out or every node on the way is
 * empty (check pl->nomem).
 */
static struct runs *path_union(struct as_placer *pl, uint32_t leaf,
			       uint32_t *top)
{
	uint32_t h = depth(leaf);
	struct runs *up = NULL;
	uint64_t up_at = 0;
	*top = 0;
	for (uint32_t d = 0; d <= h; d++) {
		uint32_t a = leaf >> (h - d);
		if (a >= pl->npath)
			break;
		*top = a;
		if (!pl->node[a].n) {
			/* Its union is its parent's; one emptied by a pop
			 * still dates the unions below it. */
			if (pl->ver[a] > up_at)
				up_at = pl->ver[a];
			continue;
		}
		if (pl->path_at[a] < pl->ver[a] || pl->path_at[a] < up_at) {
			if (!as_runs_unite_into(&pl->path[a], up, &pl->node[a])) {
				pl->nomem = true;
				return NULL;
			}
			pl->path_at[a] = as_placer_tick(pl);
		}
		up = &pl->path[a];
		up_at = pl->path_at[a];
	}
	return up;
}

/* The tree node of snapshot j's leaf. */
static uint32_t hot_leaf(const struct as_placer *pl, uint32_t j)
{
	return pl->size + j * pl->hot_gap + pl->hot_gap / 2;
}

/*
 * Whether node a is an ancestor of (or is) one of the n leaves: then every
 * rectangle recorded at a covers that leaf's moment and is in its snapshot.
 */
static bool over_hot(const uint32_t *leaf, uint32_t n, uint32_t a)
{
	for (uint32_t k = 0; k < n; k++)
		if (depth(leaf[k]) >= depth(a) &&
		    leaf[k] >> (depth(leaf[k]) - depth(a)) == a)
			return true;
	return false;
}

/* sources without the look at each set's first run (src_at). */
static void gather_sources(struct as_placer *pl, const struct as_rect *r,
			   bool snapshots)
{
	pl->nsrc = 0;
	if (pl->stale) {
		uint32_t k = gather(pl, r);
		as_spans_sort(pl->g, k);
		/* Runs of different nodes may overlap: merged into one set. */
		uint32_t n = as_spans_merge(pl->g, k);
		pl->one = (struct runs){.u.v = pl->g, .n = n, .cap = n};
		if (k)
			add_src(pl, &pl->one, true);
		return;
	}
	as_placer_next_stamp(pl, &pl->mk);
	uint32_t cov[AS_COVER], ncov = as_placer_cover(pl, &pl->mk, r, cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		/* A low node: its runs and its descendants'. */
		uint32_t sp = 0;
		if (v < pl->nparts && pl->part[v].n)
			add_src(pl, &pl->part[v], false);
		else if (v >= pl->nparts)
			pl->stack[sp++] = v;
		while (sp) {
			uint32_t w = pl->stack[--sp];
			if (!pl->sub[w])
				continue;
			if (pl->node[w].n)
				add_src(pl, &pl->node[w], false);
			if (w < pl->size) {
				pl->stack[sp++] = 2 * w;
				pl->stack[sp++] = 2 * w + 1;
			}
		}
	}
	uint32_t j = 0, je = 0;
	if (snapshots)
		as_placer_hot_range(pl, pl->map[r->t0], pl->map[r->t1], &j, &je);
	uint32_t hot[AS_HOT_QUERY], nhot = 0;
	for (uint32_t step = (je - j + AS_HOT_QUERY - 1) / AS_HOT_QUERY; j < je;
	     j += step)
		if (pl->part[pl->nparts + j].n) {
			add_src(pl, &pl->part[pl->nparts + j], false);
			hot[nhot++] = hot_leaf(pl, j);
		}
	/* Strict ancestors of the cover lie on the paths to both ends. */
	const struct runs *prev = NULL;
	for (int e = 0; e < 2; e++) {
		uint32_t leaf = pl->size + (e ? pl->map[r->t1] - 1
					      : pl->map[r->t0]),
			 top;
		struct runs *pu = path_union(pl, leaf, &top);
		if (pu && pu != prev && pu->n && !over_hot(hot, nhot, top))
			add_src(pl, pu, false);
		prev = pu;
		for (uint32_t b = leaf; b > top; b >>= 1)
			if (pl->mk.vis[b] != pl->mk.stamp) {
				pl->mk.vis[b] = pl->mk.stamp;
				if (pl->node[b].n && !over_hot(hot, nhot, b))
					add_src(pl, &pl->node[b], false);
			}
	}
}

/*
 * The sorted sets whose union is the placed rectangles sharing time with r,
 * into pl->src: with part[] up to date, O(log S) of them, and with
 * `snapshots` the ones inside r's range (see AS_HOT); else the runs
 * gathered one by one, sorted and merged, as one set.
 */
static void sources(struct as_placer *pl, const struct as_rect *r,
		    bool snapshots)
{
	gather_sources(pl, r, snapshots);
	for (uint32_t k = 0; k < pl->nsrc; k++)
		src_at(&pl->src[k], 0);
}

struct as_span *as_placer_spans(struct as_placer *pl, const struct as_rect *r,
				uint32_t *n)
{
	as_pipe_wait_for(pl, pl->map[r->t0], pl->map[r->t1]);
	if (pl->stale) {
		uint32_t k = gather(pl, r);
		if (pl->nomem)
			return NULL;
		as_spans_sort(pl->g, k);
		*n = k;
		return pl->g;
	}
	sources(pl, r, false);
	pl->ng = 0;
	for (uint32_t j = 0; j < pl->nsrc && !pl->nomem; j++)
		take(pl, pl->src[j].ru);
	if (pl->nomem)
		return NULL;
	as_spans_sort(pl->g, pl->ng);
	*n = pl->ng;
	return pl->g;
}

/* Moves of two sets taking turns before they are walked as one. */
#define AS_TURNS 4

/*
 * The lowest aligned y >= *x (*x aligned) where r fits between the runs of
 * both a and b, their cursors left at their first runs ending above it:
 * one merged walk over their runs. When two sets take turns in the way
 * (each alone has room where the other has a run: memory crowded with
 * runs of both), this costs a step a run instead of a src_fit a turn.
 * False: an offset would overflow.
 */
static bool pair_fit(struct src *a, struct src *b, const struct as_rect *r,
		     uint64_t *x)
{
	const struct as_span *av = a->v, *bv = b->v;
	uint32_t i = a->j, j = b->j, an = a->n, bn = b->n;
	uint64_t y = *x;
	for (;; a->steps++) {
		/* A run a step: src_skip's gallop was 10% slower here. */
		while (i < an && av[i].hi <= y)
			i++;
		while (j < bn && bv[j].hi <= y)
			j++;
		/* The first run of either ending above y, if any. */
		const struct as_span *in =
			i < an && (j == bn || av[i].lo <= bv[j].lo) ? &av[i]
			: j < bn				    ? &bv[j]
								    : NULL;
		if (!in || (in->lo > y && in->lo - y >= r->size))
			break;
		if (!as_align_up(in->hi, r->align_log2, &y))
			return false;
	}
	src_at(a, i);
	src_at(b, j);
	*x = y;
	return true;
}

/*
 * The lowest aligned y >= x (x aligned) where r fits among every source: each
 * set in turn moves y up to its own next fit (src_fit) until all of them
 * take it as it is. No set can move y past the answer, which fits in each,
 * so this ends at it; the sets' small gaps are passed a block at a time and
 * only their fitting gaps are stepped on. The set that moved y last goes
 * first (sets in the way take turns with few others), and a set with no
 * run left above y drops out, its top kept in *floor. False: an offset
 * would overflow.
 */
static bool lowest_fit(struct as_placer *pl, const struct as_rect *r,
		       uint64_t *x, uint64_t *floor)
{
	uint64_t y = *x;
	struct ask *ord = pl->ord;
	uint32_t before = UINT32_MAX; /* the mover before the last one */
	uint32_t turns = 0;           /* moves taking turns between two */
	for (uint32_t k = 0; k < pl->nord;) {
		/* Sets whose next run starts at y + size or above take y as
		 * it is: a step each, as a src_fit that returns at once. A
		 * set with no run left is asked, so that it drops out. */
		uint32_t k0 = k;
		while (k < pl->nord && ord[k].next != UINT64_MAX &&
		       ord[k].next >= y && ord[k].next - y >= r->size)
			k++;
		pl->steps += k - k0;
		if (k == pl->nord)
			break;
		struct src *c = &pl->src[ord[k].set];
		uint64_t z = src_fit(c, y, r->size);
		ord[k].next = c->next.lo;
		if (z == y) {
			if (c->next.lo != UINT64_MAX) {
				k++;
				continue;
			}
			/* Every run of the set is below y: it has nothing
			 * more to say but where its top is. */
			if (c->below > *floor)
				*floor = c->below;
			ord[k] = ord[--pl->nord];
			continue;
		}
		if (!as_align_up(z, r->align_log2, &y))
			return false;
		/* The set that moved y goes first: it is the likeliest to
		 * move it again. */
		struct ask at = ord[k];
		uint32_t last = ord[0].set;
		memmove(ord + 1, ord, k * sizeof(*ord));
		ord[0] = at;
		k = y == z;
		turns = at.set == before ? turns + 1 : 0;
		before = last;
		if (turns >= AS_TURNS && pl->nord > 1) {
			/* Two sets take turns: walk their runs as one. */
			struct src *a = &pl->src[ord[0].set],
				   *b = &pl->src[ord[1].set];
			if (!pair_fit(a, b, r, &y))
				return false;
			ord[0].next = a->next.lo;
			ord[1].next = b->next.lo;
			k = 0;
			turns = 0;
		}
	}
	*x = y;
	return true;
}

/*
 * The gap [*lo, *hi) in the union around the fit lowest_fit found: every
 * set's cursor is at its first run above it. The set that ends the gap goes
 * first (pl->ord[0]); *hi2 is where the next run of the others starts.
 */
static void gap_at(struct as_placer *pl, uint64_t floor, uint64_t *lo,
		   uint64_t *hi, uint64_t *hi2)
{
	uint64_t l = floor, h = UINT64_MAX, h2 = UINT64_MAX;
	for (uint32_t k = 0; k < pl->nord; k++) {
		const struct src *c = &pl->src[pl->ord[k].set];
		if (c->below > l)
			l = c->below;
		if (c->next.lo < h) {
			h2 = h;
			h = c->next.lo;
			struct ask t = pl->ord[0];
			pl->ord[0] = pl->ord[k];
			pl->ord[k] = t;
		} else if (c->next.lo < h2) {
			h2 = c->next.lo;
		}
	}
	*lo = l;
	*hi = h;
	*hi2 = h2;
}

/* What ender_walk ended on. */
enum walk { WALK_ASK, WALK_EXACT, WALK_PAST_2_64 };

/*
 * Best fit through a stretch where the set that ended the last gap
 * (pl->ord[0]) ends the next ones too: while its next run starts at or
 * below hi2 (where the other sets' next runs start), the gaps between its
 * runs are the union's, so they are measured in a plain walk of its runs
 * (a block whose gaps are all too small passed whole), the smallest that
 * fits kept in *best_gap, its offset in *best. WALK_EXACT: a gap of exactly
 * `exact` fits at *x. WALK_ASK: every set is asked again from *x, this
 * set's own next fit above every gap measured. A walk through a crowded
 * stretch of one set costs a step a run instead of a look at every set.
 */
static enum walk ender_walk(struct as_placer *pl, const struct as_rect *r,
			    uint64_t hi2, uint64_t exact, uint64_t *x,
			    uint64_t *best, uint64_t *best_gap)
{
	struct src *c = &pl->src[pl->ord[0].set];
	const struct as_span *v = c->v;
	uint32_t n = c->n, m = c->j; /* run m starts where the last gap ends */
	uint64_t y;
	for (; m + 1 < n && v[m + 1].lo <= hi2; m++, pl->steps++) {
		uint32_t e = block_skip(c, m, r->size);
		if (e != m) {
			m = e - 1; /* on from the block's last run */
			continue;
		}
		if (!as_align_up(v[m].hi, r->align_log2, &y))
			return WALK_PAST_2_64;
		if (y > v[m + 1].lo || v[m + 1].lo - y < r->size)
			continue;
		uint64_t gap = v[m + 1].lo - v[m].hi;
		if (gap == exact) {
			*x = y;
			return WALK_EXACT;
		}
		if (gap < *best_gap) {
			*best_gap = gap;
			*best = y;
		}
	}
	/* The others are asked from this set's own next fit. */
	uint64_t z = v[m].hi;
	src_at(c, m);
	do {
		if (!as_align_up(z, r->align_log2, &y))
			return WALK_PAST_2_64;
	} while ((z = src_fit(c, y, r->size)) != y);
	pl->ord[0].next = c->next.lo;
	*x = y;
	return WALK_ASK;
}

/*
 * The fitting gaps of the union, from the bottom up: lowest fit takes the
 * first, best fit the smallest, stopping at one of exactly r's size (none
 * can be smaller).
 */
bool as_placer_search(struct as_placer *pl, uint32_t i, enum as_fit fit,
		      uint64_t *off, uint64_t *gap_out)
{
	const struct as_rect *r = &pl->pb->r[i];
	sources(pl, r, true);
	if (pl->nomem)
		return false;
	for (pl->nord = 0; pl->nord < pl->nsrc; pl->nord++)
		pl->ord[pl->nord] = (struct ask){pl->src[pl->nord].next.lo,
						 pl->nord};
	uint64_t x = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
	uint64_t floor = 0; /* the top of the sets left behind */
	uint64_t exact;     /* a gap no smaller one can beat (see
			     * as_placer_top) */
	uint64_t lo = 0, hi = 0, hi2 = 0;
	if (!as_align_up(r->size, pl->grain, &exact))
		exact = r->size;
	for (;;) {
		if (!lowest_fit(pl, r, &x, &floor))
			break;
		gap_at(pl, floor, &lo, &hi, &hi2);
		if (hi == UINT64_MAX) { /* on top of everything */
			if (best != UINT64_MAX || x > UINT64_MAX - r->size)
				break;
			*off = x;
			if (gap_out)
				*gap_out = UINT64_MAX;
			return true;
		}
		uint64_t gap = hi - lo;
		if (fit == AS_FIT_LOWEST || gap == exact) {
			*off = x;
			if (gap_out)
				*gap_out = gap;
			return true;
		}
		if (gap < best_gap) {
			best_gap = gap;
			best = x;
		}
		enum walk w = ender_walk(pl, r, hi2, exact, &x, &best,
					 &best_gap);
		if (w == WALK_EXACT) {
			*off = x;
			if (gap_out)
				*gap_out = exact;
			return true;
		}
		if (w == WALK_PAST_2_64)
			break;
	}
	if (best == UINT64_MAX)
		return false;
	*off = best;
	if (gap_out)
		*gap_out = best_gap;
	return true;
}

/*
 * A query's steps: a look at each of its sets, the calls of src_fit and the
 * runs they passed, the runs of the walks in pair_fit and ender_walk. Each
 * costs a few loads, so they count the time of a walk in steps the same on
 * every machine.
 */
bool as_placer_find(struct as_placer *pl, uint32_t i, enum as_fit fit,
		    uint64_t *off, uint64_t *gap_out)
{
	if (as_budget_spent(pl->budget) ||
	    as_steps_behind(pl->budget, pl->start, pl->finds, pl->pb->n)) {
		pl->over = true;
		return false;
	}
	if (pl->broken)
		return false; /* a sampled check failed (as_placer_audit) */
	pl->finds++;
	pl->steps = 0;
	const struct as_rect *r = &pl->pb->r[i];
	as_pipe_wait_for(pl, pl->map[r->t0], pl->map[r->t1]);
	bool found = as_placer_search(pl, i, fit, off, gap_out);
	if (pl->budget && pl->budget->limited) {
		uint64_t steps = pl->steps + pl->nsrc;
		for (uint32_t k = 0; k < pl->nsrc; k++)
			steps += pl->src[k].steps;
		as_steps_take(pl->budget, steps);
	}
	return found;
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
