/*
 * What makes a peak: the moment (core's as_trace_peak_moment per space, or
 * a plan's as_plan_peak_moment), the buffers live then grouped, the trace's
 * temporaries and never-freed blocks grouped, the bytes of each annotation
 * stage, and an online allocator's blocks at a plan's peak.
 *
 * Live at a time T means start <= T < end (after every event at T), as the
 * moments count it; aliases take no bytes of their own and are left out,
 * buffers of 0 bytes count as live blocks of 0 bytes. A temporary is a
 * buffer freed before the program's next allocation (no allocation of
 * positive size starts strictly inside its life), as heaptrack counts
 * them; never freed: live when the recording ended (AS_BUF_NEVER_FREED).
 *
 * One time order of the buffers (core's as_order, O(n) when the events are
 * sorted) serves every moment; buffers are bucketed by space once, so each
 * space's lists cost its own buffers. Stage figures read the live-bytes
 * curve of their space (core's as_curve, with block maxima).
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

static const char *const group_names[] = {
	[AS_GROUP_BUFFER] = "buffer",   [AS_GROUP_PREFIX] = "prefix",
	[AS_GROUP_FRAME] = "frame",     [AS_GROUP_SIZE] = "size",
	[AS_GROUP_STAGE] = "annotation", [AS_GROUP_STACK] = "stack",
	[AS_GROUP_CONTEXT] = "context", [AS_GROUP_CATEGORY] = "category",
	[AS_GROUP_LINE] = "line",
};

void as_explain_options_init(struct as_explain_options *o)
{
	*o = (struct as_explain_options){.by = AS_GROUP_STACK, .top = 10,
					 .frames = 5};
}

int as_group_by_from_name(const char *name, enum as_group_by *out)
{
	if (!name)
		return AS_EINVAL;
	if (strcmp(name, "stage") == 0) {
		*out = AS_GROUP_STAGE;
		return AS_OK;
	}
	for (size_t g = 0; g < sizeof(group_names) / sizeof(group_names[0]);
	     g++)
		if (strcmp(name, group_names[g]) == 0) {
			*out = (enum as_group_by)g;
			return AS_OK;
		}
	return AS_EINVAL;
}

const char *as_group_by_name(enum as_group_by g)
{
	return (size_t)g < sizeof(group_names) / sizeof(group_names[0])
		       ? group_names[g]
		       : "?";
}

static void free_list(struct as_explain_list *l)
{
	for (uint32_t j = 0; l->groups && j < l->ngroups; j++) {
		free(l->groups[j].frames);
		free(l->groups[j].above);
		free(l->groups[j].evidence);
	}
	free(l->groups);
}

void as_explain_destroy(struct as_explain *e)
{
	if (!e)
		return;
	for (uint16_t s = 0; e->spaces && s < e->nspaces; s++) {
		struct as_explain_space *x = &e->spaces[s];
		free_list(&x->live);
		free_list(&x->temporaries);
		free_list(&x->never_freed);
		free(x->stages);
		free(x->peak_stages);
	}
	free(e->spaces);
	free(e->ooms);
	if (e->priv)
		as_arena_finish(&e->priv->arena);
	free(e->priv);
	free(e->spec);
	free(e);
}

/* Hand e out, or destroy it when err says it failed. */
static int hand_out(struct as_explain *e, int err, struct as_explain **out)
{
	if (err) {
		as_explain_destroy(e);
		return err;
	}
	*out = e;
	return AS_OK;
}

uint32_t as_x_nbuffers(const struct as_explain *e)
{
	return e->priv->streamed ? e->priv->nbuffers : e->trace->nbuffers;
}

uint64_t as_x_nevents(const struct as_explain *e)
{
	return e->priv->streamed ? e->priv->nevents
				 : as_trace_alloc_free_events(e->trace);
}

bool as_x_clock(const struct as_explain *e, uint64_t time, uint64_t *us)
{
	const struct as_trace *t = e->trace;
	if (e->priv->streamed) { /* only the peak's reading is kept */
		*us = e->priv->peak_us;
		return e->priv->has_clock && e->has_peak &&
		       time == e->peak_time;
	}
	if (!t->clock || time > t->end_time)
		return false;
	*us = t->clock[time];
	return true;
}

int as_x_new(const struct as_trace *t, const struct as_explain_options *o,
	     uint16_t nspaces, struct as_explain **out)
{
	struct as_explain *e = calloc(1, sizeof(*e));
	if (!e)
		return AS_ENOMEM;
	e->trace = t;
	if (o)
		e->opts = *o;
	else
		as_explain_options_init(&e->opts);
	e->nspaces = nspaces;
	e->priv = calloc(1, sizeof(*e->priv));
	e->spaces = calloc((size_t)nspaces + 1, sizeof(*e->spaces));
	if (!e->priv || !e->spaces) {
		as_explain_destroy(e);
		return AS_ENOMEM;
	}
	*out = e;
	return AS_OK;
}

