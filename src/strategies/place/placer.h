/*
 * Private to the segment-tree placer of place.h (as_placer_*,
 * as_place_order): the structure its files share, and what each of them
 * defines for the others, grouped by file. placer.c keeps the tree (create,
 * reset, puts and pops, the undo log of the unions); range_sets.c the sorted
 * runs every set is made of and their gap index; find.c the queries; pipe.c
 * the thread that records puts on a spare processor; check.c the check of
 * the whole index against a plain scan.
 */
#ifndef AS_PLACER_H
#define AS_PLACER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
 * Every set of runs is canonical: sorted, each run non-empty, and no two
 * touching (touching ranges are one run). A node's runs are the merged
 * ranges [off, as_placer_top) of the rectangles recorded there; sub[v]
 * counts the recordings at v and below it. as_placer_check verifies all of
 * it against a plain scan of the placed rectangles.
 */

/*
 * The runs of a set. Most sets hold a single run (a rectangle or a stack of
 * touching ones), which sits in the struct itself: no allocation until a
 * second one comes.
 */
static inline struct as_span *as_runs_v(struct runs *ru)
{
	return ru->cap ? ru->u.v : &ru->u.one;
}

static inline const struct as_span *as_runs_cv(const struct runs *ru)
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

static inline uint64_t *as_runs_tail(const struct runs *ru)
{
	return (uint64_t *)(ru->u.v + ru->cap);
}

/* Runs from index i on changed: their blocks are out of date. */
static inline void as_runs_dirty(struct runs *ru, uint32_t i)
{
	if (ru->cap && as_runs_tail(ru)[0] > i / AS_BLK)
		as_runs_tail(ru)[0] = i / AS_BLK;
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
 * as it is are passed without a look at their cursors (find.c, lowest_fit).
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
 * as_placer_next_stamp). A put's and a find's walks each keep their own,
 * since puts may be recorded on a thread of their own (pipe.c).
 */
struct marks {
	uint16_t *vis;
	uint16_t stamp;
};

/*
 * Puts between looks for a spare processor (pipe.c), after a reset. A find
 * that waits for the put just before it runs as if on one thread, and the
 * lines that put wrote then move between the processors' caches:
 * greedy-breadth's order (the rectangles spanning the broadest section
 * first) does that for most of its finds. When more than three quarters of
 * AS_PIPE_LOOK finds did, the thread stops and the walk looks again after
 * twice as many puts as last time (16 times at most; a stretch of finds
 * that waited less brings it back to AS_PIPE_LOOK), as greedy-size's order
 * has such stretches too: one size class's long-lived rectangles.
 */
#define AS_PIPE_LOOK 256

struct as_placer {
	const struct as_problem *pb;
	uint32_t size;          /* leaves: the sections where some rectangle
				 * starts (see AS_COVER) */
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
	/* Path unions of the top npath nodes (find.c, path_union). */
	struct runs *path;
	uint64_t *path_at, *ver;
	atomic_uint_fast64_t clock; /* ticked by finds and puts
				     * (as_placer_tick) */
	uint32_t npath;
	uint32_t *sub;          /* 2 * size: recordings at v and below */
	struct marks mk;        /* the finds' (and puts' on this thread) */
	struct pipe *pipe;      /* puts on another processor (pipe.c),
				 * or NULL */
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
				 * order they are asked (find.c,
				 * lowest_fit) */
	uint32_t nord;
	struct runs one;        /* the gathered runs, after a pop */
	uint64_t steps;         /* the query's steps besides its sets' */
	struct as_budget *budget; /* the run's (as_placer_budget), or NULL */
	uint64_t start;         /* its steps left at the walk's start */
	uint32_t finds;         /* finds since then */
	bool over;              /* a find stopped: none left, or behind */
	uint32_t *map;          /* section -> leaf (see AS_COVER) */
	uint8_t grain;          /* log2 of the smallest alignment (see
				 * as_placer_top) */
	bool nomem;
	uint8_t *placed;        /* per rectangle: put and not popped (what
				 * as_placer_check scans) */
	uint64_t broken;        /* invariants the sampled checks found broken
				 * (AS_EXPENSIVE_CHECKS): finds then fail */
	uint32_t audit_in;      /* changes until the next sampled check, */
	uint32_t audit_gap;     /* and between the last two (check.c) */
	uint32_t audits;        /* checks so far: which rectangles they ask */
};

/*
 * Where a rectangle placed at off stops mattering to the others: its end
 * rounded up to the smallest alignment in the problem. Every offset is a
 * multiple of that alignment, so no rectangle can start in the padding and
 * the places that fit are the same; but without it the padding left after
 * odd sizes (malloc traces: 16-byte alignment, sizes of a few bytes) splits
 * every run of touching rectangles into slivers no one can use.
 */
static inline uint64_t as_placer_top(const struct as_placer *pl, uint32_t i,
				     uint64_t off)
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

