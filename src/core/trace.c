/*
 * The trace model and its builder: the string arena, the builder's life,
 * buffers and their lifetimes (the live-name table, operations, cases,
 * buffers with explicit lifetimes) and destroying a trace. names.c keeps
 * what the trace names (spaces, symbols, stacks, buffer names), finish.c
 * finishes it.
 *
 * Invariants of a finished trace:
 *  - buffers[] are in allocation order; events[] in time order (for traces
 *    with explicit times: frees before allocations at equal times);
 *  - every buffer has start < end <= end_time, except a case boundary or
 *    the end of the trace may end a buffer it started at the same time
 *    (start == end is never produced by the ops format, which counts each
 *    operation as one time step);
 *  - spaces[0] and cases[0] always exist.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

/* ---- Arena ---- */

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	char data[];
};

char *as_arena_dup(struct as_arena *a, const char *s, size_t len)
{
	struct arena_block *blk = a->head;
	if (!blk || blk->cap - blk->used < len + 1) {
		size_t cap = len + 1 > 65536 ? len + 1 : 65536;
		blk = malloc(sizeof(*blk) + cap);
		if (!blk)
			return NULL;
		blk->used = 0;
		blk->cap = cap;
		blk->next = a->head;
		a->head = blk;
	}
	char *out = blk->data + blk->used;
	memcpy(out, s, len);
	out[len] = 0;
	blk->used += len + 1;
	return out;
}

void as_arena_finish(struct as_arena *a)
{
	struct arena_block *blk = a->head;
	while (blk) {
		struct arena_block *next = blk->next;
		free(blk);
		blk = next;
	}
	a->head = NULL;
}

/* ---- Builder ---- */


bool as_builder_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	uint64_t n = *cap ? (uint64_t)*cap * 2 : 64;
	while (n < need)
		n *= 2;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	if (n < need)
		return false;
	void *p = realloc(*arr, (size_t)n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = (uint32_t)n;
	return true;
}

static int live_rehash(struct as_builder *b, uint32_t cap)
{
	uint32_t *n = malloc((size_t)cap * sizeof(*n));
	uint32_t *nh = malloc((size_t)cap * sizeof(*nh));
	if (!n || !nh) {
		free(n);
		free(nh);
		return AS_ENOMEM;
	}
	memset(n, 0xff, (size_t)cap * sizeof(*n));
	uint32_t mask = cap - 1;
	if (b->live) {
		for (uint32_t i = 0; i <= b->live_mask; i++) {
			uint32_t v = b->live[i];
			if (v == AS_NONE)
				continue;
			uint32_t h = b->live_hash[i] & mask;
			while (n[h] != AS_NONE)
				h = (h + 1) & mask;
			n[h] = v;
			nh[h] = b->live_hash[i];
		}
	}
	free(b->live);
	free(b->live_hash);
	b->live = n;
	b->live_hash = nh;
	b->live_mask = mask;
	return AS_OK;
}

/*
 * The slot holding `name`, or the empty slot where it would go; *hash is
 * the name's hash, for the caller that fills the slot.
 */
static uint32_t live_slot(const struct as_builder *b, const char *name,
			  uint32_t *hash)
{
	uint32_t tag = (uint32_t)as_hash_str(name);
	uint32_t h = tag & b->live_mask;
	while (b->live[h] != AS_NONE &&
	       (b->live_hash[h] != tag ||
		strcmp(b->t->buffers[b->live[h]].name, name) != 0))
		h = (h + 1) & b->live_mask;
	*hash = tag;
	return h;
}

static void live_remove(struct as_builder *b, uint32_t slot)
{
	uint32_t mask = b->live_mask, i = slot, j = slot;
	b->live[i] = AS_NONE;
	for (;;) {
		j = (j + 1) & mask;
		if (b->live[j] == AS_NONE)
			break;
		uint32_t k = b->live_hash[j] & mask;
		/* Move j back to i unless its home k lies cyclically in (i, j]. */
		if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		b->live[i] = b->live[j];
		b->live_hash[i] = b->live_hash[j];
		b->live[j] = AS_NONE;
		i = j;
	}
	b->live_n--;
}

