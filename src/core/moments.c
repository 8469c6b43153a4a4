/*
 * Moments: when a plan peaks and when the trace has the most bytes live.
 *
 * The peak moment of a plan (in one space) is, within the lives of the
 * buffers that reach the plan's top address, the time with the most bytes
 * live: the moment that pushes the plan up, not the first time the top is
 * touched (often the start of a long-lived buffer). The lower-bound moment
 * is a time with the most bytes live in the trace. Both are one sweep over
 * the sorted starts and ends: O(n log n). A buffer is live over
 * [start, end); aliases take no bytes of their own. The renderer, replay's
 * JSON and explain take them from here, so they all name the same moment.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct key {
	uint64_t t;
	uint32_t i;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

static bool drawable(const struct as_buffer *b)
{
	return b->size > 0 && b->end > b->start;
}

int as_order_build(const struct as_trace *t, struct as_order *o)
{
	memset(o, 0, sizeof(*o));
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		n += drawable(&t->buffers[i]);
	struct key *k = malloc(sizeof(*k) * ((size_t)n + 1));
	o->by_start = malloc(sizeof(uint32_t) * ((size_t)n + 1));
	o->by_end = malloc(sizeof(uint32_t) * ((size_t)n + 1));
	if (!k || !o->by_start || !o->by_end) {
		free(k);
		as_order_free(o);
		return AS_ENOMEM;
	}
	o->t = t;
	o->n = n;
	/* The trace's events are already in time order: take the order from
	 * them when they hold every drawable buffer once each way, sorted. */
	uint32_t ns = 0, ne = 0;
	bool sorted = true;
	for (uint32_t e = 0; e < t->nevents && sorted; e++) {
		const struct as_event *ev = &t->events[e];
		if (ev->kind != AS_EV_ALLOC && ev->kind != AS_EV_FREE)
			continue;
		uint32_t i = ev->arg;
		if (i >= t->nbuffers || !drawable(&t->buffers[i]))
			continue;
		if (ev->kind == AS_EV_ALLOC) {
			sorted = ns < n && (ns == 0 || t->buffers[o->by_start[ns - 1]]
								.start <=
							       t->buffers[i].start);
			if (sorted)
				o->by_start[ns++] = i;
		} else {
			sorted = ne < n && (ne == 0 || t->buffers[o->by_end[ne - 1]]
								.end <=
							       t->buffers[i].end);
			if (sorted)
				o->by_end[ne++] = i;
		}
	}
	if (sorted && ns == n && ne == n) {
		free(k);
		return AS_OK;
	}
	/* Times within 32 bits (event steps, most clocks): (time, index) packed
	 * in one word and radix-sorted; wider times by comparison. */
	bool narrow = t->end_time <= UINT32_MAX;
	uint64_t *w = (uint64_t *)k;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t m = 0;
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			if (!drawable(&t->buffers[i]))
				continue;
			uint64_t at = pass ? t->buffers[i].end
					   : t->buffers[i].start;
			if (narrow)
				w[m++] = at << 32 | i;
			else
				k[m++] = (struct key){at, i};
		}
		uint32_t *dst = pass ? o->by_end : o->by_start;
		if (narrow && as_sort_u64_from(w, n, 0) != AS_OK) {
			free(k);
			as_order_free(o);
			return AS_ENOMEM;
		}
		if (!narrow)
			qsort(k, n, sizeof(*k), cmp_key);
		for (uint32_t j = 0; j < n; j++)
			dst[j] = narrow ? (uint32_t)w[j] : k[j].i;
	}
	free(k);
	return AS_OK;
}

void as_order_free(struct as_order *o)
{
	free(o->by_start);
	free(o->by_end);
	memset(o, 0, sizeof(*o));
}

size_t as_order_edges(const struct as_order *o, const uint8_t *keep,
		   struct as_edge *out)
{
	const struct as_buffer *b = o->t->buffers;
	size_t m = 0;
	uint32_t s = 0, e = 0;
	while (s < o->n || e < o->n) {
		bool start = e >= o->n ||
			     (s < o->n && b[o->by_start[s]].start <
						  b[o->by_end[e]].end);
		uint32_t i = start ? o->by_start[s++] : o->by_end[e++];
		if (keep[i])
			out[m++] = (struct as_edge){start ? b[i].start : b[i].end,
						 i, start};
	}
	return m;
}

/*
 * Sweep the buffers with keep[i] set; at each distinct time the live
 * bytes (after every start and end there) count when top is NULL or a
 * buffer with top[i] set is live. Earliest time of the most bytes wins.
 */
static int sweep(const struct as_order *o, const uint8_t *keep,
		 const uint8_t *top, struct as_moment *out)
{
	const struct as_trace *t = o->t;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		n += keep[i] != 0;
	if (n == 0)
		return 1;
	struct as_edge *e = malloc(sizeof(*e) * 2 * (size_t)n);
	if (!e)
		return AS_ENOMEM;
	size_t m = as_order_edges(o, keep, e);
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

int as_plan_peak_moment(const struct as_trace *t, const struct as_plan *p,
			  int space, struct as_moment *out)
{
	if (!t || !p || !p->offset || !out)
		return AS_EINVAL;
	struct as_order o;
	int err = as_order_build(t, &o);
	if (!err)
		err = as_order_peak_moment(&o, p, space, out);
	as_order_free(&o);
	return err;
}

int as_order_peak_moment(const struct as_order *o, const struct as_plan *p, int space,
		struct as_moment *out)
{
	const struct as_trace *t = o->t;
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
	int err = first == AS_NONE ? 1 : sweep(o, keep, top, &m);
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

int as_trace_peak_moment(const struct as_trace *t, int space,
			   struct as_moment *out)
{
	if (!t || !out)
		return AS_EINVAL;
	struct as_order o;
	int err = as_order_build(t, &o);
	if (!err)
		err = as_order_bound_moment(&o, space, out);
	as_order_free(&o);
	return err;
}

int as_order_bound_moment(const struct as_order *o, int space, struct as_moment *out)
{
	const struct as_trace *t = o->t;
	uint8_t *keep = calloc((size_t)t->nbuffers + 1, 1);
	if (!keep)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		keep[i] = drawable(b) && b->alias_of == AS_NONE &&
			  (space < 0 || b->space == space);
	}
	struct as_moment m = {0};
	int err = sweep(o, keep, NULL, &m);
	if (err == AS_OK) {
		m.top_buffer = AS_NONE;
		m.top = m.live_bytes;
		*out = m;
	}
	free(keep);
	return err;
}
