/*
 * heaptrack data files, both forms (heaptrack 1.x, file format 2 and 3;
 * numbers are hexadecimal, indices of s/i/t lines count from 1, of a lines
 * from 0):
 *
 * Interpreted (`heaptrack -o`, what heaptrack_print reads; sizes and stacks,
 * no addresses):
 *   v 10400 3                 heaptrack version, file format version
 *   X git --version           command line
 *   s 8 _dl_init              a string (format 3: its length first)
 *   i 7fead9037b03 a e f 79   an instruction: ip, module string, then
 *                             function [file line], then inlined frames
 *                             (function, file, line each)
 *   t 2 1                     a trace node: instruction, parent node
 *   a 11c00 4                 an allocation info: size, trace node
 *   + 0                       an allocation of info 0
 *   - 0                       a deallocation of one live block of info 0
 *   c 2a                      a timestamp, milliseconds
 *   R 61a, A, I ..            RSS, attached at runtime, system info
 * Blocks of one info are alike (same size, same stack), so which one a `-`
 * frees does not change the live bytes; we free the latest (a temporary
 * allocation is freed right after it was made). Buffers are named
 * "aINFO#N", the N-th block of allocation info INFO.
 *
 * Raw (`heaptrack -r`, before heaptrack_interpret; with addresses):
 *   m 1f /lib/.../libc.so.6 7fbaa1877000 ...   a module mapping
 *   t 7fbaa1b39b03 1                           a trace node: ip, parent
 *   + 1d8 10 56549c026370                      size, trace node, address
 *   - 56549c026370                             free of an address
 * Raw buffers are named and placed by address as mtrace's (formats/heap.c);
 * their frames are "0xIP MODULE+0xOFFSET", the module found among the
 * current "m" lines (what addr2line needs to symbolise them later).
 *
 * A buffer's stack is its trace node's instructions up to the root, the
 * innermost first, one frame a line (inlined frames each a line), built
 * once per node and interned.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/heap.h"

#define MAX_FIELDS 1024 /* 3 a frame: deep inlining */
#define MAX_STACK_FRAMES 256
#define MAX_STACK_BYTES (16u << 10)
/*
 * The text of all stacks built: at most STACK_TEXT_FLOOR bytes plus
 * STACK_TEXT_PER_BYTE times the bytes read so far. A stack is a trace
 * node's path to the root, so a file of a few bytes a node can ask for a
 * 16 KB text per node (350,000 nodes: 5.7 GB); past the bound the buffers
 * of new stacks go without frames, counted ("stacks dropped").
 */
#define STACK_TEXT_FLOOR ((uint64_t)64 << 20)
#define STACK_TEXT_PER_BYTE 8u

struct node {
	uint64_t ip;            /* instruction index (interpreted), address
				 * (raw) */
	uint32_t parent;
	uint32_t len;           /* of the stack, once built */
	uint32_t nframes;       /* frames in it */
	/* What its frames' text was made from: raw, the module list's
	 * version; interpreted, 0 when every frame was a defined
	 * instruction (else UINT32_MAX: a later line may define one). */
	uint32_t version;
	const char *stack;      /* built on first use */
};

struct info {
	uint64_t size;
	uint32_t trace;
	uint32_t live;          /* latest live buffer, or AS_NONE */
	uint32_t count;         /* blocks allocated */
};

enum mode { UNKNOWN, INTERPRETED, RAW };

/* A module mapped in a raw file: [base, end), its file's name. */
struct module {
	uint64_t base, end;
	const char *name;
};

/*
 * Where each address falls: disjoint pieces in address order, each the
 * part of a module no module listed before it covers (the first listed
 * wins, as a scan in order would find), so a frame is one binary search
 * whatever the number of modules.
 */
struct piece {
	uint64_t base, end;
	uint32_t mod;
};

#define MAX_MODULES 4096

