/*
 * cuda-caching: the sets of the model (pool free sets, unmapped ranges of
 * expandable segments, device gaps, segment keys) as trees of core/tree.h
 * over one node array (struct tpool in cuda_caching.h).
 */
#include "strategies/cuda_caching/cuda_caching.h"

static int key_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct tnode *a = pa, *b = pb;
	(void)ctx;
	if (a->k0 != b->k0)
		return a->k0 < b->k0 ? -1 : 1;
	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	if (a->k2 != b->k2)
		return a->k2 < b->k2 ? -1 : 1;
	return 0;
}

/* aug: the largest size in the subtree. */
static void t_fix(void *node, const void *l, const void *r, void *ctx)
{
	struct tnode *n = node;
	const struct tnode *a = l, *b = r;
	uint64_t m = n->size;
	(void)ctx;
	if (a && a->aug > m)
		m = a->aug;
	if (b && b->aug > m)
		m = b->aug;
	n->aug = m;
}

/* The trees' description, written out where it is used so the compiler
 * calls key_cmp and t_fix directly (core/tree.h). */
#define TNODE_TREE(t)                                                      \
	(&(struct as_tree){.base = (t)->base, .n = (t)->n,                 \
			   .stride = sizeof(struct tnode),                 \
			   .link = offsetof(struct tnode, link),           \
			   .cmp = key_cmp, .aug = t_fix})

void as_cuda_t_init(struct tpool *p)
{
	p->free = NIL;
	p->tree = (struct as_tree){.base = p->n,
				   .stride = sizeof(struct tnode),
				   .link = offsetof(struct tnode, link),
				   .cmp = key_cmp,
				   .aug = t_fix};
}

static uint32_t t_new(struct tpool *p)
{
	uint32_t x;
	if (p->free != NIL) {
		x = p->free;
		p->free = p->n[x].link.l;
	} else {
		if (p->used == p->cap) {
			uint32_t cap = p->cap ? p->cap * 2 : 8;
			struct tnode *n = realloc(p->n, (size_t)cap * sizeof(*n));
			if (!n || cap < p->cap)
				return NIL;
			p->n = n;
			p->cap = cap;
			p->tree.base = n;
		}
		x = p->used++;
		p->tree.n = p->used;
	}
	return x;
}

int as_cuda_t_insert(struct tpool *p, uint32_t *root, uint64_t k0,
		     uint64_t k1, uint64_t k2, uint64_t size, uint32_t val)
{
	uint32_t x = t_new(p);
	if (x == NIL)
		return AS_ENOMEM;
	struct tnode *n = &p->n[x];
	n->k0 = k0;
	n->k1 = k1;
	n->k2 = k2;
	n->size = n->aug = size;
	n->val = val;
	as_tree_insert(TNODE_TREE(&p->tree), root, x, NULL, NULL);
	return AS_OK;
}

bool as_cuda_t_erase_at(struct tpool *p, uint32_t *link, uint64_t k0,
			uint64_t k1, uint64_t k2)
{
	struct tnode key = {.k0 = k0, .k1 = k1, .k2 = k2};
	uint32_t x = as_tree_remove(TNODE_TREE(&p->tree), link, &key);
	if (x == NIL)
		return false;
	p->n[x].link.l = p->free;
	p->free = x;
	return true;
}

/* Smallest node >= key, or NIL. */
uint32_t as_cuda_t_lower_bound(const struct tpool *p, uint32_t t, uint64_t k0,
			       uint64_t k1, uint64_t k2)
{
	struct tnode key = {.k0 = k0, .k1 = k1, .k2 = k2};
	return as_tree_lower_bound(TNODE_TREE(&p->tree), t, &key);
}

/* Largest node < key, or NIL. */
uint32_t as_cuda_t_before(const struct tpool *p, uint32_t t, uint64_t k0,
			  uint64_t k1, uint64_t k2)
{
	struct tnode key = {.k0 = k0, .k1 = k1, .k2 = k2};
	return as_tree_before(TNODE_TREE(&p->tree), t, &key);
}

/* The node after x (in key order), or NIL. */
uint32_t as_cuda_t_next(const struct tpool *p, uint32_t root, uint32_t x)
{
	return as_tree_next(TNODE_TREE(&p->tree), root, x);
}

static enum as_tree_step fit_step(const void *node, const void *l,
				  const void *r, void *arg)
{
	const struct tnode *n = node, *a = l;
	uint64_t need = *(const uint64_t *)arg;
	(void)r;
	if (n->aug < need)
		return AS_TREE_STOP;
	if (a && a->aug >= need)
		return AS_TREE_LEFT;
	return n->size >= need ? AS_TREE_HERE : AS_TREE_RIGHT;
}

/* The lowest-key node whose size is >= need, or NIL. */
uint32_t as_cuda_t_first_fit(const struct tpool *p, uint32_t t, uint64_t need)
{
	return as_tree_descend(TNODE_TREE(&p->tree), t, fit_step, &need);
}

struct range {
	uint64_t lo, hi;
};

static enum as_tree_step meets_step(const void *node, const void *l,
				    const void *r, void *arg)
{
	const struct tnode *n = node, *a = l;
	const struct range *q = arg;
	(void)r;
	if (n->aug <= q->lo)
		return AS_TREE_STOP;
	if (n->k0 >= q->hi)
		return AS_TREE_LEFT;
	if (n->size > q->lo || (a && a->aug > q->lo))
		return AS_TREE_HERE;
	return AS_TREE_RIGHT;
}

/*
 * Nodes as ranges [k0, size): whether one meets [lo, hi). The aug of a
 * subtree is its largest end, and its keys below a node's are below hi
 * when that node's is.
 */
bool as_cuda_t_meets(const struct tpool *p, uint32_t t, uint64_t lo,
		     uint64_t hi)
{
	struct range q = {lo, hi};
	return as_tree_descend(TNODE_TREE(&p->tree), t, meets_step, &q) != NIL;
}
