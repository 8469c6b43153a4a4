#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/build.h"
#include "core/internal.h"
#include "core/trace_private.h"

/*
 * One attachment of a plan (as_plan_attach): a strategy's bytes under its
 * key, in a list in the order they were attached.
 */
struct as_plan_ext {
	struct as_plan_ext *next;
	const char *key;
	size_t size;
	max_align_t data[];
};

static void ext_free(struct as_plan_ext *e)
{
	while (e) {
		struct as_plan_ext *next = e->next;
		free(e);
		e = next;
	}
}

/* A new attachment holding a copy of `size` bytes at data; NULL: no memory. */
static struct as_plan_ext *ext_new(const char *key, const void *data,
				   size_t size)
{
	if (size > SIZE_MAX - sizeof(struct as_plan_ext))
		return NULL;
	struct as_plan_ext *e = malloc(sizeof(*e) + size);
	if (!e)
		return NULL;
	e->next = NULL;
	e->key = key;
	e->size = size;
	memcpy(e->data, data, size);
	return e;
}

static struct as_plan_ext *ext_find(const struct as_plan *p, const char *key)
{
	struct as_plan_ext *e = p->ext;
	while (e && strcmp(e->key, key) != 0)
		e = e->next;
	return e;
}

void *as_plan_attach(struct as_plan *p, const char *key, const void *init,
		     size_t size)
{
	struct as_plan_ext *e = ext_find(p, key), **end = &p->ext;
	if (e)
		return e->size == size ? e->data : NULL;
	if (!(e = ext_new(key, init, size)))
		return NULL;
	while (*end)
		end = &(*end)->next;
	*end = e;
	return e->data;
}

const void *as_plan_attached(const struct as_plan *p, const char *key)
{
	const struct as_plan_ext *e = ext_find(p, key);
	return e ? e->data : NULL;
}

/* A copy of p's attachments into c, in their order; false: no memory (c
 * keeps those made, for its destroy). */
static bool ext_copy(struct as_plan *c, const struct as_plan *p)
{
	struct as_plan_ext **end = &c->ext;
	for (const struct as_plan_ext *e = p->ext; e; e = e->next) {
		if (!(*end = ext_new(e->key, e->data, e->size)))
			return false;
		end = &(*end)->next;
	}
	return true;
}

/*
 * The arrays a plan appends to (stats, rounds, certificates, out of
 * memory) hold the power of two at or above their count, so appends cost
 * O(1) amortized without a capacity field: a strategy adds rounds per
 * space, and a trace may have thousands of spaces.
 */
static size_t slots(size_t n)
{
	size_t s = 1;
	while (s < n)
		s <<= 1;
	return n ? s : 0;
}

/* Room for element n (0-based) of *arr; false: no memory. */
static bool append_room(void *arr, size_t n, size_t size)
{
	void **a = arr;
	if (n < slots(n))
		return true;
	void *g = realloc(*a, slots(n + 1) * size);
	if (!g)
		return false;
	*a = g;
	return true;
}

/* A copy of n elements of `size` bytes at src (NULL stays NULL) in room
 * for `cap` (>= n); false: no memory. */
static bool dup_room(void *dst, const void *src, size_t n, size_t cap,
		     size_t size)
{
	void **d = dst;
	*d = NULL;
	if (!src)
		return true;
	if (!(*d = malloc((cap + 1) * size)))
		return false;
	memcpy(*d, src, n * size);
	return true;
}

static bool dup_array(void *dst, const void *src, size_t n, size_t size)
{
	return dup_room(dst, src, n, n, size);
}

struct as_plan *as_plan_create(const struct as_trace *t)
{
	struct as_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->nbuffers = t->nbuffers;
	p->nspaces = t->nspaces;
	p->offset = malloc(((size_t)t->nbuffers + 1) * sizeof(*p->offset));
	if (!p->offset) {
		free(p);
		return NULL;
	}
	for (uint32_t i = 0; i < t->nbuffers; i++)
		p->offset[i] = AS_NO_OFFSET;
	return p;
}

