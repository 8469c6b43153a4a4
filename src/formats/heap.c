/*
 * The malloc heap model of the mtrace and raw heaptrack readers.
 *
 * Addresses: open addressing with linear probing, load at most 1/2, keyed
 * hashing (as_hash_u64: no file can make its addresses collide), one
 * entry per distinct address ever returned (a program's heap reuses
 * addresses, so this stays far smaller than the buffer count). Callers and
 * stacks: a set of interned strings, so 10^7 blocks from 100 call sites
 * hold 100 copies.
 *
 * Names: none at load. A block's name, "0xADDR#N", is its address (back
 * through the address map) and its rank among the blocks at that address,
 * both in the finished trace; the trace's namer (heap_names) writes them
 * all when the first one is read (as_trace_buffer_name), which `replay`
 * and `check` never do unless they print one. That is the ~18 bytes a
 * block that a 10^7-block trace would otherwise hold.
 *
 * Recorded offsets (`-s recorded`): the addresses, with every address range
 * that no block ever touched and that is longer than GAP_KEEP shrunk to one
 * page plus its remainder modulo the page, so offsets keep the addresses'
 * alignment; the trace's address map (as_trace_address_of) turns them back
 * into addresses. The main heap, thread arenas and mmap'ed blocks lie terabytes
 * apart; shrunk, the plan's peak is the span malloc really used: the heap's
 * own fragmentation stays, the empty space between mappings goes. The
 * lowest block keeps its offset within its page.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/heap.h"

#define GAP_KEEP (64u << 10) /* gaps up to this are the heap's own */
#define PAGE 4096u

/*
 * 16 bytes a slot: on 10^7-event traces the table is most of what the
 * reader holds beside the trace. After the last line every block has
 * ended and the count and live buffer are done with; the slot's second
 * word then holds the highest end of a block at its address (shrink_gaps).
 */
struct addr_entry {
	uint64_t addr;          /* 0: empty slot (malloc never returns 0) */
	union {
		struct {
			uint32_t count; /* blocks handed out here */
			uint32_t live;  /* the live buffer here, or AS_NONE */
		};
		uint64_t top;           /* after the last line */
	};
};

struct str_entry {
	const char *s;          /* NULL: empty slot */
	uint32_t len, hash;     /* hash: as_hash_mem's low bits */
};

struct as_heap {
	struct addr_entry *addrs;
	size_t addr_mask, naddrs;
	struct str_entry *strs; /* interned strings, open addressing */
	size_t str_mask, nstrs;
};

struct as_heap *as_heap_create(void)
{
	return calloc(1, sizeof(struct as_heap));
}

void as_heap_destroy(struct as_heap *h)
{
	if (!h)
		return;
	free(h->addrs);
	free(h->strs);
	free(h);
}

static struct addr_entry *addr_find(struct as_heap *h, uint64_t addr)
{
	if (!h->addrs)
		return NULL;
	size_t i = as_hash_u64(addr) & h->addr_mask;
	while (h->addrs[i].addr && h->addrs[i].addr != addr)
		i = (i + 1) & h->addr_mask;
	return h->addrs[i].addr ? &h->addrs[i] : NULL;
}

void as_heap_prefetch(const struct as_heap *h, uint64_t addr)
{
#if defined(__GNUC__) || defined(__clang__)
	if (h->addrs)
		__builtin_prefetch(&h->addrs[as_hash_u64(addr) & h->addr_mask]);
#else
	(void)h;
	(void)addr;
#endif
}

void as_heap_prefetch_live(struct as_builder *b, struct as_heap *h,
			   uint64_t addr)
{
#if defined(__GNUC__) || defined(__clang__)
	const struct addr_entry *e = addr_find(h, addr);
	if (e && e->live != AS_NONE && !b->sink)
		__builtin_prefetch(as_builder_buffer(b, e->live), 1);
#else
	(void)b;
	(void)h;
	(void)addr;
#endif
}

static struct addr_entry *addr_get(struct as_heap *h, uint64_t addr)
{
	struct addr_entry *e = addr_find(h, addr);
	if (e)
		return e;
	if (!h->addrs || (h->naddrs + 1) * 2 > h->addr_mask + 1) {
		size_t cap = h->addrs ? (h->addr_mask + 1) * 2 : 1024;
		if (cap > SIZE_MAX / sizeof(struct addr_entry))
			return NULL;
		struct addr_entry *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; h->addrs && i <= h->addr_mask; i++) {
			if (!h->addrs[i].addr)
				continue;
			size_t j = as_hash_u64(h->addrs[i].addr) & (cap - 1);
			while (n[j].addr)
				j = (j + 1) & (cap - 1);
			n[j] = h->addrs[i];
		}
		free(h->addrs);
		h->addrs = n;
		h->addr_mask = cap - 1;
	}
	size_t i = as_hash_u64(addr) & h->addr_mask;
	while (h->addrs[i].addr)
		i = (i + 1) & h->addr_mask;
	h->addrs[i] = (struct addr_entry){.addr = addr, .live = AS_NONE};
	h->naddrs++;
	return &h->addrs[i];
}

