/*
 * Reserved memory behind a panel's buffers: which panels show it and from
 * what.
 *
 * - The trace's segments (what the recording allocator reserved) live at
 *   the recorded addresses, so they belong on a panel whose plan keeps the
 *   recorded offsets: the `recorded` strategy, or any plan equal to it.
 * - An allocator strategy that reserves memory itself says for each buffer
 *   which segment it put it in (as_plan segment_size and segment_offset:
 *   cuda-caching). A segment is then the range [offset - segment_offset,
 *   + segment_size); it is drawn from the first allocation in it until a
 *   later segment takes any of its addresses (the allocator released it
 *   before: PyTorch's does on an out-of-memory retry or empty_cache), else
 *   to the end of the trace (cached memory stays reserved), and never ends
 *   before its last buffer does. Other strategies place buffers in one
 *   flat range and have nothing reserved beyond it to show.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

bool as_r_keeps_recorded(const struct panel *pn)
{
	if (pn->title && strncmp(pn->title, "recorded", 8) == 0)
		return true;
	bool any = false;
	for (uint32_t k = 0; k < pn->nbufs; k++) {
		uint32_t i = pn->bufs[k];
		uint64_t rec = pn->t->buffers[i].recorded;
		if (pn->p->offset[i] != rec)
			return false;
		any |= rec != AS_NO_OFFSET;
	}
	return any;
}

bool as_r_span_scattered(const struct panel *pn)
{
	return pn->keeps_recorded && pn->lb && pn->peak / 100 > pn->lb;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct as_segment *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_start(const void *a, const void *b)
{
	const struct as_segment *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static uint64_t seg_top(const struct as_segment *s)
{
	return s->addr > UINT64_MAX - s->size ? UINT64_MAX : s->addr + s->size;
}

/* How far a segment's successor is searched for among those overlapping
 * it (a bound, so that the pass stays O(n log n) on hostile plans). */
#define SEG_SCAN 64

int as_r_plan_segments(struct panel *pn)
{
	free(pn->psegs);
	pn->psegs = NULL;
	pn->npsegs = 0;
	const struct as_plan *p = pn->p;
	if (!p->segment_size || !p->segment_offset)
		return AS_OK;
	struct as_segment *s = malloc(sizeof(*s) * ((size_t)pn->nplaced + 1));
	if (!s)
		return AS_ENOMEM;
	uint32_t n = 0;
	for (uint32_t k = 0; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		uint64_t off = p->offset[i], so = p->segment_offset[i];
		if (!p->segment_size[i] || so > off)
			continue;
		const struct as_buffer *b = &pn->t->buffers[i];
		/* end holds the last buffer's end until the groups are made */
		s[n++] = (struct as_segment){off - so, p->segment_size[i],
					     b->start, b->end, pn->space, 0, 0};
	}
	/* One segment per address and size: first start, last end. */
	qsort(s, n, sizeof(*s), cmp_addr);
	uint32_t g = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (g && s[g - 1].addr == s[k].addr && s[g - 1].size == s[k].size) {
			if (s[k].end > s[g - 1].end)
				s[g - 1].end = s[k].end;
			continue;
		}
		s[g++] = s[k];
	}
	/* Runs of segments whose ranges overlap (by address), then in each
	 * run by start: a segment lasts until the next to take any of its
	 * addresses. */
	uint64_t tend = pn->t->end_time;
	for (uint32_t a = 0; a < g;) {
		uint32_t e = a + 1;
		uint64_t top = seg_top(&s[a]);
		while (e < g && s[e].addr < top) {
			uint64_t t2 = seg_top(&s[e]);
			top = t2 > top ? t2 : top;
			e++;
		}
		qsort(s + a, e - a, sizeof(*s), cmp_start);
		for (uint32_t k = a; k < e; k++) {
			uint64_t last = s[k].end, until = tend;
			for (uint32_t j = k + 1; j < e && j <= k + SEG_SCAN; j++)
				if (s[j].addr < seg_top(&s[k]) &&
				    s[k].addr < seg_top(&s[j]) &&
				    s[j].start > s[k].start) {
					until = s[j].start;
					break;
				}
			s[k].end = until > last ? until : last;
		}
		a = e;
	}
	struct as_segment *fit = realloc(s, sizeof(*s) * ((size_t)g + 1));
	pn->psegs = fit ? fit : s;
	pn->npsegs = g;
	return AS_OK;
}
