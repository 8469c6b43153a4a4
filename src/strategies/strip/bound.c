/*
 * Strategy strip, its certified lower bound (strip.h, as_strip_bound).
 *
 * Any sub-problem of a space is a relaxation of it: some of its rectangles,
 * each with its lifetime cut to a window of time, must still be placed
 * apart wherever they shared time in the window, so no plan of the space
 * is lower than the sub-problem's optimum. The load (the most bytes live
 * in one section) is the optimum of a one-section window; wider windows
 * can prove more where fragmentation, not the load, decides the peak.
 *
 * The search: around a few centres (the section of most load, the sections
 * under the incumbent's highest rectangles), windows grow a section at a
 * time, on the side of more load, to 12, 24, 48, 96, 160, 256, 640 and
 * 1024 rectangles. Each window goes to the exact search of place/exact.c:
 * first "no placement of peak below h" for h the next height above the
 * bound proven so far (heights of the window are multiples of its grain,
 * the gcd of its sizes and alignments), then a bisection between the
 * proven height and the incumbent's height inside the window. Only a
 * completed search (AS_EXACT_NONE, every placement refuted) raises the
 * bound; a search that stops at its time or nodes proves nothing and ends
 * that centre (wider windows are harder). The search ends at the plan's
 * peak (the plan is then optimal), the deadline, nodes= or a cancel.
 *
 * Before the windows, the padded load (as_strip_padded): the one-section
 * bound that alignment gives, in one sweep.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/strip/strip.h"
#include "core/internal.h"

#define CENTERS 4

static const uint32_t targets[] = {12, 24, 48, 96, 160, 256, 640,
				     AS_STRIP_CERT_MAX};

struct bsearch {
	const struct as_problem *pb;
	const uint64_t *off;    /* the incumbent, or NULL */
	const struct as_strip_cfg *cfg;
	double deadline;
	uint64_t cap_nodes;     /* nodes= share, 0: the clock only */
	uint64_t nodes;         /* spent */
	uint64_t cert;          /* proven: every plan of pb is at least this */
	uint64_t hi;            /* the incumbent's peak, UINT64_MAX: none */
	uint32_t wa, wb;        /* the window that proved cert (wa == wb: none) */
	uint64_t proof_nodes;
	uint32_t *starts, *ends; /* rectangles starting / ending per section */
	uint64_t *sload;        /* bytes live per section of pb */
	struct as_problem sub;
	uint32_t *mark;
	uint64_t *times, *load, *so;
};

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/*
 * The rectangles of pb sharing time with [a, b), cut to it, as bs->sub on
 * its own sections; the incumbent's highest top among them in *hi.
 */
static void window(struct bsearch *bs, uint32_t a, uint32_t b, uint64_t *hi)
{
	const struct as_problem *pb = bs->pb;
	struct as_problem *sub = &bs->sub;
	uint32_t m = 0;
	*hi = bs->off ? 0 : UINT64_MAX;
	for (uint32_t i = 0; i < pb->n; i++) {
		const struct as_rect *r = &pb->r[i];
		if (r->t1 <= a || r->t0 >= b)
			continue;
		sub->r[m] = *r;
		sub->r[m].t0 = r->t0 > a ? r->t0 : a;
		sub->r[m].t1 = r->t1 < b ? r->t1 : b;
		if (bs->off && bs->off[i] + r->size > *hi)
			*hi = bs->off[i] + r->size;
		m++;
	}
	sub->n = m;
	sub->nsections = pb->nsections;
	sub->times = pb->times;
	as_problem_compact(sub, bs->mark, bs->times);
	as_problem_load(sub, bs->load);
	sub->lower_bound = 0;
	for (uint32_t t = 0; t < sub->nsections; t++)
		if (bs->load[t] > sub->lower_bound)
			sub->lower_bound = bs->load[t];
}

/* Whether the search must stop: time, nodes= or a cancel. */
static bool spent(const struct bsearch *bs)
{
	return as_budget_past(bs->cfg->budget, bs->deadline) ||
	       (bs->cap_nodes && bs->nodes >= bs->cap_nodes);
}

/*
 * "No placement of bs->sub peaks at cap or lower": AS_EXACT_NONE (proven),
 * AS_EXACT_FOUND (bs->so holds one, *found its peak), AS_EXACT_TIMEOUT or
 * a negative code. Each call gets half of what is left.
 */
