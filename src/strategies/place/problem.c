/*
 * The planning problem of place.h: rectangles over compressed time
 * sections, per address space, and the driver over spaces.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/place/place.h"
#include "core/internal.h"

uint32_t as_rank_u64(const uint64_t *v, uint32_t n, uint64_t x)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool needs_room(const struct as_buffer *b)
{
	return b->alias_of == AS_NONE && b->size > 0 && b->start < b->end;
}

void as_plan_space_peaks(const struct as_trace *t, const struct as_plan *p,
			 uint64_t *peak)
{
	uint32_t ns = t->nspaces > 1 ? t->nspaces : 1;
	for (uint32_t s = 0; s < ns; s++)
		peak[s] = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		uint32_t s = b->space < ns ? b->space : 0;
		uint64_t o = p->offset[i];
		if (!needs_room(b))
			continue;
		if (o == AS_NO_OFFSET || o > UINT64_MAX - b->size ||
		    (p->space && p->space[i] != b->space))
			peak[s] = UINT64_MAX; /* not usable there */
		else if (peak[s] != UINT64_MAX && o + b->size > peak[s])
			peak[s] = o + b->size;
	}
}

/* The problem of buffers idx[0..n) (ascending, all needing room). */
static int init_from(struct as_problem *pb, const struct as_trace *t,
		     const uint32_t *idx, uint32_t n)
{
	memset(pb, 0, sizeof(*pb));
	if (n == 0)
		return AS_OK;
	pb->r = calloc(n, sizeof(*pb->r));
	uint64_t *tv = malloc(2 * (size_t)n * sizeof(*tv));
	if (!pb->r || !tv) {
		free(tv);
		return AS_ENOMEM;
	}
	uint64_t latest = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = idx[k];
		const struct as_buffer *b = &t->buffers[i];
		tv[2 * k] = b->start;
		tv[2 * k + 1] = b->end;
		if (b->end > latest)
			latest = b->end;
		pb->r[k].size = b->size;
		pb->r[k].buf = i;
		pb->r[k].align_log2 = b->align_log2;
	}
	/*
	 * The sections: the distinct times, sorted. With 32-bit times each
	 * sorts with its slot (time << 32 | 2k for a start, 2k + 1 for an
	 * end), and one pass ranks them; else the times sort alone and each
	 * is looked up.
	 */
	bool slots = latest <= UINT32_MAX;
	for (uint32_t j = 0; slots && j < 2 * n; j++)
		tv[j] = tv[j] << 32 | j;
	if (as_sort_u64_from(tv, 2 * (size_t)n, slots ? 32 : 0)) {
		free(tv);
		return AS_ENOMEM;
	}
	uint32_t m = 0;
	for (uint32_t j = 0; j < 2 * n; j++) {
		uint64_t time = slots ? tv[j] >> 32 : tv[j];
		uint32_t slot = (uint32_t)tv[j];
		if (m == 0 || tv[m - 1] != time)
			tv[m++] = time;
		if (slots && slot % 2)
			pb->r[slot / 2].t1 = m - 1;
		else if (slots)
			pb->r[slot / 2].t0 = m - 1;
	}
	pb->times = tv;
	pb->nsections = m - 1;
	for (uint32_t i = 0; !slots && i < n; i++) {
		const struct as_buffer *b = &t->buffers[pb->r[i].buf];
		pb->r[i].t0 = as_rank_u64(tv, m, b->start);
		pb->r[i].t1 = as_rank_u64(tv, m, b->end);
	}
	pb->n = n;
	uint64_t *load = malloc(((size_t)pb->nsections + 1) * sizeof(*load));
	if (!load)
		return AS_ENOMEM;
	as_problem_load(pb, load);
	for (uint32_t s = 0; s < pb->nsections; s++)
		if (load[s] > pb->lower_bound)
			pb->lower_bound = load[s];
	free(load);
	return AS_OK;
}

int as_problem_init(struct as_problem *pb, const struct as_trace *t,
		    uint16_t space)
{
	memset(pb, 0, sizeof(*pb));
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		n += t->buffers[i].space == space && needs_room(&t->buffers[i]);
	uint32_t *idx = malloc(((size_t)n + 1) * sizeof(*idx));
	if (!idx)
		return AS_ENOMEM;
	for (uint32_t i = 0, k = 0; i < t->nbuffers; i++)
		if (t->buffers[i].space == space && needs_room(&t->buffers[i]))
			idx[k++] = i;
	int err = init_from(pb, t, idx, n);
	free(idx);
	return err;
}

int as_spaces_init(struct as_spaces *sp, const struct as_trace *t)
{
	uint32_t ns = t->nspaces ? t->nspaces : 1;
	sp->nspaces = ns;
	sp->first = calloc((size_t)ns + 1, sizeof(*sp->first));
	sp->idx = malloc(((size_t)t->nbuffers + 1) * sizeof(*sp->idx));
	if (!sp->first || !sp->idx) {
		as_spaces_finish(sp);
		return AS_ENOMEM;
	}
	/* Counting sort by space: ascending buffer order within a space. */
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].space < ns && needs_room(&t->buffers[i]))
			sp->first[t->buffers[i].space + 1]++;
	for (uint32_t s = 0; s < ns; s++)
		sp->first[s + 1] += sp->first[s];
	uint32_t *at = malloc((size_t)ns * sizeof(*at));
	if (!at) {
		as_spaces_finish(sp);
		return AS_ENOMEM;
	}
	memcpy(at, sp->first, (size_t)ns * sizeof(*at));
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].space < ns && needs_room(&t->buffers[i]))
			sp->idx[at[t->buffers[i].space]++] = i;
	free(at);
	return AS_OK;
}

