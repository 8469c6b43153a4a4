/*
 * Private: what the files of explain/ share: explain.c (the peak, the live
 * set, temporaries, stages, fragmentation), frames.c (which frames are the
 * user's), category.c (parameters, activations, ...), group.c (grouping
 * buffers and their representative frames), write.c (text, JSON,
 * Markdown) and diff.c (two explains as result rows).
 */
#ifndef AS_EXPLAIN_PRIVATE_H
#define AS_EXPLAIN_PRIVATE_H

#include <regex.h>
#include <stdio.h>

#include "allocscope/explain.h"
#include "core/internal.h"
#include "core/trace_private.h"

/* Texts an explain made (keys, normalised stacks), freed with it. */
struct as_explain_private {
	struct as_arena arena;
	bool looked;            /* nothing_to_group is set */
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

/* The largest and the mean of the entries' trace peaks. */
void as_x_ranks(const struct as_explain_entry *entries, size_t n, uint64_t *max,
		uint64_t *mean);

/* ---- frames.c ---- */

/* What a frame is (docs/explain.md, "Your code's frames"). */
enum as_x_kind { AS_X_USER, AS_X_GENERATED, AS_X_LIBRARY, AS_X_ALLOCATOR };

/* The options' --user-code and --skip-frames, compiled. */
struct as_x_frames {
	regex_t user, skip;
	bool has_user, has_skip;
	bool python_program;    /* a PyTorch snapshot: native frames are
				 * PyTorch's and CPython's in every stack */
};

/* A part of a text: s[0, n). */
struct as_x_span {
	const char *s;
	size_t n;
};

/* AS_EINVAL when a regular expression does not compile. */
int as_x_frames_init(struct as_x_frames *fr, const char *user_code,
		     const char *skip_frames);
void as_x_frames_finish(struct as_x_frames *fr);
/* Whether a stack has Python frames (a PyTorch snapshot's). */
bool as_x_python_stack(const char *text);
/* The kind of frame [s, s + n); fr may be NULL (the built-in rules). */
enum as_x_kind as_x_frame_kind(const struct as_x_frames *fr, const char *s,
			       size_t n, bool python_stack);
/* The file and function of a frame (file empty when it names none). */
void as_x_frame_parts(const char *s, size_t n, struct as_x_span *file,
		      struct as_x_span *func);
/* Whether a frame is the allocator's machinery. */
bool as_x_is_machinery(const char *s, size_t n);
/*
 * The index of the stack's first user frame: true when there is one;
 * else false with the first frame that is not the allocator's (or 0).
 */
bool as_x_user_frame(const struct as_x_frames *fr, const char *text,
		     uint32_t *index);
/* Frame k of a stack text; false past the last. */
bool as_x_frame_at(const char *text, uint32_t k, const char **at, size_t *len);
/*
 * Up to `max` frames of a stack text (each a pointer into `text` and a
 * length), the allocator's left out unless all are; returns how many.
 */
uint32_t as_x_user_frames(const char *text, uint32_t max, const char **at,
			  size_t *len);

/* ---- category.c ---- */

enum {
	AS_X_CAT_PARAMETERS,
	AS_X_CAT_ACTIVATIONS,
	AS_X_CAT_GRADIENTS,
	AS_X_CAT_OPTIMIZER,
	AS_X_CAT_TEMPORARIES,
	AS_X_CAT_UNKNOWN,
	AS_X_CAT_COUNT /* user rule r is AS_X_CAT_COUNT + r */
};

/* Which rule decided a category (its evidence). */
enum as_x_why {
	AS_X_WHY_RULE,
	AS_X_WHY_BEFORE,
	AS_X_WHY_INIT,
	AS_X_WHY_TEMPORARY,
	AS_X_WHY_OPT_STAGE,
	AS_X_WHY_OPT_FRAME,
	AS_X_WHY_BWD_STAGE,
	AS_X_WHY_BWD_FRAME,
	AS_X_WHY_FWD_STAGE,
	AS_X_WHY_FWD_FRAME,
	AS_X_WHY_NO_FRAMES,
	AS_X_WHY_NO_RULE,
	AS_X_WHY_COUNT
};

/* A buffer's category, why, and the frame or stage that matched (at, len;
 * NULL when the rule needs none). */
struct as_x_verdict {
	uint32_t cat;
	int32_t rule;
	enum as_x_why why;
	const char *at;
	size_t len;
};

struct as_x_categorizer;

/* order may be NULL: no buffer is then a temporary. AS_EINVAL when a
 * rule's regular expression does not compile. */
int as_x_cat_create(const struct as_trace *t,
		    const struct as_explain_options *o,
		    const struct as_order *order, struct as_x_categorizer **out);
void as_x_cat_destroy(struct as_x_categorizer *c);
void as_x_cat_of(struct as_x_categorizer *c, uint32_t i,
		 struct as_x_verdict *v);
const char *as_x_cat_name(const struct as_x_categorizer *c, uint32_t cat);
const char *as_x_reason_text(enum as_x_why w);
/* Whether b is freed before the program's next allocation. */
bool as_x_temporary(const struct as_order *o, const struct as_buffer *b);

/* ---- group.c ---- */

/*
 * A grouping of buffers by the options' key: buffers are added one by
 * one (O(1) expected each; stacks are grouped by number, each number's
 * text looked at once), then the groups come out sorted, the first `top`
 * with their keys and frames copied into the explain's arena.
 */
struct grouper;

/* order: for the categories' temporaries (NULL: none). */
int as_x_grouper_create(const struct as_trace *t,
			const struct as_explain_options *o,
			const struct as_order *order, struct grouper **out);
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
 * Why grouping by o->by finds nothing to group on t (one line), or NULL:
 * no stacks, no stages, no contexts, names without structure.
 */
const char *as_x_nothing_to_group(const struct as_trace *t,
				  const struct as_explain_options *o);
/*
 * The frame [s, s + n) into out[cap] (terminated) with each parameter list
 * "(...)" made "()" (C++ signatures; "(anonymous namespace)" stays);
 * returns the length.
 */
size_t as_x_strip_params(const char *s, size_t n, char *out, size_t cap);

/* ---- write.c ---- */

/* Text from a recording for a terminal (as_escape, AS_ESCAPE_TEXT: control
 * bytes as \xNN), cut to fit buf; returns buf. */
const char *as_x_tx(const char *s, char *buf, size_t len);
/* A frame for a person: its file's directories left out; not escaped (the
 * text writer escapes it with as_explain_frame_text, the Markdown one with
 * as_escape_write). */
void as_x_short_frame(const char *frame, char *buf, size_t len);

/* ---- oom.c ---- */

/* e's out of memory records: the trace's OOM marks, or plan p's. */
int as_x_oom_trace(struct as_explain *e, const struct as_trace *t);
int as_x_oom_plan(struct as_explain *e, const struct as_trace *t,
		  const struct as_plan *p);
/* Whether a plan of the run is cuda-caching's (its OOMs modelled). */
bool as_x_oom_modelled(const struct as_explain_entry *entry);
/* e's OOMs: text (each line after `indent`; `suggest`: a recorded one
 * says where the allocator's state is), a JSON key after the object's
 * last (", \"ooms\": [...]"), Markdown (a heading and a table). */
void as_x_oom_text(FILE *f, const struct as_explain *e, bool suggest,
		   const char *indent);
void as_x_oom_json(FILE *f, const struct as_explain *e, const char *indent);
void as_x_oom_markdown(FILE *f, const struct as_explain *e, bool suggest);

#endif
