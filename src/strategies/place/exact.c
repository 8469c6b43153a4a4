/*
 * The exact search of place.h (as_exact_solve, as_exact_solve_fixed): branch
 * and bound over canonical placements.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

/* ---- Exact search ----
 *
 * A placement is canonical when every rectangle rests on the floor or on a
 * rectangle that shares time with it (any placement can be pushed down into
 * one without raising its peak). Listing a canonical placement by offset
 * (ties by a fixed priority) and dropping the rectangles one by one onto a
 * skyline, each at the highest floor under its lifetime, rebuilds it
 * exactly: a rectangle never sees a floor above its own offset, because
 * everything dropped before it lies lower. So the search enumerates drop
 * sequences whose offsets never decrease; that reaches every canonical
 * placement once. A partial sequence is pruned when
 *  - an unplaced rectangle no longer fits under cap at its skyline offset
 *    (floors only rise);
 *  - dominance: some unplaced rectangle fits wholly below the candidate's
 *    offset; any completion could move it down into that room, and the
 *    placement with the least sum of offsets is never pruned this way;
 *  - a section cannot hold the bytes still to come: they stack above
 *    max(last offset, the least skyline offset of the unplaced rectangles
 *    covering it).
 * When no unplaced rectangle crosses some section boundary any more, the
 * rest splits into independent parts, solved one after the other (the
 * canonical order restarts in each). The search runs in rounds with a node
 * limit that doubles, cycling through a few static priorities (the most
 * loaded section under a rectangle, its area, its length), so one bad early
 * decision does not eat the budget.
 *
 * Invariants: floor[t] is the skyline of section t; rem[t] the bytes of the
 * unplaced rectangles covering t; x[j] == max(floor[t0_j .. t1_j)) for
 * every unplaced j; cuts[t] counts the unplaced rectangles covering both t
 * and t + 1.
 */
struct pri_item;

struct xsave {
	uint32_t j;
	uint64_t v;
};

struct xcand {
	uint64_t at;
	uint32_t key, j;
};

struct xs {
	const struct as_problem *pb;
	uint64_t cap;
	uint32_t n, S;
	uint64_t *floor, *rem, *x, *sol;
	uint32_t *cuts;
	uint32_t *nxt;          /* scratch skip pointers over sections */
	uint8_t *placed;
	const uint64_t *fixed;  /* forced offsets (AS_NO_OFFSET: free), or NULL */
	uint32_t *key;          /* priority rank per rectangle, this part */
	uint64_t *total;        /* scratch: most bytes under a rectangle */
	struct pri_item *items; /* scratch for ranking */
	int mode;               /* priority of this round */
	uint32_t *ovb, *ov;     /* overlap lists (CSR) */
	uint64_t *fsave;
	size_t nfsave;
	struct xsave *xsave;
	size_t nxsave;
	struct xcand *cand;
	size_t ncand;
	uint64_t nodes, limit;
	double deadline;
	const struct as_budget *budget; /* canceled: stop; or NULL */
	bool timeout;           /* the deadline passed or the budget canceled */
};

enum { X_FAIL, X_FOUND, X_STOP };

struct xpart {
	const uint32_t *ids;
	uint32_t n;
	uint32_t sa, sb;        /* sections [sa, sb) */
};

static void sort_cand(struct xcand *c, size_t n)
{
	/* Shell sort: small lists, no recursion, no comparator calls. */
	static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		size_t h = gaps[g];
		for (size_t i = h; i < n; i++) {
			struct xcand v = c[i];
			size_t j = i;
			while (j >= h && (c[j - h].at > v.at ||
					  (c[j - h].at == v.at &&
					   c[j - h].key > v.key))) {
				c[j] = c[j - h];
				j -= h;
			}
			c[j] = v;
		}
	}
}

static int xs_dfs(struct xs *s, const struct xpart *pt, uint64_t last,
		  uint32_t last_key, const struct xcand *plist, size_t pn);

static void xs_rank(struct xs *s, const struct xpart *pt);

/*
 * Solve part pt from the start of a canonical order, its rectangles ranked
 * afresh; `saved` (pt->n entries) keeps the keys the caller still needs.
 */
static int xs_part(struct xs *s, const struct xpart *pt, uint32_t *saved)
{
	for (uint32_t k = 0; k < pt->n; k++)
		saved[k] = s->key[pt->ids[k]];
	xs_rank(s, pt);
	int res = xs_dfs(s, pt, 0, 0, NULL, 0);
	for (uint32_t k = 0; k < pt->n; k++)
		s->key[pt->ids[k]] = saved[k];
	return res;
}

