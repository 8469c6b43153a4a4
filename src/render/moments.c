/*
 * Moments: when a plan peaks and when the trace has the most bytes live.
 *
 * The peak moment of a plan (in one space) is, within the lives of the
 * buffers that reach the plan's top address, the time with the most bytes
 * live: the moment that pushes the plan up, not the first time the top is
 * touched (often the start of a long-lived buffer). The lower-bound moment
 * is a time with the most bytes live in the trace. Both are one sweep over
 * the sorted starts and ends: O(n log n). A buffer is live over
 * [start, end); aliases take no bytes of their own.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

struct edge {
	uint64_t t;
	uint32_t i;
	bool start;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->start != y->start)
		return x->start ? 1 : -1; /* ends first */
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Sweep the buffers with keep[i] set; at each distinct time the live
 * bytes (after every start and end there) count when top is NULL or a
 * buffer with top[i] set is live. Earliest time of the most bytes wins.
 */
static int sweep(const struct as_trace *t, const uint8_t *keep,
		 const uint8_t *top, struct as_moment *out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		n += keep[i] != 0;
	if (n == 0)
		return 1;
	struct edge *e = malloc(sizeof(*e) * 2 * (size_t)n);
	if (!e)
		return AS_ENOMEM;
	size_t m = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		if (!keep[i])
			continue;
		e[m++] = (struct edge){t->buffers[i].start, i, true};
		e[m++] = (struct edge){t->buffers[i].end, i, false};
	}
	qsort(e, m, sizeof(*e), cmp_edge);
	unsigned __int128 live = 0, best = 0;
	uint64_t nlive = 0, ntop = 0, best_n = 0, best_t = 0;
	bool found = false;
	for (size_t k = 0; k < m;) {
		uint64_t now = e[k].t;
		for (; k < m && e[k].t == now; k++) {
			uint32_t i = e[k].i;
			uint64_t sz = t->buffers[i].size;
			if (e[k].start) {
				live += sz;
				nlive++;
				ntop += top && top[i];
			} else {
				live -= sz;
				nlive--;
				ntop -= top && top[i];
			}
		}
		if ((top ? ntop > 0 : nlive > 0) && (!found || live > best)) {
			best = live;
			best_t = now;
			best_n = nlive;
			found = true;
		}
	}
	free(e);
	if (!found)
		return 1;
	out->time = best_t;
	out->live_bytes = best > UINT64_MAX ? UINT64_MAX : (uint64_t)best;
	out->live = best_n;
	return AS_OK;
}

static bool drawable(const struct as_buffer *b)
{
	return b->size > 0 && b->end > b->start;
}

int as_render_peak_moment(const struct as_trace *t, const struct as_plan *p,
			  int space, struct as_moment *out)
{
	if (!t || !p || !p->offset || !out)
		return AS_EINVAL;
	uint32_t nb = t->nbuffers < p->nbuffers ? t->nbuffers : p->nbuffers;
	uint8_t *keep = calloc((size_t)t->nbuffers + 1, 2);
	if (!keep)
		return AS_ENOMEM;
	uint8_t *top = keep + t->nbuffers + 1;
	uint64_t high = 0;
	uint32_t first = AS_NONE;
	for (uint32_t i = 0; i < nb; i++) {
		const struct as_buffer *b = &t->buffers[i];
		uint64_t off = p->offset[i];
		if (!drawable(b) || off == AS_NO_OFFSET ||
		    as_plan_alias_of(p, t, i) != AS_NONE ||
		    (space >= 0 && as_plan_space_of(p, t, i) != space))
			continue;
		keep[i] = 1;
		uint64_t e = off > UINT64_MAX - b->size ? UINT64_MAX
							: off + b->size;
		if (first == AS_NONE || e > high) {
			high = e;
			first = i;
		}
	}
	for (uint32_t i = 0; i < nb && first != AS_NONE; i++)
		top[i] = keep[i] && (p->offset[i] > UINT64_MAX - t->buffers[i].size
					     ? UINT64_MAX
					     : p->offset[i] + t->buffers[i].size) ==
					    high;
	struct as_moment m = {0};
	int err = first == AS_NONE ? 1 : sweep(t, keep, top, &m);
	if (err == AS_OK) {
		/* The top buffer live then (the first by index). */
		m.top_buffer = AS_NONE;
		for (uint32_t i = 0; i < nb && m.top_buffer == AS_NONE; i++)
			if (top[i] && t->buffers[i].start <= m.time &&
			    t->buffers[i].end > m.time)
				m.top_buffer = i;
		m.top = high;
		*out = m;
	}
	free(keep);
	return err;
}

int as_render_bound_moment(const struct as_trace *t, int space,
			   struct as_moment *out)
{
	if (!t || !out)
		return AS_EINVAL;
	uint8_t *keep = calloc((size_t)t->nbuffers + 1, 1);
	if (!keep)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		keep[i] = drawable(b) && b->alias_of == AS_NONE &&
			  (space < 0 || b->space == space);
	}
	struct as_moment m = {0};
	int err = sweep(t, keep, NULL, &m);
	if (err == AS_OK) {
		m.top_buffer = AS_NONE;
		m.top = m.live_bytes;
		*out = m;
	}
	free(keep);
	return err;
}