const char *as_heap_intern_n(struct as_builder *b, struct as_heap *h,
			     const char *s, size_t len)
{
	if (len >= UINT32_MAX)
		return NULL;
	if (!h->strs || (h->nstrs + 1) * 2 > h->str_mask + 1) {
		size_t cap = h->strs ? (h->str_mask + 1) * 2 : 256;
		struct str_entry *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; h->strs && i <= h->str_mask; i++) {
			if (!h->strs[i].s)
				continue;
			size_t j = h->strs[i].hash & (cap - 1);
			while (n[j].s)
				j = (j + 1) & (cap - 1);
			n[j] = h->strs[i];
		}
		free(h->strs);
		h->strs = n;
		h->str_mask = cap - 1;
	}
	uint32_t hash = (uint32_t)as_hash_mem(s, len);
	size_t i = hash & h->str_mask;
	for (; h->strs[i].s; i = (i + 1) & h->str_mask)
		if (h->strs[i].hash == hash && h->strs[i].len == len &&
		    memcmp(h->strs[i].s, s, len) == 0)
			return h->strs[i].s;
	struct as_trace *t = as_builder_trace(b);
	const char *c = as_arena_dup(&t->priv->strings, s, len);
	if (!c)
		return NULL;
	h->strs[i] = (struct str_entry){c, (uint32_t)len, hash};
	h->nstrs++;
	return c;
}

const char *as_heap_intern(struct as_builder *b, struct as_heap *h,
			   const char *s)
{
	return as_heap_intern_n(b, h, s, strlen(s));
}

bool as_parse_hex(const char *s, size_t len, uint64_t *out)
{
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	while (len > 1 && *s == '0') {
		s++;
		len--;
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

char *as_put_hex(char *out, uint64_t x)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int k = 0;
	do
		tmp[k++] = digits[x & 15];
	while (x >>= 4);
	*out++ = '0';
	*out++ = 'x';
	while (k)
		*out++ = tmp[--k];
	return out;
}

/* "0xADDR#N" into out (at least 32 bytes); by hand, it runs per block. */
static void block_name(char *out, uint64_t addr, uint32_t n)
{
	char tmp[24];
	int k = 0;
	out = as_put_hex(out, addr);
	*out++ = '#';
	do
		tmp[k++] = (char)('0' + n % 10);
	while (n /= 10);
	while (k)
		*out++ = tmp[--k];
	*out = 0;
}

/* Free the live block at `e`; its index into *idx. */
static int free_entry(struct as_builder *b, struct addr_entry *e,
		      uint64_t line, uint32_t *idx, struct as_diag *diag)
{
	*idx = e->live;
	e->live = AS_NONE;
	if (b->sink)
		return b->sink->free(b->sink->ctx, *idx, line, diag);
	return as_builder_free_index(b, *idx, line, diag);
}

int as_heap_free(struct as_builder *b, struct as_heap *h, uint64_t addr,
		 uint64_t line, uint32_t *idx, struct as_diag *diag)
{
	*idx = AS_NONE;
	if (addr == 0)
		return AS_OK; /* free(NULL) */
	struct addr_entry *e = addr_find(h, addr);
	if (!e || e->live == AS_NONE)
		return as_builder_count(b, "frees of addresses never allocated",
					1);
	return free_entry(b, e, line, idx, diag);
}

int as_heap_alloc(struct as_builder *b, struct as_heap *h, uint64_t addr,
		  uint64_t size, const char *frames, uint32_t realloc_of,
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
	struct addr_entry *e = addr_get(h, addr);
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
	/* malloc's alignment (16 on 64-bit glibc), or what the address has. */
	uint64_t align = addr & (~addr + 1);
	if (align > 16)
		align = 16;
	if (b->sink) { /* a one-pass reader: the block goes to the sink */
		uint32_t id;
		if ((err = b->sink->alloc(b->sink->ctx, size, align, frames,
					  line, &id, diag)))
			return err;
		e->live = id;
		return AS_OK;
	}
	/*
	 * Unnamed: heap_names makes "0xADDR#N" from the address and the
	 * block's rank among those at it when a name is first read, so a
	 * 10^7-block trace holds no names for `replay` and `check`.
	 */
	int64_t idx = as_builder_alloc_unique(b, NULL, size, align, line,
					      diag);
	if (idx < 0)
		return (int)idx;
	e->live = (uint32_t)idx;
	as_builder_buffer(b, (uint32_t)idx)->recorded = addr;
	if (frames &&
	    (err = as_builder_frames_interned(b, (uint32_t)idx, frames)))
		return err;
	if (realloc_of != AS_NONE)
		return as_builder_realloc_of(b, (uint32_t)idx, realloc_of);
	return AS_OK;
}

static int by_addr(const void *x, const void *y)
{
	const struct addr_entry *a = x, *b = y;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

/*
 * Recorded offsets: the trace's address map over the touched ranges (each
 * address's blocks), untouched gaps over GAP_KEEP shrunk to a page plus
 * their remainder, then every buffer's address through it. Uses up the
 * address table: each slot's highest block end from a pass over the
 * buffers, then the slots in address order, merged as the map would merge
 * them, so the map is built from a few ranges and the table is freed first.
 */
static int shrink_gaps(struct as_builder *b, struct as_heap *h)
{
	struct as_trace *t = as_builder_trace(b);
	if (!h->naddrs)
		return AS_OK;
	for (size_t i = 0; i <= h->addr_mask; i++)
		h->addrs[i].top = h->addrs[i].addr;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *buf = &t->buffers[i];
		if (i + 16 < t->nbuffers &&
		    t->buffers[i + 16].recorded != AS_NO_OFFSET)
			as_heap_prefetch(h, t->buffers[i + 16].recorded);
		if (buf->recorded == AS_NO_OFFSET)
			continue;
		struct addr_entry *e = addr_find(h, buf->recorded);
		if (!e)
			return AS_EINVAL; /* every block's address is here */
		/* as_heap_alloc refused blocks past 64 bits */
		if (buf->recorded + buf->size > e->top)
			e->top = buf->recorded + buf->size;
	}
	size_t n = 0;
	for (size_t i = 0; i <= h->addr_mask; i++)
		if (h->addrs[i].addr)
			h->addrs[n++] = h->addrs[i];
	qsort(h->addrs, n, sizeof(*h->addrs), by_addr);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct addr_entry *last = m ? &h->addrs[m - 1] : NULL;
		if (last && (h->addrs[i].addr <= last->top ||
			     h->addrs[i].addr - last->top <= GAP_KEEP)) {
			if (h->addrs[i].top > last->top)
				last->top = h->addrs[i].top;
			continue;
		}
		h->addrs[m++] = h->addrs[i];
	}
	struct as_addr_range *v = malloc(m * sizeof(*v));
	if (!v)
		return AS_ENOMEM;
	for (size_t i = 0; i < m; i++)
		v[i] = (struct as_addr_range){
			.address = h->addrs[i].addr,
			.length = h->addrs[i].top - h->addrs[i].addr,
		};
	free(h->addrs);
	h->addrs = NULL;
	h->naddrs = 0;
	int err = as_builder_addr_map(b, v, m, GAP_KEEP, PAGE);
	free(v);
	if (err)
		return err;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		struct as_buffer *buf = &t->buffers[i];
		uint64_t off;
		if (buf->recorded == AS_NO_OFFSET)
			continue;
		if (!as_builder_offset_of(b, 0, buf->recorded, &off))
			return AS_EINVAL; /* every address is in the map */
		buf->recorded = off;
	}
	return AS_OK;
}

