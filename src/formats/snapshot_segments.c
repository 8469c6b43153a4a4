/* PyTorch snapshots: reserved ranges over time, open ranges in a tree
 * (core/tree.h) by (device, address). */
#include "formats/snapshot.h"

/* ---- Segments ---- */

/*
 * The open ranges: a tree ordered by (device, address), split and joined
 * (no parent pointers). The ranges of a device are disjoint, so ordering by
 * start also orders by end, and the ranges meeting [addr, end) are one
 * run: split it out, look at it, put back what remains. Expected O(log n)
 * per operation plus the ranges touched, whatever order the trace uses.
 */
#define NIL AS_TREE_NIL

void as_snap_tree_init(struct ctx *c)
{
	c->tree = (struct as_tree){.stride = sizeof(struct tnode),
				   .link = offsetof(struct tnode, link)};
}

static uint32_t t_merge(struct ctx *c, uint32_t a, uint32_t b)
{
	return as_tree_join(&c->tree, a, b);
}

struct cut {
	uint32_t dev;
	uint64_t x;
	bool by_end;
};

/* Whether a range lies before the cut: below its device, or on it and
 * ending (by_end) or starting before x. */
static bool before_cut(const void *node, void *arg)
{
	const struct seg *s = &((const struct tnode *)node)->s;
	const struct cut *k = arg;
	return s->dev < k->dev ||
	       (s->dev == k->dev && (k->by_end ? s->addr + s->size <= k->x
					       : s->addr < k->x));
}

/* Split t into the nodes before the cut (dev, x, by_end) and the rest. */
static void t_split(struct ctx *c, uint32_t t, uint32_t dev, uint64_t x,
		    bool by_end, uint32_t *l, uint32_t *r)
{
	struct cut k = {dev, x, by_end};
	as_tree_split_where(&c->tree, t, before_cut, &k, l, r);
}

/* The open ranges of `dev` meeting [addr, end) in *m; before in *l. */
static void t_range(struct ctx *c, uint32_t dev, uint64_t addr, uint64_t end,
		    uint32_t *l, uint32_t *m, uint32_t *r)
{
	uint32_t rest;
	t_split(c, c->root, dev, addr, true, l, &rest);
	t_split(c, rest, dev, end, false, m, r);
}

static int walk_one(uint32_t x, void *arg)
{
	struct ctx *c = arg;
	if (!as_snap_grow_array((void **)&c->walk, &c->capwalk, c->nwalk + 1,
			sizeof(*c->walk)))
		return as_snap_nomem(c);
	c->walk[c->nwalk++] = x;
	return AS_OK;
}

/* Append the nodes of t in order to walk[]. */
int as_snap_t_walk(struct ctx *c, uint32_t t)
{
	return as_tree_walk(&c->tree, t, walk_one, c);
}

static int t_node(struct ctx *c, const struct seg *s, uint32_t *out)
{
	if (c->ntn >= NIL - 1 ||
	    !as_snap_grow_array((void **)&c->tn, &c->captn, c->ntn + 1, sizeof(*c->tn)))
		return as_snap_nomem(c);
	c->tree.base = c->tn;
	c->tree.n = (uint32_t)c->ntn + 1;
	c->tn[c->ntn] = (struct tnode){.s = *s};
	*out = as_tree_single(&c->tree, (uint32_t)c->ntn++);
	return AS_OK;
}

int as_snap_seg_done(struct ctx *c, const struct seg *s)
{
	if (s->size == 0 || s->end <= s->start)
		return AS_OK;
	if (!as_snap_grow_array((void **)&c->done, &c->capdone, c->ndone + 1,
			sizeof(*c->done)))
		return as_snap_nomem(c);
	c->done[c->ndone++] = *s;
	return AS_OK;
}

/*
 * Close [addr, addr + size) of `dev` at `now`: open ranges inside it end
 * (split where they stick out); parts no open range covers existed before
 * the trace and get [0, now).
 */
