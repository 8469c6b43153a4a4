/*
 * Explain in one pass: a heaptrack or mtrace recording's peak, grouped by
 * stack or frame, without keeping its blocks (as_trace_load_live hands
 * them here as they come).
 *
 * As the recording goes: the bytes live (blocks of positive size), the
 * running maximum and its step (the earliest: only a strictly larger sum
 * moves it), and per live block its size, stack and rank among the
 * allocations (ranks follow the starts). What was live at the maximum is
 * the blocks still live that started at or before it, plus the blocks
 * freed since that had: those are summed per stack under the number of
 * the maximum they belong to, so a new maximum costs O(1) (a stack's
 * stale sums are dropped when it next frees such a block) and a free
 * O(1). Temporaries (freed before any other allocation of positive size
 * started) are summed per stack when freed; never freed is what is live
 * at the end.
 *
 * After the last line each list's sums per stack become one buffer each in
 * the trace handed back (size 0, the stack's frames), made in the order of
 * the stack's representative block (the first of the largest), so the
 * grouper adds them in the order its buffers would come in a full load
 * and picks the same representative. The result is what as_explain_trace
 * gives on the whole trace; the tests compare both.
 *
 * Memory: 16 bytes per live block and the stacks' sums: it follows the
 * live set, not the recording's length.
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

/* A list's sums for one stack: `rep` is the rank of its first block of
 * the largest size (AS_NONE: no block). */
struct sums {
	uint64_t bytes, count, largest;
	uint32_t rep;
};

enum { LIVE, TEMPORARY, NEVER_FREED, NLISTS };

/* A live block. Ranks follow the starts, so they stand for them. */
struct rec {
	uint64_t size;
	uint32_t slot;          /* its stack, AS_NONE while free */
	uint32_t index;         /* its rank; the next free record when free */
};

struct stack_slot {
	const char *stack;      /* NULL: no frames */
	struct sums tmp;
	/* Its blocks freed since the maximum that were live at it: the sums
	 * hold for maximum number `epoch` only (older ones are stale). */
	struct sums freed;
	uint64_t epoch;
};

/* One list's stacks in the trace: buffer `buffer` stands for slot `slot`. */
struct made {
	uint32_t slot, buffer;
};

struct as_explain_stream {
	struct as_explain_options o;
	struct rec *recs;
	uint32_t nrecs, cap_recs, free_head;
	struct stack_slot *slots;
	uint32_t nslots, cap_slots;
	uint32_t *map;          /* stack pointer -> slot + 1 (0: empty) */
	uint32_t map_mask;
	const char *last_stack; /* a one-entry cache before the map */
	uint32_t last_slot;
	uint64_t now, nevents, live, best, peak, us, peak_us;
	uint64_t epoch;         /* maxima so far */
	uint32_t nbuffers;
	uint32_t peak_index;    /* the rank of the block that made the peak */
	uint32_t last_index;    /* the latest block of positive size */
	bool has_peak, has_clock;
	/* After the end: each list's sums per slot and its buffers. */
	struct sums *agg[NLISTS];
	struct made *made[NLISTS];
	uint32_t nmade[NLISTS];
	bool ended;
};

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	return as_builder_grow(arr, cap, need, elem);
}

/* Sums y into x: the representative is the first block (lowest rank) of
 * the largest size, whatever the order the blocks come in. */
static void sums_merge(struct sums *x, const struct sums *y)
{
	if (y->rep == AS_NONE)
		return;
	x->bytes = y->bytes > UINT64_MAX - x->bytes ? UINT64_MAX
						    : x->bytes + y->bytes;
	x->count += y->count;
	if (x->rep == AS_NONE || y->largest > x->largest ||
	    (y->largest == x->largest && y->rep < x->rep)) {
		x->largest = y->largest;
		x->rep = y->rep;
	}
}

