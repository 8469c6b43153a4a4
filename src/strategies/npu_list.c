/*
 * `npu-list`: linked-list first fit for NPU instruction streams.
 *
 * All memory (option `capacity`) starts as one node of a singly linked
 * list; a node holds its start address, size, in-use flag and next link. A
 * request (its size rounded up to `granule`) walks from the head and takes
 * the first free node that fits: a node of exactly the size is taken whole,
 * a larger one is split into the request (kept by this node) and the rest
 * (a new free successor); used and smaller nodes are skipped. A node whose
 * start breaks the buffer's alignment first splits off the padding as a free
 * node of its own.
 *
 * Instructions name buffers by address symbol (`symbol=` in the text format,
 * "symbol" in JSON). A symbol table maps each symbol to the node that holds
 * it: a request whose symbol is mapped gets that very node; an unknown symbol
 * gets a new node and an entry. The plan records a sharing buffer as an alias
 * of the newest live buffer of the node (its host), so the validator knows
 * the sharing is intended; nested that way, two sharers never sit side by
 * side in one parent. A sharer larger than its host, or whose alignment the
 * node breaks, cannot get the same memory and fails (symbol_conflicts).
 * A node is released when the last buffer using it is freed; its symbol
 * entry goes with it. With merge=immediate a released node merges with a
 * free successor and a free predecessor (found by walking from the head: the
 * list is singly linked); with merge=never it stays as it is.
 *
 * The list is what the model walks; the replay finds the same answers
 * faster. Beside the list the nodes sit in a tree (core/tree.h) ordered by
 * start address
 * (starts never change: a split keeps the first part's start, a merge the
 * left node's), each subtree knowing its node count and its largest free
 * node. The first fit is then the leftmost free node large enough, found in
 * O(log n), and the nodes a walk from the head would visit (the stat
 * nodes_walked) are its position in the tree; the predecessor a merge needs
 * is a back link. So a request or a release costs O(log n) whatever the
 * setting, though with merge=never the list (and the walks it models) grows
 * with every split that is never undone.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/tree.h"
#include "strategies/strategy.h"

enum merge_mode { MERGE_IMMEDIATE, MERGE_NEVER };

#define UNLIMITED (1ull << 60) /* capacity=0: as good as unlimited */

/*
 * ┌──────────────────────────────────────────────────────────────────────┐
 * │ Invariants (checked by check()):                                     │
 * │  - following `next` from `head` visits every node once; the nodes    │
 * │    tile [0, capacity): each starts where the previous one ends, the  │
 * │    first at 0, the last ends at capacity; every size is > 0;         │
 * │  - a used node has refs > 0 and an owner buffer; a free one refs 0;  │
 * │  - with merge=immediate no two neighbouring nodes are both free;     │
 * │  - a symbol maps to a used node whose `symbol` is that symbol.       │
 * └──────────────────────────────────────────────────────────────────────┘
 */
struct node {
	uint64_t start, size;
	uint64_t maxfree;       /* tree: largest free node in the subtree */
	uint32_t next;          /* node index, AS_NONE at the end */
	uint32_t prev;          /* node index, AS_NONE at the head */
	struct as_tree_link link;  /* tree by start address */
	uint32_t cnt;           /* tree: nodes in the subtree */
	uint32_t refs;          /* live buffers placed in this node */
	uint32_t owner;         /* first buffer placed here */
	uint32_t host;          /* newest live buffer placed here */
	uint32_t symbol;        /* mapped symbol, or AS_NONE */
	bool used;
};

struct npu {
	uint64_t capacity, granule;
	/* where the capacity comes from: the option, else the trace (a
	 * space's capacity, a recording's device size), else unlimited */
	struct as_limit limit;
	const struct as_trace *lt; /* the trace start() was given */
	uint16_t space;
	enum merge_mode merge;
	as_emit_fn emit;
	void *ctx;
	const struct as_trace *t;

