/*
 * allocscope for its authors: what the library's readers, strategies and
 * writers use besides the user API (allocscope.h, which this includes).
 * Readers (src/formats/) build traces and record what their inputs tell;
 * strategies (src/strategies/) read events and recordings and fill plans;
 * writers (src/render/, src/explain/, src/compare/) read what a trace
 * holds for them. A program that only loads, plans, validates, runs and
 * draws needs none of it.
 *
 * Ownership as in allocscope.h: a builder is its caller's until
 * as_builder_finish hands everything to the trace; what a plan is given
 * (remarks, stats, certificates, attachments) it owns from then on.
 */
#ifndef ALLOCSCOPE_BUILD_H
#define ALLOCSCOPE_BUILD_H

#include "allocscope/allocscope.h"
#include "allocscope/certified.h"
#include "allocscope/io.h"

/* ---- Events and cases ----
 * A trace's operations in order, as the online strategies replay them. */

enum as_event_kind {
	AS_EV_ALLOC,
	AS_EV_FREE,
	AS_EV_CASE,    /* a new case starts: online strategies restart */
	AS_EV_QUERY,   /* dump/stats/render/curr: `arg` is an enum as_query */
};

enum as_query { AS_Q_DUMP, AS_Q_STATS, AS_Q_RENDER, AS_Q_CURR };

/*
 * An event in trace order. `arg` is a buffer index, case index or query.
 * Packed into 4 bytes: a trace holds at most AS_MAX_BUFFERS buffers.
 */
struct as_event {
	uint32_t kind : 2;
	uint32_t arg : 30;
};

#define AS_MAX_BUFFERS ((1u << 30) - 1)

/* A case: the options in force from its first event (text `config` lines). */
struct as_case {
	const char *options;    /* "key=value,key=value", may be "" */
	uint32_t first_event;
	uint64_t line;          /* of the config that set them; 0: unknown */
};

/* ---- What inputs record ----
 * Beyond buffers, what some inputs tell: a computation graph's operators,
 * a recording's marks, reserved segments, stages, realloc links and the
 * real addresses behind recorded offsets. Readers make them; the
 * strategies, the renderer and explain read them. */

/* Operator of a computation graph (JSON graph traces). */
struct as_op {
	const char *name;
	const char *kind;       /* conv, matmul, reshape, concat, split, ... */
	int32_t axis;           /* concat/split axis, -1 when none */
	uint32_t ninputs, noutputs;
	uint32_t *inputs;       /* buffer indices */
	uint32_t *outputs;
};

struct as_tensor_shape {
	uint32_t rank;
	uint64_t *dims;
	uint32_t elem_size;
};

/*
 * A moment the input marks on the time axis: the recording allocator ran out
 * of memory (a PyTorch `oom` entry), or an allocation the program asked for
 * failed (malloc returned NULL). Failed allocations are not buffers.
 */
enum as_mark_kind { AS_MARK_OOM, AS_MARK_FAILED };

struct as_mark {
	uint64_t time;          /* time step, as buffer lifetimes */
	uint64_t size;          /* bytes asked for */
	uint64_t device_free;   /* OOM: free device memory then; else 0 */
	uint16_t space;
	uint8_t kind;           /* enum as_mark_kind */
};

/*
 * Memory the recording allocator reserved from its device (a CUDA segment, or
 * a mapped range of an expandable one), live over [start, end) at address
 * `addr` of `space`. Drawn behind the buffers; never placed by a strategy.
 */
struct as_segment {
	uint64_t addr, size;
	uint64_t start, end;
	uint16_t space;
	uint16_t stream;
	uint8_t flags;          /* AS_SEG_* */
};

enum { AS_SEG_EXPANDABLE = 1 << 0 };

/*
 * The address map: recorded offsets that stand for real addresses (device or
 * heap addresses of a recording) are kept compressed, the empty address
 * ranges between the memory the recording used shrunk to a small gap, so
 * that a `recorded` plan's peak reads as memory. Each range says that
 * offsets [offset, offset + length) of `space` are the real addresses
 * [address, address + length). Ranges of one space do not overlap and are
 * in the same order by offset and by address.
 */
struct as_addr_range {
	uint64_t offset, address, length;
	uint16_t space;
};

/*
 * A realloc link: buffer `buffer` replaced buffer `realloc_of` (malloc
 * traces). Kept apart from the per-buffer info, only for the buffers that
 * have one, so that a 10^7-block trace with a few reallocs stays small.
 */
struct as_realloc {
	uint32_t buffer, realloc_of;
};

