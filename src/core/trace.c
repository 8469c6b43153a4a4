/*
 * The trace model and its builder.
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
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The slot of space `name` (not spaces[0]), or the empty one for it. */
static uint32_t space_slot(const struct as_builder *b, const char *name)
{
	uint32_t h = (uint32_t)(as_hash_str(name) & b->space_mask);
	while (b->space_slots[h] &&
	       strcmp(b->t->spaces[b->space_slots[h]].name, name) != 0)
		h = (h + 1) & b->space_mask;
	return h;
}

int as_builder_space_find(const struct as_builder *b, const char *name)
{
	const struct as_trace *t = b->t;
	if (strcmp(t->spaces[0].name, name) == 0)
		return 0;
	if (!b->space_slots)
		return -1;
	uint32_t h = space_slot(b, name);
	return b->space_slots[h] ? b->space_slots[h] : -1;
}

int as_builder_space(struct as_builder *b, const char *name,
		     uint64_t capacity)
{
	struct as_trace *t = b->t;
	int found = as_builder_space_find(b, name);
	if (found >= 0) {
		if (capacity)
			t->spaces[found].capacity = capacity;
		return found;
	}
	if (t->nspaces >= AS_MAX_SPACES)
		return AS_EINVAL;
	/* Slots for twice the spaces: rehash when half full. */
	if (2u * t->nspaces >= b->space_mask) {
		uint32_t cap = b->space_mask ? 2 * (b->space_mask + 1) : 64;
		uint16_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return AS_ENOMEM;
		free(b->space_slots);
		b->space_slots = n;
		b->space_mask = cap - 1;
		for (uint16_t i = 1; i < t->nspaces; i++)
			n[space_slot(b, t->spaces[i].name)] = i;
	}
	if (!as_builder_grow((void **)&t->spaces, &b->cap_spaces, t->nspaces + 1u,
		  sizeof(*t->spaces)))
		return AS_ENOMEM;
	struct as_space *n = t->spaces;
	n[t->nspaces].name = as_builder_intern(b, name);
	n[t->nspaces].capacity = capacity;
	if (!n[t->nspaces].name)
		return AS_ENOMEM;
	b->space_slots[space_slot(b, name)] = t->nspaces;
	return t->nspaces++;
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
				   "size %llu overflows 64 bits with its "
				   "alignment",
				   (unsigned long long)size);
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
static void end_live(struct as_builder *b)
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
	end_live(b);
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

static uint32_t sym_slot(const struct as_builder *b, const char *name)
{
	uint32_t h = (uint32_t)(as_hash_str(name) & b->sym_mask);
	while (b->sym_slots[h] &&
	       strcmp(b->t->symbols[b->sym_slots[h] - 1], name) != 0)
		h = (h + 1) & b->sym_mask;
	return h;
}

int64_t as_builder_symbol(struct as_builder *b, const char *name)
{
	struct as_trace *t = b->t;
	if (b->sym_slots) {
		uint32_t h = sym_slot(b, name);
		if (b->sym_slots[h])
			return b->sym_slots[h] - 1;
	}
	if (t->nsymbols >= UINT32_MAX / 4)
		return AS_ENOMEM;
	if (2u * (t->nsymbols + 1) > b->sym_mask) { /* keep it half empty */
		uint32_t cap = b->sym_mask ? 2 * (b->sym_mask + 1) : 64;
		uint32_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return AS_ENOMEM;
		free(b->sym_slots);
		b->sym_slots = n;
		b->sym_mask = cap - 1;
		for (uint32_t i = 0; i < t->nsymbols; i++)
			n[sym_slot(b, t->symbols[i])] = i + 1;
	}
	if (!as_builder_grow((void **)&t->symbols, &b->cap_symbols, t->nsymbols + 1,
		  sizeof(*t->symbols)))
		return AS_ENOMEM;
	if (!(t->symbols[t->nsymbols] = as_builder_intern(b, name)))
		return AS_ENOMEM;
	b->sym_slots[sym_slot(b, name)] = t->nsymbols + 1;
	return t->nsymbols++;
}

/* The hash of a stack: its text, or its address. */
static uint32_t stack_hash(const char *s, bool by_text)
{
	if (by_text)
		return (uint32_t)as_hash_str(s);
	uint64_t x = (uint64_t)(uintptr_t)s;
	return (uint32_t)as_splitmix64(&x);
}

/*
 * The index of stack `s` (by text, or by address for strings a reader
 * interned), added when new: by text, a copy in the arena. AS_NONE when
 * memory ran out.
 */
