/*
 * The static interval tree of itree.h.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/itree.h"
#include "core/internal.h"

int as_itree_reserve(struct as_itree *tr, uint32_t n)
{
	if (n <= tr->cap)
		return AS_OK;
	size_t c = n;
	void *p;
#define GROW(f)                                                    \
	do {                                                       \
		if (!(p = realloc(tr->f, c * sizeof(*tr->f))))     \
			return AS_ENOMEM;                          \
		tr->f = p;                                         \
	} while (0)
	GROW(start);
	GROW(end);
	GROW(lo);
	GROW(hi);
	GROW(by_start);
	GROW(pos);
	GROW(maxend);
	GROW(placed);
#undef GROW
	tr->cap = n;
	return AS_OK;
}

static bool by_start(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_itree *tr = ctx;
	return tr->start[a] < tr->start[b];
}

int as_itree_build(struct as_itree *tr, uint32_t n)
{
	tr->n = n;
	for (uint32_t k = 0; k < n; k++)
		tr->by_start[k] = k;
	if (as_sort_u32(tr->by_start, n, by_start, tr))
		return AS_ENOMEM;
	for (uint32_t k = 0; k < n; k++)
		tr->pos[tr->by_start[k]] = k;
	memset(tr->maxend, 0, (size_t)n * sizeof(*tr->maxend));
	memset(tr->placed, 0, n);
	return AS_OK;
}

/* Mark position pos placed and refresh maxend on the path to it. */
static void mark(struct as_itree *tr, uint32_t lo, uint32_t hi, uint32_t pos)
{
	uint32_t mid = lo + (hi - lo) / 2;
	if (pos == mid)
		tr->placed[mid] = 1;
	else if (pos < mid)
		mark(tr, lo, mid, pos);
	else
		mark(tr, mid + 1, hi, pos);
	uint64_t m = tr->placed[mid] ? tr->end[tr->by_start[mid]] : 0;
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

/* Collect the placed items whose lifetime meets [s, e). */
static int query(struct as_itree *tr, uint32_t lo, uint32_t hi, uint64_t s,
		 uint64_t e)
{
	if (lo >= hi)
		return AS_OK;
	uint32_t mid = lo + (hi - lo) / 2;
	if (tr->maxend[mid] <= s)
		return AS_OK;
	int err = query(tr, lo, mid, s, e);
	if (err)
		return err;
	uint32_t b = tr->by_start[mid];
	if (tr->start[b] >= e)
		return AS_OK; /* everything to the right starts later */
	if (tr->placed[mid] && tr->end[b] > s) {
		if (tr->nhits == tr->hitcap) {
			uint32_t cap = tr->hitcap ? tr->hitcap * 2 : 64;
			struct as_itree_hit *n =
				realloc(tr->hits, (size_t)cap * sizeof(*n));
			if (!n)
				return AS_ENOMEM;
			tr->hits = n;
			tr->hitcap = cap;
		}
		tr->hits[tr->nhits++] = (struct as_itree_hit){tr->lo[b],
							      tr->hi[b]};
	}
	return query(tr, mid + 1, hi, s, e);
}

/* Min-heap of ranges by their low end. */
static void sift_down(struct as_itree_hit *v, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && v[l].lo < v[m].lo)
			m = l;
		if (l + 1 < n && v[l + 1].lo < v[m].lo)
			m = l + 1;
		if (m == i)
			return;
		struct as_itree_hit x = v[i];
		v[i] = v[m];
		v[m] = x;
		i = m;
	}
}

/*
 * Ranges come off a heap in address order, and only until the gap is
 * found: O(k + m log k) for the m ranges below the answer.
 */
int as_itree_lowest(struct as_itree *tr, uint32_t k, uint64_t size,
		    uint8_t align_log2, uint64_t *off)
{
	tr->nhits = 0;
	int err = query(tr, 0, tr->n, tr->start[k], tr->end[k]);
	if (err)
		return err;
	struct as_itree_hit *v = tr->hits;
	uint32_t n = tr->nhits;
	uint64_t cand = 0, at;
	for (uint32_t i = n / 2; i-- > 0;)
		sift_down(v, n, i);
	while (n > 0) {
		if (!as_align_up(cand, align_log2, &at) || at > UINT64_MAX - size)
			return 0;
		if (at + size <= v[0].lo)
			break;
		if (v[0].hi > cand)
			cand = v[0].hi;
		v[0] = v[--n];
		sift_down(v, n, 0);
	}
	if (!as_align_up(cand, align_log2, &at) || at > UINT64_MAX - size)
		return 0;
	*off = at;
	return 1;
}

void as_itree_put(struct as_itree *tr, uint32_t k, uint64_t off,
		  uint64_t size)
{
	tr->lo[k] = off;
	tr->hi[k] = off + size;
	mark(tr, 0, tr->n, tr->pos[k]);
}

void as_itree_finish(struct as_itree *tr)
{
	free(tr->start);
	free(tr->end);
	free(tr->lo);
	free(tr->hi);
	free(tr->by_start);
	free(tr->pos);
	free(tr->maxend);
	free(tr->placed);
	free(tr->hits);
	memset(tr, 0, sizeof(*tr));
}
