/*
 * What a recording says of the program beyond its buffers' rectangles:
 * stages (named regions of time, per space), each buffer's compile context
 * and user metadata, its stack as a number; and the one function that
 * turns a buffer into the text of its group (by name prefix, frame, size,
 * stage, stack or context), which live lists, colours and explain share.
 *
 * Stages are kept by space, then start (the longer first at equal starts).
 * Each takes the lowest lane free over its life (nested stages stack up,
 * lanes draw them). The cuts index them for as_trace_stage_at: per space,
 * the times where the innermost stage changes, found by one sweep with a
 * stack of open stages (a stage that ended is popped when it reaches the
 * top, so each is pushed and popped once): O(k log k) for k stages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

/* Lanes a space's stages may take; deeper ones share the last. */
#define MAX_LANES 64

int as_builder_stage(struct as_builder *b, const struct as_stage *s)
{
	struct as_trace *t = b->t;
	if (!s || !s->name || s->end < s->start)
		return AS_EINVAL;
	if (t->nstages == UINT32_MAX - 1 ||
	    !as_builder_grow((void **)&t->stages, &b->cap_stages,
			     t->nstages + 1, sizeof(*t->stages)))
		return AS_ENOMEM;
	const char *name = as_builder_intern(b, s->name);
	if (!name)
		return AS_ENOMEM;
	struct as_stage *d = &t->stages[t->nstages++];
	*d = *s;
	d->name = name;
	d->lane = 0;
	return AS_OK;
}

static bool stage_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_stage *x = (const struct as_stage *)ctx + a,
			      *y = (const struct as_stage *)ctx + b;
	if (x->space != y->space)
		return x->space < y->space;
	if (x->start != y->start)
		return x->start < y->start;
	return x->end > y->end;
}

static bool end_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_stage *s = ctx;
	if (s[a].space != s[b].space)
		return s[a].space < s[b].space;
	return s[a].end < s[b].end;
}

/* Lanes of the stages [lo, hi) of one space, in start order. */
static void give_lanes(struct as_stage *s, uint32_t lo, uint32_t hi)
{
	uint64_t lane_end[MAX_LANES];
	uint32_t nl = 0;
	for (uint32_t i = lo; i < hi; i++) {
		uint32_t l = 0;
		while (l < nl && lane_end[l] > s[i].start)
			l++;
		if (l == MAX_LANES)
			l = MAX_LANES - 1;
		if (l == nl && nl < MAX_LANES)
			nl++;
		if (s[i].end > lane_end[l] || l == nl - 1)
			lane_end[l] = s[i].end > s[i].start ? s[i].end
							    : s[i].start + 1;
		s[i].lane = (uint16_t)l;
	}
}

static int add_cut(struct as_trace_private *p, uint32_t *cap, uint64_t time,
		   uint32_t stage, uint16_t space)
{
	if (p->ncuts && p->cuts[p->ncuts - 1].space == space) {
		struct as_stage_cut *last = &p->cuts[p->ncuts - 1];
		if (last->stage == stage)
			return AS_OK;
		if (last->time == time) {
			last->stage = stage;
			return AS_OK;
		}
	}
	if (!as_builder_grow((void **)&p->cuts, cap, p->ncuts + 1,
			     sizeof(*p->cuts)))
		return AS_ENOMEM;
	p->cuts[p->ncuts++] = (struct as_stage_cut){time, stage, space};
	return AS_OK;
}

/*
 * The cuts of stages [lo, hi) of one space: `by_end` holds the same
 * indices by end. Ends come before starts at equal times ([start, end)).
 */
static int cut_space(struct as_trace *t, uint32_t lo, uint32_t hi,
		     const uint32_t *by_end, uint32_t *stack, uint8_t *ended,
		     uint32_t *cap)
{
	const struct as_stage *s = t->stages;
	uint32_t si = lo, ei = 0, n = hi - lo, top = 0;
	memset(ended, 0, n);
	while (si < hi || ei < n) {
		uint64_t now = si < hi ? s[si].start : UINT64_MAX;
		if (ei < n && s[by_end[ei]].end <= now)
			now = s[by_end[ei]].end;
		for (; ei < n && s[by_end[ei]].end == now; ei++)
			ended[by_end[ei] - lo] = 1;
		for (; si < hi && s[si].start == now; si++)
			stack[top++] = si;
		while (top && ended[stack[top - 1] - lo])
			top--;
		int err = add_cut(t->priv, cap, now,
				  top ? stack[top - 1] : AS_NONE, s[lo].space);
		if (err)
			return err;
	}
	return AS_OK;
}

