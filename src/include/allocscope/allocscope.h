/*
 * allocscope: replay memory-allocation traces through allocation strategies,
 * prove the resulting plans overlap-free, and draw them.
 *
 * For programs that use the library: load a trace, plan it, validate the
 * plan, run and cancel runners, walk an online allocator. Beside it:
 * compare.h, explain.h, render.h, certified.h (proved bounds), cuda.h
 * (cuda-caching against its recording), io.h (files and text for front
 * ends). Readers, strategies and writers of the library include build.h.
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

/* ---- Errors ----
 * What can fail returns 0 or a negative code of one table; what fails on
 * user input also fills a caller-owned diagnostic. */

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

/* `line` is 0 when the problem has no line (a file that cannot be opened). */
struct as_diag {
	char file[256];
	uint64_t line;
	char msg[512];
	int err;        /* the error it describes (AS_E*) */
};

/* Write "FILE:LINE: msg" (or "FILE: msg") into buf; returns buf. */
const char *as_diag_text(const struct as_diag *d, char *buf, size_t len);

/* ---- The trace ----
 * What a loaded trace holds, read-only: buffers in allocation order, address
 * spaces, what some recordings add. Events, cases, marks, segments, stages
 * and graph operators are build.h's, the library's to make and read. */

#define AS_NONE UINT32_MAX          /* no index (alias parent, symbol, ...) */
#define AS_NO_OFFSET UINT64_MAX     /* no address: not recorded, or failed */

/* A buffer is one allocation: a rectangle whose x extent is its lifetime
 * [start, end) and whose y extent an offset chosen by a strategy plus size. */
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

#define AS_NAME_MAX 1023 /* the longest buffer name any format accepts */

/* An address space: the default pool, a named pool or level, or a core. */
struct as_space {
	const char *name;
	uint64_t capacity;      /* 0: unlimited */
};

/* A named figure: plan statistics, input counts. */
struct as_stat {
	const char *key;        /* static string */
	double value;
	bool integer;
};

/* What some inputs know of a buffer: what the program asked for (size minus
 * it is the allocator's rounding) and when it let go of it, at or before
 * `end` (PyTorch frees a block only when its stream is done with it). */
struct as_buffer_info {
	uint64_t requested;
	uint64_t free_requested;
};

/* Defined in build.h (as_numa: numa.h). */
struct as_event; struct as_case; struct as_op; struct as_tensor_shape;
struct as_mark; struct as_segment; struct as_realloc; struct as_addr_range;
struct as_stage; struct as_numa;

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
	const struct as_numa *numa; /* bundle structure (allocscope/numa.h) */
	/* Recorded by some inputs (snapshots, malloc and heap traces); each
	 * is NULL (count 0) when the input has none. */
	uint64_t *clock;        /* per time step 0..end_time: microseconds since
				 * the first entry, nondecreasing */
	struct as_mark *marks;  /* in time order */
	uint32_t nmarks;
	struct as_segment *segments; /* in start order */
	uint32_t nsegments;
	struct as_buffer_info *info; /* per buffer; NULL: requested = size,
				      * free_requested = end */
	struct as_realloc *reallocs; /* by buffer, one at most each */
	uint32_t nreallocs;
	struct as_stat *input_stats; /* what the reader met and set aside
				      * (frees of unknown addresses, ...) */
	uint32_t ninput_stats;
	struct as_addr_range *addr_map; /* by space, then offset; NULL:
					 * offsets are not addresses */
	uint32_t naddr_map;
	struct as_stage *stages; /* by space, then start, longer first */
	uint32_t nstages;
	struct as_trace_private *priv;
};

/* ---- Loading a trace ----
 * A file, standard input or memory to a struct as_trace, in any format the
 * library reads; the caller destroys the trace. */

/* Formats are named ("ops", "csv", "json", ...); NULL or "auto" detects by
 * extension, then by content. as_format_names(i): NULL past the last. */
bool as_format_known(const char *name);
const char *as_format_names(size_t i);

/* The format the content of `path` shows (its first bytes, after gzip or
 * zstd), for tools that walk directories; NULL when only the text ops
 * format, which takes any text, would (or the file cannot be read). */
const char *as_trace_sniff(const char *path);

