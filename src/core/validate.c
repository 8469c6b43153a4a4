/*
 * The validator, independent of every strategy.
 *
 * A sweep over time keeps, for every group of buffers that must not share
 * addresses, the live ones in a tree (core/tree.h) ordered by (offset,
 * index). A group is an address space (buffers placed on their own) or a
 * parent buffer (the aliases placed inside it). Because each tree only ever
 * holds disjoint intervals, a new buffer overlaps some live one exactly when
 * it overlaps its predecessor or its successor: O(log n) per event,
 * O(n log n) in all.
 *
 * An alias extends the lifetime of the block it lives in: a parent stays in
 * its group until its last alias ends.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/build.h"
#include "core/tree.h"

/*
 * Tree nodes (core/tree.h) come from a pool that only ever holds the live
 * buffers, so the validator's memory follows the most buffers live at
 * once, not the trace. A node's key is (offset, buffer index); it carries
 * its buffer's end too, so a neighbour is read without a look at the plan.
 */
struct node {
	uint64_t off, top;      /* the buffer's addresses [off, top) */
	uint32_t buf;
	struct as_tree_link link;  /* free nodes chain through link.l */
};

struct pool {
	struct as_tree tree;    /* its base is the node array */
	uint32_t cap, free_list;
};

static int node_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct node *a = pa, *b = pb;
	(void)ctx;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->buf < b->buf ? -1 : a->buf > b->buf;
}

/* The tree's description, written out where it is used so the compiler
 * calls node_cmp directly (core/tree.h). */
#define NODE_TREE(t)                                                       \
	(&(struct as_tree){.base = (t)->base, .n = (t)->n,                 \
			   .stride = sizeof(struct node),                  \
			   .link = offsetof(struct node, link),            \
			   .cmp = node_cmp})

static struct node *nodes(const struct pool *tr)
{
	return tr->tree.base;
}

static uint32_t node_new(struct pool *tr, uint32_t buf, uint64_t off,
			 uint64_t top)
{
	uint32_t n = tr->free_list;
	if (n != AS_NONE) {
		tr->free_list = nodes(tr)[n].link.l;
	} else {
		if (tr->tree.n == tr->cap) {
			uint32_t cap = tr->cap ? tr->cap * 2 : 1024;
			struct node *v =
				realloc(tr->tree.base, (size_t)cap * sizeof(*v));
			if (!v)
				return AS_NONE;
			tr->tree.base = v;
			tr->cap = cap;
		}
		n = tr->tree.n++;
	}
	nodes(tr)[n] = (struct node){.off = off, .top = top, .buf = buf};
	return n;
}

static void node_free(struct pool *tr, uint32_t n)
{
	nodes(tr)[n].link.l = tr->free_list;
	tr->free_list = n;
}

struct run {
	const struct as_trace *t;
	const struct as_plan *p;
	struct as_report *r;
	struct pool tr;
	uint32_t *roots;      /* per group */
	uint32_t *alias;      /* plan's aliases, or NULL */
	uint8_t *in_tree;     /* bitmap over buffers */
	uint64_t *capacity;
	bool nomem;
};

static bool in_tree(const struct run *v, uint32_t i)
{
	return v->in_tree[i >> 3] & (1u << (i & 7));
}

