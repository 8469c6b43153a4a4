/*
 * What the trace names: spaces and symbols found by name, stacks by text
 * (one string per stack, a 4-byte stack number per buffer), and the names
 * of buffers a reader added without one, made by its namer on first read.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

/* ---- Spaces ---- */

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

/* ---- Symbols ---- */

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

/* ---- Stacks ---- */

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

int as_builder_stacks_fill(struct as_builder *b)
{
	struct as_trace *t = b->t;
	struct as_trace_private *p = t->priv;
	if (!as_builder_grow((void **)&p->stack_of, &b->cap_frames,
			     t->nbuffers, sizeof(*p->stack_of)))
		return AS_ENOMEM;
	for (uint32_t i = b->nframes; i < t->nbuffers; i++)
		p->stack_of[i] = AS_NONE;
	b->nframes = t->nbuffers;
	return AS_OK;
}

/* Buffer idx takes stack k: stack numbers for every buffer so far. */
static int set_stack(struct as_builder *b, uint32_t idx, uint32_t k)
{
	if (k == AS_NONE)
		return AS_ENOMEM;
	int err = as_builder_stacks_fill(b);
	if (err)
		return err;
	b->t->priv->stack_of[idx] = k;
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

/* ---- Buffer names ---- */

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