struct heaptrack {
	unsigned version;       /* file format version */
	enum mode mode;
	const char **strs;      /* [0] = "" */
	uint32_t nstrs, cap_strs;
	const char **ips;       /* frame text per instruction, [0] unused */
	uint32_t nips, cap_ips;
	struct node *nodes;     /* [0] is the root */
	uint32_t nnodes, cap_nodes;
	struct info *infos;
	uint32_t ninfos, cap_infos;
	uint32_t *next;         /* per buffer: the previous live block of its
				 * info (interpreted) */
	uint32_t cap_next;
	struct as_heap *heap;
	char *scratch;          /* stack text under construction */
	struct module *mods;    /* raw: the current mappings ("m" lines) */
	uint32_t nmods, cap_mods;
	struct piece *pieces;   /* raw: the mappings by address */
	uint32_t npieces, cap_pieces;
	uint64_t fed;           /* bytes read so far */
	uint64_t stack_text;    /* bytes of the stacks built */
	uint32_t mod_version;   /* raw: "m" lines so far */
	uint64_t dropped;       /* stacks not built past the bound */
	bool in_cmdline;        /* the last line but blanks was X or its
				 * continuation */
	uint64_t cmdline_more;  /* lines that continued an X line */
	const char *exe;        /* raw: the "x" line's file name */
};

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	uint64_t n = *cap ? (uint64_t)*cap * 2 : 256;
	while (n < need)
		n *= 2;
	if (n > UINT32_MAX || n > SIZE_MAX / elem)
		return false;
	void *p = realloc(*arr, (size_t)n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = (uint32_t)n;
	return true;
}

struct field {
	const char *s;
	size_t len;
};

static int split(const char *s, size_t len, struct field *f)
{
	int n = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && s[i] == ' ')
			i++;
		if (i == len)
			break;
		size_t j = i;
		while (j < len && s[j] != ' ')
			j++;
		if (n == MAX_FIELDS)
			return -1;
		f[n++] = (struct field){s + i, j - i};
		i = j;
	}
	return n;
}

static int hex(const struct field *f, uint64_t line, uint64_t *out,
	       struct as_diag *diag)
{
	if (!as_parse_hex(f->s, f->len, out))
		return as_diag_set(diag, line, AS_EPARSE,
				   "'%.*s' is not a hexadecimal number",
				   (int)(f->len > 40 ? 40 : f->len), f->s);
	return AS_OK;
}

/* A hexadecimal index below `limit`. */
static int index_of(const struct field *f, uint32_t limit, const char *what,
		    uint64_t line, uint32_t *out, struct as_diag *diag)
{
	uint64_t v;
	int err = hex(f, line, &v, diag);
	if (err)
		return err;
	if (v >= limit)
		return as_diag_set(diag, line, AS_EPARSE,
				   "%s index %llx is not defined (%u so far)",
				   what, (unsigned long long)v, limit);
	*out = (uint32_t)v;
	return AS_OK;
}

static int add_string(struct as_builder *b, struct heaptrack *h,
		      const char *s, size_t len)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return AS_ENOMEM;
	memcpy(copy, s, len);
	copy[len] = 0;
	const char *in = as_builder_intern(b, copy);
	free(copy);
	if (!in || !grow((void **)&h->strs, &h->cap_strs, h->nstrs + 1,
			 sizeof(*h->strs)))
		return AS_ENOMEM;
	h->strs[h->nstrs++] = in;
	return AS_OK;
}

/* `s` line: "s LEN TEXT" (format 3) or "s TEXT". */
static int string_line(struct as_builder *b, struct heaptrack *h,
		       const char *s, size_t len, uint64_t line,
		       struct as_diag *diag)
{
	const char *p = s + 2, *end = s + len;
	if (len < 2)
		return add_string(b, h, "", 0);
	if (h->version >= 3) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *le = sp ? sp : end;
		uint64_t n;
		if (!as_parse_hex(p, (size_t)(le - p), &n))
			return as_diag_set(diag, line, AS_EPARSE,
					   "string length is not a "
					   "hexadecimal number");
		const char *t = sp ? sp + 1 : end;
		if (n != (uint64_t)(end - t))
			return as_diag_set(diag, line, AS_EPARSE,
					   "string says %llu bytes but has %llu",
					   (unsigned long long)n,
					   (unsigned long long)(end - t));
		return add_string(b, h, t, (size_t)n);
	}
	return add_string(b, h, p, (size_t)(end - p));
}

/* Append to scratch[*at..], within MAX_STACK_BYTES; false when full. */
static bool put(char *scratch, size_t *at, const char *s, size_t n)
{
	if (n > MAX_STACK_BYTES - 1 - *at)
		return false;
	memcpy(scratch + *at, s, n);
	*at += n;
	scratch[*at] = 0;
	return true;
}

