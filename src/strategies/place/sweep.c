/*
 * The sweep placer of place.h (as_place_sweep): one pass over the sections
 * with the free gaps in two trees (core/tree.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"
#include "core/tree.h"

/* ---- The sweep placer: free gaps in two trees ----
 *
 * Invariants: the gaps are disjoint, none touches another (frees merge
 * them), and the last one is the unbounded room above the top. Tree `by
 * offset` keeps the most room per subtree (first fit); tree `by size`
 * orders by (length, offset) (best fit) and is kept only for best fit.
 * Node k is the same gap in both. A gap that shrinks or grows without
 * passing a neighbour keeps its node: its place by offset stays, only the
 * maxima on its path are redone (most placements and frees do that).
 */
struct gap {
	uint64_t lo, len;
	uint64_t maxroom;       /* the most room in its subtree (gap_room) */
	struct as_tree_link link[2];  /* in tree 0 (offset), 1 (size) */
};

struct gaps {
	struct gap *g;          /* g[0] is unused: 0 names no gap */
	uint32_t n, cap, free_list;
	uint32_t root[2];       /* tree 0 by offset, 1 by (length, offset) */
	uint8_t grain;          /* log2 of the smallest alignment */
	bool by_size;           /* tree 1 is kept (best fit) */
};

/*
 * The first offset *at of gap x aligned to 2^lg and the *room from there
 * to the gap's end; false when no such offset lies in the gap.
 */
static bool gap_room_at(const struct gap *x, uint8_t lg, uint64_t *at,
			uint64_t *room)
{
	if (!as_align_up(x->lo, lg, at) || *at - x->lo > x->len)
		return false;
	*room = x->len - (*at - x->lo);
	return true;
}

/*
 * The room of gap x from its first offset aligned to the smallest
 * alignment: a rectangle larger than that fits nowhere in it. Gaps start
 * where a rectangle ends, mostly unaligned on malloc traces (odd sizes),
 * so their length alone would send first fit down every subtree holding a
 * gap of the size that alignment then spoils.
 */
static uint64_t gap_room(const struct gaps *G, const struct gap *x)
{
	uint64_t at, room;
	return gap_room_at(x, G->grain, &at, &room) ? room : 0;
}