/* Place c at `at`; false when a check fails (undo with xs_unplace). */
static bool xs_place(struct xs *s, const struct xpart *pt, uint32_t c,
		     uint64_t at, uint64_t last)
{
	const struct as_rect *r = s->pb->r;
	uint64_t top = at + r[c].size;
	bool ok = true;
	for (uint32_t t = r[c].t0; t < r[c].t1; t++) {
		s->fsave[s->nfsave++] = s->floor[t];
		s->floor[t] = top;
		s->rem[t] -= r[c].size;
		if (top + s->rem[t] > s->cap)
			ok = false;
	}
	s->placed[c] = 1;
	s->sol[c] = at;
	for (uint32_t e = s->ovb[c]; e < s->ovb[c + 1]; e++) {
		uint32_t j = s->ov[e];
		if (s->placed[j] || s->x[j] >= top)
			continue;
		s->xsave[s->nxsave].j = j;
		s->xsave[s->nxsave].v = s->x[j];
		s->nxsave++;
		s->x[j] = top;
		uint64_t a;
		if (!as_align_up(top, r[j].align_log2, &a) ||
		    a + r[j].size > s->cap)
			ok = false;
	}
	if (ok && at > last)
		for (uint32_t t = pt->sa; t < pt->sb; t++) {
			uint64_t f = s->floor[t] > at ? s->floor[t] : at;
			if (s->rem[t] && f + s->rem[t] > s->cap)
				return false;
		}
	return ok;
}

static void xs_unplace(struct xs *s, uint32_t c, size_t x0)
{
	const struct as_rect *r = s->pb->r;
	while (s->nxsave > x0) {
		s->nxsave--;
		s->x[s->xsave[s->nxsave].j] = s->xsave[s->nxsave].v;
	}
	for (uint32_t t = r[c].t1; t-- > r[c].t0;) {
		s->floor[t] = s->fsave[--s->nfsave];
		s->rem[t] += r[c].size;
	}
	s->placed[c] = 0;
}

/*
 * Solve the unplaced rectangles of pt as independent parts, cut at every
 * boundary t in [a, b - 1) that no unplaced rectangle crosses.
 */
static int xs_split(struct xs *s, const struct xpart *pt, uint32_t a,
		    uint32_t b)
{
	const struct as_rect *r = s->pb->r;
	uint32_t *ids = malloc((2 * (size_t)pt->n + 1) * sizeof(uint32_t));
	if (!ids)
		return X_STOP;
	int res = X_FOUND;
	uint32_t lo = pt->sa;
	for (uint32_t t = a;; t++) {
		bool end = t + 1 >= b;
		if (!end && s->cuts[t] != 0)
			continue;
		uint32_t hi = end ? pt->sb : t + 1;
		struct xpart sub = {ids, 0, lo, hi};
		for (uint32_t k = 0; k < pt->n; k++) {
			uint32_t j = pt->ids[k];
			if (!s->placed[j] && r[j].t0 < hi && lo < r[j].t1)
				ids[sub.n++] = j;
		}
		if (sub.n)
			res = xs_part(s, &sub, ids + pt->n);
		if (res != X_FOUND || end)
			break;
		lo = hi;
	}
	free(ids);
	return res;
}

/*
 * After placing c: split pt where no unplaced rectangle crosses any more,
 * else go on with the parent's sorted list as the starting point.
 */
static int xs_after(struct xs *s, const struct xpart *pt, uint32_t c,
		    uint64_t at, const struct xcand *list, size_t n)
{
	const struct as_rect *r = s->pb->r;
	uint32_t ncut = 0;
	for (uint32_t t = r[c].t0; t + 1 < r[c].t1; t++)
		if (--s->cuts[t] == 0)
			ncut++;
	int res = ncut ? xs_split(s, pt, r[c].t0, r[c].t1)
		       : xs_dfs(s, pt, at, s->key[c], list, n);
	for (uint32_t t = r[c].t0; t + 1 < r[c].t1; t++)
		s->cuts[t]++;
	return res;
}

static void push_cand(struct xs *s, uint32_t j)
{
	const struct as_rect *r = s->pb->r;
	uint64_t at = s->x[j];
	if (s->fixed && s->fixed[j] != AS_NO_OFFSET)
		at = s->fixed[j];
	else
		as_align_up(s->x[j], r[j].align_log2, &at);
	s->cand[s->ncand].at = at;
	s->cand[s->ncand].key = s->key[j];
	s->cand[s->ncand].j = j;
	s->ncand++;
}

static bool cand_less(const struct xcand *a, const struct xcand *b)
{
	return a->at < b->at || (a->at == b->at && a->key < b->key);
}

