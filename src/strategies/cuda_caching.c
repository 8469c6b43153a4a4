/*
 * cuda-caching: PyTorch's CUDA caching allocator (DeviceCachingAllocator),
 * replayed block for block (issue 13). The behaviour follows the facts in
 * ../shared/specs/pytorch-caching-allocator.md; no PyTorch code is used.
 *
 * A request is rounded (512 bytes, or a power-of-two division), served from
 * the small pool (<= 1 MiB) or the large pool by the best fit in (stream,
 * size, address) order with no further scan, split at the low end when the
 * rules allow, and otherwise given a new segment (2 MiB, 20 MiB or the
 * request rounded to 2 MiB) from the device. Before an out-of-memory the
 * allocator releases cached segments and retries. With expandable segments a
 * virtual range per (stream, pool) grows by mapping 2 MiB or 20 MiB pages.
 *
 * The device is a model (PyTorch has none): capacity counts bytes, and a
 * segment's address is the lowest-address first fit with 2 MiB-aligned
 * starts (below the space's own capacity, if the trace gives one). Plan
 * offsets are these addresses; expandable ranges, far apart in virtual
 * memory, are laid out one after the other above the segments at the end.
 * The plan also carries each buffer's segment size and offset inside it.
 *
 * On a recording (a PyTorch snapshot), the allocator starts from the state at
 * the start of the recording: the segments live at time 0, in their recorded
 * address order, with the blocks live at time 0 at their recorded offsets.
 * The replay never reads the recorded addresses of later allocations nor
 * later segment events; a recorded OOM is replayed (the cache is released)
 * and tells the device size. Recorded addresses are read only at the end,
 * to tell how many blocks the model put in the same place (stats
 * blocks_reproduced, segments_reproduced, notes with the first
 * disagreements).
 *
 * Ownership: the online driver creates one state per case and space, and
 * releases it with destroy (NULL accepted). Text goes only to emit.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/strategy.h"

#define NIL UINT32_MAX
#define MIN_BLOCK 512ull
#define SMALL_SIZE (1ull << 20)
#define SMALL_BUFFER (2ull << 20)
#define LARGE_BUFFER (20ull << 20)
#define MIN_LARGE_ALLOC (10ull << 20)
#define ROUND_LARGE (2ull << 20)
#define NDIV 16
#define MAX_BYTES (1ull << 60)
#define NO_LIMIT UINT64_MAX
/* The virtual range of an expandable segment without a capacity. */
#define DEFAULT_VA (1ull << 40)
/* Device addresses lie below VA_BASE; virtual ranges are taken above it. */
#define VA_BASE (1ull << 52)
/* Per buffer flags. */
#define SEEDED 1u          /* placed by the state at the start */
#define IN_INITIAL_SEG 2u  /* placed in a segment of that state */
#define IN_EXPANDABLE 4u   /* placed in an expandable segment */
/* Per-device stat keys (literals: plan stats keep the pointer). */
#define MAX_DEV_KEYS 8

/*
 * +--------------------------------------------------------------------+
 * | Treaps over one node array. A node has a key (k0, k1, k2) ordered  |
 * | lexicographically and unique within its tree, a value (block or    |
 * | unused), a size and aug = the largest size in its subtree.         |
 * | - pool free sets: key (stream, size, addr), value = block;        |
 * | - unmapped ranges of expandable segments: (stream, addr, 0);      |
 * | - device gaps: key (addr, 0, 0), size = gap length.               |
 * | prio (random) of a node is >= its children's. Free nodes form a    |
 * | stack through `l`.                                                 |
 * +--------------------------------------------------------------------+
 */
struct tnode {
	uint64_t k0, k1, k2;
	uint64_t size, aug;
	uint32_t l, r, prio, val;
};

struct tpool {
	struct tnode *n;
	uint32_t used, cap, free;
	uint64_t rng;
};

/*
 * +--------------------------------------------------------------------+
 * | A block: [addr, addr + size) of one segment. Blocks of a segment   |
 * | tile it in address order through prev/next (NIL at the ends).      |
 * | - an allocated block holds buffer `buf`; a free mapped block is in |
 * |   its pool's free set with key (stream, size, addr); an unmapped   |
 * |   block (expandable segments only) is in the pool's unmapped set.  |
 * | - no two neighbours are both free and equally mapped (merged).     |
 * | - unused slots form a stack through `next`.                        |
 * +--------------------------------------------------------------------+
 */
struct block {
	uint64_t addr, size;
	uint64_t gc_base;       /* pool's get_free_block count at insertion */
	uint32_t prev, next;
	uint32_t seg, buf;
	uint16_t stream;
	uint8_t allocated, mapped, small, used;
};

/*
 * +--------------------------------------------------------------------+
 * | A segment: one cudaMalloc, or one expandable virtual range (size = |
 * | its virtual size, mapped = bytes of mapped pages). `first` is its  |
 * | lowest block. Dead cudaMalloc slots (live = 0) are reused through  |
 * | a stack on `first`; dead expandable ranges keep their record (the |
 * | plan lays the ranges out by their high-water marks at the end).   |
 * +--------------------------------------------------------------------+
 */
struct segment {
	uint64_t addr, size, mapped, page;
	uint64_t hiwater;       /* expandable: highest mapped end - addr */
	uint32_t first;
	uint16_t stream;
	uint8_t small, expandable, live, initial;
};

struct pool {
	uint32_t blocks;        /* free set root */
	uint32_t unmapped;      /* expandable: unmapped ranges root */
	uint64_t calls;         /* get_free_block calls (gc ages) */
};

struct stat {
	uint64_t cur, peak;
};

struct cc {
	/* options */
	uint64_t max_split, max_non_split, capacity, large_seg;
	uint32_t div[NDIV];
	double gc_threshold, fraction;
	bool expandable, opt_capacity;
	bool learning;          /* a scratch replay that learns the capacity */
	struct as_opts opts;

	as_emit_fn emit;
	void *ctx;
	const struct as_trace *t;
	uint16_t space;
	bool is_first_case;

	struct tpool tp;
	uint32_t gaps;          /* device gaps root */
	uint64_t limit;         /* device addresses [0, limit) */
	struct pool pools[2];   /* 0 small, 1 large */

	struct block *b;
	uint32_t nb, capb, freeb;
	struct segment *s;
	uint32_t ns, caps, frees;
	uint64_t va_next;       /* next virtual range address */
	uint64_t addr_bound;    /* the space's capacity, or NO_LIMIT */
	uint64_t dev_top;       /* highest end of a cudaMalloc segment */

	uint32_t *blk_of;       /* per buffer: its block, NIL */
	uint32_t *seg_of;       /* per buffer: its segment, NIL */
	uint64_t *seg_size;     /* per buffer: model segment size, 0 none */
	uint64_t *seg_off;
	uint8_t *initial;       /* per buffer: SEEDED, IN_INITIAL_SEG */

	/* statistics as torch.cuda.memory_stats() names them */
	struct stat allocation, allocated_bytes, requested_bytes, segment,
		reserved_bytes, inactive_split, inactive_split_bytes,
		oversize_allocations, oversize_segments;
	uint32_t next_mark;     /* first recorded mark not yet replayed */
	uint64_t seen_peak;     /* reserved peak when alloc_at_peak was set */
	uint64_t alloc_at_peak; /* most allocated while reserved was at peak */
	uint64_t recorded_ooms;
	uint64_t num_alloc_retries, num_ooms, num_device_alloc,
		num_device_free, num_sync_all_streams, gc_runs, allocs;
};

static const struct as_option_desc cc_options[] = {
	{"max_split_size_mb", "0", "blocks this large (MiB, >= 20) are never split; 0: no limit"},
	{"roundup_power2_divisions", "0", "N or [256:4,>:1]: round requests to N divisions of their power of two"},
	{"expandable_segments", "0", "1 (True): one growing virtual range per stream and pool, 2/20 MiB pages"},
	{"garbage_collection_threshold", "0", "0 < t < 1: free old cached segments above t * fraction * capacity"},
	{"fraction", "0", "set_per_process_memory_fraction: the allocator may reserve fraction * capacity (0: unset)"},
	{"max_non_split_rounding_mb", "20", "an oversize request takes a cached block less than this much larger"},
	{"large_segment_size_mb", "20", "segment size for requests of 1-10 MiB (newest PyTorch)"},
	{"capacity", "0", "device memory (80G style); 0: the space's capacity, else what a recorded OOM tells, else unlimited"},
	{NULL, NULL, NULL},
};

/* ---- small helpers ---- */

static uint64_t round_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

static int floor_log2(uint64_t n)
{
	return 63 - __builtin_clzll(n);
}

static void stat_add(struct stat *s, uint64_t n)
{
	s->cur += n;
	if (s->cur > s->peak)
		s->peak = s->cur;
}

static void stat_sub(struct stat *s, uint64_t n)
{
	s->cur = n > s->cur ? 0 : s->cur - n;
}

