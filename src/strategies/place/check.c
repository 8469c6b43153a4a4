/*
 * as_placer_check: the placer's index (placer.h) against a plain scan of
 * the placed rectangles, and with AS_EXPENSIVE_CHECKS that check sampled
 * after puts and pops (as_placer_audit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/place/placer.h"

static unsigned long long ull(uint64_t x)
{
	return (unsigned long long)x;
}

/*
 * Set `what` v is canonical (sorted, no run empty, none touching the next)
 * and the block maxima its gap index has up to date are right: one problem
 * a broken set.
 */
static void check_runs(struct as_problems *f, const struct runs *ru,
		       const char *what, uint32_t v)
{
	const struct as_span *s = as_runs_cv(ru);
	if (ru->cap == 0 ? ru->n > 1 : ru->n > ru->cap) {
		as_problem(f, "%s %u holds %u runs in room for %u", what, v, ru->n,
			ru->cap ? ru->cap : 1);
		return;
	}
	for (uint32_t k = 0; k < ru->n; k++) {
		if (s[k].lo >= s[k].hi) {
			as_problem(f, "%s %u: run %u [%llu, %llu) is empty", what,
				v, k, ull(s[k].lo), ull(s[k].hi));
			return;
		}
		if (k && s[k - 1].hi >= s[k].lo) {
			as_problem(f, "%s %u: run %u [%llu, %llu) overlaps or "
				"touches the one before, [%llu, %llu)", what, v,
				k, ull(s[k].lo), ull(s[k].hi),
				ull(s[k - 1].lo), ull(s[k - 1].hi));
			return;
		}
	}
	if (!ru->cap)
		return;
	const uint64_t *t = as_runs_tail(ru);
	for (uint64_t b = 0; b < t[0]; b++) {
		uint64_t first = b * AS_BLK, m = 0;
		if (first >= ru->n) {
			as_problem(f, "%s %u: block %llu of %u runs up to date",
				what, v, ull(b), ru->n);
			return;
		}
		for (uint64_t j = first + 1; j < first + AS_BLK && j < ru->n; j++)
			if (s[j].lo - s[j - 1].hi > m)
				m = s[j].lo - s[j - 1].hi;
		if (t[1 + b] != m) {
			as_problem(f, "%s %u: block %llu keeps a largest gap of "
				"%llu, not %llu", what, v, ull(b), ull(t[1 + b]),
				ull(m));
			return;
		}
	}
}

/* Whether runs ru are exactly the n canonical spans g. */
static bool same_runs(const struct runs *ru, const struct as_span *g,
		      uint32_t n)
{
	return ru->n == n &&
	       (n == 0 || memcmp(as_runs_cv(ru), g, n * sizeof(*g)) == 0);
}

/* Sort and merge n spans: the canonical runs of their union; how many. */
static uint32_t canonical(struct as_span *g, uint32_t n)
{
	as_spans_sort(g, n);
	return as_spans_merge(g, n);
}

/*
 * Each node's runs against the rectangles recorded there (its cover's
 * nodes): every rectangle inside one run, and the runs as long as the
 * rectangles together. Runs containing disjoint rectangles of the same
 * total length are their union; runs canonical are its merged ranges. Then
 * sub[v] against the recordings at v and below it.
 */
static bool check_nodes(struct as_placer *pl, struct as_problems *f)
{
	size_t nodes = 2 * (size_t)pl->size;
	uint64_t *len = calloc(nodes, sizeof(uint64_t));
	uint32_t *cnt = calloc(nodes, sizeof(uint32_t));
	if (!len || !cnt) {
		free(len);
		free(cnt);
		return false;
	}
	for (uint32_t i = 0; i < pl->pb->n; i++) {
		if (!pl->placed[i])
			continue;
		uint64_t lo = pl->off[i], hi = as_placer_top(pl, i, lo);
		uint32_t cov[AS_COVER],
			ncov = as_placer_cover(pl, &pl->mk, &pl->pb->r[i], cov);
		for (uint32_t c = 0; c < ncov; c++) {
			const struct runs *ru = &pl->node[cov[c]];
			const struct as_span *s = as_runs_cv(ru);
			uint32_t k = as_runs_find(ru, lo);
			len[cov[c]] += hi - lo;
			cnt[cov[c]]++;
			if (k == ru->n || s[k].lo > lo || s[k].hi < hi)
				as_problem(f, "rectangle %u at [%llu, %llu) is not "
					"in the runs of node %u", i, ull(lo),
					ull(hi), cov[c]);
		}
	}
	for (size_t v = 1; v < nodes; v++) {
		const struct runs *ru = &pl->node[v];
		const struct as_span *s = as_runs_cv(ru);
		uint64_t sum = 0;
		check_runs(f, ru, "node", (uint32_t)v);
		for (uint32_t k = 0; k < ru->n; k++)
			sum += s[k].hi - s[k].lo;
		if (sum != len[v])
			as_problem(f, "node %zu: runs of %llu bytes, its "
				"rectangles %llu", v, ull(sum), ull(len[v]));
	}
	for (size_t v = nodes - 1; v >= 2; v--)
		cnt[v / 2] += cnt[v];
	for (size_t v = 1; v < nodes; v++)
		if (pl->sub[v] != cnt[v])
			as_problem(f, "node %zu: sub %u, but %u recordings at it "
				"and below", v, pl->sub[v], cnt[v]);
	free(len);
	free(cnt);
	return true;
}