/* One frame of an instruction: "function file:line", parts optional. */
static void frame_text(struct heaptrack *h, uint64_t ip, uint32_t fn,
		       uint32_t file, uint64_t ln, size_t *at)
{
	char num[64];
	if (*at)
		put(h->scratch, at, "\n", 1);
	if (fn) {
		put(h->scratch, at, h->strs[fn], strlen(h->strs[fn]));
	} else {
		snprintf(num, sizeof(num), "0x%llx", (unsigned long long)ip);
		put(h->scratch, at, num, strlen(num));
	}
	if (file) {
		snprintf(num, sizeof(num), ":%llu", (unsigned long long)ln);
		put(h->scratch, at, " ", 1);
		put(h->scratch, at, h->strs[file], strlen(h->strs[file]));
		put(h->scratch, at, num, strlen(num));
	}
}

/*
 * `i` line: "i IP MODULE [FUNCTION [FILE LINE]] [FUNCTION FILE LINE]...",
 * the inlined frames last; one line of text a frame.
 */
static int ip_line(struct as_builder *b, struct heaptrack *h,
		   const struct field *f, int n, uint64_t line,
		   struct as_diag *diag)
{
	uint64_t ip, ln = 0;
	uint32_t mod = 0, fn, file = 0;
	int err;
	if (n < 3 || (n > 4 && (n - 4) % 3 == 1))
		return as_diag_set(diag, line, AS_EPARSE,
				   "instruction line needs ip, module, then "
				   "function, file and line");
	if ((err = hex(&f[1], line, &ip, diag)) ||
	    (err = index_of(&f[2], h->nstrs, "string", line, &mod, diag)))
		return err;
	size_t at = 0;
	h->scratch[0] = 0;
	if (n == 3) {
		char num[32];
		const char *m = h->strs[mod], *slash = strrchr(m, '/');
		snprintf(num, sizeof(num), "0x%llx ", (unsigned long long)ip);
		put(h->scratch, &at, num, strlen(num));
		put(h->scratch, &at, slash ? slash + 1 : m,
		    strlen(slash ? slash + 1 : m));
	}
	int i = 3;
	if (i < n) {
		if ((err = index_of(&f[i++], h->nstrs, "string", line, &fn,
				    diag)))
			return err;
		if ((n - i) % 3 == 2) {
			if ((err = index_of(&f[i], h->nstrs, "string", line,
					    &file, diag)) ||
			    (err = hex(&f[i + 1], line, &ln, diag)))
				return err;
			i += 2;
		}
		frame_text(h, ip, fn, file, ln, &at);
	}
	for (; i < n; i += 3) {
		if ((err = index_of(&f[i], h->nstrs, "string", line, &fn,
				    diag)) ||
		    (err = index_of(&f[i + 1], h->nstrs, "string", line, &file,
				    diag)) ||
		    (err = hex(&f[i + 2], line, &ln, diag)))
			return err;
		frame_text(h, ip, fn, file, ln, &at);
	}
	const char *text = as_heap_intern(b, h->heap, h->scratch);
	if (!text || !grow((void **)&h->ips, &h->cap_ips, h->nips + 1,
			   sizeof(*h->ips)))
		return AS_ENOMEM;
	h->ips[h->nips++] = text;
	return AS_OK;
}

/* The last part of a path. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/*
 * A length-prefixed (format 3) or plain string at p: its text into *t, *n;
 * *p moves past it.
 */
static bool lenstr(const struct heaptrack *h, const char **p,
		   const char *end, const char **t, size_t *n)
{
	const char *q = *p;
	while (q < end && *q == ' ')
		q++;
	const char *sp = memchr(q, ' ', (size_t)(end - q));
	const char *le = sp ? sp : end;
	if (h->version < 3) {
		*t = q;
		*n = (size_t)(le - q);
		*p = le;
		return true;
	}
	uint64_t len;
	if (!sp || !as_parse_hex(q, (size_t)(le - q), &len) ||
	    len > (uint64_t)(end - sp - 1) ||
	    (len < (uint64_t)(end - sp - 1) && sp[1 + len] != ' '))
		return false;
	*t = sp + 1;
	*n = (size_t)len;
	*p = sp + 1 + len;
	return true;
}