/* Load a trace from `path`: as_trace_load_opts with `format` and every
 * other option at its default. On success *out is a new trace the caller
 * destroys; on failure returns a negative code and fills `diag`. */
int as_trace_load(const char *path, const char *format, struct as_trace **out,
		  struct as_diag *diag);

/* The default limit on an input's bytes (after decompression): 64 GiB. */
#define AS_MAX_INPUT_DEFAULT ((uint64_t)64 << 30)

/* How a trace is read; zeroed, every field is its default. */
struct as_load_options {
	const char *format;       /* as as_format_known takes it (NULL: detect) */
	/* The most bytes the input may hold decompressed, past which the
	 * load fails; 0: AS_MAX_INPUT_DEFAULT, UINT64_MAX: no limit. */
	uint64_t max_input_bytes;
	/* Where a stream read twice is copied (front ends pass $TMPDIR);
	 * NULL or "": /tmp. */
	const char *spool_dir;
};

/* With options `o` (NULL: the defaults). "-" is standard input; a FIFO or
 * a pipe (/dev/stdin, a shell's <(...)) is read as a stream, in any format:
 * what a reader reads twice is copied once to an unlinked temporary file in
 * o->spool_dir. */
int as_trace_load_opts(const char *path, const struct as_load_options *o,
		       struct as_trace **out, struct as_diag *diag);

/* A limit on input bytes as text: a count with an optional binary unit (K,
 * M, G, T, P, E: 64G is 64 GiB), or "none" (UINT64_MAX). AS_OK, or
 * AS_EINVAL (also for 0 and past 2^64 - 1). */
int as_parse_max_input(const char *text, uint64_t *out);

/* Parse a trace from memory; `name` is used in diagnostics. */
int as_trace_parse(const char *name, const char *data, size_t len,
		   const char *format, struct as_trace **out,
		   struct as_diag *diag);

void as_trace_destroy(struct as_trace *t);

/* ---- Reading a trace ----
 * Names and stacks of buffers, how they group, the lower bound every plan
 * is measured against, and where recorded offsets really were. */

/* The name of buffer `i`, the one way to read names: malloc traces (mtrace,
 * raw heaptrack) make theirs ("0xADDR#N") all at once on the first call
 * (O(n)), which writes into the trace: not concurrently with other uses of
 * it. NULL when i is out of range or memory runs out. */
const char *as_trace_buffer_name(const struct as_trace *t, uint32_t i);

/* The stack frames of buffer `i` ('\n'-joined, innermost first), or NULL.
 * Buffers with one stack share one string. */
const char *as_trace_buffer_frames(const struct as_trace *t, uint32_t i);

/* How buffers are grouped: live lists, colours, explain's groups. */
enum as_group_by {
	AS_GROUP_BUFFER,   /* no grouping: each buffer */
	AS_GROUP_PREFIX,   /* "layer3.attn.q" -> "layer3.attn"; "t17" -> "t" */
	AS_GROUP_FRAME,    /* the first stack frame, "(no frames)" without */
	AS_GROUP_SIZE,     /* size class: powers of two */
	AS_GROUP_STAGE,    /* the innermost stage at its allocation, "(no stage)" */
	AS_GROUP_STACK,    /* the whole stack, "(no frames)" without */
	AS_GROUP_CONTEXT,  /* compile context and user metadata, "(no context)" */
	AS_GROUP_CATEGORY, /* explain only (as_trace_group: the name):
			    * parameters, activations, ... */
	AS_GROUP_LINE,     /* explain only: the line of one source file */
};

/* The allocations and frees (events without case starts and queries): the
 * "events" that replay's table and JSON show. O(n). */
uint64_t as_trace_alloc_free_events(const struct as_trace *t);

/* The lower bound: the largest total size of buffers live at one time
 * (frees before allocations at equal times); aliases take no space of their
 * own. With several address spaces, the sum of each space's bound. */
uint64_t as_trace_lower_bound(const struct as_trace *t);
uint64_t as_trace_lower_bound_space(const struct as_trace *t, uint16_t space);
/* Every space's in one pass: out[s] for s < t->nspaces. 0 or AS_ENOMEM. */
int as_trace_lower_bound_spaces(const struct as_trace *t, uint64_t *out);

