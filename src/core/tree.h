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

/* Node x (its key set, not in a tree) into the tree at *root; *pred and
 * *succ (each may be NULL) get its neighbours there, NIL for none. */
void as_tree_insert(const struct as_tree *t, uint32_t *root, uint32_t x,
		    uint32_t *pred, uint32_t *succ);

/* The node equal to key out of the tree at *root: its index, or NIL (the
 * tree unchanged) when there is none. To remove node x, pass its element. */
uint32_t as_tree_remove(const struct as_tree *t, uint32_t *root,
			const void *key);

/* The node equal to key, the first >= key, the last < key; or NIL. */
uint32_t as_tree_find(const struct as_tree *t, uint32_t root,
		      const void *key);
uint32_t as_tree_lower_bound(const struct as_tree *t, uint32_t root,
			     const void *key);
uint32_t as_tree_before(const struct as_tree *t, uint32_t root,
			const void *key);

/* The first and last nodes, and the neighbours of node x (in the tree);
 * NIL when there is none. */
uint32_t as_tree_first(const struct as_tree *t, uint32_t root);
uint32_t as_tree_last(const struct as_tree *t, uint32_t root);
uint32_t as_tree_next(const struct as_tree *t, uint32_t root, uint32_t x);
uint32_t as_tree_prev(const struct as_tree *t, uint32_t root, uint32_t x);

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

/* Recompute the summaries on the path from root down to node x after the
 * caller changed x's non-key fields (a size, a free flag). */
void as_tree_update(const struct as_tree *t, uint32_t root, uint32_t x);

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
uint32_t as_tree_descend(const struct as_tree *t, uint32_t root,
			 as_tree_step_fn step, void *arg);

/*
 * Count the broken invariants of the tree at root (see the box above);
 * *nodes (may be NULL) gets how many nodes it holds. `seen` (may be NULL)
 * is a caller's byte per element, zero on entry, marking each node met:
 * pass the same one to check many trees over one array for sharing.
 */
uint64_t as_tree_check(const struct as_tree *t, uint32_t root,
		       uint64_t *nodes, uint8_t *seen);

#endif
