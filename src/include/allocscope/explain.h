/*
 * allocscope explain: what makes a trace's peak, in the program's own terms.
 *
 * For the trace's own peak (the earliest moment with the most bytes live,
 * per space: the moment `replay --json` gives as lower_bound_time) or a
 * plan's (its peak moment, as_plan_peak_moment), the buffers live then
 * grouped by stack (or frame, annotation stage, compile context, name
 * prefix, size class), largest first, each group with its representative
 * stack: its top user frames, the allocator's left out. Besides: the bytes
 * live at each annotation stage's START and END and the peak inside it,
 * the largest temporaries, the blocks never freed, and for an online
 * allocator's plan the fragmentation at its peak (reserved minus live, the
 * largest free block). Writers give it as text (a terminal), JSON and
 * Markdown (CI job summaries); docs/explain.md describes all three. And
 * two recordings of one program compare group by group (diff --by).
 *
 * Ownership: an as_explain points into the trace it was made from (names,
 * frames, stages), which must outlive it; its own arrays and texts are
 * freed by as_explain_destroy (NULL is fine). Nothing here prints: the
 * writers write to the FILE the caller gives them.
 *
 * Cost: O(n log n) time and O(n) memory in the buffers, whatever the
 * grouping; a plan's fragmentation replays the online allocator once. A
 * heaptrack or mtrace recording explained in one pass as it loads
 * (as_explain_stream_create) costs memory in the blocks live at once.
 */
#ifndef ALLOCSCOPE_EXPLAIN_H
#define ALLOCSCOPE_EXPLAIN_H

#include "allocscope/allocscope.h"
#include "allocscope/compare.h"

/* --rule NAME=REGEX. */
struct as_explain_rule {
	const char *name;
	const char *regex;
};

struct as_explain_options {
	enum as_group_by by;     /* default AS_GROUP_STACK */
	uint32_t top;            /* groups kept per list; 0: every group */
	uint32_t frames;         /* representative frames per group (5) */
	/*
	 * Group by keys with hexadecimal numbers ("0x7f3a...") replaced by
	 * "0x?": addresses of frames without symbols and of mappings differ
	 * between two runs of one program (diff --by does this).
	 */
	bool normalize;
	/*
	 * Frames (POSIX extended regular expressions, or NULL): user_code
	 * says which frames are the user's instead of the built-in rules;
	 * skip_frames, frames that never are. docs/explain.md.
	 */
	const char *user_code;
	const char *skip_frames;
	/* Categories of the user's ahead of the built-in ones (by
	 * category): the first whose regex is found in a frame's file or
	 * function name wins. */
	const struct as_explain_rule *rules;
	uint32_t nrules;
	/* by line: the source file (its path or a suffix of it). */
	const char *line_file;
	/*
	 * Stops an online allocator's replay to its peak (as_explain_plan's
	 * fragmentation) with AS_ECANCELED when set from another thread;
	 * NULL: nothing stops it (struct as_runner_options.cancel).
	 */
	atomic_bool *cancel;
};


/* Defaults: by stack, top 10, 5 frames. */
void as_explain_options_init(struct as_explain_options *o);
/* "stack", "frame", "annotation" (or "stage"), "context", "prefix",
 * "size", "buffer", "category", "line"; AS_EINVAL otherwise. */
int as_group_by_from_name(const char *name, enum as_group_by *out);
const char *as_group_by_name(enum as_group_by g);

/*
 * The category of every buffer of t as `--by category` decides it (o's
 * rules first): out[i] (t->nbuffers bytes) indexes names, which gets the
 * category names (the built-in ones, then o's rules; at most cap, and
 * their count in *nnames). The names stay valid as long as o's rules.
 * For bands over time (struct as_render_opts.buffer_group).
 */
int as_explain_buffer_categories(const struct as_trace *t,
				 const struct as_explain_options *o,
				 uint8_t *out, const char **names,
				 uint32_t cap, uint32_t *nnames);

/* Why buffers are in a category: one rule, its bytes and count, and the
 * frame or stage that matched for its largest buffer (NULL: none). */
struct as_explain_evidence {
	const char *rule;
	const char *example;
	uint64_t bytes, count;
};

/* Buffers of one group. */
struct as_explain_group {
	const char *key;         /* the group's text (for stacks the whole
				  * stack, frames joined by '\n') */
	uint64_t bytes, count;
	uint64_t largest;        /* the largest buffer's size */
	uint32_t buffer;         /* that buffer (the first of that size) */
	const char **frames;     /* its representative frames (by frame:
				  * from its user frame outwards) */
	uint32_t nframes;
	const char **above;      /* by frame: the frames above the user
				  * frame (inner ones, the allocator's left
				  * out), innermost first */
	uint32_t nabove;
	struct as_explain_evidence *evidence; /* by category, most bytes
					       * first */
	uint32_t nevidence;
};

