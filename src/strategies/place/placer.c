/*
 * The segment-tree placer of place.h (as_placer_*, as_place_order).
 */
#include <pthread.h>
#include <stdatomic.h>
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
 * Each node also keeps part[v], the union of the address ranges of the
 * rectangles recorded anywhere in v's subtree (merged, sorted, disjoint):
 * exactly the rectangles sharing time with v's range, less those recorded
 * above v. A query for [t0, t1) then reads O(log S) sets: part[] of its
 * cover nodes and the runs of their strict ancestors (rectangles covering
 * a cover node's whole range). The free gaps of their union are the same as
 * among the rectangles one by one; the query steps only on the places
 * where each set alone has room (as_placer_find), so it costs the number
 * of times the sets take turns in the way, not the number of runs below
 * the answer. The nodes nearest the leaves keep no union (see
 * AS_PART_HEIGHT).
 *
 * A union cannot give a rectangle back, but each put logs what its unions
 * overwrote, so popping the rectangles last put first (a trial placement
 * taken back) restores part[] exactly. Any other pop makes part[]
 * stale until the next reset; a query then reads the runs of every
 * ancestor of its cover nodes and of every non-empty node below them
 * (rectangles inside its range) instead, which is exact but visits every
 * placed rectangle sharing time with the query.
 */
struct runs {
	union {
		struct as_span *v;   /* cap > 0 */
		struct as_span one;  /* cap == 0: room for one run */
	} u;
	uint32_t n, cap;
};

/*
 * The runs of a set. Most sets hold a single run (a rectangle or a stack of
 * touching ones), which sits in the struct itself: no allocation until a
 * second one comes.
 */
static struct as_span *sp(struct runs *ru)
{
	return ru->cap ? ru->u.v : &ru->u.one;
}

static const struct as_span *csp(const struct runs *ru)
{
	return ru->cap ? ru->u.v : &ru->u.one;
}

/*
 * Gap index of a set of runs: the runs fall into blocks of AS_BLK, and
 * block b keeps the largest gap strictly inside it (between runs bB..bB+B-1,
 * not the one before run bB). For a rectangle of size s, a block whose
 * largest inner gap is below s holds no place where it fits, so a query
 * looking for the set's next fit passes it whole (src_fit). 32 and 64 ran
 * alike. The maxima sit after the runs in the same allocation: tail[0] is
 * the number of blocks up to date from the start, tail[1 + b] block b's.
 */
#define AS_BLK 64

static uint64_t *tail(const struct runs *ru)
{
	return (uint64_t *)(ru->u.v + ru->cap);
}

static size_t runs_bytes(uint32_t cap)
{
	return (size_t)cap * sizeof(struct as_span) +
	       ((size_t)cap / AS_BLK + 2) * sizeof(uint64_t);
}

/* Room for `need` runs; false: no memory. The block maxima are redone. */
static bool runs_grow(struct runs *ru, uint32_t need)
{
	if (need <= ru->cap || (ru->cap == 0 && need <= 1))
		return true;
	uint32_t cap = ru->cap ? ru->cap : 2;
	while (cap < need)
		cap *= 2;
	struct as_span *old = ru->cap ? ru->u.v : NULL;
	struct as_span *nv = realloc(old, runs_bytes(cap));
	if (!nv)
		return false;
	if (ru->cap == 0 && ru->n)
		nv[0] = ru->u.one;
	ru->u.v = nv;
	ru->cap = cap;
	tail(ru)[0] = 0;
	return true;
}

/* Runs from index i on changed: their blocks are out of date. */
static void runs_dirty(struct runs *ru, uint32_t i)
{
	if (ru->cap && tail(ru)[0] > i / AS_BLK)
		tail(ru)[0] = i / AS_BLK;
}

/* The largest gap inside block b (b within the runs). */
static uint64_t block_max(struct runs *ru, uint32_t b)
{
	uint64_t *t = tail(ru);
	for (; t[0] <= b; t[0]++) {
		uint32_t j = (uint32_t)t[0] * AS_BLK, e = j + AS_BLK;
		uint64_t m = 0;
		if (e > ru->n)
			e = ru->n;
		for (j++; j < e; j++)
			if (ru->u.v[j].lo - ru->u.v[j - 1].hi > m)
				m = ru->u.v[j].lo - ru->u.v[j - 1].hi;
		t[1 + t[0]] = m;
	}
	return t[1 + b];
}

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
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	c->j = lo;
}

