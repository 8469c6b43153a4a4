/*
 * A pickle reader for plain data (pickle.h). The opcodes are those of
 * Python's pickle module, protocols 0 to 5, minus every one that imports a
 * name or calls something: those are refused by name and byte offset.
 *
 * The machine: a value stack, a stack of marks (positions in the value
 * stack) and a memo (an array of values by index). Values live in chunks
 * that never move, so the stack, the memo and containers hold pointers;
 * containers' item arrays grow with realloc and are freed with the document.
 * What is done with the values once made (dict index, access, JSON) is
 * pickle_values.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/pickle.h"

/* Marks nested deeper than this are refused: real pickles need a handful. */
#define MAX_MARKS 4096
/* Values on the stack at once. */
#define MAX_STACK (1u << 24)
/*
 * What the values may cost: the bytes of values, container items, the
 * stack and the memo together at most COST_PER_BYTE times the pickle's
 * bytes plus COST_FLOOR (real snapshots take 4 to 9 times their size,
 * tiny ones up to 13: the floor holds those). Past it the pickle is
 * refused: a file of one-byte opcodes that each make a value (EMPTY_LIST,
 * POP, ...) would otherwise take 40 times its size.
 */
#define COST_PER_BYTE 12
#define COST_FLOOR ((uint64_t)16 << 20)
/* Memo indices below this (and below twice the stores so far) live in an
 * array; others, which no pickler writes, in a hash table. */
#define MEMO_DENSE_SLACK 1024

#define CHUNK_VALUES 1024

struct chunk {
	struct chunk *next;
	uint32_t used;
	struct as_pk v[CHUNK_VALUES];
};

struct as_pickle {
	struct chunk *chunks;
	struct as_arena strings;
	struct as_pk **containers; /* every list, tuple and dict */
	size_t ncont, capcont;
	const struct as_pk *root;
};

struct machine {
	struct as_pickle *doc;
	const unsigned char *data;
	size_t len, pos, op_pos;
	struct as_pk **stack;
	size_t nstack, capstack;
	size_t *marks;
	size_t nmarks, capmarks;
	struct as_pk **memo;
	size_t capmemo;
	size_t memo_next;       /* MEMOIZE's next index */
	size_t memo_puts;       /* memo stores so far */
	struct memo_slot {
		uint64_t idx;   /* + 1; 0: empty */
		struct as_pk *v;
	} *far;                 /* memo indices far past the array */
	size_t far_mask, nfar;
	uint64_t spent, budget; /* bytes the values cost, and may */
	struct as_diag *diag;
};

static const struct as_pk none_value = {.type = AS_PK_NONE};
/* Booleans are immutable: one value each, whatever the number of them. */
static const struct as_pk true_value = {.type = AS_PK_BOOL, .v.u = 1};
static const struct as_pk false_value = {.type = AS_PK_BOOL, .v.u = 0};

/* ---- Document ---- */

void as_pickle_destroy(struct as_pickle *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncont; i++)
		free(p->containers[i]->v.items);
	free(p->containers);
	struct chunk *c = p->chunks;
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
	as_arena_finish(&p->strings);
	free(p);
}

const struct as_pk *as_pickle_root(const struct as_pickle *p)
{
	return p->root;
}

/* Charge `bytes` to the budget; false past it (spend() then says so). */
static bool charge(struct machine *m, uint64_t bytes)
{
	m->spent += bytes;
	return m->spent <= m->budget;
}

static struct as_pk *new_value(struct machine *m, uint8_t type)
{
	struct as_pickle *d = m->doc;
	bool cont = type == AS_PK_LIST || type == AS_PK_TUPLE ||
		    type == AS_PK_DICT;
	if (!charge(m, sizeof(struct as_pk) + cont * sizeof(struct as_pk *)))
		return NULL;
	if (!d->chunks || d->chunks->used == CHUNK_VALUES) {
		struct chunk *c = malloc(sizeof(*c));
		if (!c)
			return NULL;
		c->next = d->chunks;
		c->used = 0;
		d->chunks = c;
	}
	struct as_pk *v = &d->chunks->v[d->chunks->used++];
	memset(v, 0, sizeof(*v));
	v->type = type;
	v->pos = m->op_pos;
	if (type == AS_PK_LIST || type == AS_PK_TUPLE || type == AS_PK_DICT) {
		if (d->ncont == d->capcont) {
			size_t cap = d->capcont ? d->capcont * 2 : 256;
			struct as_pk **n =
				realloc(d->containers, cap * sizeof(*n));
			if (!n)
				return NULL;
			d->containers = n;
			d->capcont = cap;
		}
		d->containers[d->ncont++] = v;
	}
	return v;
}

