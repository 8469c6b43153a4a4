/*
 * What the JSON readers (trace.c, graph.c, numa.c, results.c) share: the
 * reading context, one locator of a value's line by its path in the text
 * (cJSON keeps no positions), one error helper and one integer reader.
 * Private to src/formats/json/, the only place cJSON is on the include path.
 */
#ifndef AS_JSON_H
#define AS_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocscope/allocscope.h"

struct as_builder;
struct as_results;

/* One step of a path: an object member, or an array element (key NULL). */
struct as_jseg {
	const char *key;
	int index;
};

#define AS_JPATH_MAX 12

/*
 * Where a reader is: the text (for lines), the diagnostic it fills and the
 * path from the root to the value being read (events[3].size). Deeper
 * paths than AS_JPATH_MAX keep counting but are cut in messages.
 */
struct as_jctx {
	struct as_builder *b;    /* trace readers */
	struct as_results *out;  /* the results reader */
	const char *text;
	size_t len;
	struct as_diag *diag;
	struct as_jseg path[AS_JPATH_MAX];
	int depth;
	/* Integers past 2^53 written as plain numbers are read exactly from
	 * their digits (results files) instead of being refused. */
	bool exact_big;
	/* Where as_json_elem_line left off: the element `index` of the
	 * array at path[0..depth-1) starts at p, on `line` (p NULL: none). */
	struct {
		const char *p;
		uint64_t line;
		int depth, index;
		struct as_jseg parent[AS_JPATH_MAX];
	} walk;
};

/* ---- common.c ---- */

void as_json_push(struct as_jctx *c, const char *key, int index);

/* The line of path (plus `field` when not NULL) in the text. */
uint64_t as_json_line(const struct as_jctx *c, const char *field);

/*
 * The line of the array element at the path (its last step an index). A
 * reader that asks for elements in increasing order (skipping any) pays
 * for each element's text once: lines for every buffer of a large trace in
 * O(n) overall.
 */
uint64_t as_json_elem_line(struct as_jctx *c);

/* "PATH[.field]: message" at the value's line; returns AS_EPARSE. */
int as_json_fail(const struct as_jctx *c, const char *field,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * A JSON value as an integer in [min, max]: an integral number, or a
 * string of decimal digits for values past 2^53. `field` names it in
 * messages (NULL: the value is at the path itself).
 */
int as_json_u64(const struct as_jctx *c, const cJSON *v, const char *field,
		uint64_t min, uint64_t max, uint64_t *out);

/* obj.field through as_json_u64; `def` when absent and not required. */
int as_json_get_range(const struct as_jctx *c, const cJSON *obj,
		      const char *field, bool required, uint64_t def,
		      uint64_t min, uint64_t max, uint64_t *out);
int as_json_get_u64(const struct as_jctx *c, const cJSON *obj,
		    const char *field, bool required, uint64_t def,
		    uint64_t *out);

/* obj.field as a string; NULL when absent and not required. */
int as_json_get_string(const struct as_jctx *c, const cJSON *obj,
		       const char *field, bool required, const char **out);

/* Refuse a key of obj not in `allowed` (NULL-terminated), naming them. */
int as_json_keys(const struct as_jctx *c, const cJSON *obj,
		 const char *const *allowed);

#define AS_JSON_MAX_NEST 256

/*
 * Parse c->text whole into *out. Refused with c->diag set: malformed
 * or truncated JSON, trailing data, raw control bytes, \u0000 or invalid
 * UTF-8 in strings, nesting past AS_JSON_MAX_NEST, leading zeros (00,
 * -01), integers past 2^53 as plain numbers (unless c->exact_big),
 * duplicate keys. Caller deletes.
 */
int as_json_parse(struct as_jctx *c, cJSON **out);

/* ---- graph.c: the "graph" form ---- */
int as_json_graph(struct as_jctx *c, const cJSON *graph);

/* ---- numa.c: the "numa" form (root holds it) ---- */
int as_json_numa(struct as_jctx *c, const cJSON *root);

#endif
