/*
 * Private: a static interval tree over lifetimes, for lowest-fit placement
 * of items in a caller's order (greedy-size, numa-flat, numa-bundle).
 *
 * The items 0..n-1 sorted by start form an implicit balanced tree over the
 * sorted array (the node of range [lo, hi) is its middle); each node keeps
 * the largest end among the placed items below it. Invariant: maxend[mid]
 * is the largest end of a placed item in [lo, hi), 0 when none is. Finding
 * the k placed items whose lifetime meets a new one costs O(log n + k), and
 * their lowest gap O(k + m log k) for the m ranges below it.
 */
#ifndef AS_ITREE_H
#define AS_ITREE_H

#include <stdbool.h>
#include <stdint.h>

struct as_itree_hit {
	uint64_t lo, hi;
};

/* Zero-initialise; as_itree_finish releases. */
struct as_itree {
	uint64_t *start, *end;   /* per item: the caller fills [0, n) */
	uint64_t *lo, *hi;       /* per item: the address range once placed */
	uint32_t *by_start;      /* item indices sorted by start */
	uint32_t *pos;           /* per item: its position in by_start */
	uint64_t *maxend;        /* per position */
	uint8_t *placed;         /* per position */
	struct as_itree_hit *hits;
	uint32_t n, cap, nhits, hitcap;
};

/* Room for n items (start[] and end[] included); 0 or AS_ENOMEM. */
int as_itree_reserve(struct as_itree *tr, uint32_t n);
/*
 * Take items 0..n-1 (start[] and end[] filled, n within the reserve), none
 * placed yet. Returns 0 or AS_ENOMEM.
 */
int as_itree_build(struct as_itree *tr, uint32_t n);
/*
 * The lowest offset aligned to 2^align_log2 where `size` bytes of item k
 * overlap no placed item whose lifetime meets k's. Returns 1 and writes
 * *off, 0 when no offset below 2^64 fits, or AS_ENOMEM.
 */
int as_itree_lowest(struct as_itree *tr, uint32_t k, uint64_t size,
		    uint8_t align_log2, uint64_t *off);
/* Record item k at [off, off + size) (off + size must not overflow). */
void as_itree_put(struct as_itree *tr, uint32_t k, uint64_t off,
		  uint64_t size);
void as_itree_finish(struct as_itree *tr);

#endif
