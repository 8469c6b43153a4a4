/*
 * `tiered`: free-block lists with a size threshold, tail extension, two
 * memory levels and in-place reuse for computation graphs.
 *
 * Memory is two levels, each an address space carved upwards from 0: a
 * fast, small L2 (option `l2`, its capacity) tried first, and a large, slow
 * L3 (`l3`); 0 means unlimited. Every carved byte belongs to one block, used
 * or free; free blocks (blocks that were allocated once and released) are
 * kept sorted by size. A request (its size rounded up to `granule`) runs
 * through L2, then L3 when L2 cannot serve it:
 *
 *  1. size <= `threshold`: carve it from the level's unallocated memory,
 *     so that small requests do not fragment reusable blocks;
 *  2. else take the level's largest free block: when it is at least the
 *     request, split it (the request from its start, the rest stays free);
 *     when it is smaller but is the last block before the unallocated
 *     memory, take it and extend it with fresh memory to the request size;
 *  3. else carve fresh memory, when the level has room.
 *
 * A released block merges with free neighbours (a free tail block stays a
 * block: it is what step 2 extends).
 *
 * In-place reuse (option `inplace`, graph traces only) is decided once per
 * operator before the replay and removes copies:
 *  - reshape: the output lives in its input's block, at the same offset;
 *  - concat whose axis is the outermost one with an extent other than 1
 *    (all dims before it are 1, so every input is one contiguous slice of
 *    the row-major output): the inputs live at consecutive offsets inside
 *    the output, whose block is placed when the first input is produced;
 *  - split along such an axis: the outputs live inside the input.
 * Decisions nest. A reshape of a tensor that already holds parts (it was
 * split, or is a concat's output) takes those parts inside itself; a split
 * or reshape of a reshaped tensor goes inside the reshape's output. So the
 * aliases side by side in one container never share an address.
 * It does not apply when a tensor would have to live in two places (a concat
 * input already inside another buffer, or listed twice; a second split of
 * one tensor), for graph inputs of
 * a concat (their memory is filled before the graph runs), when alignments
 * do not allow the offsets, or along an inner axis (a strided slice). Every
 * buffer of a block (its root and the aliases inside it, at any depth) keeps
 * the block alive; the plan records each alias's container so the validator
 * can tell intended sharing from overlap.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/tree.h"
#include "strategies/strategy.h"

#define NLEVELS 2
#define MAX_CHAIN 32     /* aliases nested at most this deep */

static const char *const level_names[NLEVELS] = {"L2", "L3"};

/*
 * ┌──────────────────────────────────────────────────────────────────────┐
 * │ Invariants (checked by check()), per level:                          │
 * │  - the blocks of the address list tile [0, top): the first starts at │
 * │    0, each starts where the previous ends, `last` ends at top;       │
 * │  - top <= capacity (when there is one); every block size is > 0;     │
 * │  - no two neighbouring blocks are both free;                         │
 * │  - the free tree holds exactly the free blocks of this level,        │
 * │    in-order by (size, start): its rightmost node is the largest;     │
 * │  - a used block has refs > 0: the live buffers placed in it.         │
 * └──────────────────────────────────────────────────────────────────────┘
 */
struct blk {
	uint64_t start, size;
	uint32_t prev, next;    /* address order within the level */
	struct as_tree_link link;  /* free tree by (size, start) */
	uint32_t refs;
	uint8_t level;
	bool free;
};

struct level {
	uint64_t cap;           /* 0: unlimited */
	uint64_t top;           /* end of the carved memory */
	uint32_t first, last;   /* address list; `last` is the tail block */
	uint32_t free_root;
	uint32_t nblocks, nfree;
};

enum root_state { R_NONE, R_PLACED, R_RELEASED, R_FAILED };

struct tiered {
	struct level lv[NLEVELS];
	/* where L2's capacity comes from: the option, else what the trace
	 * states of its space (a capacity, a recording's device size), else
	 * unlimited */
	struct as_limit limit;
	uint64_t threshold, granule;
	bool inplace;
	as_emit_fn emit;
	void *ctx;
	const struct as_trace *t;

	struct blk *b;
	uint32_t nb, capb, spare;
	struct as_tree free_tree;  /* over b: the levels' free trees */