int as_builder_finish_stages(struct as_builder *b, struct as_diag *diag)
{
	struct as_trace *t = b->t;
	uint32_t n = t->nstages;
	if (n == 0)
		return AS_OK;
	for (uint32_t i = 0; i < n; i++) {
		struct as_stage *s = &t->stages[i];
		if (s->space >= t->nspaces)
			return as_diag_set(diag, 0, AS_EPARSE,
					   "stage '%s' names space %u of %u",
					   s->name, s->space, t->nspaces);
		if (s->end > t->end_time)
			s->end = t->end_time;
		if (s->start > s->end)
			s->start = s->end;
	}
	uint32_t *ord = malloc(sizeof(*ord) * 3 * (size_t)n);
	uint8_t *ended = calloc(n, 1);
	struct as_stage *sorted = malloc(sizeof(*sorted) * n);
	int err = AS_ENOMEM;
	if (!ord || !ended || !sorted)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	if (as_sort_u32(ord, n, stage_less, t->stages))
		goto out;
	for (uint32_t i = 0; i < n; i++)
		sorted[i] = t->stages[ord[i]];
	memcpy(t->stages, sorted, sizeof(*sorted) * n);
	uint32_t *by_end = ord + n, *stack = ord + 2 * n, cap = 0;
	for (uint32_t i = 0; i < n; i++)
		by_end[i] = i;
	if (as_sort_u32(by_end, n, end_less, t->stages))
		goto out;
	err = AS_OK;
	for (uint32_t lo = 0, hi; lo < n && !err; lo = hi) {
		for (hi = lo; hi < n && t->stages[hi].space == t->stages[lo].space;
		     hi++)
			;
		give_lanes(t->stages, lo, hi);
		err = cut_space(t, lo, hi, by_end + lo, stack, ended, &cap);
	}
out:
	free(ord);
	free(ended);
	free(sorted);
	return err;
}

uint32_t as_trace_stage_at(const struct as_trace *t, uint16_t space,
			   uint64_t time)
{
	if (!t || !t->priv || !t->priv->ncuts)
		return AS_NONE;
	const struct as_stage_cut *c = t->priv->cuts;
	/* The last cut at or before (space, time). */
	size_t lo = 0, hi = t->priv->ncuts;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c[mid].space < space ||
		    (c[mid].space == space && c[mid].time <= time))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || c[lo - 1].space != space)
		return AS_NONE;
	return c[lo - 1].stage;
}

/* ---- Contexts ---- */

/* The index of text s in ctx_strs, added when new; AS_NONE on no memory. */
static uint32_t ctx_index(struct as_builder *b, const char *s)
{
	struct as_trace_private *p = b->t->priv;
	size_t len = strlen(s);
	uint32_t k = as_strmap_get(&b->ctx_map, 0, s, len);
	if (k != AS_NONE)
		return k;
	const char *copy = as_builder_intern(b, s);
	if (!copy || p->nctx_strs >= UINT32_MAX - 1 ||
	    !as_builder_grow((void **)&p->ctx_strs, &b->cap_contexts,
			     p->nctx_strs + 1, sizeof(*p->ctx_strs)))
		return AS_NONE;
	if (as_strmap_put(&b->ctx_map, 0, copy, len, p->nctx_strs, true))
		return AS_NONE;
	p->ctx_strs[p->nctx_strs] = copy;
	return p->nctx_strs++;
}

/* Make context_of and metadata_of hold buffers [0, need), AS_NONE where
 * not set. Both arrays have the capacity cap_ctx_of. */
static int grow_contexts(struct as_builder *b, uint32_t need)
{
	struct as_trace_private *p = b->t->priv;
	uint32_t old = b->cap_ctx_of, cap = old, cap2 = old;
	if (need <= old)
		return AS_OK;
	if (!as_builder_grow((void **)&p->context_of, &cap, need,
			     sizeof(*p->context_of)) ||
	    !as_builder_grow((void **)&p->metadata_of, &cap2, cap,
			     sizeof(*p->metadata_of)))
		return AS_ENOMEM;
	for (uint32_t i = old; i < cap; i++)
		p->context_of[i] = p->metadata_of[i] = AS_NONE;
	b->cap_ctx_of = cap;
	return AS_OK;
}

int as_builder_context(struct as_builder *b, uint32_t idx, const char *context,
		       const char *metadata)
{
	struct as_trace_private *p = b->t->priv;
	if (idx >= b->t->nbuffers)
		return AS_EINVAL;
	if (context && !*context)
		context = NULL;
	if (metadata && !*metadata)
		metadata = NULL;
	if (!context && !metadata)
		return AS_OK;
	if (grow_contexts(b, idx + 1))
		return AS_ENOMEM;
	uint32_t c = context ? ctx_index(b, context) : AS_NONE,
		 m = metadata ? ctx_index(b, metadata) : AS_NONE;
	if ((context && c == AS_NONE) || (metadata && m == AS_NONE))
		return AS_ENOMEM;
	p->context_of[idx] = c;
	p->metadata_of[idx] = m;
	return AS_OK;
}