/* The real address of recorded offset `offset` of `space` through the
 * trace's address map: true with *addr set when a range holds it; false
 * (*addr untouched) without a map or in a shrunk gap. O(log n). */
bool as_trace_address_of(const struct as_trace *t, uint16_t space,
			 uint64_t offset, uint64_t *addr);

/* ---- Plans ----
 * What a strategy makes: an offset per buffer and what sums it up (stats,
 * rounds, remarks, certified bounds), and what is asked of it: its peak,
 * when it peaks, what it failed. Strategies fill plans through build.h. */

/* A step of a search that yielded a plan, with that plan's peak and when
 * (ms since the strategy began, waits for another thread's plan left out):
 * a run's rounds are its quality-over-time curve. */
struct as_round {
	char label[48];         /* e.g. the order metric of a tuning round */
	uint64_t peak;
	double ms;
};

struct as_certificate; /* certified.h */
struct as_plan_oom;    /* build.h: a model's out of memory */
struct as_plan_ext;    /* what a strategy attaches for its readers */
/* Size classes of a model's cached free blocks at an out of memory:
 * "<=1 MiB", ..., ">=1 GiB"; "?" past the last. */
#define AS_OOM_CLASSES 5
const char *as_oom_class_name(unsigned k);

/* A plan: one offset per buffer (AS_NO_OFFSET when the strategy failed it),
 * and optionally per buffer the space it was placed in, the chunk it took
 * (online allocators: chunk >= size) and the buffer it was placed inside. */
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
	/* Per buffer, or NULL: the reserved segment an allocator placed it in
	 * (its size, and the offset inside it; size 0: none). */
	uint64_t *segment_size;
	uint64_t *segment_offset;
	char **notes;           /* remarks (disagreements with a recording) */
	uint32_t nnotes;
	/* Certified lower bounds, one per space planned; NULL: none proved. */
	struct as_certificate *certs;
	uint16_t ncerts;
	/* A model's out of memory, the first few per space; NULL: none. */
	struct as_plan_oom *ooms;
	uint32_t nooms;
	/* What the strategy attached, read through the accessor of its own
	 * header (cuda.h); NULL: nothing. Everything here is owned. */
	struct as_plan_ext *ext;
};

struct as_plan *as_plan_create(const struct as_trace *t);
void as_plan_destroy(struct as_plan *p);
/* Free p's per-buffer arrays (offsets, spaces, chunks, aliases, segments),
 * keeping what sums it up (stats, rounds, notes, spaces, plan_ms), for a
 * caller done with the offsets. nbuffers becomes 0. */
void as_plan_drop_buffers(struct as_plan *p);
/* A copy of every array and remark of p, or NULL when memory ran out. */
struct as_plan *as_plan_copy(const struct as_plan *p);

/* A remark that starts so tells a memory limit the run used and where it
 * came from ("capacity: cuda:0: 61111009280 B (56.9 GiB) from ..."). */
#define AS_NOTE_CAPACITY "capacity: "

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

/* Largest offset + size over placed buffers in `space`; with -1, the sum of
 * that over the plan's spaces. as_plan_peaks: every space's, out[s] for
 * s < p->nspaces, in one pass. */
uint64_t as_plan_peak(const struct as_plan *p, const struct as_trace *t,
		      int space);
void as_plan_peaks(const struct as_plan *p, const struct as_trace *t,
		   uint64_t *out);
/* Number of non-empty allocations the strategy failed. */
uint32_t as_plan_failed(const struct as_plan *p, const struct as_trace *t);

#define AS_ALL_SPACES (-1) /* every space, where a function takes one */

struct as_moment {
	uint64_t time;        /* trace time units */
	uint64_t live_bytes;  /* bytes live at `time` (aliases take none) */
	uint64_t live;        /* buffers live at `time` */
	uint64_t top;         /* the plan's top address; the trace's: live_bytes */
	uint32_t top_buffer;  /* a buffer at the top live then; trace: AS_NONE */
};

/* The trace's peak moment: the earliest time with the most bytes live (in
 * `space`, or every space with AS_ALL_SPACES), live meaning start <= time <
 * end, after every start and end at that time; aliases take no bytes:
 * `lower_bound_time` of `replay --json`, what `explain` explains. 0 (out
 * filled), 1 when no buffer of positive size is ever live, or a negative
 * code. O(n log n), O(n) when the events are in time order. */