/* Buffers bucketed by space: space s holds idx[off[s] .. off[s + 1]). */
struct buckets {
	uint32_t *idx;
	uint32_t *off;
};

static int bucket(const struct as_trace *t, const struct as_plan *p,
		  uint16_t nspaces, struct buckets *b)
{
	b->off = calloc((size_t)nspaces + 2, sizeof(*b->off));
	b->idx = malloc(sizeof(*b->idx) * ((size_t)t->nbuffers + 1));
	if (!b->off || !b->idx)
		return AS_ENOMEM;
	uint32_t n = p && p->nbuffers < t->nbuffers ? p->nbuffers : t->nbuffers;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t s = p ? as_plan_space_of(p, t, i) : t->buffers[i].space;
		if (s < nspaces)
			b->off[s + 1]++;
	}
	for (uint32_t s = 0; s < nspaces; s++)
		b->off[s + 1] += b->off[s];
	uint32_t *at = malloc(sizeof(*at) * ((size_t)nspaces + 1));
	if (!at)
		return AS_ENOMEM;
	memcpy(at, b->off, sizeof(*at) * nspaces);
	for (uint32_t i = 0; i < n; i++) {
		uint16_t s = p ? as_plan_space_of(p, t, i) : t->buffers[i].space;
		if (s < nspaces)
			b->idx[at[s]++] = i;
	}
	free(at);
	return AS_OK;
}

static void buckets_free(struct buckets *b)
{
	free(b->idx);
	free(b->off);
}

static bool counts(const struct as_buffer *b)
{
	return b->alias_of == AS_NONE;
}

static bool drawable(const struct as_buffer *b)
{
	return b->size > 0 && b->end > b->start;
}

/* The live groups of space s at time `time`: buffers of its bucket. */
static int live_list(struct as_explain *e, const struct as_plan *p,
		     const struct as_order *ord, const struct buckets *bk,
		     uint16_t s, uint64_t time, struct as_explain_list *out)
{
	const struct as_trace *t = e->trace;
	struct grouper *g = NULL;
	int err = as_x_grouper_create(t, &e->opts, ord, &g);
	for (uint32_t k = bk->off[s]; !err && k < bk->off[s + 1]; k++) {
		uint32_t i = bk->idx[k];
		const struct as_buffer *b = &t->buffers[i];
		if (b->start > time || b->end <= time)
			continue;
		if (p ? (p->offset[i] == AS_NO_OFFSET ||
			 as_plan_alias_of(p, t, i) != AS_NONE)
		      : !counts(b))
			continue;
		err = as_x_grouper_add(g, i);
	}
	if (!err)
		err = as_x_grouper_list(g, e, false, out);
	as_x_grouper_destroy(g);
	return err;
}

static int trace_lists(struct as_explain *e, const struct as_order *o,
		       const struct buckets *bk, uint16_t s)
{
	const struct as_trace *t = e->trace;
	struct as_explain_space *x = &e->spaces[s];
	struct grouper *tg = NULL, *ng = NULL;
	int err = as_x_grouper_create(t, &e->opts, o, &tg);
	if (!err)
		err = as_x_grouper_create(t, &e->opts, o, &ng);
	for (uint32_t k = bk->off[s]; !err && k < bk->off[s + 1]; k++) {
		uint32_t i = bk->idx[k];
		const struct as_buffer *b = &t->buffers[i];
		if (!counts(b))
			continue;
		if (b->flags & AS_BUF_NEVER_FREED)
			err = as_x_grouper_add(ng, i);
		else if (drawable(b) && as_x_temporary(o, b))
			err = as_x_grouper_add(tg, i);
	}
	if (!err)
		err = as_x_grouper_list(tg, e, true, &x->temporaries);
	if (!err)
		err = as_x_grouper_list(ng, e, false, &x->never_freed);
	as_x_grouper_destroy(tg);
	as_x_grouper_destroy(ng);
	return err;
}

/* ---- Stages ---- */