/* c->j is j: its copies of runs j - 1 and j follow. */
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
	if (c->plain || m % AS_BLK != 0 || block_max(c->ru, m / AS_BLK) >= size)
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

/*
 * The top nodes (depth < 4) cache the union of the runs on their path from
 * the root: a query reads that instead of every ancestor's runs, which hold
 * the long-lived rectangles one by one. Deeper caches cost more to rebuild
 * (after every put at or above them) than they save: with 256 of them,
 * greedy-size on `place_gen.py random 100000` took 25% longer, though
 * bestfit on a malloc trace took 30% less.
 */
#define AS_PLACER_PATH_NODES 16

/*
 * Nodes lower than AS_PART_HEIGHT (subtrees of at most 4 levels) keep no
 * part[]: a query reads their own and their descendants' runs instead. So
 * near the leaves, where a union would hold a rectangle or two and cost an
 * allocation per node, it costs nothing; on a malloc trace most part[] sets
 * were there. A node keeps one when v < nparts, which holds exactly for
 * heights of at least AS_PART_HEIGHT (node v's leaves are v << height).
 */
#define AS_PART_HEIGHT 4

/*
 * Snapshots: AS_HOT leaves spread evenly over the tree (leaf j * gap +
 * gap / 2) keep the union of the rectangles covering them, the memory in
 * use at that moment, in part[nparts + j]. A query reads those inside its
 * range too (at most AS_HOT_QUERY of them, evenly spread): the union is the
 * same, but where memory was crowded at one moment, its runs come split
 * over the sets of every level of the tree and the query's sets would take
 * turns in the way for each of them, while one snapshot passes the whole
 * crowd at once. A put adds to the snapshots its range covers. The runs of
 * an ancestor of a snapshot's leaf are in that snapshot (they cover its
 * moment), so a query that reads the snapshot leaves them out: bestfit
 * took 12% less time on a 220k-block malloc trace (5% on 1.1M blocks),
 * where the same memory came from several sets.
 */
#define AS_HOT 256
#define AS_HOT_QUERY 8

/* part[v] at pos: one run replaced the nold runs at uold[at], or (nold 0)
 * was inserted there. */
struct undo {
	uint32_t v, pos, nold, at;
};

/*
 * A set still in play in a query, and where its next run starts: at most
 * src[set].next.lo (a cursor only moves up), so the sets that take a place
 * as it is are passed without a look at their cursors (see lowest_fit).
 */
struct ask {
	uint64_t next;
	uint32_t set;
};

/* A put and where its undo entries start. */
struct put_mark {
	uint32_t i, ulog, uold;
};

/*
 * A walk down a subtree pushes both children of each node it pops, so its
 * stack holds at most one node per level below the top plus two: node
 * numbers stay below 2^33, so 33 levels.
 */
#define AS_STACK 40

/*
 * The nodes one walk up the tree has visited: vis[v] == stamp (see
 * next_stamp). A put's and a find's walks each keep their own, since puts
 * may be recorded on a thread of their own (struct pipe).
 */
struct marks {
	uint16_t *vis;
	uint16_t stamp;
};

/* Puts recorded on a spare processor: see struct pipe. */
#define AS_PIPE 64         /* puts queued at most */
/*
 * Puts between looks for a processor, after a reset. A find that waits for
 * the put just before it runs as if on one thread, and the lines that put
 * wrote then move between the processors' caches: greedy-breadth's order
 * (the rectangles spanning the broadest section first) does that for most
 * of its finds. When more than three quarters of AS_PIPE_LOOK finds did,
 * the thread stops and the walk looks again after twice as many puts as
 * last time (16 times at most; a stretch of finds that waited less brings
 * it back to AS_PIPE_LOOK), as greedy-size's order has such stretches too:
 * one size class's long-lived rectangles.
 */
#define AS_PIPE_LOOK 256

struct pipe;
static void pipe_stop(struct as_placer *pl);

