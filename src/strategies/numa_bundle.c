/*
 * `numa-bundle`: bundle-level static planning for multi-core chips whose
 * cores have private memories (docs/numa.md).
 *
 * First pass, per parent task and per core: the sub-tasks of the parent on
 * the core form a task bundle; its blocks at the same edge (topological
 * position) form a block bundle, as large as its largest block, living
 * where the edge lives inside one sub-task. The block bundles of a task
 * bundle are placed by the shared greedy placer; every block inherits its
 * bundle's address (smaller blocks are padded up, never overrun). This is
 * valid because the sub-tasks of a task bundle run one after another and a
 * block never outlives its sub-task: only blocks of one sub-task are ever
 * live together, and they share the bundles' disjoint layout.
 *
 * Second pass, across parents (option keep=1): when parent P reads an
 * output edge of Q and Q is the parent that ran just before P on a core,
 * the blocks sub-task k of Q produced there and sub-task k of P reads there
 * stay on chip. The producer moves into a carry zone above both parents'
 * bundles (and clear of the previous carry zone, which is live during Q);
 * the consumer is placed inside it (a plan alias), which makes the
 * validator keep the producer live until the consumer ends. Blocks are
 * kept in sub-task order while the zone fits in the core's capacity; the
 * rest make the round trip through global memory.
 */
#include <stdlib.h>

#include "allocscope_numa.h"
#include "numa_place.h"
#include "strategy.h"

static bool applies(const struct as_trace *t)
{
	return t->numa != NULL;
}

/* Per core: the previous parent there and the carry zone live with it. */
struct core_state {
	uint32_t prev;          /* parent, or AS_NONE */
	uint64_t prev_peak;     /* its task bundle's peak on this core */
	uint64_t zbase, ztop;   /* carry zone into prev; empty: equal */
};