/* Make room for `more` items (pairs count double) in container c. */
static bool reserve(struct machine *m, struct as_pk *c, size_t more)
{
	size_t per = c->type == AS_PK_DICT ? 2 : 1;
	size_t need = ((size_t)c->n + more) * per;
	if (more > UINT32_MAX / per || (size_t)c->n + more > UINT32_MAX / per)
		return false;
	if (need <= c->cap)
		return true;
	size_t cap = c->cap ? (size_t)c->cap * 2 : 4;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	if (!charge(m, (cap - c->cap) * sizeof(struct as_pk *)))
		return false;
	struct as_pk **n = realloc(c->v.items, cap * sizeof(*n));
	if (!n)
		return false;
	c->v.items = n;
	c->cap = (uint32_t)cap;
	return true;
}

/* ---- Errors ---- */

static int fail(struct machine *m, const char *what)
{
	return as_diag_set(m->diag, 0, AS_EPARSE, "%s at byte %zu", what,
			   m->op_pos);
}

/* Out of memory, or past the budget: which one, said. */
static int nomem(struct machine *m)
{
	if (m->spent > m->budget)
		return as_diag_set(m->diag, 0, AS_EPARSE,
				   "pickle values need more than %llu MiB "
				   "(%d times its %zu bytes, plus %llu MiB) "
				   "at byte %zu: refused",
				   (unsigned long long)(m->budget >> 20),
				   COST_PER_BYTE, m->len,
				   (unsigned long long)(COST_FLOOR >> 20),
				   m->op_pos);
	return as_diag_set(m->diag, 0, AS_ENOMEM, "out of memory");
}

static int truncated(struct machine *m)
{
	return as_diag_set(m->diag, 0, AS_EPARSE,
			   "truncated pickle: opcode at byte %zu needs more "
			   "bytes than the file has",
			   m->op_pos);
}

/* ---- Reading ---- */

static bool take(struct machine *m, size_t n, const unsigned char **out)
{
	if (n > m->len - m->pos)
		return false;
	*out = m->data + m->pos;
	m->pos += n;
	return true;
}

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The text up to the next newline (protocol 0 arguments), without it. */
static bool take_line(struct machine *m, const char **s, size_t *n)
{
	const unsigned char *start = m->data + m->pos;
	const unsigned char *nl = memchr(start, '\n', m->len - m->pos);
	if (!nl)
		return false;
	*s = (const char *)start;
	*n = (size_t)(nl - start);
	m->pos += *n + 1;
	return true;
}

static int push(struct machine *m, struct as_pk *v)
{
	if (!v)
		return nomem(m);
	if (m->nstack == m->capstack) {
		if (m->capstack >= MAX_STACK)
			return fail(m, "pickle stack too deep");
		size_t cap = m->capstack ? m->capstack * 2 : 256;
		if (!charge(m, (cap - m->capstack) * sizeof(struct as_pk *)))
			return nomem(m);
		struct as_pk **n = realloc(m->stack, cap * sizeof(*n));
		if (!n)
			return nomem(m);
		m->stack = n;
		m->capstack = cap;
	}
	m->stack[m->nstack++] = v;
	return AS_OK;
}

/* Values above the innermost mark: the first at *base, `*count` of them. */
static int mark_span(struct machine *m, size_t *base, size_t *count)
{
	if (!m->nmarks)
		return fail(m, "pickle opcode needs a MARK and there is none");
	*base = m->marks[m->nmarks - 1];
	*count = m->nstack - *base;
	return AS_OK;
}

static void pop_mark(struct machine *m, size_t base)
{
	m->nstack = base;
	m->nmarks--;
}

