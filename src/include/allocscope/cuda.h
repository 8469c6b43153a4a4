/*
 * allocscope cuda-caching: where the model of PyTorch's CUDA caching
 * allocator leaves the recording it replays (a PyTorch snapshot with a
 * trace and its segments), what `check -s cuda-caching` words.
 *
 * The strategy attaches it to its plan (build.h's as_plan_attach), so that
 * struct as_plan stays the same for every strategy; as_plan_divergence
 * reads it back. It belongs to the plan: freed and copied with it.
 */
#ifndef ALLOCSCOPE_CUDA_H
#define ALLOCSCOPE_CUDA_H

#include "allocscope/allocscope.h"

/*
 * Where a model of an allocator leaves the recording it replays: the first
 * allocation, in time order, that the model put in another block than the
 * recorded allocator did, both sides of it, and how many allocations agree.
 */
enum as_div_kind {
	AS_DIV_NONE,          /* every allocation compared agrees */
	AS_DIV_OUT_OF_MEMORY, /* the model could not place it */
	AS_DIV_POOL,          /* in the other pool (small: up to 1 MiB) */
	AS_DIV_NEW_SEGMENT,   /* one side reserved a segment for it, the
			       * other took a cached block */
	AS_DIV_SEGMENT_SIZE,  /* in segments of different sizes */
	AS_DIV_BLOCK,         /* in another segment of the same size: another
			       * free block chosen */
	AS_DIV_OFFSET,        /* in the same segment at another offset */
};

/* One side: the block's segment. */
struct as_div_side {
	uint64_t segment;      /* its recorded address (a trace offset,
				* as_trace_address_of gives the real one);
				* AS_NO_OFFSET: none the recording had */
	uint64_t segment_size; /* 0: no block; expandable: bytes mapped */
	uint64_t offset;       /* the block in it (expandable: from the
				* range's base) */
	bool small;            /* small pool */
	bool new_segment;      /* reserved for this allocation */
	bool expandable;
};

struct as_divergence {
	uint64_t compared;     /* allocations compared */
	uint64_t agree;        /* in the same segment at the same offset */
	uint64_t same_place;   /* in a segment of the recorded size at the
				* recorded offset (blocks_reproduced) */
	enum as_div_kind kind;
	uint32_t buffer;       /* the first that differs, AS_NONE: none */
	uint16_t space;
	uint64_t time;         /* its allocation's time step */
	struct as_div_side model, recorded;
	char cause[200];       /* what probably made them part, a sentence */
};

/*
 * The divergence of plan p from its recording, or NULL when its strategy
 * compared itself with none (another strategy than cuda-caching, or a
 * trace without recorded segments). Valid while p is.
 */
const struct as_divergence *as_plan_divergence(const struct as_plan *p);

/* "segment size", "block chosen", ...: what differs, in words. */
const char *as_div_kind_name(enum as_div_kind k);

#endif