	/* Per buffer: the in-place plan and where the replay put it. */
	uint32_t *parent;       /* container, or AS_NONE */
	uint64_t *inside;       /* offset inside the container */
	uint8_t *height;        /* longest alias chain below a buffer */
	uint32_t *first_child;  /* aliases directly inside, linked by */
	uint32_t *next_sib;     /* ... next_sib */
	uint32_t *view;         /* the reshape covering it whole, if that is
				 * its only alias */
	uint32_t *block;        /* roots: their block */
	uint8_t *rstate;        /* roots: enum root_state */
	uint8_t *where;         /* 0: not placed, else level + 1 */

	uint64_t reused, splits, extensions, extended, fresh, small, merges,
		aliases, copies_avoided, ops_inplace[3], ops_refused;
};

static const struct as_option_desc options[] = {
	{"l2", "trace", "capacity of the fast level L2 in bytes (not given: "
			"what the trace states of its memory, a space's "
			"capacity or a recording's device size, else "
			"unlimited; 0: unlimited)"},
	{"l3", "0", "capacity of the slow level L3 in bytes (0: unlimited)"},
	{"threshold", "4096", "requests up to this size are carved from "
			      "unallocated memory, never from free blocks"},
	{"granule", "64", "request sizes are rounded up to this power of two"},
	{"inplace", "on", "on|off: in-place reuse for reshape, concat, split"},
	{NULL, NULL, NULL},
};

/* ---- Blocks ---- */

static uint32_t blk_new(struct tiered *s, uint8_t level, uint64_t start,
			uint64_t size)
{
	uint32_t i;
	if (s->spare != AS_NONE) {
		i = s->spare;
		s->spare = s->b[i].next;
	} else {
		if (s->nb == s->capb) {
			uint32_t cap = s->capb ? s->capb * 2 : 64;
			struct blk *n = realloc(s->b, cap * sizeof(*n));
			if (!n)
				return AS_NONE;
			s->b = n;
			s->capb = cap;
			s->free_tree.base = n;
		}
		i = s->nb++;
		s->free_tree.n = s->nb;
	}
	s->b[i] = (struct blk){.start = start, .size = size,
			       .prev = AS_NONE, .next = AS_NONE,
			       .level = level};
	s->lv[level].nblocks++;
	return i;
}

/* Link block n into its level's address list after `after` (or first). */
static void link_after(struct tiered *s, uint32_t after, uint32_t n)
{
	struct level *L = &s->lv[s->b[n].level];
	uint32_t next = after == AS_NONE ? L->first : s->b[after].next;
	s->b[n].prev = after;
	s->b[n].next = next;
	if (after == AS_NONE)
		L->first = n;
	else
		s->b[after].next = n;
	if (next == AS_NONE)
		L->last = n;
	else
		s->b[next].prev = n;
}

static void unlink_drop(struct tiered *s, uint32_t n)
{
	struct level *L = &s->lv[s->b[n].level];
	uint32_t prev = s->b[n].prev, next = s->b[n].next;
	if (prev == AS_NONE)
		L->first = next;
	else
		s->b[prev].next = next;
	if (next == AS_NONE)
		L->last = prev;
	else
		s->b[next].prev = prev;
	L->nblocks--;
	s->b[n].next = s->spare;
	s->spare = n;
}

/* ---- The free trees (core/tree.h), ordered by (size, start) ---- */

static int blk_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct blk *a = pa, *b = pb;
	(void)ctx;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* The free trees' description, written out where it is used so the
 * compiler calls blk_cmp directly (core/tree.h). */
#define BLK_TREE(t)                                                        \
	(&(struct as_tree){.base = (t)->base, .n = (t)->n,                 \
			   .stride = sizeof(struct blk),                   \
			   .link = offsetof(struct blk, link),             \
			   .cmp = blk_cmp})

static void free_add(struct tiered *s, uint32_t n)
{
	struct level *L = &s->lv[s->b[n].level];
	s->b[n].free = true;
	as_tree_insert(BLK_TREE(&s->free_tree), &L->free_root, n, NULL, NULL);
	L->nfree++;
}

