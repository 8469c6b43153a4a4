/*
 * The skyline greedy of place.h (as_place_skyline).
 *
 * The skyline of a section is the highest top among the placed rectangles
 * covering it; a rectangle's skyline offset is the highest skyline under
 * its lifetime. Placing a rectangle raises the skyline under it to its top
 * (which is above everything there), so the skyline only rises: a heap
 * keyed by offsets computed earlier holds lower bounds. The minimum is
 * re-read from the skyline when popped; when it has risen the rectangle
 * goes back with its new offset, else no other rectangle can come before
 * it and it is placed. That is the eager greedy's choice without a list of
 * overlapping pairs.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

/* ---- The skyline: range raise and range maximum over sections ---- */

/*
 * A segment tree over sections, bottom up, no push-down: leaf N + t is
 * section t; tag[v] is the highest value raised over the whole range of
 * node v, max[v] the highest value anywhere in it (tags below included).
 * Raises only go up, so they commute, and a tag on an ancestor of a
 * section in a range is a value inside the range.
 */
struct sky_tree {
	uint64_t *tag, *max;
	size_t N;
};

static void raise_range(struct sky_tree *st, size_t a, size_t b, uint64_t x)
{
	size_t l = a + st->N, r = b + st->N;
	for (; l < r; l >>= 1, r >>= 1) {
		if (l & 1) {
			st->tag[l] = x > st->tag[l] ? x : st->tag[l];
			st->max[l] = x > st->max[l] ? x : st->max[l];
			l++;
		}
		if (r & 1) {
			r--;
			st->tag[r] = x > st->tag[r] ? x : st->tag[r];
			st->max[r] = x > st->max[r] ? x : st->max[r];
		}
	}
	for (size_t v = (a + st->N) >> 1; v; v >>= 1)
		st->max[v] = x > st->max[v] ? x : st->max[v];
	for (size_t v = (b - 1 + st->N) >> 1; v; v >>= 1)
		st->max[v] = x > st->max[v] ? x : st->max[v];
}

static uint64_t range_max(const struct sky_tree *st, size_t a, size_t b)
{
	uint64_t m = 0;
	size_t l = a + st->N, r = b + st->N;
	for (; l < r; l >>= 1, r >>= 1) {
		if (l & 1) {
			m = st->max[l] > m ? st->max[l] : m;
			l++;
		}
		if (r & 1) {
			r--;
			m = st->max[r] > m ? st->max[r] : m;
		}
	}
	for (size_t v = (a + st->N) >> 1; v; v >>= 1)
		m = st->tag[v] > m ? st->tag[v] : m;
	for (size_t v = (b - 1 + st->N) >> 1; v; v >>= 1)
		m = st->tag[v] > m ? st->tag[v] : m;
	return m;
}

/* ---- The heap of unplaced rectangles, by (offset bound, rank) ---- */

struct sky_item {
	uint64_t at;
	uint32_t rank, j;
};

static bool sky_less(const struct sky_item *a, const struct sky_item *b)
{
	return a->at < b->at || (a->at == b->at && a->rank < b->rank);
}

static void sky_push(struct sky_item *h, size_t *n, struct sky_item x)
{
	size_t i = (*n)++; /* the heap holds each rectangle once */
	while (i > 0 && sky_less(&x, &h[(i - 1) / 4])) {
		h[i] = h[(i - 1) / 4];
		i = (i - 1) / 4;
	}
	h[i] = x;
}

/*
 * Put x at the root (replacing it) and let it sink to its place. The heap
 * is 4-ary: half the depth of a binary one, for the sinks that are most of
 * the greedy's time.
 */
static void sky_sink(struct sky_item *h, size_t n, struct sky_item x)
{
	size_t i = 0;
	for (;;) {
		size_t c = 4 * i + 1, end = c + 4 < n ? c + 4 : n;
		if (c >= n)
			break;
		size_t m = c;
		for (size_t k = c + 1; k < end; k++)
			if (sky_less(&h[k], &h[m]))
				m = k;
		if (!sky_less(&h[m], &x))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = x;
}

uint64_t as_place_skyline(const struct as_problem *pb, const uint32_t *rank,
			  const struct as_budget *budget, double deadline,
			  uint64_t *off, int *err)
{
	uint32_t n = pb->n;
	size_t N = 1;
	while (N < pb->nsections)
		N *= 2;
	struct sky_tree st = {
		.tag = calloc(2 * (size_t)N, sizeof(uint64_t)),
		.max = calloc(2 * (size_t)N, sizeof(uint64_t)),
		.N = N,
	};
	struct sky_item *h = malloc(((size_t)n + 1) * sizeof(*h));
	size_t nh = 0;
	uint64_t peak = 0, pops = 0;
	*err = AS_ENOMEM;
	if (!st.tag || !st.max || !h)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		struct sky_item it = {0, rank ? rank[i] : i, i};
		sky_push(h, &nh, it);
	}
	while (nh) {
		if (++pops % 4096 == 0 && as_budget_past(budget, deadline)) {
			*err = as_budget_canceled(budget) ? AS_ECANCELED
							  : AS_ELIMIT;
			goto out;
		}
		struct sky_item it = h[0];
		const struct as_rect *r = &pb->r[it.j];
		uint64_t x = range_max(&st, r->t0, r->t1), at;
		if (x > it.at) {
			it.at = x; /* the skyline rose under it since */
			sky_sink(h, nh, it);
			continue;
		}
		if (--nh)
			sky_sink(h, nh, h[nh]);
		if (!as_align_up(x, r->align_log2, &at) ||
		    at > UINT64_MAX - r->size) {
			*err = AS_OK;
			peak = UINT64_MAX;
			goto out;
		}
		off[it.j] = at;
		uint64_t top = at + r->size;
		if (top > peak)
			peak = top;
		raise_range(&st, r->t0, r->t1, top);
	}
	*err = AS_OK;
out:
	free(st.tag);
	free(st.max);
	free(h);
	return *err ? 0 : peak;
}
