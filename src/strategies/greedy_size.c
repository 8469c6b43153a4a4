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
#include <string.h>

#include "core/internal.h"
#include "strategies/strategy.h"

struct tree {
	const struct as_trace *t;
	uint32_t *by_start;     /* buffer indices sorted by start */
	uint64_t *maxend;       /* per position: max end placed in subtree */
	uint8_t *placed;        /* per position */
	const uint64_t *offset; /* the plan's offsets */
	uint32_t n;
};

static bool by_start(uint32_t ia, uint32_t ib, const void *ctx)
{
	const struct as_buffer *a = &((const struct as_trace *)ctx)->buffers[ia];
	const struct as_buffer *b = &((const struct as_trace *)ctx)->buffers[ib];
	return a->start < b->start;
}

static bool by_space(uint32_t ia, uint32_t ib, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[ia].space < t->buffers[ib].space;
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

/* Address ranges of the placed buffers that share time with a new one. */
struct range {
	uint64_t lo, hi;
};

struct hits {
	struct range *v;
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
			struct range *n = realloc(h->v, cap * sizeof(*n));
			if (!n)
				return AS_ENOMEM;
			h->v = n;
			h->cap = cap;
		}
		uint64_t off = tr->offset[tr->by_start[mid]];
		h->v[h->n++] = (struct range){off, off + b->size};
	}
	return query(tr, mid + 1, hi, s, e, h);
}

/* Min-heap of ranges by their low end. */
static void sift_down(struct range *v, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && v[l].lo < v[m].lo)
			m = l;
		if (l + 1 < n && v[l + 1].lo < v[m].lo)
			m = l + 1;
		if (m == i)
			return;
		struct range x = v[i];
		v[i] = v[m];
		v[m] = x;
		i = m;
	}
}

/* x rounded up to a power-of-two alignment; false when it overflows. */
static bool align_up(uint64_t x, uint64_t align, uint64_t *out)
{
	if (x > UINT64_MAX - (align - 1))
		return false;
	*out = (x + align - 1) & ~(align - 1);
	return true;
}

/*
 * The lowest aligned offset where `size` bytes fit between the ranges, or
 * false when no offset below 2^64 does. Ranges come off a heap in address
 * order, and only until the gap is found: O(k + m log k) for the m ranges
 * below the answer.
 */
static bool first_fit(struct range *v, uint32_t n, uint64_t size,
		      uint64_t align, uint64_t *out)
{
	uint64_t cand = 0, at;
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(v, n, i);
	while (n > 0) {
		if (!align_up(cand, align, &at) || at > UINT64_MAX - size)
			return false;
		if (at + size <= v[0].lo)
			break;
		if (v[0].hi > cand)
			cand = v[0].hi;
		v[0] = v[--n];
		sift_down(v, n, 0);
	}
	if (!align_up(cand, align, &at) || at > UINT64_MAX - size)
		return false;
	*out = at;
	return true;
}

/* Place the n buffers ids[] of one space; tr's arrays have room for n. */
static int place_space(struct tree *tr, struct as_plan *p, uint32_t *ids,
		       uint32_t n, uint32_t *pos, struct hits *h)
{
	const struct as_trace *t = tr->t;
	memcpy(tr->by_start, ids, n * sizeof(*ids));
	memset(tr->maxend, 0, n * sizeof(*tr->maxend));
	memset(tr->placed, 0, n);
	tr->n = n;
	if (as_sort_u32(tr->by_start, n, by_start, t) ||
	    as_sort_u32(ids, n, by_size, t))
		return AS_ENOMEM;
	for (uint32_t k = 0; k < n; k++)
		pos[tr->by_start[k]] = k;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = ids[k];
		const struct as_buffer *b = &t->buffers[i];
		uint64_t align = as_buffer_align(b);
		h->n = 0;
		int err = query(tr, 0, n, b->start, b->end, h);
		if (err)
			return err;
		/* Beyond 2^64 the allocation fails, as an online one would. */
		if (first_fit(h->v, h->n, b->size, align, &p->offset[i]))
			mark(tr, 0, n, pos[i]);
	}
	return AS_OK;
}

/* Each address space is planned on its own. */
static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	uint32_t n = 0;
	size_t sz = (size_t)t->nbuffers + 1;
	struct tree tr = {.t = t, .offset = p->offset};
	uint32_t *ids = malloc(sz * sizeof(*ids));
	uint32_t *pos = malloc(sz * sizeof(*pos));
	tr.by_start = malloc(sz * sizeof(*tr.by_start));
	tr.maxend = malloc(sz * sizeof(*tr.maxend));
	tr.placed = malloc(sz);
	struct hits h = {0};
	int err = AS_ENOMEM;
	if (!ids || !pos || !tr.by_start || !tr.maxend || !tr.placed)
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].alias_of == AS_NONE && t->buffers[i].size)
			ids[n++] = i;
	err = as_sort_u32(ids, n, by_space, t);
	for (uint32_t lo = 0, hi; err == AS_OK && lo < n; lo = hi) {
		uint16_t space = t->buffers[ids[lo]].space;
		for (hi = lo; hi < n && t->buffers[ids[hi]].space == space;)
			hi++;
		err = place_space(&tr, p, ids + lo, hi - lo, pos, &h);
	}
out:
	free(ids);
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
