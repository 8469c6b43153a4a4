/*
 * cuda-caching: the treaps every set of the model is kept in (pool free
 * sets, unmapped ranges of expandable segments, device gaps), over one node
 * array (struct tpool in cuda_caching.h).
 */
#include "strategies/cuda_caching/cuda_caching.h"

static int key_cmp(const struct tnode *a, uint64_t k0, uint64_t k1,
		   uint64_t k2)
{
	if (a->k0 != k0)
		return a->k0 < k0 ? -1 : 1;
	if (a->k1 != k1)
		return a->k1 < k1 ? -1 : 1;
	if (a->k2 != k2)
		return a->k2 < k2 ? -1 : 1;
	return 0;
}

static void t_fix(struct tpool *p, uint32_t x)
{
	struct tnode *n = &p->n[x];
	uint64_t m = n->size;
	if (n->l != NIL && p->n[n->l].aug > m)
		m = p->n[n->l].aug;
	if (n->r != NIL && p->n[n->r].aug > m)
		m = p->n[n->r].aug;
	n->aug = m;
}

static uint32_t t_new(struct tpool *p)
{
	uint32_t x;
	if (p->free != NIL) {
		x = p->free;
		p->free = p->n[x].l;
	} else {
		if (p->used == p->cap) {
			uint32_t cap = p->cap ? p->cap * 2 : 8;
			struct tnode *n = realloc(p->n, (size_t)cap * sizeof(*n));
			if (!n || cap < p->cap)
				return NIL;
			p->n = n;
			p->cap = cap;
		}
		x = p->used++;
	}
	p->n[x].l = p->n[x].r = NIL;
	p->n[x].prio = (uint32_t)(as_splitmix64(&p->rng) >> 32);
	return x;
}

/* Split t into keys < (k) and >= (k). */
static void t_split(struct tpool *p, uint32_t t, uint64_t k0, uint64_t k1,
		    uint64_t k2, uint32_t *lo, uint32_t *hi)
{
	if (t == NIL) {
		*lo = *hi = NIL;
		return;
	}
	if (key_cmp(&p->n[t], k0, k1, k2) < 0) {
		t_split(p, p->n[t].r, k0, k1, k2, &p->n[t].r, hi);
		*lo = t;
	} else {
		t_split(p, p->n[t].l, k0, k1, k2, lo, &p->n[t].l);
		*hi = t;
	}
	t_fix(p, t);
}

static uint32_t t_merge(struct tpool *p, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (p->n[a].prio >= p->n[b].prio) {
		p->n[a].r = t_merge(p, p->n[a].r, b);
		t_fix(p, a);
		return a;
	}
	p->n[b].l = t_merge(p, a, p->n[b].l);
	t_fix(p, b);
	return b;
}

/*
 * Node x (no children) into the treap t: down to where its priority puts
 * it, and only the subtree found there is split around it.
 */
static uint32_t t_put(struct tpool *p, uint32_t t, uint32_t x)
{
	if (t == NIL)
		return x;
	struct tnode *n = &p->n[x];
	if (n->prio > p->n[t].prio) {
		t_split(p, t, n->k0, n->k1, n->k2, &n->l, &n->r);
		t = x;
	} else if (key_cmp(&p->n[t], n->k0, n->k1, n->k2) < 0) {
		p->n[t].r = t_put(p, p->n[t].r, x);
	} else {
		p->n[t].l = t_put(p, p->n[t].l, x);
	}
	t_fix(p, t);
	return t;
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
	*root = t_put(p, *root, x);
	return AS_OK;
}

bool as_cuda_t_erase_at(struct tpool *p, uint32_t *link, uint64_t k0,
			uint64_t k1, uint64_t k2)
{
	uint32_t t = *link;
	if (t == NIL)
		return false;
	int c = key_cmp(&p->n[t], k0, k1, k2);
	bool found;
	if (c == 0) {
		*link = t_merge(p, p->n[t].l, p->n[t].r);
		p->n[t].l = p->free;
		p->free = t;
		return true;
	}
	found = as_cuda_t_erase_at(p, c > 0 ? &p->n[t].l : &p->n[t].r, k0, k1,
				   k2);
	if (found)
		t_fix(p, t);
	return found;
}

/* Smallest node >= key, or NIL. */
uint32_t as_cuda_t_lower_bound(const struct tpool *p, uint32_t t, uint64_t k0,
			       uint64_t k1, uint64_t k2)
{
	uint32_t best = NIL;
	while (t != NIL) {
		if (key_cmp(&p->n[t], k0, k1, k2) >= 0) {
			best = t;
			t = p->n[t].l;
		} else {
			t = p->n[t].r;
		}
	}
	return best;
}

/* Largest node < key, or NIL. */
uint32_t as_cuda_t_before(const struct tpool *p, uint32_t t, uint64_t k0,
			  uint64_t k1, uint64_t k2)
{
	uint32_t best = NIL;
	while (t != NIL) {
		if (key_cmp(&p->n[t], k0, k1, k2) < 0) {
			best = t;
			t = p->n[t].r;
		} else {
			t = p->n[t].l;
		}
	}
	return best;
}

/* The node after x (in key order), or NIL. */
uint32_t as_cuda_t_next(const struct tpool *p, uint32_t root, uint32_t x)
{
	const struct tnode *n = &p->n[x];
	uint64_t k0 = n->k0, k1 = n->k1, k2 = n->k2;
	/* the smallest key > (k0, k1, k2) is the lower bound of its
	 * successor key */
	if (k2 != UINT64_MAX)
		return as_cuda_t_lower_bound(p, root, k0, k1, k2 + 1);
	if (k1 != UINT64_MAX)
		return as_cuda_t_lower_bound(p, root, k0, k1 + 1, 0);
	if (k0 != UINT64_MAX)
		return as_cuda_t_lower_bound(p, root, k0 + 1, 0, 0);
	return NIL;
}

/* The lowest-key node whose size is >= need, or NIL. */
uint32_t as_cuda_t_first_fit(const struct tpool *p, uint32_t t, uint64_t need)
{
	while (t != NIL && p->n[t].aug >= need) {
		uint32_t l = p->n[t].l;
		if (l != NIL && p->n[l].aug >= need)
			t = l;
		else if (p->n[t].size >= need)
			return t;
		else
			t = p->n[t].r;
	}
	return NIL;
}

/*
 * Nodes as ranges [k0, size): whether one meets [lo, hi). The aug of a
 * subtree is its largest end, and its keys below a node's are below hi
 * when that node's is.
 */
bool as_cuda_t_meets(const struct tpool *p, uint32_t t, uint64_t lo,
		     uint64_t hi)
{
	while (t != NIL && p->n[t].aug > lo) {
		const struct tnode *n = &p->n[t];
		if (n->k0 >= hi) {
			t = n->l;
			continue;
		}
		if (n->size > lo ||
		    (n->l != NIL && p->n[n->l].aug > lo))
			return true;
		t = n->r;
	}
	return false;
}
