/*
 * Finishing a trace: the events of buffers with explicit lifetimes derived
 * in time order, the per-buffer arrays grown to every buffer, spaces and
 * aliases checked, then the trace handed over; and the check, for readers
 * of such buffers, that no name is live twice at once.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

static bool by_start(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[a].start < t->buffers[b].start;
}

static bool by_end(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[a].end < t->buffers[b].end;
}

static uint32_t start_key(uint32_t i, const void *ctx)
{
	return (uint32_t)((const struct as_trace *)ctx)->buffers[i].start;
}

static uint32_t end_key(uint32_t i, const void *ctx)
{
	return (uint32_t)((const struct as_trace *)ctx)->buffers[i].end;
}

/*
 * Indices 0..n-1 sorted stably by `less` (skipped when already in order):
 * by its 32-bit key when every time has one.
 */
static uint32_t *sorted_indices(const struct as_trace *t, as_less_fn less,
				as_key_fn key)
{
	uint32_t n = t->nbuffers;
	uint32_t *v = malloc(((size_t)n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	bool in_order = true;
	uint64_t max_time = 0;
	for (uint32_t i = 0; i < n; i++) {
		v[i] = i;
		if (i && less(i, i - 1, t))
			in_order = false;
		if (t->buffers[i].end > max_time)
			max_time = t->buffers[i].end;
	}
	if (in_order ||
	    (max_time <= UINT32_MAX ? as_sort_u32_keyed(v, n, key, NULL, t)
				    : as_sort_u32(v, n, less, t)) == AS_OK)
		return v;
	free(v);
	return NULL;
}

/*
 * Events of buffers with explicit lifetimes: allocations by start and frees
 * by end, merged with frees first at equal times, ties by index. Sorting
 * 4-byte indices keeps the peak small on 10^7-buffer traces.
 */
static int derive_events(struct as_builder *b)
{
	struct as_trace *t = b->t;
	uint32_t n = t->nbuffers;
	uint32_t *alloc = sorted_indices(t, by_start, start_key);
	uint32_t *frees = alloc ? sorted_indices(t, by_end, end_key) : NULL;
	struct as_event *ev = frees ? malloc(((size_t)n * 2 + 1) * sizeof(*ev))
				    : NULL;
	if (!ev) {
		free(alloc);
		free(frees);
		return AS_ENOMEM;
	}
	uint32_t i = 0, j = 0, k = 0;
	while (i < n || j < n) {
		bool take_free =
			j < n && (i == n || t->buffers[frees[j]].end <=
						    t->buffers[alloc[i]].start);
		if (take_free)
			ev[k++] = (struct as_event){AS_EV_FREE, frees[j++]};
		else
			ev[k++] = (struct as_event){AS_EV_ALLOC, alloc[i++]};
	}
	/* A reader may have set a later time (as_builder_set_time). */
	if (n && t->buffers[frees[n - 1]].end > b->time)
		b->time = t->buffers[frees[n - 1]].end;
	free(alloc);
	free(frees);
	free(t->events);
	t->events = ev;
	t->nevents = 2 * n;
	return AS_OK;
}

int as_builder_finish(struct as_builder *b, struct as_trace **out,
		      struct as_diag *diag)
{
	struct as_trace *t = b->t;
	int err = AS_OK;
	if (b->timed)
		err = derive_events(b);
	else
		as_builder_end_live(b);
	if (err)
		return err;
	t->end_time = b->time;
	if (t->clock && (err = as_builder_clock_fill(b, t->end_time)))
		return err;
	if (t->info) {
		if (!as_builder_grow((void **)&t->info, &b->cap_info, t->nbuffers,
			  sizeof(*t->info)))
			return AS_ENOMEM;
		as_trace_info_fill(t, b->ninfo);
		b->ninfo = t->nbuffers;
		for (uint32_t i = 0; i < t->nbuffers; i++)
			if (t->info[i].free_requested > t->buffers[i].end)
				t->info[i].free_requested =
					t->buffers[i].end;
	}
	if (t->priv->stack_of && b->nframes < t->nbuffers &&
	    (err = as_builder_stacks_fill(b)))
		return err;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		struct as_buffer *buf = &t->buffers[i];
		if (buf->space >= t->nspaces)
			return as_diag_set(diag, as_builder_line_of(b, i),
					   AS_EPARSE,
					   "buffer '%s' names space %u of %u",
					   buf->name, buf->space, t->nspaces);
		if (buf->alias_of == AS_NONE)
			continue;
		if (buf->alias_of >= t->nbuffers || buf->alias_of == i)
			return as_diag_set(diag, as_builder_line_of(b, i),
					   AS_EPARSE,
					   "buffer '%s' is an alias of an "
					   "unknown buffer",
					   buf->name);
		const struct as_buffer *p = &t->buffers[buf->alias_of];
		if (p->alias_of != AS_NONE)
			return as_diag_set(diag, as_builder_line_of(b, i),
					   AS_EPARSE,
					   "buffer '%s' is an alias of '%s', "
					   "itself an alias",
					   buf->name, p->name);
		if (buf->alias_offset > p->size ||
		    buf->size > p->size - buf->alias_offset)
			return as_diag_set(diag, as_builder_line_of(b, i),
					   AS_EPARSE,
					   "alias '%s' (%llu bytes at +%llu) "
					   "does not fit inside '%s' (%llu "
					   "bytes)",
					   buf->name,
					   (unsigned long long)buf->size,
					   (unsigned long long)buf->alias_offset,
					   p->name, (unsigned long long)p->size);
		/*
		 * Declared aliases live within their parent: every strategy,
		 * the lower bound and the validator then agree on lifetimes.
		 * (Aliases a strategy makes may extend their parent instead;
		 * the validator handles those.)
		 */
		if (buf->start < p->start || buf->end > p->end)
			return as_diag_set(diag, as_builder_line_of(b, i),
					   AS_EPARSE,
					   "alias '%s' (time [%llu, %llu)) "
					   "outlives '%s' (time [%llu, %llu)), "
					   "the buffer it lives inside",
					   buf->name,
					   (unsigned long long)buf->start,
					   (unsigned long long)buf->end,
					   p->name, (unsigned long long)p->start,
					   (unsigned long long)p->end);
		buf->space = p->space;
	}
	if ((err = as_builder_check_live(b, diag)) ||
	    (err = as_builder_finish_stages(b, diag)) ||
	    (err = as_builder_finish_contexts(b)))
		return err;
	*out = t;
	b->t = NULL;
	as_builder_destroy(b);
	return AS_OK;
}

static bool by_name_start(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_buffer *x = &((const struct as_trace *)ctx)->buffers[a],
			       *y = &((const struct as_trace *)ctx)->buffers[b];
	int k = strcmp(x->name, y->name);
	return k < 0 || (k == 0 && (x->start < y->start ||
				    (x->start == y->start && a < b)));
}

static uint32_t name_key(uint32_t i, const void *ctx)
{
	const struct as_trace *t = ctx;
	return (uint32_t)as_hash_fixed_str(t->buffers[i].name);
}

int as_builder_live_twice(struct as_builder *b, uint32_t *first,
			  uint32_t *second)
{
	const struct as_trace *t = b->t;
	uint32_t n = t->nbuffers;
	uint32_t *order = malloc(((size_t)n + 1) * sizeof(*order));
	if (!order)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	/* One name's buffers together, by start: sorted by the name's hash
	 * (no string compared among 10^7 distinct ids), a hash's by name. */
	int err = as_sort_u32_keyed(order, n, name_key, by_name_start, t);
	uint64_t end = 0;
	uint32_t holder = 0;
	for (uint32_t k = 0; err == AS_OK && k < n; k++) {
		const struct as_buffer *x = &t->buffers[order[k]];
		bool same = k > 0 &&
			    strcmp(t->buffers[order[k - 1]].name, x->name) == 0;
		if (same && x->start < end) {
			*first = holder < order[k] ? holder : order[k];
			*second = holder < order[k] ? order[k] : holder;
			err = 1;
			break;
		}
		if (!same || x->end > end) {
			end = x->end;
			holder = order[k];
		}
	}
	free(order);
	return err;
}
