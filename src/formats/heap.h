/*
 * Private: the malloc heap model shared by the readers of malloc traces
 * (mtrace, heaptrack's raw form): live blocks by address, callers and
 * stacks interned once, recorded offsets with the untouched address ranges
 * shrunk (see heap.c).
 */
#ifndef AS_HEAP_H
#define AS_HEAP_H

#include "allocscope/build.h"

struct as_heap;

struct as_heap *as_heap_create(void);
/* NULL is a no-op. */
void as_heap_destroy(struct as_heap *h);

/*
 * The block malloc returned at `addr` (0: the allocation failed, a mark),
 * named "0xADDR#N" (the N-th block at that address) when a name is first
 * read (as_trace_buffer_name; names take no memory before). `frames` is NULL or a
 * string the trace holds (as_heap_intern). `realloc_of` is the buffer a
 * realloc replaced, or AS_NONE. An allocation at an address still live frees
 * the old block first (its free was not traced) and counts it. Loaded with
 * a sink (as_trace_load_live), blocks go to the sink instead of the trace,
 * numbered by it, and the end makes no names or offsets.
 */
int as_heap_alloc(struct as_builder *b, struct as_heap *h, uint64_t addr,
		  uint64_t size, const char *frames, uint32_t realloc_of,
		  uint64_t line, struct as_diag *diag);

/*
 * Free the block at `addr`; *idx is its buffer, or AS_NONE when the address
 * is not live (a free of a block allocated before tracing: counted) or 0.
 */
int as_heap_free(struct as_builder *b, struct as_heap *h, uint64_t addr,
		 uint64_t line, uint32_t *idx, struct as_diag *diag);

/* A hint: the block at `addr` comes up soon (its table slot is fetched
 * into the cache). Changes nothing. */
void as_heap_prefetch(const struct as_heap *h, uint64_t addr);
/* The same for the buffer live at `addr` (a free comes up soon): a lookup,
 * best after as_heap_prefetch of the address. */
void as_heap_prefetch_live(struct as_builder *b, struct as_heap *h,
			   uint64_t addr);

/* The one copy the trace holds of string `s`. NULL when out of memory. */
const char *as_heap_intern(struct as_builder *b, struct as_heap *h,
			   const char *s);
/* The same for the `len` bytes at s (no NUL among them). */
const char *as_heap_intern_n(struct as_builder *b, struct as_heap *h,
			     const char *s, size_t len);

/*
 * After the last line: count the blocks still live under `live_key` (a
 * literal) and turn recorded addresses into offsets; the address table is
 * freed (no block calls may follow).
 */
int as_heap_finish(struct as_builder *b, struct as_heap *h,
		   const char *live_key);

/* "0x" and x in hexadecimal at out (at most 18 bytes, no NUL); returns
 * the end. By hand: it runs per block and per frame. */
char *as_put_hex(char *out, uint64_t x);

/* A hexadecimal number, "0x" optional; false on junk or overflow. */
bool as_parse_hex(const char *s, size_t len, uint64_t *out);

#endif