struct as_placer {
	const struct as_problem *pb;
	uint32_t size;          /* leaves: the sections where some rectangle
				 * starts (see cover) */
	struct runs *node;      /* 2 * size */
	struct runs *part;      /* nparts unions per subtree, then nhot
				 * snapshots (see AS_HOT) */
	uint32_t nparts, nhot, hot_gap;
	bool stale;             /* part[] is out of date (a pop) */
	/* The undo log of part[] since the reset (see as_placer_pop). */
	struct undo *ulog;
	uint32_t nulog, ulcap;
	struct as_span *uold;   /* the runs the logged unions replaced */
	uint32_t nuold, uocap;
	struct put_mark *marks; /* per put, in order */
	uint32_t nmarks, mcap;
	bool undo;              /* puts are logged (as_placer_undo) */
	bool nolog;             /* no log (off, or out of memory): pops go
				 * stale */
	/* Path unions of the top npath nodes (see path_union). */
	struct runs *path;
	uint64_t *path_at, *ver;
	atomic_uint_fast64_t clock; /* ticked by finds and puts (tick) */
	uint32_t npath;
	uint32_t *sub;
	struct marks mk;        /* the finds' (and puts' on this thread) */
	struct pipe *pipe;      /* puts on another processor, or NULL */
	uint32_t puts, look;    /* puts since the last look for one, and
				 * between looks (see AS_PIPE_LOOK) */
	bool threaded;          /* that thread even with none spare */
	uint64_t *off;
	struct as_span *g;         /* query scratch */
	uint32_t ng, gcap;
	uint32_t stack[AS_STACK]; /* walks down a subtree (see AS_STACK) */
	struct src *src;        /* query: the sorted sets of its union */
	uint32_t nsrc, srccap;
	struct ask *ord;        /* query: the sets still in play, in the
				 * order they are asked (see lowest_fit) */
	uint32_t nord;
	struct runs one;        /* the gathered runs, after a pop */
	uint64_t steps;         /* the query's steps besides its sets' */
	struct as_budget *budget; /* the run's (as_placer_budget), or NULL */
	uint64_t start;         /* its steps left at the walk's start */
	uint32_t finds;         /* finds since then */
	bool over;              /* a find stopped: none left, or behind */
	uint32_t *map;          /* section -> leaf (see cover) */
	uint8_t grain;          /* log2 of the smallest alignment (see top) */
	bool nomem;
};

/*
 * Where a rectangle placed at off stops mattering to the others: its end
 * rounded up to the smallest alignment in the problem. Every offset is a
 * multiple of that alignment, so no rectangle can start in the padding and
 * the places that fit are the same; but without it the padding left after
 * odd sizes (malloc traces: 16-byte alignment, sizes of a few bytes) splits
 * every run of touching rectangles into slivers no one can use.
 */
static uint64_t top_of(const struct as_placer *pl, uint32_t i, uint64_t off)
{
	uint64_t hi = off + pl->pb->r[i].size, up;
	return as_align_up(hi, pl->grain, &up) ? up : hi;
}

/*
 * The tree's leaves are the sections where some rectangle starts: two
 * rectangles share time exactly when the later start lies in both, so a
 * rectangle covers the leaves map[t0] .. map[t1] - 1 (map[t]: starting
 * sections before t) and nothing is lost. The tree is the bottom-up one over
 * exactly that many leaves (no power of two): a node's leaves need not be
 * consecutive, but they nest, and the placer only asks which nodes are
 * ancestors or descendants of which.
 */
#define AS_COVER (2 * AS_STACK) /* nodes of a cover: two a level at most */

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
static uint32_t cover(const struct as_placer *pl, const struct marks *mk,
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
	pl->gcap = 1024;
	pl->g = calloc(pl->gcap, sizeof(struct as_span));
	if (!pl->node || !pl->part || !pl->path || !pl->path_at ||
	    !pl->ver || !pl->sub || !pl->mk.vis || !pl->off || !pl->g) {
		as_placer_destroy(pl);
		return NULL;
	}
	return pl;
}

void as_placer_destroy(struct as_placer *pl)
{
	if (!pl)
		return;
	pipe_stop(pl);
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
	pipe_stop(pl);
	pl->puts = 0;
	pl->look = AS_PIPE_LOOK;
	size_t nodes = 2 * (size_t)pl->size;
	for (size_t v = 0; v < nodes; v++) {
		pl->node[v].n = 0;
		runs_dirty(&pl->node[v], 0);
	}
	for (uint32_t v = 0; v < pl->nparts + pl->nhot; v++) {
		pl->part[v].n = 0;
		runs_dirty(&pl->part[v], 0);
	}
	for (uint32_t v = 0; v < pl->npath; v++) {
		pl->path[v].n = 0;
		runs_dirty(&pl->path[v], 0);
	}
	memset(pl->path_at, 0, pl->npath * sizeof(uint64_t));
	memset(pl->ver, 0, pl->npath * sizeof(uint64_t));
	pl->stale = false;
	walk_starts(pl);
	pl->nulog = pl->nuold = pl->nmarks = 0;
	pl->nolog = !pl->undo;
	memset(pl->sub, 0, nodes * sizeof(uint32_t));
}