struct run {
	const struct as_trace *t;
	const struct as_numa *nm;
	struct as_plan *p;
	struct numa_ws ws;
	struct numa_item *items;  /* per edge of the parent */
	uint64_t *bundle;         /* per edge: bundle size */
	uint32_t *first, *members;/* sub-tasks of the parent by core */
	uint8_t *moved;           /* per block: moved into a carry zone */
	struct core_state *cs;
	bool keep;
	uint64_t bundles, task_bundles, padding, trips, kept, kept_bytes;
	uint64_t first_pass_peak; /* largest task bundle peak */
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Group the parent's sub-tasks by core (counting sort, index order). */
static void group(struct run *r, const struct as_numa_parent *pa)
{
	const uint16_t *core = r->nm->core + pa->first_sub;
	uint32_t nc = r->nm->ncores;
	for (uint32_t c = 0; c <= nc; c++)
		r->first[c] = 0;
	for (uint32_t k = 0; k < pa->nsubtasks; k++)
		r->first[core[k] + 1]++;
	for (uint32_t c = 0; c < nc; c++)
		r->first[c + 1] += r->first[c];
	for (uint32_t k = 0; k < pa->nsubtasks; k++)
		r->members[r->first[core[k]]++] = k;
	for (uint32_t c = nc; c > 0; c--)
		r->first[c] = r->first[c - 1];
	r->first[0] = 0;
}

/* First pass for one task bundle: returns its peak through *peak. */
static int plan_task_bundle(struct run *r, const struct as_numa_parent *pa,
			    uint32_t c, uint64_t *peak)
{
	const struct as_buffer *buf = r->t->buffers;
	const struct as_numa_edge *edges = r->nm->edges + pa->first_edge;
	uint32_t lo = r->first[c], hi = r->first[c + 1];
	for (uint32_t e = 0; e < pa->nedges; e++) {
		r->items[e] = (struct numa_item){0, edges[e].life_start,
						 edges[e].life_end, 1, 0};
	}
	for (uint32_t m = lo; m < hi; m++) {
		uint32_t b0 = as_numa_block(pa, r->members[m], 0);
		for (uint32_t e = 0; e < pa->nedges; e++) {
			const struct as_buffer *b = &buf[b0 + e];
			struct numa_item *it = &r->items[e];
			if (b->size > it->size)
				it->size = b->size;
			if (as_buffer_align(b) > it->align)
				it->align = as_buffer_align(b);
		}
	}
	int err = numa_place(&r->ws, r->items, pa->nedges, peak);
	if (err)
		return err;
	r->bundles += pa->nedges;
	r->task_bundles++;
	for (uint32_t m = lo; m < hi; m++) {
		uint32_t b0 = as_numa_block(pa, r->members[m], 0);
		for (uint32_t e = 0; e < pa->nedges; e++) {
			r->p->offset[b0 + e] = r->items[e].offset;
			r->padding += r->items[e].size - buf[b0 + e].size;
		}
	}
	return AS_OK;
}

/*
 * Second pass between q (the previous parent on core c) and pa: keep what
 * q produced for pa on chip, in a carry zone. `peak` is pa's bundle peak.
 */
static void carry(struct run *r, uint32_t pi, uint32_t c, uint64_t peak)
{
	const struct as_numa *nm = r->nm;
	const struct as_numa_parent *pa = &nm->parents[pi];
	struct core_state *cs = &r->cs[c];
	const struct as_buffer *buf = r->t->buffers;
	uint64_t cap = r->p->space_capacity[nm->first_space + c];
	uint32_t q = cs->prev;
	uint32_t lo = r->first[c], hi = r->first[c + 1];
	/* Pass 1 over the candidates sizes the zone, pass 2 places. */
	uint64_t size = 0, base = 0, used = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			uint64_t low = cs->prev_peak > peak ? cs->prev_peak
							    : peak;
			bool empty = cs->ztop == cs->zbase;
			base = empty || low + size <= cs->zbase
				       ? low
				       : (low > cs->ztop ? low : cs->ztop);
			used = base;
		}
		for (uint32_t e = 0; e < pa->nedges; e++) {
			const struct as_numa_edge *ed =
				&nm->edges[pa->first_edge + e];
			if (ed->src_parent != q || q == AS_NONE)
				continue;
			const struct as_numa_parent *qa = &nm->parents[q];
			for (uint32_t m = lo; m < hi; m++) {
				uint32_t k = r->members[m];
				if (k >= qa->nsubtasks ||
				    nm->core[qa->first_sub + k] != c)
					continue;
				uint32_t prod = as_numa_block(qa, k,
							      ed->src_edge);
				uint32_t cons = as_numa_block(pa, k, e);
				if (r->moved[prod] ||
				    buf[cons].size > buf[prod].size)
					continue;
				uint64_t a = as_buffer_align(&buf[prod]);
				if (pass == 0) {
					size = align_up(size, a) +
					       buf[prod].size;
					continue;
				}
				uint64_t at = align_up(used, a);
				if (cap && (at > cap || buf[prod].size >
								cap - at))
					continue;
				used = at + buf[prod].size;
				r->p->offset[prod] = at;
				r->p->offset[cons] = at;
				r->p->alias_of[cons] = prod;
				r->moved[prod] = 1;
				r->kept++;
				r->kept_bytes += buf[prod].size;
			}
		}
	}
	cs->zbase = base;
	cs->ztop = used > base ? used : base;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_plan *p, struct as_diag *diag)
{
	const struct as_numa *nm = t->numa;
	uint64_t keep;
	int err = as_opts_u64(o, "keep", 1, 0, 1, &keep, diag);
	if (err)
		return err;
	uint32_t maxe = 0, maxsub = 0;
	for (uint32_t pi = 0; pi < nm->nparents; pi++) {
		if (nm->parents[pi].nedges > maxe)
			maxe = nm->parents[pi].nedges;
		if (nm->parents[pi].nsubtasks > maxsub)
			maxsub = nm->parents[pi].nsubtasks;
	}
	struct run r = {.t = t, .nm = nm, .p = p, .keep = keep != 0};
	r.items = malloc(((size_t)maxe + 1) * sizeof(*r.items));
	r.first = malloc(((size_t)nm->ncores + 1) * sizeof(*r.first));
	r.members = malloc(((size_t)maxsub + 1) * sizeof(*r.members));
	r.cs = malloc(((size_t)nm->ncores + 1) * sizeof(*r.cs));
	if (r.keep)
		r.moved = calloc((size_t)t->nbuffers + 1, 1);
	err = AS_ENOMEM;
	if (!r.items || !r.first || !r.members || !r.cs ||
	    (r.keep && !r.moved))
		goto out;
	if ((err = as_plan_want_spaces(p, t, t->nspaces)) ||
	    (r.keep && (err = as_plan_want_aliases(p, t))))
		goto out;
	for (uint32_t c = 0; c < nm->ncores; c++)
		r.cs[c] = (struct core_state){AS_NONE, 0, 0, 0};
	for (uint32_t pi = 0; pi < nm->nparents && !err; pi++) {
		const struct as_numa_parent *pa = &nm->parents[pi];
		for (uint32_t e = 0; e < pa->nedges; e++)
			if (nm->edges[pa->first_edge + e].src_parent != AS_NONE)
				r.trips += pa->nsubtasks;
		group(&r, pa);
		for (uint32_t c = 0; c < nm->ncores && !err; c++) {
			if (r.first[c] == r.first[c + 1])
				continue;
			uint64_t peak;
			if ((err = plan_task_bundle(&r, pa, c, &peak)))
				break;
			if (peak > r.first_pass_peak)
				r.first_pass_peak = peak;
			if (r.keep)
				carry(&r, pi, c, peak);
			r.cs[c].prev = pi;
			r.cs[c].prev_peak = peak;
		}
	}
	if (!err)
		err = as_plan_stat_int(p, "blocks", t->nbuffers);
	if (!err)
		err = as_plan_stat_int(p, "objects_analysed", r.bundles);
	if (!err)
		err = as_plan_stat_int(p, "task_bundles", r.task_bundles);
	if (!err)
		err = as_plan_stat(p, "blocks_per_bundle",
				   r.bundles ? (double)t->nbuffers /
						       (double)r.bundles
					     : 0);
	if (!err)
		err = as_plan_stat_int(p, "padding_bytes", r.padding);
	if (!err)
		err = as_plan_stat_int(p, "first_pass_peak_max",
				       r.first_pass_peak);
	if (!err)
		err = as_plan_stat_int(p, "round_trips", r.trips);
	if (!err)
		err = as_plan_stat_int(p, "round_trips_avoided", r.kept);
	if (!err)
		err = as_plan_stat_int(p, "bytes_kept_on_chip", r.kept_bytes);
	if (!err)
		err = numa_core_stats(t, p);
out:
	free(r.items);
	free(r.first);
	free(r.members);
	free(r.moved);
	free(r.cs);
	numa_ws_finish(&r.ws);
	return err;
}

static const struct as_option_desc options[] = {
	{"keep", "1", "1: keep data between consecutive parents on a core "
		      "on chip (second pass); 0: always round-trip"},
	{NULL, NULL, NULL},
};

const struct as_strategy_impl as_strategy_numa_bundle = {
	.info = {
		.name = "numa-bundle",
		.summary = "needs a numa trace: plans block bundles per core, "
			   "blocks inherit the bundle's address",
		.online = false,
		.options = options,
	},
	.applies = applies,
	.plan = plan,
};
