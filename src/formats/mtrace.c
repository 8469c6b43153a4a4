/*
 * glibc mtrace files (MALLOC_TRACE, mtrace(3)): one line an event, each
 * with an optional caller in front:
 *
 *   = Start
 *   @ /lib/x86_64-linux-gnu/libc.so.6:(__tsearch+d6)[0x102de6] + 0x5612078b5520 0x18
 *   @ ./prog:[0x401136] - 0x5612078b5520
 *   @ [0x401136] < 0x5612078b6d80              realloc: the old block...
 *   @ [0x401136] > 0x5612078b7000 0x800        ...and the new one
 *   + (nil) 0x7fffffffffff                     malloc failed
 *   ! 0x5612078b6d80 0x100000000               realloc failed (old kept)
 *   = End                                      muntrace(); absent when the
 *                                              program was killed or exited
 *
 * A buffer lives from its `+` (or `>`) to the `-` (or `<`) of its address;
 * a realloc frees the old block and allocates the new one, linked to it
 * (as_trace_realloc_of). Blocks never freed live to the end. A
 * free of an address never allocated (allocated before tracing started) is
 * ignored and counted; so is an allocation at an address still live (its
 * free was not traced). Failed allocations are marks, not buffers.
 *
 * Names: the address and the number of the block at that address,
 * "0x5612078b5520#3" is the third block handed out there. The caller is the
 * buffer's one-frame stack, interned (one copy per distinct caller).
 *
 * Recorded offsets (`-s recorded`) are the addresses with the empty ranges
 * between mappings shrunk (formats/heap.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/heap.h"

#define MAX_CALLER 4096

/*
 * A parsed line, waiting in a short queue: parsing a line hints the heap to
 * fetch its address's table slot (as_heap_prefetch), and the line runs
 * QUEUE lines later, when the slot is in the cache. On 10^7-line traces
 * the table and buffer lookups are cache misses, most of the time spent.
 */
struct op {
	uint64_t addr, size, line;
	const char *caller;
	char kind;              /* + - < > ! */
};

#define QUEUE 16

struct mtrace {
	struct as_heap *heap;
	bool pending;           /* a `<` waits for its `>` */
	uint32_t pending_idx;   /* the buffer `<` freed, or AS_NONE */
	bool ended;
	struct op q[QUEUE];     /* lines parsed, not run: q[(head + i) % QUEUE] */
	unsigned head, n;
};

static bool token(const char **p, const char *end, const char **s,
		  size_t *len)
{
	const char *q = *p;
	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	if (q == end)
		return false;
	*s = q;
	while (q < end && *q != ' ' && *q != '\t')
		q++;
	*len = (size_t)(q - *s);
	*p = q;
	return true;
}

/* An address: hex, or "(nil)" for NULL (0). */
static int address(const char **p, const char *end, uint64_t line,
		   uint64_t *out, struct as_diag *diag)
{
	const char *s;
	size_t n;
	if (!token(p, end, &s, &n))
		return as_diag_set(diag, line, AS_EPARSE, "missing address");
	if (n == 5 && memcmp(s, "(nil)", 5) == 0) {
		*out = 0;
		return AS_OK;
	}
	if (!as_parse_hex(s, n, out))
		return as_diag_set(diag, line, AS_EPARSE,
				   "address '%.*s' is not a hexadecimal "
				   "number",
				   (int)(n > 40 ? 40 : n), s);
	return AS_OK;
}

static int size_field(const char **p, const char *end, uint64_t line,
		      uint64_t *out, struct as_diag *diag)
{
	const char *s;
	size_t n;
	if (!token(p, end, &s, &n))
		return as_diag_set(diag, line, AS_EPARSE, "missing size");
	if (!as_parse_hex(s, n, out))
		return as_diag_set(diag, line, AS_EPARSE,
				   "size '%.*s' is not a hexadecimal number",
				   (int)(n > 40 ? 40 : n), s);
	return AS_OK;
}