static void free_remove(struct tiered *s, uint32_t n)
{
	struct level *L = &s->lv[s->b[n].level];
	as_tree_remove(BLK_TREE(&s->free_tree), &L->free_root, &s->b[n]);
	s->b[n].free = false;
	L->nfree--;
}

static uint32_t largest_free(const struct tiered *s, const struct level *L)
{
	return as_tree_last(BLK_TREE(&s->free_tree), L->free_root);
}

/* ---- The decision ---- */

static bool level_room(const struct level *L, uint64_t end)
{
	return L->cap == 0 || end <= L->cap;
}

/*
 * Take `size` bytes at `pad` inside free block f (pad + size <= f.size):
 * the padding before stays free as f, the rest after becomes a new free
 * block. Returns the used block, AS_NONE when out of memory.
 */
static uint32_t take(struct tiered *s, uint32_t f, uint64_t pad,
		     uint64_t size)
{
	free_remove(s, f);
	if (pad) {
		uint32_t g = blk_new(s, s->b[f].level, s->b[f].start + pad,
				     s->b[f].size - pad);
		if (g == AS_NONE)
			return AS_NONE;
		s->b[f].size = pad;
		link_after(s, f, g);
		free_add(s, f);
		f = g;
	}
	if (s->b[f].size > size) {
		uint32_t r = blk_new(s, s->b[f].level, s->b[f].start + size,
				     s->b[f].size - size);
		if (r == AS_NONE)
			return AS_NONE;
		s->b[f].size = size;
		link_after(s, f, r);
		free_add(s, r);
		s->splits++;
	}
	return f;
}

/* Carve fresh memory at the level's top; *out AS_NONE when no room. */
static int carve(struct tiered *s, uint8_t level, uint64_t size,
		 uint64_t align, uint32_t *out)
{
	struct level *L = &s->lv[level];
	uint64_t at = as_round_up(L->top, align);
	*out = AS_NONE;
	if (at < L->top || at > UINT64_MAX - size || !level_room(L, at + size))
		return AS_OK;
	if (at > L->top) { /* alignment padding: free memory */
		uint32_t tail = L->last;
		if (tail != AS_NONE && s->b[tail].free) {
			free_remove(s, tail);
			s->b[tail].size += at - L->top;
			free_add(s, tail);
		} else {
			uint32_t p = blk_new(s, level, L->top, at - L->top);
			if (p == AS_NONE)
				return AS_ENOMEM;
			link_after(s, L->last, p);
			free_add(s, p);
		}
	}
	uint32_t n = blk_new(s, level, at, size);
	if (n == AS_NONE)
		return AS_ENOMEM;
	link_after(s, L->last, n);
	L->top = at + size;
	s->fresh++;
	*out = n;
	return AS_OK;
}

/* Steps 1-3 on one level. */
static int try_level(struct tiered *s, uint8_t level, uint64_t size,
		     uint64_t align, uint32_t *out)
{
	struct level *L = &s->lv[level];
	*out = AS_NONE;
	if (size <= s->threshold) {
		int err = carve(s, level, size, align, out);
		if (*out != AS_NONE)
			s->small++;
		return err;
	}
	uint32_t f = largest_free(s, L);
	if (f != AS_NONE) {
		uint64_t start = s->b[f].start;
		uint64_t pad = as_round_up(start, align) - start;
		if (s->b[f].size >= pad && s->b[f].size - pad >= size) {
			*out = take(s, f, pad, size);
			s->reused++;
			return *out == AS_NONE ? AS_ENOMEM : AS_OK;
		}
		uint64_t grow = pad + size - s->b[f].size;
		if (f == L->last && size <= UINT64_MAX - pad &&
		    L->top <= UINT64_MAX - grow &&
		    level_room(L, L->top + grow)) {
			free_remove(s, f);
			s->b[f].size += grow;
			L->top += grow;
			free_add(s, f);
			*out = take(s, f, pad, size);
			s->reused++;
			s->extensions++;
			s->extended += grow;
			return *out == AS_NONE ? AS_ENOMEM : AS_OK;
		}
	}
	return carve(s, level, size, align, out);
}