static int xs_dfs(struct xs *s, const struct xpart *pt, uint64_t last,
		  uint32_t last_key, const struct xcand *plist, size_t pn)
{
	const struct as_rect *r = s->pb->r;
	/*
	 * The clock every 1024 nodes, a cancel (one load) at every node: a
	 * node whose candidates all fail can cost milliseconds.
	 */
	bool look = (++s->nodes & 1023) == 0;
	if (as_budget_canceled(s->budget) ||
	    (look && as_now_ms() > s->deadline)) {
		s->timeout = true;
		return X_STOP;
	}
	if (s->nodes > s->limit)
		return X_STOP;
	/*
	 * The unplaced rectangles with their skyline offsets, sorted by
	 * (offset, priority). A child starts from its parent's sorted list:
	 * only the rectangles the last placement raised move, so insertion
	 * sort is nearly linear.
	 */
	size_t c0 = s->ncand;
	if (plist) {
		for (size_t k = 0; k < pn; k++)
			if (!s->placed[plist[k].j])
				push_cand(s, plist[k].j);
		struct xcand *v = s->cand + c0;
		size_t m = s->ncand - c0;
		for (size_t i = 1; i < m; i++) {
			struct xcand x = v[i];
			size_t j = i;
			while (j > 0 && cand_less(&x, &v[j - 1])) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
	} else {
		for (uint32_t k = 0; k < pt->n; k++)
			if (!s->placed[pt->ids[k]])
				push_cand(s, pt->ids[k]);
		sort_cand(s->cand + c0, s->ncand - c0);
	}
	size_t nc = s->ncand - c0;
	if (nc == 0)
		return X_FOUND;
	uint64_t min_top = UINT64_MAX;
	for (size_t k = c0; k < s->ncand; k++) {
		uint32_t j = s->cand[k].j;
		if (s->fixed && s->fixed[j] != AS_NO_OFFSET) {
			/*
			 * A fixed rectangle is dead once the skyline under it
			 * rose above its offset or the order passed it; it
			 * cannot be moved, so it takes no part in dominance.
			 */
			if (s->x[j] > s->fixed[j] || s->fixed[j] < last) {
				s->ncand = c0;
				return X_FAIL;
			}
			continue;
		}
		uint64_t top = s->cand[k].at + r[j].size;
		if (top < min_top)
			min_top = top;
	}
	/*
	 * Section inference: the lowest rectangle still to come over section
	 * t starts no lower than max(last, the least offset of the unplaced
	 * rectangles covering t), and the bytes still to come there must fit
	 * above it. Taking the rectangles by rising offset, the first to reach
	 * a section gives its least offset; skip pointers (nxt, a union-find)
	 * visit each section once, so this costs O(S + n), not the spans.
	 */
	for (uint32_t t = pt->sa; t <= pt->sb; t++)
		s->nxt[t] = t;
	for (size_t k = c0; k < s->ncand; k++) {
		const struct as_rect *rj = &r[s->cand[k].j];
		uint64_t v = s->cand[k].at > last ? s->cand[k].at : last;
		uint32_t t = rj->t0;
		for (;;) {
			/* find with path halving */
			while (s->nxt[t] != t) {
				s->nxt[t] = s->nxt[s->nxt[t]];
				t = s->nxt[t];
			}
			if (t >= rj->t1)
				break;
			if (v + s->rem[t] > s->cap) {
				s->ncand = c0;
				return X_FAIL;
			}
			s->nxt[t] = t + 1;
		}
	}
	/*
	 * Candidates in canonical order (offsets never decrease, ties by
	 * priority); dominance drops those at or above the lowest top.
	 */
	const struct xcand *list = s->cand + c0;
	int res = X_FAIL;
	for (size_t k = 0; k < nc && res == X_FAIL; k++) {
		uint64_t at = list[k].at;
		if (at >= min_top)
			break;
		if (at < last || (at == last && list[k].key < last_key))
			continue;
		uint32_t c = list[k].j;
		size_t x0 = s->nxsave;
		if (xs_place(s, pt, c, at, last))
			res = xs_after(s, pt, c, at, list, nc);
		xs_unplace(s, c, x0);
	}
	s->ncand = c0;
	return res;
}

/* Priorities: how rectangles are ranked for ties at equal offsets. */
enum {
	PRI_AREA_TOTAL,
	PRI_TOTAL_AREA,
	PRI_TOTAL_LENGTH_AREA,
	PRI_N
};

struct pri_item {
	uint64_t a, b, c;
	uint32_t i;
};

static bool pri_less(const struct pri_item *p, const struct pri_item *q)
{
	if (p->a != q->a)
		return p->a > q->a;
	if (p->b != q->b)
		return p->b > q->b;
	if (p->c != q->c)
		return p->c > q->c;
	return p->i < q->i;
}

static void rank_by(const struct as_problem *pb, const uint32_t *ids,
		    uint32_t n, const uint64_t *total, int mode,
		    struct pri_item *it, uint32_t *key)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = ids[k];
		const struct as_rect *r = &pb->r[i];
		uint64_t len = pb->times[r->t1] - pb->times[r->t0];
		double area = (double)len * (double)r->size;
		uint64_t a = area > 1.8e19 ? UINT64_MAX : (uint64_t)area;
		it[k].i = i;
		if (mode == PRI_AREA_TOTAL) {
			it[k].a = a, it[k].b = total[i], it[k].c = 0;
		} else if (mode == PRI_TOTAL_AREA) {
			it[k].a = total[i], it[k].b = a, it[k].c = 0;
		} else {
			it[k].a = total[i], it[k].b = len, it[k].c = a;
		}
	}
	/* Heap sort by pri_less. */
	for (uint32_t st = n / 2; st-- > 0;) {
		for (uint32_t q = st;;) {
			uint32_t c = 2 * q + 1;
			if (c >= n)
				break;
			if (c + 1 < n && pri_less(&it[c], &it[c + 1]))
				c++;
			if (!pri_less(&it[q], &it[c]))
				break;
			struct pri_item tmp = it[q];
			it[q] = it[c];
			it[c] = tmp;
			q = c;
		}
	}
	for (uint32_t e = n; e-- > 1;) {
		struct pri_item tmp = it[0];
		it[0] = it[e];
		it[e] = tmp;
		for (uint32_t q = 0;;) {
			uint32_t c = 2 * q + 1;
			if (c >= e)
				break;
			if (c + 1 < e && pri_less(&it[c], &it[c + 1]))
				c++;
			if (!pri_less(&it[q], &it[c]))
				break;
			struct pri_item t2 = it[q];
			it[q] = it[c];
			it[c] = t2;
			q = c;
		}
	}
	for (uint32_t k = 0; k < n; k++)
		key[it[k].i] = k;
}