static void sums_add(struct sums *x, uint64_t size, uint32_t index)
{
	struct sums one = {size, 1, size, index};
	sums_merge(x, &one);
}

static uint32_t map_slot(const struct as_explain_stream *s, const char *p)
{
	return (uint32_t)as_hash_u64((uint64_t)(uintptr_t)p) & s->map_mask;
}

static int map_grow(struct as_explain_stream *s)
{
	uint32_t cap = s->map ? (s->map_mask + 1) * 2 : 256;
	uint32_t *m = calloc(cap, sizeof(*m));
	if (!m)
		return AS_ENOMEM;
	free(s->map);
	s->map = m;
	s->map_mask = cap - 1;
	for (uint32_t k = 0; k < s->nslots; k++) {
		uint32_t i = map_slot(s, s->slots[k].stack);
		while (m[i])
			i = (i + 1) & s->map_mask;
		m[i] = k + 1;
	}
	return AS_OK;
}

/* The slot of `stack`, added when new; AS_NONE when memory runs out. */
static uint32_t slot_of(struct as_explain_stream *s, const char *stack)
{
	if (s->nslots && stack == s->last_stack)
		return s->last_slot;
	uint32_t i = map_slot(s, stack);
	for (; s->map[i]; i = (i + 1) & s->map_mask)
		if (s->slots[s->map[i] - 1].stack == stack)
			break;
	uint32_t k;
	if (s->map[i]) {
		k = s->map[i] - 1;
	} else {
		if (s->nslots == UINT32_MAX - 1 ||
		    !grow((void **)&s->slots, &s->cap_slots, s->nslots + 1,
			  sizeof(*s->slots)))
			return AS_NONE;
		k = s->nslots;
		s->slots[k] = (struct stack_slot){.stack = stack,
						  .tmp = {.rep = AS_NONE},
						  .freed = {.rep = AS_NONE}};
		s->map[i] = ++s->nslots;
		if (s->nslots * 2 > s->map_mask + 1 && map_grow(s))
			return AS_NONE;
	}
	s->last_stack = stack;
	return s->last_slot = k;
}

static int on_alloc(void *ctx, uint64_t size, uint64_t align,
		    const char *stack, uint64_t line, uint32_t *id,
		    struct as_diag *diag)
{
	struct as_explain_stream *s = ctx;
	/* The builder's checks, so that both paths refuse the same files. */
	if (size > UINT64_MAX - align)
		return as_diag_set(diag, line, AS_EPARSE,
				   "size %llu overflows 64 bits with its "
				   "alignment",
				   (unsigned long long)size);
	if (s->nbuffers == AS_MAX_BUFFERS)
		return as_diag_set(diag, line, AS_EPARSE,
				   "too many buffers (at most %u)",
				   AS_MAX_BUFFERS);
	if (size > UINT64_MAX - s->live)
		return as_diag_set(diag, line, AS_EPARSE,
				   "more than 2^64-1 bytes live at once");
	uint32_t slot = slot_of(s, stack);
	if (slot == AS_NONE)
		return AS_ENOMEM;
	uint32_t r = s->free_head;
	if (r == AS_NONE) {
		if (s->nrecs == AS_NONE - 1 ||
		    !grow((void **)&s->recs, &s->cap_recs, s->nrecs + 1,
			  sizeof(*s->recs)))
			return AS_ENOMEM;
		r = s->nrecs++;
	} else {
		s->free_head = s->recs[r].index;
	}
	uint64_t start = s->now++;
	uint32_t index = s->nbuffers++;
	s->recs[r] = (struct rec){size, slot, index};
	s->nevents++;
	if (size > 0) {
		s->live += size;
		s->last_index = index;
		if (s->live > s->best) { /* a new maximum: no block freed since */
			s->best = s->live;
			s->peak = start;
			s->peak_index = index;
			s->peak_us = s->us;
			s->has_peak = true;
			s->epoch++;
		}
	}
	*id = r;
	return AS_OK;
}