static int no_more(const char *p, const char *end, uint64_t line,
		   struct as_diag *diag)
{
	const char *s;
	size_t n;
	if (token(&p, end, &s, &n))
		return as_diag_set(diag, line, AS_EPARSE,
				   "unexpected '%.*s' at the end of the line",
				   (int)(n > 40 ? 40 : n), s);
	return AS_OK;
}

/* Run one parsed line against the heap. */
static int run(struct as_builder *b, struct mtrace *m, const struct op *o,
	       struct as_diag *diag)
{
	uint32_t idx;
	int err;
	if (o->kind != '>')
		m->pending = false; /* a `<` without its `>` was a free */
	switch (o->kind) {
	case '=':
		return AS_OK;
	case '+':
		return as_heap_alloc(b, m->heap, o->addr, o->size, o->caller,
				     AS_NONE, o->line, diag);
	case '-':
		return as_heap_free(b, m->heap, o->addr, o->line, &idx, diag);
	case '<':
		if ((err = as_heap_free(b, m->heap, o->addr, o->line, &idx,
					diag)))
			return err;
		m->pending = true;
		m->pending_idx = idx;
		return AS_OK;
	case '>': {
		uint32_t of = m->pending ? m->pending_idx : AS_NONE;
		m->pending = false;
		if (o->addr == 0)
			return as_diag_set(diag, o->line, AS_EPARSE,
					   "realloc result (nil) after a free");
		return as_heap_alloc(b, m->heap, o->addr, o->size, o->caller,
				     of, o->line, diag);
	}
	default: { /* '!': a failed realloc, the old block kept */
		struct as_mark mk = {.size = o->size, .kind = AS_MARK_FAILED};
		if ((err = as_builder_mark(b, &mk)))
			return err;
		return as_builder_count(b, "failed reallocs", 1);
	}
	}
}

/* Run every queued line, in order; the first error stops. */
static int flush(struct as_builder *b, struct mtrace *m,
		 struct as_diag *diag)
{
	int err = AS_OK;
	while (!err && m->n) {
		err = run(b, m, &m->q[m->head], diag);
		m->head = (m->head + 1) % QUEUE;
		m->n--;
	}
	return err;
}

/* Parse one line into *o (kind 0: nothing to run). */
static int parse(struct as_builder *b, struct mtrace *m, const char *s,
		 size_t len, uint64_t line, struct op *o,
		 struct as_diag *diag)
{
	const char *p = s, *end = s + len;
	*o = (struct op){.line = line};
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end)
		return AS_OK;
	if (*p == '@') {
		/* "@ CALLER OP ...": the caller ends at "] " (file names may
		 * hold spaces), else at the first space. */
		const char *c = p + 1;
		while (c < end && *c == ' ')
			c++;
		const char *ce = NULL;
		for (const char *q = c; q + 1 < end; q++)
			if (q[0] == ']' && q[1] == ' ')
				ce = q + 1;
		if (!ce) {
			ce = c;
			while (ce < end && *ce != ' ')
				ce++;
		}
		size_t n = (size_t)(ce - c);
		if (n == 0 || ce == end)
			return as_diag_set(diag, line, AS_EPARSE,
					   "caller without an operation");
		if (n >= MAX_CALLER)
			return as_diag_set(diag, line, AS_EPARSE,
					   "caller longer than %u bytes",
					   MAX_CALLER);
		if (!(o->caller = as_heap_intern_n(b, m->heap, c, n)))
			return AS_ENOMEM;
		p = ce;
		while (p < end && *p == ' ')
			p++;
	}
	if (p >= end) /* fuzz: a caller and then the end of the line */
		return as_diag_set(diag, line, AS_EPARSE, "caller without an operation");
	char op = *p++;
	if (p < end && *p != ' ' && *p != '\t')
		op = '?';
	int err;
	switch (op) {
	case '=':
		while (p < end && *p == ' ')
			p++;
		if ((size_t)(end - p) >= 3 && memcmp(p, "End", 3) == 0)
			m->ended = true;
		else if ((size_t)(end - p) >= 5 && memcmp(p, "Start", 5) == 0)
			m->ended = false;
		o->kind = '='; /* runs only to end a pending `<` */
		return AS_OK;
	case '+':
	case '>':
		if ((err = address(&p, end, line, &o->addr, diag)) ||
		    (err = size_field(&p, end, line, &o->size, diag)) ||
		    (err = no_more(p, end, line, diag)))
			return err;
		break;
	case '-':
	case '<':
		if ((err = address(&p, end, line, &o->addr, diag)) ||
		    (err = no_more(p, end, line, diag)))
			return err;
		break;
	case '!':
		/* A failed realloc: "! OLD SIZE" (anything after ignored). */
		if ((err = address(&p, end, line, &o->addr, diag)) ||
		    (err = size_field(&p, end, line, &o->size, diag)))
			return err;
		break;
	default:
		return as_diag_set(diag, line, AS_EPARSE,
				   "unknown mtrace line '%.*s' (expected =, "
				   "+, -, <, > or !)",
				   (int)(len > 40 ? 40 : len), s);
	}
	o->kind = op;
	return AS_OK;
}

