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
 * a realloc frees the old block and allocates the new one, linked through
 * the new one's info (realloc_of). Blocks never freed live to the end. A
 * free of an address never allocated (allocated before tracing started) is
 * ignored and counted; so is an allocation at an address still live (its
 * free was not traced). Failed allocations are marks, not buffers.
 *
 * Names: the address and the number of the block at that address,
 * "0x5612078b5520#3" is the third block handed out there. The caller is the
 * buffer's one-frame stack, interned (one copy per distinct caller).
 *
 * Recorded offsets (`-s recorded`): the addresses, with every address range
 * that no block ever touched and that is longer than GAP_KEEP shrunk to one
 * page plus its remainder modulo the page (so offsets keep the addresses'
 * alignment). The main heap, thread arenas and mmap'ed blocks lie terabytes
 * apart; shrunk, the plan's peak is the span malloc really used: the heap's
 * own fragmentation stays, the empty space between mappings goes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"

#define GAP_KEEP (64u << 10) /* gaps up to this are the heap's own */
#define PAGE 4096u
#define MAX_CALLER 4096

/* What we know of an address: open addressing, linear probing. */
struct addr_entry {
	uint64_t addr;          /* 0: empty slot (malloc never returns 0) */
	uint64_t top;           /* highest end of a block here */
	uint64_t shift;         /* what the recorded offset subtracts */
	uint32_t count;         /* blocks handed out here */
	uint32_t live;          /* the live buffer here, or AS_NONE */
};

struct mtrace {
	struct addr_entry *addrs;
	size_t addr_mask, naddrs;
	const char **callers;   /* interned callers, open addressing */
	size_t caller_mask, ncallers;
	bool pending;           /* a `<` waits for its `>` */
	uint64_t pending_addr;
	uint32_t pending_idx;   /* the buffer `<` freed, or AS_NONE */
	bool ended;
};

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static struct addr_entry *addr_find(struct mtrace *m, uint64_t addr)
{
	if (!m->addrs)
		return NULL;
	size_t i = hash_u64(addr) & m->addr_mask;
	while (m->addrs[i].addr && m->addrs[i].addr != addr)
		i = (i + 1) & m->addr_mask;
	return m->addrs[i].addr ? &m->addrs[i] : NULL;
}

static struct addr_entry *addr_get(struct mtrace *m, uint64_t addr)
{
	struct addr_entry *e = addr_find(m, addr);
	if (e)
		return e;
	if (!m->addrs || (m->naddrs + 1) * 2 > m->addr_mask + 1) {
		size_t cap = m->addrs ? (m->addr_mask + 1) * 2 : 1024;
		if (cap > SIZE_MAX / sizeof(struct addr_entry))
			return NULL;
		struct addr_entry *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; m->addrs && i <= m->addr_mask; i++) {
			if (!m->addrs[i].addr)
				continue;
			size_t j = hash_u64(m->addrs[i].addr) & (cap - 1);
			while (n[j].addr)
				j = (j + 1) & (cap - 1);
			n[j] = m->addrs[i];
		}
		free(m->addrs);
		m->addrs = n;
		m->addr_mask = cap - 1;
	}
	size_t i = hash_u64(addr) & m->addr_mask;
	while (m->addrs[i].addr)
		i = (i + 1) & m->addr_mask;
	m->addrs[i] = (struct addr_entry){.addr = addr, .live = AS_NONE};
	m->naddrs++;
	return &m->addrs[i];
}

/* The interned copy of caller `s` (NUL-terminated). */
static const char *caller_intern(struct as_builder *b, struct mtrace *m,
				 const char *s)
{
	if (!m->callers || (m->ncallers + 1) * 2 > m->caller_mask + 1) {
		size_t cap = m->callers ? (m->caller_mask + 1) * 2 : 256;
		const char **n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; m->callers && i <= m->caller_mask; i++) {
			if (!m->callers[i])
				continue;
			size_t j = as_hash_str(m->callers[i]) & (cap - 1);
			while (n[j])
				j = (j + 1) & (cap - 1);
			n[j] = m->callers[i];
		}
		free(m->callers);
		m->callers = n;
		m->caller_mask = cap - 1;
	}
	size_t i = as_hash_str(s) & m->caller_mask;
	while (m->callers[i] && strcmp(m->callers[i], s) != 0)
		i = (i + 1) & m->caller_mask;
	if (!m->callers[i]) {
		if (!(m->callers[i] = as_builder_intern(b, s)))
			return NULL;
		m->ncallers++;
	}
	return m->callers[i];
}