static void emitf(struct cc *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void emitf(struct cc *s, const char *fmt, ...)
{
	if (!s->emit)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->emit(s->ctx, line);
}

/* ---- treaps ---- */

static int key_cmp(const struct tnode *a, uint64_t k0, uint64_t k1,
		   uint64_t k2)
{
	if (a->k0 != k0)
		return a->k0 < k0 ? -1 : 1;
	if (a->k1 != k1)
		return a->k1 < k1 ? -1 : 1;
	if (a->k2 != k2)
		return a->k2 < k2 ? -1 : 1;
	return 0;
}

static void t_fix(struct tpool *p, uint32_t x)
{
	struct tnode *n = &p->n[x];
	uint64_t m = n->size;
	if (n->l != NIL && p->n[n->l].aug > m)
		m = p->n[n->l].aug;
	if (n->r != NIL && p->n[n->r].aug > m)
		m = p->n[n->r].aug;
	n->aug = m;
}

static uint32_t t_new(struct tpool *p)
{
	uint32_t x;
	if (p->free != NIL) {
		x = p->free;
		p->free = p->n[x].l;
	} else {
		if (p->used == p->cap) {
			uint32_t cap = p->cap ? p->cap * 2 : 256;
			struct tnode *n = realloc(p->n, (size_t)cap * sizeof(*n));
			if (!n || cap < p->cap)
				return NIL;
			p->n = n;
			p->cap = cap;
		}
		x = p->used++;
	}
	p->n[x].l = p->n[x].r = NIL;
	p->n[x].prio = (uint32_t)(as_splitmix64(&p->rng) >> 32);
	return x;
}

/* Split t into keys < (k) and >= (k). */
static void t_split(struct tpool *p, uint32_t t, uint64_t k0, uint64_t k1,
		    uint64_t k2, uint32_t *lo, uint32_t *hi)
{
	if (t == NIL) {
		*lo = *hi = NIL;
		return;
	}
	if (key_cmp(&p->n[t], k0, k1, k2) < 0) {
		t_split(p, p->n[t].r, k0, k1, k2, &p->n[t].r, hi);
		*lo = t;
	} else {
		t_split(p, p->n[t].l, k0, k1, k2, lo, &p->n[t].l);
		*hi = t;
	}
	t_fix(p, t);
}

static uint32_t t_merge(struct tpool *p, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (p->n[a].prio >= p->n[b].prio) {
		p->n[a].r = t_merge(p, p->n[a].r, b);
		t_fix(p, a);
		return a;
	}
	p->n[b].l = t_merge(p, a, p->n[b].l);
	t_fix(p, b);
	return b;
}

static int t_insert(struct tpool *p, uint32_t *root, uint64_t k0,
		    uint64_t k1, uint64_t k2, uint64_t size, uint32_t val)
{
	uint32_t x = t_new(p);
	if (x == NIL)
		return AS_ENOMEM;
	struct tnode *n = &p->n[x];
	n->k0 = k0;
	n->k1 = k1;
	n->k2 = k2;
	n->size = n->aug = size;
	n->val = val;
	uint32_t lo, hi;
	t_split(p, *root, k0, k1, k2, &lo, &hi);
	*root = t_merge(p, t_merge(p, lo, x), hi);
	return AS_OK;
}

static bool t_erase_at(struct tpool *p, uint32_t *link, uint64_t k0,
		       uint64_t k1, uint64_t k2)
{
	uint32_t t = *link;
	if (t == NIL)
		return false;
	int c = key_cmp(&p->n[t], k0, k1, k2);
	bool found;
	if (c == 0) {
		*link = t_merge(p, p->n[t].l, p->n[t].r);
		p->n[t].l = p->free;
		p->free = t;
		return true;
	}
	found = t_erase_at(p, c > 0 ? &p->n[t].l : &p->n[t].r, k0, k1, k2);
	if (found)
		t_fix(p, t);
	return found;
}

/* Smallest node >= key, or NIL. */
static uint32_t t_lower_bound(const struct tpool *p, uint32_t t, uint64_t k0,
			      uint64_t k1, uint64_t k2)
{
	uint32_t best = NIL;
	while (t != NIL) {
		if (key_cmp(&p->n[t], k0, k1, k2) >= 0) {
			best = t;
			t = p->n[t].l;
		} else {
			t = p->n[t].r;
		}
	}
	return best;
}

/* Largest node < key, or NIL. */
static uint32_t t_before(const struct tpool *p, uint32_t t, uint64_t k0,
			 uint64_t k1, uint64_t k2)
{
	uint32_t best = NIL;
	while (t != NIL) {
		if (key_cmp(&p->n[t], k0, k1, k2) < 0) {
			best = t;
			t = p->n[t].r;
		} else {
			t = p->n[t].l;
		}
	}
	return best;
}

/* The node after x (in key order), or NIL. */
static uint32_t t_next(const struct tpool *p, uint32_t root, uint32_t x)
{
	const struct tnode *n = &p->n[x];
	uint64_t k0 = n->k0, k1 = n->k1, k2 = n->k2;
	/* the smallest key > (k0, k1, k2) is the lower bound of its
	 * successor key */
	if (k2 != UINT64_MAX)
		return t_lower_bound(p, root, k0, k1, k2 + 1);
	if (k1 != UINT64_MAX)
		return t_lower_bound(p, root, k0, k1 + 1, 0);
	if (k0 != UINT64_MAX)
		return t_lower_bound(p, root, k0 + 1, 0, 0);
	return NIL;
}

/* The lowest-key node whose size is >= need, or NIL. */
static uint32_t t_first_fit(const struct tpool *p, uint32_t t, uint64_t need)
{
	while (t != NIL && p->n[t].aug >= need) {
		uint32_t l = p->n[t].l;
		if (l != NIL && p->n[l].aug >= need)
			t = l;
		else if (p->n[t].size >= need)
			return t;
		else
			t = p->n[t].r;
	}
	return NIL;
}

/* ---- device model: first fit over gaps ---- */

static int gap_add(struct cc *s, uint64_t addr, uint64_t size)
{
	/* merge with the gap before and after */
	uint32_t b = t_before(&s->tp, s->gaps, addr, 0, 0);
	if (b != NIL && s->tp.n[b].k0 + s->tp.n[b].size == addr) {
		uint64_t baddr = s->tp.n[b].k0;
		size += s->tp.n[b].size;
		t_erase_at(&s->tp, &s->gaps, baddr, 0, 0);
		addr = baddr;
	}
	uint32_t a = t_lower_bound(&s->tp, s->gaps, addr, 0, 0);
	if (a != NIL && s->tp.n[a].k0 == addr + size) {
		uint64_t asz = s->tp.n[a].size;
		t_erase_at(&s->tp, &s->gaps, addr + size, 0, 0);
		size += asz;
	}
	return t_insert(&s->tp, &s->gaps, addr, 0, 0, size, NIL);
}

/* cudaMalloc: the lowest address with room below `bound`; false if none. */
static bool device_take(struct cc *s, uint64_t size, uint64_t bound,
			uint64_t *out)
{
	uint64_t need = round_up(size, ROUND_LARGE);
	uint32_t g = t_first_fit(&s->tp, s->gaps, need);
	if (g == NIL)
		return false;
	uint64_t addr = s->tp.n[g].k0, gsz = s->tp.n[g].size;
	if (bound != NO_LIMIT && (addr > bound || need > bound - addr))
		return false;
	t_erase_at(&s->tp, &s->gaps, addr, 0, 0);
	if (gsz > need && t_insert(&s->tp, &s->gaps, addr + need, 0, 0,
				   gsz - need, NIL) != AS_OK)
		return false;
	*out = addr;
	return true;
}

/* ---- blocks and segments ---- */

static uint32_t block_new(struct cc *s)
{
	uint32_t i;
	if (s->freeb != NIL) {
		i = s->freeb;
		s->freeb = s->b[i].next;
	} else {
		if (s->nb == s->capb) {
			uint32_t cap = s->capb ? s->capb * 2 : 256;
			struct block *n = realloc(s->b, (size_t)cap * sizeof(*n));
			if (!n || cap < s->capb)
				return NIL;
			s->b = n;
			s->capb = cap;
		}
		i = s->nb++;
	}
	memset(&s->b[i], 0, sizeof(s->b[i]));
	s->b[i].prev = s->b[i].next = s->b[i].buf = NIL;
	s->b[i].used = 1;
	s->b[i].mapped = 1;
	return i;
}

static void block_delete(struct cc *s, uint32_t i)
{
	s->b[i].used = 0;
	s->b[i].next = s->freeb;
	s->freeb = i;
}

static bool is_split(const struct block *b)
{
	return b->prev != NIL || b->next != NIL;
}

static bool counts_inactive_split(const struct cc *s, const struct block *b)
{
	return is_split(b) && !s->s[b->seg].expandable;
}

/* Put a free mapped block into its pool's free set. */
static int pool_insert(struct cc *s, uint32_t i)
{
	struct block *b = &s->b[i];
	struct pool *p = &s->pools[b->small ? 0 : 1];
	if (!b->mapped)
		return t_insert(&s->tp, &p->unmapped, b->stream, b->addr, 0, 0,
				i);
	b->gc_base = p->calls;
	if (counts_inactive_split(s, b)) {
		stat_add(&s->inactive_split, 1);
		stat_add(&s->inactive_split_bytes, b->size);
	}
	return t_insert(&s->tp, &p->blocks, b->stream, b->size, b->addr, 0, i);
}

static void pool_remove(struct cc *s, uint32_t i)
{
	struct block *b = &s->b[i];
	struct pool *p = &s->pools[b->small ? 0 : 1];
	if (!b->mapped) {
		t_erase_at(&s->tp, &p->unmapped, b->stream, b->addr, 0);
		return;
	}
	if (counts_inactive_split(s, b)) {
		stat_sub(&s->inactive_split, 1);
		stat_sub(&s->inactive_split_bytes, b->size);
	}
	t_erase_at(&s->tp, &p->blocks, b->stream, b->size, b->addr);
}

static uint32_t segment_new(struct cc *s)
{
	if (s->frees != NIL) {
		uint32_t i = s->frees;
		s->frees = s->s[i].first;
		return i;
	}
	if (s->ns == s->caps) {
		uint32_t cap = s->caps ? s->caps * 2 : 16;
		struct segment *n = realloc(s->s, (size_t)cap * sizeof(*n));
		if (!n || cap < s->caps)
			return NIL;
		s->s = n;
		s->caps = cap;
	}
	return s->ns++;
}

/* ---- sizes ---- */

static uint32_t divisions(const struct cc *s, uint64_t size)
{
	int idx = floor_log2(size) - 20;
	if (idx < 0)
		idx = 0;
	if (idx > NDIV - 1)
		idx = NDIV - 1;
	return s->div[idx];
}

static uint64_t next_division(uint64_t size, uint32_t d)
{
	if ((size & (size - 1)) == 0)
		return size;
	uint64_t floor = 1ull << floor_log2(size);
	uint64_t step = floor >> floor_log2(d);
	if (step == 0)
		return floor << 1;
	uint64_t f = size & ~(step - 1);
	return f == size ? size : f + step;
}

static uint64_t round_size(const struct cc *s, uint64_t n)
{
	if (n < MIN_BLOCK)
		return MIN_BLOCK;
	uint32_t d = divisions(s, n);
	if (d > 1 && n > MIN_BLOCK * d)
		return next_division(n, d);
	return round_up(n, MIN_BLOCK);
}

static uint64_t allocation_size(const struct cc *s, uint64_t size)
{
	if (size <= SMALL_SIZE)
		return SMALL_BUFFER;
	if (size < MIN_LARGE_ALLOC)
		return s->large_seg;
	return round_up(size, ROUND_LARGE);
}

/* ---- the allocator ---- */

/* The limit set_per_process_memory_fraction gives, or NO_LIMIT. */
static uint64_t allowed_max(const struct cc *s)
{
	if (s->fraction <= 0.0 || s->capacity == 0)
		return NO_LIMIT;
	return (uint64_t)(s->fraction * (double)s->capacity);
}

static uint64_t expandable_size(const struct cc *s, uint32_t i)
{
	const struct block *b = &s->b[i];
	uint64_t n = b->size;
	if (b->next != NIL && !s->b[b->next].mapped)
		n += s->b[b->next].size;
	return n;
}

static uint32_t get_free_block(struct cc *s, struct pool *p, uint64_t size,
			       uint16_t stream)
{
	if (s->fraction > 0.0 && s->gc_threshold > 0.0)
		p->calls++;
	uint32_t it = t_lower_bound(&s->tp, p->blocks, stream, size, 0);
	if (it == NIL || s->tp.n[it].k0 != stream)
		return NIL;
	uint32_t bi = s->tp.n[it].val;
	if (s->s[s->b[bi].seg].expandable && !s->expandable) {
		/* expandable segments turned off: only other blocks serve */
		while (it != NIL && s->tp.n[it].k0 == stream &&
		       s->s[s->b[s->tp.n[it].val].seg].expandable)
			it = t_next(&s->tp, p->blocks, it);
		if (it == NIL || s->tp.n[it].k0 != stream)
			return NIL;
		bi = s->tp.n[it].val;
	}
	if (s->s[s->b[bi].seg].expandable && s->expandable) {
		/* best fit by the size a block can grow to */
		uint32_t nx = t_next(&s->tp, p->blocks, it);
		while (s->s[s->b[bi].seg].expandable && nx != NIL &&
		       s->tp.n[nx].k0 == stream &&
		       expandable_size(s, s->tp.n[nx].val) <
			       expandable_size(s, bi)) {
			it = nx;
			bi = s->tp.n[it].val;
			nx = t_next(&s->tp, p->blocks, it);
		}
	}
	uint64_t bsize = s->b[bi].size;
	if (size < s->max_split && bsize >= s->max_split)
		return NIL;
	if (size >= s->max_split && bsize >= size + s->max_non_split)
		return NIL;
	pool_remove(s, bi);
	return bi;
}

static bool should_split(const struct cc *s, const struct block *b,
			 uint64_t size)
{
	uint64_t remaining = b->size - size;
	if (b->small || s->expandable)
		return remaining >= MIN_BLOCK;
	return size < s->max_split && remaining > SMALL_SIZE;
}

/* cudaFree of a whole-segment free block (already out of its pool). */
static void release_segment(struct cc *s, uint32_t bi)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	emitf(s, "segment_free addr=0x%" PRIx64 " size=%" PRIu64, g->addr,
	      g->size);
	gap_add(s, g->addr, round_up(g->size, ROUND_LARGE));
	stat_sub(&s->reserved_bytes, g->size);
	stat_sub(&s->segment, 1);
	if (g->size >= s->max_split)
		stat_sub(&s->oversize_segments, 1);
	s->num_device_free++;
	g->live = 0;
	g->first = s->frees;
	s->frees = b->seg;
	block_delete(s, bi);
}

