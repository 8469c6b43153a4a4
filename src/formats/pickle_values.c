/*
 * A parsed pickle's values once pickle.c has made them (pickle.h): the
 * index big dicts get when the parse ends, reading values for the snapshot
 * reader (as_pk_get and the rest) and writing one as JSON. Nothing here
 * makes a value or reads the pickle's bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "formats/pickle.h"

/* Big dicts get a sorted index; small ones are scanned. */
#define DICT_SCAN 16

/* ---- Index ---- */

/* Sort big dicts' pairs by key (str keys only) for as_pk_get. */
static bool key_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_pk *d = ctx;
	const struct as_pk *ka = d->v.items[2 * (size_t)a];
	const struct as_pk *kb = d->v.items[2 * (size_t)b];
	size_t n = ka->n < kb->n ? ka->n : kb->n;
	int c = memcmp(ka->v.s, kb->v.s, n);
	if (c)
		return c < 0;
	return ka->n < kb->n;
}

int as_pk_index(struct as_pk *d)
{
	if (d->type != AS_PK_DICT || d->n <= DICT_SCAN)
		return AS_OK;
	uint32_t *idx = malloc((size_t)d->n * sizeof(*idx));
	if (!idx)
		return AS_ENOMEM;
	uint32_t k = 0;
	for (uint32_t j = 0; j < d->n; j++)
		if (d->v.items[2 * (size_t)j]->type == AS_PK_STR)
			idx[k++] = j;
	/* The indices go after the items, in the same block. */
	size_t at = 2 * (size_t)d->n * sizeof(struct as_pk *);
	struct as_pk **items = as_sort_u32(idx, k, key_less, d) == AS_OK
		? realloc(d->v.items, at + (size_t)k * sizeof(*idx))
		: NULL;
	if (!items) {
		free(idx);
		return AS_ENOMEM;
	}
	memcpy((char *)items + at, idx, (size_t)k * sizeof(*idx));
	free(idx);
	d->v.items = items;
	d->cap = k;
	d->indexed = true;
	return AS_OK;
}

/* An indexed dict's indices (as_pk_index). */
static const uint32_t *dict_index(const struct as_pk *d)
{
	return (const uint32_t *)(const void *)(d->v.items + 2 * (size_t)d->n);
}

/* ---- Access ---- */

static bool key_is(const struct as_pk *k, const char *key, size_t n)
{
	return k->type == AS_PK_STR && k->n == n && memcmp(k->v.s, key, n) == 0;
}

const struct as_pk *as_pk_get(const struct as_pk *d, const char *key)
{
	if (!d || d->type != AS_PK_DICT)
		return NULL;
	size_t n = strlen(key);
	if (!d->indexed) {
		for (uint32_t i = d->n; i-- > 0;)
			if (key_is(d->v.items[2 * (size_t)i], key, n))
				return d->v.items[2 * (size_t)i + 1];
		return NULL;
	}
	/*
	 * The last of the equal keys (the sort is stable, by pair index):
	 * binary search for the first key greater than `key`.
	 */
	const uint32_t *index = dict_index(d);
	uint32_t lo = 0, hi = d->cap;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct as_pk *km = d->v.items[2 * (size_t)index[mid]];
		size_t mn = km->n < n ? km->n : n;
		int c = memcmp(km->v.s, key, mn);
		if (c < 0 || (c == 0 && km->n <= n))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	uint32_t j = index[lo - 1];
	return key_is(d->v.items[2 * (size_t)j], key, n)
		       ? d->v.items[2 * (size_t)j + 1]
		       : NULL;
}

uint32_t as_pk_len(const struct as_pk *v)
{
	return v && (v->type == AS_PK_LIST || v->type == AS_PK_TUPLE) ? v->n
								       : 0;
}

const struct as_pk *as_pk_item(const struct as_pk *v, uint32_t i)
{
	return i < as_pk_len(v) ? v->v.items[i] : NULL;
}

const char *as_pk_str(const struct as_pk *v)
{
	return v && v->type == AS_PK_STR ? v->v.s : NULL;
}

bool as_pk_u64(const struct as_pk *v, uint64_t *out)
{
	if (!v || (v->type != AS_PK_INT && v->type != AS_PK_BOOL) || v->neg)
		return false;
	*out = v->v.u;
	return true;
}

bool as_pk_i64(const struct as_pk *v, int64_t *out)
{
	if (!v || (v->type != AS_PK_INT && v->type != AS_PK_BOOL))
		return false;
	if (!v->neg) {
		if (v->v.u > INT64_MAX)
			return false;
		*out = (int64_t)v->v.u;
		return true;
	}
	if (v->v.u > (uint64_t)INT64_MAX + 1)
		return false;
	*out = v->v.u == (uint64_t)INT64_MAX + 1 ? INT64_MIN
						 : -(int64_t)v->v.u;
	return true;
}