/*
 * A stage of the program that the recording marked on the time axis: a
 * named region from a START to an END (PyTorch snapshots'
 * `external_annotations`: record_function or NVTX ranges) on one space (a
 * snapshot's device). It holds time steps [start, end), the operations the
 * program made inside it; times are steps as buffer lifetimes.
 */
struct as_stage {
	const char *name;
	uint64_t start, end;    /* start <= end <= the trace's end_time */
	uint16_t space;
	uint16_t lane;          /* 0 outermost: in start order each stage takes
				 * the lowest lane free over its life (nested
				 * stages stack up); set by the builder */
	uint8_t flags;          /* AS_STAGE_* */
};

enum {
	AS_STAGE_NO_START = 1 << 0, /* an END without its START: from 0 */
	AS_STAGE_NO_END = 1 << 1,   /* a START never ended: to the end */
};

/* ---- Building a trace ----
 * Traces made in code: readers, generators, tests. Buffers are appended in
 * event order; the builder checks names, sizes and times. */

struct as_builder;
struct as_builder *as_builder_create(const char *path, const char *format);
/* Returns the buffer index, or a negative code (diag filled, line = `line`). */
int64_t as_builder_alloc(struct as_builder *b, const char *name, uint64_t size,
			 uint64_t align, uint64_t line, struct as_diag *diag);
int as_builder_free(struct as_builder *b, const char *name, uint64_t line,
		    struct as_diag *diag);
int as_builder_case(struct as_builder *b, const char *options,
		    struct as_diag *diag);
int as_builder_query(struct as_builder *b, enum as_query q);
/* The buffer just added, to set recorded offsets, spaces, symbols, ... */
struct as_buffer *as_builder_buffer(struct as_builder *b, uint32_t index);
/* The space named `name`, added when new; at most AS_MAX_SPACES (past it:
 * AS_EINVAL). */
#define AS_MAX_SPACES UINT16_MAX
int as_builder_space(struct as_builder *b, const char *name,
		     uint64_t capacity);
/* Intern a string in the trace (symbols, frames, metadata). */
const char *as_builder_intern(struct as_builder *b, const char *s);
/*
 * Give the time step the next operation takes a clock reading (microseconds
 * since the first entry); steps without one repeat the previous reading.
 * Readings must not decrease.
 */
int as_builder_clock(struct as_builder *b, uint64_t us, uint64_t line,
		     struct as_diag *diag);
/* The current time step (the one the next operation takes). */
uint64_t as_builder_time(const struct as_builder *b);
/* Add a mark at the current time step (m->time is set by the builder). */
int as_builder_mark(struct as_builder *b, const struct as_mark *m);
/*
 * Add a stage (a copy of *s; its name is copied, lane is set at the
 * finish, an end past the trace's end is cut there). AS_EINVAL when end <
 * start, AS_ENOMEM. Spaces are checked at the finish.
 */
int as_builder_stage(struct as_builder *b, const struct as_stage *s);
/* Add a reserved segment (a copy of *s). */
int as_builder_segment(struct as_builder *b, const struct as_segment *s);
/*
 * The info of buffer `idx`, creating the per-buffer array on first use
 * (requested = size, free_requested = end until set); NULL when out of
 * memory. The pointer is valid until the next buffer.
 */
struct as_buffer_info *as_builder_info(struct as_builder *b, uint32_t idx);
/*
 * Record that buffer `idx` replaced buffer `of` through realloc. Links are
 * set in increasing order of `idx` (as readers make buffers); AS_EINVAL
 * otherwise or for an unknown buffer, AS_ENOMEM.
 */
int as_builder_realloc_of(struct as_builder *b, uint32_t idx, uint32_t of);
/* Count something the reader met (`key` a literal); adds to the count. */
int as_builder_count(struct as_builder *b, const char *key, uint64_t n);
/*
 * Finish: the trace takes ownership of everything and b is consumed. On
 * failure b is left as it was, for the caller to destroy.
 */
int as_builder_finish(struct as_builder *b, struct as_trace **out,
		      struct as_diag *diag);
void as_builder_destroy(struct as_builder *b);

/*
 * Buffers with explicit lifetimes (CSV, JSON with times): events are derived
 * by sorting, frees before allocations at equal times, then by index.
 */
int64_t as_builder_add_timed(struct as_builder *b, const char *name,
			     uint64_t size, uint64_t align, uint64_t start,
			     uint64_t end, uint64_t line, struct as_diag *diag);

/* ---- Loading with a sink ----
 * A malloc recording read once, its blocks handed to a consumer rather than
 * kept (explain's one pass). */

