/*
 * Private: the trace's storage and helpers shared by the parsers, declared
 * grouped by the file that defines them.
 */
#ifndef AS_TRACE_PRIVATE_H
#define AS_TRACE_PRIVATE_H

#include "allocscope/build.h"
#include "core/internal.h"

/* A bump arena for strings; blocks are freed with the trace. */
struct as_arena {
	struct arena_block *head;
};

struct as_trace_private {
	struct as_arena strings;
	/* Arrays owned by the trace (ops inputs/outputs, shapes' dims). */
	void **owned;
	size_t nowned, capowned;
	/*
	 * Buffers added without a name (as_builder_alloc_unique with NULL):
	 * `namer` gives every one its name at once, on the first call of
	 * as_trace_buffer_name, in the trace's arena; `named` once it did.
	 */
	int (*namer)(struct as_trace *t);
	bool named;
	/*
	 * Stack frames: stacks[k] is stack k (each distinct text once, or
	 * once per string a reader interned), stack_of[i] buffer i's stack or
	 * AS_NONE; NULL when no buffer has frames.
	 */
	const char **stacks;
	uint32_t nstacks;
	uint32_t *stack_of;
	/*
	 * Contexts (stages.c): ctx_strs[k] a distinct compile context or
	 * user metadata text; context_of[i] and metadata_of[i] buffer i's
	 * (AS_NONE: none); NULL when no buffer has one.
	 */
	const char **ctx_strs;
	uint32_t nctx_strs;
	uint32_t *context_of, *metadata_of;
	/*
	 * The stages' cuts (stages.c): by space, then time; from cuts[k].time
	 * to the next cut of the space, cuts[k].stage is the innermost stage
	 * (AS_NONE: none).
	 */
	struct as_stage_cut {
		uint64_t time;
		uint32_t stage;
		uint16_t space;
	} *cuts;
	uint32_t ncuts;
};

/* The builder's state (trace.c, names.c and finish.c; recording.c keeps
 * what inputs record). */
struct as_builder {
	struct as_trace *t;
	uint32_t cap_buffers, cap_events, cap_cases, cap_symbols,
		cap_frames, nframes, cap_stacks;
	/* Stacks by text (as_builder_frames) and by string address
	 * (as_builder_frames_interned): open addressing over stack index + 1
	 * (0: empty), each kept half empty. */
	uint32_t *stack_text, *stack_ptr;
	uint32_t stack_text_mask, stack_ptr_mask;
	/*
	 * Live names: open addressing with linear probing over buffer
	 * indices (AS_NONE marks an empty slot); deletion shifts back, so
	 * there are no tombstones. Load stays below 1/2. live_hash holds
	 * each slot's name hash (its low 32 bits): probes compare it before
	 * the names, and moves never hash a name again.
	 */
	uint32_t *live, *live_hash;
	uint32_t live_mask, live_n;
	uint64_t time;
	/* as_builder_alloc_unique's buffers still live; buffers before
	 * sweep_from are all ended. */
	uint32_t unique_live, sweep_from;
	bool timed, ordered;
	uint32_t cap_marks, cap_segments, cap_info, ninfo, cap_input_stats,
		cap_reallocs, cap_stages, cap_contexts, cap_ctx_of;
	struct as_strmap ctx_map; /* context texts -> index in ctx_strs */
	uint64_t cap_clock, nclock; /* clock readings held: steps [0, nclock) */
	/* Space names past spaces[0] (which parsers may rename): open
	 * addressing over space indices, 0 marks an empty slot. */
	uint16_t *space_slots;
	uint32_t space_mask, cap_spaces;
	/* Symbols by name: open addressing over symbol index + 1 (0: empty). */
	uint32_t *sym_slots;
	uint32_t sym_mask;
	/* Each buffer's input line, coded by limits.c. */
	uint8_t *lines;
	size_t nlines, cap_lines;
	uint64_t last_line;
	/* as_trace_load_live: blocks go here, not into the trace. */
	const struct as_live_sink *sink;
};

/* ---- trace.c: the arena, the builder, buffers and their lifetimes ---- */
char *as_arena_dup(struct as_arena *a, const char *s, size_t len);
void as_arena_finish(struct as_arena *a);
/* Grow *arr to hold `need` elements (doubling); false when it cannot. */
bool as_builder_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);
/* Give the builder's trace ownership of a malloc'ed block. */
int as_builder_own(struct as_builder *b, void *block);
/* The trace under construction (parsers set ops, shapes, metadata). */
struct as_trace *as_builder_trace(struct as_builder *b);
/*
 * For readers that keep their own table of live blocks and make every name
 * unique by construction (formats/heap.c): as_builder_alloc without the
 * live-name table (the name is not checked against the live ones; NULL: the
 * buffer's name is made later by the namer, see as_builder_namer), and the
 * free of such a buffer by its index, which the caller knows to be live
 * (not checked beyond the index: AS_EPARSE when out of range). These
 * buffers end at a case boundary or the end like the others; the name
 * functions (as_builder_free, as_builder_lookup's live table) do not see
 * them.
 */
int64_t as_builder_alloc_unique(struct as_builder *b, const char *name,
				uint64_t size, uint64_t align, uint64_t line,
				struct as_diag *diag);
int as_builder_free_index(struct as_builder *b, uint32_t idx, uint64_t line,
			  struct as_diag *diag);
/*
 * After the last operation: live buffer idx of as_builder_alloc_unique is
 * never freed (ends with the trace), as the end would do; a reader that
 * knows its live buffers saves the end a pass over all of them.
 */