static int place(struct tiered *s, uint64_t bytes, uint64_t align,
		 uint32_t *out)
{
	uint64_t size = as_round_up(bytes, s->granule);
	*out = AS_NONE;
	if (size < bytes)
		return AS_OK;
	if (align < s->granule)
		align = s->granule;
	for (uint8_t l = 0; l < NLEVELS; l++) {
		int err = try_level(s, l, size, align, out);
		if (err || *out != AS_NONE)
			return err;
	}
	return AS_OK;
}

static void release_block(struct tiered *s, uint32_t n)
{
	uint32_t prev = s->b[n].prev, next = s->b[n].next;
	if (prev != AS_NONE && s->b[prev].free) {
		free_remove(s, prev);
		s->b[prev].size += s->b[n].size;
		unlink_drop(s, n);
		n = prev;
		s->merges++;
	}
	if (next != AS_NONE && s->b[next].free) {
		free_remove(s, next);
		s->b[n].size += s->b[next].size;
		unlink_drop(s, next);
		s->merges++;
	}
	free_add(s, n);
}

/* ---- In-place reuse: decided per operator before the replay ---- */

static uint32_t depth_of(const struct tiered *s, uint32_t i)
{
	uint32_t d = 0;
	while (s->parent[i] != AS_NONE) {
		i = s->parent[i];
		d++;
	}
	return d;
}

/*
 * ┌──────────────────────────────────────────────────────────────────────┐
 * │ Invariants of the in-place plan:                                     │
 * │  - parent[] has no cycles and chains are at most MAX_CHAIN deep;     │
 * │  - the aliases directly inside one container never share an address: │
 * │    they are either the parts of one concat or split (consecutive,    │
 * │    filling it) or one reshape covering it whole (view[p]);           │
 * │  - a child's alignment is at most its container's, and its offset    │
 * │    inside is a multiple of it, so aligned roots align every alias.   │
 * └──────────────────────────────────────────────────────────────────────┘
 */

/* Can child c go at offset `off` inside p, which holds nothing yet? */
static bool can_nest(const struct tiered *s, uint32_t c, uint32_t p,
		     uint64_t off)
{
	const struct as_buffer *cb = &s->t->buffers[c], *pb = &s->t->buffers[p];
	return c != p && s->parent[c] == AS_NONE &&
	       s->first_child[p] == AS_NONE && cb->alias_of == AS_NONE &&
	       pb->alias_of == AS_NONE && cb->align_log2 <= pb->align_log2 &&
	       (off & (as_buffer_align(cb) - 1)) == 0 && off <= pb->size &&
	       cb->size <= pb->size - off &&
	       depth_of(s, p) + 1 + s->height[c] <= MAX_CHAIN;
}

/* Raise the heights of p and above for a new child of height hc. */
static void lift(struct tiered *s, uint32_t p, uint8_t hc)
{
	uint8_t h = (uint8_t)(hc + 1);
	for (uint32_t q = p; q != AS_NONE && s->height[q] < h; q = s->parent[q])
		s->height[q] = h++;
}

static void nest(struct tiered *s, uint32_t c, uint32_t p, uint64_t off)
{
	s->parent[c] = p;
	s->inside[c] = off;
	s->next_sib[c] = s->first_child[p];
	s->first_child[p] = c;
	lift(s, p, s->height[c]);
}

/* Follow whole-covering reshapes down to the innermost view of p. */
static uint32_t innermost(const struct tiered *s, uint32_t p)
{
	while (s->view[p] != AS_NONE)
		p = s->view[p];
	return p;
}

/*
 * A reshape y of x: y covers x whole, so it goes inside x's innermost
 * view v; when v already holds parts (x was split, or is a concat's
 * output), the parts move inside y, which becomes v's only alias. Either
 * way the aliases of one container never overlap.
 */
static bool nest_reshape(struct tiered *s, uint32_t x, uint32_t y)
{
	uint32_t v = innermost(s, x);
	uint32_t first = s->first_child[v];
	if (first == AS_NONE) {
		if (!can_nest(s, y, v, 0))
			return false;
		nest(s, y, v, 0);
		s->view[v] = y;
		return true;
	}
	const struct as_buffer *yb = &s->t->buffers[y], *vb = &s->t->buffers[v];
	if (s->parent[y] != AS_NONE || y == v || yb->alias_of != AS_NONE ||
	    yb->align_log2 > vb->align_log2 || yb->size != vb->size ||
	    depth_of(s, v) + 1 + s->height[v] > MAX_CHAIN)
		return false;
	for (uint32_t c = first; c != AS_NONE; c = s->next_sib[c])
		s->parent[c] = y;
	s->first_child[y] = first;
	s->height[y] = s->height[v];
	s->first_child[v] = AS_NONE;
	nest(s, y, v, 0);
	s->view[v] = y;
	return true;
}