/* The part[] sets a rectangle can belong to: a union per ancestor of its
 * cover (two a level at most), and the snapshots. */
#define AS_PART_SETS (2 * AS_STACK + AS_HOT)

/*
 * The sets of part[] rectangle i belongs to, into in[] (AS_PART_SETS
 * entries): the unions of its cover's nodes and their ancestors that keep
 * one, and the snapshots of the leaves in its range. seen[] (nparts
 * entries) holds stamp where a union is taken already. Returns how many.
 */
static uint32_t part_sets(const struct as_placer *pl, uint32_t i,
			  uint32_t *seen, uint32_t stamp, uint32_t *in)
{
	const struct as_rect *r = &pl->pb->r[i];
	uint32_t cov[AS_COVER], ncov = as_placer_cover(pl, &pl->mk, r, cov);
	uint32_t n = 0;
	for (uint32_t c = 0; c < ncov; c++)
		for (uint32_t a = cov[c]; a >= 1; a >>= 1)
			if (a < pl->nparts && seen[a] != stamp) {
				seen[a] = stamp;
				in[n++] = a;
			}
	uint32_t l = pl->map[r->t0], h = pl->map[r->t1];
	uint32_t g = pl->hot_gap, half = g / 2;
	for (uint32_t j = l / g ? l / g - 1 : 0;
	     j < pl->nhot && j * g + half < h; j++)
		if (j * g + half >= l)
			in[n++] = pl->nparts + j;
	return n;
}

/*
 * Each union of part[] against the placed rectangles recorded in its
 * subtree, and each snapshot against those covering its leaf's moment:
 * their spans bucketed by set (counted, then placed), each bucket's union
 * against the set. False: no memory.
 */
static bool check_parts(struct as_placer *pl, struct as_problems *f)
{
	uint32_t sets = pl->nparts + pl->nhot, in[AS_PART_SETS];
	uint32_t *first = calloc((size_t)sets + 1, sizeof(uint32_t));
	uint32_t *seen = calloc(pl->nparts, sizeof(uint32_t));
	struct as_span *span = NULL;
	bool ok = false;
	if (!first || !seen)
		goto out;
	for (uint32_t pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < pl->pb->n; i++) {
			if (!pl->placed[i])
				continue;
			uint32_t k = part_sets(pl, i, seen, 2 * i + 1 + pass, in);
			struct as_span put = {pl->off[i],
					      as_placer_top(pl, i, pl->off[i])};
			for (uint32_t q = 0; q < k; q++)
				if (pass)
					span[first[in[q]]++] = put;
				else
					first[in[q] + 1]++;
		}
		if (pass)
			break;
		for (uint32_t s = 0; s < sets; s++)
			first[s + 1] += first[s];
		span = malloc(((size_t)first[sets] + 1) * sizeof(*span));
		if (!span)
			goto out;
	}
	/* Placing moved first[s] to where set s + 1 starts. */
	for (uint32_t s = 0, at = 0; s < sets; at = first[s++]) {
		const char *what = s < pl->nparts ? "union" : "snapshot";
		uint32_t v = s < pl->nparts ? s : s - pl->nparts;
		check_runs(f, &pl->part[s], what, v);
		uint32_t n = canonical(span + at, first[s] - at);
		if (!same_runs(&pl->part[s], span + at, n))
			as_problem(f, "%s %u is not its rectangles' union (%u "
				"runs, %u)", what, v, pl->part[s].n, n);
	}
	ok = true;
out:
	free(first);
	free(span);
	free(seen);
	return ok;
}

/*
 * Each path union a query would take as it is (see path_union: its node
 * has runs, and neither they nor an ancestor's union changed since it was
 * made) against the runs of its node and its ancestors; false: no memory.
 */
static bool check_paths(struct as_placer *pl, struct as_problems *f)
{
	for (uint32_t a = 1; a < pl->npath; a++) {
		check_runs(f, &pl->path[a], "path union", a);
		uint64_t up_at = 0;
		uint32_t h = 31 - (uint32_t)__builtin_clz(a), n = 0;
		for (uint32_t d = 0; d < h; d++) {
			uint32_t b = a >> (h - d);
			if (!pl->node[b].n)
				up_at = pl->ver[b] > up_at ? pl->ver[b] : up_at;
			else if (pl->path_at[b] < pl->ver[b] ||
				 pl->path_at[b] < up_at)
				up_at = UINT64_MAX; /* rebuilt first */
			else
				up_at = pl->path_at[b];
		}
		if (!pl->node[a].n || pl->path_at[a] < pl->ver[a] ||
		    pl->path_at[a] < up_at)
			continue;
		for (uint32_t b = a; b >= 1; b >>= 1)
			n += pl->node[b].n;
		struct as_span *g = malloc(((size_t)n + 1) * sizeof(*g));
		if (!g)
			return false;
		n = 0;
		for (uint32_t b = a; b >= 1; b >>= 1) {
			memcpy(g + n, as_runs_cv(&pl->node[b]),
			       pl->node[b].n * sizeof(*g));
			n += pl->node[b].n;
		}
		n = canonical(g, n);
		if (!same_runs(&pl->path[a], g, n))
			as_problem(f, "path union %u is not the union of its "
				"path's runs (%u runs, %u)", a, pl->path[a].n,
				n);
		free(g);
	}
	return true;
}