	struct node *nodes;
	uint32_t nnodes, capnodes;
	uint32_t spare;         /* recycled node slots, linked by next */
	uint32_t head;
	uint32_t root;          /* tree over the nodes of the list */
	struct as_tree tree;    /* its shape: over `nodes` */
	uint32_t live_nodes, peak_nodes;

	uint32_t *sym_node;     /* per symbol: node or AS_NONE */
	uint32_t *buf_node;     /* per buffer: node or AS_NONE */
	uint32_t *alias;        /* per buffer: owner it shares, or AS_NONE */

	uint64_t walks, exact, splits, pads, merges, symbol_hits,
		symbol_conflicts, in_use, peak_in_use;
};

static const struct as_option_desc options[] = {
	{"capacity", "trace", "bytes of memory the list starts with (not "
			      "given: what the trace states, a space's "
			      "capacity or a recording's device size, else "
			      "unlimited; 0: unlimited)"},
	{"merge", "immediate",
	 "immediate|never: merge released nodes with free neighbours; never "
	 "is a demonstration setting (the list only grows, so the walks it "
	 "models grow with every split), not in the default set"},
	{"granule", "64", "request sizes are rounded up to this power of two"},
	{NULL, NULL, NULL},
};

static uint32_t node_new(struct npu *s, uint64_t start, uint64_t size)
{
	uint32_t i;
	if (s->spare != AS_NONE) {
		i = s->spare;
		s->spare = s->nodes[i].next;
	} else {
		if (s->nnodes == s->capnodes) {
			uint32_t cap = s->capnodes ? s->capnodes * 2 : 64;
			struct node *n = realloc(s->nodes, cap * sizeof(*n));
			if (!n)
				return AS_NONE;
			s->nodes = n;
			s->capnodes = cap;
			s->tree.base = n;
		}
		i = s->nnodes++;
		s->tree.n = s->nnodes;
	}
	s->nodes[i] = (struct node){
		.start = start, .size = size, .maxfree = size,
		.next = AS_NONE, .prev = AS_NONE, .cnt = 1,
		.owner = AS_NONE, .host = AS_NONE, .symbol = AS_NONE,
	};
	if (++s->live_nodes > s->peak_nodes)
		s->peak_nodes = s->live_nodes;
	return i;
}

/* ---- The tree beside the list (see the top of the file) ---- */

static int node_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct node *a = pa, *b = pb;
	(void)ctx;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* The summaries: largest free node and node count of the subtree. */
static void node_aug(void *node, const void *l, const void *r, void *ctx)
{
	struct node *n = node;
	const struct node *a = l, *b = r;
	(void)ctx;
	uint64_t m = n->used ? 0 : n->size;
	if (a && a->maxfree > m)
		m = a->maxfree;
	if (b && b->maxfree > m)
		m = b->maxfree;
	n->maxfree = m;
	n->cnt = 1 + (a ? a->cnt : 0) + (b ? b->cnt : 0);
}

/* The tree's description, written out where it is used so the compiler
 * calls node_cmp and node_aug directly (core/tree.h). */
#define NODE_TREE(t)                                                       \
	(&(struct as_tree){.base = (t)->base, .n = (t)->n,                 \
			   .stride = sizeof(struct node),                  \
			   .link = offsetof(struct node, link),            \
			   .cmp = node_cmp, .aug = node_aug})

static uint32_t tcnt(const struct npu *s, uint32_t t)
{
	return t == AS_NONE ? 0 : s->nodes[t].cnt;
}

/* Recompute the path to node i (its size or use changed). */
static void trefresh(struct npu *s, uint32_t i)
{
	as_tree_update(NODE_TREE(&s->tree), s->root, i);
}

/*
 * The leftmost free node starting at or after `from` with at least `need`
 * bytes; *pos gets its position in the subtree (0: first). AS_NONE: none.
 */
