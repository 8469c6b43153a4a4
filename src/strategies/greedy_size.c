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

#include "sort.h"
#include "strategy.h"

struct tree {
	const struct as_trace *t;
	uint32_t *by_start;     /* buffer indices sorted by start */
	uint64_t *maxend;       /* per position: max end placed in subtree */
	uint8_t *placed;        /* per position */
	uint32_t n;
};

static bool by_start(uint32_t ia, uint32_t ib, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[ia].start < t->buffers[ib].start;
}

/* Size descending, then longer lifetime, then trace order (stable sort). */
static bool by_size(uint32_t ia, uint32_t ib, const void *ctx)
{
	const struct as_buffer *a = &((const struct as_trace *)ctx)->buffers[ia];
	const struct as_buffer *b = &((const struct as_trace *)ctx)->buffers[ib];
	if (a->size != b->size)
		return a->size > b->size;
	return a->end - a->start > b->end - b->start;
}

static bool by_offset(uint32_t ia, uint32_t ib, const void *ctx)
{
	const uint64_t *off = ctx;
	return off[ia] < off[ib];
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
	if (as_sort_u32(tr.by_start, n, by_start, t) ||
	    as_sort_u32(order, n, by_size, t)) {
		err = AS_ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < n; k++)
		pos[tr.by_start[k]] = k;
	err = AS_OK;
	for (uint32_t k = 0; k < n && err == AS_OK; k++) {
		uint32_t i = order[k];
		const struct as_buffer *b = &t->buffers[i];
		uint64_t align = as_buffer_align(b), cand = 0;
		h.n = 0;
		err = query(&tr, 0, n, b->start, b->end, &h);
		if (err)
			break;
		if ((err = as_sort_u32(h.v, h.n, by_offset, p->offset)))
			break;
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