static void set_in_tree(struct run *v, uint32_t i, bool on)
{
	if (on)
		v->in_tree[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		v->in_tree[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

static void violation(struct run *v, enum as_violation_kind k, uint32_t a,
		      uint32_t b)
{
	v->r->valid = false;
	v->r->violations++;
	if (k == AS_V_OVERLAP)
		v->r->overlaps++;
	if (v->r->nfirst < sizeof(v->r->first) / sizeof(v->r->first[0]))
		v->r->first[v->r->nfirst++] = (struct as_violation){k, a, b};
}

static uint32_t group_of(const struct run *v, uint32_t i)
{
	uint32_t parent = v->alias ? v->alias[i] : AS_NONE;
	if (parent != AS_NONE)
		return v->p->nspaces + parent;
	return as_plan_space_of(v->p, v->t, i);
}

/* Checks that need no sweep; false when the buffer takes no part in it. */
static bool check_one(struct run *v, uint32_t i)
{
	const struct as_buffer *b = &v->t->buffers[i];
	uint64_t off = v->p->offset[i];
	if (off == AS_NO_OFFSET)
		return false;
	if (off > UINT64_MAX - b->size) {
		violation(v, AS_V_OVERFLOW, i, AS_NONE);
		return false;
	}
	if (off & (as_buffer_align(b) - 1))
		violation(v, AS_V_ALIGNMENT, i, AS_NONE);
	uint16_t sp = as_plan_space_of(v->p, v->t, i);
	if (sp >= v->p->nspaces) {
		violation(v, AS_V_CAPACITY, i, AS_NONE);
		return false;
	}
	if (v->capacity[sp] && off + b->size > v->capacity[sp])
		violation(v, AS_V_CAPACITY, i, AS_NONE);
	uint32_t parent = v->alias ? v->alias[i] : AS_NONE;
	if (parent != AS_NONE) {
		uint64_t po = v->p->offset[parent];
		const struct as_buffer *pb = &v->t->buffers[parent];
		if (po == AS_NO_OFFSET ||
		    as_plan_space_of(v->p, v->t, parent) != sp || off < po ||
		    off + b->size > po + pb->size) {
			violation(v, AS_V_ALIAS, i, parent);
			return false;
		}
	}
	return b->size > 0;
}

/* Buffer i's node (at off) out of group g's tree, back to the pool. */
static void uncover(struct run *v, uint32_t g, uint64_t off, uint32_t i)
{
	struct node key = {.off = off, .buf = i};
	uint32_t n = as_tree_remove(NODE_TREE(&v->tr.tree), &v->roots[g], &key);
	if (n != AS_NONE)
		node_free(&v->tr, n);
}

static void place(struct run *v, uint32_t i)
{
	uint32_t g = group_of(v, i), pred = AS_NONE, succ = AS_NONE;
	uint64_t off = v->p->offset[i], top = off + v->t->buffers[i].size;
	uint32_t n = node_new(&v->tr, i, off, top);
	if (n == AS_NONE) {
		v->nomem = true;
		return;
	}
	/* In, then out again when it overlaps a neighbour (a rare plan). */
	as_tree_insert(NODE_TREE(&v->tr.tree), &v->roots[g], n, &pred, &succ);
	const struct node *nd = nodes(&v->tr);
	if (pred != AS_NONE && nd[pred].top > off) {
		violation(v, AS_V_OVERLAP, nd[pred].buf, i);
	} else if (succ != AS_NONE && top > nd[succ].off) {
		violation(v, AS_V_OVERLAP, i, nd[succ].buf);
	} else {
		set_in_tree(v, i, true);
		return;
	}
	uncover(v, g, off, i);
}

static void unplace(struct run *v, uint32_t i)
{
	if (!in_tree(v, i))
		return;
	uint32_t g = group_of(v, i);
	uncover(v, g, v->p->offset[i], i);
	set_in_tree(v, i, false);
}

/* Fast path: the trace's own events, when no buffer is an alias. */
static void sweep_events(struct run *v, uint32_t ngroups)
{
	const struct as_trace *t = v->t;
	for (uint32_t e = 0; e < t->nevents; e++) {
		const struct as_event *ev = &t->events[e];
		if (ev->kind == AS_EV_CASE) {
			for (uint32_t g = 0; g < ngroups; g++)
				v->roots[g] = AS_NONE;
			memset(v->in_tree, 0, (t->nbuffers + 7) / 8);
			v->tr.tree.n = 0;
			v->tr.free_list = AS_NONE;
		} else if (ev->kind == AS_EV_ALLOC) {
			if (check_one(v, ev->arg))
				place(v, ev->arg);
		} else if (ev->kind == AS_EV_FREE) {
			unplace(v, ev->arg);
		}
	}
}

struct tev {
	uint64_t time;
	uint32_t is_alloc;
	uint32_t buf;
};

static int cmp_tev(const void *pa, const void *pb)
{
	const struct tev *a = pa, *b = pb;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	if (a->is_alloc != b->is_alloc)
		return a->is_alloc < b->is_alloc ? -1 : 1;
	return (a->buf > b->buf) - (a->buf < b->buf);
}

/* General path: lifetimes extended by aliases, sorted anew. */
static int sweep_sorted(struct run *v)
{
	const struct as_trace *t = v->t;
	uint32_t n = t->nbuffers;
	uint64_t *start = malloc(((size_t)n + 1) * sizeof(*start));
	uint64_t *end = malloc(((size_t)n + 1) * sizeof(*end));
	struct tev *ev = malloc(((size_t)n * 2 + 1) * sizeof(*ev));
	if (!start || !end || !ev) {
		free(start);
		free(end);
		free(ev);
		return AS_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		start[i] = t->buffers[i].start;
		end[i] = t->buffers[i].end;
	}
	/* Every ancestor covers its aliases (chains are short; cut at 64). */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pa = v->alias[i];
		for (int depth = 0; pa != AS_NONE && depth < 64; depth++) {
			if (start[pa] > t->buffers[i].start)
				start[pa] = t->buffers[i].start;
			if (end[pa] < t->buffers[i].end)
				end[pa] = t->buffers[i].end;
			pa = v->alias[pa];
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		ev[2 * i] = (struct tev){start[i], 1, i};
		ev[2 * i + 1] = (struct tev){end[i], 0, i};
	}
	qsort(ev, (size_t)n * 2, sizeof(*ev), cmp_tev);
	for (size_t k = 0; k < (size_t)n * 2; k++) {
		uint32_t i = ev[k].buf;
		if (!ev[k].is_alloc)
			unplace(v, i);
		else if (check_one(v, i))
			place(v, i);
	}
	free(start);
	free(end);
	free(ev);
	return AS_OK;
}

int as_validate(const struct as_trace *t, const struct as_plan *p,
		struct as_report *out)
{
	struct as_report r = {.valid = true};
	struct run v = {.t = t, .p = p, .r = &r};
	bool aliases = false;
	for (uint32_t i = 0; i < t->nbuffers && !aliases; i++)
		aliases = as_plan_alias_of(p, t, i) != AS_NONE;
	uint32_t ngroups = p->nspaces + (aliases ? t->nbuffers : 0);
	size_t n = (size_t)t->nbuffers + 1;
	v.tr.free_list = AS_NONE;
	v.tr.tree = (struct as_tree){.stride = sizeof(struct node),
				     .link = offsetof(struct node, link),
				     .cmp = node_cmp};
	v.in_tree = calloc(n / 8 + 1, 1);
	v.roots = malloc(((size_t)ngroups + 1) * sizeof(uint32_t));
	v.capacity = calloc((size_t)p->nspaces + 1, sizeof(uint64_t));
	if (aliases)
		v.alias = malloc(n * sizeof(uint32_t));
	int err = AS_ENOMEM;
	if (!v.in_tree || !v.roots ||
	    !v.capacity || (aliases && !v.alias))
		goto out;
	for (uint32_t g = 0; g < ngroups; g++)
		v.roots[g] = AS_NONE;
	for (uint16_t s = 0; s < p->nspaces; s++)
		v.capacity[s] = p->space_capacity ? p->space_capacity[s]
			      : s < t->nspaces   ? t->spaces[s].capacity
						 : 0;
	if (aliases) {
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			v.alias[i] = as_plan_alias_of(p, t, i);
			if (v.alias[i] != AS_NONE &&
			    (v.alias[i] >= t->nbuffers || v.alias[i] == i))
				v.alias[i] = AS_NONE;
		}
		err = sweep_sorted(&v);
	} else {
		sweep_events(&v, ngroups);
		err = AS_OK;
	}
	if (err == AS_OK && v.nomem)
		err = AS_ENOMEM;
	if (err == AS_OK)
		*out = r;
out:
	free(v.tr.tree.base);
	free(v.in_tree);
	free(v.roots);
	free(v.capacity);
	free(v.alias);
	return err;
}

const char *as_violation_text(const struct as_trace *t,
			      const struct as_plan *p,
			      const struct as_violation *v, char *buf,
			      size_t len)
{
	const struct as_buffer *a = &t->buffers[v->a];
	unsigned long long ao = p->offset[v->a];
	const char *an = as_trace_buffer_name(t, v->a);
	const char *bn = v->b != AS_NONE ? as_trace_buffer_name(t, v->b) : NULL;
	an = an ? an : "?";
	bn = bn ? bn : "?";
	switch (v->kind) {
	case AS_V_OVERLAP: {
		const struct as_buffer *b = &t->buffers[v->b];
		unsigned long long bo = p->offset[v->b];
		snprintf(buf, len,
			 "'%s' (time [%llu, %llu), addresses [%llu, %llu)) "
			 "overlaps '%s' (time [%llu, %llu), addresses [%llu, "
			 "%llu))",
			 an, (unsigned long long)a->start,
			 (unsigned long long)a->end, ao,
			 ao + (unsigned long long)a->size, bn,
			 (unsigned long long)b->start,
			 (unsigned long long)b->end, bo,
			 bo + (unsigned long long)b->size);
		break;
	}
	case AS_V_ALIGNMENT:
		snprintf(buf, len, "'%s' at offset %llu breaks its alignment "
				   "of %llu",
			 an, ao, (unsigned long long)as_buffer_align(a));
		break;
	case AS_V_CAPACITY:
		snprintf(buf, len, "'%s' ([%llu, %llu)) lies beyond the "
				   "capacity of its space",
			 an, ao, ao + (unsigned long long)a->size);
		break;
	case AS_V_ALIAS:
		snprintf(buf, len, "'%s' at %llu does not lie inside '%s', "
				   "the buffer it is placed in",
			 an, ao,
			 bn);
		break;
	case AS_V_OVERFLOW:
		snprintf(buf, len, "'%s': offset %llu + size %llu overflows",
			 an, ao, (unsigned long long)a->size);
		break;
	}
	return buf;
}