void as_plan_drop_buffers(struct as_plan *p)
{
	free(p->offset);
	free(p->space);
	free(p->chunk);
	free(p->alias_of);
	free(p->segment_size);
	free(p->segment_offset);
	p->offset = NULL;
	p->space = NULL;
	p->chunk = NULL;
	p->alias_of = NULL;
	p->segment_size = p->segment_offset = NULL;
	p->nbuffers = 0;
}

void as_plan_destroy(struct as_plan *p)
{
	if (!p)
		return;
	as_plan_drop_buffers(p);
	free(p->space_capacity);
	free(p->space_name);
	free(p->stats);
	free(p->rounds);
	for (uint32_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	free(p->notes);
	ext_free(p->ext);
	as_certificates_free(p->certs, p->ncerts);
	free(p->ooms);
	free(p);
}

void as_certificates_free(struct as_certificate *c, uint32_t n)
{
	for (uint32_t i = 0; c && i < n; i++)
		free(c[i].buffers);
	free(c);
}

int as_plan_certify(struct as_plan *p, struct as_certificate *c)
{
	if (p->ncerts == UINT16_MAX ||
	    !append_room(&p->certs, p->ncerts, sizeof(*p->certs))) {
		free(c->buffers);
		c->buffers = NULL;
		return AS_ENOMEM;
	}
	p->certs[p->ncerts++] = *c;
	c->buffers = NULL;
	return AS_OK;
}

const struct as_certificate *as_plan_certificate(const struct as_plan *p,
						 uint16_t space)
{
	for (uint16_t k = 0; p && k < p->ncerts; k++)
		if (p->certs[k].space == space)
			return &p->certs[k];
	return NULL;
}

char *as_certificate_words(const struct as_certificate *c, uint64_t peak,
			   char *buf, size_t n)
{
	if (peak <= c->bound || c->bound == 0)
		snprintf(buf, n, "%s", peak <= c->bound ? "optimal"
							: "no bound");
	else if ((double)(peak - c->bound) * 100.0 / (double)c->bound < 0.005)
		/* Too close for two decimals: the bytes themselves. */
		snprintf(buf, n, "<= %llu B above optimal",
			 (unsigned long long)(peak - c->bound));
	else
		snprintf(buf, n, "<= %.2f%% above optimal",
			 ((double)peak - (double)c->bound) * 100.0 /
				 (double)c->bound);
	return buf;
}

int as_plan_oom_add(struct as_plan *p, const struct as_plan_oom *o)
{
	if (p->nooms == UINT32_MAX ||
	    !append_room(&p->ooms, p->nooms, sizeof(*p->ooms)))
		return AS_ENOMEM;
	p->ooms[p->nooms++] = *o;
	return AS_OK;
}

const char *as_oom_class_name(unsigned k)
{
	static const char *const name[AS_OOM_CLASSES] = {
		"<=1 MiB", "1-10 MiB", "10-100 MiB", "100 MiB-1 GiB", ">=1 GiB",
	};
	return k < AS_OOM_CLASSES ? name[k] : "?";
}

struct as_plan *as_plan_copy(const struct as_plan *p)
{
	struct as_plan *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	size_t n = p->nbuffers;
	c->nbuffers = p->nbuffers;
	c->nspaces = p->nspaces;
	c->nstats = p->nstats;
	c->nrounds = p->nrounds;
	c->plan_ms = p->plan_ms;
	bool ok = dup_array(&c->offset, p->offset, n, sizeof(*p->offset)) &&
		  dup_array(&c->space, p->space, n, sizeof(*p->space)) &&
		  dup_array(&c->chunk, p->chunk, n, sizeof(*p->chunk)) &&
		  dup_array(&c->alias_of, p->alias_of, n,
			    sizeof(*p->alias_of)) &&
		  dup_array(&c->space_capacity, p->space_capacity, p->nspaces,
			    sizeof(*p->space_capacity)) &&
		  dup_array(&c->space_name, p->space_name, p->nspaces,
			    sizeof(*p->space_name)) &&
		  dup_room(&c->stats, p->stats, p->nstats, slots(p->nstats),
			   sizeof(*p->stats)) &&
		  dup_room(&c->rounds, p->rounds, p->nrounds,
			   slots(p->nrounds), sizeof(*p->rounds)) &&
		  dup_array(&c->segment_size, p->segment_size, n,
			    sizeof(*p->segment_size)) &&
		  dup_array(&c->segment_offset, p->segment_offset, n,
			    sizeof(*p->segment_offset)) &&
		  dup_array(&c->notes, p->notes, p->nnotes, sizeof(*p->notes)) &&
		  ext_copy(c, p);
	for (uint32_t i = 0; ok && i < p->nnotes; i++, c->nnotes++) {
		size_t len = strlen(p->notes[i]) + 1;
		if ((ok = (c->notes[i] = malloc(len)) != NULL))
			memcpy(c->notes[i], p->notes[i], len);
	}
	if (ok && (ok = dup_room(&c->ooms, p->ooms, p->nooms, slots(p->nooms),
				 sizeof(*p->ooms))))
		c->nooms = p->nooms;
	ok = ok && dup_room(&c->certs, p->certs, p->ncerts, slots(p->ncerts),
			    sizeof(*p->certs));
	/* ncerts counts the copies made: a half-made copy frees those. */
	for (uint32_t i = 0; ok && i < p->ncerts; i++, c->ncerts++)
		ok = dup_array(&c->certs[i].buffers, p->certs[i].buffers,
			       p->certs[i].nbuffers,
			       sizeof(*p->certs[i].buffers));
	if (!ok) {
		as_plan_destroy(c);
		return NULL;
	}
	return c;
}

int as_plan_want_chunks(struct as_plan *p)
{
	if (p->chunk)
		return AS_OK;
	p->chunk = calloc((size_t)p->nbuffers + 1, sizeof(*p->chunk));
	return p->chunk ? AS_OK : AS_ENOMEM;
}

int as_plan_want_spaces(struct as_plan *p, const struct as_trace *t,
			uint16_t nspaces)
{
	if (!p->space) {
		p->space = malloc(((size_t)p->nbuffers + 1) * sizeof(*p->space));
		if (!p->space)
			return AS_ENOMEM;
		for (uint32_t i = 0; i < p->nbuffers; i++)
			p->space[i] = t->buffers[i].space;
	}
	/* Both arrays are had before either is kept. */
	uint64_t *cap = malloc(((size_t)nspaces + 1) * sizeof(*cap));
	const char **names = malloc(((size_t)nspaces + 1) * sizeof(*names));
	if (!cap || !names) {
		free(cap);
		free(names);
		return AS_ENOMEM;
	}
	for (uint16_t s = 0; s < nspaces; s++) {
		cap[s] = s < t->nspaces ? t->spaces[s].capacity : 0;
		names[s] = NULL;
	}
	free(p->space_capacity);
	free(p->space_name);
	p->space_capacity = cap;
	p->space_name = names;
	p->nspaces = nspaces;
	return AS_OK;
}

int as_plan_want_aliases(struct as_plan *p, const struct as_trace *t)
{
	if (p->alias_of)
		return AS_OK;
	p->alias_of = malloc(((size_t)p->nbuffers + 1) * sizeof(*p->alias_of));
	if (!p->alias_of)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < p->nbuffers; i++)
		p->alias_of[i] = t->buffers[i].alias_of;
	return AS_OK;
}

