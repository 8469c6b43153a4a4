/*
 * What the JSON readers (trace.c, graph.c, numa.c, results.c) share: the
 * reading context, one locator of a value's line by its path in the text
 * (cJSON keeps no positions), one error helper and one integer reader
 * (common.c); the window, the checks made before cJSON and the parse
 * (parse.c). Private to src/formats/json/, the only place cJSON is on the
 * include path.
 */
#ifndef AS_JSON_H
#define AS_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocscope/build.h"

struct as_builder;
struct as_results;
struct as_source;

/* One step of a path: an object member, or an array element (key NULL). */
struct as_jseg {
	const char *key;
	int index;
};

#define AS_JPATH_MAX 12

/* A member of the root read so far, for lines (a streamed reader). */
struct as_jmember {
	char *key;
	char *text; /* its value's text; NULL for the streamed array */
	size_t len;
	uint64_t line; /* where the value starts */
};

/*
 * Where a reader is: the text (for lines), the diagnostic it fills and the
 * path from the root to the value being read (events[3].size). Deeper
 * paths than AS_JPATH_MAX keep counting but are cut in messages.
 *
 * A whole document is `text` with `base` 0. A streamed one (trace.c) has
 * no whole text: `members` hold the root's values read so far, and `text`
 * (when not NULL) is the value at path[0..base), starting on line0.
 */
struct as_jctx {
	struct as_builder *b;    /* trace readers */
	struct as_results *out;  /* the results reader */
	void *state;             /* a streamed form's own (as_jform) */
	const char *text;
	size_t len;
	int base;
	uint64_t line0;
	const struct as_jmember *members;
	size_t nmembers;
	struct as_diag *diag;
	struct as_jseg path[AS_JPATH_MAX];
	int depth;
	/* Integers past 2^53 written as plain numbers are read exactly from
	 * their digits (results files) instead of being refused. */
	bool exact_big;
	/* The input's bytes (trace readers): what a numa section may expand
	 * to is bounded by them. */
	uint64_t input_bytes;
	/* Where as_json_elem_line left off: the element `index` of the
	 * array at path[0..depth-1) starts at p, on `line` (p NULL: none). */
	struct {
		const char *text, *p; /* the text walked, where */
		uint64_t line;
		int depth, index;
		struct as_jseg parent[AS_JPATH_MAX];
	} walk;
};

/* ---- common.c: the context, lines, errors and values ---- */

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

/*
 * The one way a loader reads a whole JSON file (results, certificates):
 * diag (NULL: none) zeroed and named after path, the file ("-": standard
 * input, else a regular file, never blocking) read whole and NUL-terminated,
 * then parse(ctx, text, len, diag). parse's result, or a negative code with
 * diag filled when the file cannot be read.
 */
typedef int (*as_json_text_fn)(void *ctx, const char *text, size_t len,
			       struct as_diag *diag);
int as_json_load(const char *path, as_json_text_fn parse, void *ctx,
		 struct as_diag *diag);

/* ---- parse.c: a text to a cJSON tree ---- */

#define AS_JSON_MAX_NEST 256

/*
 * Parse c->text whole into *out. Refused with c->diag set: malformed
 * or truncated JSON, trailing data, raw control bytes, \u0000 or invalid
 * UTF-8 in strings, nesting past AS_JSON_MAX_NEST, leading zeros (00,
 * -01), integers past 2^53 as plain numbers (unless c->exact_big),
 * duplicate keys. Caller deletes.
 */
int as_json_parse(struct as_jctx *c, cJSON **out);

/* Refuse duplicate keys in v and below (v is at the path). */
int as_json_dup_keys(struct as_jctx *c, const cJSON *v);

/*
 * A window on a text read in pieces: buf[pos, have) is unread, buf[0] is
 * byte `off` of the text. A refill drops the bytes before pos, or before
 * mark when it is lower (SIZE_MAX: none), and grows the window when a value
 * fills it, up to `limit` bytes. With no src, buf is the whole text.
 */