bool as_pk_truthy(const struct as_pk *v)
{
	if (!v)
		return false;
	switch (v->type) {
	case AS_PK_NONE: return false;
	case AS_PK_BOOL:
	case AS_PK_INT: return v->v.u != 0;
	case AS_PK_BIGINT: return true;
	case AS_PK_FLOAT: return v->v.f != 0.0;
	default: return v->n != 0;
	}
}

/* ---- JSON ---- */

struct sbuf {
	char *p;
	size_t n, cap, max;
	bool over;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->over)
		return;
	if (n > b->max - b->n) {
		b->over = true;
		return;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->over = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void put_str(struct sbuf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	put(b, "\"", 1);
	for (size_t i = 0; i < n && !b->over;) {
		char piece[8];
		size_t used, k = as_json_char(p + i, n - i, piece, &used);
		put(b, piece, k);
		i += used;
	}
	put(b, "\"", 1);
}

/*
 * An explicit stack of (value, next item) frames: no recursion on the
 * value's depth, which `max_depth` bounds.
 */
struct jframe {
	const struct as_pk *v;
	uint32_t next;
};

static void put_scalar(struct sbuf *b, const struct as_pk *v)
{
	char num[40];
	switch (v->type) {
	case AS_PK_NONE: put(b, "null", 4); break;
	case AS_PK_BOOL: v->v.u ? put(b, "true", 4) : put(b, "false", 5); break;
	case AS_PK_INT:
		snprintf(num, sizeof(num), "%s%llu", v->neg ? "-" : "",
			 (unsigned long long)v->v.u);
		put(b, num, strlen(num));
		break;
	case AS_PK_BIGINT: put(b, "null", 4); break;
	case AS_PK_FLOAT:
		if (isfinite(v->v.f)) {
			snprintf(num, sizeof(num), "%.17g", v->v.f);
			put(b, num, strlen(num));
		} else {
			put(b, "null", 4);
		}
		break;
	default: put_str(b, v->v.s, v->n); break;
	}
}

int as_pk_json(const struct as_pk *v, size_t max, unsigned max_depth,
	       char **out)
{
	struct sbuf b = {.max = max};
	struct jframe *st = malloc(((size_t)max_depth + 1) * sizeof(*st));
	size_t depth = 0;
	int err = st ? AS_OK : AS_ENOMEM;
	const struct as_pk *cur = v;
	while (err == AS_OK && !b.over) {
		if (cur) {
			bool cont = cur->type == AS_PK_LIST ||
				    cur->type == AS_PK_TUPLE ||
				    cur->type == AS_PK_DICT;
			if (!cont) {
				put_scalar(&b, cur);
				cur = NULL;
			} else if (depth == max_depth) {
				err = AS_EINVAL;
				break;
			} else {
				put(&b, cur->type == AS_PK_DICT ? "{" : "[", 1);
				st[depth++] = (struct jframe){cur, 0};
				cur = NULL;
			}
			continue;
		}
		if (!depth)
			break;
		struct jframe *f = &st[depth - 1];
		if (f->next == f->v->n) {
			put(&b, f->v->type == AS_PK_DICT ? "}" : "]", 1);
			depth--;
			continue;
		}
		if (f->next)
			put(&b, ", ", 2);
		if (f->v->type == AS_PK_DICT) {
			const struct as_pk *k = f->v->v.items[2 * (size_t)f->next];
			if (k->type == AS_PK_STR) {
				put_str(&b, k->v.s, k->n);
			} else {
				/* A scalar key, quoted; containers as null. */
				struct sbuf kb = {.max = 64};
				if (k->type == AS_PK_LIST ||
				    k->type == AS_PK_TUPLE ||
				    k->type == AS_PK_DICT)
					put(&kb, "null", 4);
				else
					put_scalar(&kb, k);
				put_str(&b, kb.p ? kb.p : "", kb.n);
				free(kb.p);
			}
			put(&b, ": ", 2);
			cur = f->v->v.items[2 * (size_t)f->next + 1];
		} else {
			cur = f->v->v.items[f->next];
		}
		f->next++;
	}
	free(st);
	if (err == AS_OK && b.over)
		err = AS_EINVAL;
	if (err != AS_OK) {
		free(b.p);
		return err;
	}
	if (!b.p) {
		b.p = malloc(1);
		if (!b.p)
			return AS_ENOMEM;
		b.p[0] = 0;
	}
	*out = b.p;
	return AS_OK;
}