/* The bytes live in space s over time (core's curve). */
static int live_curve(const struct as_order *o, uint16_t s,
		      struct as_curve *c)
{
	const struct as_trace *t = o->t;
	uint8_t *keep = calloc((size_t)t->nbuffers + 1, 1);
	struct as_edge *e = malloc(sizeof(*e) * (2 * (size_t)o->n + 1));
	int err = keep && e ? as_curve_alloc(c, 2 * (size_t)o->n) : AS_ENOMEM;
	if (err)
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		keep[i] = drawable(b) && counts(b) && b->space == s;
	}
	size_t m = as_order_edges(o, keep, e);
	unsigned __int128 live = 0;
	for (size_t k = 0; k < m;) {
		uint64_t now = e[k].t;
		for (; k < m && e[k].t == now; k++) {
			if (e[k].start)
				live += t->buffers[e[k].i].size;
			else
				live -= t->buffers[e[k].i].size;
		}
		as_curve_put(c, now, live > UINT64_MAX ? UINT64_MAX : (uint64_t)live);
	}
	err = as_curve_finish(c);
out:
	free(keep);
	free(e);
	return err;
}

static int stage_figures(struct as_explain *e, const struct as_order *o,
			 uint16_t s)
{
	const struct as_trace *t = e->trace;
	struct as_explain_space *x = &e->spaces[s];
	uint32_t lo = 0, hi;
	while (lo < t->nstages && t->stages[lo].space < s)
		lo++;
	for (hi = lo; hi < t->nstages && t->stages[hi].space == s; hi++)
		;
	if (hi == lo)
		return AS_OK;
	struct as_curve c;
	int err = live_curve(o, s, &c);
	x->stages = calloc(hi - lo, sizeof(*x->stages));
	x->peak_stages = calloc(hi - lo, sizeof(*x->peak_stages));
	if (err || !x->stages || !x->peak_stages) {
		as_curve_free(&c);
		return AS_ENOMEM;
	}
	for (uint32_t k = lo; k < hi; k++) {
		const struct as_stage *st = &t->stages[k];
		struct as_explain_stage *f = &x->stages[x->nstages++];
		f->stage = k;
		f->at_start = st->start ? as_curve_at(&c, st->start - 1) : 0;
		f->at_end = st->end ? as_curve_at(&c, st->end - 1) : 0;
		f->peak = f->at_start;
		f->peak_time = st->start;
		if (st->end > st->start) {
			/* The value holding at its start, then every point
			 * after it inside. */
			f->peak = as_curve_at(&c, st->start);
			uint32_t at, a = as_curve_index(&c, st->start),
				     b = as_curve_index(&c, st->end - 1);
			uint64_t m = as_curve_max(&c, a, b, &at);
			if (a < b && m > f->peak) {
				f->peak = m;
				f->peak_time = c.t[at];
			}
		}
		if (x->has_peak && st->start <= x->peak_time &&
		    st->end > x->peak_time)
			x->peak_stages[x->npeak_stages++] = k;
	}
	as_curve_free(&c);
	return AS_OK;
}

/* ---- The trace ---- */

int as_explain_trace(const struct as_trace *t,
		     const struct as_explain_options *o,
		     struct as_explain **out)
{
	if (!t || !out)
		return AS_EINVAL;
	struct as_explain *e;
	int err = as_x_new(t, o, t->nspaces, &e);
	if (err)
		return err;
	struct as_order ord;
	struct buckets bk = {0};
	uint64_t *reserved = NULL;
	if ((err = as_order_build(t, &ord))) {
		as_explain_destroy(e);
		return err;
	}
	if ((err = bucket(t, NULL, t->nspaces, &bk)))
		goto out;
	if (t->nsegments &&
	    (!(reserved = calloc(t->nspaces, sizeof(*reserved))) ||
	     as_trace_reserved_peaks(t, reserved))) {
		err = AS_ENOMEM;
		goto out;
	}
	struct as_moment m;
	int rc = as_order_bound_moment(&ord, AS_ALL_SPACES, &m);
	if (rc < 0) {
		err = rc;
		goto out;
	}
	e->has_peak = rc == AS_OK;
	e->peak_time = e->has_peak ? m.time : 0;
	for (uint16_t s = 0; s < t->nspaces && !err; s++) {
		struct as_explain_space *x = &e->spaces[s];
		x->space = s;
		x->name = t->spaces[s].name;
		x->reserved_peak = reserved ? reserved[s] : 0;
		if (bk.off[s + 1] > bk.off[s]) {
			rc = as_order_bound_moment(&ord, s, &m);
			if (rc < 0) {
				err = rc;
				break;
			}
			x->has_peak = rc == AS_OK;
		}
		if (x->has_peak) {
			x->peak_bytes = m.live_bytes;
			x->peak_time = m.time;
			x->live_bytes = m.live_bytes;
			e->peak_bytes = m.live_bytes > UINT64_MAX - e->peak_bytes
						? UINT64_MAX
						: e->peak_bytes + m.live_bytes;
			err = live_list(e, NULL, &ord, &bk, s, m.time, &x->live);
			x->live_count = x->live.count;
		}
		if (!err)
			err = trace_lists(e, &ord, &bk, s);
		if (!err)
			err = stage_figures(e, &ord, s);
	}
	if (!err)
		err = as_x_oom_trace(e, t);
out:
	free(reserved);
	buckets_free(&bk);
	as_order_free(&ord);
	return hand_out(e, err, out);
}