static uint32_t tfind(const struct npu *s, uint32_t t, uint64_t from,
		      uint64_t need, uint32_t *pos)
{
	if (t == AS_NONE || s->nodes[t].maxfree < need)
		return AS_NONE;
	const struct node *n = &s->nodes[t];
	uint32_t lc = tcnt(s, n->link.l);
	if (n->start >= from) {
		uint32_t r = tfind(s, n->link.l, from, need, pos);
		if (r != AS_NONE)
			return r;
		if (!n->used && n->size >= need) {
			*pos = lc;
			return t;
		}
	}
	uint32_t r = tfind(s, n->link.r, from, need, pos);
	if (r != AS_NONE)
		*pos += lc + 1;
	return r;
}

static void node_drop(struct npu *s, uint32_t i)
{
	s->nodes[i].next = s->spare;
	s->spare = i;
	s->live_nodes--;
}

/* Split node i at `at` bytes: i keeps [start, start+at), a new free node
 * takes the rest. */
static bool split_node(struct npu *s, uint32_t i, uint64_t at)
{
	uint32_t n = node_new(s, s->nodes[i].start + at, s->nodes[i].size - at);
	if (n == AS_NONE)
		return false;
	s->nodes[n].next = s->nodes[i].next;
	s->nodes[n].prev = i;
	if (s->nodes[i].next != AS_NONE)
		s->nodes[s->nodes[i].next].prev = n;
	s->nodes[i].next = n;
	s->nodes[i].size = at;
	trefresh(s, i);
	as_tree_insert(NODE_TREE(&s->tree), &s->root, n, NULL, NULL);
	return true;
}

static int create(const struct as_opts *o, const struct as_run *run,
		  void **state, struct as_diag *diag)
{
	struct npu *s = calloc(1, sizeof(*s));
	int merge, err;
	if (!s)
		return AS_ENOMEM;
	if ((err = as_opts_u64(o, "capacity", 0, 0, 1ull << 56,
			       &s->capacity, diag)) ||
	    (err = as_opts_pow2(o, "granule", 64, 1, 1ull << 20, &s->granule,
				diag)) ||
	    (err = as_opts_choice(o, "merge",
				  (const char *const[]){"immediate", "never",
							NULL},
				  MERGE_IMMEDIATE, &merge, diag))) {
		free(s);
		return err;
	}
	/* capacity=0 given: unlimited, whatever the trace says */
	s->limit = (struct as_limit){s->capacity, 0,
				     as_opts_get(o, "capacity")
					     ? AS_LIMIT_OPTION
					     : AS_LIMIT_NONE};
	if (s->capacity == 0)
		s->capacity = UNLIMITED;
	s->merge = (enum merge_mode)merge;
	s->emit = run->emit;
	s->ctx = run->ctx;
	s->spare = AS_NONE;
	s->tree = (struct as_tree){.stride = sizeof(struct node),
				   .link = offsetof(struct node, link),
				   .cmp = node_cmp,
				   .aug = node_aug};
	s->head = node_new(s, 0, s->capacity);
	if (s->head == AS_NONE) {
		free(s);
		return AS_ENOMEM;
	}
	s->root = AS_NONE;
	as_tree_insert(NODE_TREE(&s->tree), &s->root, s->head, NULL, NULL);
	s->peak_nodes = s->live_nodes = 1;
	*state = s;
	return AS_OK;
}

/* Without capacity=, the memory the trace states for this space, if any:
 * the one free node the list starts with is that large. */
static int start(void *state, const struct as_trace *t, uint16_t space,
		 uint32_t case_index, struct as_diag *diag)
{
	struct npu *s = state;
	(void)case_index;
	(void)diag;
	s->lt = t;
	s->space = space;
	if (s->limit.from != AS_LIMIT_NONE)
		return AS_OK;
	int err = as_trace_device_limit(t, space, &s->limit);
	if (err || !s->limit.bytes || s->limit.bytes >= UNLIMITED ||
	    s->live_nodes != 1)
		return err;
	struct node *n = &s->nodes[s->head];
	n->size = n->maxfree = s->capacity = s->limit.bytes;
	return AS_OK;
}