/*
 * The trace's namer (as_builder_namer): every block's name, "0xADDR#N" for
 * the N-th block at ADDR, from one pass in allocation order (the order the
 * reader counted them in) with a table of the addresses met. Buffers
 * already named keep their names and still count, so a pass that ran out
 * of memory can run again.
 */
static int heap_names(struct as_trace *t)
{
	struct as_heap *h = as_heap_create();
	if (!h)
		return AS_ENOMEM;
	int err = AS_OK;
	for (uint32_t i = 0; i < t->nbuffers && !err; i++) {
		struct as_buffer *buf = &t->buffers[i];
		uint64_t addr;
		if (buf->recorded == AS_NO_OFFSET ||
		    !as_trace_block_address(t, buf->space, buf->recorded,
					    &addr)) {
			err = AS_EINVAL; /* every block has its address */
			break;
		}
		struct addr_entry *e = addr_get(h, addr);
		if (!e) {
			err = AS_ENOMEM;
			break;
		}
		e->count++;
		if (buf->name)
			continue;
		char name[48];
		block_name(name, addr, e->count);
		if (!(buf->name = as_arena_dup(&t->priv->strings, name,
					       strlen(name))))
			err = AS_ENOMEM;
	}
	as_heap_destroy(h);
	return err;
}

int as_heap_finish(struct as_builder *b, struct as_heap *h,
		   const char *live_key)
{
	if (!b->sink)
		as_builder_namer(b, heap_names);
	uint64_t live = 0;
	int err = AS_OK;
	for (size_t i = 0; !err && h->addrs && i <= h->addr_mask; i++)
		if (h->addrs[i].addr && h->addrs[i].live != AS_NONE) {
			if (!b->sink)
				err = as_builder_leak_index(b,
							    h->addrs[i].live);
			live++;
		}
	if (!err && live)
		err = as_builder_count(b, live_key, live);
	/* A sink's trace holds no blocks: no offsets to make. */
	return err || b->sink ? err : shrink_gaps(b, h);
}