/* A hexadecimal number, "0x" optional ("%#lx" prints 0 as "0"). */
static bool parse_hex(const char *s, size_t len, uint64_t *out)
{
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (len == 0 || len > 16)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned d;
		char c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/* Next space-separated token of [*p, end). */
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
	if (!parse_hex(s, n, out))
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
	if (!parse_hex(s, n, out))
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

static void block_name(char *out, size_t cap, uint64_t addr, uint32_t n)
{
	snprintf(out, cap, "0x%llx#%u", (unsigned long long)addr, n);
}

/* Free the live block at `e`; its index into *idx. */
static int free_entry(struct as_builder *b, struct addr_entry *e,
		      uint64_t line, uint32_t *idx, struct as_diag *diag)
{
	char name[48];
	block_name(name, sizeof(name), e->addr, e->count);
	*idx = e->live;
	e->live = AS_NONE;
	return as_builder_free(b, name, line, diag);
}

static int do_free(struct as_builder *b, struct mtrace *m, uint64_t addr,
		   uint64_t line, uint32_t *idx, struct as_diag *diag)
{
	*idx = AS_NONE;
	if (addr == 0)
		return AS_OK; /* free(NULL) */
	struct addr_entry *e = addr_find(m, addr);
	if (!e || e->live == AS_NONE)
		return as_builder_count(b, "frees of addresses never allocated",
					1);
	return free_entry(b, e, line, idx, diag);
}

static int do_alloc(struct as_builder *b, struct mtrace *m, uint64_t addr,
		    uint64_t size, const char *caller, uint32_t realloc_of,
		    uint64_t line, struct as_diag *diag)
{
	if (addr == 0) { /* malloc returned NULL */
		struct as_mark mk = {.size = size, .kind = AS_MARK_FAILED};
		int err = as_builder_mark(b, &mk);
		return err ? err : as_builder_count(b, "failed allocations", 1);
	}
	if (size > UINT64_MAX - addr)
		return as_diag_set(diag, line, AS_EPARSE,
				   "block 0x%llx + %llu overflows 64 bits",
				   (unsigned long long)addr,
				   (unsigned long long)size);
	struct addr_entry *e = addr_get(m, addr);
	if (!e)
		return AS_ENOMEM;
	int err;
	if (e->live != AS_NONE) {
		uint32_t gone;
		if ((err = free_entry(b, e, line, &gone, diag)) ||
		    (err = as_builder_count(b, "allocations at a live address "
					       "(its free was not traced)",
					    1)))
			return err;
	}
	if (e->count == UINT32_MAX)
		return as_diag_set(diag, line, AS_EPARSE,
				   "too many blocks at 0x%llx",
				   (unsigned long long)addr);
	e->count++;
	char name[48];
	block_name(name, sizeof(name), addr, e->count);
	uint64_t align = addr & (~addr + 1);
	if (align > 16)
		align = 16;
	int64_t idx = as_builder_alloc(b, name, size, align, line, diag);
	if (idx < 0)
		return (int)idx;
	e->live = (uint32_t)idx;
	if (addr + size > e->top)
		e->top = addr + size;
	as_builder_buffer(b, (uint32_t)idx)->recorded = addr;
	if (caller &&
	    (err = as_builder_frames_interned(b, (uint32_t)idx, caller)))
		return err;
	if (realloc_of != AS_NONE) {
		struct as_buffer_info *in = as_builder_info(b, (uint32_t)idx);
		if (!in)
			return AS_ENOMEM;
		in->realloc_of = realloc_of;
	}
	return AS_OK;
}

static int parse_line(struct as_builder *b, struct mtrace *m, const char *s,
		      size_t len, uint64_t line, struct as_diag *diag)
{
	const char *p = s, *end = s + len;
	const char *caller = NULL;
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
		char text[MAX_CALLER];
		memcpy(text, c, n);
		text[n] = 0;
		if (!(caller = caller_intern(b, m, text)))
			return AS_ENOMEM;
		p = ce;
		while (p < end && *p == ' ')
			p++;
	}
	char op = *p++;
	if (p < end && *p != ' ' && *p != '\t')
		op = '?';
	if (op != '>')
		m->pending = false; /* a `<` without its `>` was a free */
	uint64_t addr, size;
	uint32_t idx;
	int err;
	switch (op) {
	case '=':
		while (p < end && *p == ' ')
			p++;
		if ((size_t)(end - p) >= 3 && memcmp(p, "End", 3) == 0)
			m->ended = true;
		else if ((size_t)(end - p) >= 5 && memcmp(p, "Start", 5) == 0)
			m->ended = false;
		return AS_OK;
	case '+':
		if ((err = address(&p, end, line, &addr, diag)) ||
		    (err = size_field(&p, end, line, &size, diag)) ||
		    (err = no_more(p, end, line, diag)))
			return err;
		return do_alloc(b, m, addr, size, caller, AS_NONE, line, diag);
	case '-':
		if ((err = address(&p, end, line, &addr, diag)) ||
		    (err = no_more(p, end, line, diag)))
			return err;
		return do_free(b, m, addr, line, &idx, diag);
	case '<':
		if ((err = address(&p, end, line, &addr, diag)) ||
		    (err = no_more(p, end, line, diag)) ||
		    (err = do_free(b, m, addr, line, &idx, diag)))
			return err;
		m->pending = true;
		m->pending_addr = addr;
		m->pending_idx = idx;
		return AS_OK;
	case '>': {
		if ((err = address(&p, end, line, &addr, diag)) ||
		    (err = size_field(&p, end, line, &size, diag)) ||
		    (err = no_more(p, end, line, diag)))
			return err;
		uint32_t of = m->pending ? m->pending_idx : AS_NONE;
		m->pending = false;
		if (addr == 0)
			return as_diag_set(diag, line, AS_EPARSE,
					   "realloc result (nil) after a free");
		return do_alloc(b, m, addr, size, caller, of, line, diag);
	}
	case '!': {
		/* A failed realloc: "! OLD SIZE"; the old block is kept. */
		if ((err = address(&p, end, line, &addr, diag)) ||
		    (err = size_field(&p, end, line, &size, diag)))
			return err;
		struct as_mark mk = {.size = size, .kind = AS_MARK_FAILED};
		if ((err = as_builder_mark(b, &mk)))
			return err;
		return as_builder_count(b, "failed reallocs", 1);
	}
	default:
		return as_diag_set(diag, line, AS_EPARSE,
				   "unknown mtrace line '%.*s' (expected =, "
				   "+, -, <, > or !)",
				   (int)(len > 40 ? 40 : len), s);
	}
}