struct as_builder *as_builder_create(const char *path, const char *format)
{
	struct as_builder *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	struct as_trace *t = b->t = calloc(1, sizeof(*t));
	if (!t || !(t->priv = calloc(1, sizeof(*t->priv))))
		goto fail;
	t->path = as_arena_dup(&t->priv->strings, path, strlen(path));
	t->format = as_arena_dup(&t->priv->strings, format, strlen(format));
	t->spaces = calloc(1, sizeof(*t->spaces));
	t->cases = calloc(1, sizeof(*t->cases));
	if (!t->path || !t->format || !t->spaces || !t->cases ||
	    live_rehash(b, 64) != AS_OK)
		goto fail;
	t->spaces[0].name = "default";
	t->nspaces = 1;
	t->cases[0].options = "";
	t->ncases = 1;
	b->cap_cases = 1;
	b->cap_spaces = 1;
	return b;
fail:
	as_builder_destroy(b);
	return NULL;
}

void as_builder_destroy(struct as_builder *b)
{
	if (!b)
		return;
	as_trace_destroy(b->t);
	free(b->live);
	free(b->live_hash);
	free(b->space_slots);
	free(b->sym_slots);
	free(b->stack_text);
	free(b->stack_ptr);
	free(b->lines);
	as_strmap_finish(&b->ctx_map);
	free(b);
}

struct as_trace *as_builder_trace(struct as_builder *b)
{
	return b->t;
}

const char *as_builder_intern(struct as_builder *b, const char *s)
{
	return as_arena_dup(&b->t->priv->strings, s, strlen(s));
}

int as_builder_own(struct as_builder *b, void *block)
{
	struct as_trace_private *p = b->t->priv;
	if (p->nowned == p->capowned) {
		size_t cap = p->capowned ? p->capowned * 2 : 16;
		void **n = realloc(p->owned, cap * sizeof(*n));
		if (!n) {
			free(block);
			return AS_ENOMEM;
		}
		p->owned = n;
		p->capowned = cap;
	}
	p->owned[p->nowned++] = block;
	return AS_OK;
}

struct as_buffer *as_builder_buffer(struct as_builder *b, uint32_t index)
{
	return index < b->t->nbuffers ? &b->t->buffers[index] : NULL;
}

static int push_event(struct as_builder *b, uint32_t kind, uint32_t arg)
{
	struct as_trace *t = b->t;
	if (t->nevents == UINT32_MAX ||
	    !as_builder_grow((void **)&t->events, &b->cap_events, t->nevents + 1,
		  sizeof(*t->events)))
		return AS_ENOMEM;
	t->events[t->nevents++] = (struct as_event){kind, arg};
	return AS_OK;
}

static int check_align(uint64_t align, uint64_t line, struct as_diag *diag,
		       uint8_t *log2)
{
	if (align == 0 || (align & (align - 1)) != 0)
		return as_diag_set(diag, line, AS_EPARSE,
				   "alignment %llu is not a power of two",
				   (unsigned long long)align);
	uint8_t l = 0;
	while (((uint64_t)1 << l) != align)
		l++;
	*log2 = l;
	return AS_OK;
}

static int64_t new_buffer(struct as_builder *b, const char *name,
			  uint64_t size, uint64_t align, uint64_t line,
			  struct as_diag *diag)
{
	struct as_trace *t = b->t;
	uint8_t log2 = 0;
	int err = check_align(align, line, diag, &log2);
	if (err)
		return err;
	if (size > UINT64_MAX - align)
		return as_diag_set(diag, line, AS_EPARSE,
				   "size %llu is too large (at most %llu with "
				   "alignment %llu)",
				   (unsigned long long)size,
				   (unsigned long long)(UINT64_MAX - align),
				   (unsigned long long)align);
	if (t->nbuffers == AS_MAX_BUFFERS)
		return as_diag_set(diag, line, AS_EPARSE,
				   "too many buffers (at most %u)",
				   AS_MAX_BUFFERS);
	size_t namelen = name ? strlen(name) : 0;
	if (namelen > AS_NAME_MAX)
		return as_diag_set(diag, line, AS_EPARSE,
				   "name is too long (%zu bytes; at most %d)",
				   namelen, AS_NAME_MAX);
	if (!as_builder_grow((void **)&t->buffers, &b->cap_buffers, t->nbuffers + 1,
		  sizeof(*t->buffers)))
		return AS_ENOMEM;
	/* No name: the namer makes it when it is first read. */
	const char *n = name ? as_arena_dup(&t->priv->strings, name, namelen)
			     : NULL;
	if (name && !n)
		return AS_ENOMEM;
	struct as_buffer *buf = &t->buffers[t->nbuffers];
	*buf = (struct as_buffer){
		.name = n,
		.size = size,
		.recorded = AS_NO_OFFSET,
		.alias_of = AS_NONE,
		.symbol = AS_NONE,
		.align_log2 = log2,
	};
	if (as_builder_note_line(b, line))
		return AS_ENOMEM;
	return t->nbuffers++;
}

