/*
 * The library's one balanced tree: a treap over a caller's array (see
 * tree.h for the interface, the invariants and the inline operations).
 * Here are the recursive ones: insert and remove that keep summaries
 * (insert walks down to where the new node's priority puts it and splits
 * only the subtree found there; remove joins the node's two children in
 * its place, both redo the summaries of the path they touched), split,
 * join, update, walk and check.
 */
#include <stdlib.h>
#include <string.h>

#include "core/tree.h"

#define NIL AS_TREE_NIL

uint32_t as_tree_prio(uint32_t x)
{
	x *= 0x9e3779b1u;
	x ^= x >> 15;
	x *= 0x85ebca77u;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	return x ^ (x >> 16);
}

static inline struct as_tree_link *L(const struct as_tree *t, uint32_t x)
{
	return as_tree_link_of(t, x);
}

static inline int cmp(const struct as_tree *t, uint32_t x, const void *key)
{
	return as_tree_cmp_at(t, x, key);
}

static void fix(const struct as_tree *t, uint32_t x)
{
	if (!t->aug)
		return;
	const struct as_tree_link *k = L(t, x);
	t->aug(as_tree_at(t, x), k->l == NIL ? NULL : as_tree_at(t, k->l),
	       k->r == NIL ? NULL : as_tree_at(t, k->r), t->ctx);
}

void as_tree_split(const struct as_tree *t, uint32_t root, const void *key,
		   bool after, uint32_t *lo, uint32_t *hi)
{
	if (root == NIL) {
		*lo = *hi = NIL;
		return;
	}
	int c = cmp(t, root, key);
	struct as_tree_link *k = L(t, root);
	if (c < 0 || (after && c == 0)) {
		as_tree_split(t, k->r, key, after, &k->r, hi);
		*lo = root;
	} else {
		as_tree_split(t, k->l, key, after, lo, &k->l);
		*hi = root;
	}
	fix(t, root);
}

void as_tree_split_where(const struct as_tree *t, uint32_t root,
			 as_tree_pred_fn left, void *arg, uint32_t *lo,
			 uint32_t *hi)
{
	if (root == NIL) {
		*lo = *hi = NIL;
		return;
	}
	struct as_tree_link *k = L(t, root);
	if (left(as_tree_at(t, root), arg)) {
		as_tree_split_where(t, k->r, left, arg, &k->r, hi);
		*lo = root;
	} else {
		as_tree_split_where(t, k->l, left, arg, lo, &k->l);
		*hi = root;
	}
	fix(t, root);
}

uint32_t as_tree_single(const struct as_tree *t, uint32_t x)
{
	struct as_tree_link *k = L(t, x);
	k->l = k->r = NIL;
	k->prio = as_tree_prio(x);
	fix(t, x);
	return x;
}

int as_tree_walk(const struct as_tree *t, uint32_t root,
		 as_tree_visit_fn visit, void *arg)
{
	while (root != NIL) {
		const struct as_tree_link *k = L(t, root);
		int err = as_tree_walk(t, k->l, visit, arg);
		if (err)
			return err;
		if ((err = visit(root, arg)))
			return err;
		root = k->r;  /* the right subtree without another frame */
	}
	return 0;
}

uint32_t as_tree_join(const struct as_tree *t, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	struct as_tree_link *ka = L(t, a), *kb = L(t, b);
	if (ka->prio > kb->prio || (ka->prio == kb->prio && a < b)) {
		ka->r = as_tree_join(t, ka->r, b);
		fix(t, a);
		return a;
	}
	kb->l = as_tree_join(t, a, kb->l);
	fix(t, b);
	return b;
}

