/*
 * Private: the library's one balanced search tree, a treap over nodes that
 * live in a caller's array (intrusive: each element embeds a struct
 * as_tree_link) and are named by their index, so the array may grow by
 * realloc without breaking a link. Many trees may share one array (each has
 * its own root, a uint32_t the caller keeps; AS_TREE_NIL when empty).
 *
 * The caller describes its array once in a struct as_tree: where it is, the
 * size of an element, where the link sits inside one, how two elements
 * compare, and optionally how a node's summary (a subtree's largest free
 * size, its count, ...) follows from its own fields and its children's.
 * Priorities are a hash of the node's index, so a tree's shape, and every
 * run, is the same from one run to the next.
 *
 * Keys are the elements themselves: a lookup passes a pointer to an element
 * (or to a struct that begins like one) with the key fields set, and `cmp`
 * only reads those. Keys in one tree are distinct under `cmp`.
 */
#ifndef AS_CORE_TREE_H
#define AS_CORE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AS_TREE_NIL UINT32_MAX

/*
 * +------------------------------------------------------------------+
 * | Invariants of a tree (as_tree_check counts the broken ones):     |
 * | - in-order, cmp(left subtree) < cmp(node) < cmp(right subtree):  |
 * |   consecutive nodes compare strictly increasing;                 |
 * | - heap: a node's prio is >= each child's prio;                   |
 * | - prio == as_tree_prio(index) for every node in the tree;        |
 * | - with `aug`, each node's summary is what `aug` computes from    |
 * |   its fields and its children's (children summarised first);     |
 * | - no index is reached twice, every index is < the array's size. |
 * +------------------------------------------------------------------+
 */
struct as_tree_link {
	uint32_t l, r;  /* children, AS_TREE_NIL for none */
	uint32_t prio;  /* as_tree_prio(own index) while in a tree */
};

/* a < b: negative, equal: 0, a > b: positive. */
typedef int (*as_tree_cmp_fn)(const void *a, const void *b, void *ctx);

/* Recompute node's summary from its own fields and its children's (NULL:
 * no such child). */
typedef void (*as_tree_aug_fn)(void *node, const void *l, const void *r,
			       void *ctx);

struct as_tree {
	void *base;           /* element 0 (reset after a realloc) */
	size_t stride;        /* sizeof an element */
	size_t link;          /* offsetof the struct as_tree_link */
	as_tree_cmp_fn cmp;
	as_tree_aug_fn aug;   /* NULL: no summary */
	void *ctx;            /* passed to cmp and aug */
	uint32_t n;           /* elements in the array (for as_tree_check) */
};

static inline void *as_tree_at(const struct as_tree *t, uint32_t x)
{
	return (char *)t->base + (size_t)x * t->stride;
}

static inline struct as_tree_link *as_tree_link_of(const struct as_tree *t,
						   uint32_t x)
{
	return (struct as_tree_link *)((char *)t->base +
				       (size_t)x * t->stride + t->link);
}

/* The deterministic priority of node index x. */
uint32_t as_tree_prio(uint32_t x);

/*
 * The general insert and remove (any tree, summaries kept; recursive, out
 * of line). Callers use as_tree_insert and as_tree_remove below, which
 * take a shorter path when the tree keeps no summary.
 */
void as_tree_put(const struct as_tree *t, uint32_t *root, uint32_t x,
		 uint32_t *pred, uint32_t *succ);
uint32_t as_tree_take(const struct as_tree *t, uint32_t *root,
		      const void *key);

/*
 * The operations every lookup and most updates use are inline, for the
 * compiler to call `cmp` directly: a caller that passes a struct as_tree
 * built from constants where it calls (a compound literal, or a local
 * filled by an inline helper) gets code as fast as a hand-written tree.
 */
#if defined(__GNUC__)
#define AS_TREE_INLINE static inline __attribute__((always_inline))
#else
#define AS_TREE_INLINE static inline
#endif

AS_TREE_INLINE int as_tree_cmp_at(const struct as_tree *t, uint32_t x,
				  const void *key)
{
	return t->cmp(as_tree_at(t, x), key, t->ctx);
}

/* Whether node a goes above node b in the heap (ties: the lower index). */
AS_TREE_INLINE bool as_tree_above(const struct as_tree *t, uint32_t a,
				  uint32_t b)
{
	uint32_t pa = as_tree_link_of(t, a)->prio;
	uint32_t pb = as_tree_link_of(t, b)->prio;
	return pa > pb || (pa == pb && a < b);
}