static int refute(struct bsearch *bs, uint64_t cap, uint64_t *found,
		  uint64_t *nodes)
{
	struct as_exact_stats st = {0};
	double now = as_now_ms();
	uint64_t share = bs->cap_nodes ? (bs->cap_nodes - bs->nodes) / 2 + 1
				       : 0;
	int r = as_exact_solve(&bs->sub, cap, now + (bs->deadline - now) / 2,
			       bs->cfg->budget, share, bs->cfg->seed, bs->so,
			       &st);
	bs->nodes += st.nodes;
	*nodes += st.nodes;
	if (r == AS_EXACT_FOUND)
		*found = as_place_peak(&bs->sub, bs->so);
	return r;
}

/*
 * What the window [a, b) proves: bisect its optimum between the bound so
 * far and the incumbent's height in it. Returns 0 when it goes on (a
 * wider window may prove more), 1 when the centre is done (time ran out
 * inside), or a negative code.
 */
static int try_window(struct bsearch *bs, uint32_t a, uint32_t b)
{
	uint64_t hi;
	window(bs, a, b, &hi);
	if (hi <= bs->cert)
		return 0;
	uint64_t g = 0;
	for (uint32_t k = 0; k < bs->sub.n; k++) {
		g = gcd(g, bs->sub.r[k].size);
		if (bs->sub.r[k].align_log2)
			g = gcd(g, (uint64_t)1 << bs->sub.r[k].align_log2);
	}
	/* Heights of the window are multiples of g: the next one above. */
	uint64_t lo = bs->cert, nodes = 0;
	bool first = true;
	while (lo < hi && !spent(bs)) {
		uint64_t h = lo + (hi - lo) / 2;
		if (first)
			h = lo;
		h = h / g * g + g;
		if (h > hi || h < lo)
			break;
		uint64_t found = 0;
		int r = refute(bs, h - 1, &found, &nodes);
		if (r < 0)
			return r;
		if (r == AS_EXACT_TIMEOUT)
			return 1;
		if (r == AS_EXACT_FOUND) {
			if (first)
				return 0; /* no higher than the bound */
			hi = found;
		} else {
			lo = h;
		}
		first = false;
	}
	if (lo > bs->cert) {
		bs->cert = lo;
		bs->wa = a;
		bs->wb = b;
		bs->proof_nodes = nodes;
	}
	return 0;
}

/* Grow windows around section c until the largest target or a timeout. */
static int around(struct bsearch *bs, uint32_t c)
{
	uint32_t S = bs->pb->nsections, a = c, b = c + 1;
	uint32_t count = 0;
	for (uint32_t i = 0; i < bs->pb->n; i++)
		count += bs->pb->r[i].t0 <= c && c < bs->pb->r[i].t1;
	uint32_t last_a = a, last_b = b; /* one section proves its load */
	for (size_t k = 0; k < sizeof(targets) / sizeof(*targets); k++) {
		if (count > targets[k])
			continue;
		for (;;) {
			/* The neighbour section with more load, if it fits. */
			bool left = a > 0 && count + bs->ends[a] <= targets[k];
			bool right = b < S && count + bs->starts[b] <= targets[k];
			if (left && right)
				left = bs->sload[a - 1] >= bs->sload[b];
			if (left)
				count += bs->ends[a--];
			else if (right)
				count += bs->starts[b++];
			else
				break;
		}
		if (a == last_a && b == last_b)
			continue;
		last_a = a, last_b = b;
		int r = try_window(bs, a, b);
		if (r)
			return r < 0 ? r : 0;
		if (bs->cert >= bs->hi || spent(bs))
			break;
	}
	return 0;
}

/* A max-heap of (rounding, end section): the live rectangles' roundings. */
struct pad {
	uint64_t pad;
	uint32_t t1;
};

static void pad_push(struct pad *h, uint32_t *n, struct pad x)
{
	uint32_t i = (*n)++;
	while (i > 0 && h[(i - 1) / 2].pad < x.pad) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static void pad_pop(struct pad *h, uint32_t *n)
{
	struct pad x = h[--*n];
	uint32_t i = 0;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].pad > h[c].pad)
			c++;
		if (h[c].pad <= x.pad)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = x;
}

/*
 * The rectangles of pb in order of their first section (by = 0) or of
 * their end (by = 1): a counting sort into ord (n entries), cnt scratch of
 * nsections + 2.
 */
