/*
 * Private: the PyTorch snapshot reader's state and the functions its files
 * share: snapshot.c (the schema, entries and buffers; its head comment says
 * how a snapshot becomes a trace), snapshot_frames.c, snapshot_segments.c
 * and snapshot_build.c (to the builder, and the format row).
 */
#ifndef AS_SNAPSHOT_H
#define AS_SNAPSHOT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/tree.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/pickle.h"

#define MAX_DEVICES 1024
/* Frames text of one stack, and of all stacks (beyond: dropped, counted). */
#define MAX_STACK_TEXT (64u << 10)
#define MAX_FRAMES_TEXT ((size_t)256 << 20)
/* Empty device address ranges shrink to this (and their remainder). */
#define SEG_GAP ((uint64_t)4096)
/*
 * The same with expandable segments: their pages' size, so offsets keep the
 * 2 MiB alignment of the pages PyTorch maps (cuda-caching tells PyTorch's
 * virtual ranges apart by their real addresses, through the map).
 */
#define EXP_GAP ((uint64_t)2 << 20)

enum act {
	A_ALLOC,
	A_FREE_REQ,
	A_FREE_DONE,
	A_SEG_ALLOC,
	A_SEG_FREE,
	A_SEG_MAP,
	A_SEG_UNMAP,
	A_OOM,
	A_OTHER,
};

struct entry {
	uint64_t addr, size, key_us, device_free, requested;
	const struct as_pk *frames;
	const struct as_pk *context, *metadata; /* compile_context, user_metadata */
	uint32_t dev, version;
	uint16_t stream;
	uint8_t act;
	bool pre;               /* free of a block allocated before the trace */
};

/*
 * A buffer before it goes to the builder (as_snap_emit). Its frames are
 * `frames` (a snapshot's list) or, when that is NULL, `stack`: a text the
 * trace holds (the profiler reader's enclosing operators). `line`: of the
 * input, for messages (0: none).
 */
struct sbuf {
	uint64_t addr, size, requested, start, end, free_req, line;
	const struct as_pk *frames;
	const char *stack;
	const struct as_pk *context, *metadata; /* of its alloc entry */
	uint32_t dev, version;
	uint16_t stream;
	bool never_freed;
};

/* A reserved range, open (end unknown) while in `open`. */
struct seg {
	uint64_t addr, size, start, end;
	uint32_t dev;
	uint16_t stream;
	uint8_t flags;
};

/*
 * A hash map from a pair of 64-bit keys to a 64-bit value: open addressing,
 * linear probing, load at most 1/2, keyed hashing (as_hash_pair).
 */
struct map {
	struct mslot {
		uint64_t a, b, val;
		bool used;
	} *s;
	size_t mask, n;
};

struct reading {
	uint64_t step, us;
	int64_t mark;           /* index in marks[], or -1: a clock reading */
};

/* One frame dict, seen once: its text "file:line:name" and its kind. */
struct finfo {
	const char *text;       /* in ctx.ftext; NULL when omitted */
	size_t len;
	bool python;
};

struct ctx {
	struct as_builder *b;
	struct as_diag *diag;
	struct entry *e;
	size_t ne, cape;
	struct sbuf *bufs;
	size_t nbufs, capbufs;
	struct tnode {
		struct seg s;
		struct as_tree_link link;
	} *tn;                  /* the open ranges' tree (seg_open) */
	size_t ntn, captn;
	uint32_t root;
	struct as_tree tree;    /* over tn (as_snap_tree_init) */
	uint32_t *walk;         /* nodes of one range, in order */
	size_t nwalk, capwalk;
	struct seg *done;
	size_t ndone, capdone;
	struct as_mark *marks;
	size_t nmarks, capmarks;
	struct reading *rd;
	size_t nrd, caprd;
	struct map addrs;       /* (addr, dev) -> frees so far, live buffer */
	struct map streams;     /* stream -> small id */
	uint16_t nstreams;
	bool has_time;
	uint64_t t0;
	/*
	 * Frames: frame dict -> its text (fi[]); a stack's frame dicts ->
	 * its text (interned[], with reps[] the first list seen); the hash
	 * of a text -> the same text.
	 */
	struct map frame_dicts, frame_seqs, frame_texts;
	struct map frame_lists;  /* a frames list's address -> interned[] */
	struct finfo *fi;
	size_t nfi, capfi;
	struct as_arena ftext;
	char *scratch, *fscratch; /* a stack's text, a frame's text */
	size_t capscratch, capfscratch, frames_text;
	const char **interned;
	const struct as_pk **reps;
	size_t ninterned, capinterned, capreps;
};

/* (addr, dev) slot: `val` packs frees (high 32 bits), live buffer (low). */
#define NO_BUF 0xffffffffu

static inline uint32_t slot_frees(const struct mslot *s)
{
	return (uint32_t)(s->val >> 32);
}

static inline uint32_t slot_live(const struct mslot *s)
{
	return (uint32_t)s->val;
}

static inline void slot_set(struct mslot *s, uint32_t frees, uint32_t live)
{
	s->val = (uint64_t)frees << 32 | live;
}

/* ---- snapshot.c ---- */

void as_snap_map_free(struct map *m);
struct mslot *as_snap_map_get(struct map *m, uint64_t a, uint64_t b,
			     uint64_t def);
bool as_snap_grow_array(void **p, size_t *cap, size_t need, size_t elem);
int as_snap_nomem(struct ctx *c);
int as_snap_get_u64(struct ctx *c, const struct as_pk *d, const char *key,
		   bool required, uint64_t *out);
int as_snap_read_entry(struct ctx *c, const struct as_pk *d, uint32_t dev,
		      uint64_t *last_us);
int as_snap_prepass(struct ctx *c);
int as_snap_replay(struct ctx *c, const struct as_pk *segs, uint64_t *end_step);

/* ---- snapshot_build.c ---- */

/*
 * To the builder: the address map over c->bufs and c->done (per device,
 * gaps shrunk), the buffers (named b<hex address>_<version> as memory_viz
 * names them; `dev` is their space), the segments, the clock readings and
 * marks of c->rd, and the last step. Also used by the profiler reader
 * (json/profiler.c), whose buffers, readings and spaces it fills the same way.
 */
int as_snap_emit(struct ctx *c, uint64_t end_step);

/* ---- snapshot_frames.c ---- */

int as_snap_frames_text(struct ctx *c, const struct as_pk *list,
		       const char **out);

/* ---- snapshot_stages.c ---- */

/* Buffer idx's compile context and user metadata, from its alloc entry. */
int as_snap_context(struct ctx *c, uint32_t idx, const struct sbuf *s);
/* The root's external_annotations as stages (after the buffers, with the
 * clock readings made). */
int as_snap_stages(struct ctx *c, const struct as_pk *root, uint32_t ndev,
		   uint64_t end_step);

/* ---- snapshot_segments.c ---- */

int as_snap_t_walk(struct ctx *c, uint32_t t);
void as_snap_tree_init(struct ctx *c);
int as_snap_seg_done(struct ctx *c, const struct seg *s);
int as_snap_seg_close(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t now, uint16_t stream,
		     uint8_t flags);
int as_snap_seg_open(struct ctx *c, const struct entry *e, uint64_t now,
		    uint8_t flags);
int as_snap_seg_final(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t end_step, uint16_t stream,
		     uint8_t flags);

#endif