int as_trace_peak_moment(const struct as_trace *t, int space,
			 struct as_moment *out);

/* A plan's peak moment in `space` (AS_ALL_SPACES: every buffer): within the
 * lives of the buffers at its top address (placed, not aliases), the
 * earliest time with the most bytes live in that space; `peak_time` in the
 * JSON. As above (1: nothing placed). */
int as_plan_peak_moment(const struct as_trace *t, const struct as_plan *p,
			int space, struct as_moment *out);

/* Read a plan CSV (id,lower,upper,size,offset) matching the trace's buffers. */
int as_plan_read_csv(const struct as_trace *t, const char *path,
		     struct as_plan **out, struct as_diag *diag);
/* Write the plan CSV, `id,lower,upper,size,offset` in trace order; plans with
 * segments add `segment_size,segment_offset` (empty for buffers without). */
int as_plan_write_csv(const struct as_plan *p, const struct as_trace *t,
		      FILE *f);

/* ---- Validation ----
 * The proof that a plan is overlap-free, independent of every strategy. */

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

/* No two buffers whose lifetimes overlap share an address (in one space,
 * unless one lies inside the other as its alias), offsets honour alignment,
 * capacities hold. Failed allocations are skipped. O(n log n). */
int as_validate(const struct as_trace *t, const struct as_plan *p,
		struct as_report *out);

/* Describe violation `v` in words into buf; returns buf. */
const char *as_violation_text(const struct as_trace *t,
			      const struct as_plan *p,
			      const struct as_violation *v, char *buf,
			      size_t len);

/* ---- Strategies ----
 * The registered strategies, their options, and which of them apply to a
 * trace and run by default. */

struct as_option_desc {
	const char *key;
	const char *def;        /* default value as text */
	const char *help;
	/* Options that cost time (strip's budget_ms), which a trace's own
	 * `config` may lower, not raise: NULL, any value; "", a number up to
	 * `def`; else the values besides `def` a config may choose, space
	 * separated; others read as `def`. The command line may give any. */
	const char *costly;
};

struct as_strategy_info {
	const char *name;
	const char *summary;
	bool online;
	const struct as_option_desc *options; /* terminated by a NULL key */
};

/* Registered strategies, in registry order. as_strategy_time(i): its
 * running time in words ("O(n log n): ..."), NULL past the end. */
size_t as_strategy_count(void);
const struct as_strategy_info *as_strategy_at(size_t i);
const char *as_strategy_time(size_t i);
const struct as_strategy_info *as_strategy_find(const char *name);
/* The strategy a spec names (the NAME of "NAME[:k=v,...]"), NULL for none:
 * the one reading of a spec's name. */
const struct as_strategy_info *as_strategy_find_by_spec(const char *spec);

/* Whether the strategy can plan this trace (e.g. `recorded` needs offsets). */
bool as_strategy_applies(const char *name, const struct as_trace *t);
/* Whether it is in the default set for this trace (replay without -s): it
 * applies, and its running time at this size is what `strategies` promises. */
bool as_strategy_by_default(const char *name, const struct as_trace *t);

/* ---- Running ----
 * A runner runs specs on one trace, one at a time or several at once on
 * threads, and owns what they share: the plans a strategy starts from
 * (strip from greedy-size's, made once), the threads, a cancel flag. */

/* A sink for text an online allocator produces (dumps, region requests). */
typedef void (*as_emit_fn)(void *ctx, const char *line);

struct as_runner_options {
	/* Strategies as_runner_run_many runs at once, this thread among them
	 * (1-64); 0: one per processor, one at a time on traces of more than
	 * 4,000,000 buffers. The plans do not depend on it. */
	unsigned jobs;
	/* Work allowed to an exact baseline (greedy-size, greedy-breadth,
	 * bestfit, also as strip's starting plans) before it is left out with
	 * AS_ELIMIT. 0: no limit. The default set's: as_strategy_step_limit. */
	uint64_t step_limit;
	as_emit_fn emit;          /* chunk maps, dumps (one run at a time) */
	void *ctx;
	bool dump_at_end;         /* emit the allocator's state at the end */
	bool check_every_event;   /* run the allocator's own check each event */
	/* The runs' cancel flag, the caller's to set from any thread; NULL:
	 * the runner's own. It cancels as_strategy_run, _walk_at and
	 * _blocks_at, and stops several runners at once. */
	atomic_bool *cancel;
};