void as_spaces_finish(struct as_spaces *sp)
{
	free(sp->first);
	free(sp->idx);
	memset(sp, 0, sizeof(*sp));
}

int as_problem_init_space(struct as_problem *pb, const struct as_trace *t,
			  const struct as_spaces *sp, uint16_t space)
{
	if (space >= sp->nspaces) {
		memset(pb, 0, sizeof(*pb));
		return AS_OK;
	}
	return init_from(pb, t, sp->idx + sp->first[space],
			 sp->first[space + 1] - sp->first[space]);
}

uint8_t as_problem_grain(const struct as_problem *pb)
{
	uint8_t grain = pb->n ? 63 : 0;
	for (uint32_t i = 0; i < pb->n; i++)
		if (pb->r[i].align_log2 < grain)
			grain = pb->r[i].align_log2;
	return grain;
}

void as_problem_finish(struct as_problem *pb)
{
	free(pb->r);
	free(pb->times);
	memset(pb, 0, sizeof(*pb));
}

void as_problem_load(const struct as_problem *pb, uint64_t *out)
{
	/* Difference array; the sums stay exact modulo 2^64. */
	memset(out, 0, ((size_t)pb->nsections + 1) * sizeof(*out));
	for (uint32_t i = 0; i < pb->n; i++) {
		out[pb->r[i].t0] += pb->r[i].size;
		out[pb->r[i].t1] -= pb->r[i].size;
	}
	for (uint32_t s = 1; s < pb->nsections; s++)
		out[s] += out[s - 1];
}

bool as_place_baseline_default(const struct as_trace *t)
{
	return t->nbuffers <= AS_PLACE_BASELINE_MAX;
}

int as_plan_spaces(const struct as_trace *t, struct as_plan *p,
		   as_space_plan_fn fn, void *ctx, struct as_diag *diag)
{
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (b->alias_of == AS_NONE && !needs_room(b))
			p->offset[i] = 0;
	}
	struct as_spaces sp;
	if (as_spaces_init(&sp, t))
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	for (uint16_t s = 0; s < t->nspaces || s == 0; s++) {
		struct as_problem pb;
		int err = as_problem_init_space(&pb, t, &sp, s);
		uint64_t *off = NULL;
		if (err == AS_OK && pb.n > 0) {
			off = calloc(pb.n, sizeof(*off));
			err = off ? fn(&pb, off, ctx, p, diag) : AS_ENOMEM;
		}
		if (err == AS_OK)
			for (uint32_t i = 0; i < pb.n; i++)
				p->offset[pb.r[i].buf] = off[i];
		free(off);
		as_problem_finish(&pb);
		if (err == AS_ENOMEM)
			err = as_diag_set(diag, 0, err, "out of memory");
		if (err || t->nspaces <= 1) {
			as_spaces_finish(&sp);
			return err;
		}
	}
	as_spaces_finish(&sp);
	return AS_OK;
}

uint64_t as_place_peak(const struct as_problem *pb, const uint64_t *off)
{
	uint64_t peak = 0;
	for (uint32_t i = 0; i < pb->n; i++)
		if (off[i] + pb->r[i].size > peak)
			peak = off[i] + pb->r[i].size;
	return peak;
}

bool as_rect_by_t0(uint32_t a, uint32_t b, const void *cv)
{
	const struct as_problem *pb = cv;
	return pb->r[a].t0 < pb->r[b].t0;
}

void as_problem_compact(struct as_problem *pb, uint32_t *mark,
			uint64_t *times)
{
	uint32_t S = pb->nsections, k = 0;
	memset(mark, 0, ((size_t)S + 2) * sizeof(*mark));
	for (uint32_t i = 0; i < pb->n; i++) {
		mark[pb->r[i].t0] = 1;
		mark[pb->r[i].t1] = 1;
	}
	for (uint32_t t = 0; t <= S; t++)
		if (mark[t]) {
			times[k] = pb->times[t];
			mark[t] = k++;
		}
	for (uint32_t i = 0; i < pb->n; i++) {
		pb->r[i].t0 = mark[pb->r[i].t0];
		pb->r[i].t1 = mark[pb->r[i].t1];
	}
	pb->nsections = k ? k - 1 : 0;
	pb->times = times;
}

uint64_t as_problem_pairs(const struct as_problem *pb)
{
	/*
	 * Rectangles live in section t: c[t]; pairs = sum over sections of
	 * new rectangles there times the ones already live.
	 */
	uint32_t S = pb->nsections;
	uint64_t *starts = calloc((size_t)S + 1, sizeof(uint64_t));
	uint64_t *ends = calloc((size_t)S + 1, sizeof(uint64_t));
	uint64_t pairs = 0, live = 0;
	if (!starts || !ends) {
		free(starts);
		free(ends);
		return UINT64_MAX;
	}
	for (uint32_t i = 0; i < pb->n; i++) {
		starts[pb->r[i].t0]++;
		ends[pb->r[i].t1]++;
	}
	for (uint32_t t = 0; t <= S; t++) {
		live -= ends[t];
		/* New ones meet the live ones and each other. */
		pairs += starts[t] * live + starts[t] * (starts[t] - 1) / 2;
		live += starts[t];
	}
	free(starts);
	free(ends);
	return pairs;
}