/* The axis is the outermost one with an extent other than 1. */
static bool outer_axis(const struct as_tensor_shape *sh, int32_t axis)
{
	if (axis < 0 || (uint32_t)axis >= sh->rank)
		return false;
	for (int32_t d = 0; d < axis; d++)
		if (sh->dims[d] != 1)
			return false;
	return true;
}

/* Parts (concat inputs, split outputs) at consecutive offsets in whole. */
static bool nest_parts(struct tiered *s, const struct as_op *op, bool concat)
{
	uint32_t shaped = concat ? op->outputs[0] : op->inputs[0];
	uint32_t whole = innermost(s, shaped); /* split of a reshaped x */
	const uint32_t *parts = concat ? op->inputs : op->outputs;
	uint32_t n = concat ? op->ninputs : op->noutputs;
	if (!s->t->shapes || !outer_axis(&s->t->shapes[shaped], op->axis))
		return false;
	uint64_t off = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct as_buffer *pb = &s->t->buffers[parts[k]];
		if (!can_nest(s, parts[k], whole, off) ||
		    (concat && (pb->flags & AS_BUF_GRAPH_INPUT)))
			return false;
		for (uint32_t j = 0; j < k; j++)
			if (parts[j] == parts[k])
				return false;
		off += pb->size;
	}
	off = 0;
	for (uint32_t k = 0; k < n; k++) {
		nest(s, parts[k], whole, off);
		off += s->t->buffers[parts[k]].size;
	}
	return true;
}

static void plan_inplace(struct tiered *s)
{
	const struct as_trace *t = s->t;
	for (uint32_t o = 0; o < t->nops; o++) {
		const struct as_op *op = &t->ops[o];
		int kind = strcmp(op->kind, "reshape") == 0  ? 0
			   : strcmp(op->kind, "concat") == 0 ? 1
			   : strcmp(op->kind, "split") == 0  ? 2
							     : -1;
		bool done = false;
		if (kind == 0 && op->ninputs == 1 && op->noutputs == 1) {
			done = nest_reshape(s, op->inputs[0], op->outputs[0]);
		} else if (kind == 1 && op->noutputs == 1 && op->ninputs > 0) {
			done = nest_parts(s, op, true);
		} else if (kind == 2 && op->ninputs == 1 && op->noutputs > 0) {
			done = nest_parts(s, op, false);
		}
		if (kind >= 0) {
			if (done)
				s->ops_inplace[kind]++;
			else
				s->ops_refused++;
		}
	}
}

/* ---- The online interface ---- */

static int create(const struct as_opts *o, const struct as_run *run,
		  void **state, struct as_diag *diag)
{
	struct tiered *s = calloc(1, sizeof(*s));
	int inplace, err;
	if (!s)
		return AS_ENOMEM;
	if ((err = as_opts_u64(o, "l2", 0, 0, 1ull << 56, &s->lv[0].cap,
			       diag)) ||
	    (err = as_opts_u64(o, "l3", 0, 0, 1ull << 56, &s->lv[1].cap,
			       diag)) ||
	    (err = as_opts_u64(o, "threshold", 4096, 0, 1ull << 56,
			       &s->threshold, diag)) ||
	    (err = as_opts_pow2(o, "granule", 64, 1, 1ull << 20, &s->granule,
				diag)) ||
	    (err = as_opts_choice(o, "inplace",
				  (const char *const[]){"off", "on", NULL}, 1,
				  &inplace, diag))) {
		free(s);
		return err;
	}
	s->inplace = inplace == 1;
	/* l2=0 given: unlimited, whatever the trace says */
	s->limit = (struct as_limit){s->lv[0].cap, 0,
				     as_opts_get(o, "l2") ? AS_LIMIT_OPTION
							  : AS_LIMIT_NONE};
	s->emit = run->emit;
	s->ctx = run->ctx;
	s->spare = AS_NONE;
	s->free_tree = (struct as_tree){.stride = sizeof(struct blk),
					.link = offsetof(struct blk, link),
					.cmp = blk_cmp};
	for (int l = 0; l < NLEVELS; l++)
		s->lv[l].first = s->lv[l].last = s->lv[l].free_root = AS_NONE;
	*state = s;
	return AS_OK;
}

