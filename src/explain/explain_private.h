/*
 * Private: what the files of explain/ share: explain.c (the peak, the live
 * set, temporaries, stages, fragmentation), group.c (grouping buffers and
 * their representative frames), write.c (text, JSON, Markdown) and diff.c
 * (two explains as result rows).
 */
#ifndef AS_EXPLAIN_PRIVATE_H
#define AS_EXPLAIN_PRIVATE_H

#include <stdio.h>

#include "allocscope/explain.h"
#include "core/internal.h"
#include "core/trace_private.h"

/* Texts an explain made (keys, normalised stacks), freed with it. */
struct as_explain_private {
	struct as_arena arena;
	/*
	 * Made in one pass (stream.c): the trace holds no blocks, so its
	 * counts and the clock at the peak are kept here.
	 */
	bool streamed, has_clock;
	uint32_t nbuffers;
	uint64_t nevents, peak_us;
};

/* ---- explain.c ---- */

/* The explain's trace's buffers and alloc/free events (the recording's
 * when streamed). */
uint32_t as_x_nbuffers(const struct as_explain *e);
uint64_t as_x_nevents(const struct as_explain *e);
/* The clock at `time` into *us; false when the trace has none there. */
bool as_x_clock(const struct as_explain *e, uint64_t time, uint64_t *us);
/* A new explain of t with options o (NULL: defaults) and nspaces spaces. */
int as_x_new(const struct as_trace *t, const struct as_explain_options *o,
	     uint16_t nspaces, struct as_explain **out);

/* The largest and the mean of the runs' trace peaks. */
void as_x_ranks(const struct as_explain_run *runs, size_t n, uint64_t *max,
		uint64_t *mean);

/* ---- group.c ---- */

/*
 * A grouping of buffers by the options' key: buffers are added one by
 * one (O(1) expected each; stacks are grouped by number, each number's
 * text looked at once), then the groups come out sorted, the first `top`
 * with their keys and frames copied into the explain's arena.
 */
struct grouper;

int as_x_grouper_create(const struct as_trace *t,
			const struct as_explain_options *o,
			struct grouper **out);
void as_x_grouper_destroy(struct grouper *g);
int as_x_grouper_add(struct grouper *g, uint32_t buffer);
/*
 * Buffer i standing for `count` buffers of `bytes` in all, the largest
 * `largest` (explain's one-pass path adds a stack's sums at once); added
 * in increasing i, as as_x_grouper_add's buffers are.
 */
int as_x_grouper_add_n(struct grouper *g, uint32_t i, uint64_t bytes,
		       uint64_t count, uint64_t largest);
/* The list (by bytes, or by largest buffer first when `by_largest`). */
int as_x_grouper_list(struct grouper *g, struct as_explain *e, bool by_largest,
		      struct as_explain_list *out);
/*
 * Up to `max` frames of a stack text, the allocator's left out (each a
 * pointer into `text` and a length); returns how many.
 */
uint32_t as_x_user_frames(const char *text, uint32_t max, const char **at,
			  size_t *len);
/*
 * The frame [s, s + n) into out[cap] (terminated) with each parameter list
 * "(...)" made "()" (C++ signatures; "(anonymous namespace)" stays);
 * returns the length.
 */
size_t as_x_strip_params(const char *s, size_t n, char *out, size_t cap);

/* ---- write.c ---- */

/* A frame for a person: its file's directories left out. */
void as_x_short_frame(const char *frame, char *buf, size_t len);
/* Text in a Markdown table cell or line: its marks escaped, newlines as
 * <br>. */
void as_x_md_text(FILE *f, const char *s);

#endif