/* The first and last nodes of the tree at root; NIL when it is empty. */
AS_TREE_INLINE uint32_t as_tree_first(const struct as_tree *t, uint32_t root)
{
	if (root != AS_TREE_NIL)
		while (as_tree_link_of(t, root)->l != AS_TREE_NIL)
			root = as_tree_link_of(t, root)->l;
	return root;
}

AS_TREE_INLINE uint32_t as_tree_last(const struct as_tree *t, uint32_t root)
{
	if (root != AS_TREE_NIL)
		while (as_tree_link_of(t, root)->r != AS_TREE_NIL)
			root = as_tree_link_of(t, root)->r;
	return root;
}

void as_tree_split(const struct as_tree *t, uint32_t root, const void *key,
		   bool after, uint32_t *lo, uint32_t *hi);
uint32_t as_tree_join(const struct as_tree *t, uint32_t a, uint32_t b);

/* The deepest path the inline operations keep; deeper ones (never seen
 * with hashed priorities) go out of line. */
#define AS_TREE_PATH 128

/* The summary of node x from its children's. */
AS_TREE_INLINE void as_tree_fix(const struct as_tree *t, uint32_t x)
{
	const struct as_tree_link *k = as_tree_link_of(t, x);
	t->aug(as_tree_at(t, x),
	       k->l == AS_TREE_NIL ? NULL : as_tree_at(t, k->l),
	       k->r == AS_TREE_NIL ? NULL : as_tree_at(t, k->r), t->ctx);
}

/* Recompute the summaries on the path from root down to node x after the
 * caller changed x's non-key fields (a size, a free flag). */
void as_tree_refix(const struct as_tree *t, uint32_t root, uint32_t x);
AS_TREE_INLINE void as_tree_update(const struct as_tree *t, uint32_t root,
				   uint32_t x)
{
	uint32_t path[AS_TREE_PATH], n = 0;
	const void *key = as_tree_at(t, x);
	if (!t->aug)
		return;
	while (root != AS_TREE_NIL && root != x) {
		if (n == AS_TREE_PATH) {
			as_tree_refix(t, path[0], x);
			return;
		}
		path[n++] = root;
		root = as_tree_cmp_at(t, root, key) > 0
			       ? as_tree_link_of(t, root)->l
			       : as_tree_link_of(t, root)->r;
	}
	if (root == x)
		as_tree_fix(t, x);
	while (n)
		as_tree_fix(t, path[--n]);
}

/* as_tree_insert of a tree with summaries: down to where x's priority puts
 * it (the path kept), the subtree there split around x, the path's
 * summaries redone from below. */
AS_TREE_INLINE void as_tree_put_aug(const struct as_tree *t, uint32_t *root,
				    uint32_t x, uint32_t *pred,
				    uint32_t *succ)
{
	uint32_t path[AS_TREE_PATH], n = 0, p = AS_TREE_NIL, s = AS_TREE_NIL;
	uint32_t *lk = root;
	struct as_tree_link *kx = as_tree_link_of(t, x);
	const void *key = as_tree_at(t, x);
	kx->prio = as_tree_prio(x);
	while (*lk != AS_TREE_NIL && as_tree_above(t, *lk, x)) {
		if (n == AS_TREE_PATH) {
			as_tree_put(t, root, x, pred, succ);
			return;
		}
		path[n++] = *lk;
		struct as_tree_link *k = as_tree_link_of(t, *lk);
		if (as_tree_cmp_at(t, *lk, key) < 0) {
			p = *lk;
			lk = &k->r;
		} else {
			s = *lk;
			lk = &k->l;
		}
	}
	as_tree_split(t, *lk, key, false, &kx->l, &kx->r);
	if (kx->l != AS_TREE_NIL)
		p = as_tree_last(t, kx->l);
	if (kx->r != AS_TREE_NIL)
		s = as_tree_first(t, kx->r);
	as_tree_fix(t, x);
	*lk = x;
	while (n)
		as_tree_fix(t, path[--n]);
	if (pred)
		*pred = p;
	if (succ)
		*succ = s;
}

/* as_tree_remove of a tree with summaries: the node's children joined in
 * its place, the path's summaries redone from below. */
AS_TREE_INLINE uint32_t as_tree_take_aug(const struct as_tree *t,
					 uint32_t *root, const void *key)
{
	uint32_t path[AS_TREE_PATH], n = 0, *lk = root;
	int c;
	while (*lk != AS_TREE_NIL && (c = as_tree_cmp_at(t, *lk, key)) != 0) {
		if (n == AS_TREE_PATH)
			return as_tree_take(t, root, key);
		path[n++] = *lk;
		lk = c > 0 ? &as_tree_link_of(t, *lk)->l
			   : &as_tree_link_of(t, *lk)->r;
	}
	uint32_t x = *lk;
	if (x == AS_TREE_NIL)
		return x;
	struct as_tree_link *kx = as_tree_link_of(t, x);
	*lk = as_tree_join(t, kx->l, kx->r);
	kx->l = kx->r = AS_TREE_NIL;
	while (n)
		as_tree_fix(t, path[--n]);
	return x;
}