int as_snap_seg_close(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t now, uint16_t stream,
		     uint8_t flags)
{
	uint32_t l, m, r, keep[2];
	int nkeep = 0, err;
	if (size == 0 && addr < UINT64_MAX) {
		/* A free without its size: the open range starting there. */
		t_range(c, dev, addr, addr + 1, &l, &m, &r);
		if (m != NIL && c->tn[m].s.addr == addr)
			size = c->tn[m].s.size;
		c->root = t_merge(c, t_merge(c, l, m), r);
	}
	uint64_t end = addr + size, cur = addr;
	t_range(c, dev, addr, end, &l, &m, &r);
	c->nwalk = 0;
	if ((err = as_snap_t_walk(c, m)))
		goto out;
	for (size_t j = 0; j < c->nwalk; j++) {
		struct seg o = c->tn[c->walk[j]].s;
		uint64_t oe = o.addr + o.size;
		if (o.addr > cur) {
			struct seg before = {cur, o.addr - cur, 0, now, dev,
					     stream, flags};
			if ((err = as_snap_seg_done(c, &before)))
				goto out;
		}
		uint64_t lo = o.addr > addr ? o.addr : addr;
		uint64_t hi = oe < end ? oe : end;
		struct seg piece = o;
		piece.addr = lo;
		piece.size = hi - lo;
		piece.end = now;
		if ((err = as_snap_seg_done(c, &piece)))
			goto out;
		/* Only the first can start before, the last end after. */
		if (o.addr < addr) {
			struct seg k = o;
			k.size = addr - o.addr;
			if ((err = t_node(c, &k, &keep[nkeep++])))
				goto out;
		}
		if (oe > end) {
			struct seg k = o;
			k.addr = end;
			k.size = oe - end;
			if ((err = t_node(c, &k, &keep[nkeep++])))
				goto out;
		}
		cur = hi;
	}
	if (cur < end) {
		struct seg before = {cur, end - cur, 0, now, dev, stream, flags};
		if ((err = as_snap_seg_done(c, &before)))
			goto out;
	}
	m = NIL; /* closed; the remainders take its place */
	for (int k = 0; k < nkeep; k++)
		m = t_merge(c, m, keep[k]);
out:
	c->root = t_merge(c, t_merge(c, l, m), r);
	return err;
}

int as_snap_seg_open(struct ctx *c, const struct entry *e, uint64_t now,
		    uint8_t flags)
{
	uint32_t l, m, r, n;
	int err;
	t_range(c, e->dev, e->addr, e->addr + e->size, &l, &m, &r);
	c->root = t_merge(c, t_merge(c, l, m), r);
	if (m != NIL) {
		/* Overlaps a range still open: the trace lost its free. */
		if ((err = as_snap_seg_close(c, e->dev, e->addr, e->size, now,
				     e->stream, flags)) ||
		    (err = as_builder_count(c->b, "snapshot_segment_overlaps",
					    1)))
			return err;
	}
	struct seg s = {e->addr, e->size, now, 0, e->dev, e->stream, flags};
	if ((err = t_node(c, &s, &n)))
		return err;
	t_split(c, c->root, e->dev, e->addr, false, &l, &r);
	c->root = t_merge(c, t_merge(c, l, n), r);
	return AS_OK;
}

/* A final segment: the parts no open range covers lived the whole time. */
int as_snap_seg_final(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t end_step, uint16_t stream,
		     uint8_t flags)
{
	uint64_t end = addr + size, cur = addr;
	uint32_t l, m, r;
	int err;
	t_range(c, dev, addr, end, &l, &m, &r);
	c->nwalk = 0;
	err = as_snap_t_walk(c, m);
	c->root = t_merge(c, t_merge(c, l, m), r);
	for (size_t j = 0; err == AS_OK && j < c->nwalk; j++) {
		const struct seg *o = &c->tn[c->walk[j]].s;
		if (o->addr > cur) {
			struct seg s = {cur, o->addr - cur, 0, end_step, dev,
					stream, flags};
			err = as_snap_seg_done(c, &s);
		}
		if (o->addr + o->size > cur)
			cur = o->addr + o->size;
	}
	if (err == AS_OK && cur < end) {
		struct seg s = {cur, end - cur, 0, end_step, dev, stream, flags};
		err = as_snap_seg_done(c, &s);
	}
	return err;
}