/* A buffer allocated now, live until freed: its alloc event. */
static int64_t open_buffer(struct as_builder *b, const char *name,
			   uint64_t size, uint64_t align, uint64_t line,
			   struct as_diag *diag)
{
	if (b->timed)
		return as_diag_set(diag, line, AS_EPARSE,
				   "operations cannot follow buffers with "
				   "explicit lifetimes");
	int64_t idx = new_buffer(b, name, size, align, line, diag);
	if (idx < 0)
		return idx;
	struct as_buffer *buf = &b->t->buffers[idx];
	buf->start = b->time++;
	buf->end = UINT64_MAX;
	b->ordered = true;
	int err = push_event(b, AS_EV_ALLOC, (uint32_t)idx);
	return err ? err : idx;
}

int64_t as_builder_alloc(struct as_builder *b, const char *name, uint64_t size,
			 uint64_t align, uint64_t line, struct as_diag *diag)
{
	uint32_t hash;
	uint32_t slot = live_slot(b, name, &hash);
	if (b->live[slot] != AS_NONE) /* (none while the builder is timed) */
		return as_diag_set(diag, line, AS_EPARSE,
				   "alloc of '%s', which is still live "
				   "(allocated at time %llu)",
				   name,
				   (unsigned long long)b->t->buffers[b->live[slot]]
					   .start);
	int64_t idx = open_buffer(b, name, size, align, line, diag);
	if (idx < 0)
		return idx;
	b->live[slot] = (uint32_t)idx;
	b->live_hash[slot] = hash;
	if (++b->live_n * 2 > b->live_mask + 1 &&
	    live_rehash(b, (b->live_mask + 1) * 2) != AS_OK)
		return AS_ENOMEM;
	return idx;
}

int64_t as_builder_alloc_unique(struct as_builder *b, const char *name,
				uint64_t size, uint64_t align, uint64_t line,
				struct as_diag *diag)
{
	int64_t idx = open_buffer(b, name, size, align, line, diag);
	if (idx >= 0)
		b->unique_live++;
	return idx;
}

int as_builder_free_index(struct as_builder *b, uint32_t idx, uint64_t line,
			  struct as_diag *diag)
{
	/*
	 * The caller's table says idx is live: reading the buffer back to
	 * check would cost a cache miss per free on large traces.
	 */
	struct as_trace *t = b->t;
	if (idx >= t->nbuffers || b->unique_live == 0)
		return as_diag_set(diag, line, AS_EPARSE,
				   "free of buffer %u, which is not live",
				   idx);
	t->buffers[idx].end = b->time++;
	b->unique_live--;
	return push_event(b, AS_EV_FREE, idx);
}

int as_builder_leak_index(struct as_builder *b, uint32_t idx)
{
	struct as_trace *t = b->t;
	if (idx >= t->nbuffers || b->unique_live == 0)
		return AS_EINVAL;
	t->buffers[idx].end = b->time;
	t->buffers[idx].flags |= AS_BUF_NEVER_FREED;
	b->unique_live--;
	return AS_OK;
}

int as_builder_free(struct as_builder *b, const char *name, uint64_t line,
		    struct as_diag *diag)
{
	uint32_t hash;
	uint32_t slot = live_slot(b, name, &hash);
	uint32_t idx = b->live[slot];
	if (idx == AS_NONE) {
		bool known = false;
		for (uint32_t i = b->t->nbuffers; i-- > 0;)
			if (b->t->buffers[i].name &&
			    strcmp(b->t->buffers[i].name, name) == 0) {
				known = true;
				break;
			}
		return as_diag_set(diag, line, AS_EPARSE,
				   known ? "free of '%s', which is already freed"
					 : "free of unknown name '%s'",
				   name);
	}
	b->t->buffers[idx].end = b->time++;
	live_remove(b, slot);
	return push_event(b, AS_EV_FREE, idx);
}