static uint32_t stack_index(struct as_builder *b, const char *s, bool by_text)
{
	struct as_trace_private *p = b->t->priv;
	uint32_t **slots = by_text ? &b->stack_text : &b->stack_ptr;
	uint32_t *mask = by_text ? &b->stack_text_mask : &b->stack_ptr_mask;
	if (*slots) {
		uint32_t h = stack_hash(s, by_text) & *mask;
		for (uint32_t v; (v = (*slots)[h]); h = (h + 1) & *mask) {
			const char *o = p->stacks[v - 1];
			if (by_text ? strcmp(o, s) == 0 : o == s)
				return v - 1;
		}
	}
	if (p->nstacks >= UINT32_MAX / 4)
		return AS_NONE;
	if (2u * (p->nstacks + 1) > *mask) { /* keep it half empty */
		uint32_t cap = *mask ? 2 * (*mask + 1) : 64;
		uint32_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return AS_NONE;
		for (uint32_t i = 0; *slots && i <= *mask; i++) {
			uint32_t v = (*slots)[i];
			if (!v)
				continue;
			uint32_t h = stack_hash(p->stacks[v - 1], by_text) &
				     (cap - 1);
			while (n[h])
				h = (h + 1) & (cap - 1);
			n[h] = v;
		}
		free(*slots);
		*slots = n;
		*mask = cap - 1;
	}
	if (!as_builder_grow((void **)&p->stacks, &b->cap_stacks,
			     p->nstacks + 1, sizeof(*p->stacks)))
		return AS_NONE;
	const char *c = by_text ? as_builder_intern(b, s) : s;
	if (!c)
		return AS_NONE;
	uint32_t h = stack_hash(c, by_text) & *mask;
	while ((*slots)[h])
		h = (h + 1) & *mask;
	p->stacks[p->nstacks] = c;
	(*slots)[h] = ++p->nstacks;
	return p->nstacks - 1;
}

/* Buffer idx takes stack k: stack numbers for every buffer so far. */
static int set_stack(struct as_builder *b, uint32_t idx, uint32_t k)
{
	struct as_trace *t = b->t;
	struct as_trace_private *p = t->priv;
	if (k == AS_NONE)
		return AS_ENOMEM;
	if (!as_builder_grow((void **)&p->stack_of, &b->cap_frames,
			     t->nbuffers, sizeof(*p->stack_of)))
		return AS_ENOMEM;
	for (uint32_t i = b->nframes; i < t->nbuffers; i++)
		p->stack_of[i] = AS_NONE;
	b->nframes = t->nbuffers;
	p->stack_of[idx] = k;
	return AS_OK;
}

int as_builder_frames_interned(struct as_builder *b, uint32_t idx,
			       const char *frames)
{
	if (idx >= b->t->nbuffers)
		return AS_EINVAL;
	return set_stack(b, idx, stack_index(b, frames, false));
}

int as_builder_frames(struct as_builder *b, uint32_t idx, const char *frames)
{
	if (idx >= b->t->nbuffers)
		return AS_EINVAL;
	return set_stack(b, idx, stack_index(b, frames, true));
}

const char *as_trace_buffer_frames(const struct as_trace *t, uint32_t i)
{
	if (!t || i >= t->nbuffers || !t->priv || !t->priv->stack_of)
		return NULL;
	uint32_t k = t->priv->stack_of[i];
	return k < t->priv->nstacks ? t->priv->stacks[k] : NULL;
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

void as_builder_namer(struct as_builder *b, int (*namer)(struct as_trace *t))
{
	b->t->priv->namer = namer;
}

int as_trace_name_all(const struct as_trace *t)
{
	if (!t->priv || !t->priv->namer || t->priv->named)
		return AS_OK;
	/*
	 * The one place a finished trace changes: the names it made no room
	 * for until now, what they would have been at load. The trace is
	 * the caller's memory, not const storage.
	 */
	struct as_trace *w = (struct as_trace *)t;
	int err = w->priv->namer(w);
	if (err == AS_OK)
		w->priv->named = true;
	return err;
}

const char *as_trace_buffer_name(const struct as_trace *t, uint32_t i)
{
	if (!t || i >= t->nbuffers)
		return NULL;
	if (!t->buffers[i].name && as_trace_name_all(t) != AS_OK)
		return NULL;
	return t->buffers[i].name;
}

uint64_t as_trace_alloc_free_events(const struct as_trace *t)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < t->nevents; i++)
		n += t->events[i].kind == AS_EV_ALLOC ||
		     t->events[i].kind == AS_EV_FREE;
	return n;
}

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
		end_live(b);
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
	struct as_trace_private *tp = t->priv;
	if (tp->stack_of && b->nframes < t->nbuffers) {
		if (!as_builder_grow((void **)&tp->stack_of, &b->cap_frames,
				     t->nbuffers, sizeof(*tp->stack_of)))
			return AS_ENOMEM;
		for (uint32_t i = b->nframes; i < t->nbuffers; i++)
			tp->stack_of[i] = AS_NONE;
		b->nframes = t->nbuffers;
	}
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