/* First run of ru with hi > x. */
static uint32_t run_find(const struct runs *ru, uint64_t x)
{
	const struct as_span *v = csp(ru);
	uint32_t lo = 0, hi = ru->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= x)
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
	runs_dirty(ru, k ? k - 1 : 0);
	struct as_span *v = sp(ru);
	bool left = k > 0 && v[k - 1].hi == lo;
	bool right = k < ru->n && v[k].lo == hi;
	if (left && right) {
		v[k - 1].hi = v[k].hi;
		memmove(v + k, v + k + 1, (ru->n - k - 1) * sizeof(*v));
		ru->n--;
	} else if (left) {
		v[k - 1].hi = hi;
	} else if (right) {
		v[k].lo = lo;
	} else {
		if (!runs_grow(ru, ru->n + 1))
			return false;
		v = sp(ru);
		memmove(v + k + 1, v + k, (ru->n - k) * sizeof(*v));
		v[k].lo = lo;
		v[k].hi = hi;
		ru->n++;
	}
	return true;
}

static bool run_remove(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t k = run_find(ru, lo);
	struct as_span *v = sp(ru);
	if (k == ru->n || v[k].lo > lo || v[k].hi < hi)
		return true; /* not recorded: nothing to do */
	struct as_span r = v[k];
	runs_dirty(ru, k);
	if (r.lo < lo && r.hi > hi) {
		/* Split in two. */
		if (!runs_grow(ru, ru->n + 1))
			return false;
		v = sp(ru);
		memmove(v + k + 2, v + k + 1, (ru->n - k - 1) * sizeof(*v));
		v[k].hi = lo;
		v[k + 1].lo = hi;
		v[k + 1].hi = r.hi;
		ru->n++;
	} else if (r.lo < lo) {
		v[k].hi = lo;
	} else if (r.hi > hi) {
		v[k].lo = hi;
	} else {
		memmove(v + k, v + k + 1, (ru->n - k - 1) * sizeof(*v));
		ru->n--;
	}
	return true;
}

/* The runs [*i, *j) that [lo, hi) meets or touches. */
static void unite_range(const struct runs *ru, uint64_t lo, uint64_t hi,
			uint32_t *i, uint32_t *j)
{
	/* i: first run with hi >= lo; j: first run with lo > hi. */
	const struct as_span *v = csp(ru);
	uint32_t a = 0, b = ru->n;
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (v[mid].hi < lo)
			a = mid + 1;
		else
			b = mid;
	}
	*i = a;
	*j = a;
	while (*j < ru->n && v[*j].lo <= hi)
		(*j)++;
}