static void destroy(void *state)
{
	struct npu *s = state;
	if (!s)
		return;
	free(s->nodes);
	free(s->sym_node);
	free(s->buf_node);
	free(s->alias);
	free(s);
}

/* Per-trace tables, made at the first request of a case. */
static int attach(struct npu *s, const struct as_trace *t)
{
	if (s->t == t)
		return AS_OK;
	s->t = t;
	s->sym_node = malloc(((size_t)t->nsymbols + 1) * sizeof(uint32_t));
	s->buf_node = malloc(((size_t)t->nbuffers + 1) * sizeof(uint32_t));
	s->alias = malloc(((size_t)t->nbuffers + 1) * sizeof(uint32_t));
	if (!s->sym_node || !s->buf_node || !s->alias)
		return AS_ENOMEM;
	memset(s->sym_node, 0xff, ((size_t)t->nsymbols + 1) * sizeof(uint32_t));
	memset(s->buf_node, 0xff, ((size_t)t->nbuffers + 1) * sizeof(uint32_t));
	memset(s->alias, 0xff, ((size_t)t->nbuffers + 1) * sizeof(uint32_t));
	return AS_OK;
}

/*
 * First fit from the head, the node taken (used); AS_NONE when nothing
 * fits. The walk skips used and small nodes, and free nodes whose alignment
 * padding leaves too little; the tree finds the next candidate at once,
 * and the nodes the walk visits are counted by position (every node when
 * nothing fits).
 */
static uint32_t first_fit(struct npu *s, uint64_t size, uint64_t align,
			  bool *nomem)
{
	uint64_t from = 0;
	for (;;) {
		uint32_t pos = 0;
		uint32_t i = tfind(s, s->root, from, size, &pos);
		if (i == AS_NONE) {
			s->walks += s->live_nodes;
			return AS_NONE;
		}
		struct node *n = &s->nodes[i];
		from = n->start + 1;
		uint64_t pad = as_round_up(n->start, align) - n->start;
		if (pad) {
			if (n->size - size < pad)
				continue;
			/* The padding stays free as this node. */
			if (!split_node(s, i, pad)) {
				*nomem = true;
				return AS_NONE;
			}
			s->pads++;
			continue; /* the successor now starts aligned */
		}
		s->walks += pos + 1;
		/* Taken before the split, whose walk up the tree then redoes
		 * its path once. */
		n->used = true;
		if (n->size == size) {
			s->exact++;
			trefresh(s, i);
		} else if (split_node(s, i, size)) {
			s->splits++;
		} else {
			n->used = false;
			*nomem = true;
			return AS_NONE;
		}
		return i;
	}
	return AS_NONE;
}

static int alloc(void *state, const struct as_trace *t, uint32_t buf,
		 uint64_t *offset, uint64_t *chunk)
{
	struct npu *s = state;
	const struct as_buffer *b = &t->buffers[buf];
	int err = attach(s, t);
	if (err)
		return err;
	if (b->size == 0 || b->size > s->capacity)
		return 1;
	uint32_t sym = b->symbol < t->nsymbols ? b->symbol : AS_NONE;
	if (sym != AS_NONE && s->sym_node[sym] != AS_NONE) {
		struct node *n = &s->nodes[s->sym_node[sym]];
		/* The same memory: it must fit inside the buffer it joins. */
		if (b->size > t->buffers[n->host].size ||
		    (n->start & (as_buffer_align(b) - 1))) {
			s->symbol_conflicts++;
			return 1;
		}
		n->refs++;
		s->symbol_hits++;
		s->buf_node[buf] = s->sym_node[sym];
		s->alias[buf] = n->host;
		n->host = buf;
		*offset = n->start;
		*chunk = b->size;
		return AS_OK;
	}
	uint64_t align = as_buffer_align(b);
	uint64_t size = as_round_up(b->size, s->granule);
	if (size < b->size) /* rounding overflowed */
		return 1;
	bool nomem = false;
	uint32_t i = first_fit(s, size, align > s->granule ? align
							  : s->granule,
			       &nomem);
	if (nomem)
		return AS_ENOMEM;
	if (i == AS_NONE)
		return 1;
	struct node *n = &s->nodes[i];
	n->refs = 1;
	n->owner = n->host = buf;
	n->symbol = sym;
	if (sym != AS_NONE)
		s->sym_node[sym] = i;
	s->buf_node[buf] = i;
	s->in_use += n->size;
	if (s->in_use > s->peak_in_use)
		s->peak_in_use = s->in_use;
	*offset = n->start;
	*chunk = n->size;
	return AS_OK;
}