/* A new walk: no node is visited in it yet (vis[] is cleared when the
 * stamps wrap, once in 65535 walks). */
static inline void as_placer_next_stamp(const struct as_placer *pl,
					struct marks *mk)
{
	if (++mk->stamp == 0) {
		memset(mk->vis, 0, 2 * (size_t)pl->size * sizeof(*mk->vis));
		mk->stamp = 1;
	}
}

/* A stamp of the clock that dates path unions and the runs they read. */
static inline uint64_t as_placer_tick(struct as_placer *pl)
{
	return atomic_fetch_add_explicit(&pl->clock, 1,
					 memory_order_relaxed) + 1;
}

/* ---- range_sets.c: sets of runs and their gap index ---- */

/* Room for `need` runs; false: no memory. The block maxima are redone. */
bool as_runs_grow(struct runs *ru, uint32_t need);
/* The largest gap inside block b (b within the runs). */
uint64_t as_runs_block_max(struct runs *ru, uint32_t b);
/*
 * The first of the runs v[lo, hi) whose end is above x (hi when none):
 * runs are disjoint, so their ends ascend. Inline: finds skip runs with it.
 */
static inline uint32_t as_spans_above(const struct as_span *v, uint32_t lo,
				      uint32_t hi, uint64_t x)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
/* First run of ru with hi > x. */
uint32_t as_runs_find(const struct runs *ru, uint64_t x);
/* Record [lo, hi), disjoint from the runs; false: no memory. */
bool as_runs_insert(struct runs *ru, uint64_t lo, uint64_t hi);
/* Take back a recorded [lo, hi); false: no memory. */
bool as_runs_remove(struct runs *ru, uint64_t lo, uint64_t hi);
/* The runs [*i, *j) that [lo, hi) meets or touches. */
void as_runs_around(const struct runs *ru, uint64_t lo, uint64_t hi,
		    uint32_t *i, uint32_t *j);
/* Add [lo, hi) to a union of disjoint runs, merging what it meets. */
bool as_runs_unite(struct runs *ru, uint64_t lo, uint64_t hi);
/* dst = x united with y (both sorted, disjoint runs; x may be NULL);
 * false: no memory. */
bool as_runs_unite_into(struct runs *dst, const struct runs *x,
			const struct runs *y);
/* Sort spans by lo. */
void as_spans_sort(struct as_span *g, uint32_t n);
/* Merge sorted spans that overlap or touch, in place; returns how many are
 * left. */
uint32_t as_spans_merge(struct as_span *g, uint32_t n);

/* ---- placer.c: the tree, puts and pops ---- */

/*
 * The canonical cover of r's range, the nodes whose ranges are disjoint and
 * make it up, into cov[] (AS_COVER entries); returns how many.
 */
uint32_t as_placer_cover(const struct as_placer *pl, const struct marks *mk,
			 const struct as_rect *r, uint32_t *cov);
/* The snapshots [*j, *e) of leaves in [l, h). */
void as_placer_hot_range(const struct as_placer *pl, uint32_t l, uint32_t h,
			 uint32_t *j, uint32_t *e);
/*
 * Record rectangle i at [off, hi) in the nodes of its cover, the unions
 * above them and the snapshots it covers, walking with mk; false: out of
 * memory.
 */
bool as_placer_record(struct as_placer *pl, struct marks *mk, uint32_t i,
		      uint64_t off, uint64_t hi);

/* ---- find.c: queries ---- */

/*
 * Where rectangle i fits (as_placer_find without the budget, and without
 * waiting for queued puts: the caller has), its steps in pl->steps and the
 * sets'.
 */
bool as_placer_search(struct as_placer *pl, uint32_t i, enum as_fit fit,
		      uint64_t *off, uint64_t *gap_out);

/* ---- pipe.c: puts recorded on a spare processor ---- */

/* A thread for the puts, if a processor is spare (or pl->threaded). */
void as_pipe_start(struct as_placer *pl);
/* Queue the put of rectangle i at [off, hi) (pl->pipe is running). */
void as_pipe_put(struct as_placer *pl, uint32_t i, uint64_t off, uint64_t hi);
/* Wait for the queued puts of rectangles sharing leaves with [l, h). */
void as_pipe_wait_for(struct as_placer *pl, uint32_t l, uint32_t h);
/* Every queued put recorded. */
void as_pipe_drain(struct as_placer *pl);
/* The queue drained and the thread gone: puts are recorded here again. */
void as_pipe_stop(struct as_placer *pl);

/* ---- check.c: the index against a plain scan ---- */

/*
 * After a put or a pop: with AS_EXPENSIVE_CHECKS, as_placer_check at a
 * sampled rate, what it finds added to pl->broken; otherwise nothing.
 */
#ifdef AS_EXPENSIVE_CHECKS
void as_placer_audit(struct as_placer *pl);
#else
static inline void as_placer_audit(struct as_placer *pl)
{
	(void)pl;
}
#endif

#endif