/* Add [lo, hi) to a union of disjoint runs, merging what it meets. */
static bool run_unite(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t i, j;
	unite_range(ru, lo, hi, &i, &j);
	runs_dirty(ru, i);
	struct as_span *v = sp(ru);
	if (i < j) {
		if (v[i].lo < lo)
			lo = v[i].lo;
		if (v[j - 1].hi > hi)
			hi = v[j - 1].hi;
		v[i].lo = lo;
		v[i].hi = hi;
		memmove(v + i + 1, v + j, (ru->n - j) * sizeof(*v));
		ru->n -= j - i - 1;
		return true;
	}
	if (!runs_grow(ru, ru->n + 1))
		return false;
	v = sp(ru);
	memmove(v + i + 1, v + i, (ru->n - i) * sizeof(*v));
	v[i].lo = lo;
	v[i].hi = hi;
	ru->n++;
	return true;
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

/* run_unite on part[a], logging what it overwrites. */
static bool part_unite(struct as_placer *pl, uint32_t a, uint64_t lo,
		       uint64_t hi)
{
	struct runs *ru = &pl->part[a];
	if (!pl->nolog) {
		uint32_t i, j;
		unite_range(ru, lo, hi, &i, &j);
		if (grow((void **)&pl->ulog, &pl->ulcap, (uint64_t)pl->nulog + 1,
			 sizeof(*pl->ulog)) &&
		    grow((void **)&pl->uold, &pl->uocap,
			 (uint64_t)pl->nuold + (j - i), sizeof(*pl->uold))) {
			if (j > i) /* (nothing overwritten: uold may be NULL) */
				memcpy(pl->uold + pl->nuold, sp(ru) + i,
				       (j - i) * sizeof(struct as_span));
			pl->ulog[pl->nulog++] =
				(struct undo){a, i, j - i, pl->nuold};
			pl->nuold += j - i;
		} else {
			pl->nolog = true;
		}
	}
	return run_unite(ru, lo, hi);
}

/* Take back one logged union; false: no memory. */
static bool part_undo(struct as_placer *pl, const struct undo *u)
{
	struct runs *ru = &pl->part[u->v];
	runs_dirty(ru, u->pos);
	struct as_span *v = sp(ru);
	if (u->nold == 0) {
		memmove(v + u->pos, v + u->pos + 1,
			(ru->n - u->pos - 1) * sizeof(*v));
		ru->n--;
		return true;
	}
	if (!runs_grow(ru, ru->n + u->nold - 1))
		return false;
	v = sp(ru);
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
static void hot_range(const struct as_placer *pl, uint32_t l, uint32_t h,
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

/* A new walk: no node is visited in it yet (vis[] is cleared when the
 * stamps wrap, once in 65535 walks). */
static void next_stamp(const struct as_placer *pl, struct marks *mk)
{
	if (++mk->stamp == 0) {
		memset(mk->vis, 0, 2 * (size_t)pl->size * sizeof(*mk->vis));
		mk->stamp = 1;
	}
}

/* A stamp of the clock that dates path unions and the runs they read. */
static uint64_t tick(struct as_placer *pl)
{
	return atomic_fetch_add_explicit(&pl->clock, 1,
					 memory_order_relaxed) + 1;
}

/*
 * Record rectangle i at [off, hi) in the nodes of its cover, the unions
 * above them and the snapshots it covers, walking with mk; false: out of
 * memory.
 */
static bool record(struct as_placer *pl, struct marks *mk, uint32_t i,
		   uint64_t off, uint64_t hi)
{
	bool ok = true;
	next_stamp(pl, mk);
	uint32_t cov[AS_COVER], ncov = cover(pl, mk, &pl->pb->r[i], cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		ok &= run_insert(&pl->node[v], off, hi);
		if (v < pl->npath)
			pl->ver[v] = tick(pl);
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
	hot_range(pl, pl->map[pl->pb->r[i].t0], pl->map[pl->pb->r[i].t1], &j,
		  &e);
	for (; j < e; j++)
		ok &= part_unite(pl, pl->nparts + j, off, hi);
	return ok;
}

/* ---- Puts recorded on a spare processor ----
 *
 * A put costs about what a find costs (it writes the union of every
 * ancestor of its cover), and a find depends only on the puts of the
 * rectangles sharing time with it. Of what a put writes, a find reads
 * the unions and counts of nodes inside its range, the runs of nodes over
 * one of its leaves, and the snapshots inside it; a put writes the runs of
 * nodes inside its own range, the unions and counts of nodes over one of
 * its leaves, and the snapshots inside it. So a node both write and read
 * lies over a leaf of both ranges, and a put of a rectangle sharing no
 * time with the find touches nothing the find reads. While a processor
 * would otherwise sit idle (as_procs_claim), a walk queues
 * its puts for a thread that records them in order and goes on to its next
 * find at once, waiting only for the queued puts sharing time with it. Each
 * find reads what it would with every put recorded: the same offsets and
 * steps. Besides the queue the threads share the clock (atomic) and the
 * memory allocator. A pop, a reset or the end of the placer drains the
 * queue and stops the thread; walks with an undo log use none.
 */

struct queued {
	uint32_t i, l, h;  /* rectangle, its leaves [l, h) */
	uint64_t off, hi;
};

struct pipe {
	struct as_placer *pl;
	struct marks mk;
	struct queued q[AS_PIPE];
	/* Puts queued and recorded since the start: the queue holds
	 * [done, queued). Only the walk writes queued, only the thread
	 * writes done. */
	atomic_uint_fast64_t queued, done;
	atomic_bool nomem, quit;
	struct as_procs *claimed; /* of a processor it claimed; NULL: none */
	uint32_t finds, waited; /* finds, and those that waited (see
				 * AS_PIPE_LOOK) */
	/* A side that waited too long sleeps on wake (see pipe_sleep). */
	atomic_bool walk_asleep, thread_asleep;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t th;
};

/*
 * Turns a side waits for the other one with a pause before it sleeps: about
 * what a put or a find takes. A side that slept is woken by the other's next
 * store (each stores, then looks whether the other sleeps; each sleeping
 * side says so, then looks again: one of the two sees the other).
 */
#define AS_PIPE_SPIN 2048

static void pipe_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Sleep on pp->wake, saying so in *asleep, until *at reaches `until` (or,
 * with quit, until the walk says to quit). */
static void pipe_sleep(struct pipe *pp, atomic_bool *asleep,
		       atomic_uint_fast64_t *at, uint64_t until, bool quit)
{
	pthread_mutex_lock(&pp->lock);
	atomic_store(asleep, true);
	while (atomic_load(at) < until && !(quit && atomic_load(&pp->quit)))
		pthread_cond_wait(&pp->wake, &pp->lock);
	atomic_store(asleep, false);
	pthread_mutex_unlock(&pp->lock);
}

static void pipe_wake(struct pipe *pp, atomic_bool *asleep)
{
	if (atomic_load(asleep)) {
		pthread_mutex_lock(&pp->lock);
		pthread_cond_broadcast(&pp->wake);
		pthread_mutex_unlock(&pp->lock);
	}
}

static void *pipe_main(void *arg)
{
	struct pipe *pp = arg;
	for (uint64_t done = 0;; done++) {
		for (unsigned t = 0; atomic_load(&pp->queued) == done; t++) {
			if (atomic_load(&pp->quit))
				return NULL;
			if (t < AS_PIPE_SPIN)
				pipe_pause();
			else
				pipe_sleep(pp, &pp->thread_asleep,
					   &pp->queued, done + 1, true);
		}
		const struct queued *q = &pp->q[done % AS_PIPE];
		if (!record(pp->pl, &pp->mk, q->i, q->off, q->hi))
			atomic_store(&pp->nomem, true);
		atomic_store(&pp->done, done + 1);
		pipe_wake(pp, &pp->walk_asleep);
	}
}

/* Wait until the puts queued before `upto` are recorded. */
static void pipe_wait(struct pipe *pp, uint64_t upto)
{
	for (unsigned t = 0; atomic_load(&pp->done) < upto; t++) {
		if (t < AS_PIPE_SPIN)
			pipe_pause();
		else
			pipe_sleep(pp, &pp->walk_asleep, &pp->done, upto,
				   false);
	}
}

/* Wait for the queued puts of rectangles sharing leaves with [l, h). */
static void pipe_wait_for(struct as_placer *pl, uint32_t l, uint32_t h)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	uint64_t queued = atomic_load_explicit(&pp->queued,
					       memory_order_relaxed);
	uint64_t k0 = atomic_load(&pp->done), upto = 0;
	for (uint64_t k = k0; k < queued; k++) {
		const struct queued *q = &pp->q[k % AS_PIPE];
		if (q->l < h && l < q->h)
			upto = k + 1;
	}
	/* (one waiting for the put just before) */
	pp->waited += upto == queued && upto > k0;
	pipe_wait(pp, upto);
	if (atomic_load(&pp->nomem))
		pl->nomem = true;
	if (++pp->finds == AS_PIPE_LOOK) {
		if (pp->waited > AS_PIPE_LOOK / 4 * 3) {
			pipe_stop(pl);
			if (pl->look < 16 * AS_PIPE_LOOK)
				pl->look *= 2;
			return;
		}
		pp->finds = pp->waited = 0;
		pl->look = AS_PIPE_LOOK;
	}
}

static void pipe_put(struct as_placer *pl, uint32_t i, uint64_t off,
		     uint64_t hi)
{
	struct pipe *pp = pl->pipe;
	uint64_t k = atomic_load_explicit(&pp->queued, memory_order_relaxed);
	pipe_wait(pp, k + 1 > AS_PIPE ? k + 1 - AS_PIPE : 0);
	const struct as_rect *r = &pl->pb->r[i];
	pp->q[k % AS_PIPE] = (struct queued){i, pl->map[r->t0],
					     pl->map[r->t1], off, hi};
	atomic_store(&pp->queued, k + 1);
	pipe_wake(pp, &pp->thread_asleep);
}

/* A thread for the puts, if a processor is spare (or pl->threaded). */
static void pipe_start(struct as_placer *pl)
{
	struct as_procs *spare = pl->threaded || !pl->budget
					 ? NULL : pl->budget->spare;
	if (!pl->threaded && !as_procs_claim(spare))
		return;
	struct pipe *pp = calloc(1, sizeof(*pp));
	uint16_t *vis = calloc(2 * (size_t)pl->size, sizeof(uint16_t));
	if (pp && vis && pthread_mutex_init(&pp->lock, NULL) == 0) {
		if (pthread_cond_init(&pp->wake, NULL) == 0) {
			pp->pl = pl;
			pp->mk.vis = vis;
			pp->claimed = spare;
			if (pthread_create(&pp->th, NULL, pipe_main, pp) == 0) {
				pl->pipe = pp;
				return;
			}
			pthread_cond_destroy(&pp->wake);
		}
		pthread_mutex_destroy(&pp->lock);
	}
	free(vis);
	free(pp);
	as_procs_release(spare);
}

/* Every queued put recorded. */
static void pipe_drain(struct as_placer *pl)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	pipe_wait(pp, atomic_load_explicit(&pp->queued,
					   memory_order_relaxed));
	if (atomic_load(&pp->nomem))
		pl->nomem = true;
}

/* The queue drained and the thread gone: puts are recorded here again. */
static void pipe_stop(struct as_placer *pl)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	pipe_drain(pl);
	pthread_mutex_lock(&pp->lock);
	atomic_store(&pp->quit, true);
	pthread_cond_broadcast(&pp->wake);
	pthread_mutex_unlock(&pp->lock);
	pthread_join(pp->th, NULL);
	pthread_cond_destroy(&pp->wake);
	pthread_mutex_destroy(&pp->lock);
	struct as_procs *claimed = pp->claimed;
	free(pp->mk.vis);
	free(pp);
	pl->pipe = NULL;
	as_procs_release(claimed);
}

void as_placer_put(struct as_placer *pl, uint32_t i, uint64_t off)
{
	uint64_t hi = top_of(pl, i, off);
	pl->off[i] = off;
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
		pipe_start(pl);
	}
	if (pl->pipe)
		pipe_put(pl, i, off, hi);
	else if (!record(pl, &pl->mk, i, off, hi))
		pl->nomem = true;
}

