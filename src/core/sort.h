/*
 * Private: sorting index arrays with a context, without global state (qsort
 * has no context argument in C11).
 */
#ifndef AS_SORT_H
#define AS_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether index a sorts before index b. */
typedef bool (*as_less_fn)(uint32_t a, uint32_t b, const void *ctx);

/*
 * Sort v[0..n) by `less`, stably (a merge sort). Returns 0, or AS_ENOMEM
 * when the scratch buffer cannot be had (v is left unchanged).
 */
int as_sort_u32(uint32_t *v, size_t n, as_less_fn less, const void *ctx);

#endif