/*
 * A line: parsed now, run QUEUE lines later. On a parse error the lines
 * before it run first, so the first error in the file is the one told.
 */
static int parse_line(struct as_builder *b, void *state, const char *s,
		      size_t len, uint64_t line, struct as_diag *diag)
{
	struct mtrace *m = state;
	struct op o;
	int err = parse(b, m, s, len, line, &o, diag);
	if (err) {
		int first = flush(b, m, diag);
		return first ? first : err;
	}
	if (!o.kind)
		return AS_OK;
	if (m->n == QUEUE) {
		err = run(b, m, &m->q[m->head], diag);
		m->head = (m->head + 1) % QUEUE;
		m->n--;
		if (err)
			return err;
	}
	if (o.kind != '!' && o.kind != '=')
		as_heap_prefetch(m->heap, o.addr);
	m->q[(m->head + m->n++) % QUEUE] = o;
	/* Halfway: the slot is in; a free's buffer comes next. */
	if (m->n > QUEUE / 2) {
		const struct op *h = &m->q[(m->head + m->n - 1 - QUEUE / 2) %
					   QUEUE];
		if (h->kind == '-' || h->kind == '<')
			as_heap_prefetch_live(b, m->heap, h->addr);
	}
	return AS_OK;
}

static int mtrace_lines(struct as_builder *b, struct as_line_state *st,
			const char *data, size_t len, struct as_diag *diag)
{
	struct mtrace *m = st->priv;
	if (!m) {
		if (!(m = st->priv = calloc(1, sizeof(*m))))
			return AS_ENOMEM;
		if (!(m->heap = as_heap_create()))
			return AS_ENOMEM;
	}
	return as_recorded_lines(b, st, data, len, parse_line, m, diag);
}

static int mtrace_end(struct as_builder *b, struct as_line_state *st,
		      int err, struct as_diag *diag)
{
	struct mtrace *m = st->priv;
	if (!err && m)
		err = flush(b, m, diag);
	if (!err && m)
		err = as_heap_finish(b, m->heap,
				     m->ended ? "blocks live at = End (leaks)"
					      : "blocks live at the end (no = "
						"End: the program exited or "
						"was killed)");
	if (m) {
		as_heap_destroy(m->heap);
		free(m);
		st->priv = NULL;
	}
	return err;
}

/* "= Start" first, or a line that begins with "@ ". */
static bool mtrace_sniff(const char *head, size_t len)
{
	if (len >= 7 && memcmp(head, "= Start", 7) == 0)
		return true;
	const char *p = head, *end = head + len, *s;
	size_t n;
	int lines = 0;
	while ((s = as_next_line(&p, end, &n)) && lines++ < 8)
		if (n >= 4 && s[0] == '@' && s[1] == ' ' &&
		    (memchr(s, '[', n) != NULL))
			return true;
	return false;
}

const struct as_format_impl as_format_mtrace = {
	.name = "mtrace",
	.extensions = ".mtrace",
	.sniff = mtrace_sniff,
	.lines = mtrace_lines,
	.end = mtrace_end,
};