void as_placer_threaded(struct as_placer *pl)
{
	pl->threaded = true;
}

bool as_placer_nomem(struct as_placer *pl)
{
	pipe_drain(pl);
	return pl->nomem;
}

void as_placer_pop(struct as_placer *pl, uint32_t i)
{
	pipe_stop(pl);
	uint64_t lo = pl->off[i], hi = top_of(pl, i, lo);
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
	uint32_t cov[AS_COVER], ncov = cover(pl, &pl->mk, &pl->pb->r[i], cov);
	for (uint32_t c = 0; c < ncov; c++) {
		uint32_t v = cov[c];
		if (!run_remove(&pl->node[v], lo, hi))
			pl->nomem = true;
		if (v < pl->npath)
			pl->ver[v] = tick(pl);
		for (uint32_t a = v; a >= 1; a >>= 1)
			pl->sub[a]--;
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
	memcpy(pl->g + pl->ng, csp(ru), ru->n * sizeof(struct as_span));
	pl->ng += ru->n;
}

/* The runs of placed rectangles sharing time with r, into pl->g. */
static uint32_t gather(struct as_placer *pl, const struct as_rect *r)
{
	pl->ng = 0;
	next_stamp(pl, &pl->mk);
	uint32_t cov[AS_COVER], ncov = cover(pl, &pl->mk, r, cov);
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
	pl->src[pl->nsrc++] =
		(struct src){.ru = ru, .v = csp(ru), .n = ru->n, .plain = plain};
	__builtin_prefetch(csp(ru));
}

/*
 * The sorted sets whose union is the placed rectangles sharing time with r,
 * into pl->src: with part[] up to date, O(log S) of them, and with
 * `snapshots` the ones inside r's range (see AS_HOT); else the runs
 * gathered one by one, sorted and merged, as one set.
 */
static void sources(struct as_placer *pl, const struct as_rect *r,
		    bool snapshots);

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
	pipe_wait_for(pl, pl->map[r->t0], pl->map[r->t1]);
	if (pl->stale) {
		uint32_t k = gather(pl, r);
		if (pl->nomem)
			return NULL;
		sort_spans(pl->g, k);
		*n = k;
		return pl->g;
	}
	sources(pl, r, false);
	pl->ng = 0;
	for (uint32_t j = 0; j < pl->nsrc && !pl->nomem; j++)
		take(pl, pl->src[j].ru);
	if (pl->nomem)
		return NULL;
	sort_spans(pl->g, pl->ng);
	*n = pl->ng;
	return pl->g;
}