/*
 * One pass over a malloc recording (heaptrack, mtrace) without keeping its
 * blocks: each block goes to `sink` as it is allocated and freed, in the
 * recording's order, one time step per event as a loaded trace counts them.
 * `stack` is NULL or a string the returned trace holds; *id names the block
 * until its free (the sink's numbers, reusable after a free). `clock` gives
 * each clock reading (microseconds) before the events it dates; `end` runs
 * after the last line with the builder of the trace handed back, which
 * holds the recording's strings, spaces and counts but no blocks (the sink
 * may add buffers). explain's streaming path uses it
 * (as_explain_stream_create).
 */
struct as_live_sink {
	void *ctx;
	int (*alloc)(void *ctx, uint64_t size, uint64_t align,
		     const char *stack, uint64_t line, uint32_t *id,
		     struct as_diag *diag);
	int (*free)(void *ctx, uint32_t id, uint64_t line,
		    struct as_diag *diag);
	void (*clock)(void *ctx, uint64_t us);
	int (*end)(void *ctx, struct as_builder *b, struct as_diag *diag);
};

/*
 * as_trace_load_opts (options `o`, NULL: the defaults) with a sink for a
 * heaptrack or mtrace recording's blocks; any other file loads whole, as
 * as_trace_load_opts loads it, and the sink is never called (so an input
 * is read once whatever it holds).
 */
int as_trace_load_live(const char *path, const struct as_load_options *o,
		       const struct as_live_sink *sink, struct as_trace **out,
		       struct as_diag *diag);

/* ---- Reading a trace, for writers ----
 * What the renderer and explain group and label buffers by: stack numbers,
 * what PyTorch tells of a buffer, stages, groups, realloc links. */

/*
 * Buffer i's stack as a number (AS_NONE: no frames), for grouping buffers
 * by stack without comparing texts: buffers with one number share one text
 * (as_trace_stack_text); one text may have several numbers when a reader
 * gave it several times. O(1).
 */
uint32_t as_trace_buffer_stack(const struct as_trace *t, uint32_t i);
/* The text of stack number k (as as_trace_buffer_frames), or NULL. */
const char *as_trace_stack_text(const struct as_trace *t, uint32_t k);

/*
 * What the program said of buffer i besides its stack, or NULL: PyTorch's
 * `compile_context` (the torch.compile graph it was allocated in) and
 * `user_metadata` (what the program set with _set_memory_metadata), as
 * the recording gave them (empty strings are NULL).
 */
const char *as_trace_buffer_context(const struct as_trace *t, uint32_t i);
const char *as_trace_buffer_metadata(const struct as_trace *t, uint32_t i);

/*
 * The innermost stage of `space` holding time step `time` (the one that
 * started last), as an index into t->stages, or AS_NONE. O(log stages).
 */
uint32_t as_trace_stage_at(const struct as_trace *t, uint16_t space,
			   uint64_t time);

/*
 * The group of buffer i of t as text in buf (always terminated, cut to
 * fit); returns buf.
 */
const char *as_trace_group(const struct as_trace *t, uint32_t i,
			   enum as_group_by g, char *buf, size_t len);

/* The name of `space` in t, "space" when it has none. */
const char *as_trace_space_name(const struct as_trace *t, uint16_t space);

/* The buffer that buffer `buffer` replaced through realloc, or AS_NONE.
 * O(log n) over the trace's links. */
uint32_t as_trace_realloc_of(const struct as_trace *t, uint32_t buffer);

/* ---- A recording's device ----
 * What a recording tells of the memory its allocator reserved and of the
 * device's size (cuda-caching, the renderer's reserved bands, explain's
 * out of memory sections). */

/*
 * The most memory the recording allocator held reserved at once in each
 * space (the trace's segments, ends before starts at equal times): peak[s]
 * for every s < t->nspaces, 0 for a space without segments. AS_OK, or
 * AS_ENOMEM (peak zeroed). O(n log n) in the segments.
 */
int as_trace_reserved_peaks(const struct as_trace *t, uint64_t *peak);

/*
 * A step at which a recording gave reserved memory of a space back (its
 * segments ending before the trace does): what the space held before the
 * step's releases, what it reserved at the same step after them (segment
 * entries share the step of the next block entry), and whether the
 * recording ran out of memory then.
 */
struct as_release_step {
	uint64_t time, before, started;
	bool oom;
};

/* The release steps of `space` in time order: *out malloc'ed (the
 * caller frees it), *n entries. AS_OK or AS_ENOMEM. O(n log n). */
int as_trace_release_steps(const struct as_trace *t, uint16_t space,
			   struct as_release_step **out, uint32_t *n);