/* ---- A plan ---- */

/* What the allocator's blocks at the peak (as_strategy_blocks_at) hold. */
static void frag_of(const struct as_block *b, size_t n, uint64_t live,
		    struct as_explain_frag *f)
{
	for (size_t k = 0; k < n; k++) {
		f->reserved = b[k].size > UINT64_MAX - f->reserved
				      ? UINT64_MAX
				      : f->reserved + b[k].size;
		f->blocks++;
		if (!b[k].in_use) {
			f->free_blocks++;
			if (b[k].size > f->largest_free)
				f->largest_free = b[k].size;
		}
	}
	f->known = true;
	f->live = live;
	f->free_bytes = f->reserved > live ? f->reserved - live : 0;
}

/* Whether SPEC names an online allocator. */
static bool online(const char *spec)
{
	const struct as_strategy_info *si = as_strategy_find_by_spec(spec);
	return si && si->online;
}

int as_explain_plan(const struct as_trace *t, const char *spec,
		    const struct as_plan *p, const struct as_explain_options *o,
		    struct as_explain **out, struct as_diag *diag)
{
	if (!t || !spec || !p || !p->offset || !out)
		return AS_EINVAL;
	uint16_t nspaces = p->nspaces ? p->nspaces : t->nspaces;
	struct as_explain *e;
	int err = as_x_new(t, o, nspaces, &e);
	if (err)
		return err;
	struct as_order ord;
	struct buckets bk = {0};
	uint64_t *peaks = calloc((size_t)nspaces + 1, sizeof(*peaks));
	if (!(e->spec = strdup(spec)) || !peaks) {
		free(peaks);
		as_explain_destroy(e);
		return AS_ENOMEM;
	}
	if ((err = as_order_build(t, &ord))) {
		free(peaks);
		as_explain_destroy(e);
		return err;
	}
	if ((err = bucket(t, p, nspaces, &bk)))
		goto out;
	as_plan_peaks(p, t, peaks);
	e->peak_bytes = as_plan_peak(p, t, -1);
	bool walk = online(spec);
	uint64_t best = 0;
	for (uint16_t s = 0; s < nspaces && !err; s++) {
		struct as_explain_space *x = &e->spaces[s];
		x->space = s;
		x->name = as_plan_space_name(p, t, s);
		if (bk.off[s + 1] == bk.off[s])
			continue;
		struct as_moment m;
		int rc = as_order_peak_moment(&ord, p, nspaces > 1 ? s : -1, &m);
		if (rc < 0) {
			err = rc;
			break;
		}
		if (rc != AS_OK)
			continue;
		x->has_peak = true;
		x->peak_bytes = peaks[s];
		x->peak_time = m.time;
		x->live_bytes = m.live_bytes;
		if (!e->has_peak || peaks[s] > best) {
			best = peaks[s];
			e->peak_time = m.time;
		}
		e->has_peak = true;
		if ((err = live_list(e, p, &ord, &bk, s, m.time, &x->live)))
			break;
		x->live_count = x->live.count;
		if (walk) {
			struct as_diag d = {0};
			struct as_runner_options ro = {.cancel = e->opts.cancel};
			struct as_block *blocks;
			size_t nb;
			rc = as_strategy_blocks_at(spec, t, &ro, m.time, s,
						   &blocks, &nb, diag ? diag : &d);
			if (rc == AS_OK) {
				frag_of(blocks, nb, m.live_bytes, &x->frag);
				free(blocks);
			} else if (rc != AS_EUNSUPPORTED) {
				err = rc;
			}
		}
	}
	if (!err)
		err = as_x_oom_plan(e, t, p);
out:
	free(peaks);
	buckets_free(&bk);
	as_order_free(&ord);
	return hand_out(e, err, out);
}

void as_x_ranks(const struct as_explain_entry *entries, size_t n, uint64_t *max,
		uint64_t *mean)
{
	unsigned __int128 sum = 0;
	*max = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = entries[i].trace->peak_bytes;
		sum += v;
		*max = v > *max ? v : *max;
	}
	*mean = n ? (uint64_t)(sum / n) : 0;
}

double as_explain_imbalance(const struct as_explain_entry *entries, size_t n)
{
	uint64_t max, mean;
	as_x_ranks(entries, n, &max, &mean);
	return mean ? (double)max / (double)mean : 0;
}