/*
 * Rank the rectangles of a fresh part by the current priority, with the
 * totals of what is still to be placed.
 */
static void xs_rank(struct xs *s, const struct xpart *pt)
{
	const struct as_rect *r = s->pb->r;
	for (uint32_t k = 0; k < pt->n; k++) {
		uint32_t j = pt->ids[k];
		uint64_t tot = 0;
		for (uint32_t t = r[j].t0; t < r[j].t1; t++)
			if (s->rem[t] > tot)
				tot = s->rem[t];
		s->total[j] = tot;
	}
	rank_by(s->pb, pt->ids, pt->n, s->total, s->mode, s->items, s->key);
}

int as_exact_solve(const struct as_problem *pb, uint64_t cap,
		   double deadline_ms, const struct as_budget *budget,
		   uint64_t max_nodes, uint64_t seed, uint64_t *off,
		   struct as_exact_stats *st)
{
	return as_exact_solve_fixed(pb, NULL, cap, deadline_ms, budget,
				    max_nodes, seed, off, st);
}

int as_exact_solve_fixed(const struct as_problem *pb, const uint64_t *fixed,
			 uint64_t cap, double deadline_ms,
			 const struct as_budget *budget, uint64_t max_nodes,
			 uint64_t seed, uint64_t *off,
			 struct as_exact_stats *st)
{
	struct xs s;
	memset(&s, 0, sizeof(s));
	s.fixed = fixed;
	uint32_t n = pb->n;
	int ret = AS_ENOMEM;
	if (n == 0)
		return AS_EXACT_FOUND;
	if (pb->lower_bound > cap)
		return AS_EXACT_NONE;
	s.pb = pb;
	s.cap = cap;
	s.n = n;
	s.S = pb->nsections;
	s.deadline = deadline_ms;
	s.budget = budget;
	size_t spans = 0;
	for (uint32_t i = 0; i < n; i++)
		spans += pb->r[i].t1 - pb->r[i].t0;
	uint32_t *all = calloc(n, sizeof(uint32_t));
	uint64_t *total = calloc(n, sizeof(uint64_t));
	struct pri_item *it = calloc(n, sizeof(*it));
	s.floor = calloc(s.S + 1, sizeof(uint64_t));
	s.rem = calloc(s.S + 1, sizeof(uint64_t));
	s.cuts = calloc(s.S + 1, sizeof(uint32_t));
	s.nxt = calloc(s.S + 2, sizeof(uint32_t));
	s.x = calloc(n, sizeof(uint64_t));
	s.sol = calloc(n, sizeof(uint64_t));
	s.placed = calloc(n, 1);
	s.ovb = calloc(n + 1, sizeof(uint32_t));
	s.fsave = calloc(spans + 1, sizeof(uint64_t));
	s.cand = calloc((size_t)n * (n + 1) / 2 + 1, sizeof(*s.cand));
	if (!all || !total || !it || !s.floor || !s.rem ||
	    !s.cuts || !s.nxt || !s.x || !s.sol || !s.placed || !s.ovb ||
	    !s.fsave || !s.cand)
		goto out;
	/*
	 * Overlap lists, O(n log n + pairs): by start, each rectangle meets
	 * the ones starting before it ends; count, lay out, then fill.
	 */
	for (uint32_t i = 0; i < n; i++)
		all[i] = i;
	if (as_sort_u32(all, n, as_rect_by_t0, pb))
		goto out;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t p = 0; p < n; p++) {
			uint32_t i = all[p];
			for (uint32_t q = p + 1;
			     q < n && pb->r[all[q]].t0 < pb->r[i].t1; q++) {
				uint32_t j = all[q];
				if (pass == 0) {
					s.ovb[i + 1]++;
					s.ovb[j + 1]++;
				} else {
					s.ov[s.ovb[i] + s.cuts[i]++] = j;
					s.ov[s.ovb[j] + s.cuts[j]++] = i;
				}
			}
		}
		if (pass == 1)
			break;
		for (uint32_t i = 0; i < n; i++)
			s.ovb[i + 1] += s.ovb[i];
		s.ov = calloc((size_t)s.ovb[n] + 1, sizeof(uint32_t));
		s.xsave = calloc((size_t)s.ovb[n] + 1, sizeof(*s.xsave));
		/* cuts[] is free scratch until the rounds start. */
		free(s.cuts);
		s.cuts = calloc((size_t)(n > s.S ? n : s.S) + 1,
				sizeof(uint32_t));
		if (!s.ov || !s.xsave || !s.cuts)
			goto out;
	}
	as_problem_load(pb, s.rem);
	for (uint32_t i = 0; i < n; i++) {
		all[i] = i;
		for (uint32_t t = pb->r[i].t0; t < pb->r[i].t1; t++)
			if (s.rem[t] > total[i])
				total[i] = s.rem[t];
	}
	s.key = calloc(n, sizeof(uint32_t));
	s.total = total;
	s.items = it;
	if (!s.key)
		goto out;

	uint64_t limit = 2 * (uint64_t)n, spent = 0;
	ret = AS_EXACT_TIMEOUT;
	for (uint32_t round = 0;; round++) {
		int m = (int)((round + seed) % PRI_N);
		if (m == 0)
			limit *= 2;
		s.mode = m;
		memset(s.floor, 0, (s.S + 1) * sizeof(uint64_t));
		memset(s.x, 0, n * sizeof(uint64_t));
		memset(s.placed, 0, n);
		as_problem_load(pb, s.rem);
		memset(s.cuts, 0, (s.S + 1) * sizeof(uint32_t));
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t t = pb->r[i].t0; t + 1 < pb->r[i].t1;
			     t++)
				s.cuts[t]++;
		s.nfsave = s.nxsave = s.ncand = 0;
		s.nodes = 0;
		s.limit = limit;
		if (max_nodes && spent + limit > max_nodes)
			s.limit = max_nodes > spent ? max_nodes - spent : 0;
		struct xpart whole = {all, n, 0, s.S};
		int r = xs_split(&s, &whole, 0, s.S);
		spent += s.nodes;
		if (st) {
			st->nodes += s.nodes;
			st->restarts++;
		}
		if (r == X_FOUND) {
			memcpy(off, s.sol, n * sizeof(uint64_t));
			ret = AS_EXACT_FOUND;
			break;
		}
		if (r == X_FAIL) {
			ret = AS_EXACT_NONE;
			break;
		}
		if (s.timeout || (max_nodes && spent >= max_nodes))
			break;
	}
out:
	free(all);
	free(total);
	free(it);
	free(s.key);
	free(s.floor);
	free(s.rem);
	free(s.cuts);
	free(s.nxt);
	free(s.x);
	free(s.sol);
	free(s.placed);
	free(s.ovb);
	free(s.ov);
	free(s.fsave);
	free(s.xsave);
	free(s.cand);
	return ret;
}