static void order_by(const struct as_problem *pb, int by, uint32_t *cnt,
		     uint32_t *ord)
{
	memset(cnt, 0, ((size_t)pb->nsections + 2) * sizeof(*cnt));
	for (uint32_t i = 0; i < pb->n; i++)
		cnt[(by ? pb->r[i].t1 : pb->r[i].t0) + 1]++;
	for (uint32_t t = 1; t <= pb->nsections + 1; t++)
		cnt[t] += cnt[t - 1];
	for (uint32_t i = 0; i < pb->n; i++)
		ord[cnt[by ? pb->r[i].t1 : pb->r[i].t0]++] = i;
}

/*
 * The padded load of pb at alignment 2^a: the most, over the sections
 * where no live rectangle is aligned to less, of the live sizes rounded up
 * to 2^a, less the largest rounding among them; its section in *at. A sum
 * past 2^64 ends the sweep with what it had (a bound still).
 */
static uint64_t padded_at(const struct as_problem *pb, unsigned a,
			  const uint32_t *by0, const uint32_t *by1,
			  struct pad *heap, uint32_t *at)
{
	uint64_t g = (uint64_t)1 << a, sum = 0, best = 0;
	uint32_t low = 0, nh = 0, i0 = 0, i1 = 0, n = pb->n;
	for (uint32_t t = 0; t < pb->nsections; t++) {
		for (; i1 < n && pb->r[by1[i1]].t1 == t; i1++) {
			const struct as_rect *r = &pb->r[by1[i1]];
			sum -= (r->size + g - 1) / g * g;
			low -= r->align_log2 < a;
		}
		for (; i0 < n && pb->r[by0[i0]].t0 == t; i0++) {
			const struct as_rect *r = &pb->r[by0[i0]];
			if (r->size > UINT64_MAX - (g - 1))
				return best;
			uint64_t up = (r->size + g - 1) / g * g;
			if (sum > UINT64_MAX - up)
				return best;
			sum += up;
			low += r->align_log2 < a;
			if (up > r->size)
				pad_push(heap, &nh,
					 (struct pad){up - r->size, r->t1});
		}
		if (low || sum <= best)
			continue;
		while (nh && heap[0].t1 <= t)
			pad_pop(heap, &nh);
		uint64_t h = sum - (nh ? heap[0].pad : 0);
		if (h > best) {
			best = h;
			*at = t;
		}
	}
	return best;
}

int as_strip_padded(const struct as_problem *pb,
		    struct as_strip_bound_out *out)
{
	uint64_t levels = 0;
	for (uint32_t i = 0; i < pb->n; i++)
		levels |= (uint64_t)1 << pb->r[i].align_log2;
	levels &= ~(uint64_t)1; /* alignment 1 pads nothing: the load */
	if (!levels)
		return AS_OK;
	uint32_t *cnt = malloc(((size_t)pb->nsections + 2) * sizeof(*cnt));
	uint32_t *by0 = malloc(pb->n * sizeof(*by0));
	uint32_t *by1 = malloc(pb->n * sizeof(*by1));
	struct pad *heap = malloc(pb->n * sizeof(*heap));
	int err = AS_ENOMEM;
	if (!cnt || !by0 || !by1 || !heap)
		goto out;
	order_by(pb, 0, cnt, by0);
	order_by(pb, 1, cnt, by1);
	for (unsigned a = 1; a < 64; a++) {
		uint32_t at = 0;
		if (!(levels >> a & 1))
			continue;
		uint64_t h = padded_at(pb, a, by0, by1, heap, &at);
		if (h > out->bound) {
			out->bound = h;
			out->wa = at;
			out->wb = at + 1;
			out->proof_nodes = 0;
		}
	}
	err = AS_OK;
out:
	free(cnt);
	free(by0);
	free(by1);
	free(heap);
	return err;
}

bool as_strip_bound_windows(const struct as_problem *pb)
{
	uint64_t *load = malloc(((size_t)pb->nsections + 1) * sizeof(*load));
	if (!load)
		return true; /* the share stays: harmless */
	as_problem_load(pb, load);
	uint32_t top = 0, count = 0;
	for (uint32_t t = 1; t < pb->nsections; t++)
		if (load[t] > load[top])
			top = t;
	free(load);
	for (uint32_t i = 0; i < pb->n; i++)
		count += pb->r[i].t0 <= top && top < pb->r[i].t1;
	return count <= AS_STRIP_CERT_MAX;
}