/* Merge free neighbour `src` into `dst`; returns its size (0: no merge). */
static uint64_t try_merge(struct cc *s, uint32_t dst, uint32_t src)
{
	if (src == NIL)
		return 0;
	struct block *d = &s->b[dst], *c = &s->b[src];
	if (c->allocated || c->mapped != d->mapped)
		return 0;
	pool_remove(s, src);
	if (d->prev == src) {
		d->addr = c->addr;
		d->prev = c->prev;
		if (d->prev != NIL)
			s->b[d->prev].next = dst;
		else
			s->s[d->seg].first = dst;
	} else {
		d->next = c->next;
		if (d->next != NIL)
			s->b[d->next].prev = dst;
	}
	uint64_t n = c->size;
	d->size += n;
	block_delete(s, src);
	return n;
}

/*
 * Unmap the whole pages inside free block bi of an expandable segment; the
 * partial pages at its ends stay mapped as free blocks.
 */
static int unmap_block(struct cc *s, uint32_t bi)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	uint64_t lo = round_up(b->addr - g->addr, g->page) + g->addr;
	uint64_t hi = (b->addr + b->size - g->addr) / g->page * g->page +
		      g->addr;
	if (hi <= lo)
		return AS_OK;
	pool_remove(s, bi);
	uint32_t before = NIL, after = NIL;
	if (lo > b->addr) {
		if ((before = block_new(s)) == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[before] = *b;
		s->b[before].size = lo - b->addr;
		s->b[before].next = bi;
		if (b->prev != NIL)
			s->b[b->prev].next = before;
		else
			s->s[b->seg].first = before;
		b->prev = before;
	}
	if (hi < b->addr + b->size) {
		if ((after = block_new(s)) == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[after] = *b;
		s->b[after].addr = hi;
		s->b[after].size = b->addr + b->size - hi;
		s->b[after].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = after;
		b->next = after;
	}
	b = &s->b[bi];
	b->addr = lo;
	b->size = hi - lo;
	b->mapped = 0;
	g->mapped -= hi - lo;
	stat_sub(&s->reserved_bytes, hi - lo);
	s->num_device_free++;
	emitf(s, "segment_unmap addr=0x%" PRIx64 " size=%" PRIu64, lo, hi - lo);
	/* merge the unmapped range with unmapped neighbours */
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	int err = pool_insert(s, bi);
	if (err == AS_OK && before != NIL)
		err = pool_insert(s, before);
	if (err == AS_OK && after != NIL)
		err = pool_insert(s, after);
	return err;
}

/* release_cached_blocks (empty_cache): every whole free segment. */
static int release_cached(struct cc *s)
{
	s->num_sync_all_streams++;
	for (int p = 1; p >= 0; p--) {
		/* collect first: releasing mutates the set */
		uint32_t n = 0;
		for (uint32_t it = t_lower_bound(&s->tp, s->pools[p].blocks,
						 0, 0, 0);
		     it != NIL; it = t_next(&s->tp, s->pools[p].blocks, it))
			n++;
		uint32_t *v = malloc(((size_t)n + 1) * sizeof(*v));
		if (!v)
			return AS_ENOMEM;
		n = 0;
		for (uint32_t it = t_lower_bound(&s->tp, s->pools[p].blocks,
						 0, 0, 0);
		     it != NIL; it = t_next(&s->tp, s->pools[p].blocks, it))
			v[n++] = s->tp.n[it].val;
		int err = AS_OK;
		for (uint32_t k = 0; k < n && err == AS_OK; k++) {
			uint32_t bi = v[k];
			if (!s->b[bi].used || s->b[bi].allocated ||
			    !s->b[bi].mapped)
				continue;
			if (s->s[s->b[bi].seg].expandable) {
				err = unmap_block(s, bi);
			} else if (!is_split(&s->b[bi])) {
				pool_remove(s, bi);
				release_segment(s, bi);
			}
		}
		free(v);
		if (err)
			return err;
	}
	/* expandable ranges left wholly unmapped are given back */
	for (uint32_t i = 0; i < s->ns; i++) {
		struct segment *g = &s->s[i];
		if (g->live && g->expandable && g->mapped == 0 &&
		    s->b[g->first].next == NIL) {
			uint32_t bi = g->first;
			pool_remove(s, bi);
			g->live = 0;
			block_delete(s, bi);
		}
	}
	return AS_OK;
}

/* release_available_cached_blocks: oversize cached segments, if enough. */
static bool release_available(struct cc *s, struct pool *p, uint64_t size,
			      uint16_t stream)
{
	if (s->max_split == NO_LIMIT)
		return false;
	uint64_t key = size < s->max_split ? s->max_split : size;
	uint32_t it = t_lower_bound(&s->tp, p->blocks, stream, key, 0);
	if (it != NIL && s->tp.n[it].k0 == stream &&
	    !s->s[s->b[s->tp.n[it].val].seg].expandable) {
		uint32_t bi = s->tp.n[it].val;
		if (is_split(&s->b[bi]))
			return false;
		pool_remove(s, bi);
		release_segment(s, bi);
		return true;
	}
	/* several oversize blocks, the largest first */
	uint64_t released = 0;
	it = t_before(&s->tp, p->blocks, stream, key, 0);
	while (it != NIL && released < key && s->tp.n[it].k0 == stream &&
	       s->tp.n[it].k1 >= s->max_split) {
		uint32_t bi = s->tp.n[it].val;
		uint64_t k1 = s->tp.n[it].k1, k2 = s->tp.n[it].k2;
		if (!s->s[s->b[bi].seg].expandable && !is_split(&s->b[bi])) {
			released += s->b[bi].size;
			pool_remove(s, bi);
			release_segment(s, bi);
		}
		it = t_before(&s->tp, p->blocks, stream, k1, k2);
	}
	return released >= key;
}

/* garbage_collect_cached_blocks: whole large segments, oldest first. */
static void garbage_collect(struct cc *s)
{
	uint64_t amax = allowed_max(s);
	if (amax == NO_LIMIT)
		return;
	uint64_t threshold = (uint64_t)(s->gc_threshold * (double)amax);
	if (s->reserved_bytes.cur <= threshold)
		return;
	uint64_t target = s->reserved_bytes.cur - threshold, reclaimed = 0;
	struct pool *p = &s->pools[1];
	double total_age = 0.0;
	uint64_t freeable = 0;
	for (uint32_t it = t_lower_bound(&s->tp, p->blocks, 0, 0, 0);
	     it != NIL; it = t_next(&s->tp, p->blocks, it)) {
		const struct block *b = &s->b[s->tp.n[it].val];
		if (!is_split(b)) {
			total_age += (double)(p->calls - b->gc_base);
			freeable++;
		}
	}
	if (!freeable)
		return;
	s->gc_runs++;
	bool freed = true;
	while (reclaimed < target && freed && freeable > 0) {
		double age_threshold = total_age / (double)freeable;
		freed = false;
		uint32_t it = t_lower_bound(&s->tp, p->blocks, 0, 0, 0);
		while (it != NIL) {
			uint32_t bi = s->tp.n[it].val;
			uint32_t nx = t_next(&s->tp, p->blocks, it);
			const struct block *b = &s->b[bi];
			double age = (double)(p->calls - b->gc_base);
			if (!is_split(b) && !s->s[b->seg].expandable &&
			    age >= age_threshold) {
				freed = true;
				reclaimed += b->size;
				total_age -= age;
				freeable--;
				pool_remove(s, bi);
				release_segment(s, bi);
				/* the set changed: find the next again */
				if (nx != NIL)
					nx = t_lower_bound(
						&s->tp, p->blocks,
						s->tp.n[nx].k0, s->tp.n[nx].k1,
						s->tp.n[nx].k2);
			}
			it = nx;
		}
	}
}

/* A new segment of alloc_size bytes holding one free block (not pooled). */
static uint32_t new_segment(struct cc *s, uint64_t alloc_size, bool small,
			    uint16_t stream, int *err)
{
	uint64_t amax = allowed_max(s);
	if (amax != NO_LIMIT && s->reserved_bytes.cur + alloc_size > amax)
		return NIL;
	if (s->capacity && s->reserved_bytes.cur + alloc_size > s->capacity)
		return NIL;
	uint64_t addr;
	/* capacity counts bytes (CUDA maps physical memory anywhere); only
	 * a trace's own space capacity bounds the addresses of the plan */
	if (!device_take(s, alloc_size, s->addr_bound, &addr))
		return NIL;
	uint32_t gi = segment_new(s);
	uint32_t bi = gi == NIL ? NIL : block_new(s);
	if (bi == NIL) {
		*err = AS_ENOMEM;
		return NIL;
	}
	s->s[gi] = (struct segment){.addr = addr, .size = alloc_size,
				    .mapped = alloc_size, .first = bi,
				    .stream = stream, .small = small,
				    .live = 1};
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = alloc_size;
	b->seg = gi;
	b->stream = stream;
	b->small = small;
	stat_add(&s->segment, 1);
	stat_add(&s->reserved_bytes, alloc_size);
	if (alloc_size >= s->max_split)
		stat_add(&s->oversize_segments, 1);
	s->num_device_alloc++;
	if (addr + alloc_size > s->dev_top)
		s->dev_top = addr + alloc_size;
	emitf(s, "segment_alloc addr=0x%" PRIx64 " size=%" PRIu64, addr,
	      alloc_size);
	return bi;
}

/* Map pages at the start of unmapped block bi to cover `size` bytes. */
static int map_block(struct cc *s, uint32_t bi, uint64_t size, bool *ok)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	uint64_t n = round_up(size, g->page);
	if (n > b->size)
		n = b->size;
	uint64_t amax = allowed_max(s);
	*ok = false;
	if ((s->capacity && s->reserved_bytes.cur + n > s->capacity) ||
	    (amax != NO_LIMIT && s->reserved_bytes.cur + n > amax))
		return AS_OK;
	pool_remove(s, bi);
	if (n < b->size) {
		uint32_t r = block_new(s);
		if (r == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[r] = *b;
		s->b[r].addr = b->addr + n;
		s->b[r].size = b->size - n;
		s->b[r].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = r;
		b->next = r;
		b->size = n;
		int err = pool_insert(s, r);
		if (err)
			return err;
	}
	b->mapped = 1;
	g->mapped += n;
	if (b->addr + n - g->addr > g->hiwater)
		g->hiwater = b->addr + n - g->addr;
	stat_add(&s->reserved_bytes, n);
	s->num_device_alloc++;
	emitf(s, "segment_map addr=0x%" PRIx64 " size=%" PRIu64, b->addr, n);
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	*ok = true;
	return pool_insert(s, bi);
}

static bool allocatable(const struct cc *s, uint32_t i)
{
	return i != NIL && !s->b[i].allocated;
}

/* find_expandable_block: the lowest unmapped range with room, or a new
 * virtual range. */
static uint32_t find_expandable(struct cc *s, struct pool *p, bool small,
				uint16_t stream, uint64_t size, int *err)
{
	for (uint32_t it = t_lower_bound(&s->tp, p->unmapped, stream, 0, 0);
	     it != NIL && s->tp.n[it].k0 == stream;
	     it = t_next(&s->tp, p->unmapped, it)) {
		uint32_t c = s->tp.n[it].val;
		if (allocatable(s, s->b[c].prev))
			c = s->b[c].prev;
		uint64_t bytes = 0;
		for (uint32_t x = c; bytes < size && allocatable(s, x);
		     x = s->b[x].next)
			bytes += s->b[x].size;
		if (bytes >= size)
			return c;
	}
	uint64_t page = small ? SMALL_BUFFER : s->large_seg;
	uint64_t va = s->capacity ? s->capacity + s->capacity / 8 : DEFAULT_VA;
	va = round_up(va, page);
	if (va < round_up(size, page))
		return NIL;
	if (va > UINT64_MAX / 2 - s->va_next)
		return NIL; /* virtual addresses run out */
	uint64_t addr = s->va_next;
	s->va_next += va;
	uint32_t gi = segment_new(s);
	uint32_t bi = gi == NIL ? NIL : block_new(s);
	if (bi == NIL) {
		*err = AS_ENOMEM;
		return NIL;
	}
	s->s[gi] = (struct segment){.addr = addr, .size = va, .page = page,
				    .first = bi, .stream = stream,
				    .small = small, .expandable = 1,
				    .live = 1};
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = va;
	b->seg = gi;
	b->stream = stream;
	b->small = small;
	b->mapped = 0;
	if ((*err = pool_insert(s, bi)) != AS_OK)
		return NIL;
	return bi;
}

static uint32_t alloc_expandable(struct cc *s, struct pool *p, bool small,
				 uint16_t stream, uint64_t size, int *err)
{
	uint32_t c = find_expandable(s, p, small, stream, size, err);
	if (c == NIL)
		return NIL;
	bool ok = true;
	if (!s->b[c].mapped) {
		uint64_t n = s->b[c].size < size ? s->b[c].size : size;
		if ((*err = map_block(s, c, n, &ok)) || !ok)
			return NIL;
	}
	while (s->b[c].size < size) {
		uint32_t nx = s->b[c].next;
		if (nx == NIL || s->b[nx].mapped)
			return NIL;
		uint64_t rem = size - s->b[c].size;
		if ((*err = map_block(s, nx, rem < s->b[nx].size ? rem
								 : s->b[nx].size,
				      &ok)) ||
		    !ok)
			return NIL;
		/* nx merged c into itself: it is the candidate now */
		c = nx;
	}
	pool_remove(s, c);
	return c;
}

/* alloc_block: a new segment or mapped range; NIL when the device says no. */
static uint32_t alloc_block(struct cc *s, struct pool *p, bool small,
			    uint16_t stream, uint64_t size, uint64_t alloc_size,
			    bool retry, int *err)
{
	if (retry)
		s->num_alloc_retries++;
	uint64_t amax = allowed_max(s);
	if (amax != NO_LIMIT && s->reserved_bytes.cur + alloc_size > amax)
		return NIL;
	if (s->expandable)
		return alloc_expandable(s, p, small, stream, size, err);
	return new_segment(s, alloc_size, small, stream, err);
}

/* alloc_found_block: split at the low end when the rules allow. */
static int take_block(struct cc *s, uint32_t bi, uint64_t size)
{
	if (should_split(s, &s->b[bi], size)) {
		uint32_t r = block_new(s);
		if (r == NIL)
			return AS_ENOMEM;
		struct block *b = &s->b[bi];
		s->b[r] = *b;
		s->b[r].addr = b->addr + size;
		s->b[r].size = b->size - size;
		s->b[r].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = r;
		b->next = r;
		b->size = size;
		int err = pool_insert(s, r);
		if (err)
			return err;
	}
	struct block *b = &s->b[bi];
	b->allocated = 1;
	return AS_OK;
}

static int ensure_arrays(struct cc *s, const struct as_trace *t)
{
	if (s->blk_of)
		return AS_OK;
	size_t n = (size_t)t->nbuffers + 1;
	s->t = t;
	s->blk_of = malloc(n * sizeof(*s->blk_of));
	s->seg_of = malloc(n * sizeof(*s->seg_of));
	s->seg_size = calloc(n, sizeof(*s->seg_size));
	s->seg_off = calloc(n, sizeof(*s->seg_off));
	s->initial = calloc(n, 1);
	if (!s->blk_of || !s->seg_of || !s->seg_size || !s->seg_off ||
	    !s->initial)
		return AS_ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->blk_of[i] = s->seg_of[i] = NIL;
	return AS_OK;
}

static void account_alloc(struct cc *s, uint32_t bi, uint32_t buf,
			  uint64_t requested)
{
	struct block *b = &s->b[bi];
	b->buf = buf;
	s->blk_of[buf] = bi;
	stat_add(&s->allocation, 1);
	stat_add(&s->allocated_bytes, b->size);
	stat_add(&s->requested_bytes, requested);
	if (b->size >= s->max_split)
		stat_add(&s->oversize_allocations, 1);
	const struct segment *g = &s->s[b->seg];
	s->seg_size[buf] = g->expandable ? g->mapped : g->size;
	s->seg_off[buf] = b->addr - g->addr;
	if (g->initial)
		s->initial[buf] |= IN_INITIAL_SEG;
	if (g->expandable)
		s->initial[buf] |= IN_EXPANDABLE;
	s->seg_of[buf] = b->seg;
}

static uint64_t requested_of(const struct as_trace *t, uint32_t buf)
{
	uint64_t n = t->buffers[buf].size;
	if (t->info && t->info[buf].requested && t->info[buf].requested <= n)
		n = t->info[buf].requested;
	return n;
}

/*
 * The recording ran out of memory before time `now`: the real allocator
 * released every cached segment before it gave up (release_cached_blocks),
 * and so does the model. Only the mark's time is read.
 */
static int replay_marks(struct cc *s, const struct as_trace *t, uint64_t now)
{
	int err = AS_OK;
	while (err == AS_OK && s->next_mark < t->nmarks &&
	       t->marks[s->next_mark].time <= now) {
		const struct as_mark *m = &t->marks[s->next_mark++];
		if (m->kind != AS_MARK_OOM || m->space != s->space)
			continue;
		s->recorded_ooms++;
		err = release_cached(s);
		/*
		 * Without a capacity option, the device is as large as what
		 * the allocator held then plus what the device had free: the
		 * model runs out where the recording did from now on.
		 */
		uint64_t cap = s->reserved_bytes.cur + m->device_free;
		if (!err && !s->opt_capacity && m->device_free &&
		    (s->capacity == 0 || cap < s->capacity))
			s->capacity = cap;
	}
	return err;
}

static int cc_alloc(void *state, const struct as_trace *t, uint32_t buf,
		    uint64_t *offset, uint64_t *chunk)
{
	struct cc *s = state;
	int err = ensure_arrays(s, t);
	if (err)
		return err;
	if ((err = replay_marks(s, t, t->buffers[buf].start)))
		return err;
	if ((s->initial[buf] & SEEDED) && s->blk_of[buf] != NIL) {
		const struct block *b = &s->b[s->blk_of[buf]];
		*offset = b->addr;
		*chunk = b->size;
		return AS_OK;
	}
	uint64_t req = requested_of(t, buf);
	uint64_t align = as_buffer_align(&t->buffers[buf]);
	/* no device holds this much: a failed allocation, not an overflow */
	if (t->buffers[buf].size > MAX_BYTES || align > MAX_BYTES) {
		s->num_ooms++;
		return 1;
	}
	uint64_t size = round_size(s, req);
	if (size < t->buffers[buf].size)
		size = round_size(s, t->buffers[buf].size);
	/* PyTorch aligns to 512 bytes; a larger alignment (not a CUDA
	 * input) is had by asking for the slack and aligning inside */
	if (align > MIN_BLOCK)
		size = round_size(s, size + align - MIN_BLOCK);
	bool small = size <= SMALL_SIZE;
	struct pool *p = &s->pools[small ? 0 : 1];
	uint16_t stream = t->buffers[buf].stream;
	uint64_t alloc_size = allocation_size(s, size);
	s->allocs++;
	err = AS_OK;
	uint32_t bi = get_free_block(s, p, size, stream);
	if (bi == NIL) {
		if (s->fraction > 0.0 && s->gc_threshold > 0.0)
			garbage_collect(s);
		bi = alloc_block(s, p, small, stream, size, alloc_size, false,
				 &err);
		if (bi == NIL && !err && release_available(s, p, size, stream))
			bi = alloc_block(s, p, small, stream, size, alloc_size,
					 false, &err);
		if (bi == NIL && !err) {
			err = release_cached(s);
			if (!err)
				bi = alloc_block(s, p, small, stream, size,
						 alloc_size, true, &err);
		}
	}
	if (err)
		return err;
	if (bi == NIL) {
		s->num_ooms++;
		emitf(s, "oom: tried to allocate %" PRIu64 " (segment %" PRIu64
			 ") for buffer %s",
		      size, alloc_size, t->buffers[buf].name);
		return 1;
	}
	if ((err = take_block(s, bi, size)))
		return err;
	account_alloc(s, bi, buf, req);
	if (s->reserved_bytes.peak != s->seen_peak) {
		s->seen_peak = s->reserved_bytes.peak;
		s->alloc_at_peak = 0;
	}
	if (s->reserved_bytes.cur == s->reserved_bytes.peak &&
	    s->allocated_bytes.cur > s->alloc_at_peak)
		s->alloc_at_peak = s->allocated_bytes.cur;
	*offset = round_up(s->b[bi].addr, align);
	*chunk = s->b[bi].size;
	s->seg_off[buf] += *offset - s->b[bi].addr;
	return AS_OK;
}

static void cc_free(void *state, const struct as_trace *t, uint32_t buf)
{
	struct cc *s = state;
	if (!s->blk_of || buf >= t->nbuffers || s->blk_of[buf] == NIL)
		return;
	/* out of memory here only delays the release: check() tells */
	replay_marks(s, t, t->buffers[buf].end);
	uint32_t bi = s->blk_of[buf];
	s->blk_of[buf] = NIL;
	struct block *b = &s->b[bi];
	b->allocated = 0;
	b->buf = NIL;
	stat_sub(&s->allocation, 1);
	stat_sub(&s->allocated_bytes, b->size);
	stat_sub(&s->requested_bytes, requested_of(t, buf));
	if (b->size >= s->max_split)
		stat_sub(&s->oversize_allocations, 1);
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	/* out of memory here leaves the block out of the pool: check()
	 * reports it */
	pool_insert(s, bi);
}

/* ---- options and settings ---- */

/*
 * "4" or "[256:4,>:1]" into the 16 interval divisions (interval i holds
 * sizes in [2^i, 2^(i+1)) MiB). As PyTorch documents it, "k:v" gives v to
 * the sizes under k MiB down to the previous key, and ">:v" to the sizes
 * from the last key on.
 */
static bool parse_divisions(const char *v, uint32_t *div)
{
	uint64_t x;
	if (*v != '[') {
		if (!as_parse_u64(v, strlen(v), &x) || x > 1024 ||
		    (x & (x - 1)))
			return false;
		for (int i = 0; i < NDIV; i++)
			div[i] = (uint32_t)x;
		return true;
	}
	size_t len = strlen(v);
	if (len < 2 || v[len - 1] != ']')
		return false;
	const char *p = v + 1, *end = v + len - 1;
	int last = -1;
	bool first = true;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		const char *colon = memchr(p, ':', (size_t)(e - p));
		uint64_t val;
		if (!colon || !as_parse_u64(colon + 1, (size_t)(e - colon - 1),
					    &val) ||
		    val > 1024 || (val & (val - 1)))
			return false;
		if (colon - p == 1 && *p == '>') {
			for (int i = last > 0 ? last : 0; i < NDIV; i++)
				div[i] = (uint32_t)val;
		} else {
			if (!as_parse_u64(p, (size_t)(colon - p), &x) || !x ||
			    (x & (x - 1)) || floor_log2(x) >= NDIV)
				return false;
			int idx = floor_log2(x);
			if (first)
				for (int i = 0; i < idx; i++)
					div[i] = (uint32_t)val;
			else
				for (int i = last > 0 ? last : 0; i < idx; i++)
					div[i] = (uint32_t)val;
			first = false;
			div[idx] = (uint32_t)val;
			last = idx;
		}
		p = comma ? comma + 1 : end;
	}
	return true;
}

