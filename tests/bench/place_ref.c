/*
 * Reference for the planner benchmark (tests/bench/place_bench.sh, issue
 * 14): the classic segment-tree greedy, written plainly and on its own (no
 * allocscope code), to measure the planners against.
 *
 *   place_ref TRACE.csv ORDER FIT
 *
 * TRACE.csv is a MiniMalloc CSV (id,lower,upper,size; a buffer lives over
 * [lower, upper)). ORDER is `size` (largest first, then longest, then file
 * order: greedy-size's), `length` (longest first, then largest: bestfit's
 * second order) or `breadth` (by the broadest time section spanned, then
 * largest: greedy-breadth's). FIT is `lowest` (first fit) or `best` (the
 * smallest gap that fits, else the top). Prints "peak seconds" where
 * seconds is the placement alone (after reading and sorting).
 *
 * The tree is over the elementary time sections. Each node keeps two sets of
 * merged address intervals, sorted: `cover`, the buffers whose canonical
 * cover holds the node (they span its whole range), and `all`, the union of
 * every buffer placed in its subtree. The buffers sharing time with a query
 * are all[] of its cover nodes plus cover[] of their ancestors: O(log n)
 * sorted sets, merged with a heap to walk the free gaps in address order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct span {
	uint64_t lo, hi;
};

struct set {
	struct span *v;
	uint32_t n, cap;
};

struct buf {
	uint64_t start, end, size;
	uint32_t t0, t1, key;
};

static struct buf *bufs;
static uint32_t nbufs;
static uint64_t *load;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "place_ref: out of memory\n");
		exit(2);
	}
	return p;
}

static void grow(struct set *s, uint32_t need)
{
	if (need <= s->cap)
		return;
	uint32_t cap = s->cap ? s->cap : 4;
	while (cap < need)
		cap *= 2;
	s->v = xrealloc(s->v, cap * sizeof(*s->v));
	s->cap = cap;
}

/* Add [lo, hi) to a set of disjoint sorted intervals, merging touching. */
static void unite(struct set *s, uint64_t lo, uint64_t hi)
{
	uint32_t a = 0, b = s->n;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (s->v[m].hi < lo)
			a = m + 1;
		else
			b = m;
	}
	uint32_t j = a;
	while (j < s->n && s->v[j].lo <= hi)
		j++;
	if (a < j) {
		if (s->v[a].lo < lo)
			lo = s->v[a].lo;
		if (s->v[j - 1].hi > hi)
			hi = s->v[j - 1].hi;
		s->v[a] = (struct span){lo, hi};
		memmove(s->v + a + 1, s->v + j, (s->n - j) * sizeof(*s->v));
		s->n -= j - a - 1;
		return;
	}
	grow(s, s->n + 1);
	memmove(s->v + a + 1, s->v + a, (s->n - a) * sizeof(*s->v));
	s->v[a] = (struct span){lo, hi};
	s->n++;
}

struct cur {
	const struct span *v, *end;
};

static void down(struct cur *h, uint32_t n, uint32_t i)
{
	struct cur x = h[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].v->lo < h[c].v->lo)
			c++;
		if (h[c].v->lo >= x.v->lo)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int order_kind;