/*
 * Merge node i with its successor when both are free; false when they are
 * not. The caller redoes i's tree path (trefresh): only the nodes above i
 * count its size.
 */
static bool merge_next(struct npu *s, uint32_t i)
{
	uint32_t j = s->nodes[i].next;
	if (j == AS_NONE || s->nodes[i].used || s->nodes[j].used)
		return false;
	as_tree_remove(NODE_TREE(&s->tree), &s->root, &s->nodes[j]);
	s->nodes[i].size += s->nodes[j].size;
	s->nodes[i].next = s->nodes[j].next;
	if (s->nodes[j].next != AS_NONE)
		s->nodes[s->nodes[j].next].prev = i;
	node_drop(s, j);
	s->merges++;
	return true;
}

static void release(void *state, const struct as_trace *t, uint32_t buf)
{
	struct npu *s = state;
	uint32_t i = s->buf_node[buf];
	if (i == AS_NONE)
		return;
	s->buf_node[buf] = AS_NONE;
	struct node *n = &s->nodes[i];
	/* The host chain is a stack: drop the dead from its top. */
	while (n->host != AS_NONE && s->buf_node[n->host] == AS_NONE)
		n->host = s->alias[n->host];
	if (--n->refs > 0)
		return;
	n->used = false;
	s->in_use -= n->size;
	if (n->symbol != AS_NONE)
		s->sym_node[n->symbol] = AS_NONE;
	n->symbol = AS_NONE;
	n->owner = n->host = AS_NONE;
	/*
	 * The free node left (i, or its predecessor that took it in) has its
	 * tree path redone once, at the end: a removal on the way redoes the
	 * path to the node it removes, and only the nodes above i count i's
	 * use and size.
	 */
	uint32_t left = i, prev = n->prev;
	if (s->merge != MERGE_NEVER) {
		merge_next(s, i);
		if (prev != AS_NONE && merge_next(s, prev))
			left = prev;
	}
	trefresh(s, left);
}

static bool walk(void *state, uint16_t space, as_block_fn visit, void *ctx)
{
	struct npu *s = state;
	for (uint32_t i = s->head; i != AS_NONE; i = s->nodes[i].next) {
		const struct node *n = &s->nodes[i];
		struct as_block blk = {
			.offset = n->start,
			.size = n->size,
			.buffer = n->used ? n->host : AS_NONE,
			.bin = -1,
			.symbol = n->symbol != AS_NONE && s->t
					  ? s->t->symbols[n->symbol]
					  : NULL,
			.in_use = n->used,
		};
		if (!visit(ctx, space, &blk))
			return false;
	}
	return true;
}

static const struct as_online_impl online;

/* A header line, then the nodes (as_dump_blocks). */
static void dump(struct npu *s)
{
	char line[160];
	if (!s->emit)
		return;
	snprintf(line, sizeof(line), "npu-list capacity=%llu nodes=%u",
		 (unsigned long long)s->capacity, s->live_nodes);
	s->emit(s->ctx, line);
	as_dump_blocks(&online, s, s->emit, s->ctx);
}

static void query(void *state, enum as_query q)
{
	if (q == AS_Q_DUMP)
		dump(state);
}

