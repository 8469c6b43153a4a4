/*
 * Private: a reader of Python pickles (protocols 2 to 5) that builds plain
 * data only: None, bool, int, float, str, bytes, list, tuple, dict (sets
 * read as lists). Nothing is imported or called: every opcode that would
 * (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
 * EXT1/2/4, PERSID, BINPERSID) is refused with its byte offset.
 *
 * The reader is a loop over opcodes with its own stacks (no recursion on
 * the input), checks every length against the bytes left, and bounds the
 * mark depth, the stack and the memo, so a crafted file costs at most a few
 * times its size in memory.
 *
 * Ownership: as_pickle_parse returns a document the caller destroys with
 * as_pickle_destroy (NULL is fine); every value and string belongs to it.
 * The memo may share a value between places, and a list may even hold
 * itself: walkers bound their depth.
 */
#ifndef AS_PICKLE_H
#define AS_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocscope/build.h"

enum as_pk_type {
	AS_PK_NONE,
	AS_PK_BOOL,
	AS_PK_INT,      /* fits 64 bits: magnitude `u`, sign `neg` */
	AS_PK_BIGINT,   /* does not fit 64 bits (kept as a fact, not a value) */
	AS_PK_FLOAT,
	AS_PK_STR,      /* UTF-8 as found, NUL-terminated, `n` bytes */
	AS_PK_BYTES,
	AS_PK_LIST,     /* lists and sets */
	AS_PK_TUPLE,
	AS_PK_DICT,     /* `n` pairs: items[2k] key, items[2k + 1] value */
};

struct as_pk {
	uint8_t type;           /* enum as_pk_type */
	bool neg;               /* AS_PK_INT: negative */
	bool indexed;           /* a big dict: its items are followed by
				 * `cap` uint32 indices of the pairs with
				 * str keys, sorted by key (as_pk_get) */
	uint32_t n;             /* str/bytes: bytes; list/tuple: items;
				 * dict: pairs */
	uint32_t cap;           /* containers: items allocated (indexed
				 * dicts: indices) */
	uint64_t pos;           /* byte offset of the opcode that made it */
	union {
		uint64_t u;     /* AS_PK_INT magnitude, AS_PK_BOOL 0/1 */
		double f;
		const char *s;  /* str, bytes */
		struct as_pk **items;
	} v;
};                              /* 32 bytes: a pickle holds millions */

struct as_pickle;

/* ---- pickle.c: the machine that reads the bytes into values ---- */

/*
 * Read `len` bytes of pickle. On success *out is a new document; on
 * failure returns AS_EPARSE (or AS_ENOMEM) with diag->msg set and line 0,
 * e.g. "refusing pickle opcode GLOBAL at byte 2 (snapshots hold plain data
 * only)". `diag->file` is left as the caller set it.
 */
int as_pickle_parse(const char *data, size_t len, struct as_pickle **out,
		    struct as_diag *diag);
void as_pickle_destroy(struct as_pickle *p);
/* The object the pickle's STOP returned. */
const struct as_pk *as_pickle_root(const struct as_pickle *p);

/* ---- pickle_values.c: the values once made ---- */

/*
 * Give a big dict d the sorted index of its str keys that as_pk_get
 * searches (small dicts are scanned; other values are left as they are).
 * pickle.c calls it on every container after STOP; AS_ENOMEM leaves d as it
 * was.
 */
int as_pk_index(struct as_pk *d);

/* The value of str key `key` in dict `d` (the last one wins); NULL when d is
 * not a dict or has no such key. */
const struct as_pk *as_pk_get(const struct as_pk *d, const char *key);
/* Items of a list or tuple: the count (0 for anything else) and item i. */
uint32_t as_pk_len(const struct as_pk *v);
const struct as_pk *as_pk_item(const struct as_pk *v, uint32_t i);
/* The str's text, or NULL when v is not a str. */
const char *as_pk_str(const struct as_pk *v);
/* Whether v is an int (or bool) that fits uint64_t / int64_t; *out set. */
bool as_pk_u64(const struct as_pk *v, uint64_t *out);
bool as_pk_i64(const struct as_pk *v, int64_t *out);
/* Whether v is truthy as Python sees it (for flags like is_expandable). */
bool as_pk_truthy(const struct as_pk *v);

/*
 * Write v as JSON text into a new malloc'ed string (*out, the caller frees
 * it), at most `max` bytes and `max_depth` levels deep: deeper or longer
 * values fail with AS_EINVAL. Dict keys that are not str are written as
 * their JSON text in a string; bytes as a string of their bytes.
 */
int as_pk_json(const struct as_pk *v, size_t max, unsigned max_depth,
	       char **out);

#endif
