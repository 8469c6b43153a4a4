/*
 * Private: the input formats, one table row each (formats.c). A format
 * either takes whole lines in pieces (so large files stream through a small
 * window), pulls the bytes itself from a source (JSON: values need not end
 * at a line), or takes the whole file at once; detection tries each row's
 * extensions, then each row's sniff of the first bytes, in table order.
 */
#ifndef AS_FORMATS_H
#define AS_FORMATS_H

#include "allocscope/build.h"
#include "core/internal.h"

/*
 * What a line format carries across pieces, zeroed before the first. `priv`
 * belongs to the format: its `end` frees it, whether or not parsing failed.
 */
struct as_line_state {
	uint64_t line;          /* lines consumed so far */
	int ncols;              /* CSV: columns in the header, 0 before it */
	int pos[8];             /* CSV: column of each field, -1 when absent */
	void *priv;
	bool content;           /* a byte other than a blank was fed */
	uint64_t nl_run;        /* newlines in the run of them being fed */
};

/*
 * The input of a pulled format: the bytes after any BOM, decompressed, in
 * pieces of the reader's choosing. Owned by the loader.
 */
struct as_source;

/* Up to `cap` bytes into buf; *got is 0 only at the end of the input. */
int as_source_read(struct as_source *s, char *buf, size_t cap, size_t *got,
		   struct as_diag *diag);

/* Start again from the first byte (a file is read, or decompressed, again). */
int as_source_rewind(struct as_source *s, struct as_diag *diag);

/*
 * The most bytes a reader may hold at once: 256 MiB for compressed input
 * or a pipe (a decompression bomb, a stream that never ends), SIZE_MAX
 * for text the caller already holds or a plain file.
 */
size_t as_source_limit(const struct as_source *s);

struct as_format_impl {
	const char *name;
	/* Space separated, with the dot: ".ops .txt"; a name ending in one
	 * (the longest that fits: ".pt.trace.json" before ".json") is ours. */
	const char *extensions;
	/* Whether the first `len` bytes (maybe fewer than the file) are ours. */
	bool (*sniff)(const char *head, size_t len);
	/* Line formats: whole lines, in pieces; then `end` once, always. */
	int (*lines)(struct as_builder *b, struct as_line_state *st,
		     const char *data, size_t len, struct as_diag *diag);
	int (*end)(struct as_builder *b, struct as_line_state *st, int err,
		   struct as_diag *diag);
	/* Whole formats: the whole file. */
	int (*whole)(struct as_builder *b, const char *data, size_t len,
		     struct as_diag *diag);
	/* Pulled formats: the bytes from `src`, as often as they rewind it. */
	int (*stream)(struct as_builder *b, struct as_source *src,
		      struct as_diag *diag);
};

/* The rows, defined by each format's file. */
extern const struct as_format_impl as_format_ops;
extern const struct as_format_impl as_format_csv;
extern const struct as_format_impl as_format_profiler;
extern const struct as_format_impl as_format_json;
extern const struct as_format_impl as_format_pickle;
extern const struct as_format_impl as_format_mtrace;
extern const struct as_format_impl as_format_heaptrack;

/* Line formats split their text with as_next_line (core/internal.h). */

/* One whole line of a recording (no newline) and its number. */
typedef int (*as_line_fn)(struct as_builder *b, void *state, const char *s,
			  size_t len, uint64_t line, struct as_diag *diag);

/*
 * Feed the whole lines of a piece to fn, counting st->line. A last line
 * with no newline at the very end of the file is a writer stopped mid-line
 * (a killed program): counted in the trace's input stats and ignored.
 */
int as_recorded_lines(struct as_builder *b, struct as_line_state *st,
		      const char *data, size_t len, as_line_fn fn,
		      void *state, struct as_diag *diag);

#endif
