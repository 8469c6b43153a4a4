/*
 * What some inputs record beyond buffers, kept by the builder: the clock of
 * each time step, marks (OOMs, failed allocations), reserved segments, the
 * address map from offsets back to real addresses, per-buffer info and the
 * reader's counts.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

uint64_t as_builder_time(const struct as_builder *b)
{
	return b->time;
}

int as_builder_set_time(struct as_builder *b, uint64_t step)
{
	if (b->ordered || step < b->time || step == UINT64_MAX)
		return AS_EINVAL;
	b->time = step;
	return AS_OK;
}

/* Clock readings for steps [nclock, step], repeating the last one. */
int as_builder_clock_fill(struct as_builder *b, uint64_t step)
{
	struct as_trace *t = b->t;
	if (step >= b->cap_clock) {
		uint64_t n = b->cap_clock ? b->cap_clock : 64;
		while (n <= step)
			n *= 2;
		if (n > SIZE_MAX / sizeof(*t->clock))
			return AS_ENOMEM;
		uint64_t *c = realloc(t->clock, (size_t)n * sizeof(*c));
		if (!c)
			return AS_ENOMEM;
		t->clock = c;
		b->cap_clock = n;
	}
	uint64_t last = b->nclock ? t->clock[b->nclock - 1] : 0;
	for (uint64_t i = b->nclock; i <= step; i++)
		t->clock[i] = last;
	if (step + 1 > b->nclock)
		b->nclock = step + 1;
	return AS_OK;
}

int as_builder_clock(struct as_builder *b, uint64_t us, uint64_t line,
		     struct as_diag *diag)
{
	if (b->nclock && us < b->t->clock[b->nclock - 1])
		return as_diag_set(diag, line, AS_EPARSE,
				   "time %llu us goes back (previous %llu us)",
				   (unsigned long long)us,
				   (unsigned long long)
					   b->t->clock[b->nclock - 1]);
	int err = as_builder_clock_fill(b, b->time);
	if (err)
		return err;
	b->t->clock[b->time] = us;
	return AS_OK;
}

int as_builder_mark(struct as_builder *b, const struct as_mark *m)
{
	struct as_trace *t = b->t;
	if (t->nmarks == UINT32_MAX ||
	    !as_builder_grow((void **)&t->marks, &b->cap_marks, t->nmarks + 1,
		  sizeof(*t->marks)))
		return AS_ENOMEM;
	t->marks[t->nmarks] = *m;
	t->marks[t->nmarks++].time = b->time;
	return AS_OK;
}

int as_builder_segment(struct as_builder *b, const struct as_segment *s)
{
	struct as_trace *t = b->t;
	if (t->nsegments == UINT32_MAX ||
	    !as_builder_grow((void **)&t->segments, &b->cap_segments, t->nsegments + 1,
		  sizeof(*t->segments)))
		return AS_ENOMEM;
	t->segments[t->nsegments++] = *s;
	return AS_OK;
}

/* ---- Reserved memory ---- */

struct seg_event {
	uint64_t time, size;
	uint16_t space;
	bool open;
};

static int by_seg_time(const void *a, const void *b)
{
	const struct seg_event *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (int)x->open - (int)y->open; /* ends first */
}

int as_trace_reserved_peaks(const struct as_trace *t, uint64_t *peak)
{
	memset(peak, 0, (size_t)t->nspaces * sizeof(*peak));
	if (t->nsegments == 0)
		return AS_OK;
	struct seg_event *ev = malloc(((size_t)t->nsegments * 2) * sizeof(*ev));
	uint64_t *cur = calloc((size_t)t->nspaces, sizeof(*cur));
	if (!ev || !cur) {
		free(ev);
		free(cur);
		return AS_ENOMEM;
	}
	size_t n = 0;
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *s = &t->segments[i];
		if (s->space >= t->nspaces || s->end <= s->start)
			continue;
		ev[n++] = (struct seg_event){s->start, s->size, s->space, true};
		ev[n++] = (struct seg_event){s->end, s->size, s->space, false};
	}
	qsort(ev, n, sizeof(*ev), by_seg_time);
	for (size_t i = 0; i < n; i++) {
		uint64_t *c = &cur[ev[i].space];
		if (ev[i].open) {
			*c = *c > UINT64_MAX - ev[i].size ? UINT64_MAX
							  : *c + ev[i].size;
			if (*c > peak[ev[i].space])
				peak[ev[i].space] = *c;
		} else {
			*c = *c > ev[i].size ? *c - ev[i].size : 0;
		}
	}
	free(ev);
	free(cur);
	return AS_OK;
}

/* ---- Address map ---- */

static int by_space_addr(const void *x, const void *y)
{
	const struct as_addr_range *a = x, *b = y;
	if (a->space != b->space)
		return a->space < b->space ? -1 : 1;
	if (a->address != b->address)
		return a->address < b->address ? -1 : 1;
	return (a->length > b->length) - (a->length < b->length);
}

