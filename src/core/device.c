/*
 * What a recording tells of its device's size, for the online allocators
 * that default to it: the steps at which the recording gave reserved
 * memory back, what it held then, and the memory limit of a space (its
 * stated capacity, else an OOM or a release and retry in the recording,
 * else none), with the remark that says where a limit came from.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct seg_time {
	uint64_t time, size;
};

static int by_time(const void *a, const void *b)
{
	const struct seg_time *x = a, *y = b;
	return (x->time > y->time) - (x->time < y->time);
}

/* The last time step of the trace: what is still live ends there. */
static uint64_t last_step(const struct as_trace *t)
{
	uint64_t last = 0;
	for (uint32_t i = 0; i < t->nsegments; i++)
		if (t->segments[i].end > last)
			last = t->segments[i].end;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].end > last && t->buffers[i].end != UINT64_MAX)
			last = t->buffers[i].end;
	return last;
}

static bool oom_at(const struct as_trace *t, uint16_t space, uint64_t time)
{
	for (uint32_t k = 0; k < t->nmarks; k++)
		if (t->marks[k].kind == AS_MARK_OOM &&
		    t->marks[k].space == space && t->marks[k].time == time)
			return true;
	return false;
}

int as_trace_release_steps(const struct as_trace *t, uint16_t space,
			   struct as_release_step **out, uint32_t *nout)
{
	uint32_t n = 0, nr = 0;
	for (uint32_t i = 0; i < t->nsegments; i++)
		n += t->segments[i].space == space;
	struct seg_time *st = malloc(((size_t)n + 1) * sizeof(*st));
	struct seg_time *en = malloc(((size_t)n + 1) * sizeof(*en));
	struct as_release_step *r = malloc(((size_t)n + 1) * sizeof(*r));
	if (!st || !en || !r) {
		free(st);
		free(en);
		free(r);
		return AS_ENOMEM;
	}
	n = 0;
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *g = &t->segments[i];
		if (g->space != space)
			continue;
		st[n] = (struct seg_time){g->start, g->size};
		en[n++] = (struct seg_time){g->end, g->size};
	}
	qsort(st, n, sizeof(*st), by_time);
	qsort(en, n, sizeof(*en), by_time);
	uint64_t last = last_step(t), live = 0;
	/*
	 * Segment entries share the step of the next block entry, the ones
	 * given back before one reserved at the same step (a reader gives a
	 * free after it a step of its own): what was reserved before a
	 * step's releases started before it and ends at it or later.
	 */
	for (uint32_t i = 0, j = 0; j < n;) {
		uint64_t e = en[j].time;
		while (i < n && st[i].time < e)
			live += st[i++].size;
		uint64_t before = live, started = 0;
		while (j < n && en[j].time == e)
			live -= en[j++].size;
		for (uint32_t k = i; k < n && st[k].time == e; k++)
			started += st[k].size;
		if (e < last)
			r[nr++] = (struct as_release_step){
				e, before, started, oom_at(t, space, e)};
	}
	free(st);
	free(en);
	*out = r;
	*nout = nr;
	return AS_OK;
}

/* What `space`'s segments held at step `time`: reserved before it and
 * given back after it. */
static uint64_t reserved_at(const struct as_trace *t, uint16_t space,
			    uint64_t time)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *g = &t->segments[i];
		if (g->space == space && g->start < time && g->end > time &&
		    n <= UINT64_MAX - g->size)
			n += g->size;
	}
	return n;
}

int as_trace_device_limit(const struct as_trace *t, uint16_t space,
			  struct as_limit *out)
{
	*out = (struct as_limit){0};
	if (space >= t->nspaces)
		return AS_OK;
	if (t->spaces[space].capacity) {
		*out = (struct as_limit){t->spaces[space].capacity, 0,
					 AS_LIMIT_SPACE};
		return AS_OK;
	}
	if (!t->nsegments)
		return AS_OK;
	uint64_t *peaks = calloc((size_t)t->nspaces + 1, sizeof(*peaks));
	struct as_release_step *r = NULL;
	uint32_t nr = 0;
	int err = peaks ? as_trace_reserved_peaks(t, peaks) : AS_ENOMEM;
	if (!err)
		err = as_trace_release_steps(t, space, &r, &nr);
	if (err) {
		free(peaks);
		return err;
	}
	uint64_t peak = peaks[space], retry = 0;
	free(peaks);
	for (uint32_t k = 0; k < nr && !retry; k++)
		if (!r[k].oom && r[k].started &&
		    r[k].before + r[k].started > peak)
			retry = r[k].time;
	free(r);
	const struct as_mark *m = NULL;
	for (uint32_t k = 0; k < t->nmarks && !m; k++)
		if (t->marks[k].kind == AS_MARK_OOM &&
		    t->marks[k].space == space)
			m = &t->marks[k];
	if ((!m && !retry) || !peak)
		return AS_OK;
	/* the device held at least the most the recording reserved */
	uint64_t from_oom = 0;
	if (m && m->device_free) {
		uint64_t held = reserved_at(t, space, m->time);
		if (held <= UINT64_MAX - m->device_free)
			from_oom = held + m->device_free;
	}
	if (from_oom >= peak || (m && !retry))
		*out = (struct as_limit){from_oom > peak ? from_oom : peak,
					 m->time, AS_LIMIT_OOM};
	else
		*out = (struct as_limit){peak, retry, AS_LIMIT_RETRY};
	return AS_OK;
}

const char *as_trace_space_name(const struct as_trace *t, uint16_t space)
{
	return space < t->nspaces && t->spaces[space].name
		       ? t->spaces[space].name
		       : "space";
}

int as_plan_note_limit(struct as_plan *p, const char *name,
		       const char *option, const struct as_limit *l)
{
	if (l->from == AS_LIMIT_NONE || !l->bytes)
		return AS_OK;
	char hb[32], line[512], why[200] = "";
	const char *from = "";
	switch (l->from) {
	case AS_LIMIT_OPTION:
		from = "from the option ";
		break;
	case AS_LIMIT_SPACE:
		from = "from the trace (its space's capacity)";
		break;
	case AS_LIMIT_OOM:
		from = "from the recording";
		snprintf(why, sizeof(why),
			 ": out of memory at step %" PRIu64
			 " (what it held then plus the device's free memory, "
			 "at least the most it ever reserved)",
			 l->step);
		break;
	case AS_LIMIT_RETRY:
		from = "from the recording";
		snprintf(why, sizeof(why),
			 ": the most it ever reserved (at step %" PRIu64
			 " it gave cached segments back to retry a cudaMalloc)",
			 l->step);
		break;
	case AS_LIMIT_NONE:
		return AS_OK;
	}
	snprintf(line, sizeof(line),
		 AS_NOTE_CAPACITY "%s: %" PRIu64 " B (%s) %s%s%s", name,
		 l->bytes, as_human_bytes(l->bytes, hb, sizeof(hb)), from,
		 l->from == AS_LIMIT_OPTION && option ? option : "", why);
	/* once per run, whatever its cases */
	for (uint32_t i = 0; i < p->nnotes; i++)
		if (strcmp(p->notes[i], line) == 0)
			return AS_OK;
	return as_plan_note(p, line);
}
