/*
 * cuda-caching: what the allocator held when a request ran out of memory
 * (the model's own, a recorded OOM when reproducing, a recorded OOM's
 * request a what-if cannot serve either): the request, live and reserved
 * bytes, the cached free bytes by size class, the largest free block, and
 * whether the request failed for fragmentation (the device had room for it
 * beside the live bytes, in pieces) or for live memory (it had not). Kept
 * in the state as it happens, handed to the plan at the end as records
 * (as_plan_oom_add: explain prints them), notes (AS_CUDA_NOTE_OOM) and
 * stats.
 */
#include "strategies/cuda_caching/cuda_caching.h"

/* Upper ends of the size classes of cached free blocks. */
static const uint64_t class_end[OOM_CLASSES - 1] = {
	SMALL_SIZE, MIN_LARGE_ALLOC, 100ull << 20, 1ull << 30,
};

void as_cuda_oom_record(struct cc *s, uint64_t time, uint64_t request,
			uint64_t size, uint64_t alloc_size, bool recorded)
{
	struct as_plan_oom o = {.space = s->space, .time = time,
				.request = request, .size = size,
				.alloc_size = alloc_size, .recorded = recorded,
				.live = s->allocated_bytes.cur,
				.reserved = s->reserved_bytes.cur,
				.capacity = s->capacity};
	for (int k = 0; k < 2; k++)
		for (uint32_t it = as_cuda_t_lower_bound(
			     &s->tp, s->pools[k].blocks, 0, 0, 0);
		     it != NIL;
		     it = as_cuda_t_next(&s->tp, s->pools[k].blocks, it)) {
			uint64_t n = s->b[s->tp.n[it].val].size;
			int c = 0;
			while (c < OOM_CLASSES - 1 && n > class_end[c])
				c++;
			o.cached[c] += n;
			if (n > o.largest)
				o.largest = n;
		}
	/* room beside the live bytes: free device memory and cached blocks
	 * together would hold it, were they one piece */
	o.fragmentation = !o.capacity || (o.live <= o.capacity &&
					  alloc_size <= o.capacity - o.live);
	s->oom_fragmentation += o.fragmentation;
	s->oom_live += !o.fragmentation;
	if (s->noom < MAX_OOM_NOTES)
		s->oom[s->noom++] = o;
}

void as_cuda_oom_notes(struct cc *s, struct as_plan *p)
{
	for (uint32_t i = 0; i < s->noom; i++) {
		const struct as_plan_oom *o = &s->oom[i];
		/* a record lost to memory running out, as a note would be */
		(void)as_plan_oom_add(p, o);
		char line[900], a[32], b[32], c[32], d[32], e[32];
		int n = snprintf(
			line, sizeof(line),
			AS_CUDA_NOTE_OOM "%s: step %" PRIu64 ": %s %" PRIu64
			" B (%s as a block, %s from the device); live %s, "
			"reserved %s of %s; cached free:",
			as_trace_space_name(s->t, s->space), o->time,
			o->recorded ? "the recording ran out of memory on"
				    : "out of memory on",
			o->request, as_human_bytes(o->size, a, sizeof(a)),
			as_human_bytes(o->alloc_size, b, sizeof(b)),
			as_human_bytes(o->live, c, sizeof(c)),
			as_human_bytes(o->reserved, d, sizeof(d)),
			o->capacity ? as_human_bytes(o->capacity, e, sizeof(e))
				    : "unlimited");
		for (int k = 0; k < OOM_CLASSES && n > 0 &&
				(size_t)n < sizeof(line);
		     k++)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s %s%s", as_oom_class_name((unsigned)k),
				      as_human_bytes(o->cached[k], a, sizeof(a)),
				      k + 1 < OOM_CLASSES ? "," : ";");
		if (n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n,
				 " largest free block %s: %s",
				 as_human_bytes(o->largest, a, sizeof(a)),
				 o->fragmentation
					 ? "fragmentation (the device had room "
					   "for it beside the live bytes, not "
					   "in one piece)"
					 : "live memory (the live bytes and the "
					   "request exceed the device)");
		as_plan_note(p, line);
	}
	as_cuda_stat_sum(s, p, "oom_fragmentation", s->oom_fragmentation);
	as_cuda_stat_sum(s, p, "oom_live_memory", s->oom_live);
}