/* Without l2=, L2 holds what the trace states of its one memory; L3
 * takes what does not fit. */
static int start(void *state, const struct as_trace *t, uint16_t space,
		 uint32_t case_index, struct as_diag *diag)
{
	struct tiered *s = state;
	(void)case_index;
	(void)diag;
	if (s->limit.from != AS_LIMIT_NONE)
		return AS_OK;
	int err = as_trace_device_limit(t, space, &s->limit);
	if (!err && s->limit.bytes)
		s->lv[0].cap = s->limit.bytes > (1ull << 56) ? 1ull << 56
							     : s->limit.bytes;
	return err;
}

static void destroy(void *state)
{
	struct tiered *s = state;
	if (!s)
		return;
	free(s->b);
	free(s->parent);
	free(s->inside);
	free(s->height);
	free(s->first_child);
	free(s->next_sib);
	free(s->view);
	free(s->block);
	free(s->rstate);
	free(s->where);
	free(s);
}

/* Per-trace tables and the in-place plan, at the first request. */
static int attach(struct tiered *s, const struct as_trace *t)
{
	if (s->t == t)
		return AS_OK;
	size_t n = (size_t)t->nbuffers + 1;
	s->t = t;
	s->parent = malloc(n * sizeof(*s->parent));
	s->inside = calloc(n, sizeof(*s->inside));
	s->height = calloc(n, sizeof(*s->height));
	s->first_child = malloc(n * sizeof(*s->first_child));
	s->next_sib = malloc(n * sizeof(*s->next_sib));
	s->view = malloc(n * sizeof(*s->view));
	s->block = malloc(n * sizeof(*s->block));
	s->rstate = calloc(n, sizeof(*s->rstate));
	s->where = calloc(n, sizeof(*s->where));
	if (!s->parent || !s->inside || !s->height || !s->first_child ||
	    !s->next_sib || !s->view || !s->block ||
	    !s->rstate || !s->where)
		return AS_ENOMEM;
	memset(s->parent, 0xff, n * sizeof(*s->parent));
	memset(s->first_child, 0xff, n * sizeof(*s->first_child));
	memset(s->next_sib, 0xff, n * sizeof(*s->next_sib));
	memset(s->view, 0xff, n * sizeof(*s->view));
	memset(s->block, 0xff, n * sizeof(*s->block));
	if (s->inplace && t->ops)
		plan_inplace(s);
	return AS_OK;
}

static int alloc(void *state, const struct as_trace *t, uint32_t buf,
		 uint64_t *offset, uint64_t *chunk)
{
	struct tiered *s = state;
	int err = attach(s, t);
	if (err)
		return err;
	if (t->buffers[buf].size == 0)
		return 1;
	uint32_t r = buf;
	uint64_t off = 0;
	while (s->parent[r] != AS_NONE) {
		off += s->inside[r];
		r = s->parent[r];
	}
	if (s->rstate[r] == R_NONE) {
		const struct as_buffer *rb = &t->buffers[r];
		uint32_t n;
		if ((err = place(s, rb->size, as_buffer_align(rb), &n)))
			return err;
		if (n == AS_NONE) {
			s->rstate[r] = R_FAILED;
			return 1;
		}
		s->rstate[r] = R_PLACED;
		s->block[r] = n;
	}
	if (s->rstate[r] != R_PLACED)
		return 1;
	struct blk *b = &s->b[s->block[r]];
	b->refs++;
	s->where[buf] = (uint8_t)(b->level + 1);
	*offset = b->start + off;
	*chunk = r == buf ? b->size : t->buffers[buf].size;
	if (r != buf) {
		s->aliases++;
		s->copies_avoided += t->buffers[buf].size;
	}
	return AS_OK;
}