/* Where a memory limit comes from. */
enum as_limit_from {
	AS_LIMIT_NONE,   /* unlimited */
	AS_LIMIT_OPTION, /* a strategy's option */
	AS_LIMIT_SPACE,  /* the trace states its space's capacity */
	AS_LIMIT_OOM,    /* a recorded OOM: what the device held then plus
			  * its free memory */
	AS_LIMIT_RETRY,  /* a recorded release and retry of cudaMalloc: the
			  * most the recording ever reserved */
};

struct as_limit {
	uint64_t bytes;  /* 0: unlimited */
	uint64_t step;   /* the OOM's or retry's time step */
	enum as_limit_from from;
};

/*
 * The memory `space` has as the trace tells it: its stated capacity; else,
 * on a recording, the device's size when the recording ran out of memory
 * (an OOM: what it held then plus the device's free memory, at least the
 * most it ever reserved) or gave cached segments back to retry a
 * cudaMalloc at the same step (a release that the most it ever reserved
 * does not leave room for: the device held no more than that); else
 * unlimited. AS_OK or AS_ENOMEM.
 */
int as_trace_device_limit(const struct as_trace *t, uint16_t space,
			  struct as_limit *out);

/* ---- Filling a plan ----
 * What strategies add to the plan they make: optional arrays, remarks,
 * statistics, rounds, certified bounds, a model's out of memory, and
 * attachments of their own. */

/* Allocate the optional arrays (filled with "same as trace" values). */
int as_plan_want_chunks(struct as_plan *p);
int as_plan_want_spaces(struct as_plan *p, const struct as_trace *t,
			uint16_t nspaces);
int as_plan_want_aliases(struct as_plan *p, const struct as_trace *t);
/* Allocate segment_size and segment_offset (zero: no segment). */
int as_plan_want_segments(struct as_plan *p);
/* Add a remark (copied; at most 64 are kept, later ones are counted). */
int as_plan_note(struct as_plan *p, const char *text);
/* The AS_NOTE_CAPACITY remark (runs without a limit have none; replay's
 * table prints it) for limit l of the memory called `name` (nothing when
 * unlimited, once per plan); `option` names the option when it came from
 * one ("total=17179869184"). */
int as_plan_note_limit(struct as_plan *p, const char *name,
		       const char *option, const struct as_limit *l);
/* Record a statistic; `key` must outlive the plan (a literal). */
int as_plan_stat(struct as_plan *p, const char *key, double value);
int as_plan_stat_int(struct as_plan *p, const char *key, uint64_t value);
int as_plan_round(struct as_plan *p, const char *label, uint64_t peak);
/*
 * Add certificate c to p's: p takes c->buffers over (also when it fails:
 * they are freed then). Returns 0 or AS_ENOMEM.
 */
int as_plan_certify(struct as_plan *p, struct as_certificate *c);

/*
 * An out of memory inside an allocator model (cuda-caching): the request,
 * what the allocator held then, and why it failed. Size classes of the
 * cached free blocks (AS_OOM_CLASSES): as_oom_class_name.
 */
struct as_plan_oom {
	uint64_t time;          /* time step */
	uint64_t request;       /* bytes asked for */
	uint64_t size;          /* as a block (rounded) */
	uint64_t alloc_size;    /* what it asked of the device */
	uint64_t live;          /* bytes allocated then */
	uint64_t reserved;      /* bytes reserved from the device then */
	uint64_t capacity;      /* the device's bytes (0: unlimited) */
	uint64_t largest;       /* the largest cached free block */
	uint64_t cached[AS_OOM_CLASSES]; /* cached free bytes by class */
	uint16_t space;
	bool recorded;          /* the recording ran out of memory here */
	bool fragmentation;     /* the device had room for it beside the
				 * live bytes, not in one piece; false:
				 * the live bytes and it exceed the device */
};
/* Add an out of memory (copied). AS_ENOMEM. */
int as_plan_oom_add(struct as_plan *p, const struct as_plan_oom *o);

/*
 * What a strategy attaches to its plan for the readers it serves, so that
 * struct as_plan names nothing one strategy alone knows (cuda-caching's
 * divergence, read through cuda.h's as_plan_divergence): `size` bytes under
 * `key` (a literal the strategy owns, "cuda-caching:divergence"), freed and
 * copied with the plan byte for byte, so nothing inside may point
 * elsewhere. as_plan_attach returns the plan's bytes under key: a copy of
 * the `size` bytes at `init` when key is new, else those it holds; NULL
 * when memory runs out or key holds another size. as_plan_attached: the
 * bytes under key, or NULL.
 */
void *as_plan_attach(struct as_plan *p, const char *key, const void *init,
		     size_t size);
const void *as_plan_attached(const struct as_plan *p, const char *key);

#endif
