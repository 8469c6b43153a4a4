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
#include <string.h>

#include "allocscope/numa.h"
#include "strategies/numa_place.h"
#include "strategies/strategy.h"

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

/* Per task bundle of the current parent (dense index d). */
struct tb {
	uint16_t core;
	uint64_t peak;          /* of its block bundles */
	uint32_t members;       /* sub-tasks in the task bundle */
	uint64_t zsize;         /* second pass: bytes wanted, upper bound */
	uint64_t base, cursor;  /* second pass: zone start, next free */
};

/*
 * Invariants between parents: dense[c] == AS_NONE for every core, and
 * cs[c] describes the last parent that ran on core c. Every loop over
 * blocks runs in trace order (sub-task major) to read memory in order.
 */
struct run {
	const struct as_trace *t;
	const struct as_numa *nm;
	struct as_plan *p;
	struct numa_ws ws;
	const struct as_budget *budget; /* the run's */
	struct numa_item *items;  /* per task bundle d, per edge e: d*E+e */
	size_t cap_items;
	uint32_t *dense;          /* per core: its task bundle, or AS_NONE */
	struct tb *tb;            /* per task bundle of the parent */
	uint32_t ntb;
	uint8_t *moved;           /* per block: moved into a carry zone */
	struct core_state *cs;
	bool keep;
	uint64_t carry_max;       /* bytes per zone, 0: capacity bounds it */
	uint64_t bundles, task_bundles, padding, trips, kept, kept_bytes;
	uint64_t first_pass_peak; /* largest task bundle peak */
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* First pass for one parent: size, place and inherit its block bundles. */
static int first_pass(struct run *r, const struct as_numa_parent *pa)
{
	const struct as_buffer *buf = r->t->buffers;
	const struct as_numa_edge *edges = r->nm->edges + pa->first_edge;
	const uint16_t *core = r->nm->core + pa->first_sub;
	uint32_t E = pa->nedges;
	r->ntb = 0;
	for (uint32_t k = 0; k < pa->nsubtasks; k++) {
		uint32_t d = r->dense[core[k]];
		if (d == AS_NONE) {
			d = r->dense[core[k]] = r->ntb++;
			size_t need = (size_t)r->ntb * E;
			if (need > r->cap_items) {
				size_t cap = need * 2;
				struct numa_item *n = realloc(
					r->items, cap * sizeof(*n));
				if (!n)
					return AS_ENOMEM;
				r->items = n;
				r->cap_items = cap;
			}
			r->tb[d] = (struct tb){.core = core[k]};
			for (uint32_t e = 0; e < E; e++)
				r->items[(size_t)d * E + e] =
					(struct numa_item){
						0, edges[e].life_start,
						edges[e].life_end, 1, 0};
		}
		const struct as_buffer *b = &buf[as_numa_block(pa, k, 0)];
		struct numa_item *it = &r->items[(size_t)d * E];
		r->tb[d].members++;
		for (uint32_t e = 0; e < E; e++) {
			r->padding -= b[e].size; /* bundle sizes added below */
			if (b[e].size > it[e].size)
				it[e].size = b[e].size;
			if (as_buffer_align(&b[e]) > it[e].align)
				it[e].align = as_buffer_align(&b[e]);
		}
	}
	for (uint32_t d = 0; d < r->ntb; d++) {
		int err = as_numa_place(&r->ws, &r->items[(size_t)d * E], E,
					r->budget, &r->tb[d].peak);
		if (err)
			return err;
		if (r->tb[d].peak > r->first_pass_peak)
			r->first_pass_peak = r->tb[d].peak;
		for (uint32_t e = 0; e < E; e++)
			r->padding += r->tb[d].members *
				      r->items[(size_t)d * E + e].size;
	}
	r->bundles += (uint64_t)r->ntb * E;
	r->task_bundles += r->ntb;
	for (uint32_t k = 0; k < pa->nsubtasks; k++) {
		uint32_t b0 = as_numa_block(pa, k, 0);
		const struct numa_item *it =
			&r->items[(size_t)r->dense[core[k]] * E];
		for (uint32_t e = 0; e < E; e++)
			r->p->offset[b0 + e] = it[e].offset;
	}
	return AS_OK;
}

/*
 * The producer block whose data sub-task k of pa reads through edge e
 * from the parent that ran just before pa on the same core, when it can
 * stay on chip; AS_NONE otherwise.
 */
static uint32_t producer(const struct run *r, const struct as_numa_parent *pa,
			 uint32_t k, uint32_t e)
{
	const struct as_numa *nm = r->nm;
	const struct as_numa_edge *ed = &nm->edges[pa->first_edge + e];
	uint16_t c = nm->core[pa->first_sub + k];
	uint32_t q = ed->src_parent;
	if (q == AS_NONE || q != r->cs[c].prev)
		return AS_NONE;
	const struct as_numa_parent *qa = &nm->parents[q];
	if (k >= qa->nsubtasks || nm->core[qa->first_sub + k] != c)
		return AS_NONE;
	uint32_t prod = as_numa_block(qa, k, ed->src_edge);
	uint32_t cons = as_numa_block(pa, k, e);
	if (r->moved[prod] ||
	    r->t->buffers[cons].size > r->t->buffers[prod].size)
		return AS_NONE;
	return prod;
}

/*
 * Second pass for one parent: size each core's carry zone (an upper
 * bound), choose its base clear of the previous zone, then keep blocks in
 * sub-task order while they fit.
 */
static void second_pass(struct run *r, const struct as_numa_parent *pa)
{
	const struct as_numa *nm = r->nm;
	const struct as_buffer *buf = r->t->buffers;
	const uint16_t *core = nm->core + pa->first_sub;
	uint32_t E = pa->nedges;
	bool any = false;
	for (uint32_t e = 0; e < E; e++)
		any |= nm->edges[pa->first_edge + e].src_parent != AS_NONE;
	for (uint32_t pass = 0; any && pass < 2; pass++) {
		for (uint32_t d = 0; pass == 1 && d < r->ntb; d++) {
			struct tb *tb = &r->tb[d];
			const struct core_state *cs = &r->cs[tb->core];
			uint64_t low = cs->prev_peak > tb->peak ? cs->prev_peak
								: tb->peak;
			bool below = cs->ztop == cs->zbase ||
				     low + tb->zsize <= cs->zbase;
			tb->base = below || low > cs->ztop ? low : cs->ztop;
			tb->cursor = tb->base;
		}
		for (uint32_t k = 0; k < pa->nsubtasks; k++) {
			struct tb *tb = &r->tb[r->dense[core[k]]];
			uint64_t cap = r->p->space_capacity[nm->first_space +
							    tb->core];
			for (uint32_t e = 0; e < E; e++) {
				uint32_t prod = producer(r, pa, k, e);
				if (prod == AS_NONE)
					continue;
				uint64_t size = buf[prod].size;
				uint64_t a = as_buffer_align(&buf[prod]);
				if (pass == 0) {
					tb->zsize = align_up(tb->zsize, a) +
						    size;
					continue;
				}
				uint64_t at = align_up(tb->cursor, a);
				if ((cap && (at > cap || size > cap - at)) ||
				    (r->carry_max &&
				     at + size - tb->base > r->carry_max))
					continue;
				uint32_t cons = as_numa_block(pa, k, e);
				tb->cursor = at + size;
				r->p->offset[prod] = at;
				r->p->offset[cons] = at;
				r->p->alias_of[cons] = prod;
				r->moved[prod] = 1;
				r->kept++;
				r->kept_bytes += size;
			}
		}
	}
	for (uint32_t d = 0; d < r->ntb; d++) {
		struct core_state *cs = &r->cs[r->tb[d].core];
		cs->zbase = any ? r->tb[d].base : 0;
		cs->ztop = any ? r->tb[d].cursor : 0;
	}
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	const struct as_numa *nm = t->numa;
	uint64_t keep, carry_max;
	int err = as_opts_u64(o, "keep", 1, 0, 1, &keep, diag);
	if (!err)
		err = as_opts_u64(o, "carry", 0, 0, UINT64_MAX / 4,
				  &carry_max, diag);
	if (err)
		return err;
	struct run r = {.t = t, .nm = nm, .p = p, .keep = keep != 0,
			.carry_max = carry_max, .budget = &run->budget};
	r.dense = malloc(((size_t)nm->ncores + 1) * sizeof(*r.dense));
	r.tb = malloc(((size_t)nm->ncores + 1) * sizeof(*r.tb));
	r.cs = malloc(((size_t)nm->ncores + 1) * sizeof(*r.cs));
	if (r.keep)
		r.moved = calloc((size_t)t->nbuffers + 1, 1);
	err = AS_ENOMEM;
	if (!r.dense || !r.tb || !r.cs || (r.keep && !r.moved))
		goto out;
	if ((err = as_numa_want_spaces(t, p)))
		goto out;
	if (r.keep && !p->alias_of) {
		/* A numa trace has no aliases of its own (the parser makes
		 * none): start from "none" without reading every buffer. */
		p->alias_of = malloc(((size_t)t->nbuffers + 1) *
				     sizeof(*p->alias_of));
		if (!p->alias_of) {
			err = AS_ENOMEM;
			goto out;
		}
		memset(p->alias_of, 0xff,
		       (size_t)t->nbuffers * sizeof(*p->alias_of));
	}
	for (uint32_t c = 0; c < nm->ncores; c++) {
		r.dense[c] = AS_NONE;
		r.cs[c] = (struct core_state){AS_NONE, 0, 0, 0};
	}
	for (uint32_t pi = 0; pi < nm->nparents && !err; pi++) {
		const struct as_numa_parent *pa = &nm->parents[pi];
		if (pi % NUMA_CHECK_EVERY == 0 && as_budget_spent(r.budget)) {
			err = as_budget_why(r.budget);
			break;
		}
		for (uint32_t e = 0; e < pa->nedges; e++)
			if (nm->edges[pa->first_edge + e].src_parent != AS_NONE)
				r.trips += pa->nsubtasks;
		if ((err = first_pass(&r, pa)))
			break;
		if (r.keep)
			second_pass(&r, pa);
		for (uint32_t d = 0; d < r.ntb; d++) {
			struct core_state *cs = &r.cs[r.tb[d].core];
			cs->prev = pi;
			cs->prev_peak = r.tb[d].peak;
			r.dense[r.tb[d].core] = AS_NONE;
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
		err = as_numa_core_stats(t, p);
out:
	free(r.items);
	free(r.dense);
	free(r.tb);
	free(r.moved);
	free(r.cs);
	as_numa_ws_finish(&r.ws);
	return err;
}

static const struct as_option_desc options[] = {
	{"keep", "1", "1: keep data between consecutive parents on a core "
		      "on chip (second pass); 0: always round-trip"},
	{"carry", "0", "bytes a core may spend on one carry zone (kept "
		       "data); 0: up to the core's capacity"},
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