static int on_free(void *ctx, uint32_t id, uint64_t line,
		   struct as_diag *diag)
{
	struct as_explain_stream *s = ctx;
	if (id >= s->nrecs || s->recs[id].slot == AS_NONE)
		return as_diag_set(diag, line, AS_EPARSE,
				   "free of buffer %u, which is not live", id);
	struct rec *r = &s->recs[id];
	s->now++;
	s->nevents++;
	struct stack_slot *k = &s->slots[r->slot];
	if (r->size > 0) {
		s->live -= r->size;
		if (s->last_index == r->index) /* nothing started since */
			sums_add(&k->tmp, r->size, r->index);
	}
	if (s->has_peak && r->index <= s->peak_index) { /* live at it */
		if (k->epoch != s->epoch) {
			k->freed = (struct sums){.rep = AS_NONE};
			k->epoch = s->epoch;
		}
		sums_add(&k->freed, r->size, r->index);
	}
	r->slot = AS_NONE;
	r->index = s->free_head;
	s->free_head = id;
	return AS_OK;
}

static void on_clock(void *ctx, uint64_t us)
{
	struct as_explain_stream *s = ctx;
	s->us = us;
	s->has_clock = true;
}

/* Sort key of a list's slots: their representative's rank. */
static bool by_rep(uint32_t a, uint32_t b, const void *ctx)
{
	const struct sums *x = ctx;
	return x[a].rep < x[b].rep;
}

/* List l's slots with blocks, each a buffer of t in their reps' order. */
static int make_buffers(struct as_explain_stream *s, struct as_builder *b,
			int l, struct as_diag *diag)
{
	const struct sums *agg = s->agg[l];
	uint32_t n = 0, *ord = malloc(sizeof(*ord) * ((size_t)s->nslots + 1));
	s->made[l] = malloc(sizeof(*s->made[l]) * ((size_t)s->nslots + 1));
	if (!ord || !s->made[l]) {
		free(ord);
		return AS_ENOMEM;
	}
	for (uint32_t k = 0; k < s->nslots; k++)
		if (agg[k].count)
			ord[n++] = k;
	int err = as_sort_u32(ord, n, by_rep, agg);
	for (uint32_t j = 0; j < n && !err; j++) {
		char name[32];
		snprintf(name, sizeof(name), "%s#%u",
			 l == LIVE ? "live" : l == TEMPORARY ? "tmp" : "end",
			 j);
		int64_t idx = as_builder_alloc_unique(b, name, 0, 1, 0, diag);
		if (idx < 0) {
			err = (int)idx;
			break;
		}
		const char *st = s->slots[ord[j]].stack;
		if (st && (err = as_builder_frames_interned(b, (uint32_t)idx,
							    st)))
			break;
		s->made[l][s->nmade[l]++] =
			(struct made){ord[j], (uint32_t)idx};
	}
	free(ord);
	return err;
}

static int on_end(void *ctx, struct as_builder *b, struct as_diag *diag)
{
	struct as_explain_stream *s = ctx;
	for (int l = 0; l < NLISTS; l++) {
		s->agg[l] = malloc(sizeof(*s->agg[l]) * ((size_t)s->nslots + 1));
		if (!s->agg[l])
			return AS_ENOMEM;
		for (uint32_t k = 0; k < s->nslots; k++)
			s->agg[l][k] = l == TEMPORARY
					       ? s->slots[k].tmp
					       : (struct sums){.rep = AS_NONE};
	}
	for (uint32_t r = 0; r < s->nrecs; r++) {
		const struct rec *x = &s->recs[r];
		if (x->slot == AS_NONE)
			continue;
		sums_add(&s->agg[NEVER_FREED][x->slot], x->size, x->index);
		if (s->has_peak && x->index <= s->peak_index)
			sums_add(&s->agg[LIVE][x->slot], x->size, x->index);
	}
	for (uint32_t k = 0; s->has_peak && k < s->nslots; k++)
		if (s->slots[k].epoch == s->epoch)
			sums_merge(&s->agg[LIVE][k], &s->slots[k].freed);
	int err = AS_OK;
	for (int l = 0; l < NLISTS && !err; l++)
		err = make_buffers(s, b, l, diag);
	s->ended = !err;
	return err;
}