/* The default set's step limit on this trace, about 4 n log2(n)^2 for n
 * buffers and never less than 13-40 s of work: an exact baseline that needs
 * more is left out of the default set; named with -s it runs to the end. */
uint64_t as_strategy_step_limit(const struct as_trace *t);

struct as_runner;

/* A runner for trace t with options o (NULL: all defaults; copied). The
 * trace must outlive it and stay unchanged meanwhile. One call at a time
 * runs on a runner; only as_runner_cancel may come from another thread. */
int as_runner_create(const struct as_trace *t,
		     const struct as_runner_options *o, struct as_runner **out);
/* Frees the runner and the plans it kept; NULL is fine. */
void as_runner_destroy(struct as_runner *r);

/* Run SPEC ("NAME[:k=v[,k=v]...]") on the runner's trace: plan, resolve
 * aliases, time it (plan_ms). Unknown names and options, values out of
 * range and traces the strategy cannot handle fail with diag filled;
 * AS_ELIMIT past the step limit; AS_ECANCELED after as_runner_cancel. A plan
 * that fails validation is still returned. *out is the caller's. */
int as_runner_run(struct as_runner *r, const char *spec, struct as_plan **out,
		  struct as_diag *diag);

/* Hooks of as_runner_run_many, on the thread that runs spec i: start before
 * it starts (it may block, one call at a time; false starts nothing more),
 * done after it ended, with its error and plan (NULL when it failed), which
 * done then owns. */
struct as_many_hooks {
	bool (*start)(void *ctx, size_t i);
	void (*done)(void *ctx, size_t i, int err, struct as_plan *plan,
		     const struct as_diag *diag);
	void *ctx;
};

/* as_runner_run for each of the n specs, on up to the options' jobs
 * threads: out[i] and diags[i] are spec i's, out[i] NULL when it failed,
 * was not started, or went to mh->done (mh may be NULL). AS_OK, or the
 * error of the first spec that failed. The plans are those of one run at a
 * time; runs side by side hold their memory at once. */
int as_runner_run_many(struct as_runner *r, const char *const *specs,
		       size_t n, const struct as_many_hooks *mh,
		       struct as_plan **out, struct as_diag *diags);

/* Stop the runner's runs from any thread: each stops at its next check
 * (well within a second) with AS_ECANCELED and frees what it held, and
 * every later run on this runner fails so at once. */
void as_runner_cancel(struct as_runner *r);

/* One run on a runner of its own (create, run, destroy); o->cancel stops
 * it from another thread: AS_ECANCELED, nothing held. */
int as_strategy_run(const char *spec, const struct as_trace *t,
		    const struct as_runner_options *o, struct as_plan **out,
		    struct as_diag *diag);

/* ---- Walking an online allocator ----
 * An online allocator's memory at a moment, block by block in address order:
 * explain's fragmentation, the renderer's blocks, the viewer's state panel. */

/* A chunk of a region (bfc), a block of a memory level (tiered), a node of
 * the list (npu-list); addresses are the allocator's offsets. */
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

/* The state of online allocator SPEC at time `time`: replay the events
 * before `time` (the case in force then starts it afresh, as in a run),
 * then walk every space's allocator in address order. The replay is a run
 * (o: NULL for defaults; only o->cancel is read: AS_ECANCELED).
 * AS_EUNSUPPORTED for offline planners and allocators without a walk. */
int as_strategy_walk_at(const char *spec, const struct as_trace *t,
			const struct as_runner_options *o, uint64_t time,
			as_block_fn visit, void *ctx, struct as_diag *diag);

/* The one walk to a moment: the blocks of `space` that SPEC holds just
 * after the events at `time` (as_strategy_walk_at at time + 1), region and
 * symbol NULL. *blocks (free it) and *n are written on success only. */
int as_strategy_blocks_at(const char *spec, const struct as_trace *t,
			  const struct as_runner_options *o, uint64_t time,
			  uint16_t space, struct as_block **blocks, size_t *n,
			  struct as_diag *diag);

#endif
