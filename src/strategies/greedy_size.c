/*
 * `greedy-size`: the offline baseline. Buffers by size, largest first (ties:
 * longer lifetime, then trace order); each goes to the lowest offset where it
 * overlaps no placed buffer whose lifetime overlaps its own.
 *
 * The placed buffers sit in a static interval tree: all buffers sorted by
 * start form an implicit balanced tree over the sorted array, each node
 * keeping the largest end among the placed buffers below it. Finding the k
 * placed buffers that share time with a new one costs O(log n + k), so a
 * plan costs O(n log n + sum k log k) instead of O(n^2) over all pairs.
 */
#include <stdlib.h>

#include "strategy.h"

struct tree {
	const struct as_trace *t;
	uint32_t *by_start;     /* buffer indices sorted by start */
	uint64_t *maxend;       /* per position: max end placed in subtree */
	uint8_t *placed;        /* per position */
	uint32_t n;
};

static const struct as_trace *cmp_t;

static int cmp_start(const void *pa, const void *pb)
{
	const struct as_buffer *a = &cmp_t->buffers[*(const uint32_t *)pa];
	const struct as_buffer *b = &cmp_t->buffers[*(const uint32_t *)pb];
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (*(const uint32_t *)pa > *(const uint32_t *)pb) -
	       (*(const uint32_t *)pa < *(const uint32_t *)pb);
}

static int cmp_size(const void *pa, const void *pb)
{
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct as_buffer *a = &cmp_t->buffers[ia];
	const struct as_buffer *b = &cmp_t->buffers[ib];
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	uint64_t la = a->end - a->start, lb = b->end - b->start;
	if (la != lb)
		return la > lb ? -1 : 1;
	return (ia > ib) - (ia < ib);
}

/* Mark position pos placed and refresh maxend on the path to it. */
static uint64_t mark(struct tree *tr, uint32_t lo, uint32_t hi, uint32_t pos)
{
	uint32_t mid = lo + (hi - lo) / 2;
	if (pos == mid)
		tr->placed[mid] = 1;
	else if (pos < mid)
		mark(tr, lo, mid, pos);
	else
		mark(tr, mid + 1, hi, pos);
	uint64_t m = tr->placed[mid] ? tr->t->buffers[tr->by_start[mid]].end
				     : 0;
	if (lo < mid) {
		uint64_t l = tr->maxend[lo + (mid - lo) / 2];
		m = l > m ? l : m;
	}
	if (mid + 1 < hi) {
		uint64_t r = tr->maxend[mid + 1 + (hi - mid - 1) / 2];
		m = r > m ? r : m;
	}
	tr->maxend[mid] = m;
	return m;
}

struct hits {
	uint32_t *v;
	uint32_t n, cap;
};

/* Collect placed buffers whose lifetime meets [s, e). */
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
	const struct as_buffer *b = &tr->t->buffers[tr->by_start[mid]];
	if (b->start >= e)
		return AS_OK; /* everything to the right starts later */
	if (tr->placed[mid] && b->end > s) {
		if (h->n == h->cap) {
			uint32_t cap = h->cap ? h->cap * 2 : 64;
			uint32_t *n = realloc(h->v, cap * sizeof(*n));
			if (!n)
				return AS_ENOMEM;
			h->v = n;
			h->cap = cap;
		}
		h->v[h->n++] = tr->by_start[mid];
	}
	return query(tr, mid + 1, hi, s, e, h);
}

static const uint64_t *cmp_off;

static int cmp_offset(const void *pa, const void *pb)
{
	uint64_t a = cmp_off[*(const uint32_t *)pa];
	uint64_t b = cmp_off[*(const uint32_t *)pb];
	return (a > b) - (a < b);
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	uint32_t n = 0;
	size_t sz = (size_t)t->nbuffers + 1;
	struct tree tr = {.t = t};
	uint32_t *order = malloc(sz * sizeof(*order));
	uint32_t *pos = malloc(sz * sizeof(*pos));
	tr.by_start = malloc(sz * sizeof(*tr.by_start));
	tr.maxend = calloc(sz, sizeof(*tr.maxend));
	tr.placed = calloc(sz, 1);
	struct hits h = {0};
	int err = AS_ENOMEM;
	if (!order || !pos || !tr.by_start || !tr.maxend || !tr.placed)
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].alias_of == AS_NONE && t->buffers[i].size)
			order[n++] = i;
	for (uint32_t i = 0; i < n; i++)
		tr.by_start[i] = order[i];
	tr.n = n;
	cmp_t = t;
	qsort(tr.by_start, n, sizeof(uint32_t), cmp_start);
	qsort(order, n, sizeof(uint32_t), cmp_size);
	for (uint32_t k = 0; k < n; k++)
		pos[tr.by_start[k]] = k;
	cmp_off = p->offset;
	err = AS_OK;
	for (uint32_t k = 0; k < n && err == AS_OK; k++) {
		uint32_t i = order[k];
		const struct as_buffer *b = &t->buffers[i];
		uint64_t align = as_buffer_align(b), cand = 0;
		h.n = 0;
		err = query(&tr, 0, n, b->start, b->end, &h);
		if (err)
			break;
		qsort(h.v, h.n, sizeof(uint32_t), cmp_offset);
		for (uint32_t j = 0; j < h.n; j++) {
			uint64_t at = (cand + align - 1) & ~(align - 1);
			uint64_t jo = p->offset[h.v[j]];
			if (at + b->size <= jo)
				break;
			uint64_t top = jo + t->buffers[h.v[j]].size;
			if (top > cand)
				cand = top;
		}
		cand = (cand + align - 1) & ~(align - 1);
		p->offset[i] = cand;
		mark(&tr, 0, n, pos[i]);
	}
out:
	free(order);
	free(pos);
	free(tr.by_start);
	free(tr.maxend);
	free(tr.placed);
	free(h.v);
	return err;
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_greedy_size = {
	.info = {
		.name = "greedy-size",
		.summary = "offline baseline: largest first, lowest offset "
			   "that fits",
		.online = false,
		.options = options,
	},
	.plan = plan,
};