static int mtrace_lines(struct as_builder *b, struct as_line_state *st,
			const char *data, size_t len, struct as_diag *diag)
{
	struct mtrace *m = st->priv;
	if (!m && !(m = st->priv = calloc(1, sizeof(*m))))
		return AS_ENOMEM;
	const char *p = data, *end = data + len, *s;
	size_t n;
	while ((s = as_next_line(&p, end, &n))) {
		st->line++;
		int err = parse_line(b, m, s, n, st->line, diag);
		if (err)
			return err;
	}
	return AS_OK;
}

static int by_addr(const void *a, const void *b)
{
	const struct addr_entry *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Recorded offsets: addresses with the untouched gaps shrunk. */
static int shrink_gaps(struct as_builder *b, struct mtrace *m)
{
	if (!m->naddrs)
		return AS_OK;
	struct addr_entry *v = malloc(m->naddrs * sizeof(*v));
	if (!v)
		return AS_ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i <= m->addr_mask; i++)
		if (m->addrs[i].addr)
			v[n++] = m->addrs[i];
	qsort(v, n, sizeof(*v), by_addr);
	uint64_t shift = v[0].addr & ~(uint64_t)(PAGE - 1);
	uint64_t top = v[0].top;
	for (size_t i = 0; i < n; i++) {
		if (v[i].addr > top && v[i].addr - top > GAP_KEEP) {
			uint64_t gap = v[i].addr - top;
			shift += gap - (PAGE + (gap & (PAGE - 1)));
		}
		if (v[i].top > top)
			top = v[i].top;
		addr_find(m, v[i].addr)->shift = shift;
	}
	free(v);
	struct as_trace *t = as_builder_trace(b);
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		struct as_buffer *buf = &t->buffers[i];
		buf->recorded -= addr_find(m, buf->recorded)->shift;
	}
	return AS_OK;
}

static int mtrace_end(struct as_builder *b, struct as_line_state *st,
		      int err, struct as_diag *diag)
{
	struct mtrace *m = st->priv;
	if (!err && m) {
		uint64_t live = 0;
		for (size_t i = 0; i <= m->addr_mask; i++)
			if (m->addrs && m->addrs[i].addr &&
			    m->addrs[i].live != AS_NONE)
				live++;
		if (live)
			err = as_builder_count(
				b,
				m->ended ? "blocks live at = End (leaks)"
					 : "blocks live at the end (no = End: "
					   "the program exited or was killed)",
				live);
		if (!err)
			err = shrink_gaps(b, m);
	}
	if (m) {
		free(m->addrs);
		free(m->callers);
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
