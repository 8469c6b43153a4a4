/*
 * Private: the bfc allocator's state (bfc.c), apart so that its tests can
 * reach the state and break it on purpose: check() must report every broken
 * invariant as data. Nothing else includes this.
 */
#ifndef AS_BFC_H
#define AS_BFC_H

#include "core/tree.h"
#include "strategies/strategy.h"

#define MIN_ALLOC 256u
#define NUM_BINS 21
#define NIL UINT32_MAX
#define DEFAULT_SPLIT_CAP (128ull << 20)
#define MAX_BYTES (1ull << 62)

/*
 * +--------------------------------------------------------------------+
 * | A chunk: [off, off + size) inside one region.                        |
 * | - size is a non-zero multiple of 256; chunks of a region tile it in  |
 * |   address order through prev/next, which are NIL at region ends.     |
 * | - in_use chunks hold exactly one buffer (req = its requested bytes); |
 * |   free chunks keep the req of the chunk that absorbed the others;   |
 * |   a chunk created by a split or a new region takes the req left in  |
 * |   its recycled slot (0 for a fresh slot), as TensorFlow's recycled  |
 * |   chunk handles do. Slots are recycled last freed, first reused.    |
 * | - a free chunk is in exactly one bin tree (core/tree.h), bin ==     |
 * |   bin_of(size); its link is meaningful only then. Tree order is    |
 * |   (size, off), with the tree's own invariants (as_tree_check).     |
 * | - no two neighbours (prev/next) are both free.                       |
 * | - unused slots form a stack through `next`.                          |
 * +--------------------------------------------------------------------+
 */
struct chunk {
	/* what the best-fit search reads first, together */
	uint64_t size, off;
	struct as_tree_link link;
	uint8_t in_use;
	uint8_t bin;
	uint32_t prev, next;
	uint64_t req;
};

/*
 * +--------------------------------------------------------------------+
 * | A region held from the sub-allocator, sorted by address (the bump   |
 * | allocator only moves up). `first` is its lowest chunk. With         |
 * | coalesce=1 a region that starts where the last one ends is merged   |
 * | into it, so no two regions in the list touch then.                  |
 * +--------------------------------------------------------------------+
 */
struct region {
	uint64_t off, size;
	uint32_t first;
};

/*
 * +--------------------------------------------------------------------+
 * | The live buffers: an open-addressing hash (linear probing, deletion  |
 * | by backward shift) from buffer index to chunk. It holds only live   |
 * | buffers, so it stays small and in cache however long the trace.     |
 * | - every entry's key is found from its home slot without crossing an |
 * |   empty slot; empty slots have key NIL; 2n <= cap.                  |
 * +--------------------------------------------------------------------+
 */
struct live_entry {
	uint32_t buf, chunk;
};

struct live {
	struct live_entry *e;
	uint32_t cap, n, shift; /* cap = 1 << (32 - shift) */
};

struct bfc {
	/* options */
	uint64_t total, capacity, first_region, split_cap;
	double frag;
	bool growth, gc, coalesce, align_new;
	/* where total comes from: the option, else the trace (a space's
	 * capacity, a recording's device size), else unlimited (MAX_BYTES) */
	struct as_limit limit;
	const struct as_trace *t;
	uint16_t space;

	as_emit_fn emit;
	void *ctx;

	struct chunk *c;
	uint32_t nchunks, cap_chunks, free_slot, live_chunks;

	struct region *r;
	uint32_t nregions, cap_regions;

	struct as_tree tree;    /* over c: the bins' trees */
	uint32_t root[NUM_BINS];
	uint32_t nonempty;      /* bit b: root[b] != NIL */
	uint64_t nfree;         /* free chunks in all bins */

	struct live live;       /* live buffer -> its chunk */

	uint64_t bump;          /* next free address of the sub-allocator */
	uint64_t curr_region;   /* size target of the next region */

	/* statistics, chunk sizes as TensorFlow counts them */
	uint64_t num_allocs, bytes_in_use, peak_bytes_in_use;
	uint64_t largest_alloc_size, pool_bytes, peak_pool_bytes;
	uint64_t req_in_use, waste_at_peak;
	uint64_t sub_allocs, sub_fails, sub_frees, gc_runs;
};

/* Internals the tests use to break a state on purpose. */
void as_bfc_tree_insert(struct bfc *s, uint32_t *root, uint32_t x);
void as_bfc_bin_remove(struct bfc *s, uint32_t i);
uint64_t as_bfc_check(void *state, char *msg, size_t len);

/* Shared by bfc.c and bfc_check.c. */
static inline int bin_of(uint64_t size)
{
	uint64_t v = size >> 8;
	if (v <= 1)
		return 0;
	int b = 63 - __builtin_clzll(v);
	return b < NUM_BINS - 1 ? b : NUM_BINS - 1;
}
static inline bool key_less(const struct chunk *a, const struct chunk *b)
{
	return a->size < b->size || (a->size == b->size && a->off < b->off);
}
static inline uint64_t region_end(const struct region *r)
{
	return r->off + r->size;
}
static inline uint32_t live_home(const struct live *m, uint32_t buf)
{
	return (uint32_t)(buf * 2654435769u) >> m->shift;
}

#endif