/* Node x (its key set, not in a tree) into the tree at *root; *pred and
 * *succ (each may be NULL) get its neighbours there, NIL for none. */
AS_TREE_INLINE void as_tree_insert(const struct as_tree *t, uint32_t *root,
				   uint32_t x, uint32_t *pred, uint32_t *succ)
{
	if (t->aug) {
		as_tree_put_aug(t, root, x, pred, succ);
		return;
	}
	/* Down while the nodes go above x, then the subtree found there is
	 * zipped apart around x's key into x's children. */
	struct as_tree_link *kx = as_tree_link_of(t, x);
	const void *key = as_tree_at(t, x);
	uint32_t p = AS_TREE_NIL, s = AS_TREE_NIL, *lk = root;
	kx->prio = as_tree_prio(x);
	while (*lk != AS_TREE_NIL && as_tree_above(t, *lk, x)) {
		struct as_tree_link *k = as_tree_link_of(t, *lk);
		if (as_tree_cmp_at(t, *lk, key) < 0) {
			p = *lk;
			lk = &k->r;
		} else {
			s = *lk;
			lk = &k->l;
		}
	}
	uint32_t cur = *lk, *l = &kx->l, *r = &kx->r;
	while (cur != AS_TREE_NIL) {
		struct as_tree_link *k = as_tree_link_of(t, cur);
		if (as_tree_cmp_at(t, cur, key) < 0) {
			*l = p = cur;
			l = &k->r;
			cur = k->r;
		} else {
			*r = s = cur;
			r = &k->l;
			cur = k->l;
		}
	}
	*l = *r = AS_TREE_NIL;
	*lk = x;
	if (pred)
		*pred = p;
	if (succ)
		*succ = s;
}

/* The node equal to key out of the tree at *root: its index, or NIL (the
 * tree unchanged) when there is none. To remove node x, pass its element. */
AS_TREE_INLINE uint32_t as_tree_remove(const struct as_tree *t,
				       uint32_t *root, const void *key)
{
	if (t->aug)
		return as_tree_take_aug(t, root, key);
	uint32_t *lk = root;
	int c;
	while (*lk != AS_TREE_NIL && (c = as_tree_cmp_at(t, *lk, key)) != 0)
		lk = c > 0 ? &as_tree_link_of(t, *lk)->l
			   : &as_tree_link_of(t, *lk)->r;
	uint32_t x = *lk;
	if (x == AS_TREE_NIL)
		return x;
	/* its two subtrees zipped together in its place */
	struct as_tree_link *kx = as_tree_link_of(t, x);
	uint32_t l = kx->l, r = kx->r;
	while (l != AS_TREE_NIL && r != AS_TREE_NIL) {
		if (as_tree_above(t, l, r)) {
			*lk = l;
			lk = &as_tree_link_of(t, l)->r;
			l = *lk;
		} else {
			*lk = r;
			lk = &as_tree_link_of(t, r)->l;
			r = *lk;
		}
	}
	*lk = l != AS_TREE_NIL ? l : r;
	kx->l = kx->r = AS_TREE_NIL;
	return x;
}

/* The node equal to key, the first >= key, the last < key; or NIL. */
AS_TREE_INLINE uint32_t as_tree_find(const struct as_tree *t, uint32_t root,
				     const void *key)
{
	while (root != AS_TREE_NIL) {
		int c = as_tree_cmp_at(t, root, key);
		if (c == 0)
			return root;
		root = c > 0 ? as_tree_link_of(t, root)->l
			     : as_tree_link_of(t, root)->r;
	}
	return AS_TREE_NIL;
}

AS_TREE_INLINE uint32_t as_tree_lower_bound(const struct as_tree *t,
					    uint32_t root, const void *key)
{
	uint32_t best = AS_TREE_NIL;
	while (root != AS_TREE_NIL) {
		if (as_tree_cmp_at(t, root, key) >= 0) {
			best = root;
			root = as_tree_link_of(t, root)->l;
		} else {
			root = as_tree_link_of(t, root)->r;
		}
	}
	return best;
}

AS_TREE_INLINE uint32_t as_tree_before(const struct as_tree *t,
				       uint32_t root, const void *key)
{
	uint32_t best = AS_TREE_NIL;
	while (root != AS_TREE_NIL) {
		if (as_tree_cmp_at(t, root, key) < 0) {
			best = root;
			root = as_tree_link_of(t, root)->r;
		} else {
			root = as_tree_link_of(t, root)->l;
		}
	}
	return best;
}

