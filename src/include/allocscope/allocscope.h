/*
 * allocscope: replay memory-allocation traces through allocation strategies,
 * prove the resulting plans overlap-free, and draw them.
 *
 * Ownership: every object returned by an as_*_create/load function belongs to
 * the caller and is released with the matching as_*_destroy, which accepts
 * NULL. Strings and arrays inside a trace belong to the trace. The library
 * never prints and never exits: errors are negative codes from the table
 * below, with details written into a caller-owned struct as_diag.
 */
#ifndef ALLOCSCOPE_H
#define ALLOCSCOPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One table generates the error enum, as_strerror() and as_err_name(). */
#define AS_ERRNO_MAP(XX)                                         \
	XX(NOMEM, "out of memory")                               \
	XX(IO, "input/output error")                             \
	XX(PARSE, "malformed input")                             \
	XX(INVAL, "invalid argument")                            \
	XX(UNSUPPORTED, "trace not supported by this strategy")  \
	XX(NOTFOUND, "no such strategy or option")               \
	XX(INVALID_PLAN, "plan is not valid")                    \
	XX(LIMIT, "stopped at its step limit")                   \
	XX(CANCELED, "canceled")

enum as_err {
	AS_OK = 0,
#define XX(code, _) AS_E##code,
	AS__ERR_FIRST = -100,
	AS_ERRNO_MAP(XX)
#undef XX
};

const char *as_strerror(int err);
const char *as_err_name(int err);

/*
 * A diagnostic the caller owns. Functions that can fail on user input fill it
 * in; `line` is 0 when the problem has no line (a file that cannot be opened).
 */
struct as_diag {
	char file[256];
	uint64_t line;
	char msg[512];
	int err;        /* the error it describes (AS_E*) */
};

/* Write "FILE:LINE: msg" (or "FILE: msg") into buf; returns buf. */
const char *as_diag_text(const struct as_diag *d, char *buf, size_t len);

#define AS_NONE UINT32_MAX          /* no index (alias parent, symbol, ...) */
#define AS_NO_OFFSET UINT64_MAX     /* no address: not recorded, or failed */

/*
 * A buffer is one allocation: a rectangle whose x extent is its lifetime
 * [start, end) and whose y extent an offset chosen by a strategy plus size.
 */
struct as_buffer {
	const char *name;        /* read through as_trace_buffer_name: NULL
				  * in malloc traces until first read */
	uint64_t size;
	uint64_t start, end;     /* lifetime, half-open */
	uint64_t recorded;       /* offset given by the input, or AS_NO_OFFSET */
	uint64_t alias_offset;   /* offset inside alias_of */
	uint32_t alias_of;       /* buffer this one lives inside, or AS_NONE */
	uint32_t symbol;         /* address symbol (index in trace->symbols) */
	uint16_t space;          /* address space: pool, level or core */
	uint16_t stream;
	uint8_t align_log2;      /* alignment is 1 << align_log2 */
	uint8_t flags;           /* AS_BUF_* */
};

enum {
	AS_BUF_GRAPH_INPUT = 1 << 0,
	AS_BUF_GRAPH_OUTPUT = 1 << 1,
	AS_BUF_NEVER_FREED = 1 << 2,
};

static inline uint64_t as_buffer_align(const struct as_buffer *b)
{
	return (uint64_t)1 << b->align_log2;
}

/* A buffer is kept to 64 bytes: traces of 10^7 buffers are common. */
_Static_assert(sizeof(struct as_buffer) <= 64, "as_buffer grew");

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
/* The longest buffer name any format accepts, in bytes. */
#define AS_NAME_MAX 1023

/* An address space: the default pool, a named pool or level, or a core. */
struct as_space {
	const char *name;
	uint64_t capacity;      /* 0: unlimited */
};

/* A case: the options in force from its first event (text `config` lines). */
struct as_case {
	const char *options;    /* "key=value,key=value", may be "" */
	uint32_t first_event;
	uint64_t line;          /* of the config that set them; 0: unknown */
};

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