static void release(void *state, const struct as_trace *t, uint32_t buf)
{
	struct tiered *s = state;
	uint32_t r = buf;
	while (s->parent[r] != AS_NONE)
		r = s->parent[r];
	if (s->rstate[r] != R_PLACED)
		return;
	struct blk *b = &s->b[s->block[r]];
	if (--b->refs == 0) {
		release_block(s, s->block[r]);
		s->rstate[r] = R_RELEASED;
		s->block[r] = AS_NONE;
	}
}

static bool walk(void *state, uint16_t space, as_block_fn visit, void *ctx)
{
	struct tiered *s = state;
	for (int l = 0; l < NLEVELS; l++)
		for (uint32_t i = s->lv[l].first; i != AS_NONE;
		     i = s->b[i].next) {
			struct as_block blk = {
				.offset = s->b[i].start,
				.size = s->b[i].size,
				.buffer = AS_NONE,
				.bin = -1,
				.region = level_names[l],
				.in_use = !s->b[i].free,
			};
			if (!visit(ctx, space, &blk))
				return false;
		}
	return true;
}

static const struct as_online_impl online;

/* A header line per level, then the blocks (as_dump_blocks). */
static void dump(struct tiered *s)
{
	char line[160];
	if (!s->emit)
		return;
	for (int l = 0; l < NLEVELS; l++) {
		const struct level *L = &s->lv[l];
		snprintf(line, sizeof(line),
			 "tiered %s top=%llu capacity=%llu blocks=%u free=%u",
			 level_names[l], (unsigned long long)L->top,
			 (unsigned long long)L->cap, L->nblocks, L->nfree);
		s->emit(s->ctx, line);
	}
	as_dump_blocks(&online, s, s->emit, s->ctx);
}

static void query(void *state, enum as_query q)
{
	if (q == AS_Q_DUMP)
		dump(state);
}

/*
 * Statistics, and the plan entries alloc() cannot return: the level of
 * every buffer placed in this case and the container of every alias.
 */
static void stats(void *state, struct as_plan *p)
{
	struct tiered *s = state;
	char opt[48];
	snprintf(opt, sizeof(opt), "l2=%llu",
		 (unsigned long long)s->lv[0].cap);
	struct as_limit lim = s->limit;
	lim.bytes = s->lv[0].cap;
	as_plan_note_limit(p, level_names[0], opt, &lim);
	as_plan_stat_int(p, "l2_bytes", s->lv[0].top);
	as_plan_stat_int(p, "l3_bytes", s->lv[1].top);
	as_plan_stat_int(p, "aliases", s->aliases);
	as_plan_stat_int(p, "copies_avoided_bytes", s->copies_avoided);
	as_plan_stat_int(p, "blocks_reused", s->reused);
	as_plan_stat_int(p, "splits", s->splits);
	as_plan_stat_int(p, "tail_extensions", s->extensions);
	as_plan_stat_int(p, "extended_bytes", s->extended);
	as_plan_stat_int(p, "fresh_blocks", s->fresh);
	as_plan_stat_int(p, "small_fresh", s->small);
	as_plan_stat_int(p, "merges", s->merges);
	as_plan_stat_int(p, "inplace_reshape", s->ops_inplace[0]);
	as_plan_stat_int(p, "inplace_concat", s->ops_inplace[1]);
	as_plan_stat_int(p, "inplace_split", s->ops_inplace[2]);
	as_plan_stat_int(p, "inplace_refused", s->ops_refused);
	const struct as_trace *t = s->t;
	if (!t)
		return;
	/*
	 * One space while L2 is unlimited (L3 then never serves), two once
	 * a case used levels. p->space exists only when an earlier case of
	 * this run wrote it.
	 */
	uint64_t prev[NLEVELS] = {0, 0};
	uint16_t had = p->space && p->space_capacity ? p->nspaces : 0;
	uint16_t n = s->lv[0].cap || s->lv[1].top ? NLEVELS : 1;
	if (had > n)
		n = had;
	for (uint16_t l = 0; l < had; l++)
		prev[l] = p->space_capacity[l];
	if (as_plan_want_spaces(p, t, n) != AS_OK ||
	    (s->aliases && as_plan_want_aliases(p, t) != AS_OK))
		return;
	for (uint16_t l = 0; l < n; l++) {
		p->space_name[l] = level_names[l];
		/* Cases may differ: the widest capacity holds them all. */
		uint64_t c = s->lv[l].cap;
		if (l < had && (prev[l] == 0 || (c && prev[l] > c)))
			c = prev[l];
		p->space_capacity[l] = c;
	}
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		if (!s->where[i])
			continue;
		p->space[i] = (uint16_t)(s->where[i] - 1);
		if (s->parent[i] != AS_NONE)
			p->alias_of[i] = s->parent[i];
	}
}