static bool given(const struct cc *s, const char *key)
{
	for (uint32_t i = 0; i < s->opts.n; i++)
		if (strcmp(s->opts.kv[i].key, key) == 0)
			return true;
	return false;
}

/* The value text after "key": in the metadata, or NULL. */
static const char *meta_value(const char *m, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = m; (p = strstr(p, key)); p += kl) {
		if (p == m || p[-1] != '"' || p[kl] != '"')
			continue;
		const char *q = p + kl + 1;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		if (*q != ':')
			continue;
		q++;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		return q;
	}
	return NULL;
}

static bool meta_number(const char *m, const char *key, double *out)
{
	const char *v = meta_value(m, key);
	if (!v)
		return false;
	char *end;
	double x = strtod(v, &end);
	if (end == v)
		return false;
	*out = x;
	return true;
}

/*
 * A snapshot's allocator_settings are the defaults: each applies unless the
 * option was given (command line or config line).
 */
/*
 * The PYTORCH_CUDA_ALLOC_CONF string itself ("key:value,..."): the settings
 * the structured keys do not carry (max_non_split_rounding_mb,
 * large_segment_size_mb), and all of them for writers without those keys.
 */
static void apply_conf_string(struct cc *s, const char *m)
{
	const char *v = meta_value(m, "PYTORCH_CUDA_ALLOC_CONF");
	if (!v || *v != '"')
		return;
	char conf[512];
	size_t n = 0;
	for (v++; *v && *v != '"' && n + 1 < sizeof(conf); v++)
		conf[n++] = *v;
	conf[n] = 0;
	char *p = conf;
	while (*p) {
		char *key = p;
		char *colon = strchr(p, ':');
		if (!colon)
			break;
		*colon = 0;
		char *val = colon + 1;
		char *end = val;
		if (*val == '[') {
			end = strchr(val, ']');
			end = end ? end + 1 : val + strlen(val);
		}
		end += strcspn(end, ",");
		p = *end ? end + 1 : end;
		*end = 0;
		while (*key == ' ')
			key++;
		uint64_t x;
		bool num = as_parse_u64(val, strlen(val), &x);
		if (strcmp(key, "max_split_size_mb") == 0 && num && x >= 20 &&
		    x < (MAX_BYTES >> 20) && !given(s, key))
			s->max_split = x << 20;
		else if (strcmp(key, "max_non_split_rounding_mb") == 0 && num &&
			 x < (MAX_BYTES >> 20) && !given(s, key))
			s->max_non_split = x << 20;
		else if (strcmp(key, "large_segment_size_mb") == 0 && num &&
			 x >= 2 && x % 2 == 0 && x < (1ull << 20) &&
			 !given(s, key))
			s->large_seg = x << 20;
		else if (strcmp(key, "expandable_segments") == 0 &&
			 !given(s, key))
			s->expandable = strcmp(val, "True") == 0 ||
					strcmp(val, "true") == 0 ||
					strcmp(val, "1") == 0;
		else if (strcmp(key, "roundup_power2_divisions") == 0 &&
			 !given(s, key)) {
			uint32_t div[NDIV] = {0};
			if (parse_divisions(val, div))
				memcpy(s->div, div, sizeof(div));
		} else if (strcmp(key, "garbage_collection_threshold") == 0 &&
			   !given(s, key)) {
			char *e;
			double d = strtod(val, &e);
			if (e != val && d > 0.0 && d < 1.0)
				s->gc_threshold = d;
		}
	}
}