struct as_jwin {
	struct as_source *src;
	const char *buf;
	char *own; /* buf when read from src; the caller frees it */
	size_t cap, have, pos, mark, limit;
	uint64_t off;
	bool eof;
};

/* Read more (`line` is where pos is, for a refusal); at the end, eof. */
int as_jwin_more(struct as_jwin *w, uint64_t line, struct as_diag *diag);

/* At least `n` unread bytes in the window unless the text ends first. */
static inline int as_jwin_need(struct as_jwin *w, size_t n, uint64_t line,
			       struct as_diag *diag)
{
	while (w->have - w->pos < n && !w->eof) {
		int err = as_jwin_more(w, line, diag);
		if (err)
			return err;
	}
	return AS_OK;
}

/* What as_json_prescan saw of the whole text. */
struct as_jtotals {
	uint64_t lines;     /* 1 + its newlines */
	uint64_t last;      /* the offset past its last byte that is not blank */
	uint32_t root_keys; /* members of the root object */
	/* Root members "traceEvents" (a Chrome trace, as the PyTorch
	 * profiler writes) and "format" (allocscope's own JSON trace). */
	bool trace_events, format_key;
	/* Whether cJSON parses it: false also where it is only unsure (an
	 * escaped surrogate, a number longer than cJSON reads). */
	bool parses;
};

/*
 * The checks of as_json_parse that come before cJSON (control bytes, NUL,
 * UTF-8, nesting, leading zeros, 2^53), over all of a window's text. The
 * first refusal fills diag. `tot` may be NULL.
 */
int as_json_prescan(struct as_jwin *w, bool exact_big, struct as_jtotals *tot,
		    struct as_diag *diag);

/*
 * cJSON's own refusal of the text at window index `at`, on `line`, as a
 * whole-document parse words it: "truncated JSON" (on the last line) when
 * `at` is the last byte that is not blank or past it, else "malformed JSON
 * near '...'". May refill the window.
 */
int as_json_syntax(struct as_jwin *w, size_t at, uint64_t line,
		   const struct as_jtotals *tot, struct as_diag *diag);

/* ---- trace.c: documents read in pieces ---- */

/* A root member whose array is read one element at a time. */
struct as_jlist {
	const char *key;
	int (*each)(struct as_jctx *c, const cJSON *elem);
};

/*
 * A form of JSON document that trace.c reads in pieces: the root's members
 * are read whole, but the array of the first of `lists` met, read element
 * by element. `header` reads the root without that array (there as []) and
 * sets *lists when the array is to be read; with `header_first` it runs
 * before any element, whatever the members' order (a third pass when some
 * come after the array), else after the last. `end` (may be NULL) runs
 * last, on the whole root. c->state is `state_size` zeroed bytes for the
 * form, handed to `state_free` (may be NULL) whether or not reading failed.
 */
struct as_jform {
	const char *name; /* the trace's format */
	const struct as_jlist *lists; /* ended by a NULL key */
	bool header_first;
	int (*header)(struct as_jctx *c, const cJSON *root, bool *lists);
	int (*end)(struct as_jctx *c, const cJSON *root);
	size_t state_size;
	void (*state_free)(void *state);
};

/*
 * Read the JSON text of `src` as `form`; NULL: by content, a Chrome trace
 * (a root "traceEvents" and no "format") as the profiler form, anything
 * else as allocscope's trace form.
 */
int as_json_stream(struct as_builder *b, struct as_source *src,
		   const struct as_jform *form, struct as_diag *diag);

/* ---- profiler.c: PyTorch profiler traces (Chrome trace JSON) ---- */
extern const struct as_jform as_json_profiler_form;

/* ---- graph.c: the "graph" form ---- */
int as_json_graph(struct as_jctx *c, const cJSON *graph);

/* ---- numa.c: the "numa" form (root holds it) ---- */
int as_json_numa(struct as_jctx *c, const cJSON *root);

#endif