int as_strip_bound(const struct as_problem *pb, const uint64_t *off,
		   const struct as_strip_cfg *cfg, double deadline,
		   uint64_t cap_nodes, struct as_strip_bound_out *out)
{
	struct bsearch bs = {.pb = pb, .off = off, .cfg = cfg,
			     .deadline = deadline, .cap_nodes = cap_nodes,
			     .cert = out->bound,
			     .wa = out->wa, .wb = out->wb,
			     .proof_nodes = out->proof_nodes,
			     .hi = off ? as_place_peak(pb, off) : UINT64_MAX};
	uint32_t n = pb->n, S = pb->nsections;
	int err = AS_ENOMEM;
	out->nodes = 0;
	if (n == 0 || bs.hi <= bs.cert)
		return AS_OK;
	bs.starts = calloc((size_t)S + 1, sizeof(uint32_t));
	bs.ends = calloc((size_t)S + 1, sizeof(uint32_t));
	bs.sload = calloc((size_t)S + 1, sizeof(uint64_t));
	bs.sub.r = calloc(n, sizeof(struct as_rect));
	bs.mark = calloc((size_t)S + 2, sizeof(uint32_t));
	bs.times = calloc(2 * (size_t)n + 2, sizeof(uint64_t));
	bs.load = calloc(2 * (size_t)n + 2, sizeof(uint64_t));
	bs.so = calloc(n, sizeof(uint64_t));
	if (!bs.starts || !bs.ends || !bs.sload || !bs.sub.r || !bs.mark ||
	    !bs.times || !bs.load || !bs.so)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		bs.starts[pb->r[i].t0]++;
		bs.ends[pb->r[i].t1]++;
	}
	as_problem_load(pb, bs.sload);
	/*
	 * Centres: the section of most load, then the first section of each
	 * of the incumbent's highest rectangles (up to CENTERS in all).
	 */
	uint32_t centre[CENTERS], nc = 0;
	uint32_t top = 0;
	for (uint32_t t = 1; t < S; t++)
		if (bs.sload[t] > bs.sload[top])
			top = t;
	centre[nc++] = top;
	for (uint32_t i = 0; off && i < n && nc < CENTERS; i++) {
		if (off[i] + pb->r[i].size != bs.hi)
			continue;
		uint32_t c = pb->r[i].t0;
		bool seen = false;
		for (uint32_t k = 0; k < nc; k++)
			seen |= centre[k] == c;
		if (!seen)
			centre[nc++] = c;
	}
	err = AS_OK;
	for (uint32_t k = 0; k < nc && err == AS_OK; k++) {
		if (bs.cert >= bs.hi || spent(&bs))
			break;
		err = around(&bs, centre[k]);
	}
	out->bound = bs.cert;
	out->nodes = bs.nodes;
	out->proof_nodes = bs.proof_nodes;
	out->wa = bs.wa;
	out->wb = bs.wb;
out:
	free(bs.starts);
	free(bs.ends);
	free(bs.sload);
	free(bs.sub.r);
	free(bs.mark);
	free(bs.times);
	free(bs.load);
	free(bs.so);
	return err;
}

int as_strip_certificate(const struct as_problem *pb, uint32_t wa,
			 uint32_t wb, uint64_t bound, uint64_t nodes,
			 struct as_certificate *c)
{
	uint32_t m = 0;
	c->bound = bound;
	c->load = pb->lower_bound;
	c->nodes = nodes;
	c->nbuffers = 0;
	c->buffers = NULL;
	if (wa >= wb)
		return AS_OK;
	for (uint32_t i = 0; i < pb->n; i++)
		m += pb->r[i].t0 < wb && pb->r[i].t1 > wa;
	c->buffers = calloc(m ? m : 1, sizeof(*c->buffers));
	if (!c->buffers)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < pb->n; i++) {
		const struct as_rect *r = &pb->r[i];
		if (r->t0 >= wb || r->t1 <= wa)
			continue;
		struct as_cert_buffer *b = &c->buffers[c->nbuffers++];
		b->id = r->buf;
		b->size = r->size;
		b->align_log2 = r->align_log2;
		b->start = pb->times[r->t0 > wa ? r->t0 : wa];
		b->end = pb->times[r->t1 < wb ? r->t1 : wb];
	}
	return AS_OK;
}