int as_plan_want_segments(struct as_plan *p)
{
	if (p->segment_size)
		return AS_OK;
	uint64_t *sz = calloc((size_t)p->nbuffers + 1, sizeof(*sz));
	uint64_t *off = calloc((size_t)p->nbuffers + 1, sizeof(*off));
	if (!sz || !off) {
		free(sz);
		free(off);
		return AS_ENOMEM;
	}
	p->segment_size = sz;
	p->segment_offset = off;
	return AS_OK;
}

#define MAX_NOTES 64

int as_plan_note(struct as_plan *p, const char *text)
{
	if (p->nnotes >= MAX_NOTES)
		return AS_OK;
	char **n = realloc(p->notes, (p->nnotes + 1) * sizeof(*n));
	if (!n)
		return AS_ENOMEM;
	p->notes = n;
	size_t len = strlen(text);
	char *c = malloc(len + 1);
	if (!c)
		return AS_ENOMEM;
	memcpy(c, text, len + 1);
	n[p->nnotes++] = c;
	return AS_OK;
}

int as_plan_stat(struct as_plan *p, const char *key, double value)
{
	for (uint32_t i = 0; i < p->nstats; i++)
		if (strcmp(p->stats[i].key, key) == 0) {
			p->stats[i] = (struct as_stat){key, value, false};
			return AS_OK;
		}
	if (!append_room(&p->stats, p->nstats, sizeof(*p->stats)))
		return AS_ENOMEM;
	p->stats[p->nstats++] = (struct as_stat){key, value, false};
	return AS_OK;
}

