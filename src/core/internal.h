/*
 * Private: helpers every stage of the library shares, one copy each,
 * declared here grouped by the file that defines them. Nothing here is
 * exported to the front ends.
 */
#ifndef AS_INTERNAL_H
#define AS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocscope/build.h"

/*
 * A hot function the compiler must inline even where it is called from
 * more than one place (it would not, and the call costs more than the body).
 */
#if defined(__GNUC__)
#define AS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define AS_ALWAYS_INLINE inline
#endif

/* ---- error.c ---- */

/* printf into diag->msg and set its line (file is kept); returns err. */
int as_diag_set(struct as_diag *d, uint64_t line, int err, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

/* ---- input.c ---- */

/*
 * A regular file opened for reading, never blocking: anything else (a
 * FIFO too) is refused as as_open_input refuses a device. For directory
 * walks, where a FIFO must not hang the run.
 */
int as_open_regular(const char *path, FILE **out, struct as_diag *diag);

/*
 * A new temporary file in dir (NULL or "": /tmp), already unlinked: read and
 * written, gone when closed or when the process ends in any way. AS_OK, or
 * AS_EIO / AS_ENOMEM with errno set.
 */
int as_spool_open(const char *dir, FILE **out);

/* ---- util.c ---- */

/*
 * The length (1 to 4) of the UTF-8 character at s, reading at most n
 * bytes, or 0 when the bytes there are not one: a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, cut short by n. The
 * one UTF-8 check: escaping, the renderer's labels and the JSON reader.
 */
size_t as_utf8_len(const unsigned char *s, size_t n);

/*
 * The character at s (n > 0 bytes left) as in a JSON string, into out (8
 * bytes): its length; *used says how many bytes of s it took. ", \ and
 * the bytes below 0x20 escaped, a byte that is not UTF-8 the text \xNN
 * (backslash escaped). The one JSON rule: as_json_string and the pickle
 * reader's JSON text.
 */
size_t as_json_char(const unsigned char *s, size_t n, char *out,
		    size_t *used);

/* `s` escaped as as_escape escapes it, written to f whole. */
void as_escape_write(FILE *f, const char *s, enum as_escape_how how);

/*
 * A Markdown table's head: a row of column names (cols, as they are: the
 * caller's own words) and the alignment row, one letter a column in align
 * ('l' left, 'r' right). Cells go through as_escape_write
 * (AS_ESCAPE_MARKDOWN, or _CODE in a code span).
 */
void as_md_table_head(FILE *f, const char *const *cols, const char *align);

/* Parse a whole decimal uint64 (no sign, no junk, no overflow). */
bool as_parse_u64(const char *s, size_t len, uint64_t *out);

/* Why a text is not a byte count of as_parse_size's. */
enum as_size_why { AS_SIZE_OK, AS_SIZE_NOT_NUMBER, AS_SIZE_BAD_UNIT,
		   AS_SIZE_TOO_LARGE };
/*
 * A byte count: decimal digits and an optional binary unit K, M, G, T, P
 * or E (either case: 2^10 ... 2^60), the one syntax every size option and
 * limit takes. *out is written only on AS_SIZE_OK.
 */
enum as_size_why as_parse_size(const char *s, uint64_t *out);

/* Whether index a sorts before index b. */
typedef bool (*as_less_fn)(uint32_t a, uint32_t b, const void *ctx);

/*
 * Sort v[0..n) by `less`, stably (a merge sort). Returns 0, or AS_ENOMEM
 * when the scratch buffer cannot be had (v is left unchanged).
 */
int as_sort_u32(uint32_t *v, size_t n, as_less_fn less, const void *ctx);

/*
 * Sort a[0..n) ascending by the bits from `from` (a multiple of 8) up,
 * stably: values equal there keep their order. An LSD radix sort, one pass
 * per byte that differs among the values. Returns 0, or AS_ENOMEM (a is left
 * unchanged).
 */
int as_sort_u64_from(uint64_t *a, size_t n, unsigned from);

/* A 32-bit key of index i. */
typedef uint32_t (*as_key_fn)(uint32_t i, const void *ctx);

/*
 * Sort v[0..n) by key, stably (a radix sort: no comparison), and the runs
 * of equal keys by `less` when it is not NULL. Returns 0, or AS_ENOMEM.
 */
int as_sort_u32_keyed(uint32_t *v, size_t n, as_key_fn key, as_less_fn less,
		      const void *ctx);

/* Milliseconds of a monotonic clock. */
double as_now_ms(void);

/*
 * Strings to uint32 values, each key in a namespace `ns` (an owner's index,
 * so one map serves the names of many owners): open addressing, load below
 * 1/2, O(1) expected per call. Keys are the caller's (pointer and length,
 * no NUL needed) and must outlive the map. Zeroed is empty.
 */
struct as_strmap {
	struct as_strmap_slot *slot;
	uint32_t mask, n;
};
/* Set `key` to `value`; with `keep`, a key already there keeps its first
 * value. AS_ENOMEM. */
int as_strmap_put(struct as_strmap *m, uint32_t ns, const char *key,
		  size_t len, uint32_t value, bool keep);
/* The value of `key`, or AS_NONE. */
uint32_t as_strmap_get(const struct as_strmap *m, uint32_t ns,
		       const char *key, size_t len);
void as_strmap_finish(struct as_strmap *m);

/* The next line of [*p, end) without its \n or \r\n, and advance; NULL
 * at the end. */
const char *as_next_line(const char **p, const char *end, size_t *len);

/* 3 when the text starts with a UTF-8 byte order mark, else 0: every
 * format skips it the same way (formats.c). */
size_t as_bom_len(const char *s, size_t len);

/* ---- moments.c ---- */

/*
 * The drawable buffers of a trace in order of start and of end, built once
 * (O(n log n)) so that every sweep over time after it is a merge, O(n).
 */
struct as_order {
	const struct as_trace *t;
	uint32_t *by_start, *by_end;
	uint32_t n;
};

/* A start or end of buffer i at time t, in time order. */
struct as_edge {
	uint64_t t;
	uint32_t i;
	bool start;
};

int as_order_build(const struct as_trace *t, struct as_order *o);
void as_order_free(struct as_order *o);
/* The starts and ends of the buffers with keep[i] set, in time order, into
 * out (room for 2 per buffer); returns how many. */
size_t as_order_edges(const struct as_order *o, const uint8_t *keep,
		      struct as_edge *out);
/* as_plan_peak_moment and as_trace_peak_moment over an order built once. */
int as_order_peak_moment(const struct as_order *o, const struct as_plan *p,
			 int space, struct as_moment *out);
int as_order_bound_moment(const struct as_order *o, int space,
			  struct as_moment *out);

/* ---- curve.c ---- */

/*
 * A step function of time: v[k] holds over [t[k], t[k + 1]), 0 before
 * t[0]; bmax[b] the highest v of block b (AS_CURVE_BLOCK points), vmax the
 * highest of all. Zeroed is empty.
 */
#define AS_CURVE_BLOCK 64
struct as_curve {
	uint64_t *t, *v, *bmax;
	uint32_t n, nb;
	uint64_t vmax;
};

void as_curve_free(struct as_curve *c);
/* Room for n points (AS_ENOMEM). */
int as_curve_alloc(struct as_curve *c, size_t n);
/* Append (t, v), t not before the last: equal times and runs of equal
 * values merge. */
void as_curve_put(struct as_curve *c, uint64_t t, uint64_t v);
/* The block maxima, after the last point (AS_ENOMEM). */
int as_curve_finish(struct as_curve *c);
/* The number of points at or before time t. O(log n). */
uint32_t as_curve_index(const struct as_curve *c, uint64_t t);
/* The value at time t. O(log n). */
uint64_t as_curve_at(const struct as_curve *c, uint64_t t);
/* The greatest value of points [lo, hi) and in *at the first point that
 * has it (hi when the range is empty). O((hi - lo) / AS_CURVE_BLOCK +
 * AS_CURVE_BLOCK). */
uint64_t as_curve_max(const struct as_curve *c, uint32_t lo, uint32_t hi,
		      uint32_t *at);

/* ---- plan_csv.c ---- */

/*
 * Split one CSV record into at most `max` fields: blanks around unquoted
 * fields are cut; a quoted field (RFC 4180: "a,b", "say ""hi""") keeps
 * what is between its quotes, "" read as ", unescaped into scratch[cap].
 * The number of fields; -1: more than `max`; -2: a quote not closed, text
 * after a closing quote, or scratch too small.
 */
int as_csv_split(const char *s, size_t len, const char **f, size_t *flen,
		 int max, char *scratch, size_t cap);
/* The next CSV record of [*p, end): a line, or several when a quoted
 * field holds line breaks (*lines says how many); NULL at the end. */
const char *as_csv_record(const char **p, const char *end, size_t *len,
			  uint64_t *lines);

/* ---- numa.c: the numa schedule and expansion (docs/numa.md) ---- */

struct as_builder;
struct as_numa;

enum as_numa_rule {
	AS_NUMA_ROUND_ROBIN,
	AS_NUMA_LEAST_LOADED,
	AS_NUMA_GIVEN, /* core[] already filled */
};

/* Per-core state of a schedule, carried over parents. */
struct as_numa_load {
	uint16_t ncores;
	uint64_t *load;   /* bytes given to each core so far */
	uint32_t *count;  /* scratch, zero between calls */
	uint16_t *heap;   /* cores, lightest first (least-loaded) */
};

int as_numa_load_init(struct as_numa_load *l, uint16_t ncores);
void as_numa_load_finish(struct as_numa_load *l);

/*
 * Parent pi's sub-tasks to cores by `rule` (volumes vol[e * nsub + k]),
 * then each sub-task's slot in its core's bundle and the parent's
 * duration. O(sub-tasks x (edges + log cores)).
 */
void as_numa_schedule(struct as_numa *nm, uint32_t pi,
		      enum as_numa_rule rule, const uint64_t *vol,
		      struct as_numa_load *l);

/* Append parent pi's blocks (sub-task major, edge minor) to the builder. */
int as_numa_expand(struct as_builder *b, struct as_numa *nm, uint32_t pi,
		   uint64_t align, const uint64_t *vol, struct as_diag *diag);

/* ---- inline ---- */

/* Round x up to a multiple of 1 << lg; false when that overflows 64 bits. */
static inline bool as_align_up(uint64_t x, uint8_t lg, uint64_t *out)
{
	uint64_t a = ((uint64_t)1 << lg) - 1;
	if (x > UINT64_MAX - a)
		return false;
	*out = (x + a) & ~a;
	return true;
}

/*
 * What a check (an allocator's, the placer's) found: how many problems, and
 * the first one in words in msg (len bytes, may be NULL). as_problem counts
 * one more and words it when it is the first (util.c).
 */
struct as_problems {
	uint64_t n;
	char *msg;
	size_t len;
};

void as_problem(struct as_problems *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The next number of a splitmix64 sequence: seeded, deterministic. */
static inline uint64_t as_splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Keyed hashes for tables an input fills (addresses, names, stacks): under
 * a key drawn at random once per run, so no file can choose which of its
 * keys collide. Values differ between runs: never let one decide an order
 * that reaches the output (as_hash_fixed_str is for that).
 */
uint64_t as_hash_u64(uint64_t x);
uint64_t as_hash_pair(uint64_t a, uint64_t b);
/* SipHash-1-3 of len bytes. */
uint64_t as_hash_mem(const void *p, size_t len);
uint64_t as_hash_str(const char *s);

/*
 * FNV-1a of a string, the same in every run, for orders that must not
 * change from run to run (a sort key, ties broken by the text); not for a
 * table an input fills.
 */
static inline uint64_t as_hash_fixed_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ (h >> 29);
}

#endif