int as_builder_finish_contexts(struct as_builder *b)
{
	as_strmap_finish(&b->ctx_map);
	if (!b->t->priv->context_of)
		return AS_OK;
	return grow_contexts(b, b->t->nbuffers);
}

static const char *ctx_text(const struct as_trace *t, const uint32_t *of,
			    uint32_t i)
{
	if (!t || !t->priv || !of || i >= t->nbuffers)
		return NULL;
	uint32_t k = of[i];
	return k < t->priv->nctx_strs ? t->priv->ctx_strs[k] : NULL;
}

const char *as_trace_buffer_context(const struct as_trace *t, uint32_t i)
{
	return ctx_text(t, t && t->priv ? t->priv->context_of : NULL, i);
}

const char *as_trace_buffer_metadata(const struct as_trace *t, uint32_t i)
{
	return ctx_text(t, t && t->priv ? t->priv->metadata_of : NULL, i);
}

/* ---- Stacks ---- */

uint32_t as_trace_buffer_stack(const struct as_trace *t, uint32_t i)
{
	if (!t || i >= t->nbuffers || !t->priv || !t->priv->stack_of)
		return AS_NONE;
	uint32_t k = t->priv->stack_of[i];
	return k < t->priv->nstacks ? k : AS_NONE;
}

const char *as_trace_stack_text(const struct as_trace *t, uint32_t k)
{
	if (!t || !t->priv || k >= t->priv->nstacks)
		return NULL;
	return t->priv->stacks[k];
}

/* ---- Groups ---- */

const char *as_trace_group(const struct as_trace *t, uint32_t i,
			   enum as_group_by g, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	buf[0] = 0;
	if (!t || i >= t->nbuffers)
		return buf;
	const struct as_buffer *b = &t->buffers[i];
	const char *name = NULL, *fr, *cx, *md;
	size_t n;
	switch (g) {
	case AS_GROUP_PREFIX:
		/* Up to the last '.', '/' or ':'; without one, the name
		 * without its trailing digits. */
		name = as_trace_buffer_name(t, i);
		name = name ? name : "?";
		n = strlen(name);
		while (n > 0 && !strchr("./:", name[n - 1]))
			n--;
		if (n > 1) {
			n--;
		} else {
			n = strlen(name);
			while (n > 1 && (strchr("0123456789_-#", name[n - 1])))
				n--;
		}
		snprintf(buf, len, "%.*s", (int)(n < 190 ? n : 190), name);
		break;
	case AS_GROUP_FRAME:
	case AS_GROUP_STACK:
		fr = as_trace_buffer_frames(t, i);
		if (!fr || !*fr) {
			snprintf(buf, len, "(no frames)");
			break;
		}
		n = strlen(fr);
		if (g == AS_GROUP_FRAME) {
			const char *nl = strchr(fr, '\n');
			n = nl ? (size_t)(nl - fr) : n;
			n = n < 190 ? n : 190;
		}
		snprintf(buf, len, "%.*s", (int)(n < INT32_MAX ? n : INT32_MAX),
			 fr);
		break;
	case AS_GROUP_SIZE: {
		uint64_t lo = 1;
		while (lo <= b->size / 2)
			lo <<= 1;
		char a[32], c[32];
		snprintf(buf, len, "%s-%s", as_human_bytes(lo, a, sizeof(a)),
			 lo > UINT64_MAX / 2 ? "max"
					     : as_human_bytes(lo * 2, c, sizeof(c)));
		break;
	}
	case AS_GROUP_STAGE: {
		uint32_t k = as_trace_stage_at(t, b->space, b->start);
		snprintf(buf, len, "%s",
			 k == AS_NONE ? "(no stage)" : t->stages[k].name);
		break;
	}
	case AS_GROUP_CONTEXT:
		cx = as_trace_buffer_context(t, i);
		md = as_trace_buffer_metadata(t, i);
		if (!cx && !md)
			snprintf(buf, len, "(no context)");
		else
			snprintf(buf, len, "%s%s%s", cx ? cx : "",
				 cx && md ? " | " : "", md ? md : "");
		break;
	case AS_GROUP_BUFFER:
	default:
		name = as_trace_buffer_name(t, i);
		snprintf(buf, len, "%s", name ? name : "?");
		break;
	}
	return buf;
}
