/*
 * Step functions of time (struct as_curve): bytes live, a plan's top
 * address, bytes reserved. Built once from points in time order (equal
 * times and runs of equal values merged), then read at a time or as the
 * greatest value over a range through the maxima of blocks of
 * AS_CURVE_BLOCK points. Memory over time draws them; explain reads the
 * bytes live at and around annotation stages from them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void as_curve_free(struct as_curve *c)
{
	if (!c)
		return;
	free(c->t);
	free(c->v);
	free(c->bmax);
	memset(c, 0, sizeof(*c));
}

int as_curve_alloc(struct as_curve *c, size_t n)
{
	memset(c, 0, sizeof(*c));
	c->t = malloc(sizeof(uint64_t) * (n + 1));
	c->v = malloc(sizeof(uint64_t) * (n + 1));
	if (!c->t || !c->v) {
		as_curve_free(c);
		return AS_ENOMEM;
	}
	return AS_OK;
}

void as_curve_put(struct as_curve *c, uint64_t t, uint64_t v)
{
	if (c->n && c->t[c->n - 1] == t) {
		c->v[c->n - 1] = v;
		if (c->n >= 2 && c->v[c->n - 2] == v)
			c->n--;
		return;
	}
	if (c->n && c->v[c->n - 1] == v)
		return;
	c->t[c->n] = t;
	c->v[c->n++] = v;
}

int as_curve_finish(struct as_curve *c)
{
	c->nb = (c->n + AS_CURVE_BLOCK - 1) / AS_CURVE_BLOCK;
	c->bmax = malloc(sizeof(uint64_t) * ((size_t)c->nb + 1));
	if (!c->bmax)
		return AS_ENOMEM;
	c->vmax = 0;
	for (uint32_t b = 0; b < c->nb; b++) {
		uint64_t m = 0;
		uint32_t e = (b + 1) * AS_CURVE_BLOCK < c->n
				     ? (b + 1) * AS_CURVE_BLOCK
				     : c->n;
		for (uint32_t k = b * AS_CURVE_BLOCK; k < e; k++)
			m = c->v[k] > m ? c->v[k] : m;
		c->bmax[b] = m;
		c->vmax = m > c->vmax ? m : c->vmax;
	}
	return AS_OK;
}

uint32_t as_curve_index(const struct as_curve *c, uint64_t t)
{
	uint32_t lo = 0, hi = c->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t as_curve_at(const struct as_curve *c, uint64_t t)
{
	uint32_t k = as_curve_index(c, t);
	return k > 0 ? c->v[k - 1] : 0;
}

uint64_t as_curve_max(const struct as_curve *c, uint32_t lo, uint32_t hi,
		      uint32_t *at)
{
	const uint32_t B = AS_CURVE_BLOCK;
	*at = hi;
	if (lo >= hi)
		return 0;
	/* The greatest value, whole blocks read from their maxima. */
	uint64_t best = c->v[lo];
	for (uint32_t k = lo; k < hi;) {
		uint64_t v;
		if (k % B == 0 && k + B <= hi) {
			v = c->bmax[k / B];
			k += B;
		} else {
			v = c->v[k++];
		}
		best = v > best ? v : best;
	}
	/* The first point that has it: blocks below it are skipped. */
	for (uint32_t k = lo; k < hi;) {
		if (k % B == 0 && k + B <= hi && c->bmax[k / B] < best) {
			k += B;
		} else if (c->v[k] == best) {
			*at = k;
			break;
		} else {
			k++;
		}
	}
	return best;
}