int as_builder_leak_index(struct as_builder *b, uint32_t idx);
/* Find a buffer by name: the live one, else the most recent. */
int64_t as_builder_lookup(struct as_builder *b, const char *name);
/* End every live buffer at the current time: at a case boundary, and at
 * the finish of a trace of operations. */
void as_builder_end_live(struct as_builder *b);

/* ---- names.c: spaces, symbols, stacks and buffer names ---- */
/* The index of space `name`, or -1. Hashed: pools are looked up per buffer. */
int as_builder_space_find(const struct as_builder *b, const char *name);
/* The index of address symbol `name`, added when new. */
int64_t as_builder_symbol(struct as_builder *b, const char *name);
/* Give buffer `idx` its stack frames (lines joined by '\n'); buffers with
 * the same text share one copy. */
int as_builder_frames(struct as_builder *b, uint32_t idx, const char *frames);
/*
 * The same with a string the trace already holds (from as_builder_intern),
 * shared and not copied: readers that intern stacks give many buffers one.
 */
int as_builder_frames_interned(struct as_builder *b, uint32_t idx,
			       const char *frames);
/* Stack numbers for every buffer so far, AS_NONE for those given no stack;
 * AS_ENOMEM. */
int as_builder_stacks_fill(struct as_builder *b);
/*
 * The function that names the buffers added without a name, from what the
 * trace holds (their names cost no memory until someone reads one): called
 * once, by the first as_trace_buffer_name, it sets the name of every buffer
 * whose name is NULL (strings in the trace's arena) and returns AS_OK or
 * AS_ENOMEM. Names it makes must be unique, as the builder's are.
 */
void as_builder_namer(struct as_builder *b, int (*namer)(struct as_trace *t));
/* Give every buffer its name now (as_trace_buffer_name's first call), for
 * code that reads buffers[i].name of many: AS_OK or AS_ENOMEM. */
int as_trace_name_all(const struct as_trace *t);

/* ---- finish.c: finishing a trace ---- */
/*
 * For buffers with explicit lifetimes: 1 with the indices of two buffers of
 * one name that are live at the same time, 0 when there are none, or
 * AS_ENOMEM. O(n log n).
 */
int as_builder_live_twice(struct as_builder *b, uint32_t *first,
			  uint32_t *second);

/* ---- recording.c: what inputs record beyond buffers ---- */
/*
 * Readers of buffers with explicit lifetimes (as_builder_add_timed) that
 * also record clock readings and marks: set the time step those take.
 * Steps must not go back; the trace then ends no earlier than the last one.
 * AS_EINVAL after operations (as_builder_alloc/free) or going back.
 */
int as_builder_set_time(struct as_builder *b, uint64_t step);
/* Clock readings for steps up to `step`, repeating the last. */
int as_builder_clock_fill(struct as_builder *b, uint64_t step);
/*
 * Build the trace's address map (once; AS_EINVAL after) from the real
 * address ranges a reader met (address and length set, any order, overlaps
 * allowed; `ranges` is reordered). Per space, ranges closer than `keep`
 * bytes merge; each hole longer than `keep` shrinks to `gap` bytes plus its
 * remainder modulo `gap`, so offsets keep the addresses' alignment up to
 * `gap`; the lowest address of a space keeps its remainder modulo `gap` as
 * its offset. `gap` a power of two, keep >= gap. Then as_builder_offset_of
 * turns the reader's addresses into recorded offsets. O(n log n).
 */
int as_builder_addr_map(struct as_builder *b, struct as_addr_range *ranges,
			size_t n, uint64_t keep, uint64_t gap);
/* The recorded offset of real address `address` of `space`; false when no
 * range of the map holds it. */
bool as_builder_offset_of(const struct as_builder *b, uint16_t space,
			  uint64_t address, uint64_t *offset);
/* Its inverse on a loaded trace: the real address of recorded offset
 * `offset` of `space`, a range's end included (an empty block may lie
 * there); false when no range holds it. */
bool as_trace_block_address(const struct as_trace *t, uint16_t space,
			    uint64_t offset, uint64_t *addr);
/* Default info for buffers [from, nbuffers). */
void as_trace_info_fill(struct as_trace *t, uint32_t from);

/* ---- stages.c ---- */
/*
 * Buffer idx's compile context and user metadata (either NULL: none;
 * copied once per distinct text). AS_ENOMEM.
 */
int as_builder_context(struct as_builder *b, uint32_t idx, const char *context,
		       const char *metadata);
/* Sort the stages, cut them to the trace's end, check their spaces, give
 * them lanes and build the cuts (at the finish). */
int as_builder_finish_stages(struct as_builder *b, struct as_diag *diag);
/* Grow the per-buffer context arrays to every buffer (at the finish). */
int as_builder_finish_contexts(struct as_builder *b);

/* ---- limits.c ---- */
/* Record the input line of the buffer just added (AS_ENOMEM). */
int as_builder_note_line(struct as_builder *b, uint64_t line);
/* The input line of buffer `idx` (0: unknown). O(n): for messages. */
uint64_t as_builder_line_of(const struct as_builder *b, uint32_t idx);
/* AS_EPARSE with the line of the allocation that takes the spaces' peaks,
 * summed, past 2^64-1 bytes (events derived); AS_ENOMEM. O(n). */
int as_builder_check_live(const struct as_builder *b, struct as_diag *diag);

#endif
