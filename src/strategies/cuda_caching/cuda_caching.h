/*
 * cuda-caching: PyTorch's CUDA caching allocator (DeviceCachingAllocator),
 * replayed block for block. The behaviour follows the facts in
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
 * Equal free blocks are ordered by the device's addresses, which are not
 * first fit on a real device: each segment has an order key (below).
 *
 * On a recording (a PyTorch snapshot), the allocator starts from the state at
 * the start of the recording: the segments live at time 0, in their recorded
 * address order, with the blocks live at time 0 at their recorded offsets.
 * The replay never reads the recorded addresses of later allocations; it
 * replays what the program did to the allocator besides requests and
 * frees (a recorded OOM, torch.cuda.empty_cache(): the cache is released)
 * and what the device answered: the address a cudaMalloc of the same size
 * returned at the same step orders the new segment, and the device's size
 * comes from the recording (an OOM, a release to retry a cudaMalloc).
 * Recorded addresses are read at the end to tell how many blocks the model
 * put in the same place (stats blocks_reproduced, segments_reproduced,
 * notes with the first disagreements, the plan's divergence).
 *
 * That is a reproduce run. With settings (or a capacity option) other than
 * the recording's, a run is a what-if: after the first event it reads only
 * the program's requests, frees, streams and empty_cache() calls (releases
 * with nothing reserved at their step) and the device's size; the model
 * decides OOM releases, retries, garbage collection and every segment's
 * order key (its own address). The state at the start is seeded under the
 * recording's settings in both.
 *
 * Ownership: the online driver creates one state per case and space, and
 * releases it with destroy (NULL accepted). Text goes only to emit.
 *
 * Private to the strategy (and its tests): the state and the functions the
 * files of this folder share, grouped by the file that defines them.
 */
#ifndef AS_CUDA_CACHING_H
#define AS_CUDA_CACHING_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/cuda.h"
#include "core/tree.h"
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
#define IN_SMALL_POOL 8u   /* placed in a small-pool block */
#define MADE_SEGMENT 16u   /* its allocation reserved a segment (pages) */
/* The run's note on what it read from a recording starts with this. */
#define AS_CUDA_NOTE_INPUTS "inputs: "
/* A note on an out of memory (oom.c) starts with this. */
#define AS_CUDA_NOTE_OOM "oom: "
/* Per-device stat keys (literals: plan stats keep the pointer). */
#define MAX_DEV_KEYS 8

/*
 * +--------------------------------------------------------------------+
 * | Trees (core/tree.h) over one node array. A node has a key         |
 * | (k0, k1, k2) ordered lexicographically and unique within its tree, |
 * | a value (block or unused), a size and aug = the largest size in   |
 * | its subtree.                                                       |
 * | - pool free sets: key (stream, size, addr), value = block;        |
 * | - unmapped ranges of expandable segments: (stream, addr, 0);      |
 * | - device gaps: key (addr, 0, 0), size = gap length;               |
 * | - live segments' order keys: (key, segment, 0), size = key + size |
 * |   (aug: the largest end below, for overlap queries).              |
 * | Free nodes form a stack through `link.l`.                          |
 * +--------------------------------------------------------------------+
 */
struct tnode {
	uint64_t k0, k1, k2;
	uint64_t size, aug;
	struct as_tree_link link;
	uint32_t val;
};

struct tpool {
	struct tnode *n;
	uint32_t used, cap, free;
	struct as_tree tree;    /* over n (as_cuda_t_init) */
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
	uint64_t inherited;     /* bytes of the state at the start held */
	/* Where the device put it, for ordering: PyTorch breaks ties between
	 * free blocks of one size by address, and the device (cudaMalloc),
	 * not the allocator, chooses addresses. The recorded address (a trace
	 * offset) of the segment a recording's cudaMalloc returned at the
	 * same step, or addr + key_base. A block's key: key + its offset. */
	uint64_t key;
	uint32_t first;
	uint16_t stream;
	uint8_t small, expandable, live, initial;
};