/* The far memo's slot of index idx: its own, or the empty one for it. */
static struct memo_slot *far_slot(const struct machine *m, uint64_t idx)
{
	size_t h = as_hash_u64(idx) & m->far_mask;
	while (m->far[h].idx && m->far[h].idx != idx + 1)
		h = (h + 1) & m->far_mask;
	return &m->far[h];
}

static int far_put(struct machine *m, uint64_t idx, struct as_pk *v)
{
	if (!m->far || (m->nfar + 1) * 2 > m->far_mask + 1) {
		size_t cap = m->far ? (m->far_mask + 1) * 2 : 64;
		struct memo_slot *old = m->far;
		size_t omask = m->far_mask;
		if (!charge(m, cap * sizeof(*old)))
			return nomem(m);
		m->far = calloc(cap, sizeof(*old));
		if (!m->far) {
			m->far = old;
			return nomem(m);
		}
		m->far_mask = cap - 1;
		for (size_t i = 0; old && i <= omask; i++)
			if (old[i].idx)
				*far_slot(m, old[i].idx - 1) = old[i];
		free(old);
	}
	struct memo_slot *sl = far_slot(m, idx);
	m->nfar += !sl->idx;
	*sl = (struct memo_slot){idx + 1, v};
	return AS_OK;
}

static int memo_put(struct machine *m, uint64_t idx)
{
	if (!m->nstack)
		return fail(m, "pickle memo store with an empty stack");
	/* Indices come in order from a pickler; each costs a byte or more. */
	if (idx >= m->len)
		return fail(m, "pickle memo index out of range");
	m->memo_puts++;
	if (idx >= m->capmemo &&
	    idx >= 2 * (uint64_t)m->memo_puts + MEMO_DENSE_SLACK)
		return far_put(m, idx, m->stack[m->nstack - 1]);
	if (idx >= m->capmemo) {
		size_t cap = m->capmemo ? m->capmemo : 256;
		while (cap <= idx)
			cap *= 2;
		if (!charge(m, (cap - m->capmemo) * sizeof(struct as_pk *)))
			return nomem(m);
		struct as_pk **n = realloc(m->memo, cap * sizeof(*n));
		if (!n)
			return nomem(m);
		memset(n + m->capmemo, 0, (cap - m->capmemo) * sizeof(*n));
		m->memo = n;
		m->capmemo = cap;
	}
	m->memo[idx] = m->stack[m->nstack - 1];
	return AS_OK;
}

static int memo_get(struct machine *m, uint64_t idx)
{
	struct as_pk *v = idx < m->capmemo ? m->memo[idx] : NULL;
	if (!v && m->far) {
		const struct memo_slot *sl = far_slot(m, idx);
		v = sl->idx ? sl->v : NULL;
	}
	if (!v)
		return fail(m, "pickle memo fetch of an index never stored");
	return push(m, v);
}

static int push_int(struct machine *m, uint64_t mag, bool neg)
{
	struct as_pk *v = new_value(m, AS_PK_INT);
	if (v) {
		v->v.u = mag;
		v->neg = neg && mag;
	}
	return push(m, v);
}

/* LONG1/LONG4: n bytes of little-endian two's complement. */
static int push_long(struct machine *m, const unsigned char *p, size_t n)
{
	if (n == 0)
		return push_int(m, 0, false);
	bool neg = p[n - 1] & 0x80;
	/* Drop sign-extension bytes to see how many carry the value. */
	size_t k = n;
	while (k > 1 && p[k - 1] == (neg ? 0xff : 0x00) &&
	       ((p[k - 2] & 0x80) != 0) == neg)
		k--;
	if (!neg && k == 9 && p[8] == 0)
		k = 8; /* 2^63..2^64-1 needs a zero sign byte */
	if (k > 8) {
		struct as_pk *v = new_value(m, AS_PK_BIGINT);
		if (v)
			v->neg = neg;
		return push(m, v);
	}
	uint64_t raw = le(p, k);
	if (!neg)
		return push_int(m, raw, false);
	if (k < 8)
		raw |= ~(uint64_t)0 << (8 * k); /* sign-extend */
	return push_int(m, (uint64_t)0 - raw, true);
}