/*
 * A list of groups: the first `ngroups` (largest bytes first, then count,
 * then key; temporaries: largest buffer first), of `total_groups`; bytes
 * and count over all of them, `other_*` over the groups left out.
 */
struct as_explain_list {
	struct as_explain_group *groups;
	uint32_t ngroups;
	uint64_t total_groups;
	uint64_t bytes, count;
	uint64_t other_bytes, other_count;
};

/* An annotation stage's bytes (the trace's stage `stage`, in its space). */
struct as_explain_stage {
	uint32_t stage;          /* index in trace->stages */
	uint64_t at_start;       /* live just before its first step */
	uint64_t at_end;         /* live just before its end step */
	uint64_t peak;           /* the most live inside [start, end) */
	uint64_t peak_time;      /* the earliest step with that many */
};

/* An online allocator at its peak (as_strategy_walk_at). */
struct as_explain_frag {
	bool known;              /* the strategy has a walk */
	uint64_t reserved;       /* bytes of every block the walk visits */
	uint64_t live;           /* bytes live in the trace then */
	uint64_t free_bytes;     /* reserved - live (0 when below) */
	uint64_t largest_free;   /* the largest free block */
	uint64_t blocks, free_blocks;
};

struct as_explain_space {
	uint16_t space;
	const char *name;
	bool has_peak;           /* some buffer of positive size is live */
	/*
	 * The trace: the most bytes live. A plan: its top address in this
	 * space (as_plan_peak), with live_bytes what is live at its moment.
	 */
	uint64_t peak_bytes;
	uint64_t peak_time;
	uint64_t live_bytes, live_count;
	uint64_t reserved_peak;  /* the trace: what its recording allocator
				  * reserved at most (0: unknown) */
	struct as_explain_list live;        /* at the peak */
	struct as_explain_list temporaries; /* the trace only */
	struct as_explain_list never_freed; /* the trace only */
	struct as_explain_stage *stages;    /* the trace only, in the
					     * trace's order */
	uint32_t nstages;
	/* The stages holding the peak, outermost first (trace indices). */
	uint32_t *peak_stages;
	uint32_t npeak_stages;
	struct as_explain_frag frag;        /* a plan of an online allocator */
};

/*
 * An out of memory (docs/explain.md, "Out of memory"): a recorded one (the
 * trace's OOM marks: what the recording tells) or one a model ran into (a
 * plan's records, as_plan_oom). `modelled` says the allocator's state is
 * known: cached free bytes by class, the largest free block.
 */
enum as_oom_verdict {
	AS_OOM_UNKNOWN,         /* the recording does not tell */
	AS_OOM_FRAGMENTATION,   /* room beside the live bytes, in pieces */
	AS_OOM_LIVE_MEMORY,     /* the live bytes and it exceed the device */
};

struct as_explain_oom {
	uint16_t space;
	const char *space_name;
	uint64_t time;           /* time step */
	uint64_t request;        /* bytes asked for */
	bool recorded;           /* the recording ran out of memory here */
	bool modelled;           /* a model's figures (a plan's) */
	/* Recorded: free device memory the recording gives (0: none), the
	 * bytes live in the trace then, the bytes of its recorded segments
	 * (has_reserved: it has some). A model: allocated and reserved. */
	uint64_t device_free;
	uint64_t live;
	uint64_t reserved;
	bool has_reserved;
	/* The device's bytes: a model's capacity, or reserved + device_free
	 * of a recording (0: unknown or unlimited). */
	uint64_t device_total;
	/* A model only: the request as a block and from the device, the
	 * cached free bytes by class (as_oom_class_name), the largest. */
	uint64_t block_size, device_request;
	uint64_t cached[AS_OOM_CLASSES];
	uint64_t largest_free;
	enum as_oom_verdict verdict;
};

/* "fragmentation", "live memory", NULL for AS_OOM_UNKNOWN. */
const char *as_oom_verdict_name(enum as_oom_verdict v);

struct as_explain {
	const struct as_trace *trace;
	char *spec;              /* the strategy, NULL for the trace itself */
	struct as_explain_options opts;
	uint64_t peak_bytes;     /* the trace: every space's peak summed (the
				  * lower bound); a plan: as_plan_peak(-1) */
	bool has_peak;
	uint64_t peak_time;      /* the trace: lower_bound_time */
	struct as_explain_space *spaces; /* a plan: its spaces */
	uint16_t nspaces;
	/* Why the grouping has nothing to group by on this trace (no
	 * stacks, stages, contexts; names without structure), or NULL. */
	const char *nothing_to_group;
	/* Out of memory: the trace's recorded OOMs, or a plan's modelled
	 * ones (the first few per space), in time order. */
	struct as_explain_oom *ooms;
	uint32_t nooms;
	struct as_explain_private *priv;
};