struct pool {
	uint32_t blocks;        /* free set root */
	uint32_t unmapped;      /* expandable: unmapped ranges root */
	uint64_t calls;         /* get_free_block calls (gc ages) */
};

/* One of PyTorch's memory stats: its value now and its peak (not POSIX's
 * struct stat). */
struct as_cuda_stat {
	uint64_t cur, peak;
};

/* The allocator's settings: PYTORCH_CUDA_ALLOC_CONF and the fraction. */
struct cc_settings {
	uint64_t max_split, max_non_split, large_seg;
	uint32_t div[NDIV];
	double gc_threshold, fraction;
	bool expandable;
};

/*
 * What a run read from the recording after its first event, and what it
 * decided itself (stats and the run's note, start.c).
 */
struct cc_inputs {
	uint64_t empty_cache;   /* the program's empty_cache() calls known */
	uint64_t left;          /* releases before a cudaMalloc a what-if
				 * leaves to the model (retry or program) */
	uint64_t seg_keys;      /* recorded cudaMalloc addresses as keys */
	uint64_t retries;       /* recorded releases before a retry */
	uint64_t model_keys;    /* segments keyed by the model's address */
	uint64_t model_releases;/* the model's own releases before an OOM */
	uint64_t segments, blocks; /* the state at the first event */
	uint64_t oom_requests;  /* requests the recording ran out of memory on */
	uint64_t tails;         /* block tails at the start the trace's first
				 * allocation into a free range revealed */
};

/* What the allocator held when a request ran out of memory (oom.c); the
 * first few, handed to the plan (as_plan_oom_add). */
#define OOM_CLASSES AS_OOM_CLASSES
#define MAX_OOM_NOTES 4

struct cc {
	/* options */
	struct cc_settings set;
	uint64_t capacity;
	bool opt_capacity;
	/* A what-if: settings or a device other than the recording's. After
	 * the first event it reads only what the program did (requests,
	 * frees, streams, its empty_cache() calls) and the device's size;
	 * `differs` names what differs, for the note. */
	bool whatif;
	uint32_t ndiffer;       /* settings other than the recording's */
	char differs[160];
	struct cc_inputs in;
	/* Reserved bytes of the state at the start (inherited) still held,
	 * the peak of those the model reserved itself (made), and from the
	 * first of the program's empty_cache() calls that gave inherited
	 * bytes back: its step and the reserved peak from then on. */
	uint64_t inherited_start, inherited_cur, made_peak;
	uint64_t released_at, after_peak;
	bool released;
	/* recorded OOM requests that fail: all of them when reproducing,
	 * those the what-if's state cannot serve either */
	uint64_t oom_failing;
	struct as_plan_oom oom[MAX_OOM_NOTES];
	uint32_t noom;
	uint64_t oom_fragmentation, oom_live;
	/* where the capacity comes from and the step that told it (a
	 * recorded OOM or retry), for the note */
	struct as_limit cap;
	struct as_opts opts;

	as_emit_fn emit;
	void *ctx;
	const struct as_trace *t;
	uint16_t space;
	bool is_first_case;

	struct tpool tp;
	uint32_t gaps;          /* device gaps root */
	uint32_t keys;          /* live segments' order key ranges root */
	uint64_t limit;         /* device addresses [0, limit) */
	struct pool pools[2];   /* 0 small, 1 large */

	struct block *b;
	uint32_t nb, capb, freeb;
	struct segment *s;
	uint32_t ns, caps, frees;
	uint64_t va_next;       /* next virtual range address */
	uint64_t addr_bound;    /* the space's capacity, or NO_LIMIT */
	uint64_t key_base;      /* above every recorded segment's address */
	uint64_t now;           /* the time step being replayed */
	uint8_t *rec_taken;     /* per recorded segment: matched by the model */
	uint64_t *release_at;   /* steps the recording emptied its cache */
	uint32_t nrelease, next_release;
	uint64_t *maybe_at;     /* steps it gave segments back, then reserved
				 * one: a failed cudaMalloc or empty_cache */
	uint32_t nmaybe, next_maybe;
	uint64_t dev_top;       /* highest end of a cudaMalloc segment */