/* A named figure: plan statistics, input counts. */
struct as_stat {
	const char *key;        /* static string */
	double value;
	bool integer;
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
 * What some inputs know of a buffer beyond its rectangle. `requested` is what
 * the program asked for (size minus requested is the allocator's rounding);
 * `free_requested` the time the program let go of it, at or before `end`
 * (PyTorch frees a block only when its stream is done with it).
 */
struct as_buffer_info {
	uint64_t requested;
	uint64_t free_requested;
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

struct as_trace {
	const char *path;
	const char *format;     /* "ops", "json", "csv" */
	struct as_buffer *buffers;
	uint32_t nbuffers;
	struct as_event *events;
	uint32_t nevents;
	uint64_t end_time;      /* lifetimes lie in [0, end_time] */
	struct as_space *spaces;  /* at least one: spaces[0] is the default */
	uint16_t nspaces;
	struct as_case *cases;  /* at least one */
	uint32_t ncases;
	const char **symbols;   /* address symbols by index */
	uint32_t nsymbols;
	/* (stack frames per buffer: as_trace_buffer_frames) */
	struct as_op *ops;      /* graph operators in execution order, or NULL */
	uint32_t nops;
	struct as_tensor_shape *shapes; /* per buffer when ops != NULL, else NULL */
	const char *metadata;   /* JSON text of the input's metadata, or NULL */
	const struct as_numa *numa; /* bundle structure (allocscope_numa.h) */
	/*
	 * Recorded by some inputs (snapshots, malloc and heap traces); each
	 * is NULL (count 0) when the input has none.
	 */
	uint64_t *clock;        /* per time step 0..end_time: microseconds since
				 * the first entry, nondecreasing */
	struct as_mark *marks;  /* in time order */
	uint32_t nmarks;
	struct as_segment *segments; /* in start order */
	uint32_t nsegments;
	struct as_buffer_info *info; /* per buffer, or NULL: every buffer
				      * has the defaults (requested = size,
				      * free_requested = end) */
	struct as_realloc *reallocs; /* by buffer, one at most each */
	uint32_t nreallocs;
	struct as_stat *input_stats; /* counts of what the reader met and
				      * set aside (frees of unknown
				      * addresses, ...) */
	uint32_t ninput_stats;
	struct as_addr_range *addr_map; /* by space, then offset; NULL
					 * (count 0): offsets are not
					 * compressed addresses */
	uint32_t naddr_map;
	struct as_stage *stages; /* by space, then start (the longer first
				  * at equal starts); NULL (count 0): none */
	uint32_t nstages;
	struct as_trace_private *priv;
};

/*
 * The name of buffer `i`, the one way to read names: malloc traces (mtrace,
 * raw heaptrack) generate theirs ("0xADDR#N") on the first call, all at once
 * (O(n) time and the memory the names take), and hold none before; other
 * traces return buffers[i].name. NULL when i is out of range or memory runs
 * out. The first call writes into the trace: not concurrently with other
 * uses of it.
 */
const char *as_trace_buffer_name(const struct as_trace *t, uint32_t i);

/*
 * The stack frames of buffer `i` ('\n'-joined, innermost first), or NULL
 * when it has none or i is out of range. Buffers with the same stack share
 * one string: the trace holds a 4-byte stack number per buffer.
 */
const char *as_trace_buffer_frames(const struct as_trace *t, uint32_t i);

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

/* How buffers are grouped: live lists, colours, explain's groups. */
enum as_group_by {
	AS_GROUP_BUFFER,   /* no grouping: each buffer */
	AS_GROUP_PREFIX,   /* "layer3.attn.q" -> "layer3.attn"; "t17" -> "t" */
	AS_GROUP_FRAME,    /* the first stack frame, "(no frames)" without */
	AS_GROUP_SIZE,     /* size class: powers of two */
	AS_GROUP_STAGE,    /* the innermost stage at its allocation,
			    * "(no stage)" outside every stage */
	AS_GROUP_STACK,    /* the whole stack, "(no frames)" without */
	AS_GROUP_CONTEXT,  /* compile context and user metadata,
			    * "(no context)" without */
	AS_GROUP_CATEGORY, /* explain only (as_trace_group: the name):
			    * parameters, activations, ... */
	AS_GROUP_LINE,     /* explain only: the line of one source file */
};

/*
 * The group of buffer i of t as text in buf (always terminated, cut to
 * fit); returns buf.
 */
const char *as_trace_group(const struct as_trace *t, uint32_t i,
			   enum as_group_by g, char *buf, size_t len);

/*
 * Input formats are named ("ops", "csv", "json", ...); NULL or "auto"
 * detects by extension, then by content.
 */
bool as_format_known(const char *name);
/* The i-th format's name, NULL past the last. */
const char *as_format_names(size_t i);

/*
 * The format the content of file `path` shows: its first bytes (after gzip
 * or zstd) as detection without a name reads them. NULL when only the text
 * ops format, which takes any text, would (or the file cannot be read).
 * For tools that walk directories, where a name may tell no format.
 */
const char *as_trace_sniff(const char *path);

/*
 * Load a trace from `path`: as_trace_load_opts with `format` and every
 * other option at its default. On success *out is a new trace the caller
 * destroys; on failure returns a negative code and fills `diag`.
 */
int as_trace_load(const char *path, const char *format, struct as_trace **out,
		  struct as_diag *diag);

/* The default limit on an input's bytes (after decompression): 64 GiB. */
#define AS_MAX_INPUT_DEFAULT ((uint64_t)64 << 30)

/*
 * How a trace is read; zeroed, every field is its default.
 * - format: as as_format_known takes it (NULL: detect);
 * - max_input_bytes: the most bytes the input may hold after
 *   decompression (plain input too); past it the load fails naming the
 *   limit. 0 means AS_MAX_INPUT_DEFAULT, UINT64_MAX no limit.
 */
struct as_load_options {
	const char *format;
	uint64_t max_input_bytes;
	/* Where a stream read twice is copied (front ends pass $TMPDIR);
	 * NULL or "": /tmp. */
	const char *spool_dir;
};

/*
 * Load a trace from `path` with options `o` (NULL: the defaults). "-" is
 * standard input; a FIFO or a pipe (/dev/stdin, a shell's <(...)) is read
 * as a stream, in any format: what a reader reads twice is copied once
 * to an unlinked temporary file in o->spool_dir (else /tmp). Otherwise as
 * as_trace_load.
 */
int as_trace_load_opts(const char *path, const struct as_load_options *o,
		       struct as_trace **out, struct as_diag *diag);

/*
 * A limit on input bytes as text into *out: a count with an optional
 * binary unit (K, M, G, T, P, E: 64G is 64 GiB), or "none" (UINT64_MAX).
 * AS_OK, or AS_EINVAL (also for 0 and past 2^64 - 1).
 */
int as_parse_max_input(const char *text, uint64_t *out);

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
struct as_builder;
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

/* Parse a trace from memory; `name` is used in diagnostics. */
int as_trace_parse(const char *name, const char *data, size_t len,
		   const char *format, struct as_trace **out,
		   struct as_diag *diag);

void as_trace_destroy(struct as_trace *t);

/*
 * The trace's allocations and frees: its events without case starts and
 * queries, the "events" that replay's table and JSON show. O(n).
 */
uint64_t as_trace_alloc_free_events(const struct as_trace *t);

/*
 * The lower bound: the largest total size of buffers live at one time
 * (frees before allocations at equal times). Buffers living inside another
 * (aliases) take no space of their own. Address spaces are separate
 * memories: with several, the bound is the sum of each space's bound.
 */
uint64_t as_trace_lower_bound(const struct as_trace *t);

/* The lower bound of one address space. */
uint64_t as_trace_lower_bound_space(const struct as_trace *t, uint16_t space);

/*
 * Every space's lower bound in one pass over the events: out[s] for s below
 * t->nspaces, equal to as_trace_lower_bound_space(t, s). Returns 0 or
 * AS_ENOMEM.
 */
int as_trace_lower_bound_spaces(const struct as_trace *t, uint64_t *out);

/*
 * The real address of recorded offset `offset` of `space` through the
 * trace's address map: true with *addr set when a range holds the offset;
 * false (and *addr untouched) when the trace has no map or the offset lies
 * in a shrunk gap. O(log n).
 */
bool as_trace_address_of(const struct as_trace *t, uint16_t space,
			 uint64_t offset, uint64_t *addr);

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

/* The buffer that buffer `buffer` replaced through realloc, or AS_NONE.
 * O(log n) over the trace's links. */
uint32_t as_trace_realloc_of(const struct as_trace *t, uint32_t buffer);

/*
 * Building traces in code (generators, tests, parsers). Buffers are appended
 * in event order; the builder checks names, sizes and times.
 */
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

/* ---- Plans ---- */


/*
 * A step of a search that yielded a plan: its label, the peak of that
 * plan, and when it was recorded (ms since the strategy began, time spent
 * waiting for another thread's plan excluded), so a run's rounds are its
 * quality-over-time curve.
 */
struct as_round {
	char label[48];         /* e.g. the order metric of a tuning round */
	uint64_t peak;
	double ms;
};

/*
 * A plan: one offset per buffer (AS_NO_OFFSET when the strategy failed it),
 * and optionally per buffer the space it was placed in, the chunk it took
 * (online allocators: chunk >= size) and the buffer it was placed inside.
 */
/*
 * Where a model of an allocator leaves the recording it replays
 * (cuda-caching on a PyTorch snapshot with a trace): the first allocation,
 * in time order, that the model put in another block than the recorded
 * allocator did, both sides of it, and how many allocations agree.
 */
enum as_div_kind {
	AS_DIV_NONE,          /* every allocation compared agrees */
	AS_DIV_OUT_OF_MEMORY, /* the model could not place it */
	AS_DIV_POOL,          /* in the other pool (small: up to 1 MiB) */
	AS_DIV_NEW_SEGMENT,   /* one side reserved a segment for it, the
			       * other took a cached block */
	AS_DIV_SEGMENT_SIZE,  /* in segments of different sizes */
	AS_DIV_BLOCK,         /* in another segment of the same size: another
			       * free block chosen */
	AS_DIV_OFFSET,        /* in the same segment at another offset */
};

/* One side: the block's segment. */
struct as_div_side {
	uint64_t segment;      /* its recorded address (a trace offset,
				* as_trace_address_of gives the real one);
				* AS_NO_OFFSET: none the recording had */
	uint64_t segment_size; /* 0: no block; expandable: bytes mapped */
	uint64_t offset;       /* the block in it (expandable: from the
				* range's base) */
	bool small;            /* small pool */
	bool new_segment;      /* reserved for this allocation */
	bool expandable;
};

struct as_divergence {
	uint64_t compared;     /* allocations compared */
	uint64_t agree;        /* in the same segment at the same offset */
	uint64_t same_place;   /* in a segment of the recorded size at the
				* recorded offset (blocks_reproduced) */
	enum as_div_kind kind;
	uint32_t buffer;       /* the first that differs, AS_NONE: none */
	uint16_t space;
	uint64_t time;         /* its allocation's time step */
	struct as_div_side model, recorded;
	char cause[200];       /* what probably made them part, a sentence */
};

/* "segment size", "block chosen", ...: what differs, in words. */
const char *as_div_kind_name(enum as_div_kind k);

/*
 * A certified lower bound of one address space (strategy strip): no plan of
 * the space's buffers peaks below `bound`. The proof is a sub-problem: some
 * of the space's buffers (`buffers`, each with a lifetime inside its own:
 * a relaxation, since any plan of the space places them apart) that a
 * completed exact search showed has no placement of peak bound - 1 or
 * lower. Without buffers the bound is the load (the most bytes live at
 * once), which needs no search.
 */
struct as_cert_buffer {
	uint32_t id;            /* the trace buffer's index */
	uint8_t align_log2;
	uint64_t size;
	uint64_t start, end;    /* [start, end) within the buffer's lifetime */
};

struct as_certificate {
	uint16_t space;
	uint64_t load;          /* the space's most bytes live at once */
	uint64_t bound;         /* certified: every plan peaks at least here */
	uint64_t nodes;         /* search nodes the proof took */
	uint32_t nbuffers;
	struct as_cert_buffer *buffers; /* owned; NULL when nbuffers is 0 */
};

/*
 * An out of memory inside an allocator model (cuda-caching): the request,
 * what the allocator held then, and why it failed. Size classes of the
 * cached free blocks: as_oom_class_name.
 */
#define AS_OOM_CLASSES 5
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
/* "<=1 MiB", "1-10 MiB", "10-100 MiB", "100 MiB-1 GiB", ">=1 GiB"; "?"
 * past the last. */
const char *as_oom_class_name(unsigned k);

struct as_plan {
	uint32_t nbuffers;
	uint64_t *offset;
	uint16_t *space;        /* NULL: the buffer's own space */
	uint64_t *chunk;        /* NULL: chunk == size */
	uint32_t *alias_of;     /* NULL: the trace's aliases */
	uint64_t *space_capacity; /* nspaces entries, NULL: the trace's */
	const char **space_name;  /* nspaces entries (static strings), or NULL:
				   * the trace's names */
	uint16_t nspaces;
	struct as_stat *stats;
	uint32_t nstats;
	struct as_round *rounds;
	uint32_t nrounds;
	double plan_ms;
	/*
	 * Optional, per buffer: the reserved segment an allocator placed the
	 * buffer in (its size, and the buffer's offset inside it; size 0:
	 * none). NULL when the strategy has no segments.
	 */
	uint64_t *segment_size;
	uint64_t *segment_offset;
	/* Remarks of the strategy (disagreements with a recording, ...). */
	char **notes;
	uint32_t nnotes;
	/* Where the model leaves the recording it replays; NULL: the
	 * strategy compared itself with none (owned by the plan). */
	struct as_divergence *divergence;
	/* Certified lower bounds, one per space planned (owned); NULL: the
	 * strategy proves none. */
	struct as_certificate *certs;
	uint16_t ncerts;
	/* Out of memory as the strategy's model saw it (as_plan_oom_add;
	 * owned), the first few per space; NULL: none or no model. */
	struct as_plan_oom *ooms;
	uint32_t nooms;
};

struct as_plan *as_plan_create(const struct as_trace *t);
void as_plan_destroy(struct as_plan *p);
/*
 * Free p's per-buffer arrays (offsets, spaces, chunks, aliases, segments),
 * keeping what sums it up (stats, rounds, notes, spaces, plan_ms), for a
 * caller done with the offsets: a summary of a 10^7-buffer plan costs
 * nothing per buffer. nbuffers becomes 0.
 */
void as_plan_drop_buffers(struct as_plan *p);
/* A copy of every array and remark of p, or NULL when memory ran out. */
struct as_plan *as_plan_copy(const struct as_plan *p);
/* Allocate the optional arrays (filled with "same as trace" values). */
int as_plan_want_chunks(struct as_plan *p);
int as_plan_want_spaces(struct as_plan *p, const struct as_trace *t,
			uint16_t nspaces);
int as_plan_want_aliases(struct as_plan *p, const struct as_trace *t);
/* Allocate segment_size and segment_offset (zero: no segment). */
int as_plan_want_segments(struct as_plan *p);
/* Add a remark (copied; at most 64 are kept, later ones are counted). */
int as_plan_note(struct as_plan *p, const char *text);
/* Add an out of memory (copied). AS_ENOMEM. */
int as_plan_oom_add(struct as_plan *p, const struct as_plan_oom *o);
/*
 * A remark that starts with AS_NOTE_CAPACITY tells a memory limit the run
 * used and where it came from ("capacity: cuda:0: 61111009280 B (56.9 GiB)
 * from ..."): an option, the trace, or what a recording shows. Runs
 * without a limit have none. replay's table prints these remarks.
 */
#define AS_NOTE_CAPACITY "capacity: "
/* That remark for limit l of the memory called `name` (nothing when
 * unlimited, once per plan); `option` names the option when it came from
 * one ("total=17179869184"). */
int as_plan_note_limit(struct as_plan *p, const char *name,
		       const char *option, const struct as_limit *l);
/* The name of `space` in t, "space" when it has none. */
const char *as_trace_space_name(const struct as_trace *t, uint16_t space);
/* Record a statistic; `key` must outlive the plan (a literal). */
int as_plan_stat(struct as_plan *p, const char *key, double value);
int as_plan_stat_int(struct as_plan *p, const char *key, uint64_t value);
int as_plan_round(struct as_plan *p, const char *label, uint64_t peak);
/*
 * Add certificate c to p's: p takes c->buffers over (also when it fails:
 * they are freed then). Returns 0 or AS_ENOMEM.
 */
int as_plan_certify(struct as_plan *p, struct as_certificate *c);
/* The certificate of `space` among p's; NULL when the plan has none. */
const struct as_certificate *as_plan_certificate(const struct as_plan *p,
						 uint16_t space);
/*
 * What certificate c says of a plan peaking at `peak`, in words, into buf
 * (n bytes): "optimal" when the peak is at the bound, else "<= X.XX% above
 * optimal". Returns buf.
 */
char *as_certificate_words(const struct as_certificate *c, uint64_t peak,
			   char *buf, size_t n);
/* Free an array of n certificates and their buffers (NULL: nothing). */
void as_certificates_free(struct as_certificate *c, uint32_t n);
/*
 * Read every certificate of a file `replay --json` wrote (each result's
 * "certificates") into *out (n of them, caller frees with
 * as_certificates_free); only the ones with a sub-problem. Returns 0 or a
 * negative code with diag filled (FILE:LINE: what is wrong).
 */
int as_certificates_load(const char *path, struct as_certificate **out,
			 uint32_t *n, struct as_diag *diag);
/*
 * Whether certificate c describes a relaxation of trace t: every buffer
 * exists in c's space with the same size, an alignment at least c's and a
 * lifetime holding c's. Returns 0, or AS_EINVAL with diag saying which
 * buffer differs and how.
 */
int as_certificate_fits(const struct as_trace *t,
			const struct as_certificate *c, struct as_diag *diag);
/*
 * Re-solve c's sub-problem from its buffers alone with the exact search:
 * 1 when no placement of peak bound - 1 exists (the bound holds), 0 when
 * one does (it does not), AS_ELIMIT when neither was settled within
 * limit_ms milliseconds or max_nodes search nodes (0: no limit),
 * AS_EINVAL for a sub-problem that is no problem (an empty lifetime, a
 * zero size, more than 6000 buffers) or out of the search's range (a
 * bound past 2^63, an alignment past 2^62), AS_ENOMEM. *nodes (may be
 * NULL) gets the effort.
 */
int as_certificate_verify(const struct as_certificate *c, double limit_ms,
			  uint64_t max_nodes, uint64_t *nodes);

static inline uint16_t as_plan_space_of(const struct as_plan *p,
					const struct as_trace *t, uint32_t i)
{
	return p->space ? p->space[i] : t->buffers[i].space;
}

static inline uint32_t as_plan_alias_of(const struct as_plan *p,
					const struct as_trace *t, uint32_t i)
{
	return p->alias_of ? p->alias_of[i] : t->buffers[i].alias_of;
}

/* The name of a plan's space (its own, else the trace's, else "space"). */
const char *as_plan_space_name(const struct as_plan *p,
			       const struct as_trace *t, uint16_t space);

/*
 * Largest offset + size over placed buffers in `space`; with -1, the sum of
 * that over the plan's spaces (with one space: the largest offset + size).
 */
uint64_t as_plan_peak(const struct as_plan *p, const struct as_trace *t,
		      int space);
/*
 * Every space's peak in one pass over the buffers: out[s] for s below
 * p->nspaces, equal to as_plan_peak(p, t, s).
 */
void as_plan_peaks(const struct as_plan *p, const struct as_trace *t,
		   uint64_t *out);
/* ---- Moments: when a plan peaks, when the most bytes are live ---- */

/* Every space at once, where a function takes a space index. */
#define AS_ALL_SPACES (-1)

struct as_moment {
	uint64_t time;        /* trace time units */
	uint64_t live_bytes;  /* bytes live at `time` (aliases take none) */
	uint64_t live;        /* buffers live at `time` */
	uint64_t top;         /* the plan's top address (peak); for the
				 trace: live_bytes */
	uint32_t top_buffer;  /* a buffer reaching the top, live at time;
				 AS_NONE for the trace */
};

/*
 * The trace's peak moment: the earliest time with the most bytes live (in
 * `space`, or every space with AS_ALL_SPACES), live meaning start <= time
 * < end, after every start and end at that time; aliases take no bytes.
 * `replay --json` gives it as `lower_bound_time`, and `explain` explains
 * it. Returns 0 (out filled), 1 when no buffer of positive size is ever
 * live, or a negative AS_E* code. O(n log n), O(n) when the events are in
 * time order.
 */
int as_trace_peak_moment(const struct as_trace *t, int space,
			 struct as_moment *out);

/*
 * The peak moment of a plan in `space` (AS_ALL_SPACES: every buffer, for
 * single-space plans): within the lives of the buffers that reach the
 * plan's top address (offset + size, placed, not aliases), the earliest
 * time with the most bytes live in that space; `peak_time` in the JSON.
 * Returns as above (1: nothing placed). O(n log n).
 */
int as_plan_peak_moment(const struct as_trace *t, const struct as_plan *p,
			int space, struct as_moment *out);

/* Number of non-empty allocations the strategy failed. */
uint32_t as_plan_failed(const struct as_plan *p, const struct as_trace *t);

/* Read a plan CSV (id,lower,upper,size,offset) matching the trace's buffers. */
int as_plan_read_csv(const struct as_trace *t, const char *path,
		     struct as_plan **out, struct as_diag *diag);
/*
 * Write the plan CSV: header `id,lower,upper,size,offset`, trace order; plans
 * with segments add the columns `segment_size,segment_offset` (empty when the
 * buffer has none).
 */
int as_plan_write_csv(const struct as_plan *p, const struct as_trace *t,
		      FILE *f);

/* ---- Validation ---- */

enum as_violation_kind {
	AS_V_OVERLAP,      /* a and b share addresses while both live */
	AS_V_ALIGNMENT,    /* a's offset breaks its alignment */
	AS_V_CAPACITY,     /* a ends beyond its space's capacity */
	AS_V_ALIAS,        /* a lies outside the buffer it is placed inside */
	AS_V_OVERFLOW,     /* offset + size of a overflows 64 bits */
};

struct as_violation {
	enum as_violation_kind kind;
	uint32_t a, b;     /* buffer indices; b is AS_NONE unless overlap */
};

struct as_report {
	bool valid;
	uint64_t violations;      /* how many were found in all */
	uint64_t overlaps;        /* how many of them are overlaps */
	struct as_violation first[16]; /* the first ones, in sweep order */
	uint32_t nfirst;
};

/*
 * Prove that no two buffers whose lifetimes overlap share an address (in the
 * same space, unless one lies inside the other as its alias), that offsets
 * honour alignment and capacities hold. Failed allocations are skipped.
 * Independent of every strategy; O(n log n).
 */
int as_validate(const struct as_trace *t, const struct as_plan *p,
		struct as_report *out);

/* Describe violation `v` in words into buf; returns buf. */
const char *as_violation_text(const struct as_trace *t,
			      const struct as_plan *p,
			      const struct as_violation *v, char *buf,
			      size_t len);

/* ---- Strategies ---- */

struct as_option_desc {
	const char *key;
	const char *def;        /* default value as text */
	const char *help;
	/*
	 * Options that cost time (strip's budget_ms): a trace's own `config`
	 * may lower them, not raise them. NULL: any value. "": a number, at
	 * most `def` from a config (more reads as `def`). Else the values
	 * besides `def` a config may choose, space separated (the others
	 * read as `def`). The command line may give any value.
	 */
	const char *costly;
};

struct as_strategy_info {
	const char *name;
	const char *summary;
	bool online;
	const struct as_option_desc *options; /* terminated by a NULL key */
};

/* Registered strategies, in registry order. */
size_t as_strategy_count(void);
const struct as_strategy_info *as_strategy_at(size_t i);
/*
 * The running time of strategy i in words ("O(n log n): ..."), n being the
 * trace's buffers or events; a static string, NULL past the end.
 */
const char *as_strategy_time(size_t i);
const struct as_strategy_info *as_strategy_find(const char *name);
/* The strategy a spec names (the NAME of "NAME[:k=v,...]"), NULL for none:
 * the one reading of a spec's name (registry.c). */
const struct as_strategy_info *as_strategy_find_by_spec(const char *spec);

/* Whether the strategy can plan this trace (e.g. `recorded` needs offsets). */
bool as_strategy_applies(const char *name, const struct as_trace *t);
/*
 * Whether the strategy is in the default set for this trace (what replay
 * without -s runs): it applies, and its running time at this trace's size
 * is what `allocscope strategies` promises for the default set.
 */
bool as_strategy_by_default(const char *name, const struct as_trace *t);

/* A sink for text an online allocator produces (dumps, region requests). */
typedef void (*as_emit_fn)(void *ctx, const char *line);

/*
 * How strategies run: a runner runs specs on one trace, one at a time or
 * several at once on threads, and owns what those runs share: the plans a
 * strategy starts from (strip from greedy-size's, made once per runner),
 * the threads, and a cancel flag another thread may set.
 */
struct as_runner_options {
	/*
	 * Strategies as_runner_run_many runs at once, this thread among them
	 * (1-64); 0: one per processor, one at a time on traces of more than
	 * 4,000,000 buffers, where memory is what limits a run. The plans do
	 * not depend on it.
	 */
	unsigned jobs;
	/*
	 * Work allowed to an exact baseline (greedy-size, greedy-breadth,
	 * bestfit, also as strip's starting plans) before it is left out with
	 * AS_ELIMIT: its plan stays out rather than take longer. 0: no limit,
	 * every run ends. The default set's is as_strategy_step_limit.
	 */
	uint64_t step_limit;
	as_emit_fn emit;          /* chunk maps, dumps; NULL: none. With
				   * emit, runs go one at a time. */
	void *ctx;
	bool dump_at_end;         /* emit the allocator's state at the end */
	bool check_every_event;   /* run the allocator's own check each event */
	/*
	 * The cancel flag of the runs made with these options, the caller's
	 * to set from any thread (as_runner_cancel sets it too); NULL: the
	 * runner's own. It is how a caller cancels as_strategy_run,
	 * as_strategy_walk_at and as_strategy_blocks_at, which make their
	 * runner inside, and how one flag stops several runners at once.
	 */
	atomic_bool *cancel;
};

/*
 * The step limit of the default set (replay without -s) on this trace,
 * about 4 n log2(n)^2 for n buffers and never less than what 13-40 s of
 * work takes: an exact baseline that needs more is left out of the default
 * set; named with -s it runs to the end.
 */
uint64_t as_strategy_step_limit(const struct as_trace *t);

struct as_runner;

/*
 * A runner for trace t with options o (NULL: all defaults; copied). The
 * trace must outlive it and stay unchanged meanwhile. One call at a time
 * runs on a runner; only as_runner_cancel may come from another thread.
 */
int as_runner_create(const struct as_trace *t,
		     const struct as_runner_options *o, struct as_runner **out);
/* Frees the runner and the plans it kept; NULL is fine. */
void as_runner_destroy(struct as_runner *r);

/*
 * Run SPEC ("NAME[:k=v[,k=v]...]") on the runner's trace: plan, resolve
 * aliases, time it (plan_ms). Unknown names and options, values out of
 * range and traces the strategy cannot handle fail with diag filled (exit
 * status 2 material); AS_ELIMIT past the step limit; AS_ECANCELED after
 * as_runner_cancel. A plan that fails validation is still returned:
 * validation is separate. *out is the caller's.
 */
int as_runner_run(struct as_runner *r, const char *spec, struct as_plan **out,
		  struct as_diag *diag);

/*
 * Optional hooks of as_runner_run_many, called on the thread that runs
 * spec i: start once before it starts (it may block, one call at a time;
 * false starts nothing more), done after it ended, with its error and its
 * plan (NULL when it failed), which done then owns.
 */
struct as_many_hooks {
	bool (*start)(void *ctx, size_t i);
	void (*done)(void *ctx, size_t i, int err, struct as_plan *plan,
		     const struct as_diag *diag);
	void *ctx;
};

/*
 * as_runner_run for each of the n specs, on up to the options' jobs
 * threads: out[i] and diags[i] are spec i's, out[i] NULL when it failed,
 * was not started, or went to mh->done. Returns AS_OK, or the error of the
 * first spec that failed. The plans are the ones one run at a time gives;
 * runs side by side hold their memory at once. mh may be NULL.
 */
int as_runner_run_many(struct as_runner *r, const char *const *specs,
		       size_t n, const struct as_many_hooks *mh,
		       struct as_plan **out, struct as_diag *diags);

/*
 * Stop the runner's runs from any thread: each stops at its next check
 * (well within a second) with AS_ECANCELED and frees what it held, and
 * every later run on this runner fails so at once.
 */
void as_runner_cancel(struct as_runner *r);

/*
 * One run on a runner of its own: as_runner_create, run, destroy. To stop
 * it from another thread, give o->cancel and set it: AS_ECANCELED, nothing
 * held.
 */
int as_strategy_run(const char *spec, const struct as_trace *t,
		    const struct as_runner_options *o, struct as_plan **out,
		    struct as_diag *diag);

/*
 * A block of an online allocator's memory as its walk reports it, in address
 * order: a chunk of a region (bfc), a block of a memory level (tiered), a
 * node of the list (npu-list). Addresses are the allocator's offsets.
 */
struct as_block {
	uint64_t offset, size;
	uint64_t requested;     /* bytes the holder asked for (bfc keeps a
				 * free chunk's last value), else 0 */
	uint32_t buffer;        /* a buffer it holds, or AS_NONE */
	int32_t bin;            /* free list or size bin, -1 when none */
	const char *region;     /* level or region label, or NULL */
	const char *symbol;     /* address symbol mapped there, or NULL */
	bool in_use;
};

/* Visit one block of `space`; return false to stop the walk. */
typedef bool (*as_block_fn)(void *ctx, uint16_t space,
			    const struct as_block *b);

/*
 * The state of online allocator SPEC at time `time`: replay the trace's
 * events before `time` (the case in force then starts the allocator afresh,
 * as in a run), then walk every space's allocator in address order. The
 * replay is a run like any other (o: NULL for defaults; only o->cancel is
 * read): setting o->cancel stops it with AS_ECANCELED. AS_EUNSUPPORTED
 * (diag says so) for offline planners and allocators without a walk.
 */
int as_strategy_walk_at(const char *spec, const struct as_trace *t,
			const struct as_runner_options *o, uint64_t time,
			as_block_fn visit, void *ctx, struct as_diag *diag);

/*
 * The one walk to a moment: the blocks of `space` that online allocator
 * SPEC holds just after the events at `time` (as_strategy_walk_at at time
 * + 1), in address order, region and symbol NULL (they are the
 * allocator's). At a plan's peak moment (as_plan_peak_moment) it is what
 * explain's fragmentation and the renderer's blocks read; the viewer's
 * state panel reads it at the mouse's time. *blocks (free it) and *n are
 * written on success only; errors as as_strategy_walk_at's.
 */
int as_strategy_blocks_at(const char *spec, const struct as_trace *t,
			  const struct as_runner_options *o, uint64_t time,
			  uint16_t space, struct as_block **blocks, size_t *n,
			  struct as_diag *diag);

/* ---- Output helpers ---- */

/*
 * An input file, opened for reading: a regular file (the open never
 * blocks), a FIFO or a pipe (the open waits for a writer, as any reader's
 * does), or "-", standard input (a duplicate of descriptor 0, whatever it
 * is but a directory). A device, a socket or a directory fails at once,
 * before a byte is read ("not a regular file but a directory").
 * On success *f is the open file; the caller closes it. Otherwise diag
 * (when not NULL) gets the reason; its file name is the caller's to set.
 */
int as_open_input(const char *path, FILE **f, struct as_diag *diag);

/*
 * An output written whole or not at all, without damaging what its path
 * names:
 * - "-", /dev/stdout and /dev/stderr write to stdout and stderr; /dev/fd/N
 *   and /proc/self/fd/N to that descriptor of the process (a duplicate);
 * - a symbolic link is followed (to /dev/stdout too): its target is
 *   written, the link stays;
 * - a FIFO or a character device (/dev/null, a terminal) is written
 *   directly, never replaced;
 * - a regular file, or a new one, is written to a temporary file beside it
 *   (a short hidden name, ".as" and 8 characters, so any name the file
 *   system takes works) that as_atomic_commit renames over it, keeping the
 *   file's permissions; as_atomic_abort removes it.
 * A directory, a block device or a socket is refused (errno EISDIR, EPERM,
 * ENXIO). Errors are AS_EIO or AS_ENOMEM with errno telling why, for the
 * caller's message; commit sets errno the same way.
 */
struct as_atomic;
int as_atomic_open(const char *path, struct as_atomic **out, FILE **f);
int as_atomic_commit(struct as_atomic *a);   /* closes and renames */
void as_atomic_abort(struct as_atomic *a);   /* closes and removes; NULL ok */
/* Remove every temporary file open now: async-signal-safe, for the handler
 * of a terminating signal (the final files are left untouched). */
void as_atomic_remove_pending(void);

/*
 * An existing regular file whose directory takes no new file (its mode, an
 * immutable flag) is written in place: the output is staged in an unlinked
 * temporary file and copied over the file's bytes at commit, so a run that
 * fails leaves the file as it was, but a copy that fails (a full disk)
 * leaves it cut short. as_output_check tells this beforehand.
 */
#define AS_OUTPUT_IN_PLACE 1u

/*
 * Whether the noutputs outputs (NULL entries skipped) may be written by a
 * run that reads `inputs` (ninputs paths; "-" is standard input, and as an
 * output standard output): the names are followed through symbolic links
 * (to /dev/stdout and /dev/fd/N too) and regular files compared by device
 * and inode, names that do not exist yet by their directory (device and
 * inode) and file name. AS_OK; AS_EINVAL for the first output that is one
 * of the inputs (diag: "is an input of this run"); AS_EIO when an output's
 * name cannot be followed (a link loop, a directory that cannot be
 * searched: diag says why). diag's file is that output's path. how (when
 * not NULL, noutputs entries) gets AS_OUTPUT_IN_PLACE for each output that
 * will not be written atomically. Call it before any work.
 */
int as_output_check(const char *const *outputs, size_t noutputs,
		    const char *const *inputs, size_t ninputs, unsigned *how,
		    struct as_diag *diag);

/*
 * Flush and close a standard stream at exit, as coreutils' close_stream:
 * 0, or the errno of the failure when a write failed before or now (a
 * full disk, a reader gone with SIGPIPE ignored, a descriptor closed with
 * >&- when something was written to it).
 */
int as_close_stream(FILE *f);

/*
 * How as_escape writes a name:
 * - AS_ESCAPE_TEXT, for a terminal: bytes a terminal acts on rather than
 *   shows (C0 and C1 controls, DEL, the bidi overrides and isolates) and
 *   bytes that are not UTF-8 become \xNN, one per byte;
 * - AS_ESCAPE_MARKDOWN, for Markdown text and table cells: that, and
 *   < > & as entities, \ ` * _ [ ] | ~ behind a backslash, so no name
 *   becomes HTML, a link, emphasis or a new table column;
 * - AS_ESCAPE_MARKDOWN_CODE, inside a code span (which shows HTML and
 *   emphasis as text): that of AS_ESCAPE_TEXT, and | as \| for tables. A
 *   code span cannot hold a backtick: the caller writes a name that has
 *   one as AS_ESCAPE_MARKDOWN text.
 */
enum as_escape_how {
	AS_ESCAPE_TEXT,
	AS_ESCAPE_MARKDOWN,
	AS_ESCAPE_MARKDOWN_CODE,
};

/*
 * Write `s` escaped into buf (len bytes with the NUL, as snprintf: cut
 * between whole escapes and characters when it does not fit; buf may be
 * NULL when len is 0). Returns the length the whole of it takes, without
 * the NUL.
 */
size_t as_escape(char *buf, size_t len, const char *s, enum as_escape_how how);

/* Write `s` as a JSON string literal (quotes and escapes). */
void as_json_string(FILE *f, const char *s);

/* Human units: 1536 -> "1.5 KiB". */
const char *as_human_bytes(uint64_t n, char *buf, size_t len);

#endif