/*
 * Explain the trace's own peak, per space. o may be NULL (defaults). *out
 * is the caller's. AS_EINVAL (also: a regular expression of the options
 * does not compile), AS_ENOMEM.
 */
int as_explain_trace(const struct as_trace *t,
		     const struct as_explain_options *o,
		     struct as_explain **out);

/*
 * Explain plan p of t made by strategy SPEC at its peak moment, per space
 * of the plan; for an online allocator with a walk, its fragmentation
 * there (one more replay; diag says why a walk failed).
 */
int as_explain_plan(const struct as_trace *t, const char *spec,
		    const struct as_plan *p, const struct as_explain_options *o,
		    struct as_explain **out, struct as_diag *diag);

void as_explain_destroy(struct as_explain *e);

/*
 * as_explain_trace in one pass, for heaptrack and mtrace recordings: make
 * a stream and its sink, load with as_trace_load_live(..., sink, &t), then
 * finish with that trace. The explain is the one as_explain_trace gives on
 * the whole trace, at a cost that follows the blocks live at once rather
 * than the recording's length; the trace holds one buffer per group's
 * representative, not the recording's blocks, and must outlive the
 * explain. Create: AS_EUNSUPPORTED for groupings other than by stack and
 * frame. Finish: AS_EUNSUPPORTED when the file was of another format, so
 * t is the whole trace (as_explain_trace explains it).
 */
struct as_explain_stream;
struct as_live_sink; /* build.h */
int as_explain_stream_create(const struct as_explain_options *o,
			     struct as_explain_stream **out,
			     struct as_live_sink *sink);
int as_explain_stream_finish(struct as_explain_stream *s,
			     const struct as_trace *t,
			     struct as_explain **out);
/* NULL is a no-op. */
void as_explain_stream_destroy(struct as_explain_stream *s);

/*
 * One entry of a report: a trace explained, its own peak and, optionally,
 * plans'. A report is one entry or several (ranks of a distributed job:
 * the writers then end with a table of every file's peak, reserved peak
 * and top group, and the imbalance, the largest peak over their mean).
 */
struct as_explain_entry {
	const struct as_explain *trace;
	const struct as_explain *const *plans;
	size_t nplans;
};

/* The imbalance of n entries: their largest peak over the mean (1 when all
 * agree, 0 when every peak is 0). */
double as_explain_imbalance(const struct as_explain_entry *entries, size_t n);

/* A terminal's text, JSON (docs/explain.md), Markdown. 0, or AS_EIO when
 * f has an error (AS_ENOMEM). */
int as_explain_write_text(const struct as_explain_entry *entries, size_t n,
			  FILE *f);
int as_explain_write_json(const struct as_explain_entry *entries, size_t n,
			  FILE *f);
int as_explain_write_markdown(const struct as_explain_entry *entries, size_t n,
			      FILE *f);

/* ---- Comparing two recordings by group (diff --by) ---- */

/*
 * The groups of two explains (made with the same options, normalize on,
 * every group: top 0) as result rows: trace = the space's name, strategy
 * = the group's key, peak = its bytes at the peak; a group only one side
 * has gets a row of 0 bytes on the other, so that a new call site counts
 * as growth from nothing. as_compare then judges them as `diff` judges
 * plans (--max-regress, exit status). `base` and `new_` are appended to.
 */
int as_explain_results(const struct as_explain *a, const struct as_explain *b,
		       struct as_results *base, struct as_results *new_);

/*
 * The group `key` of space `space_name` in e (its representative frames),
 * or NULL.
 */
const struct as_explain_group *as_explain_find(const struct as_explain *e,
					       const char *space_name,
					       const char *key);

/*
 * The rows of c in report order: as as_comparison_order (failing rows
 * first, then worse, better, unchanged), but within each status the
 * largest change in bytes first. `order` receives c->nrows indices.
 * AS_ENOMEM.
 */
int as_explain_diff_order(const struct as_comparison *c, size_t *order);

/* A frame as the text writer prints it: the file's directories and C++
 * parameter lists left out, escaped for a terminal (as_escape). */
void as_explain_frame_text(const char *frame, char *buf, size_t len);

/*
 * The comparison of two explains (as_explain_results, as_compare) as
 * Markdown: a verdict, then the groups that changed, largest change
 * first, each with its top frames. 0, AS_ENOMEM or AS_EIO.
 */
int as_explain_write_diff_markdown(const struct as_comparison *c,
				   const struct as_explain *a,
				   const struct as_explain *b, FILE *f,
				   bool all_rows);

#endif