static void apply_settings(struct cc *s, const char *m)
{
	double x;
	const char *v;
	apply_conf_string(s, m);
	if (!given(s, "max_split_size_mb") &&
	    meta_number(m, "max_split_size", &x) && x >= (double)LARGE_BUFFER &&
	    x < (double)MAX_BYTES)
		s->max_split = (uint64_t)x;
	if (!given(s, "garbage_collection_threshold") &&
	    meta_number(m, "garbage_collection_threshold", &x) && x > 0.0 &&
	    x < 1.0)
		s->gc_threshold = x;
	if (!given(s, "expandable_segments") &&
	    (v = meta_value(m, "expandable_segments")))
		s->expandable = strncmp(v, "true", 4) == 0 ||
				strncmp(v, "True", 4) == 0 || *v == '1';
	if (!given(s, "max_non_split_rounding_mb") &&
	    meta_number(m, "max_non_split_rounding_size", &x) && x > 0.0 &&
	    x < (double)MAX_BYTES)
		s->max_non_split = (uint64_t)x;
	if (!given(s, "roundup_power2_divisions") &&
	    (v = meta_value(m, "roundup_power2_divisions")) && *v == '{') {
		/* {"1": 0, "2": 0, ...}: interval start in MiB -> divisions */
		const char *end = strchr(v, '}');
		const char *p = v + 1;
		while (end && p < end) {
			const char *q1 = strchr(p, '"');
			if (!q1 || q1 > end)
				break;
			char *e1;
			unsigned long long mb = strtoull(q1 + 1, &e1, 10);
			const char *c = strchr(e1, ':');
			if (!c || c > end)
				break;
			char *e2;
			unsigned long long d = strtoull(c + 1, &e2, 10);
			if (mb && !(mb & (mb - 1)) && floor_log2(mb) < NDIV &&
			    d <= 1024 && !(d & (d - 1)))
				s->div[floor_log2(mb)] = (uint32_t)d;
			p = e2;
		}
	}
}

static void cc_destroy(void *state)
{
	struct cc *s = state;
	if (!s)
		return;
	free(s->tp.n);
	free(s->b);
	free(s->s);
	free(s->blk_of);
	free(s->seg_of);
	free(s->seg_size);
	free(s->seg_off);
	free(s->initial);
	free(s);
}

static int cc_create(const struct as_opts *o, as_emit_fn emit, void *ctx,
		     void **state, struct as_diag *diag)
{
	static const char *const bools[] = {"0",     "1",    "False", "True",
					   "false", "true", NULL};
	uint64_t msplit, nonsplit, lseg;
	int err, exp;
	struct cc *s = calloc(1, sizeof(*s));
	if (!s)
		return AS_ENOMEM;
	if ((err = as_opts_u64(o, "max_split_size_mb", 0, 0, 1ull << 40,
			       &msplit, diag)) ||
	    (err = as_opts_u64(o, "max_non_split_rounding_mb", 20, 0,
			       1ull << 40, &nonsplit, diag)) ||
	    (err = as_opts_u64(o, "large_segment_size_mb", 20, 2, 1ull << 20,
			       &lseg, diag)) ||
	    (err = as_opts_choice(o, "expandable_segments", bools, 0, &exp,
				  diag)) ||
	    (err = as_opts_u64(o, "capacity", 0, 0, MAX_BYTES, &s->capacity,
			       diag)) ||
	    (err = as_opts_double(o, "garbage_collection_threshold", 0.0, 0.0,
				  0.999999, &s->gc_threshold, diag)) ||
	    (err = as_opts_double(o, "fraction", 0.0, 0.0, 1.0, &s->fraction,
				  diag))) {
		free(s);
		return err;
	}
	if (msplit && msplit < 20) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option max_split_size_mb=%llu:"
				   " must be 0 or >= 20",
				   (unsigned long long)msplit);
	}
	if (lseg % 2) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option large_segment_size_mb"
				   "=%llu: must be a multiple of 2",
				   (unsigned long long)lseg);
	}
	const char *dv = as_opts_get(o, "roundup_power2_divisions");
	if (dv && !parse_divisions(dv, s->div)) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option roundup_power2_divisions"
				   "=%s: expected a power of 2 or a list like "
				   "[256:4,>:1]",
				   dv);
	}
	s->opts = *o;
	s->max_split = msplit ? msplit << 20 : NO_LIMIT;
	s->max_non_split = nonsplit << 20;
	s->large_seg = lseg << 20;
	s->expandable = exp % 2 == 1;
	s->opt_capacity = s->capacity != 0;
	s->emit = emit;
	s->ctx = ctx;
	s->tp.free = NIL;
	s->tp.rng = 0x13;
	s->freeb = NIL;
	s->gaps = NIL;
	for (int p = 0; p < 2; p++)
		s->pools[p].blocks = s->pools[p].unmapped = NIL;
	s->frees = NIL;
	s->va_next = VA_BASE;
	s->addr_bound = NO_LIMIT;
	if (t_insert(&s->tp, &s->gaps, 0, 0, 0, VA_BASE, NIL) != AS_OK) {
		cc_destroy(s);
		return AS_ENOMEM;
	}
	*state = s;
	return AS_OK;
}

/* ---- the state at the start of a recording ---- */

/* Recorded segments of `space` live at time 0, by address. */
static bool initial_seg_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->segments[a].addr < t->segments[b].addr;
}

/*
 * A buffer is part of the state at the start when it is live at time step 0
 * at a recorded address (readers of recordings that start mid-run give the
 * blocks allocated before the recording step 0, the trace's own operations
 * later steps) inside a segment live at time 0.
 */
static bool initial_buffer(const struct as_trace *t, uint32_t i,
			   uint16_t space)
{
	const struct as_buffer *b = &t->buffers[i];
	return b->start == 0 && b->space == space &&
	       b->recorded != AS_NO_OFFSET && b->alias_of == AS_NONE;
}

/* The recorded segment (index) holding addr at time `at`, or NIL. */
static uint32_t recorded_segment(const struct as_trace *t,
				 const uint32_t *by_addr, uint32_t n,
				 uint16_t space, uint64_t addr, uint64_t at)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->segments[by_addr[mid]].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* segments of one address over time: look back a bounded way */
	for (uint32_t k = 0; k < 64 && lo > 0; k++) {
		const struct as_segment *g = &t->segments[by_addr[--lo]];
		if (g->space == space && g->addr <= addr &&
		    addr - g->addr < g->size && g->start <= at &&
		    (at < g->end || g->end == g->start))
			return by_addr[lo];
	}
	return NIL;
}

/*
 * Append a block of kind 'f' (free), 'u' (unmapped) or 'a' (allocated) to
 * segment gi after *prev; a free or unmapped block extends a previous one
 * of the same kind (neighbours of one kind are merged).
 */
static int seed_block(struct cc *s, uint32_t gi, uint32_t *prev,
		      uint64_t addr, uint64_t size, char kind)
{
	if (size == 0)
		return AS_OK;
	if (kind != 'a' && *prev != NIL) {
		struct block *p = &s->b[*prev];
		if (!p->allocated && p->mapped == (kind == 'f') &&
		    p->addr + p->size == addr) {
			p->size += size;
			return AS_OK;
		}
	}
	uint32_t bi = block_new(s);
	if (bi == NIL)
		return AS_ENOMEM;
	struct segment *g = &s->s[gi];
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = size;
	b->seg = gi;
	b->stream = g->stream;
	b->small = g->small;
	b->mapped = kind != 'u';
	b->allocated = kind == 'a';
	b->prev = *prev;
	if (*prev != NIL)
		s->b[*prev].next = bi;
	else
		g->first = bi;
	*prev = bi;
	return AS_OK;
}