int as_builder_addr_map(struct as_builder *b, struct as_addr_range *ranges,
			size_t n, uint64_t keep, uint64_t gap)
{
	struct as_trace *t = b->t;
	if (t->addr_map || gap == 0 || (gap & (gap - 1)) || keep < gap)
		return AS_EINVAL;
	if (n == 0)
		return AS_OK;
	qsort(ranges, n, sizeof(*ranges), by_space_addr);
	/*
	 * Merge in place into ranges[0, m): ranges[m - 1] is the open one,
	 * `end` its highest real end so far.
	 */
	size_t m = 0;
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		const struct as_addr_range r = ranges[i];
		uint64_t rend = r.address + r.length; /* readers check this */
		if (rend < r.address)
			return AS_EINVAL;
		struct as_addr_range *last = m ? &ranges[m - 1] : NULL;
		if (last && last->space == r.space &&
		    (r.address <= end || r.address - end <= keep)) {
			if (rend > end)
				end = rend;
			last->length = end - last->address;
			continue;
		}
		uint64_t off;
		if (last && last->space == r.space) {
			uint64_t hole = r.address - end;
			off = last->offset + last->length + gap +
			      (hole & (gap - 1));
		} else {
			off = r.address & (gap - 1);
		}
		ranges[m++] = (struct as_addr_range){off, r.address, r.length,
						     r.space};
		end = rend;
	}
	if (m > UINT32_MAX)
		return AS_ENOMEM;
	t->addr_map = malloc(m * sizeof(*t->addr_map));
	if (!t->addr_map)
		return AS_ENOMEM;
	memcpy(t->addr_map, ranges, m * sizeof(*t->addr_map));
	t->naddr_map = (uint32_t)m;
	return AS_OK;
}

/*
 * The last range of `space` starting at or below `key` (an offset, or with
 * `by_address` a real address), or NULL. Ranges are in the same order by
 * both.
 */
static const struct as_addr_range *
map_find(const struct as_trace *t, uint16_t space, uint64_t key,
	 bool by_address)
{
	uint32_t lo = 0, hi = t->naddr_map; /* first range past key: [lo, hi) */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct as_addr_range *r = &t->addr_map[mid];
		uint64_t v = by_address ? r->address : r->offset;
		if (r->space < space || (r->space == space && v <= key))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct as_addr_range *r = &t->addr_map[lo - 1];
	return r->space == space ? r : NULL;
}

/* The real address of `offset`; with end_ok a range's end counts too. */
static bool address_of(const struct as_trace *t, uint16_t space,
		       uint64_t offset, bool end_ok, uint64_t *addr)
{
	const struct as_addr_range *r = t ? map_find(t, space, offset, false)
					  : NULL;
	if (!r || offset - r->offset > r->length ||
	    (!end_ok && offset - r->offset == r->length))
		return false;
	*addr = r->address + (offset - r->offset);
	return true;
}

bool as_trace_address_of(const struct as_trace *t, uint16_t space,
			 uint64_t offset, uint64_t *addr)
{
	return address_of(t, space, offset, false, addr);
}

bool as_trace_block_address(const struct as_trace *t, uint16_t space,
			    uint64_t offset, uint64_t *addr)
{
	return address_of(t, space, offset, true, addr);
}

bool as_builder_offset_of(const struct as_builder *b, uint16_t space,
			  uint64_t address, uint64_t *offset)
{
	/* A range's end too: an empty block may lie there. */
	const struct as_addr_range *r = map_find(b->t, space, address, true);
	if (!r || address - r->address > r->length)
		return false;
	*offset = r->offset + (address - r->address);
	return true;
}

/* Default info for buffers [from, nbuffers). */
void as_trace_info_fill(struct as_trace *t, uint32_t from)
{
	for (uint32_t i = from; i < t->nbuffers; i++)
		t->info[i] = (struct as_buffer_info){
			.requested = t->buffers[i].size,
			.free_requested = UINT64_MAX,
		};
}

int as_builder_realloc_of(struct as_builder *b, uint32_t idx, uint32_t of)
{
	struct as_trace *t = b->t;
	if (idx >= t->nbuffers || of >= t->nbuffers || of == idx ||
	    (t->nreallocs && t->reallocs[t->nreallocs - 1].buffer >= idx))
		return AS_EINVAL;
	if (!as_builder_grow((void **)&t->reallocs, &b->cap_reallocs,
			     t->nreallocs + 1, sizeof(*t->reallocs)))
		return AS_ENOMEM;
	t->reallocs[t->nreallocs++] = (struct as_realloc){idx, of};
	return AS_OK;
}

uint32_t as_trace_realloc_of(const struct as_trace *t, uint32_t buffer)
{
	uint32_t lo = 0, hi = t ? t->nreallocs : 0;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint32_t v = t->reallocs[mid].buffer;
		if (v == buffer)
			return t->reallocs[mid].realloc_of;
		if (v < buffer)
			lo = mid + 1;
		else
			hi = mid;
	}
	return AS_NONE;
}

struct as_buffer_info *as_builder_info(struct as_builder *b, uint32_t idx)
{
	struct as_trace *t = b->t;
	if (idx >= t->nbuffers)
		return NULL;
	if (b->ninfo < t->nbuffers) {
		if (!as_builder_grow((void **)&t->info, &b->cap_info, t->nbuffers,
			  sizeof(*t->info)))
			return NULL;
		as_trace_info_fill(t, b->ninfo);
		b->ninfo = t->nbuffers;
	}
	return &t->info[idx];
}

int as_builder_count(struct as_builder *b, const char *key, uint64_t n)
{
	struct as_trace *t = b->t;
	for (uint32_t i = 0; i < t->ninput_stats; i++)
		if (strcmp(t->input_stats[i].key, key) == 0) {
			t->input_stats[i].value += (double)n;
			return AS_OK;
		}
	if (!as_builder_grow((void **)&t->input_stats, &b->cap_input_stats,
		  t->ninput_stats + 1, sizeof(*t->input_stats)))
		return AS_ENOMEM;
	t->input_stats[t->ninput_stats++] =
		(struct as_stat){key, (double)n, true};
	return AS_OK;
}