	/* The space's buffers (online.c), or NULL: the per-buffer arrays
	 * below are indexed by as_cuda_slot, sized by as_cuda_nslots. */
	const struct as_space_bufs *sb;
	uint32_t *blk_of;       /* per buffer: its block, NIL */
	uint32_t *seg_of;       /* per buffer: its segment, NIL */
	uint64_t *seg_size;     /* per buffer: model segment size, 0 none */
	uint64_t *seg_off;
	uint64_t *seg_key;      /* per buffer: its segment's key, or NULL */
	uint8_t *initial;       /* per buffer: SEEDED, IN_INITIAL_SEG, ... */

	/* statistics as torch.cuda.memory_stats() names them */
	struct as_cuda_stat allocation, allocated_bytes, requested_bytes, segment,
		reserved_bytes, inactive_split, inactive_split_bytes,
		oversize_allocations, oversize_segments;
	uint32_t next_mark;     /* first recorded mark not yet replayed */
	uint64_t seen_peak;     /* reserved peak when alloc_at_peak was set */
	uint64_t alloc_at_peak; /* most allocated while reserved was at peak */
	uint64_t recorded_ooms, recorded_releases;
	uint64_t num_alloc_retries, num_ooms, num_device_alloc,
		num_device_free, num_sync_all_streams, gc_runs, allocs;
};

/* ---- small helpers ---- */

/* The order of a block among free blocks of its size (its address as
 * the device gave it). */
static inline uint64_t as_cuda_bkey(const struct segment *segs,
				    const struct block *b)
{
	const struct segment *g = &segs[b->seg];
	return g->key + (b->addr - g->addr);
}

/* Whether block b shares its segment with other blocks. */
static inline bool as_cuda_is_split(const struct block *b)
{
	return b->prev != NIL || b->next != NIL;
}