/* The neighbours of node x (in the tree); NIL when there is none. */
AS_TREE_INLINE uint32_t as_tree_next(const struct as_tree *t, uint32_t root,
				     uint32_t x)
{
	if (as_tree_link_of(t, x)->r != AS_TREE_NIL)
		return as_tree_first(t, as_tree_link_of(t, x)->r);
	const void *key = as_tree_at(t, x);
	uint32_t best = AS_TREE_NIL;
	while (root != AS_TREE_NIL && root != x) {
		if (as_tree_cmp_at(t, root, key) > 0) {
			best = root;
			root = as_tree_link_of(t, root)->l;
		} else {
			root = as_tree_link_of(t, root)->r;
		}
	}
	return best;
}

AS_TREE_INLINE uint32_t as_tree_prev(const struct as_tree *t, uint32_t root,
				     uint32_t x)
{
	if (as_tree_link_of(t, x)->l != AS_TREE_NIL)
		return as_tree_last(t, as_tree_link_of(t, x)->l);
	const void *key = as_tree_at(t, x);
	uint32_t best = AS_TREE_NIL;
	while (root != AS_TREE_NIL && root != x) {
		if (as_tree_cmp_at(t, root, key) < 0) {
			best = root;
			root = as_tree_link_of(t, root)->r;
		} else {
			root = as_tree_link_of(t, root)->l;
		}
	}
	return best;
}

/*
 * Split the tree at root into *lo (keys < key) and *hi (keys >= key), or
 * with `after`, *lo (keys <= key) and *hi (keys > key).
 */
void as_tree_split(const struct as_tree *t, uint32_t root, const void *key,
		   bool after, uint32_t *lo, uint32_t *hi);

/*
 * Split by a predicate instead of a key: *lo gets the nodes `left` holds
 * for, *hi the rest; `left` must hold for a prefix of the in-order nodes.
 */
typedef bool (*as_tree_pred_fn)(const void *node, void *arg);
void as_tree_split_where(const struct as_tree *t, uint32_t root,
			 as_tree_pred_fn left, void *arg, uint32_t *lo,
			 uint32_t *hi);

/* One tree of a's nodes then b's (every key of a below every key of b). */
uint32_t as_tree_join(const struct as_tree *t, uint32_t a, uint32_t b);

/* Node x, not in a tree, as a tree of its own (for users that build their
 * trees by split and join alone); returns x. */
uint32_t as_tree_single(const struct as_tree *t, uint32_t x);

/* Visit the nodes of the tree at root in order; stops at (and returns) the
 * first non-zero answer of `visit`. */
typedef int (*as_tree_visit_fn)(uint32_t x, void *arg);
int as_tree_walk(const struct as_tree *t, uint32_t root,
		 as_tree_visit_fn visit, void *arg);


/*
 * A search guided by the summaries: from root, `step` is shown a node and
 * its children (NULL: none) and answers where to go.
 */
enum as_tree_step { AS_TREE_LEFT, AS_TREE_RIGHT, AS_TREE_HERE,
		    AS_TREE_STOP };
typedef enum as_tree_step (*as_tree_step_fn)(const void *node,
					     const void *l, const void *r,
					     void *arg);
/* The node `step` answered HERE for, or NIL (STOP, or off the tree). */
AS_TREE_INLINE uint32_t as_tree_descend(const struct as_tree *t,
					uint32_t root, as_tree_step_fn step,
					void *arg)
{
	while (root != AS_TREE_NIL) {
		const struct as_tree_link *k = as_tree_link_of(t, root);
		switch (step(as_tree_at(t, root),
			     k->l == AS_TREE_NIL ? NULL : as_tree_at(t, k->l),
			     k->r == AS_TREE_NIL ? NULL : as_tree_at(t, k->r),
			     arg)) {
		case AS_TREE_LEFT:
			root = k->l;
			break;
		case AS_TREE_RIGHT:
			root = k->r;
			break;
		case AS_TREE_HERE:
			return root;
		case AS_TREE_STOP:
			return AS_TREE_NIL;
		}
	}
	return AS_TREE_NIL;
}

/*
 * Count the broken invariants of the tree at root (see the box above);
 * *nodes (may be NULL) gets how many nodes it holds. `seen` (may be NULL)
 * is a caller's byte per element, zero on entry, marking each node met:
 * pass the same one to check many trees over one array for sharing.
 */
uint64_t as_tree_check(const struct as_tree *t, uint32_t root,
		       uint64_t *nodes, uint8_t *seen);

#endif