/* dst = x united with y (both sorted, disjoint runs); false: no memory. */
static bool unite_into(struct runs *dst, const struct runs *x,
		       const struct runs *y)
{
	uint32_t need = (x ? x->n : 0) + y->n;
	if (!runs_grow(dst, need))
		return false;
	runs_dirty(dst, 0);
	struct as_span *d = sp(dst);
	const struct as_span *xv = x ? csp(x) : NULL, *yv = csp(y);
	if (x && y->n <= 8) {
		/* A copy and a few insertions beat the merge loop. */
		if (x->n)
			memcpy(d, xv, x->n * sizeof(*d));
		dst->n = x->n;
		for (uint32_t j = 0; j < y->n; j++)
			if (!run_unite(dst, yv[j].lo, yv[j].hi))
				return false;
		return true;
	}
	uint32_t i = 0, j = 0, n = 0, xn = x ? x->n : 0;
	while (i < xn || j < y->n) {
		const struct as_span *s =
			j == y->n || (i < xn && xv[i].lo < yv[j].lo)
				? &xv[i++]
				: &yv[j++];
		if (n && s->lo <= d[n - 1].hi) {
			if (s->hi > d[n - 1].hi)
				d[n - 1].hi = s->hi;
		} else {
			d[n++] = *s;
		}
	}
	dst->n = n;
	return true;
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
			if (!unite_into(&pl->path[a], up, &pl->node[a])) {
				pl->nomem = true;
				return NULL;
			}
			pl->path_at[a] = tick(pl);
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
		uint32_t k = gather(pl, r), n = 0;
		sort_spans(pl->g, k);
		/* Runs of different nodes may overlap: merged into one set. */
		for (uint32_t j = 0; j < k; j++) {
			if (n && pl->g[j].lo <= pl->g[n - 1].hi) {
				if (pl->g[j].hi > pl->g[n - 1].hi)
					pl->g[n - 1].hi = pl->g[j].hi;
			} else {
				pl->g[n++] = pl->g[j];
			}
		}
		pl->one = (struct runs){.u.v = pl->g, .n = n, .cap = n};
		if (k)
			add_src(pl, &pl->one, true);
		return;
	}
	next_stamp(pl, &pl->mk);
	uint32_t cov[AS_COVER], ncov = cover(pl, &pl->mk, r, cov);
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
		hot_range(pl, pl->map[r->t0], pl->map[r->t1], &j, &je);
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