static bool recorded_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[a].recorded < t->buffers[b].recorded;
}

/* The recorded pieces v[i, j) of one segment (or one expandable range). */
struct seed_range {
	const struct as_segment *const *pieces;
	uint32_t n;
	uint64_t base, end;     /* recorded addresses */
	bool expandable, small;
	uint16_t stream;
};

/*
 * Fill model segment gi (at model address `at`) with the recorded range's
 * blocks: the buffers bufs[*k...] that lie in it at their recorded offsets,
 * free space between them, and (expandable) unmapped holes.
 */
static int seed_blocks(struct cc *s, const struct as_trace *t, uint32_t gi,
		       const struct seed_range *r, const uint32_t *bufs,
		       uint32_t nb, uint32_t *k)
{
	uint32_t prev = NIL;
	int err = AS_OK;
	uint64_t at = r->base; /* recorded address covered so far */
	uint64_t model = s->s[gi].addr;
	while (*k < nb && t->buffers[bufs[*k]].recorded < r->base)
		(*k)++;
	for (uint32_t p = 0, q; !err && p < r->n; p = q) {
		/* a run of touching pieces is one mapped stretch */
		uint64_t pa = r->pieces[p]->addr;
		uint64_t pe = pa + r->pieces[p]->size;
		for (q = p + 1; q < r->n && r->pieces[q]->addr <= pe; q++)
			if (r->pieces[q]->addr + r->pieces[q]->size > pe)
				pe = r->pieces[q]->addr + r->pieces[q]->size;
		if (pe <= at)
			continue;
		if (pa > at)
			err = seed_block(s, gi, &prev, at - r->base + model,
					 pa - at, 'u');
		if (pa > at)
			at = pa;
		for (; !err && *k < nb && t->buffers[bufs[*k]].recorded < pe;
		     (*k)++) {
			uint32_t buf = bufs[*k];
			const struct as_buffer *bb = &t->buffers[buf];
			uint64_t size = round_size(s, bb->size);
			/* overlapping the previous one or sticking out of
			 * the mapped stretch: the replay places it anew */
			if (bb->recorded < at || size > pe - bb->recorded)
				continue;
			err = seed_block(s, gi, &prev, at - r->base + model,
					 bb->recorded - at, 'f');
			/* a tail the allocator would not have split off
			 * belongs to the block */
			uint64_t next = pe;
			if (*k + 1 < nb &&
			    t->buffers[bufs[*k + 1]].recorded < pe)
				next = t->buffers[bufs[*k + 1]].recorded;
			uint64_t gap = next > bb->recorded + size
					       ? next - bb->recorded - size
					       : 0;
			if (gap && (s->s[gi].small || s->expandable ||
						    s->s[gi].expandable
					    ? gap < MIN_BLOCK
					    : gap <= SMALL_SIZE))
				size += gap;
			if (!err)
				err = seed_block(s, gi, &prev,
						 bb->recorded - r->base + model,
						 size, 'a');
			if (err)
				break;
			struct block *b = &s->b[prev];
			b->stream = bb->stream;
			s->initial[buf] = SEEDED;
			account_alloc(s, prev, buf, requested_of(t, buf));
			at = bb->recorded + size;
		}
		if (!err && at < pe)
			err = seed_block(s, gi, &prev, at - r->base + model,
					 pe - at, 'f');
		if (at < pe)
			at = pe;
	}
	if (!err && at < r->end)
		err = seed_block(s, gi, &prev, at - r->base + model,
				 r->end - at, 'u');
	uint64_t mapped = 0;
	for (uint32_t x = s->s[gi].first; x != NIL; x = s->b[x].next)
		if (s->b[x].mapped) {
			mapped += s->b[x].size;
			s->s[gi].hiwater = s->b[x].addr + s->b[x].size -
					   s->s[gi].addr;
		}
	s->s[gi].mapped = mapped;
	stat_add(&s->reserved_bytes, mapped);
	/* pool the free blocks now that the neighbours are known */
	for (uint32_t x = s->s[gi].first; !err && x != NIL; x = s->b[x].next)
		if (!s->b[x].allocated)
			err = pool_insert(s, x);
	return err;
}

/* Whether a recorded range holds small-pool blocks. */
static bool range_is_small(const struct cc *s, const struct as_trace *t,
			   const struct seed_range *r, const uint32_t *bufs,
			   uint32_t nb, uint32_t k)
{
	for (; k < nb && t->buffers[bufs[k]].recorded < r->end; k++)
		if (t->buffers[bufs[k]].recorded >= r->base)
			return round_size(s, t->buffers[bufs[k]].size) <=
			       SMALL_SIZE;
	if (!r->expandable)
		return r->end - r->base == SMALL_BUFFER;
	for (uint32_t p = 0; p < r->n; p++)
		if (r->pieces[p]->size % s->large_seg)
			return true;
	return false;
}

static int seed_state(struct cc *s, const struct as_trace *t, uint16_t space)
{
	uint32_t n = 0, np = 0, nb = 0;
	for (uint32_t i = 0; i < t->nsegments; i++)
		n += t->segments[i].space == space &&
		     t->segments[i].start == 0;
	if (!n)
		return AS_OK;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		np += initial_buffer(t, i, space);
	uint32_t *v = malloc((size_t)n * sizeof(*v));
	const struct as_segment **pv = malloc((size_t)n * sizeof(*pv));
	uint32_t *bufs = malloc(((size_t)np + 1) * sizeof(*bufs));
	int err = v && pv && bufs ? AS_OK : AS_ENOMEM;
	n = 0;
	for (uint32_t i = 0; !err && i < t->nsegments; i++)
		if (t->segments[i].space == space && t->segments[i].start == 0)
			v[n++] = i;
	for (uint32_t i = 0; !err && i < t->nbuffers; i++)
		if (initial_buffer(t, i, space))
			bufs[nb++] = i;
	if (!err)
		err = as_sort_u32(v, n, initial_seg_less, t);
	if (!err)
		err = as_sort_u32(bufs, nb, recorded_less, t);
	for (uint32_t i = 0; !err && i < n; i++)
		pv[i] = &t->segments[v[i]];
	/* ranges of an expandable segment: pieces of one stream less than
	 * a device apart (PyTorch reserves more than the device per range) */
	uint64_t apart = s->capacity ? s->capacity : 4ull << 30;
	uint32_t k = 0;
	for (uint32_t i = 0, j; !err && i < n; i = j) {
		struct seed_range r = {.pieces = pv + i, .base = pv[i]->addr,
				       .stream = pv[i]->stream,
				       .expandable = (pv[i]->flags &
						      AS_SEG_EXPANDABLE) != 0};
		r.end = r.base + pv[i]->size;
		for (j = i + 1; r.expandable && j < n &&
				(pv[j]->flags & AS_SEG_EXPANDABLE) &&
				pv[j]->stream == r.stream &&
				pv[j]->addr - r.end < apart;
		     j++)
			if (pv[j]->addr + pv[j]->size > r.end)
				r.end = pv[j]->addr + pv[j]->size;
		r.n = j - i;
		r.small = range_is_small(s, t, &r, bufs, nb, k);
		uint64_t page = r.small ? SMALL_BUFFER : s->large_seg;
		uint64_t size = r.end - r.base;
		if (r.expandable) {
			uint64_t va = s->capacity ? s->capacity + s->capacity / 8
						  : DEFAULT_VA;
			if (va < size)
				va = size;
			size = round_up(va, page);
			r.end = r.base + size;
		}
		uint64_t addr = s->va_next;
		/* a range no device could hold is left out: its buffers are
		 * placed by the replay */
		if (size > MAX_BYTES ||
		    (r.expandable && size > UINT64_MAX / 2 - s->va_next) ||
		    (!r.expandable &&
		     !device_take(s, size, s->addr_bound, &addr)))
			continue;
		uint32_t gi = segment_new(s);
		if (gi == NIL) {
			err = AS_ENOMEM;
			break;
		}
		if (r.expandable)
			s->va_next += size;
		else if (addr + size > s->dev_top)
			s->dev_top = addr + size;
		s->s[gi] = (struct segment){.addr = addr, .size = size,
					    .stream = r.stream,
					    .small = r.small,
					    .expandable = r.expandable,
					    .live = 1, .initial = 1,
					    .page = page, .first = NIL};
		if (!r.expandable) {
			stat_add(&s->segment, 1);
			if (size >= s->max_split)
				stat_add(&s->oversize_segments, 1);
		}
		err = seed_blocks(s, t, gi, &r, bufs, nb, &k);
	}
	free(v);
	free(pv);
	free(bufs);
	return err;
}

/*
 * The device size a recording's first OOM tells: replay the trace's start
 * on a scratch allocator up to that OOM and add the device's free memory
 * then to what the model held. 0 when the space has no OOM.
 */
static int cc_start(void *state, const struct as_trace *t, uint16_t space,
		    uint32_t case_index, struct as_diag *diag);

static uint64_t learn_capacity(const struct cc *s, const struct as_trace *t,
			       uint16_t space)
{
	const struct as_mark *m = NULL;
	for (uint32_t k = 0; k < t->nmarks && !m; k++)
		if (t->marks[k].kind == AS_MARK_OOM &&
		    t->marks[k].space == space && t->marks[k].device_free)
			m = &t->marks[k];
	if (!m)
		return 0;
	struct diag_sink {
		struct as_diag d;
	} sink;
	void *st = NULL;
	uint64_t cap = 0;
	if (cc_create(&s->opts, NULL, NULL, &st, &sink.d) != AS_OK)
		return 0;
	struct cc *x = st;
	x->learning = true;
	int err = cc_start(x, t, space, 0, &sink.d);
	for (uint32_t e = 0; !err && e < t->nevents; e++) {
		const struct as_event *ev = &t->events[e];
		if (ev->kind != AS_EV_ALLOC && ev->kind != AS_EV_FREE)
			continue;
		const struct as_buffer *b = &t->buffers[ev->arg];
		uint64_t now = ev->kind == AS_EV_ALLOC ? b->start : b->end;
		if (now >= m->time)
			break;
		if (b->space != space || b->alias_of != AS_NONE)
			continue;
		uint64_t off, chunk;
		if (ev->kind == AS_EV_ALLOC)
			err = cc_alloc(x, t, ev->arg, &off, &chunk) < 0;
		else
			cc_free(x, t, ev->arg);
	}
	if (!err && release_cached(x) == AS_OK)
		cap = x->reserved_bytes.cur + m->device_free;
	cc_destroy(x);
	return cap;
}

static int cc_start(void *state, const struct as_trace *t, uint16_t space,
		    uint32_t case_index, struct as_diag *diag)
{
	struct cc *s = state;
	(void)diag;
	s->t = t;
	s->space = space;
	s->is_first_case = case_index == 0;
	if (space < t->nspaces && t->spaces[space].capacity) {
		s->addr_bound = t->spaces[space].capacity;
		if (!s->opt_capacity)
			s->capacity = t->spaces[space].capacity;
	}
	if (t->metadata)
		apply_settings(s, t->metadata);
	int err = ensure_arrays(s, t);
	if (!err && case_index == 0)
		err = seed_state(s, t, space);
	if (!err && case_index == 0 && !s->opt_capacity && !s->learning) {
		uint64_t cap = learn_capacity(s, t, space);
		if (cap && (s->capacity == 0 || cap < s->capacity))
			s->capacity = cap;
	}
	return err;
}

/* ---- walk ---- */

static bool seg_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct cc *s = ctx;
	return s->s[a].addr < s->s[b].addr;
}

typedef bool (*seg_walk_fn)(void *ctx, const struct segment *g,
			    const struct block *b);

/* Segments in address order, and each one's blocks in address order;
 * false when fn stopped it. */