int as_plan_stat_int(struct as_plan *p, const char *key, uint64_t value)
{
	int err = as_plan_stat(p, key, (double)value);
	if (err == AS_OK)
		for (uint32_t i = 0; i < p->nstats; i++)
			if (p->stats[i].key == key ||
			    strcmp(p->stats[i].key, key) == 0)
				p->stats[i].integer = true;
	return err;
}

int as_plan_round(struct as_plan *p, const char *label, uint64_t peak)
{
	if (!append_room(&p->rounds, p->nrounds, sizeof(*p->rounds)))
		return AS_ENOMEM;
	struct as_round *n = p->rounds;
	snprintf(n[p->nrounds].label, sizeof(n[p->nrounds].label), "%s",
		 label);
	n[p->nrounds].peak = peak;
	n[p->nrounds++].ms = as_now_ms(); /* the runner makes it relative */
	return AS_OK;
}

const char *as_plan_space_name(const struct as_plan *p,
			       const struct as_trace *t, uint16_t space)
{
	if (p->space_name && space < p->nspaces && p->space_name[space])
		return p->space_name[space];
	if (space < t->nspaces)
		return t->spaces[space].name;
	return "space";
}

static uint64_t top_of(const struct as_plan *p, const struct as_trace *t,
		       uint32_t i)
{
	uint64_t off = p->offset[i], size = t->buffers[i].size;
	return off > UINT64_MAX - size ? UINT64_MAX : off + size;
}

void as_plan_peaks(const struct as_plan *p, const struct as_trace *t,
		   uint64_t *out)
{
	if (p->nspaces == 0)
		return;
	memset(out, 0, p->nspaces * sizeof(*out));
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		uint16_t s = as_plan_space_of(p, t, i);
		if (p->offset[i] == AS_NO_OFFSET || s >= p->nspaces)
			continue;
		uint64_t top = top_of(p, t, i);
		if (top > out[s])
			out[s] = top;
	}
}

uint64_t as_plan_peak(const struct as_plan *p, const struct as_trace *t,
		      int space)
{
	if (space < 0 && p->nspaces > 1) {
		uint64_t sum = 0, *each = malloc(p->nspaces * sizeof(*each));
		if (each)
			as_plan_peaks(p, t, each);
		for (uint16_t s = 0; s < p->nspaces; s++) {
			/* Out of memory: a pass per space. */
			uint64_t x = each ? each[s] : as_plan_peak(p, t, s);
			sum = x > UINT64_MAX - sum ? UINT64_MAX : sum + x;
		}
		free(each);
		return sum;
	}
	uint64_t peak = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		if (p->offset[i] == AS_NO_OFFSET)
			continue;
		if (space >= 0 && as_plan_space_of(p, t, i) != space)
			continue;
		uint64_t top = top_of(p, t, i);
		if (top > peak)
			peak = top;
	}
	return peak;
}

uint32_t as_plan_failed(const struct as_plan *p, const struct as_trace *t)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		n += p->offset[i] == AS_NO_OFFSET && t->buffers[i].size > 0;
	return n;
}