/* End every live buffer at the current time (case boundary, end of trace). */
void as_builder_end_live(struct as_builder *b)
{
	for (uint32_t i = 0; i <= b->live_mask; i++) {
		uint32_t v = b->live[i];
		if (v == AS_NONE)
			continue;
		b->t->buffers[v].end = b->time;
		b->t->buffers[v].flags |= AS_BUF_NEVER_FREED;
		b->live[i] = AS_NONE;
	}
	b->live_n = 0;
	/*
	 * Buffers of as_builder_alloc_unique, not in the table: the ones
	 * still open since the last sweep (named ones are ended above).
	 */
	struct as_trace *t = b->t;
	for (uint32_t i = b->sweep_from; b->unique_live && i < t->nbuffers;
	     i++)
		if (t->buffers[i].end == UINT64_MAX) {
			t->buffers[i].end = b->time;
			t->buffers[i].flags |= AS_BUF_NEVER_FREED;
			b->unique_live--;
		}
	b->sweep_from = t->nbuffers;
}

int as_builder_case(struct as_builder *b, const char *options,
		    struct as_diag *diag)
{
	struct as_trace *t = b->t;
	const char *opts = as_builder_intern(b, options);
	if (!opts)
		return AS_ENOMEM;
	struct as_case *cur = &t->cases[t->ncases - 1];
	bool empty = true;
	for (uint32_t i = cur->first_event; i < t->nevents; i++)
		if (t->events[i].kind == AS_EV_ALLOC ||
		    t->events[i].kind == AS_EV_FREE)
			empty = false;
	if (empty) { /* a config before any operation sets this case */
		cur->options = opts;
		return AS_OK;
	}
	as_builder_end_live(b);
	if (!as_builder_grow((void **)&t->cases, &b->cap_cases, t->ncases + 1,
		  sizeof(*t->cases)))
		return AS_ENOMEM;
	t->cases[t->ncases] = (struct as_case){opts, t->nevents};
	int err = push_event(b, AS_EV_CASE, t->ncases);
	t->ncases++;
	return err;
}

int as_builder_query(struct as_builder *b, enum as_query q)
{
	return push_event(b, AS_EV_QUERY, q);
}

int64_t as_builder_add_timed(struct as_builder *b, const char *name,
			     uint64_t size, uint64_t align, uint64_t start,
			     uint64_t end, uint64_t line, struct as_diag *diag)
{
	if (b->ordered)
		return as_diag_set(diag, line, AS_EPARSE,
				   "buffers with explicit lifetimes cannot "
				   "follow operations");
	if (end <= start)
		return as_diag_set(diag, line, AS_EPARSE,
				   "lifetime [%llu, %llu) is empty: upper must "
				   "be greater than lower",
				   (unsigned long long)start,
				   (unsigned long long)end);
	if (end == UINT64_MAX)
		return as_diag_set(diag, line, AS_EPARSE,
				   "time %llu is too large",
				   (unsigned long long)end);
	int64_t idx = new_buffer(b, name, size, align, line, diag);
	if (idx < 0)
		return idx;
	b->timed = true;
	b->t->buffers[idx].start = start;
	b->t->buffers[idx].end = end;
	return idx;
}

int64_t as_builder_lookup(struct as_builder *b, const char *name)
{
	uint32_t hash;
	uint32_t slot = live_slot(b, name, &hash);
	if (b->live[slot] != AS_NONE)
		return b->live[slot];
	for (uint32_t i = b->t->nbuffers; i-- > 0;)
		if (b->t->buffers[i].name &&
		    strcmp(b->t->buffers[i].name, name) == 0)
			return i;
	return -1;
}

uint64_t as_trace_alloc_free_events(const struct as_trace *t)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < t->nevents; i++)
		n += t->events[i].kind == AS_EV_ALLOC ||
		     t->events[i].kind == AS_EV_FREE;
	return n;
}

void as_trace_destroy(struct as_trace *t)
{
	if (!t)
		return;
	if (t->priv) {
		for (size_t i = 0; i < t->priv->nowned; i++)
			free(t->priv->owned[i]);
		free(t->priv->stacks);
		free(t->priv->stack_of);
		free(t->priv->ctx_strs);
		free(t->priv->context_of);
		free(t->priv->metadata_of);
		free(t->priv->cuts);
		free(t->priv->owned);
		as_arena_finish(&t->priv->strings);
		free(t->priv);
	}
	free(t->buffers);
	free(t->events);
	free(t->spaces);
	free(t->cases);
	free(t->symbols);
	free(t->ops);
	free(t->shapes);
	free(t->clock);
	free(t->marks);
	free(t->segments);
	free(t->info);
	free(t->reallocs);
	free(t->input_stats);
	free(t->addr_map);
	free(t->stages);
	free(t);
}