static bool seg_walk(const struct cc *s, seg_walk_fn fn, void *ctx)
{
	uint32_t *v = malloc(((size_t)s->ns + 1) * sizeof(*v));
	if (!v)
		return true;
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->ns; i++)
		if (s->s[i].live)
			v[n++] = i;
	bool go = true;
	if (as_sort_u32(v, n, seg_less, s) == AS_OK)
		for (uint32_t i = 0; go && i < n; i++) {
			const struct segment *g = &s->s[v[i]];
			for (uint32_t x = g->first; go && x != NIL;
			     x = s->b[x].next)
				go = fn(ctx, g, &s->b[x]);
		}
	free(v);
	return go;
}

struct walk_ctx {
	uint16_t space;
	as_block_fn visit;
	void *ctx;
	const struct as_trace *t;
};

static const char *region_of(const struct segment *g, const struct block *b)
{
	if (!b->mapped)
		return "unmapped";
	if (g->expandable)
		return g->small ? "expandable small" : "expandable large";
	return g->small ? "small segment" : "large segment";
}

static bool walk_one(void *ctx, const struct segment *g,
		     const struct block *b)
{
	struct walk_ctx *w = ctx;
	struct as_block blk = {
		.offset = b->addr,
		.size = b->size,
		.requested = b->allocated && w->t && b->buf < w->t->nbuffers
				     ? requested_of(w->t, b->buf)
				     : 0,
		.buffer = b->allocated ? b->buf : AS_NONE,
		.bin = -1,
		.region = region_of(g, b),
		.in_use = b->allocated,
	};
	return w->visit(w->ctx, w->space, &blk);
}

/* The blocks of every segment in address order (model addresses). */
static bool cc_walk(void *state, uint16_t space, as_block_fn visit, void *ctx)
{
	const struct cc *s = state;
	struct walk_ctx w = {space, visit, ctx, s->t};
	return seg_walk(s, walk_one, &w);
}

/* ---- queries and stats ---- */

static bool dump_one(void *ctx, const struct segment *g,
		     const struct block *b)
{
	struct cc *s = ctx;
	uint64_t sa = g->addr, ss = g->size, a = b->addr, n = b->size;
	char st = !b->mapped ? 'u' : b->allocated ? 'a' : 'f';
	emitf(s, "  segment 0x%" PRIx64 "+%" PRIu64 ": block +0x%" PRIx64
		 " %" PRIu64 " %s",
	      sa, ss, a - sa, n,
	      st == 'a' ? "allocated" : st == 'f' ? "free" : "unmapped");
	return true;
}

static void emit_stats(struct cc *s)
{
	emitf(s,
	      "allocated_bytes=%" PRIu64 " (peak %" PRIu64 ") reserved_bytes=%" PRIu64
	      " (peak %" PRIu64 ") segments=%" PRIu64 " inactive_split_bytes=%" PRIu64
	      " num_alloc_retries=%" PRIu64 " num_ooms=%" PRIu64,
	      s->allocated_bytes.cur, s->allocated_bytes.peak,
	      s->reserved_bytes.cur, s->reserved_bytes.peak, s->segment.cur,
	      s->inactive_split_bytes.cur, s->num_alloc_retries, s->num_ooms);
}

static void cc_query(void *state, enum as_query q)
{
	struct cc *s = state;
	switch (q) {
	case AS_Q_DUMP:
		emitf(s, "cuda-caching state:");
		seg_walk(s, dump_one, s);
		emit_stats(s);
		break;
	case AS_Q_STATS:
	case AS_Q_CURR:
		emit_stats(s);
		break;
	case AS_Q_RENDER:
		break;
	}
}

/* Add to a stat summed over spaces (space 0 starts it afresh). */
static void stat_sum(struct cc *s, struct as_plan *p, const char *key,
		     uint64_t v)
{
	uint64_t prev = 0;
	if (s->space > 0)
		for (uint32_t i = 0; i < p->nstats; i++)
			if (strcmp(p->stats[i].key, key) == 0)
				prev = (uint64_t)p->stats[i].value;
	as_plan_stat_int(p, key, prev + v);
}

static const char *const dev_reserved_keys[MAX_DEV_KEYS] = {
	"reserved_bytes.peak.space0", "reserved_bytes.peak.space1",
	"reserved_bytes.peak.space2", "reserved_bytes.peak.space3",
	"reserved_bytes.peak.space4", "reserved_bytes.peak.space5",
	"reserved_bytes.peak.space6", "reserved_bytes.peak.space7",
};
static const char *const dev_recorded_keys[MAX_DEV_KEYS] = {
	"recorded_reserved_peak.space0", "recorded_reserved_peak.space1",
	"recorded_reserved_peak.space2", "recorded_reserved_peak.space3",
	"recorded_reserved_peak.space4", "recorded_reserved_peak.space5",
	"recorded_reserved_peak.space6", "recorded_reserved_peak.space7",
};

struct seg_ev {
	uint64_t time;
	int64_t delta;
};

static bool ev_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct seg_ev *e = ctx;
	if (e[a].time != e[b].time)
		return e[a].time < e[b].time;
	return e[a].delta < e[b].delta; /* frees first */
}

/* The recorded reserved peak of a space (sum of live segments). */
static uint64_t recorded_peak(const struct as_trace *t, uint16_t space)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nsegments; i++)
		n += t->segments[i].space == space;
	struct seg_ev *e = malloc(((size_t)2 * n + 1) * sizeof(*e));
	uint32_t *o = malloc(((size_t)2 * n + 1) * sizeof(*o));
	uint64_t cur = 0, peak = 0;
	if (e && o) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < t->nsegments; i++) {
			const struct as_segment *g = &t->segments[i];
			if (g->space != space)
				continue;
			e[k++] = (struct seg_ev){g->start, (int64_t)g->size};
			e[k++] = (struct seg_ev){g->end, -(int64_t)g->size};
		}
		for (uint32_t i = 0; i < k; i++)
			o[i] = i;
		if (as_sort_u32(o, k, ev_less, e) == AS_OK)
			for (uint32_t i = 0; i < k; i++) {
				cur += (uint64_t)e[o[i]].delta;
				if (cur > peak)
					peak = cur;
			}
	}
	free(e);
	free(o);
	return peak;
}

static bool addr_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	if (t->segments[a].addr != t->segments[b].addr)
		return t->segments[a].addr < t->segments[b].addr;
	return t->segments[a].start < t->segments[b].start;
}

/*
 * Why buffer i landed elsewhere than in the recording. Later disagreements
 * usually follow the first one (the model's state differs from then on);
 * the first gets a cause.
 */
static const char *why(const struct cc *s, const struct as_trace *t,
		       uint32_t i, const struct as_segment *rg, bool first,
		       bool below)
{
	const struct as_buffer *b = &t->buffers[i];
	if (s->seg_size[i] == 0)
		return "the model ran out of memory";
	/* a device size is not a setting of the allocator */
	for (uint32_t k = 0; k < s->opts.n; k++)
		if (s->opts.kv[k].from_spec &&
		    strcmp(s->opts.kv[k].key, "capacity") != 0)
			return "the model runs with other settings than the "
			       "recording";
	if (below)
		return "the recorded allocator mapped pages below the lowest "
		       "one its range had mapped at the start";
	if (!first)
		return "follows an earlier disagreement";
	if (b->stream != 0)
		return "stream reuse: blocks are kept per stream";
	/* a block the program had let go of but the allocator had not
	 * (record_stream, stream events) */
	for (uint32_t j = 0; t->info && j < i; j++)
		if (t->buffers[j].space == b->space &&
		    t->info[j].free_requested < b->start &&
		    b->start < t->buffers[j].end)
			return "record_stream or stream events delayed a free";
	if (rg->start == 0 && !(s->initial[i] & IN_INITIAL_SEG))
		return "the recorded allocator reused memory cached before "
		       "the recording (ring buffer truncation?)";
	if (rg->start > 0 && rg->start == b->start)
		return "the recorded allocator made a new segment where the "
		       "model reused a cached block (release, empty_cache or "
		       "version differences)";
	return "a different block was chosen (version differences, or state "
	       "from before the recording)";
}

/*
 * Agreement with the recording: per buffer allocated during the trace with
 * a recorded address, the same segment size and the same offset inside it.
 */
static void agreement(struct cc *s, struct as_plan *p)
{
	const struct as_trace *t = s->t;
	if (!t || !t->nsegments)
		return;
	uint32_t *by = malloc(((size_t)t->nsegments + 1) * sizeof(*by));
	if (!by)
		return;
	for (uint32_t i = 0; i < t->nsegments; i++)
		by[i] = i;
	if (as_sort_u32(by, t->nsegments, addr_less, t) != AS_OK) {
		free(by);
		return;
	}
	/*
	 * Expandable ranges map their pages from the base up, lowest
	 * unmapped first: every address ever mapped in a range lies in one
	 * run from its base. Runs of recorded pieces give the bases.
	 */
	uint64_t (*runs)[3] = malloc(((size_t)t->nsegments + 1) *
				     sizeof(*runs));
	uint32_t nruns = 0;
	/* pieces less than a device apart are one range, as seeding has it
	 * (a hole in the middle may never be mapped while recording) */
	uint64_t apart = s->capacity ? s->capacity : 4ull << 30;
	for (uint32_t k = 0; runs && k < t->nsegments; k++) {
		const struct as_segment *g = &t->segments[by[k]];
		if (g->space != s->space || !(g->flags & AS_SEG_EXPANDABLE))
			continue;
		if (nruns && (g->addr <= runs[nruns - 1][1] ||
			      g->addr - runs[nruns - 1][1] < apart)) {
			if (g->addr + g->size > runs[nruns - 1][1])
				runs[nruns - 1][1] = g->addr + g->size;
			if (g->start == 0 && g->addr < runs[nruns - 1][2])
				runs[nruns - 1][2] = g->addr;
			continue;
		}
		runs[nruns][0] = g->addr;
		runs[nruns][1] = g->addr + g->size;
		runs[nruns++][2] = g->start == 0 ? g->addr : UINT64_MAX;
	}
	uint64_t compared = 0, same = 0, seg_same = 0, notes = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		/* blocks from before the recording are the start, not the
		 * replay */
		if (b->space != s->space || b->start == 0 ||
		    b->recorded == AS_NO_OFFSET || b->alias_of != AS_NONE)
			continue;
		uint32_t g = recorded_segment(t, by, t->nsegments, s->space,
					      b->recorded, b->start);
		if (g == NIL)
			continue;
		const struct as_segment *rg = &t->segments[g];
		compared++;
		uint64_t roff = b->recorded - rg->addr, rsize = rg->size;
		bool rexp = (rg->flags & AS_SEG_EXPANDABLE) && runs;
		bool mexp = (s->initial[i] & IN_EXPANDABLE) != 0;
		if (rexp) {
			uint32_t lo = 0, hi = nruns;
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (runs[mid][0] <= b->recorded)
					lo = mid + 1;
				else
					hi = mid;
			}
			/* a range live at the start is measured from its
			 * lowest page mapped then, as seeding has it (pages
			 * mapped below it later are out of the model's
			 * reach); a later one from its lowest page */
			if (lo > 0) {
				uint64_t base = runs[lo - 1][2] != UINT64_MAX
							? runs[lo - 1][2]
							: runs[lo - 1][0];
				roff = b->recorded - base;
				rsize = runs[lo - 1][1] - base;
			}
		}
		/* an expandable range has no one size: the offset from its
		 * base tells */
		bool ss = rexp || mexp ? rexp == mexp
				       : s->seg_size[i] == rg->size;
		bool so = ss && s->seg_off[i] == roff;
		seg_same += ss;
		same += so;
		if (!so && notes < 8) {
			char line[512];
			snprintf(line, sizeof(line),
				 "%s: buffer %s (#%u, %" PRIu64
				 " B) model segment %" PRIu64 " +%" PRIu64
				 ", recorded segment %" PRIu64 " %+" PRId64
				 ": %s",
				 t->spaces[s->space].name, b->name, i, b->size,
				 s->seg_size[i], s->seg_off[i], rsize,
				 (int64_t)roff,
				 why(s, t, i, rg, notes == 0,
				     rexp && roff > rsize));
			as_plan_note(p, line);
			emitf(s, "disagreement %s", line);
			notes++;
		}
	}
	free(by);
	free(runs);
	stat_sum(s, p, "blocks_compared", compared);
	stat_sum(s, p, "blocks_same_place", same);
	stat_sum(s, p, "blocks_same_segment_size", seg_same);
	double c = 0, a = 0, z = 0;
	for (uint32_t k = 0; k < p->nstats; k++) {
		if (strcmp(p->stats[k].key, "blocks_compared") == 0)
			c = p->stats[k].value;
		if (strcmp(p->stats[k].key, "blocks_same_place") == 0)
			a = p->stats[k].value;
		if (strcmp(p->stats[k].key, "blocks_same_segment_size") == 0)
			z = p->stats[k].value;
	}
	/* nothing to compare (a snapshot without a trace): no fraction */
	if (c > 0) {
		as_plan_stat(p, "blocks_reproduced", a / c);
		as_plan_stat(p, "segments_reproduced", z / c);
	}
	uint64_t rp = recorded_peak(t, s->space);
	if (s->space < MAX_DEV_KEYS)
		as_plan_stat_int(p, dev_recorded_keys[s->space], rp);
	stat_sum(s, p, "recorded_reserved_peak", rp);
}