static int gap_cmp_lo(const void *pa, const void *pb, void *ctx)
{
	const struct gap *x = pa, *y = pb;
	(void)ctx;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int gap_cmp_len(const void *pa, const void *pb, void *ctx)
{
	const struct gap *x = pa, *y = pb;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return gap_cmp_lo(pa, pb, ctx);
}

/* Tree 0's summary: the most room in the subtree. */
static void gap_pull(void *node, const void *l, const void *r, void *ctx)
{
	struct gap *x = node;
	const struct gap *a = l, *b = r;
	uint64_t m = gap_room(ctx, x);
	if (a && a->maxroom > m)
		m = a->maxroom;
	if (b && b->maxroom > m)
		m = b->maxroom;
	x->maxroom = m;
}

/* Tree t's description, written out where it is used so the compiler
 * calls its compare and summary directly (core/tree.h). */
#define GAP_TREE(G, t)                                                     \
	(&(struct as_tree){.base = (G)->g, .n = (G)->n,                    \
			   .stride = sizeof(struct gap),                   \
			   .link = offsetof(struct gap, link) +            \
				   (size_t)(t) * sizeof(struct as_tree_link), \
			   .cmp = (t) ? gap_cmp_len : gap_cmp_lo,          \
			   .aug = (t) ? NULL : gap_pull,                   \
			   .ctx = (void *)(G)})

static inline void gap_insert_tree(struct gaps *G, int t, uint32_t k)
{
	as_tree_insert(GAP_TREE(G, t), &G->root[t], k, NULL, NULL);
}

static inline void gap_erase_tree(struct gaps *G, int t, uint32_t k)
{
	as_tree_remove(GAP_TREE(G, t), &G->root[t], &G->g[k]);
}

/* Gap k becomes [lo, lo + len), between the same neighbours. */
static void gap_set(struct gaps *G, uint32_t k, uint64_t lo, uint64_t len)
{
	if (G->by_size)
		gap_erase_tree(G, 1, k);
	G->g[k].lo = lo;
	G->g[k].len = len;
	as_tree_update(GAP_TREE(G, 0), G->root[0], k);
	if (G->by_size)
		gap_insert_tree(G, 1, k);
}

static int gap_new(struct gaps *G, uint64_t lo, uint64_t len, uint32_t *out)
{
	uint32_t k;
	if (G->free_list) {
		k = G->free_list;
		G->free_list = G->g[k].link[0].l;
	} else {
		if (G->n == G->cap) {
			uint32_t cap = G->cap ? 2 * G->cap : 1024;
			struct gap *ng = realloc(G->g, cap * sizeof(*ng));
			if (!ng)
				return AS_ENOMEM;
			G->g = ng;
			G->cap = cap;
		}
		k = G->n++;
	}
	memset(&G->g[k], 0, sizeof(G->g[k]));
	G->g[k].lo = lo;
	G->g[k].len = len;
	gap_insert_tree(G, 0, k);
	if (G->by_size)
		gap_insert_tree(G, 1, k);
	*out = k;
	return AS_OK;
}

static void gap_del(struct gaps *G, uint32_t k)
{
	gap_erase_tree(G, 0, k);
	if (G->by_size)
		gap_erase_tree(G, 1, k);
	G->g[k].link[0].l = G->free_list;
	G->free_list = k;
}

/* The gaps either side of offset x, in one walk: *before the last with lo
 * < x, *after the first with lo >= x (0: none). */
static void gap_around(const struct gaps *G, uint64_t x, uint32_t *before,
		       uint32_t *after)
{
	uint32_t k = G->root[0];
	*before = *after = 0;
	while (k != AS_TREE_NIL) {
		if (G->g[k].lo < x) {
			*before = k;
			k = G->g[k].link[0].r;
		} else {
			*after = k;
			k = G->g[k].link[0].l;
		}
	}
}

static bool gap_fits(const struct gap *x, uint64_t size, uint8_t lg,
		     uint64_t *at)
{
	uint64_t a, room;
	if (!gap_room_at(x, lg, &a, &room) || room < size)
		return false;
	*at = a;
	return true;
}

/* Lowest gap that holds size (aligned): in-order walk pruned by room. */
static uint32_t gap_first(const struct gaps *G, uint32_t k, uint64_t size,
			  uint8_t lg, uint64_t *at)
{
	if (k == AS_TREE_NIL || G->g[k].maxroom < size)
		return 0;
	uint32_t f = gap_first(G, G->g[k].link[0].l, size, lg, at);
	if (f)
		return f;
	if (gap_fits(&G->g[k], size, lg, at))
		return k;
	return gap_first(G, G->g[k].link[0].r, size, lg, at);
}

/* Tightest gap that holds size (aligned). */
static uint32_t gap_best(const struct gaps *G, uint64_t size, uint8_t lg,
			 uint64_t *at)
{
	/* Least (len, lo) with len >= size, then onwards while unaligned. */
	uint32_t k = G->root[1], cand = 0;
	while (k != AS_TREE_NIL) {
		if (G->g[k].len >= size) {
			cand = k;
			k = G->g[k].link[1].l;
		} else {
			k = G->g[k].link[1].r;
		}
	}
	if (cand && gap_fits(&G->g[cand], size, lg, at))
		return cand;
	/* Rare: alignment spoils the tightest; fall back to first fit. */
	return gap_first(G, G->root[0], size, lg, at);
}

/* Leftmost gap with lo >= y that holds size (aligned). */
static uint32_t gap_first_ge(const struct gaps *G, uint32_t k, uint64_t y,
			     uint64_t size, uint8_t lg, uint64_t *at)
{
	while (k != AS_TREE_NIL && G->g[k].maxroom >= size) {
		if (G->g[k].lo < y) {
			k = G->g[k].link[0].r;
			continue;
		}
		uint32_t f = gap_first_ge(G, G->g[k].link[0].l, y, size, lg, at);
		if (f)
			return f;
		if (gap_fits(&G->g[k], size, lg, at))
			return k;
		k = G->g[k].link[0].r;
	}
	return 0;
}

/*
 * The lowest offset >= y where size fits in a free gap (aligned); the gap
 * is returned (0: none).
 */
static uint32_t gap_from(const struct gaps *G, uint64_t y, uint64_t size,
			 uint8_t lg, uint64_t *at)
{
	uint32_t p, after; /* p: the last gap starting at or below y */
	gap_around(G, y + 1, &p, &after);
	if (p && G->g[p].lo + G->g[p].len > y) {
		uint64_t a;
		if (as_align_up(y, lg, &a) && a >= G->g[p].lo &&
		    a - G->g[p].lo <= G->g[p].len &&
		    G->g[p].len - (a - G->g[p].lo) >= size) {
			*at = a;
			return p;
		}
	}
	return gap_first_ge(G, G->root[0], y + 1, size, lg, at);
}

struct sweep_ctx {
	const struct as_problem *pb;
};

static uint32_t start_key(uint32_t i, const void *cv)
{
	return ((const struct sweep_ctx *)cv)->pb->r[i].t0;
}

static uint32_t end_key(uint32_t i, const void *cv)
{
	return ((const struct sweep_ctx *)cv)->pb->r[i].t1;
}

/* The rectangles starting in one section: the larger first. */
static bool by_start_size(uint32_t a, uint32_t b, const void *cv)
{
	const struct as_problem *pb = ((const struct sweep_ctx *)cv)->pb;
	const struct as_rect *p = &pb->r[a], *q = &pb->r[b];
	if (p->t0 != q->t0)
		return p->t0 < q->t0;
	if (p->size != q->size)
		return p->size > q->size;
	if (p->t1 != q->t1)
		return p->t1 > q->t1;
	return a < b;
}

/*
 * Cut [lo, lo + len) out of the gap holding it (a fixed rectangle's room,
 * free by the sweep's invariant); AS_EINVAL when no gap holds it whole.
 */
static int gap_carve(struct gaps *G, uint64_t lo, uint64_t len, uint32_t *k)
{
	uint32_t g, after;
	if (len == 0)
		return AS_OK;
	gap_around(G, lo + 1, &g, &after);
	if (!g)
		return AS_EINVAL;
	/* The gap starts at or below lo; it must reach lo + len. */
	uint64_t glo = G->g[g].lo, glen = G->g[g].len;
	if (lo - glo >= glen || glen - (lo - glo) < len)
		return AS_EINVAL;
	uint64_t rest = glen - (lo - glo) - len;
	if (lo > glo) {
		gap_set(G, g, glo, lo - glo);
		return rest ? gap_new(G, lo + len, rest, k) : AS_OK;
	}
	if (rest)
		gap_set(G, g, lo + len, rest);
	else
		gap_del(G, g);
	return AS_OK;
}

/* Whether one of the fixed rectangles ft[0..nf) (by start) starts in
 * sections [t0, t1). */
static bool fixed_starts_in(const struct as_problem *pb, const uint32_t *ft,
			    uint32_t nf, uint32_t t0, uint32_t t1)
{
	uint32_t lo = 0, hi = nf;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pb->r[ft[mid]].t0 < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nf && pb->r[ft[lo]].t0 < t1;
}

uint64_t as_place_sweep(const struct as_problem *pb, enum as_fit fit,
			const uint8_t *fixed, struct as_placer *obst,
			const struct as_budget *budget, uint64_t *off,
			int *err)
{
	uint32_t n = pb->n;
	struct gaps G = {0};
	uint32_t *st = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *en = malloc(((size_t)n + 1) * sizeof(uint32_t));
	uint32_t *ft0 = NULL;
	uint64_t peak = 0;
	uint32_t k;
	*err = AS_ENOMEM;
	G.grain = as_problem_grain(pb);
	G.by_size = fit == AS_FIT_BEST && !obst;
	G.cap = 1024;
	G.g = calloc(G.cap, sizeof(*G.g));
	G.n = 1; /* g[0] is unused */
	G.root[0] = G.root[1] = AS_TREE_NIL;
	/* The room above everything: [0, UINT64_MAX). */
	if (!G.g || !st || !en || gap_new(&G, 0, UINT64_MAX, &k))
		goto out;
	/*
	 * With obstacles, the fixed rectangles take part in the sweep too:
	 * each is cut out of the gaps when it starts (its room is free then:
	 * every rectangle placed before and sharing its time kept clear of
	 * it) and freed when it ends. So a rectangle needs the obstacles'
	 * spans only when a fixed one starts during its lifetime (ft0, the
	 * fixed ones' starts sorted), which on malloc traces few do.
	 */
	uint32_t m = 0, nf = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (fixed && fixed[i]) {
			if (off[i] + pb->r[i].size > peak)
				peak = off[i] + pb->r[i].size;
			nf++;
			if (!obst)
				continue;
		}
		st[m] = en[m] = i;
		m++;
	}
	struct sweep_ctx c = {pb};
	if (obst && nf) {
		ft0 = malloc((size_t)nf * sizeof(uint32_t));
		if (!ft0)
			goto out;
		nf = 0;
		for (uint32_t i = 0; i < n; i++)
			if (fixed[i])
				ft0[nf++] = i;
		if (as_sort_u32_keyed(ft0, nf, start_key, NULL, &c))
			goto out;
	}
	if (as_sort_u32_keyed(st, m, start_key, by_start_size, &c) ||
	    as_sort_u32_keyed(en, m, end_key, NULL, &c))
		goto out;
	n = m;
	uint32_t ie = 0;
	for (uint32_t is = 0; is < n; is++) {
		uint32_t i = st[is];
		const struct as_rect *r = &pb->r[i];
		/* A pass over millions takes seconds: look for a cancel. */
		if (is % 256 == 255 && as_budget_canceled(budget)) {
			*err = AS_ECANCELED;
			goto out;
		}
		if (is % 4096 == 4095 && budget && budget->deadline > 0 &&
		    as_now_ms() > budget->deadline) {
			*err = AS_ELIMIT;
			goto out;
		}
		/* Frees first: everything ending at or before this start. */
		for (; ie < n && pb->r[en[ie]].t1 <= r->t0; ie++) {
			uint32_t j = en[ie];
			uint64_t lo = off[j], len = pb->r[j].size;
			uint32_t pv, nx;
			gap_around(&G, lo, &pv, &nx);
			if (pv && G.g[pv].lo + G.g[pv].len != lo)
				pv = 0;
			if (nx && G.g[nx].lo != lo + len)
				nx = 0;
			/* Gaps end at most at UINT64_MAX: no overflow. */
			if (pv && nx) {
				len += G.g[nx].len;
				gap_del(&G, nx);
			}
			if (pv)
				gap_set(&G, pv, G.g[pv].lo, G.g[pv].len + len);
			else if (nx)
				gap_set(&G, nx, lo, G.g[nx].len + len);
			else if (gap_new(&G, lo, len, &k))
				goto out;
		}
		if (ft0 && fixed[i]) {
			int e = gap_carve(&G, off[i], r->size, &k);
			if (e) {
				*err = e;
				goto out;
			}
			continue;
		}
		uint64_t at = 0;
		uint32_t g;
		if (ft0 && !fixed_starts_in(pb, ft0, nf, r->t0, r->t1)) {
			g = gap_first(&G, G.root[0], r->size, r->align_log2,
				      &at);
		} else if (obst) {
			/*
			 * Fixed rectangles are not in the gaps: alternate
			 * between the lowest free gap and the obstacles met
			 * there (jumping over the highest one) until both
			 * agree.
			 */
			uint32_t ko;
			struct as_span *og = as_placer_spans(obst, r, &ko);
			if (!og)
				goto out;
			for (uint32_t q = 1; q < ko; q++)
				if (og[q].hi < og[q - 1].hi)
					og[q].hi = og[q - 1].hi;
			uint64_t y = 0;
			for (;;) {
				g = gap_from(&G, y, r->size, r->align_log2, &at);
				if (!g)
					break;
				/* Last obstacle starting below at + size. */
				uint32_t lo = 0, hi = ko;
				while (lo < hi) {
					uint32_t mid = lo + (hi - lo) / 2;
					if (og[mid].lo < at + r->size)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo == 0 || og[lo - 1].hi <= at)
					break;
				y = og[lo - 1].hi;
			}
		} else {
			g = fit == AS_FIT_BEST
				    ? gap_best(&G, r->size, r->align_log2, &at)
				    : gap_first(&G, G.root[0], r->size,
						r->align_log2, &at);
		}
		if (!g) {
			*err = AS_OK;
			peak = UINT64_MAX;
			goto out;
		}
		uint64_t glo = G.g[g].lo, glen = G.g[g].len;
		uint64_t rest = glen - (at - glo) - r->size;
		/* The room before `at` keeps the node, else the room after. */
		if (at > glo) {
			gap_set(&G, g, glo, at - glo);
			if (rest && gap_new(&G, at + r->size, rest, &k))
				goto out;
		} else if (rest) {
			gap_set(&G, g, at + r->size, rest);
		} else {
			gap_del(&G, g);
		}
		off[i] = at;
		if (at + r->size > peak)
			peak = at + r->size;
	}
	*err = AS_OK;
out:
	free(G.g);
	free(st);
	free(en);
	free(ft0);
	return *err ? 0 : peak;
}