/*
 * The brute-force fit of rectangle q among the placed rectangles sharing
 * its time (g: room for all of them): the lowest aligned offset where it
 * fits, or the smallest gap that fits (the lowest of equal ones), else the
 * top. False: the offset would pass 2^64.
 */
static bool plain_fit(const struct as_placer *pl, uint32_t q, enum as_fit fit,
		      struct as_span *g, uint64_t *off)
{
	const struct as_rect *r = &pl->pb->r[q];
	uint32_t k = 0;
	for (uint32_t j = 0; j < pl->pb->n; j++) {
		const struct as_rect *o = &pl->pb->r[j];
		if (pl->placed[j] && o->t0 < r->t1 && r->t0 < o->t1)
			g[k++] = (struct as_span){pl->off[j],
				as_placer_top(pl, j, pl->off[j])};
	}
	k = canonical(g, k);
	uint64_t below = 0, best = UINT64_MAX, best_gap = UINT64_MAX, a;
	for (uint32_t j = 0; j < k; j++) {
		if (!as_align_up(below, r->align_log2, &a))
			break;
		if (a <= g[j].lo && g[j].lo - a >= r->size) {
			if (fit == AS_FIT_LOWEST) {
				*off = a;
				return true;
			}
			if (g[j].lo - below < best_gap) {
				best_gap = g[j].lo - below;
				best = a;
			}
		}
		below = g[j].hi;
	}
	if (best != UINT64_MAX) {
		*off = best;
		return true;
	}
	if (!as_align_up(below, r->align_log2, &a) || a > UINT64_MAX - r->size)
		return false;
	*off = a;
	return true;
}

/* Rectangles a check asks a find for. */
#define AS_CHECK_FINDS 4

/* A few finds against plain_fit; false: no memory. */
static bool check_finds(struct as_placer *pl, struct as_problems *f)
{
	uint32_t n = pl->pb->n;
	struct as_span *g = malloc(((size_t)n + 1) * sizeof(*g));
	if (!g)
		return false;
	for (uint32_t k = 0; k < AS_CHECK_FINDS && n; k++) {
		uint32_t q = (uint32_t)(((uint64_t)pl->audits * 2654435761u +
					 (uint64_t)k * (n / AS_CHECK_FINDS + 1)) %
					n);
		for (int fi = 0; fi < 2; fi++) {
			enum as_fit fit = fi ? AS_FIT_BEST : AS_FIT_LOWEST;
			uint64_t got = 0, want = 0;
			bool found = as_placer_search(pl, q, fit, &got, NULL);
			if (pl->nomem)
				break;
			bool fits = plain_fit(pl, q, fit, g, &want);
			if (found != fits || (found && got != want))
				as_problem(f, "%s fit of rectangle %u: the placer "
					"says %s%llu, a plain scan %s%llu",
					fi ? "best" : "lowest", q,
					found ? "" : "none, ", ull(got),
					fits ? "" : "none, ", ull(want));
		}
	}
	pl->audits++;
	free(g);
	return true;
}

uint64_t as_placer_check(struct as_placer *pl, char *msg, size_t len)
{
	struct as_problems f = {0, msg, len};
	if (msg && len)
		msg[0] = '\0';
	as_pipe_drain(pl);
	if (pl->nomem)
		return 0;
	bool ok = check_nodes(pl, &f);
	if (ok && !pl->stale)
		ok = check_parts(pl, &f);
	if (ok)
		ok = check_paths(pl, &f);
	if (ok)
		ok = check_finds(pl, &f);
	if (!ok)
		as_problem(&f, "the check ran out of memory");
	return f.n;
}

#ifdef AS_EXPENSIVE_CHECKS
/*
 * Problems this small are checked after every put and pop. A check costs
 * a few walks over every placed rectangle, so on larger ones the changes
 * between two checks double from n / AS_AUDIT_SMALL up to n: about one
 * check per walk after a few early ones, so the expensive build stays
 * within a small factor of the plain one.
 */
#define AS_AUDIT_SMALL 64

void as_placer_audit(struct as_placer *pl)
{
	if (pl->audit_in > 0) {
		pl->audit_in--;
		return;
	}
	uint32_t n = pl->pb->n;
	if (n <= AS_AUDIT_SMALL)
		pl->audit_gap = 0;
	else
		pl->audit_gap = pl->audit_gap == 0 ? n / AS_AUDIT_SMALL
				: pl->audit_gap < n / 2 ? 2 * pl->audit_gap
							: n;
	pl->audit_in = pl->audit_gap;
	pl->broken += as_placer_check(pl, NULL, 0);
}
#endif