/* Node x under root; *pred and *succ get its neighbours. */
static uint32_t put(const struct as_tree *t, uint32_t root, uint32_t x,
		    const void *key, uint32_t *pred, uint32_t *succ)
{
	if (root == NIL)
		return x;
	struct as_tree_link *k = L(t, root);
	if (as_tree_above(t, x, root)) {
		struct as_tree_link *kx = L(t, x);
		as_tree_split(t, root, key, false, &kx->l, &kx->r);
		fix(t, x);
		if (kx->l != NIL)
			*pred = as_tree_last(t, kx->l);
		if (kx->r != NIL)
			*succ = as_tree_first(t, kx->r);
		return x;
	}
	if (cmp(t, root, key) < 0) {
		*pred = root;
		k->r = put(t, k->r, x, key, pred, succ);
	} else {
		*succ = root;
		k->l = put(t, k->l, x, key, pred, succ);
	}
	fix(t, root);
	return root;
}

void as_tree_put(const struct as_tree *t, uint32_t *root, uint32_t x,
		 uint32_t *pred, uint32_t *succ)
{
	uint32_t p = NIL, s = NIL;
	as_tree_single(t, x);
	*root = put(t, *root, x, as_tree_at(t, x), &p, &s);
	if (pred)
		*pred = p;
	if (succ)
		*succ = s;
}

static uint32_t take(const struct as_tree *t, uint32_t *link,
		     const void *key)
{
	uint32_t n = *link;
	if (n == NIL)
		return NIL;
	int c = cmp(t, n, key);
	struct as_tree_link *k = L(t, n);
	if (c == 0) {
		*link = as_tree_join(t, k->l, k->r);
		k->l = k->r = NIL;
		return n;
	}
	uint32_t x = take(t, c > 0 ? &k->l : &k->r, key);
	if (x != NIL)
		fix(t, n);
	return x;
}

uint32_t as_tree_take(const struct as_tree *t, uint32_t *root,
		      const void *key)
{
	return take(t, root, key);
}

void as_tree_refix(const struct as_tree *t, uint32_t root, uint32_t x)
{
	if (root == NIL)
		return;
	if (root != x) {
		int c = cmp(t, root, as_tree_at(t, x));
		struct as_tree_link *k = L(t, root);
		as_tree_refix(t, c > 0 ? k->l : k->r, x);
	}
	fix(t, root);
}

struct check {
	const struct as_tree *t;
	uint8_t *seen;
	unsigned char *scratch;  /* one element, for the summary check */
	uint32_t prev;           /* the last node in order, NIL first */
	uint64_t nodes, bad;
};

static void check_node(struct check *c, uint32_t x, uint32_t parent,
		       unsigned depth)
{
	const struct as_tree *t = c->t;
	if (x == NIL)
		return;
	if (x >= t->n || depth > 4096) {
		c->bad++;
		return;
	}
	if (c->seen) {
		if (c->seen[x]) {
			c->bad++;
			return;
		}
		c->seen[x] = 1;
	}
	const struct as_tree_link *k = L(t, x);
	if (k->prio != as_tree_prio(x))
		c->bad++;
	if (parent != NIL && as_tree_above(t, x, parent))
		c->bad++;
	check_node(c, k->l, x, depth + 1);
	if (c->prev != NIL && cmp(t, c->prev, as_tree_at(t, x)) >= 0)
		c->bad++;
	c->prev = x;
	c->nodes++;
	if (t->aug && c->scratch) {
		void *e = as_tree_at(t, x);
		memcpy(c->scratch, e, t->stride);
		fix(t, x);
		if (memcmp(c->scratch, e, t->stride) != 0)
			c->bad++;
		memcpy(e, c->scratch, t->stride);
	}
	check_node(c, k->r, x, depth + 1);
}

uint64_t as_tree_check(const struct as_tree *t, uint32_t root,
		       uint64_t *nodes, uint8_t *seen)
{
	struct check c = {t, seen, NULL, NIL, 0, 0};
	if (t->aug) {
		c.scratch = malloc(t->stride);
		if (!c.scratch)
			c.bad++;  /* the summaries go unchecked */
	}
	check_node(&c, root, NIL, 0);
	free(c.scratch);
	if (nodes)
		*nodes = c.nodes;
	return c.bad;
}