static void stats(void *state, struct as_plan *p)
{
	struct npu *s = state;
	as_plan_stat_int(p, "nodes", s->live_nodes);
	as_plan_stat_int(p, "peak_nodes", s->peak_nodes);
	as_plan_stat_int(p, "peak_in_use", s->peak_in_use);
	as_plan_stat_int(p, "exact_fits", s->exact);
	as_plan_stat_int(p, "splits", s->splits);
	as_plan_stat_int(p, "alignment_pads", s->pads);
	as_plan_stat_int(p, "merges", s->merges);
	as_plan_stat_int(p, "nodes_walked", s->walks);
	as_plan_stat_int(p, "symbol_hits", s->symbol_hits);
	as_plan_stat_int(p, "symbol_conflicts", s->symbol_conflicts);
	if (s->lt) {
		char opt[48];
		snprintf(opt, sizeof(opt), "capacity=%llu",
			 (unsigned long long)s->capacity);
		as_plan_note_limit(p, as_trace_space_name(s->lt, s->space),
				   opt, &s->limit);
	}
	/*
	 * Buffers that share a symbol live inside the node's first buffer:
	 * the only plan entries alloc() cannot return, written here.
	 */
	if (!s->t || s->symbol_hits == 0)
		return;
	if (as_plan_want_aliases(p, s->t) != AS_OK)
		return;
	for (uint32_t i = 0; i < s->t->nbuffers; i++)
		if (s->alias[i] != AS_NONE)
			p->alias_of[i] = s->alias[i];
}

static uint64_t check(void *state, char *msg, size_t len)
{
	struct npu *s = state;
	struct as_problems p = {0, msg, len};
	uint64_t at = 0, seen = 0;
	bool prev_free = false;
	for (uint32_t i = s->head; i != AS_NONE; i = s->nodes[i].next) {
		const struct node *n = &s->nodes[i];
		unsigned long long start = n->start;
		if (++seen > s->live_nodes) {
			as_problem(&p,
				   "the list is longer than its %u nodes (a "
				   "cycle?)",
				   s->live_nodes);
			break;
		}
		if (n->start != at)
			as_problem(&p, "node at %llu should start at %llu",
				   start, (unsigned long long)at);
		if (n->size == 0)
			as_problem(&p, "empty node at %llu", start);
		if (n->used != (n->refs > 0) ||
		    (n->used && n->owner == AS_NONE))
			as_problem(&p, "node at %llu: used=%d with %u buffers",
				   start, n->used, n->refs);
		if (s->merge == MERGE_IMMEDIATE && prev_free && !n->used)
			as_problem(&p,
				   "free nodes at %llu and before it are not "
				   "merged",
				   start);
		if (n->symbol != AS_NONE &&
		    (!s->sym_node || s->sym_node[n->symbol] != i))
			as_problem(&p,
				   "node at %llu holds a symbol that does not "
				   "map to it",
				   start);
		prev_free = !n->used;
		at = n->start + n->size;
	}
	if (at != s->capacity)
		as_problem(&p,
			   "the nodes end at %llu, not at the capacity %llu",
			   (unsigned long long)at,
			   (unsigned long long)s->capacity);
	uint64_t in_tree = 0;
	if (as_tree_check(NODE_TREE(&s->tree), s->root, &in_tree, NULL) ||
	    in_tree != s->live_nodes)
		as_problem(&p,
			   "the tree beside the list is broken or holds %llu "
			   "of %u nodes",
			   (unsigned long long)in_tree, s->live_nodes);
	for (uint32_t k = 0; s->t && s->sym_node && k < s->t->nsymbols; k++) {
		uint32_t i = s->sym_node[k];
		if (i != AS_NONE &&
		    (!s->nodes[i].used || s->nodes[i].symbol != k))
			as_problem(&p,
				   "symbol '%s' maps to a node that does not "
				   "hold it",
				   s->t->symbols[k]);
	}
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

const struct as_strategy_impl as_strategy_npu_list = {
	.info = {
		.name = "npu-list",
		.summary = "needs a trace of one address space: linked-list "
			   "first fit with address symbols (NPU instruction "
			   "streams)",
		.online = true,
		.options = options,
	},
	.applies = as_one_space, /* one list over one memory */
	.online = &online,
};
