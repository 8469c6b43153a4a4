/*
 * Per-core placement for the numa strategies (numa_place.h).
 *
 * The placed items sit in a static interval tree: all items sorted by start
 * form an implicit balanced tree over the sorted array (the node of range
 * [lo, hi) is its middle), each node keeping the largest end among the
 * placed items below it. Invariant: maxend[mid] is the largest end of a
 * placed item in [lo, hi), 0 when none is placed.
 */
#include <stdlib.h>

#include "allocscope/numa.h"
#include "strategies/numa_place.h"

struct by_size {
	uint64_t size, len;
	uint32_t idx;
};

struct by_start {
	uint64_t start;
	uint32_t idx;
};

struct hit {
	uint64_t off, top;
};

static int cmp_size(const void *pa, const void *pb)
{
	const struct by_size *a = pa, *b = pb;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->len != b->len)
		return a->len > b->len ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_start(const void *pa, const void *pb)
{
	const struct by_start *a = pa, *b = pb;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_hit(const void *pa, const void *pb)
{
	const struct hit *a = pa, *b = pb;
	return (a->off > b->off) - (a->off < b->off);
}

struct tree {
	const struct numa_item *it;
	const struct by_start *bs;
	uint64_t *maxend;
	uint8_t *placed;
};

static void mark(struct tree *tr, uint32_t lo, uint32_t hi, uint32_t pos)
{
	uint32_t mid = lo + (hi - lo) / 2;
	if (pos == mid)
		tr->placed[mid] = 1;
	else if (pos < mid)
		mark(tr, lo, mid, pos);
	else
		mark(tr, mid + 1, hi, pos);
	uint64_t m = tr->placed[mid] ? tr->it[tr->bs[mid].idx].end : 0;
	if (lo < mid) {
		uint64_t l = tr->maxend[lo + (mid - lo) / 2];
		m = l > m ? l : m;
	}
	if (mid + 1 < hi) {
		uint64_t r = tr->maxend[mid + 1 + (hi - mid - 1) / 2];
		m = r > m ? r : m;
	}
	tr->maxend[mid] = m;
}

struct hits {
	struct hit *v;
	uint32_t n, cap;
};

/* Collect the placed items whose lifetime meets [s, e). */
static int query(const struct tree *tr, uint32_t lo, uint32_t hi, uint64_t s,
		 uint64_t e, struct hits *h)
{
	if (lo >= hi)
		return AS_OK;
	uint32_t mid = lo + (hi - lo) / 2;
	if (tr->maxend[mid] <= s)
		return AS_OK;
	int err = query(tr, lo, mid, s, e, h);
	if (err)
		return err;
	const struct numa_item *b = &tr->it[tr->bs[mid].idx];
	if (b->start >= e)
		return AS_OK; /* everything to the right starts later */
	if (tr->placed[mid] && b->end > s) {
		if (h->n == h->cap) {
			uint32_t cap = h->cap ? h->cap * 2 : 64;
			struct hit *n = realloc(h->v, cap * sizeof(*n));
			if (!n)
				return AS_ENOMEM;
			h->v = n;
			h->cap = cap;
		}
		h->v[h->n++] = (struct hit){b->offset, b->offset + b->size};
	}
	return query(tr, mid + 1, hi, s, e, h);
}

static int reserve(struct numa_ws *ws, uint32_t n)
{
	if (n <= ws->cap)
		return AS_OK;
	uint32_t cap = ws->cap ? ws->cap : 16;
	while (cap < n)
		cap = cap > UINT32_MAX / 2 ? n : cap * 2;
	void *o = realloc(ws->order, (size_t)cap * sizeof(struct by_size));
	if (o)
		ws->order = o;
	void *s = realloc(ws->by_start, (size_t)cap * sizeof(struct by_start));
	if (s)
		ws->by_start = s;
	uint64_t *m = realloc(ws->maxend, (size_t)cap * sizeof(*m));
	if (m)
		ws->maxend = m;
	uint32_t *p = realloc(ws->pos, (size_t)cap * sizeof(*p));
	if (p)
		ws->pos = p;
	uint8_t *pl = realloc(ws->placed, cap);
	if (pl)
		ws->placed = pl;
	if (!o || !s || !m || !p || !pl)
		return AS_ENOMEM;
	ws->cap = cap;
	return AS_OK;
}

int numa_place(struct numa_ws *ws, struct numa_item *items, uint32_t n,
	       uint64_t *peak)
{
	int err = reserve(ws, n);
	if (err)
		return err;
	struct by_size *order = ws->order;
	struct by_start *bs = ws->by_start;
	struct tree tr = {items, bs, ws->maxend, ws->placed};
	struct hits h = {ws->hits, 0, ws->hitcap};
	uint32_t m = 0;
	uint64_t top = 0;
	for (uint32_t i = 0; i < n; i++) {
		items[i].offset = 0;
		if (items[i].size == 0)
			continue;
		order[m] = (struct by_size){items[i].size,
					    items[i].end - items[i].start, i};
		bs[m] = (struct by_start){items[i].start, i};
		m++;
	}
	qsort(order, m, sizeof(*order), cmp_size);
	qsort(bs, m, sizeof(*bs), cmp_start);
	for (uint32_t k = 0; k < m; k++) {
		ws->pos[bs[k].idx] = k;
		tr.maxend[k] = 0;
		tr.placed[k] = 0;
	}
	for (uint32_t k = 0; k < m && err == AS_OK; k++) {
		struct numa_item *b = &items[order[k].idx];
		uint64_t align = b->align, cand = 0;
		h.n = 0;
		if ((err = query(&tr, 0, m, b->start, b->end, &h)))
			break;
		if (h.n > 1)
			qsort(h.v, h.n, sizeof(*h.v), cmp_hit);
		for (uint32_t j = 0; j < h.n; j++) {
			uint64_t at = (cand + align - 1) & ~(align - 1);
			if (at + b->size <= h.v[j].off)
				break;
			if (h.v[j].top > cand)
				cand = h.v[j].top;
		}
		b->offset = (cand + align - 1) & ~(align - 1);
		if (b->offset + b->size > top)
			top = b->offset + b->size;
		mark(&tr, 0, m, ws->pos[order[k].idx]);
	}
	ws->hits = h.v;
	ws->hitcap = h.cap;
	*peak = top;
	return err;
}

void numa_ws_finish(struct numa_ws *ws)
{
	free(ws->order);
	free(ws->by_start);
	free(ws->hits);
	free(ws->maxend);
	free(ws->pos);
	free(ws->placed);
	*ws = (struct numa_ws){0};
}

int numa_want_spaces(const struct as_trace *t, struct as_plan *p)
{
	const struct as_numa *nm = t->numa;
	if (!p->space) {
		p->space = malloc(((size_t)p->nbuffers + 1) * sizeof(*p->space));
		if (!p->space)
			return AS_ENOMEM;
		for (uint32_t pi = 0; pi < nm->nparents; pi++) {
			const struct as_numa_parent *pa = &nm->parents[pi];
			uint16_t *sp = p->space + pa->first_block;
			for (uint32_t k = 0; k < pa->nsubtasks; k++) {
				uint16_t s = (uint16_t)(nm->first_space +
							nm->core[pa->first_sub +
								 k]);
				for (uint32_t e = 0; e < pa->nedges; e++)
					*sp++ = s;
			}
		}
	}
	return as_plan_want_spaces(p, t, t->nspaces);
}

int numa_core_stats(const struct as_trace *t, struct as_plan *p)
{
	const struct as_numa *nm = t->numa;
	uint64_t *peak = calloc((size_t)p->nspaces + 1, sizeof(*peak));
	if (!peak)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		uint64_t off = p->offset[i];
		uint16_t sp = as_plan_space_of(p, t, i);
		if (off == AS_NO_OFFSET || sp >= p->nspaces)
			continue;
		if (off + t->buffers[i].size > peak[sp])
			peak[sp] = off + t->buffers[i].size;
	}
	uint64_t max = 0, min = UINT64_MAX;
	double sum = 0, umax = 0, usum = 0;
	uint32_t ncap = 0;
	for (uint16_t c = 0; c < nm->ncores; c++) {
		uint16_t sp = (uint16_t)(nm->first_space + c);
		uint64_t pk = sp < p->nspaces ? peak[sp] : 0;
		uint64_t cap = p->space_capacity && sp < p->nspaces
				       ? p->space_capacity[sp]
				       : 0;
		max = pk > max ? pk : max;
		min = pk < min ? pk : min;
		sum += (double)pk;
		if (cap) {
			double u = (double)pk / (double)cap;
			umax = u > umax ? u : umax;
			usum += u;
			ncap++;
		}
	}
	free(peak);
	int err = as_plan_stat_int(p, "core_peak_max", max);
	if (!err)
		err = as_plan_stat_int(p, "core_peak_min", min);
	if (!err)
		err = as_plan_stat(p, "core_peak_mean", sum / nm->ncores);
	if (!err && ncap)
		err = as_plan_stat(p, "core_util_max", umax);
	if (!err && ncap)
		err = as_plan_stat(p, "core_util_mean", usum / ncap);
	return err;
}
