#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/build.h"

/*
 * One pass over the events: they are in time order with frees first at equal
 * times, and a case boundary ends every live buffer. Aliases take no space.
 */
static uint64_t sweep(const struct as_trace *t, int space)
{
	/* 128 bits: hostile traces may sum past 2^64. */
	unsigned __int128 live = 0, best = 0;
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct as_event *e = &t->events[i];
		if (e->kind == AS_EV_CASE) {
			live = 0;
			continue;
		}
		if (e->kind != AS_EV_ALLOC && e->kind != AS_EV_FREE)
			continue;
		const struct as_buffer *b = &t->buffers[e->arg];
		if (b->alias_of != AS_NONE || (space >= 0 && b->space != space))
			continue;
		if (e->kind == AS_EV_ALLOC) {
			live += b->size;
			if (live > best)
				best = live;
		} else {
			live -= b->size;
		}
	}
	return best > UINT64_MAX ? UINT64_MAX : (uint64_t)best;
}

/*
 * Every space's bound in one pass: live and best per space (a numa trace
 * has up to 4096 spaces and millions of events: a sweep per space was
 * O(events x spaces), found by fuzz_json). Returns false when out of
 * memory.
 */
static bool sweep_spaces(const struct as_trace *t, uint64_t *out)
{
	unsigned __int128 *live = calloc(2 * (size_t)t->nspaces, sizeof(*live));
	if (!live)
		return false;
	unsigned __int128 *best = live + t->nspaces;
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct as_event *e = &t->events[i];
		if (e->kind == AS_EV_CASE) {
			memset(live, 0, t->nspaces * sizeof(*live));
			continue;
		}
		if (e->kind != AS_EV_ALLOC && e->kind != AS_EV_FREE)
			continue;
		const struct as_buffer *b = &t->buffers[e->arg];
		if (b->alias_of != AS_NONE || b->space >= t->nspaces)
			continue;
		if (e->kind == AS_EV_ALLOC) {
			live[b->space] += b->size;
			if (live[b->space] > best[b->space])
				best[b->space] = live[b->space];
		} else {
			live[b->space] -= b->size;
		}
	}
	for (uint16_t s = 0; s < t->nspaces; s++)
		out[s] = best[s] > UINT64_MAX ? UINT64_MAX : (uint64_t)best[s];
	free(live);
	return true;
}

/*
 * Spaces are separate memories, each its own container: the floor of a plan
 * is the sum of each space's floor (with one space, the classic bound).
 */
uint64_t as_trace_lower_bound(const struct as_trace *t)
{
	if (t->nspaces <= 1)
		return sweep(t, -1);
	uint64_t sum = 0, *each = malloc(t->nspaces * sizeof(*each));
	if (!each || !sweep_spaces(t, each)) {
		free(each);
		each = NULL; /* out of memory: a sweep per space */
	}
	for (uint16_t s = 0; s < t->nspaces; s++) {
		uint64_t b = each ? each[s] : sweep(t, s);
		sum = b > UINT64_MAX - sum ? UINT64_MAX : sum + b;
	}
	free(each);
	return sum;
}

uint64_t as_trace_lower_bound_space(const struct as_trace *t, uint16_t space)
{
	return sweep(t, space);
}

int as_trace_lower_bound_spaces(const struct as_trace *t, uint64_t *out)
{
	if (t->nspaces == 0)
		return AS_OK;
	if (t->nspaces == 1) {
		out[0] = sweep(t, 0);
		return AS_OK;
	}
	return sweep_spaces(t, out) ? AS_OK : AS_ENOMEM;
}