/* "x LEN PATH": the executable, which "m" lines name "x". */
static int exe_line(struct as_builder *b, struct heaptrack *h, const char *s,
		    size_t len, uint64_t line, struct as_diag *diag)
{
	const char *p = s + 1, *t;
	size_t n;
	char path[1024];
	if (!lenstr(h, &p, s + len, &t, &n) || n >= sizeof(path))
		return as_diag_set(diag, line, AS_EPARSE,
				   "bad executable line (expected x LENGTH "
				   "PATH, LENGTH in hex)");
	memcpy(path, t, n);
	path[n] = 0;
	return (h->exe = as_heap_intern(b, h->heap, base_name(path)))
		       ? AS_OK
		       : AS_ENOMEM;
}

/* The first piece that ends after `ip`. */
static uint32_t piece_after(const struct heaptrack *h, uint64_t ip)
{
	uint32_t lo = 0, hi = h->npieces;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (h->pieces[mid].end <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Module `mod`, [base, end), into the pieces: the parts no piece covers
 * yet. O(log pieces) to find the place, O(pieces) to move the rest.
 */
static int add_pieces(struct heaptrack *h, uint64_t base, uint64_t end,
		      uint32_t mod)
{
	if (base >= end)
		return AS_OK;
	uint32_t k = piece_after(h, base), j = k;
	while (j < h->npieces && h->pieces[j].base < end)
		j++;
	/* Pieces k..j-1 meet [base, end): the new module takes the gaps. */
	struct piece *mid = malloc((2 * (size_t)(j - k) + 1) * sizeof(*mid));
	if (!mid)
		return AS_ENOMEM;
	uint32_t n = 0;
	uint64_t at = base;
	for (uint32_t i = k; i < j; i++) {
		const struct piece *p = &h->pieces[i];
		if (p->base > at)
			mid[n++] = (struct piece){at, p->base, mod};
		mid[n++] = *p;
		if (p->end > at)
			at = p->end;
	}
	if (at < end)
		mid[n++] = (struct piece){at, end, mod};
	uint32_t more = n - (j - k);
	if (!grow((void **)&h->pieces, &h->cap_pieces, h->npieces + more,
		  sizeof(*h->pieces))) {
		free(mid);
		return AS_ENOMEM;
	}
	memmove(h->pieces + k + n, h->pieces + j,
		(h->npieces - j) * sizeof(*h->pieces));
	memcpy(h->pieces + k, mid, n * sizeof(*mid));
	h->npieces += more;
	free(mid);
	return AS_OK;
}

/*
 * "m LEN PATH BASE [VADDR MEMSZ]...": a module mapped at BASE, its
 * segments at BASE + VADDR; "m 1 -" forgets every module (the list is
 * written again after a dlopen).
 */
static int module_line(struct as_builder *b, struct heaptrack *h,
		       const char *s, size_t len, uint64_t line,
		       struct as_diag *diag)
{
	const char *p = s + 1, *end = s + len, *t;
	size_t n;
	char path[1024];
	if (!lenstr(h, &p, end, &t, &n) || n >= sizeof(path))
		return as_diag_set(diag, line, AS_EPARSE,
				   "bad module line (expected m LENGTH PATH "
				   "ADDRESS [OFFSET SIZE]...)");
	h->mod_version++;
	if (n == 1 && t[0] == '-') {
		h->nmods = 0;
		h->npieces = 0;
		return AS_OK;
	}
	memcpy(path, t, n);
	path[n] = 0;
	struct field f[MAX_FIELDS];
	int nf = split(p, (size_t)(end - p), f);
	if (nf < 1 || nf % 2 != 1)
		return as_diag_set(diag, line, AS_EPARSE,
				   "module line needs an address, then "
				   "segment offsets and sizes");
	uint64_t base, top = 0, v, w;
	int err = hex(&f[0], line, &base, diag);
	for (int i = 1; !err && i < nf; i += 2) {
		if ((err = hex(&f[i], line, &v, diag)) ||
		    (err = hex(&f[i + 1], line, &w, diag)))
			break;
		if (v > UINT64_MAX - w || v + w > UINT64_MAX - base)
			return as_diag_set(diag, line, AS_EPARSE,
					   "module segment overflows 64 bits");
		if (v + w > top)
			top = v + w;
	}
	if (err)
		return err;
	if (h->nmods == MAX_MODULES)
		return as_diag_set(diag, line, AS_EPARSE,
				   "more than %u modules", MAX_MODULES);
	const char *name = strcmp(path, "x") == 0 && h->exe
				   ? h->exe
				   : as_heap_intern(b, h->heap, base_name(path));
	if (!name || !grow((void **)&h->mods, &h->cap_mods, h->nmods + 1,
			   sizeof(*h->mods)))
		return AS_ENOMEM;
	h->mods[h->nmods++] = (struct module){base, base + top, name};
	return add_pieces(h, base, base + top, h->nmods - 1);
}

/* A raw frame: "0xIP MODULE+0xOFFSET", or "0xIP" outside every module. */
static void raw_frame(const struct heaptrack *h, uint64_t ip, char *out,
		      size_t cap)
{
	uint32_t k = piece_after(h, ip);
	char *at = as_put_hex(out, ip);
	if (k < h->npieces && h->pieces[k].base <= ip) {
		const struct module *m = &h->mods[h->pieces[k].mod];
		size_t n = strlen(m->name);
		/* the name fits: modules' names are at most 1023 bytes */
		if (n + 40 < cap) {
			*at++ = ' ';
			memcpy(at, m->name, n);
			at += n;
			*at++ = '+';
			at = as_put_hex(at, ip - m->base);
		}
	}
	*at = 0;
}

/* The frames of one instruction's text: its inlined ones are lines. */
static uint32_t lines(const char *text)
{
	uint32_t n = 1;
	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* The stack of a node past the text bound: no frames. */
static const char dropped_stack[] = "";

/* The text of node v's own frame, into buf[cap] or a string held. */
static const char *frame_of(const struct heaptrack *h, uint32_t v,
			    char *buf, size_t cap, bool *known)
{
	uint64_t ip = h->nodes[v].ip;
	if (h->mode == RAW) {
		raw_frame(h, ip, buf, cap);
		return buf;
	}
	if (ip == 0 || ip >= h->nips) {
		*known = false;
		snprintf(buf, cap, "0x%llx", (unsigned long long)ip);
		return buf;
	}
	return h->ips[ip];
}

/* Whether node p's stack may be copied into its children's: built, and
 * made from what still holds (the same modules; defined instructions). */
static bool reusable(const struct heaptrack *h, uint32_t p)
{
	const struct node *n = &h->nodes[p];
	return p != 0 && n->stack && n->stack != dropped_stack &&
	       n->version == (h->mode == RAW ? h->mod_version : 0);
}

/*
 * The stack of trace node `t`, built once (NULL: out of memory): its
 * frames up to the root, innermost first, as many whole frames as fit in
 * MAX_STACK_BYTES and MAX_STACK_FRAMES. A node whose parent's stack is
 * built (the usual order) copies that text after its own frame: O(the
 * text), not a walk of up to 256 frames formatted again.
 */
static const char *stack_of(struct as_builder *b, struct heaptrack *h,
			    uint32_t t)
{
	if (t == 0)
		return NULL;
	if (h->nodes[t].stack)
		return h->nodes[t].stack;
	if (h->stack_text > STACK_TEXT_FLOOR + STACK_TEXT_PER_BYTE * h->fed) {
		h->dropped++;
		return h->nodes[t].stack = dropped_stack;
	}
	size_t at = 0;
	h->scratch[0] = 0;
	uint32_t frames = 0, p = h->nodes[t].parent;
	bool known = true;
	char num[1100];
	const char *text = frame_of(h, t, num, sizeof(num), &known);
	if (put(h->scratch, &at, text, strlen(text)))
		frames = lines(text);
	if (frames && reusable(h, p)) {
		/* The parent's whole frames that fit after ours. */
		const struct node *pn = &h->nodes[p];
		known = known && pn->version == 0;
		size_t take = 0;
		uint32_t k = 0;
		while (k < pn->nframes && frames + k < MAX_STACK_FRAMES) {
			const char *nl = memchr(pn->stack + take, '\n',
						pn->len - take);
			size_t end = nl ? (size_t)(nl - pn->stack) : pn->len;
			if (at + 1 + end > MAX_STACK_BYTES - 1)
				break;
			take = end;
			k++;
			if (!nl)
				break;
			take = end + 1;
		}
		if (k) {
			size_t n = take && pn->stack[take - 1] == '\n' ? take - 1
								     : take;
			h->scratch[at++] = '\n';
			memcpy(h->scratch + at, pn->stack, n);
			at += n;
			h->scratch[at] = 0;
			frames += k;
		}
	} else {
		for (uint32_t v = p; frames && v != 0 &&
				     frames < MAX_STACK_FRAMES;
		     v = h->nodes[v].parent) {
			text = frame_of(h, v, num, sizeof(num), &known);
			size_t n = strlen(text);
			if (n + 1 > MAX_STACK_BYTES - 1 - at)
				break; /* whole frames only */
			put(h->scratch, &at, "\n", 1);
			put(h->scratch, &at, text, n);
			frames += lines(text);
		}
	}
	struct node *nd = &h->nodes[t];
	nd->len = (uint32_t)at;
	nd->nframes = frames;
	nd->version = h->mode == RAW ? h->mod_version
				     : (known ? 0 : UINT32_MAX);
	h->stack_text += at;
	return nd->stack = as_heap_intern(b, h->heap, h->scratch);
}

static int set_mode(struct heaptrack *h, enum mode m, uint64_t line,
		    struct as_diag *diag)
{
	if (h->mode == UNKNOWN)
		h->mode = m;
	if (h->mode != m)
		return as_diag_set(diag, line, AS_EPARSE,
				   "a %s line in a %s heaptrack file",
				   m == RAW ? "raw" : "interpreted",
				   h->mode == RAW ? "raw" : "interpreted");
	return AS_OK;
}

static int alloc_interpreted(struct as_builder *b, struct heaptrack *h,
			     uint32_t ai, uint64_t line, struct as_diag *diag)
{
	struct info *in = &h->infos[ai];
	if (in->count == UINT32_MAX)
		return as_diag_set(diag, line, AS_EPARSE,
				   "too many blocks of one allocation");
	const struct as_live_sink *sink = b->sink;
	int64_t idx;
	if (sink) { /* a one-pass reader: the block goes to the sink */
		const char *st = stack_of(b, h, in->trace);
		if (in->trace && !st)
			return AS_ENOMEM;
		uint32_t id;
		int err = sink->alloc(sink->ctx, in->size, 16,
				      st == dropped_stack ? NULL : st, line,
				      &id, diag);
		if (err)
			return err;
		in->count++;
		idx = id;
	} else {
		char name[48];
		snprintf(name, sizeof(name), "a%x#%u", ai, ++in->count);
		idx = as_builder_alloc(b, name, in->size, 16, line, diag);
		if (idx < 0)
			return (int)idx;
	}
	if (!grow((void **)&h->next, &h->cap_next, (uint32_t)idx + 1,
		  sizeof(*h->next)))
		return AS_ENOMEM;
	h->next[idx] = in->live;
	in->live = (uint32_t)idx;
	if (sink)
		return AS_OK;
	const char *st = stack_of(b, h, in->trace);
	if (in->trace && !st)
		return AS_ENOMEM;
	return st && st != dropped_stack
		       ? as_builder_frames_interned(b, (uint32_t)idx, st)
		       : AS_OK;
}

static int free_interpreted(struct as_builder *b, struct heaptrack *h,
			    uint32_t ai, uint64_t line, struct as_diag *diag)
{
	struct info *in = &h->infos[ai];
	if (in->live == AS_NONE)
		return as_builder_count(b, "frees of blocks never allocated",
					1);
	uint32_t idx = in->live;
	in->live = h->next[idx];
	if (b->sink)
		return b->sink->free(b->sink->ctx, idx, line, diag);
	return as_builder_free(b, as_builder_buffer(b, idx)->name, line,
			       diag);
}

static int parse_line(struct as_builder *b, void *state, const char *s,
		      size_t len, uint64_t line, struct as_diag *diag)
{
	struct heaptrack *h = state;
	if (len == 0)
		return AS_OK;
	/*
	 * A command line that held newlines (python3 -c with a program of
	 * several lines) goes on over the lines after X. heaptrack_print
	 * takes each line by its first byte, warns of those it does not
	 * know and goes on: here, the lines after X that are no record
	 * (a letter and a space) are the command line's, counted.
	 */
	bool record = len == 1 || s[1] == ' ';
	if (!record && h->in_cmdline) {
		h->cmdline_more++;
		return AS_OK;
	}
	h->in_cmdline = s[0] == 'X';
	if (s[0] == '#')
		return AS_OK;
	if (!record)
		return as_diag_set(diag, line, AS_EPARSE,
				   "unknown heaptrack line '%.*s'",
				   (int)(len > 40 ? 40 : len), s);
	if (s[0] == 's')
		return string_line(b, h, s, len, line, diag);
	if (s[0] == 'x' || s[0] == 'm') {
		int err = set_mode(h, RAW, line, diag);
		if (err)
			return err;
		return s[0] == 'x' ? exe_line(b, h, s, len, line, diag)
				   : module_line(b, h, s, len, line, diag);
	}
	if (s[0] == 'X' || s[0] == 'I' || s[0] == 'R' || s[0] == 'S')
		return AS_OK;
	struct field f[MAX_FIELDS];
	int n = split(s, len, f);
	if (n < 0)
		return as_diag_set(diag, line, AS_EPARSE, "too many fields");
	uint64_t v, w;
	uint32_t i, j;
	int err;
	switch (s[0]) {
	case 'v':
		if (n < 3 || (err = hex(&f[2], line, &v, diag)))
			return n < 3 ? as_diag_set(diag, line, AS_EPARSE,
						   "version line needs two "
						   "numbers")
				     : err;
		h->version = v > 1000 ? 1000 : (unsigned)v;
		return AS_OK;
	case 'A':
		return as_builder_count(b, "heaptrack attached to a running "
					   "process",
					1);
	case 'c':
		if (n != 2 || (err = hex(&f[1], line, &v, diag)))
			return n != 2 ? as_diag_set(diag, line, AS_EPARSE,
						    "timestamp line needs one "
						    "number")
				      : err;
		if (v > UINT64_MAX / 1000)
			return as_diag_set(diag, line, AS_EPARSE,
					   "timestamp %llx ms overflows",
					   (unsigned long long)v);
		if ((err = as_builder_clock(b, v * 1000, line, diag)))
			return err;
		if (b->sink && b->sink->clock)
			b->sink->clock(b->sink->ctx, v * 1000);
		return AS_OK;
	case 'i':
		if ((err = set_mode(h, INTERPRETED, line, diag)))
			return err;
		return ip_line(b, h, f, n, line, diag);
	case 't':
		if (n != 3)
			return as_diag_set(diag, line, AS_EPARSE,
					   "trace line needs an instruction "
					   "and a parent");
		if ((err = hex(&f[1], line, &v, diag)) ||
		    (err = index_of(&f[2], h->nnodes, "trace", line, &i,
				    diag)))
			return err;
		if (!grow((void **)&h->nodes, &h->cap_nodes, h->nnodes + 1,
			  sizeof(*h->nodes)))
			return AS_ENOMEM;
		h->nodes[h->nnodes++] = (struct node){.ip = v, .parent = i};
		return AS_OK;
	case 'a':
		if (n != 3)
			return as_diag_set(diag, line, AS_EPARSE,
					   "allocation info needs a size and "
					   "a trace");
		if ((err = set_mode(h, INTERPRETED, line, diag)) ||
		    (err = hex(&f[1], line, &v, diag)) ||
		    (err = index_of(&f[2], h->nnodes, "trace", line, &i,
				    diag)))
			return err;
		if (!grow((void **)&h->infos, &h->cap_infos, h->ninfos + 1,
			  sizeof(*h->infos)))
			return AS_ENOMEM;
		h->infos[h->ninfos++] = (struct info){v, i, AS_NONE, 0};
		return AS_OK;
	case '+':
		if (n == 2) {
			if ((err = set_mode(h, INTERPRETED, line, diag)) ||
			    (err = index_of(&f[1], h->ninfos, "allocation",
					    line, &i, diag)))
				return err;
			return alloc_interpreted(b, h, i, line, diag);
		}
		if (n != 4)
			return as_diag_set(diag, line, AS_EPARSE,
					   "allocation line needs an "
					   "allocation index, or a size, a "
					   "trace and an address");
		if ((err = set_mode(h, RAW, line, diag)) ||
		    (err = hex(&f[1], line, &v, diag)) ||
		    (err = index_of(&f[2], h->nnodes, "trace", line, &j,
				    diag)) ||
		    (err = hex(&f[3], line, &w, diag)))
			return err;
		if (w == 0)
			return as_diag_set(diag, line, AS_EPARSE,
					   "allocation at address 0");
		const char *st = stack_of(b, h, j);
		if (j && !st)
			return AS_ENOMEM;
		return as_heap_alloc(b, h->heap, w, v,
				     st == dropped_stack ? NULL : st, AS_NONE,
				     line, diag);
	case '-':
		if (n != 2)
			return as_diag_set(diag, line, AS_EPARSE,
					   "deallocation line needs one "
					   "number");
		if (h->mode == INTERPRETED ||
		    (h->mode == UNKNOWN && f[1].len < 8)) {
			if ((err = set_mode(h, INTERPRETED, line, diag)) ||
			    (err = index_of(&f[1], h->ninfos, "allocation",
					    line, &i, diag)))
				return err;
			return free_interpreted(b, h, i, line, diag);
		}
		if ((err = hex(&f[1], line, &v, diag)))
			return err;
		return as_heap_free(b, h->heap, v, line, &i, diag);
	default:
		return as_diag_set(diag, line, AS_EPARSE,
				   "unknown heaptrack line '%.*s'",
				   (int)(len > 40 ? 40 : len), s);
	}
}

static void ht_free(struct heaptrack *h)
{
	as_heap_destroy(h->heap);
	free(h->strs);
	free(h->ips);
	free(h->nodes);
	free(h->infos);
	free(h->next);
	free(h->scratch);
	free(h->mods);
	free(h->pieces);
	free(h);
}

static int ht_lines(struct as_builder *b, struct as_line_state *st,
		    const char *data, size_t len, struct as_diag *diag)
{
	struct heaptrack *h = st->priv;
	if (!h) {
		if (!(h = st->priv = calloc(1, sizeof(*h))))
			return AS_ENOMEM;
		h->version = 2;
		if (!(h->heap = as_heap_create()) ||
		    !(h->scratch = malloc(MAX_STACK_BYTES)) ||
		    !grow((void **)&h->strs, &h->cap_strs, 1, sizeof(*h->strs)) ||
		    !grow((void **)&h->ips, &h->cap_ips, 1, sizeof(*h->ips)) ||
		    !grow((void **)&h->nodes, &h->cap_nodes, 1,
			  sizeof(*h->nodes)))
			return AS_ENOMEM;
		h->strs[h->nstrs++] = "";
		h->ips[h->nips++] = "";
		h->nodes[h->nnodes++] = (struct node){0};
	}
	h->fed += len;
	return as_recorded_lines(b, st, data, len, parse_line, h, diag);
}

static int ht_end(struct as_builder *b, struct as_line_state *st, int err,
		  struct as_diag *diag)
{
	struct heaptrack *h = st->priv;
	if (!err && h && h->dropped)
		err = as_builder_count(b, "stacks dropped past the text bound "
					  "(docs/trace-format.md)",
				       h->dropped);
	if (!err && h && h->cmdline_more)
		err = as_builder_count(b, "lines of a command line (X) that "
					  "held newlines",
				       h->cmdline_more);
	if (!err && h && h->mode == RAW)
		err = as_heap_finish(b, h->heap, "blocks live at the end");
	if (!err && h && h->mode != RAW) {
		uint64_t live = 0;
		for (uint32_t i = 0; i < h->ninfos; i++)
			for (uint32_t v = h->infos[i].live; v != AS_NONE;
			     v = h->next[v])
				live++;
		if (live)
			err = as_builder_count(b, "blocks live at the end",
					       live);
	}
	if (h)
		ht_free(h);
	st->priv = NULL;
	return err;
}

/* "v HEX HEX" then "X " or "x ": heaptrack's header. */
static bool ht_sniff(const char *head, size_t len)
{
	const char *p = head, *end = head + len, *s;
	size_t n;
	if (!(s = as_next_line(&p, end, &n)) || n < 5 || s[0] != 'v' ||
	    s[1] != ' ')
		return false;
	for (size_t i = 2; i < n; i++)
		if (!(s[i] == ' ' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return (s = as_next_line(&p, end, &n)) && n >= 2 &&
	       (s[0] == 'X' || s[0] == 'x') && s[1] == ' ';
}

const struct as_format_impl as_format_heaptrack = {
	.name = "heaptrack",
	.extensions = ".heaptrack",
	.sniff = ht_sniff,
	.lines = ht_lines,
	.end = ht_end,
};