/*
 * Plan offsets of blocks in expandable ranges: the ranges (virtual, far
 * apart) are laid out one after the other above the cudaMalloc segments,
 * each as long as its highest mapped address ever, so that the plan's peak
 * tells memory rather than address space.
 */
static int lay_out_ranges(struct cc *s, struct as_plan *p)
{
	uint64_t *base = malloc(((size_t)s->ns + 1) * sizeof(*base));
	if (!base)
		return AS_ENOMEM;
	uint64_t at = round_up(s->dev_top, ROUND_LARGE);
	for (uint32_t i = 0; i < s->ns; i++) {
		base[i] = at;
		if (s->s[i].expandable)
			at += round_up(s->s[i].hiwater, ROUND_LARGE);
	}
	for (uint32_t i = 0; i < s->t->nbuffers; i++) {
		uint32_t g = s->seg_of[i];
		if (g != NIL && s->s[g].expandable &&
		    p->offset[i] != AS_NO_OFFSET)
			p->offset[i] = base[g] + s->seg_off[i];
	}
	free(base);
	return AS_OK;
}

static void cc_stats(void *state, struct as_plan *p)
{
	struct cc *s = state;
	if (s->t && s->seg_of)
		lay_out_ranges(s, p);
	if (s->t && s->seg_size && as_plan_want_segments(p) == AS_OK)
		for (uint32_t i = 0; i < s->t->nbuffers; i++)
			if (s->seg_size[i]) {
				p->segment_size[i] = s->seg_size[i];
				p->segment_offset[i] = s->seg_off[i];
			}
	stat_sum(s, p, "allocated_bytes.current", s->allocated_bytes.cur);
	stat_sum(s, p, "allocated_bytes.peak", s->allocated_bytes.peak);
	stat_sum(s, p, "reserved_bytes.current", s->reserved_bytes.cur);
	stat_sum(s, p, "reserved_bytes.peak", s->reserved_bytes.peak);
	/* reserved minus allocated at the reserved peak */
	stat_sum(s, p, "fragmentation_at_peak",
		 s->reserved_bytes.peak -
			 (s->seen_peak == s->reserved_bytes.peak
				  ? s->alloc_at_peak
				  : 0));
	stat_sum(s, p, "requested_bytes.peak", s->requested_bytes.peak);
	stat_sum(s, p, "allocation.peak", s->allocation.peak);
	stat_sum(s, p, "segment.current", s->segment.cur);
	stat_sum(s, p, "segment.peak", s->segment.peak);
	stat_sum(s, p, "inactive_split.current", s->inactive_split.cur);
	stat_sum(s, p, "inactive_split_bytes.current",
		 s->inactive_split_bytes.cur);
	stat_sum(s, p, "inactive_split_bytes.peak",
		 s->inactive_split_bytes.peak);
	stat_sum(s, p, "oversize_allocations.peak",
		 s->oversize_allocations.peak);
	stat_sum(s, p, "oversize_segments.peak", s->oversize_segments.peak);
	stat_sum(s, p, "num_alloc_retries", s->num_alloc_retries);
	stat_sum(s, p, "num_ooms", s->num_ooms);
	stat_sum(s, p, "num_device_alloc", s->num_device_alloc);
	stat_sum(s, p, "num_device_free", s->num_device_free);
	stat_sum(s, p, "num_sync_all_streams", s->num_sync_all_streams);
	stat_sum(s, p, "gc_runs", s->gc_runs);
	stat_sum(s, p, "recorded_ooms_replayed", s->recorded_ooms);
	if (s->space < MAX_DEV_KEYS)
		as_plan_stat_int(p, dev_reserved_keys[s->space],
				 s->reserved_bytes.peak);
	if (s->t && s->is_first_case)
		agreement(s, p);
}

/* ---- check ---- */

struct problems {
	uint64_t n;
	char *msg;
	size_t len;
};

static void problem(struct problems *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void problem(struct problems *p, const char *fmt, ...)
{
	if (p->n++ == 0 && p->msg && p->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->msg, p->len, fmt, ap);
		va_end(ap);
	}
}

struct check_walk {
	const struct cc *s;
	struct problems *p;
	uint64_t seg_addr, at, blocks, allocated, reserved, isplit;
	char last;
};

static bool check_one(void *ctx, const struct segment *g,
		      const struct block *b)
{
	struct check_walk *w = ctx;
	uint64_t sa = g->addr, ss = g->size, a = b->addr, n = b->size;
	char st = !b->mapped ? 'u' : b->allocated ? 'a' : 'f';
	if (sa != w->seg_addr) {
		w->seg_addr = sa;
		w->at = sa;
		w->last = 0;
	}
	if (a != w->at)
		problem(w->p, "segment 0x%" PRIx64 ": block at +0x%" PRIx64
			      " does not follow the previous one (+0x%" PRIx64 ")",
			sa, a - sa, w->at - sa);
	if (n == 0)
		problem(w->p, "segment 0x%" PRIx64 ": empty block", sa);
	if (st == w->last && st != 'a')
		problem(w->p, "segment 0x%" PRIx64 ": two %s neighbours at +0x%" PRIx64
			      " not merged",
			sa, st == 'f' ? "free" : "unmapped", a - sa);
	w->last = st;
	w->at = a + n;
	if (w->at > sa + ss)
		problem(w->p, "segment 0x%" PRIx64 ": block +0x%" PRIx64
			      " runs past its end",
			sa, a - sa);
	w->blocks++;
	if (st == 'a')
		w->allocated += n;
	return true;
}

static uint64_t cc_check(void *state, char *msg, size_t len)
{
	const struct cc *s = state;
	struct problems p = {0, msg, len};
	struct check_walk w = {.s = s, .p = &p, .seg_addr = UINT64_MAX};
	seg_walk(s, check_one, &w);
	uint64_t reserved = 0, isplit = 0, nseg = 0, free_blocks = 0;
	for (uint32_t i = 0; i < s->ns; i++) {
		const struct segment *g = &s->s[i];
		if (!g->live)
			continue;
		nseg += !g->expandable;
		reserved += g->expandable ? g->mapped : g->size;
		uint64_t sum = 0, mapped = 0;
		for (uint32_t x = g->first; x != NIL; x = s->b[x].next) {
			const struct block *b = &s->b[x];
			if (!b->used || b->seg != i)
				problem(&p, "segment 0x%" PRIx64
					    ": block list holds a stray block",
					g->addr);
			if (b->next != NIL && s->b[b->next].prev != x)
				problem(&p, "segment 0x%" PRIx64
					    ": prev/next links disagree",
					g->addr);
			sum += b->size;
			if (b->mapped)
				mapped += b->size;
			if (b->mapped && !b->allocated) {
				free_blocks++;
				struct pool const *pl = &s->pools[b->small ? 0 : 1];
				uint32_t it = t_lower_bound(&s->tp, pl->blocks,
							    b->stream, b->size,
							    b->addr);
				if (it == NIL || s->tp.n[it].val != x ||
				    s->tp.n[it].k2 != b->addr)
					problem(&p, "free block 0x%" PRIx64
						    " is not in its pool",
						b->addr);
				if (counts_inactive_split(s, b))
					isplit += b->size;
			}
			if (b->allocated && (b->buf == NIL ||
					     s->blk_of[b->buf] != x))
				problem(&p, "allocated block 0x%" PRIx64
					    " is not its buffer's",
					b->addr);
			if (b->small != g->small)
				problem(&p, "block 0x%" PRIx64
					    " is in the other pool's segment",
					b->addr);
		}
		if (sum != g->size)
			problem(&p, "segment 0x%" PRIx64 ": blocks cover %" PRIu64
				    " of %" PRIu64 " bytes",
				g->addr, sum, g->size);
		if (mapped != g->mapped)
			problem(&p, "segment 0x%" PRIx64 ": %" PRIu64
				    " bytes mapped, blocks say %" PRIu64,
				g->addr, g->mapped, mapped);
	}
	uint64_t pooled = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t it = t_lower_bound(&s->tp, s->pools[k].blocks, 0,
						 0, 0);
		     it != NIL; it = t_next(&s->tp, s->pools[k].blocks, it))
			pooled++;
	if (pooled != free_blocks)
		problem(&p, "pools hold %" PRIu64 " blocks, segments %" PRIu64
			    " free ones",
			pooled, free_blocks);
	if (reserved != s->reserved_bytes.cur)
		problem(&p, "reserved_bytes=%" PRIu64 " but segments hold %" PRIu64,
			s->reserved_bytes.cur, reserved);
	if (w.allocated != s->allocated_bytes.cur)
		problem(&p, "allocated_bytes=%" PRIu64 " but blocks hold %" PRIu64,
			s->allocated_bytes.cur, w.allocated);
	if (isplit != s->inactive_split_bytes.cur)
		problem(&p, "inactive_split_bytes=%" PRIu64 " but %" PRIu64
			    " found",
			s->inactive_split_bytes.cur, isplit);
	if (nseg != s->segment.cur)
		problem(&p, "segment=%" PRIu64 " but %" PRIu64 " are live",
			s->segment.cur, nseg);
	if (s->capacity && s->reserved_bytes.cur > s->capacity)
		problem(&p, "reserved_bytes=%" PRIu64 " exceeds capacity %" PRIu64,
			s->reserved_bytes.cur, s->capacity);
	return p.n;
}

static const struct as_online_impl cc_online = {
	.create = cc_create,
	.start = cc_start,
	.alloc = cc_alloc,
	.free = cc_free,
	.query = cc_query,
	.stats = cc_stats,
	.check = cc_check,
	.walk = cc_walk,
	.destroy = cc_destroy,
};

const struct as_strategy_impl as_strategy_cuda_caching = {
	.info = {
		.name = "cuda-caching",
		.summary = "PyTorch CUDA caching allocator (DeviceCachingAllocator)",
		.online = true,
		.options = cc_options,
	},
	.online = &cc_online,
};