/* A level's free tree: its shape and order, then each node's kind;
 * returns its node count. */
static uint64_t count_free_tree(const struct tiered *s, uint8_t level,
				struct as_problems *p)
{
	const struct level *L = &s->lv[level];
	uint64_t nodes = 0;
	if (as_tree_check(BLK_TREE(&s->free_tree), L->free_root, &nodes, NULL))
		as_problem(p, "%s: the free tree is out of order",
			   level_names[level]);
	uint64_t seen = 0;
	for (uint32_t n = as_tree_first(BLK_TREE(&s->free_tree), L->free_root);
	     n != AS_NONE && seen <= nodes;
	     n = as_tree_next(BLK_TREE(&s->free_tree), L->free_root, n), seen++)
		if (!s->b[n].free || s->b[n].level != level)
			as_problem(p, "%s: free tree holds a bad block at %llu",
				   level_names[level],
				   (unsigned long long)s->b[n].start);
	return nodes;
}

/* The invariants of one level, counted into p. */
static void check_level(const struct tiered *s, uint8_t l,
			struct as_problems *p)
{
	const struct level *L = &s->lv[l];
	const char *name = level_names[l];
	uint64_t at = 0, nfree = 0, n = 0;
	bool prev_free = false;
	uint32_t last = AS_NONE;
	for (uint32_t i = L->first; i != AS_NONE; i = s->b[i].next) {
		const struct blk *b = &s->b[i];
		unsigned long long start = b->start;
		if (++n > L->nblocks) {
			as_problem(p, "%s: more blocks in the list than %u",
				   name, L->nblocks);
			break;
		}
		if (b->start != at || b->size == 0 || b->level != l ||
		    b->prev != last)
			as_problem(p,
				   "%s: block at %llu does not follow the one "
				   "before (at %llu)",
				   name, start, (unsigned long long)at);
		if (b->free && prev_free)
			as_problem(p,
				   "%s: neighbouring free blocks at %llu are "
				   "not merged",
				   name, start);
		if (!b->free && b->refs == 0)
			as_problem(p, "%s: used block at %llu holds no buffer",
				   name, start);
		nfree += b->free;
		prev_free = b->free;
		at = b->start + b->size;
		last = i;
	}
	if (last != L->last || at != L->top)
		as_problem(p, "%s: the blocks end at %llu, top is %llu", name,
			   (unsigned long long)at, (unsigned long long)L->top);
	if (L->cap && L->top > L->cap)
		as_problem(p, "%s: top %llu beyond the capacity %llu", name,
			   (unsigned long long)L->top,
			   (unsigned long long)L->cap);
	uint64_t in_tree = count_free_tree(s, l, p);
	if (in_tree != nfree || nfree != L->nfree)
		as_problem(p, "%s: %llu free blocks, %llu in the free tree",
			   name, (unsigned long long)nfree,
			   (unsigned long long)in_tree);
}

static uint64_t check(void *state, char *msg, size_t len)
{
	struct as_problems p = {0, msg, len};
	for (uint8_t l = 0; l < NLEVELS; l++)
		check_level(state, l, &p);
	return p.n;
}

static const struct as_online_impl online = {
	.create = create,
	.start = start,
	.alloc = alloc,
	.free = release,
	.query = query,
	.stats = stats,
	.check = check,
	.walk = walk,
	.destroy = destroy,
};

const struct as_strategy_impl as_strategy_tiered = {
	.info = {
		.name = "tiered",
		.summary = "needs a trace of one address space: free-block "
			   "lists with threshold, tail extension, L2/L3 "
			   "levels and in-place reuse for graphs",
		.online = true,
		.options = options,
	},
	.applies = as_one_space, /* one memory hierarchy */
	.online = &online,
};