static int cmp_order(const void *pa, const void *pb)
{
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct buf *a = &bufs[ia], *b = &bufs[ib];
	uint64_t la = a->end - a->start, lb = b->end - b->start;
	if (order_kind == 2 && a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (order_kind == 1 && la != lb)
		return la > lb ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (order_kind != 2 && la != lb)
		return la > lb ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

static uint32_t *rank_sec;

static int cmp_sec(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (load[a] != load[b])
		return load[a] > load[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The canonical cover of b's sections in a tree of `size` leaves: the
 * nodes whose ranges tile [t0, t1), into vs; returns their number. */
static uint32_t cover_nodes(const struct buf *b, uint32_t size, uint32_t *vs)
{
	uint32_t nv = 0;
	for (uint32_t l = b->t0 + size, h = b->t1 + size; l < h;
	     l >>= 1, h >>= 1) {
		if (l & 1)
			vs[nv++] = l++;
		if (h & 1)
			vs[nv++] = --h;
	}
	return nv;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: place_ref TRACE.csv size|length|breadth "
				"lowest|best\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	order_kind = !strcmp(argv[2], "length") ? 1
		     : !strcmp(argv[2], "breadth") ? 2
						   : 0;
	int best = !strcmp(argv[3], "best");
	char line[256];
	uint32_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long id, lo, hi, sz;
		if (sscanf(line, "%llu,%llu,%llu,%llu", &id, &lo, &hi, &sz) != 4)
			continue;
		if (sz == 0 || lo >= hi)
			continue;
		if (nbufs == cap) {
			cap = cap ? 2 * cap : 1024;
			bufs = xrealloc(bufs, cap * sizeof(*bufs));
		}
		bufs[nbufs++] = (struct buf){lo, hi, sz, 0, 0, 0};
	}
	fclose(f);
	uint32_t n = nbufs;
	uint64_t *tv = xrealloc(NULL, 2 * (size_t)n * sizeof(*tv));
	for (uint32_t i = 0; i < n; i++) {
		tv[2 * i] = bufs[i].start;
		tv[2 * i + 1] = bufs[i].end;
	}
	qsort(tv, 2 * (size_t)n, sizeof(*tv), cmp_u64);
	uint32_t m = 0;
	for (uint32_t i = 0; i < 2 * n; i++)
		if (!m || tv[m - 1] != tv[i])
			tv[m++] = tv[i];
	uint32_t S = m ? m - 1 : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t *p = bsearch(&bufs[i].start, tv, m, sizeof(*tv),
				      cmp_u64);
		uint64_t *q = bsearch(&bufs[i].end, tv, m, sizeof(*tv),
				      cmp_u64);
		bufs[i].t0 = (uint32_t)(p - tv);
		bufs[i].t1 = (uint32_t)(q - tv);
	}
	if (order_kind == 2) {
		/* Rank of the broadest section each buffer spans (naive min
		 * over a sparse table of section ranks). */
		load = calloc((size_t)S + 1, sizeof(*load));
		uint32_t *secs = xrealloc(NULL, ((size_t)S + 1) * sizeof(*secs));
		for (uint32_t i = 0; i < n; i++) {
			load[bufs[i].t0] += bufs[i].size;
			load[bufs[i].t1] -= bufs[i].size;
		}
		for (uint32_t s = 1; s < S; s++)
			load[s] += load[s - 1];
		for (uint32_t s = 0; s < S; s++)
			secs[s] = s;
		qsort(secs, S, sizeof(*secs), cmp_sec);
		uint32_t lv = 1;
		while ((1u << lv) <= S)
			lv++;
		rank_sec = xrealloc(NULL, (size_t)lv * (S + 1) * sizeof(uint32_t));
		for (uint32_t k = 0; k < S; k++)
			rank_sec[secs[k]] = k;
		for (uint32_t l = 1; l < lv; l++)
			for (uint32_t s = 0; s + (1u << l) <= S; s++) {
				uint32_t a = rank_sec[(size_t)(l - 1) * (S + 1) + s];
				uint32_t b = rank_sec[(size_t)(l - 1) * (S + 1) + s +
						      (1u << (l - 1))];
				rank_sec[(size_t)l * (S + 1) + s] = a < b ? a : b;
			}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t a = bufs[i].t0, b = bufs[i].t1, l = 0;
			while ((2u << l) <= b - a)
				l++;
			uint32_t x = rank_sec[(size_t)l * (S + 1) + a];
			uint32_t y = rank_sec[(size_t)l * (S + 1) + b - (1u << l)];
			bufs[i].key = x < y ? x : y;
		}
		free(secs);
	}
	uint32_t *ord = xrealloc(NULL, ((size_t)n + 1) * sizeof(*ord));
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	qsort(ord, n, sizeof(*ord), cmp_order);

	uint32_t size = 1;
	while (size < S)
		size <<= 1;
	struct set *cover = calloc(2 * (size_t)size, sizeof(*cover));
	struct set *all = calloc(2 * (size_t)size, sizeof(*all));
	uint32_t *seen = calloc(2 * (size_t)size, sizeof(*seen));
	struct cur *heap = xrealloc(NULL, 256 * sizeof(*heap));
	uint32_t hcap = 256, stamp = 0;
	if (!cover || !all || !seen) {
		fprintf(stderr, "place_ref: out of memory\n");
		return 2;
	}
	double t_start = now();
	uint64_t peak = 0;
	uint32_t vs[128]; /* a canonical cover: at most 2 per level */
	for (uint32_t j = 0; j < n; j++) {
		const struct buf *b = &bufs[ord[j]];
		uint32_t k = 0;
		stamp++;
		uint32_t nc = cover_nodes(b, size, vs);
		for (uint32_t e = 0; e < nc; e++) {
			uint32_t v = vs[e];
			if (k + 64 > hcap) {
				hcap *= 2;
				heap = xrealloc(heap, hcap * sizeof(*heap));
			}
			if (all[v].n)
				heap[k++] = (struct cur){all[v].v,
							 all[v].v + all[v].n};
			for (uint32_t a = v >> 1; a >= 1 && seen[a] != stamp;
			     a >>= 1) {
				seen[a] = stamp;
				if (cover[a].n)
					heap[k++] = (struct cur){
						cover[a].v, cover[a].v + cover[a].n};
			}
		}
		for (uint32_t i = k / 2; i-- > 0;)
			down(heap, k, i);
		uint64_t cand = 0, at = UINT64_MAX, gap_best = UINT64_MAX;
		while (k) {
			const struct span *s = heap[0].v++;
			if (heap[0].v == heap[0].end)
				heap[0] = heap[--k];
			if (k)
				down(heap, k, 0);
			if (s->lo > cand && s->lo - cand >= b->size) {
				uint64_t gap = s->lo - cand;
				if (!best) {
					at = cand;
					break;
				}
				if (gap < gap_best) {
					gap_best = gap;
					at = cand;
				}
			}
			if (s->hi > cand)
				cand = s->hi;
		}
		if (at == UINT64_MAX)
			at = cand;
		uint64_t hi = at + b->size;
		if (hi > peak)
			peak = hi;
		stamp++;
		for (uint32_t e = 0; e < nc; e++) {
			uint32_t v = vs[e];
			unite(&cover[v], at, hi);
			for (uint32_t a = v; a >= 1 && seen[a] != stamp; a >>= 1) {
				seen[a] = stamp;
				unite(&all[a], at, hi);
			}
		}
	}
	printf("%llu %.3f\n", (unsigned long long)peak, now() - t_start);
	return 0;
}