int as_explain_stream_create(const struct as_explain_options *o,
			     struct as_explain_stream **out,
			     struct as_live_sink *sink)
{
	struct as_explain_options d;
	as_explain_options_init(&d);
	if (!o)
		o = &d;
	if (!out || !sink)
		return AS_EINVAL;
	/* Other groupings read what a trace without its blocks lacks. */
	if (o->by != AS_GROUP_STACK && o->by != AS_GROUP_FRAME)
		return AS_EUNSUPPORTED;
	struct as_explain_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return AS_ENOMEM;
	s->o = *o;
	s->free_head = AS_NONE;
	if (map_grow(s)) {
		free(s);
		return AS_ENOMEM;
	}
	*sink = (struct as_live_sink){.ctx = s, .alloc = on_alloc,
				      .free = on_free, .clock = on_clock,
				      .end = on_end};
	*out = s;
	return AS_OK;
}

void as_explain_stream_destroy(struct as_explain_stream *s)
{
	if (!s)
		return;
	for (int l = 0; l < NLISTS; l++) {
		free(s->agg[l]);
		free(s->made[l]);
	}
	free(s->recs);
	free(s->slots);
	free(s->map);
	free(s);
}

/* List l as as_explain_trace makes it. */
static int stream_list(struct as_explain_stream *s, struct as_explain *e,
		       int l, struct as_explain_list *out)
{
	struct grouper *g;
	int err = as_x_grouper_create(e->trace, &e->opts, NULL, &g);
	for (uint32_t j = 0; !err && j < s->nmade[l]; j++) {
		const struct sums *x = &s->agg[l][s->made[l][j].slot];
		err = as_x_grouper_add_n(g, s->made[l][j].buffer, x->bytes,
					 x->count, x->largest);
	}
	if (!err)
		err = as_x_grouper_list(g, e, l == TEMPORARY, out);
	as_x_grouper_destroy(g);
	return err;
}

int as_explain_stream_finish(struct as_explain_stream *s,
			     const struct as_trace *t,
			     struct as_explain **out)
{
	if (!s || !t || !out)
		return AS_EINVAL;
	if (!s->ended) /* not a malloc recording: t is whole */
		return AS_EUNSUPPORTED;
	if (t->nspaces != 1) /* (heaptrack and mtrace have one) */
		return AS_EINVAL;
	struct as_explain *e;
	int err = as_x_new(t, &s->o, t->nspaces, &e);
	if (err)
		return err;
	struct as_explain_private *p = e->priv;
	p->streamed = true;
	p->has_clock = s->has_clock;
	p->nbuffers = s->nbuffers;
	p->nevents = s->nevents;
	p->peak_us = s->peak_us;
	e->has_peak = s->has_peak;
	e->peak_time = s->has_peak ? s->peak : 0;
	e->peak_bytes = s->has_peak ? s->best : 0;
	struct as_explain_space *x = &e->spaces[0];
	x->name = t->spaces[0].name;
	if (s->has_peak) {
		x->has_peak = true;
		x->peak_bytes = x->live_bytes = s->best;
		x->peak_time = s->peak;
		err = stream_list(s, e, LIVE, &x->live);
		x->live_count = x->live.count;
	}
	if (!err)
		err = stream_list(s, e, TEMPORARY, &x->temporaries);
	if (!err)
		err = stream_list(s, e, NEVER_FREED, &x->never_freed);
	if (err) {
		as_explain_destroy(e);
		return err;
	}
	*out = e;
	return AS_OK;
}