static int push_text_int(struct machine *m, const char *s, size_t n,
			 bool is_long)
{
	if (is_long && n && s[n - 1] == 'L')
		n--;
	if (!is_long && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) {
		struct as_pk *v = new_value(m, AS_PK_BOOL);
		if (v)
			v->v.u = s[1] == '1';
		return push(m, v);
	}
	bool neg = n && s[0] == '-';
	if (n && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	uint64_t u;
	if (as_parse_u64(s, n, &u))
		return push_int(m, u, neg);
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return fail(m, "malformed pickle integer");
	if (!n)
		return fail(m, "malformed pickle integer");
	struct as_pk *v = new_value(m, AS_PK_BIGINT);
	if (v)
		v->neg = neg;
	return push(m, v);
}

static int push_float(struct machine *m, double f)
{
	struct as_pk *v = new_value(m, AS_PK_FLOAT);
	if (v)
		v->v.f = f;
	return push(m, v);
}

static int push_string(struct machine *m, uint8_t type, const unsigned char *p,
		       uint64_t n)
{
	if (n > UINT32_MAX)
		return fail(m, "pickle string longer than 4 GiB");
	struct as_pk *v = new_value(m, type);
	if (!v)
		return nomem(m);
	v->n = (uint32_t)n;
	v->v.s = as_arena_dup(&m->doc->strings, (const char *)p, (size_t)n);
	if (!v->v.s)
		return nomem(m);
	return push(m, v);
}

/* A string opcode with an n-byte little-endian length. */
static int string_op(struct machine *m, uint8_t type, size_t lenbytes)
{
	const unsigned char *p, *s;
	if (!take(m, lenbytes, &p))
		return truncated(m);
	uint64_t n = le(p, lenbytes);
	if (n > m->len - m->pos)
		return as_diag_set(m->diag, 0, AS_EPARSE,
				   "pickle string at byte %zu claims %llu "
				   "bytes, past the end of the file",
				   m->op_pos, (unsigned long long)n);
	take(m, (size_t)n, &s);
	return push_string(m, type, s, n);
}

/*
 * Copy the n stack slots from base into a container's items from `at`. With
 * n 0 the stack and the items may both be NULL: no pointer is formed.
 */
static void copy_items(struct as_pk **items, size_t at,
		       const struct machine *m, size_t base, size_t n)
{
	if (n)
		memcpy(items + at, m->stack + base, n * sizeof(*items));
}

static struct as_pk *pop(struct machine *m)
{
	return m->stack[--m->nstack];
}

/* A tuple of the top n values (n values must be there above any mark). */
static int make_tuple(struct machine *m, size_t base, size_t n)
{
	struct as_pk *t = new_value(m, AS_PK_TUPLE);
	if (!t || !reserve(m, t, n))
		return nomem(m);
	copy_items(t->v.items, 0, m, base, n);
	t->n = (uint32_t)n;
	m->nstack = base;
	return push(m, t);
}

static int append_items(struct machine *m, size_t base, size_t count)
{
	if (base == 0)
		return fail(m, "pickle APPENDS with no list under its MARK");
	struct as_pk *l = m->stack[base - 1];
	if (l->type != AS_PK_LIST)
		return fail(m, "pickle append to something not a list");
	if (!reserve(m, l, count))
		return nomem(m);
	copy_items(l->v.items, l->n, m, base, count);
	l->n += (uint32_t)count;
	return AS_OK;
}

static int set_items(struct machine *m, size_t base, size_t count)
{
	if (base == 0)
		return fail(m, "pickle SETITEMS with no dict under its MARK");
	if (count % 2)
		return fail(m, "pickle SETITEMS with an odd number of values");
	struct as_pk *d = m->stack[base - 1];
	if (d->type != AS_PK_DICT)
		return fail(m, "pickle setitem on something not a dict");
	if (!reserve(m, d, count / 2))
		return nomem(m);
	copy_items(d->v.items, 2 * (size_t)d->n, m, base, count);
	d->n += (uint32_t)(count / 2);
	return AS_OK;
}

static const char *refused_name(unsigned char op)
{
	switch (op) {
	case 'c': return "GLOBAL";
	case 0x93: return "STACK_GLOBAL";
	case 'R': return "REDUCE";
	case 'b': return "BUILD";
	case 'i': return "INST";
	case 'o': return "OBJ";
	case 0x81: return "NEWOBJ";
	case 0x92: return "NEWOBJ_EX";
	case 0x82: return "EXT1";
	case 0x83: return "EXT2";
	case 0x84: return "EXT4";
	case 'P': return "PERSID";
	case 'Q': return "BINPERSID";
	case 0x97: return "NEXT_BUFFER";
	case 0x98: return "READONLY_BUFFER";
	default: return NULL;
	}
}

/* One opcode; *stop set at STOP. */
static int step(struct machine *m, bool *stop)
{
	const unsigned char *p;
	const char *s;
	size_t n, base = 0, count = 0;
	int err;
	m->op_pos = m->pos;
	unsigned char op = m->data[m->pos++];
	const char *refused = refused_name(op);
	if (refused)
		return as_diag_set(m->diag, 0, AS_EPARSE,
				   "refusing pickle opcode %s at byte %zu "
				   "(snapshots hold plain data only)",
				   refused, m->op_pos);
	switch (op) {
	case 0x80: /* PROTO */
		if (!take(m, 1, &p))
			return truncated(m);
		if (p[0] > 5)
			return fail(m, "unsupported pickle protocol");
		return AS_OK;
	case 0x95: /* FRAME: a length hint only */
		if (!take(m, 8, &p))
			return truncated(m);
		if (le(p, 8) > m->len - m->pos)
			return as_diag_set(m->diag, 0, AS_EPARSE,
					   "truncated pickle: FRAME at byte %zu "
					   "claims %llu bytes, %zu are left",
					   m->op_pos,
					   (unsigned long long)le(p, 8),
					   m->len - m->pos);
		return AS_OK;
	case '.': /* STOP */
		if (!m->nstack)
			return fail(m, "pickle STOP with an empty stack");
		m->doc->root = pop(m);
		*stop = true;
		return AS_OK;
	case '(': /* MARK */
		if (m->nmarks == MAX_MARKS)
			return as_diag_set(m->diag, 0, AS_EPARSE,
					   "pickle nested deeper than %d "
					   "marks at byte %zu",
					   MAX_MARKS, m->op_pos);
		if (m->nmarks == m->capmarks) {
			size_t cap = m->capmarks ? m->capmarks * 2 : 32;
			size_t *nm = realloc(m->marks, cap * sizeof(*nm));
			if (!nm)
				return nomem(m);
			m->marks = nm;
			m->capmarks = cap;
		}
		m->marks[m->nmarks++] = m->nstack;
		return AS_OK;
	case '0': /* POP */
		if (m->nmarks && m->marks[m->nmarks - 1] == m->nstack) {
			m->nmarks--; /* Python pops a mark here */
			return AS_OK;
		}
		if (!m->nstack)
			return fail(m, "pickle POP with an empty stack");
		m->nstack--;
		return AS_OK;
	case '1': /* POP_MARK */
		if ((err = mark_span(m, &base, &count)))
			return err;
		pop_mark(m, base);
		return AS_OK;
	case '2': /* DUP */
		if (!m->nstack)
			return fail(m, "pickle DUP with an empty stack");
		return push(m, m->stack[m->nstack - 1]);
	case 'N':
		return push(m, (struct as_pk *)&none_value);
	case 0x88: /* NEWTRUE */
		return push(m, (struct as_pk *)&true_value);
	case 0x89: /* NEWFALSE */
		return push(m, (struct as_pk *)&false_value);
	case 'J': /* BININT: signed 4 bytes */
		if (!take(m, 4, &p))
			return truncated(m);
		{
			int32_t x = (int32_t)(uint32_t)le(p, 4);
			return push_int(m, x < 0 ? (uint64_t)0 - (uint64_t)(int64_t)x
						 : (uint64_t)x,
					x < 0);
		}
	case 'K': /* BININT1 */
		if (!take(m, 1, &p))
			return truncated(m);
		return push_int(m, p[0], false);
	case 'M': /* BININT2 */
		if (!take(m, 2, &p))
			return truncated(m);
		return push_int(m, le(p, 2), false);
	case 0x8a: /* LONG1 */
		if (!take(m, 1, &p))
			return truncated(m);
		n = p[0];
		if (!take(m, n, &p))
			return truncated(m);
		return push_long(m, p, n);
	case 0x8b: /* LONG4 */
		if (!take(m, 4, &p))
			return truncated(m);
		{
			uint64_t ln = le(p, 4);
			if (ln & 0x80000000u)
				return fail(m, "pickle LONG4 with a negative "
					       "length");
			if (ln > m->len - m->pos)
				return as_diag_set(
					m->diag, 0, AS_EPARSE,
					"pickle LONG4 at byte %zu claims %llu "
					"bytes, past the end of the file",
					m->op_pos, (unsigned long long)ln);
			take(m, (size_t)ln, &p);
			return push_long(m, p, (size_t)ln);
		}
	case 'I': /* INT, text */
	case 'L': /* LONG, text */
		if (!take_line(m, &s, &n))
			return truncated(m);
		return push_text_int(m, s, n, op == 'L');
	case 'G': /* BINFLOAT: big-endian double */
		if (!take(m, 8, &p))
			return truncated(m);
		{
			uint64_t bits = 0;
			for (int i = 0; i < 8; i++)
				bits = bits << 8 | p[i];
			double f;
			memcpy(&f, &bits, sizeof(f));
			return push_float(m, f);
		}
	case 'F': { /* FLOAT, text */
		char buf[64];
		char *end;
		if (!take_line(m, &s, &n))
			return truncated(m);
		if (n == 0 || n >= sizeof(buf))
			return fail(m, "malformed pickle float");
		memcpy(buf, s, n);
		buf[n] = 0;
		double f = strtod(buf, &end);
		if (*end)
			return fail(m, "malformed pickle float");
		return push_float(m, f);
	}
	case 0x8c: /* SHORT_BINUNICODE */
		return string_op(m, AS_PK_STR, 1);
	case 'X': /* BINUNICODE */
		return string_op(m, AS_PK_STR, 4);
	case 0x8d: /* BINUNICODE8 */
		return string_op(m, AS_PK_STR, 8);
	case 'U': /* SHORT_BINSTRING (Python 2 str, read as str) */
		return string_op(m, AS_PK_STR, 1);
	case 'T': /* BINSTRING */
		if (m->pos + 4 <= m->len && (m->data[m->pos + 3] & 0x80))
			return fail(m, "pickle BINSTRING with a negative "
				       "length");
		return string_op(m, AS_PK_STR, 4);
	case 'C': /* SHORT_BINBYTES */
		return string_op(m, AS_PK_BYTES, 1);
	case 'B': /* BINBYTES */
		return string_op(m, AS_PK_BYTES, 4);
	case 0x8e: /* BINBYTES8 */
	case 0x96: /* BYTEARRAY8 */
		return string_op(m, AS_PK_BYTES, 8);
	case ')': /* EMPTY_TUPLE */
		return make_tuple(m, m->nstack, 0);
	case 0x85: /* TUPLE1 */
	case 0x86: /* TUPLE2 */
	case 0x87: /* TUPLE3 */
		n = (size_t)(op - 0x84);
		if (m->nstack < n ||
		    (m->nmarks && m->marks[m->nmarks - 1] > m->nstack - n))
			return fail(m, "pickle TUPLE with too few values");
		return make_tuple(m, m->nstack - n, n);
	case 't': /* TUPLE */
		if ((err = mark_span(m, &base, &count)))
			return err;
		m->nmarks--;
		return make_tuple(m, base, count);
	case ']': /* EMPTY_LIST */
		return push(m, new_value(m, AS_PK_LIST));
	case 0x8f: /* EMPTY_SET */
		return push(m, new_value(m, AS_PK_LIST));
	case '}': /* EMPTY_DICT */
		return push(m, new_value(m, AS_PK_DICT));
	case 'l': /* LIST */
	case 0x91: /* FROZENSET */
	case 'd': { /* DICT */
		if ((err = mark_span(m, &base, &count)))
			return err;
		bool dict = op == 'd';
		if (dict && count % 2)
			return fail(m, "pickle DICT with an odd number of "
				       "values");
		struct as_pk *c = new_value(m, dict ? AS_PK_DICT : AS_PK_LIST);
		if (!c || !reserve(m, c, dict ? count / 2 : count))
			return nomem(m);
		copy_items(c->v.items, 0, m, base, count);
		c->n = (uint32_t)(dict ? count / 2 : count);
		pop_mark(m, base);
		return push(m, c);
	}
	case 'a': /* APPEND */
		if (m->nstack < 2 ||
		    (m->nmarks && m->marks[m->nmarks - 1] > m->nstack - 2))
			return fail(m, "pickle APPEND with too few values");
		if ((err = append_items(m, m->nstack - 1, 1)))
			return err;
		m->nstack--;
		return AS_OK;
	case 'e': /* APPENDS */
	case 0x90: /* ADDITEMS */
		if ((err = mark_span(m, &base, &count)))
			return err;
		if ((err = append_items(m, base, count)))
			return err;
		pop_mark(m, base);
		return AS_OK;
	case 's': /* SETITEM */
		if (m->nstack < 3 ||
		    (m->nmarks && m->marks[m->nmarks - 1] > m->nstack - 3))
			return fail(m, "pickle SETITEM with too few values");
		if ((err = set_items(m, m->nstack - 2, 2)))
			return err;
		m->nstack -= 2;
		return AS_OK;
	case 'u': /* SETITEMS */
		if ((err = mark_span(m, &base, &count)))
			return err;
		if ((err = set_items(m, base, count)))
			return err;
		pop_mark(m, base);
		return AS_OK;
	case 'p': /* PUT, text */
	case 'g': { /* GET, text */
		uint64_t idx;
		if (!take_line(m, &s, &n))
			return truncated(m);
		if (!as_parse_u64(s, n, &idx))
			return fail(m, "malformed pickle memo index");
		return op == 'p' ? memo_put(m, idx) : memo_get(m, idx);
	}
	case 'q': /* BINPUT */
		if (!take(m, 1, &p))
			return truncated(m);
		return memo_put(m, p[0]);
	case 'r': /* LONG_BINPUT */
		if (!take(m, 4, &p))
			return truncated(m);
		return memo_put(m, le(p, 4));
	case 'h': /* BINGET */
		if (!take(m, 1, &p))
			return truncated(m);
		return memo_get(m, p[0]);
	case 'j': /* LONG_BINGET */
		if (!take(m, 4, &p))
			return truncated(m);
		return memo_get(m, le(p, 4));
	case 0x94: /* MEMOIZE */
		if ((err = memo_put(m, m->memo_next)))
			return err;
		m->memo_next++;
		return AS_OK;
	case 'S': /* STRING, text with escapes */
	case 'V': /* UNICODE, raw-unicode-escape */
		return fail(m, "unsupported protocol 0 text string in pickle");
	default: {
		char what[64];
		snprintf(what, sizeof(what), "unknown pickle opcode 0x%02x",
			 op);
		return fail(m, what);
	}
	}
}

/* Index every big dict for as_pk_get (pickle_values.c) once the parse ends. */
static int index_dicts(struct as_pickle *doc)
{
	for (size_t i = 0; i < doc->ncont; i++)
		if (as_pk_index(doc->containers[i]) != AS_OK)
			return AS_ENOMEM;
	return AS_OK;
}

int as_pickle_parse(const char *data, size_t len, struct as_pickle **out,
		    struct as_diag *diag)
{
	struct machine m = {
		.data = (const unsigned char *)data,
		.len = len,
		.budget = (uint64_t)COST_PER_BYTE * len + COST_FLOOR,
		.diag = diag,
	};
	m.doc = calloc(1, sizeof(*m.doc));
	if (!m.doc)
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	int err = AS_OK;
	bool stop = false;
	while (!stop && err == AS_OK) {
		if (m.pos >= m.len) {
			err = as_diag_set(diag, 0, AS_EPARSE,
					  "truncated pickle: no STOP opcode "
					  "before the end (%zu bytes)",
					  m.len);
			break;
		}
		err = step(&m, &stop);
	}
	if (err == AS_OK && index_dicts(m.doc) != AS_OK)
		err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	free(m.stack);
	free(m.marks);
	free(m.memo);
	free(m.far);
	if (err != AS_OK) {
		as_pickle_destroy(m.doc);
		return err;
	}
	*out = m.doc;
	return AS_OK;
}
