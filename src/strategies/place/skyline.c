/*
 * The skyline greedy of place.h (as_place_skyline).
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

/* ---- Skyline greedy ---- */

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
	size_t i = (*n)++; /* the caller made room */
	while (i > 0 && sky_less(&x, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static struct sky_item sky_pop(struct sky_item *h, size_t *n)
{
	struct sky_item top = h[0], x = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && sky_less(&h[c + 1], &h[c]))
			c++;
		if (!sky_less(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = x;
	return top;
}

uint64_t as_place_skyline(const struct as_problem *pb, const uint32_t *rank,
			  uint64_t *off, int *err)
{
	uint32_t n = pb->n;
	uint64_t pairs = as_problem_pairs(pb), peak = 0;
	uint32_t *ord = calloc((size_t)n + 1, sizeof(uint32_t));
	uint64_t *ovb = calloc((size_t)n + 1, sizeof(uint64_t));
	uint64_t *fill = calloc((size_t)n + 1, sizeof(uint64_t));
	uint64_t *x = calloc((size_t)n + 1, sizeof(uint64_t));
	uint8_t *placed = calloc((size_t)n + 1, 1);
	uint32_t *ov = NULL;
	struct sky_item *h = NULL;
	size_t nh = 0;
	*err = AS_ENOMEM;
	if (pairs > SIZE_MAX / 16 || !ord || !ovb || !fill || !x || !placed)
		goto out;
	ov = malloc((2 * pairs + 1) * sizeof(uint32_t));
	size_t hcap = (size_t)n + 1024;
	h = malloc(hcap * sizeof(*h));
	if (!ov || !h)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	if (as_sort_u32(ord, n, as_rect_by_t0, pb))
		goto out;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t p = 0; p < n; p++) {
			uint32_t i = ord[p];
			for (uint32_t q = p + 1;
			     q < n && pb->r[ord[q]].t0 < pb->r[i].t1; q++) {
				uint32_t j = ord[q];
				if (pass == 0) {
					ovb[i + 1]++;
					ovb[j + 1]++;
				} else {
					ov[ovb[i] + fill[i]++] = j;
					ov[ovb[j] + fill[j]++] = i;
				}
			}
		}
		if (pass == 0)
			for (uint32_t i = 0; i < n; i++)
				ovb[i + 1] += ovb[i];
	}
	for (uint32_t i = 0; i < n; i++) {
		struct sky_item it = {0, rank ? rank[i] : i, i};
		sky_push(h, &nh, it);
	}
	while (nh) {
		struct sky_item it = sky_pop(h, &nh);
		uint32_t j = it.j;
		uint64_t at;
		if (placed[j] || it.at != x[j])
			continue; /* placed, or a stale entry */
		const struct as_rect *r = &pb->r[j];
		if (!as_align_up(x[j], r->align_log2, &at) ||
		    at > UINT64_MAX - r->size) {
			*err = AS_OK;
			peak = UINT64_MAX;
			goto out;
		}
		placed[j] = 1;
		off[j] = at;
		uint64_t top = at + r->size;
		if (top > peak)
			peak = top;
		for (uint64_t e = ovb[j]; e < ovb[j + 1]; e++) {
			uint32_t k = ov[e];
			if (placed[k] || x[k] >= top)
				continue;
			x[k] = top;
			if (nh == hcap) {
				struct sky_item *nh2 =
					realloc(h, 2 * hcap * sizeof(*h));
				if (!nh2)
					goto out;
				h = nh2;
				hcap *= 2;
			}
			struct sky_item nx = {top, rank ? rank[k] : k, k};
			sky_push(h, &nh, nx);
		}
	}
	*err = AS_OK;
out:
	free(ord);
	free(ovb);
	free(fill);
	free(x);
	free(placed);
	free(ov);
	free(h);
	return *err ? 0 : peak;
}