static inline uint64_t as_cuda_round_up(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

static inline int as_cuda_floor_log2(uint64_t n)
{
	return 63 - __builtin_clzll(n);
}

static inline void as_cuda_stat_add(struct as_cuda_stat *s, uint64_t n)
{
	s->cur += n;
	if (s->cur > s->peak)
		s->peak = s->cur;
}

static inline void as_cuda_stat_sub(struct as_cuda_stat *s, uint64_t n)
{
	s->cur = n > s->cur ? 0 : s->cur - n;
}

/* Where buffer `buf` (of this state's space) keeps its per-buffer state. */
static inline uint32_t as_cuda_slot(const struct cc *s, uint32_t buf)
{
	return s->sb ? s->sb->rank[buf] : buf;
}

/* How many slots: the space's buffers, or the trace's without an index. */
static inline uint32_t as_cuda_nslots(const struct cc *s)
{
	return s->sb ? s->sb->first[s->space + 1] - s->sb->first[s->space]
		     : s->t->nbuffers;
}

/* The buffer of slot k. */
static inline uint32_t as_cuda_buf(const struct cc *s, uint32_t k)
{
	return s->sb ? s->sb->bufs[s->sb->first[s->space] + k] : k;
}

/* tree.c: the trees (NIL: no node). */
void as_cuda_t_init(struct tpool *p);
int as_cuda_t_insert(struct tpool *p, uint32_t *root, uint64_t k0,
		     uint64_t k1, uint64_t k2, uint64_t size, uint32_t val);
bool as_cuda_t_erase_at(struct tpool *p, uint32_t *link, uint64_t k0,
			uint64_t k1, uint64_t k2);
uint32_t as_cuda_t_lower_bound(const struct tpool *p, uint32_t t, uint64_t k0,
			       uint64_t k1, uint64_t k2);
uint32_t as_cuda_t_before(const struct tpool *p, uint32_t t, uint64_t k0,
			  uint64_t k1, uint64_t k2);
uint32_t as_cuda_t_next(const struct tpool *p, uint32_t root, uint32_t x);
uint32_t as_cuda_t_first_fit(const struct tpool *p, uint32_t t,
			     uint64_t need);
bool as_cuda_t_meets(const struct tpool *p, uint32_t t, uint64_t lo,
		     uint64_t hi);

/* core.c: blocks and pools, a request served, a block freed. */
void as_cuda_emitf(struct cc *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
uint32_t as_cuda_block_new(struct cc *s);
void as_cuda_block_delete(struct cc *s, uint32_t i);
bool as_cuda_counts_inactive_split(const struct cc *s,
				   const struct block *b);
int as_cuda_pool_insert(struct cc *s, uint32_t i);
void as_cuda_pool_remove(struct cc *s, uint32_t i);
uint64_t as_cuda_round_size(const struct cc *s, uint64_t n);
uint64_t as_cuda_try_merge(struct cc *s, uint32_t dst, uint32_t src);
int as_cuda_split_tail(struct cc *s, uint32_t bi, uint64_t size);
int as_cuda_ensure_arrays(struct cc *s, const struct as_trace *t);
void as_cuda_account_alloc(struct cc *s, uint32_t bi, uint32_t buf,
			   uint64_t requested);
uint64_t as_cuda_requested_of(const struct as_trace *t, uint32_t buf);
int as_cuda_alloc(void *state, const struct as_trace *t, uint32_t buf,
		  uint64_t *offset, uint64_t *chunk);
void as_cuda_free(void *state, const struct as_trace *t, uint32_t buf);

/* segments.c: memory from the device and back to it. */
void as_cuda_reserve(struct cc *s, uint64_t n);
void as_cuda_unreserve(struct cc *s, struct segment *g, uint64_t n);
bool as_cuda_device_take(struct cc *s, uint64_t size, uint64_t bound,
			 uint64_t *out);
uint32_t as_cuda_segment_new(struct cc *s);
int as_cuda_key_add(struct cc *s, uint32_t gi);
int as_cuda_release_cached(struct cc *s);
bool as_cuda_release_available(struct cc *s, struct pool *p, uint64_t size,
			       uint16_t stream);
void as_cuda_garbage_collect(struct cc *s);
uint32_t as_cuda_alloc_block(struct cc *s, struct pool *p, bool small,
			     uint16_t stream, uint64_t size,
			     uint64_t alloc_size, bool retry, int *err);

/* settings.c: options, a recording's settings, create and destroy. */
extern const struct as_option_desc as_cuda_options[];
bool as_cuda_parse_divisions(const char *v, uint32_t *div);
void as_cuda_settings_default(struct cc_settings *x);
void as_cuda_apply_settings(struct cc_settings *x, const struct as_opts *o,
			    const char *m);
size_t as_cuda_settings_differ(const struct cc_settings *a,
			       const struct cc_settings *b, char *out,
			       size_t len);
int as_cuda_create(const struct as_opts *o, const struct as_run *run,
		   void **state, struct as_diag *diag);
void as_cuda_destroy(void *state);

/* start.c: the state at a recording's start, agreement with it. */
int as_cuda_start(void *state, const struct as_trace *t, uint16_t space,
		  uint32_t case_index, struct as_diag *diag);
void as_cuda_agreement(struct cc *s, struct as_plan *p);
void as_cuda_capacity_note(struct cc *s, struct as_plan *p);

/* oom.c: what the allocator held at an out of memory. */
void as_cuda_oom_record(struct cc *s, uint64_t time, uint64_t request,
			uint64_t size, uint64_t alloc_size, bool recorded);
void as_cuda_oom_notes(struct cc *s, struct as_plan *p);

/* inspect.c: walk, query, stats, check. */
bool as_cuda_walk(void *state, uint16_t space, as_block_fn visit, void *ctx);
void as_cuda_query(void *state, enum as_query q);
void as_cuda_stat_sum(struct cc *s, struct as_plan *p, const char *key,
		      uint64_t v);
void as_cuda_stats(void *state, struct as_plan *p);
uint64_t as_cuda_check(void *state, char *msg, size_t len);
#endif
