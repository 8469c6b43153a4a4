/*
 * Sets of runs (placer.h, struct runs): sorted, disjoint address ranges,
 * touching ones merged, with the gap index of their blocks; the primitives
 * every set of the placer is kept with.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/placer.h"

static size_t runs_bytes(uint32_t cap)
{
	return (size_t)cap * sizeof(struct as_span) +
	       ((size_t)cap / AS_BLK + 2) * sizeof(uint64_t);
}

/* Room for `need` runs; false: no memory. The block maxima are redone. */
bool as_runs_grow(struct runs *ru, uint32_t need)
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
	as_runs_tail(ru)[0] = 0;
	return true;
}

/* The largest gap inside block b (b within the runs). */
uint64_t as_runs_block_max(struct runs *ru, uint32_t b)
{
	uint64_t *t = as_runs_tail(ru);
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

/* First run of ru with hi > x. */
uint32_t as_runs_find(const struct runs *ru, uint64_t x)
{
	return as_spans_above(as_runs_cv(ru), 0, ru->n, x);
}

bool as_runs_insert(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t k = as_runs_find(ru, lo);
	/* Runs before k end at or below lo; run k (if any) starts >= hi. */
	as_runs_dirty(ru, k ? k - 1 : 0);
	struct as_span *v = as_runs_v(ru);
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
		if (!as_runs_grow(ru, ru->n + 1))
			return false;
		v = as_runs_v(ru);
		memmove(v + k + 1, v + k, (ru->n - k) * sizeof(*v));
		v[k].lo = lo;
		v[k].hi = hi;
		ru->n++;
	}
	return true;
}

bool as_runs_remove(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t k = as_runs_find(ru, lo);
	struct as_span *v = as_runs_v(ru);
	if (k == ru->n || v[k].lo > lo || v[k].hi < hi)
		return true; /* not recorded: nothing to do */
	struct as_span r = v[k];
	as_runs_dirty(ru, k);
	if (r.lo < lo && r.hi > hi) {
		/* Split in two. */
		if (!as_runs_grow(ru, ru->n + 1))
			return false;
		v = as_runs_v(ru);
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
void as_runs_around(const struct runs *ru, uint64_t lo, uint64_t hi,
		    uint32_t *i, uint32_t *j)
{
	/* i: first run with hi >= lo; j: first run with lo > hi. */
	const struct as_span *v = as_runs_cv(ru);
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
bool as_runs_unite(struct runs *ru, uint64_t lo, uint64_t hi)
{
	uint32_t i, j;
	as_runs_around(ru, lo, hi, &i, &j);
	as_runs_dirty(ru, i);
	struct as_span *v = as_runs_v(ru);
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
	if (!as_runs_grow(ru, ru->n + 1))
		return false;
	v = as_runs_v(ru);
	memmove(v + i + 1, v + i, (ru->n - i) * sizeof(*v));
	v[i].lo = lo;
	v[i].hi = hi;
	ru->n++;
	return true;
}

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
void as_spans_sort(struct as_span *g, uint32_t n)
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
			as_spans_sort(g, left);
			g += left;
			n -= left;
		} else {
			as_spans_sort(g + left, n - left);
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

/* Merge sorted spans that overlap or touch, in place; how many are left. */
uint32_t as_spans_merge(struct as_span *g, uint32_t n)
{
	uint32_t m = 0;
	for (uint32_t j = 0; j < n; j++) {
		if (m && g[j].lo <= g[m - 1].hi) {
			if (g[j].hi > g[m - 1].hi)
				g[m - 1].hi = g[j].hi;
		} else {
			g[m++] = g[j];
		}
	}
	return m;
}

/* dst = x united with y (both sorted, disjoint runs); false: no memory. */
bool as_runs_unite_into(struct runs *dst, const struct runs *x,
			const struct runs *y)
{
	uint32_t need = (x ? x->n : 0) + y->n;
	if (!as_runs_grow(dst, need))
		return false;
	as_runs_dirty(dst, 0);
	struct as_span *d = as_runs_v(dst);
	const struct as_span *xv = x ? as_runs_cv(x) : NULL;
	const struct as_span *yv = as_runs_cv(y);
	if (x && y->n <= 8) {
		/* A copy and a few insertions beat the merge loop. */
		if (x->n)
			memcpy(d, xv, x->n * sizeof(*d));
		dst->n = x->n;
		for (uint32_t j = 0; j < y->n; j++)
			if (!as_runs_unite(dst, yv[j].lo, yv[j].hi))
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
