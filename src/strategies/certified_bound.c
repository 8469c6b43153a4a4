/*
 * Certified lower bounds (certified.h, struct as_certificate): whether a
 * certificate's sub-problem is a relaxation of a trace, and its re-solve
 * from its buffers alone: by the padded load when they all share an
 * instant, else with the exact search of place/exact.c.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

/* The largest sub-problem strip certifies: a whole space of the exact
 * search's size (strip.h, AS_STRIP_EXACT_LIMIT). */
#define AS_CERT_MAX_BUFFERS 6000

int as_certificate_fits(const struct as_trace *t,
			const struct as_certificate *c, struct as_diag *diag)
{
	if (c->space >= (t->nspaces ? t->nspaces : 1))
		return as_diag_set(diag, 0, AS_EINVAL,
				   "certificate of space %u: the trace has %u",
				   (unsigned)c->space, (unsigned)t->nspaces);
	for (uint32_t k = 0; k < c->nbuffers; k++) {
		const struct as_cert_buffer *cb = &c->buffers[k];
		if (cb->id >= t->nbuffers)
			return as_diag_set(diag, 0, AS_EINVAL,
					   "certificate buffer %u: the trace "
					   "has %u buffers",
					   cb->id, t->nbuffers);
		const struct as_buffer *b = &t->buffers[cb->id];
		const char *why = NULL;
		if (b->alias_of != AS_NONE)
			why = "an alias (it takes no room of its own)";
		else if (t->nspaces && b->space != c->space)
			why = "in another space";
		else if (b->size != cb->size)
			why = "of another size";
		else if (b->align_log2 < cb->align_log2)
			why = "less aligned";
		else if (cb->start < b->start || cb->end > b->end)
			why = "live for less time";
		if (why)
			return as_diag_set(diag, 0, AS_EINVAL,
					   "certificate buffer %u is %s in "
					   "the trace",
					   cb->id, why);
	}
	return AS_OK;
}

/*
 * A certificate whose buffers all share an instant: there they are apart,
 * each at a multiple of g (the least alignment among them), so ordered by
 * offset each but the topmost takes its size rounded up to g. 1 when that
 * height reaches the bound; 0 when it does not and every alignment is g
 * (the buffers stacked, the one rounded most on top, peak there: it is the
 * optimum); -1 otherwise (no clique, or the exact search must say).
 */
static int clique(const struct as_certificate *c)
{
	uint64_t from = 0, to = UINT64_MAX;
	uint8_t a = 62;
	for (uint32_t k = 0; k < c->nbuffers; k++) {
		const struct as_cert_buffer *b = &c->buffers[k];
		from = b->start > from ? b->start : from;
		to = b->end < to ? b->end : to;
		a = b->align_log2 < a ? b->align_log2 : a;
	}
	if (from >= to)
		return -1;
	uint64_t g = (uint64_t)1 << a, sum = 0, pad = 0;
	bool equal = true;
	for (uint32_t k = 0; k < c->nbuffers; k++) {
		uint64_t size = c->buffers[k].size;
		equal &= c->buffers[k].align_log2 == a;
		/* Past 2^64 the height is past the bound (at most 2^63). */
		if (size > UINT64_MAX - (g - 1))
			return 1;
		uint64_t up = (size + g - 1) / g * g;
		if (sum > UINT64_MAX - up)
			return 1;
		sum += up;
		pad = up - size > pad ? up - size : pad;
	}
	if (sum - pad >= c->bound)
		return 1;
	return equal ? 0 : -1;
}

int as_certificate_verify(const struct as_certificate *c, double limit_ms,
			  uint64_t max_nodes, uint64_t *nodes)
{
	uint32_t n = c->nbuffers;
	if (nodes)
		*nodes = 0;
	if (c->bound == 0)
		return 1;
	/* Offsets and tops of the search stay below 2^64. */
	if (c->bound > (uint64_t)1 << 63)
		return AS_EINVAL;
	for (uint32_t k = 0; k < n; k++)
		if (c->buffers[k].size == 0 ||
		    c->buffers[k].start >= c->buffers[k].end ||
		    c->buffers[k].align_log2 > 62)
			return AS_EINVAL;
	/* A buffer as large as the bound is a proof by itself. */
	for (uint32_t k = 0; k < n; k++)
		if (c->buffers[k].size >= c->bound)
			return 1;
	if (n == 0)
		return 0; /* nothing to place: peak 0 < bound */
	int q = clique(c);
	if (q >= 0)
		return q;
	/* The exact search keeps n^2/2 candidates: strip never writes more. */
	if (n > AS_CERT_MAX_BUFFERS)
		return AS_EINVAL;
	struct as_problem pb = {0};
	int ret = AS_ENOMEM;
	pb.r = calloc(n, sizeof(*pb.r));
	uint64_t *tv = malloc(2 * (size_t)n * sizeof(*tv));
	uint64_t *off = calloc(n, sizeof(*off));
	uint64_t *load = NULL;
	if (!pb.r || !tv || !off)
		goto out;
	for (uint32_t k = 0; k < n; k++) {
		tv[2 * k] = c->buffers[k].start;
		tv[2 * k + 1] = c->buffers[k].end;
	}
	if (as_sort_u64_from(tv, 2 * (size_t)n, 0))
		goto out;
	uint32_t m = 0;
	for (uint32_t j = 0; j < 2 * n; j++)
		if (m == 0 || tv[m - 1] != tv[j])
			tv[m++] = tv[j];
	pb.times = tv;
	pb.nsections = m - 1;
	pb.n = n;
	for (uint32_t k = 0; k < n; k++) {
		pb.r[k].size = c->buffers[k].size;
		pb.r[k].align_log2 = c->buffers[k].align_log2;
		pb.r[k].buf = k;
		pb.r[k].t0 = as_rank_u64(tv, m, c->buffers[k].start);
		pb.r[k].t1 = as_rank_u64(tv, m, c->buffers[k].end);
	}
	load = malloc(((size_t)pb.nsections + 1) * sizeof(*load));
	if (!load)
		goto out;
	/* Bytes past 2^64 in a section: no placement fits at all. */
	for (uint32_t s = 0; s < pb.nsections; s++)
		load[s] = 0;
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t s = pb.r[k].t0; s < pb.r[k].t1; s++) {
			if (load[s] > UINT64_MAX - pb.r[k].size) {
				ret = 1;
				goto out;
			}
			load[s] += pb.r[k].size;
		}
	for (uint32_t s = 0; s < pb.nsections; s++)
		if (load[s] > pb.lower_bound)
			pb.lower_bound = load[s];
	struct as_exact_stats st = {0};
	int r = as_exact_solve(&pb, c->bound - 1, as_now_ms() + limit_ms,
			       NULL, max_nodes, 1, off, &st);
	if (nodes)
		*nodes = st.nodes;
	ret = r == AS_EXACT_NONE    ? 1
	      : r == AS_EXACT_FOUND ? 0
	      : r == AS_EXACT_TIMEOUT ? AS_ELIMIT
				      : r;
out:
	free(pb.r);
	free(tv);
	free(off);
	free(load);
	return ret;
}