static void sources(struct as_placer *pl, const struct as_rect *r,
		    bool snapshots)
{
	gather_sources(pl, r, snapshots);
	for (uint32_t k = 0; k < pl->nsrc; k++)
		src_at(&pl->src[k], 0);
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

void as_placer_budget(struct as_placer *pl, struct as_budget *b)
{
	pl->budget = b;
	walk_starts(pl);
}

int as_placer_error(struct as_placer *pl)
{
	pipe_drain(pl);
	if (pl->nomem)
		return AS_ENOMEM;
	return pl->over ? as_budget_why(pl->budget) : AS_STRATEGY_PAST_2_64;
}

/* as_placer_find within the limit, its steps in pl->steps and the sets'. */
static bool find(struct as_placer *pl, uint32_t i, enum as_fit fit,
		 uint64_t *off, uint64_t *gap_out)
{
	const struct as_rect *r = &pl->pb->r[i];
	/*
	 * The fitting gaps of the union, from the bottom up: lowest fit takes
	 * the first, best fit the smallest, stopping at one of exactly r's
	 * size (none can be smaller).
	 */
	pipe_wait_for(pl, pl->map[r->t0], pl->map[r->t1]);
	sources(pl, r, true);
	if (pl->nomem)
		return false;
	for (pl->nord = 0; pl->nord < pl->nsrc; pl->nord++)
		pl->ord[pl->nord] = (struct ask){pl->src[pl->nord].next.lo,
						 pl->nord};
	uint64_t x = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
	uint64_t floor = 0; /* the top of the sets left behind */
	uint64_t exact;     /* a gap no smaller one can beat (see top_of) */
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
	pl->finds++;
	pl->steps = 0;
	bool found = find(pl, i, fit, off, gap_out);
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
