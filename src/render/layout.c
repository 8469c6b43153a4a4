/*
 * Preparation and layout: which buffers a panel draws, its peak and what
 * is live there, the render's creation and destruction, and where each
 * panel, title and plot sits in the picture.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

bool as_r_buf_drawable(const struct as_buffer *b)
{
	return b->size > 0 && b->end > b->start;
}

bool as_r_is_alias(const struct panel *pn, uint32_t i)
{
	return as_plan_alias_of(pn->p, pn->t, i) != AS_NONE;
}

uint64_t as_r_extent_of(const struct panel *pn, uint32_t i)
{
	uint64_t s = pn->t->buffers[i].size;
	if (pn->p->chunk && pn->p->chunk[i] > s)
		s = pn->p->chunk[i];
	return s;
}

uint64_t as_r_end_addr(const struct panel *pn, uint32_t i)
{
	uint64_t o = pn->p->offset[i], e = as_r_extent_of(pn, i);
	return o > UINT64_MAX - e ? UINT64_MAX : o + e;
}

/* What frames need of the panel's buffers, prepared once per axis. */
int as_r_index_panel(const struct as_render *r, struct panel *pn)
{
	int err = as_r_index_geo(r, pn);
	return err ? err : as_r_index_hits(r, pn);
}

struct sized {
	uint64_t size;
	uint32_t idx;
};

static int cmp_by_size_desc(const void *a, const void *b)
{
	const struct sized *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Placed, non-alias buffers live at t, largest first (all of them). */
int as_r_collect_live(const struct panel *pn, uint64_t t, uint32_t **out,
		 uint64_t *n_out, uint64_t *bytes)
{
	struct sized *v = malloc(sizeof(*v) * (pn->nplaced ? pn->nplaced : 1));
	uint64_t n = 0, sum = 0;
	if (!v)
		return AS_ENOMEM;
	for (uint32_t k = 0; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		const struct as_buffer *b = &pn->t->buffers[i];
		if (as_r_is_alias(pn, i) || b->start > t || b->end <= t)
			continue;
		v[n].size = b->size;
		v[n++].idx = i;
		sum += b->size;
	}
	qsort(v, n, sizeof(*v), cmp_by_size_desc);
	uint32_t *idx = (uint32_t *)(void *)v; /* compact in place */
	for (uint64_t k = 0; k < n; k++)
		idx[k] = v[k].idx;
	*out = idx;
	*n_out = n;
	if (bytes)
		*bytes = sum;
	return AS_OK;
}

static int prepare_panel(struct panel *pn, const struct as_order *ord,
			 const struct panel *same, bool compress)
{
	const struct as_trace *t = pn->t;
	const struct as_plan *p = pn->p;
	uint32_t nb = t->nbuffers < p->nbuffers ? t->nbuffers : p->nbuffers;
	uint32_t nplaced = 0, nfailed = 0;
	for (uint32_t i = 0; i < nb; i++) {
		if (!as_r_buf_drawable(&t->buffers[i]) ||
		    as_plan_space_of(p, t, i) != pn->space)
			continue;
		if (p->offset[i] == AS_NO_OFFSET) {
			if (as_plan_alias_of(p, t, i) == AS_NONE)
				nfailed++;
		} else {
			nplaced++;
		}
	}
	pn->bufs = malloc(sizeof(uint32_t) * ((size_t)nplaced + nfailed + 1));
	if (!pn->bufs)
		return AS_ENOMEM;
	uint32_t a = 0, f = nplaced;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < nb; i++) {
			if (!as_r_buf_drawable(&t->buffers[i]) ||
			    as_plan_space_of(p, t, i) != pn->space)
				continue;
			bool alias = as_plan_alias_of(p, t, i) != AS_NONE;
			if (p->offset[i] != AS_NO_OFFSET) {
				if (alias == (pass == 1))
					pn->bufs[a++] = i;
			} else if (!alias && pass == 0) {
				pn->bufs[f++] = i;
			}
		}
		if (pass == 0)
			pn->nplain = a;
	}
	pn->nplaced = nplaced;
	pn->nbufs = nplaced + nfailed;
	pn->colors_for = -1;
	pn->failed = nfailed;
	pn->peak = as_plan_peak(p, t, pn->space);
	/* The trace's bound of a space holds when the plan keeps every
	 * buffer in its own space; a plan that moves buffers between spaces
	 * (levels, cores) has no per-space bound from the trace. */
	bool own_spaces = true;
	for (uint32_t i = 0; p->space && i < nb && own_spaces; i++)
		own_spaces = p->space[i] == t->buffers[i].space;
	pn->lb = own_spaces && pn->space < t->nspaces
			 ? as_trace_lower_bound_space(t, pn->space)
			 : 0;

	/* The peak moment: the most bytes live while the plan is at its
	 * top (core/moments.c). */
	struct as_moment pm;
	struct as_order own = {0};
	int merr = ord->t == t ? AS_OK : as_order_build(t, &own);
	if (merr)
		return merr;
	if (ord->t != t)
		ord = &own;
	merr = as_order_peak_moment(ord, p, pn->space, &pm);
	if (merr < 0) {
		as_order_free(&own);
		return merr;
	}
	if (merr == AS_OK && pm.top_buffer != AS_NONE) {
		pn->has_peak = true;
		pn->peak_time = pm.time;
		pn->peak_buf = pm.top_buffer;
	}
	/* A moment of the bound, in the same space as pn->lb. */
	if (pn->lb && same) { /* the same trace and space: the same moment */
		pn->has_lb_time = same->has_lb_time;
		pn->lb_time = same->lb_time;
	} else if (pn->lb) {
		struct as_moment bm;
		merr = as_order_bound_moment(ord, pn->space, &bm);
		pn->has_lb_time = merr == AS_OK;
		pn->lb_time = bm.time;
	}
	as_order_free(&own);
	if (merr < 0)
		return merr;
	if (pn->has_peak) {
		uint32_t *v;
		uint64_t n;
		int err = as_r_collect_live(pn, pn->peak_time, &v, &n,
				       &pn->live_bytes);
		if (err)
			return err;
		pn->nlive = n < LIVE_MAX ? (uint32_t)n : LIVE_MAX;
		memcpy(pn->live, v, sizeof(uint32_t) * pn->nlive);
		pn->nlive_total = n;
		free(v);
	}

	/* Validity of this space: a violation listed here, or unknown. */
	pn->valid = true;
	if (pn->rep && !pn->rep->valid) {
		bool here = pn->rep->violations > pn->rep->nfirst;
		for (uint32_t k = 0; k < pn->rep->nfirst; k++) {
			uint32_t i = pn->rep->first[k].a;
			if (i < nb && as_plan_space_of(p, t, i) == pn->space) {
				here = true;
				pn->violations++;
			}
		}
		if (pn->rep->violations > pn->rep->nfirst || pn->npieces == 0)
			pn->violations = pn->rep->violations;
		pn->valid = !here;
	}
	return as_r_build_axis(pn, compress);
}

static uint16_t plan_nspaces(const struct as_plan *p, const struct as_trace *t)
{
	if (p->nspaces)
		return p->nspaces;
	return t->nspaces ? t->nspaces : 1;
}

static void free_panel(struct panel *pn)
{
	free(pn->bufs);
	free(pn->pieces);
	free(pn->ticks);
	free(pn->colors);
	free(pn->lod_cand);
	free(pn->lod_raster);
	free(pn->lod_over);
	free(pn->lod_thin);
	free(pn->lod_mark);
	free(pn->psegs);
	free(pn->geo);
	free(pn->blk_end);
	free(pn->blk_start);
	free(pn->hix.idx);
	free(pn->hix.off);
	as_curve_free(&pn->foot);
	free(pn->walk);
}

/* What orders a plan's spaces: the most bytes live at once there (the
 * bound), else the plan's peak when the plan has no bound per space. */
static uint64_t space_bytes(const struct panel *pn)
{
	return pn->lb ? pn->lb : pn->peak;
}

/* Largest first; equal ones in the order of their spaces. */
static int cmp_space_bytes(const void *a, const void *b)
{
	const struct panel *x = a, *y = b;
	uint64_t bx = space_bytes(x), by = space_bytes(y);
	if (bx != by)
		return bx > by ? -1 : 1;
	return (x->space > y->space) - (x->space < y->space);
}

/*
 * The spaces of one plan, panels [from, r->npanels): largest first
 * (equal ones by space), and those under 1% of the largest folded into one line of
 * text on the first panel rather than drawn full height.
 */
static void order_spaces(struct as_render *r, size_t from)
{
	struct panel *v = r->panels + from;
	size_t n = r->npanels - from;
	qsort(v, n, sizeof(*v), cmp_space_bytes);
	if (n < 2)
		return;
	uint64_t top = space_bytes(&v[0]);
	size_t keep = 1, nfold = 0;
	char *out = v[0].folded;
	size_t cap = sizeof(v[0].folded), len = 0;
	for (size_t i = 1; i < n; i++) {
		if (space_bytes(&v[i]) >= top / 100 + (top % 100 != 0)) {
			if (keep != i)
				v[keep] = v[i];
			keep++;
			continue;
		}
		char b[32];
		as_human_bytes(space_bytes(&v[i]), b, sizeof(b));
		int w = snprintf(out + len, cap - len, "%s%s %s",
				 nfold ? ", " : "not drawn (< 1%): ",
				 v[i].space_name, b);
		if (w > 0)
			len = (size_t)w < cap - len ? len + (size_t)w : cap - 1;
		nfold++;
		free_panel(&v[i]);
	}
	r->npanels = from + keep;
}

static void free_panels(struct as_render *r)
{
	for (size_t i = 0; i < r->npanels; i++)
		free_panel(&r->panels[i]);
	free(r->panels);
	r->panels = NULL;
	r->npanels = 0;
}

void as_render_destroy(struct as_render *r)
{
	if (!r)
		return;
	free_panels(r);
	as_order_free(&r->ord);
	as_curve_free(&r->live);
	as_curve_free(&r->reserved);
	as_r_bands_free(r);
	free(r->src);
	free(r->own);
	as_r_measurer_destroy(r->m);
	free(r->vd);
	free(r->hd);
	free(r->raster);
	free(r);
}

static int layout(struct as_render *r);

/* An earlier panel of the same trace and space, whose bound moment a new
 * panel shares; NULL if none. */
static const struct panel *same_lb(const struct as_render *r,
				   const struct panel *pn)
{
	for (const struct panel *q = r->panels; q < pn; q++)
		if (q->t == pn->t && q->space == pn->space && q->lb)
			return q;
	return NULL;
}

/*
 * The blocks of the online allocator a panel is titled with, just after
 * the events of its peak moment (as_strategy_blocks_at); nothing for
 * offline planners, unknown titles or a failed replay (the picture does
 * without). A canceled one stops the picture (AS_ECANCELED).
 */
static int walk_peak(struct panel *pn, atomic_bool *cancel)
{
	if (!pn->has_peak)
		return AS_OK;
	struct as_diag d;
	struct as_runner_options ro = {.cancel = cancel};
	int err = as_strategy_blocks_at(pn->title, pn->t, &ro, pn->peak_time,
					pn->space, &pn->walk, &pn->nwalk, &d);
	if (err == AS_ENOMEM || err == AS_ECANCELED)
		return err;
	return AS_OK;
}

/* The next panel: source s's plan (sp) on one of its spaces, prepared. */
static int add_panel(struct as_render *r, const struct as_render_panel *sp,
		     size_t s, uint16_t space, bool show_space)
{
	struct panel *pn = &r->panels[r->npanels++];
	memset(pn, 0, sizeof(*pn));
	pn->t = sp->trace;
	pn->p = sp->plan;
	pn->rep = sp->report ? sp->report : &r->own[s];
	pn->title = sp->title ? sp->title : "plan";
	pn->source = (uint32_t)s;
	pn->space = space;
	pn->show_space = show_space;
	as_r_render_clean_text(as_plan_space_name(sp->plan, sp->trace, space),
			       pn->space_name, sizeof(pn->space_name));
	return prepare_panel(pn, &r->ord, same_lb(r, pn), r->o.compress);
}

int as_render_create(const struct as_render_panel *panels, size_t n,
		     const struct as_render_opts *o, struct as_render **out,
		     struct as_diag *diag)
{
	struct as_render *r = calloc(1, sizeof(*r));
	int err = AS_ENOMEM;
	if (!r)
		return AS_ENOMEM;
	if (o)
		r->o = *o;
	else
		as_render_opts_init(&r->o);
	if (n == 0 || !panels) {
		err = as_diag_set(diag, 0, AS_EINVAL, "nothing to draw");
		goto fail;
	}
	r->src = calloc(n, sizeof(*r->src));
	r->own = calloc(n, sizeof(*r->own));
	r->m = as_r_measurer_create();
	if (!r->src || !r->own || !r->m)
		goto fail;
	memcpy(r->src, panels, n * sizeof(*panels));
	r->nsrc = n;

	size_t total = 0;
	for (size_t s = 0; s < n; s++) {
		const struct as_render_panel *sp = &panels[s];
		if (!sp->trace || !sp->plan || !sp->plan->offset) {
			err = as_diag_set(diag, 0, AS_EINVAL,
					  "panel %zu has no trace or plan", s);
			goto fail;
		}
		uint16_t ns = plan_nspaces(sp->plan, sp->trace);
		if (sp->space >= (int)ns) {
			err = as_diag_set(diag, 0, AS_EINVAL,
					  "panel %zu: no space %d (the plan "
					  "has %u)",
					  s, sp->space, (unsigned)ns);
			goto fail;
		}
		total += sp->space == AS_RENDER_ALL_SPACES ? ns : 1;
		if (!sp->report) {
			err = as_validate(sp->trace, sp->plan, &r->own[s]);
			if (err)
				goto fail;
		}
	}
	r->panels = calloc(total, sizeof(*r->panels));
	if (!r->panels)
		goto fail;
	/* One sort of the first trace's times serves every sweep. */
	err = as_order_build(panels[0].trace, &r->ord);
	if (err)
		goto fail;
	err = AS_ENOMEM;

	/* Expand spaces; a multi-space plan keeps only the spaces it uses. */
	for (size_t s = 0; s < n; s++) {
		const struct as_render_panel *sp = &panels[s];
		const struct as_trace *t = sp->trace;
		uint16_t ns = plan_nspaces(sp->plan, t);
		int first = sp->space == AS_RENDER_ALL_SPACES ? 0 : sp->space;
		int last = sp->space == AS_RENDER_ALL_SPACES ? ns - 1 : sp->space;
		size_t before = r->npanels;
		for (int sidx = first; sidx <= last; sidx++) {
			err = add_panel(r, sp, s, (uint16_t)sidx, ns > 1);
			if (err)
				goto fail;
			struct panel *pn = &r->panels[r->npanels - 1];
			if (sp->space == AS_RENDER_ALL_SPACES && ns > 1 &&
			    pn->nbufs == 0) {
				free(pn->bufs);
				free(pn->pieces);
				r->npanels--;
			}
		}
		if (r->npanels == before) { /* nothing anywhere: keep space 0 */
			err = add_panel(r, sp, s, 0, false);
			if (err)
				goto fail;
		}
		if (sp->space == AS_RENDER_ALL_SPACES)
			order_spaces(r, before);
	}

	/* Time axis and colour ranges over every trace. */
	uint64_t tbase = UINT64_MAX, tend = 0;
	r->size_lo = r->life_lo = INFINITY;
	r->size_hi = r->life_hi = -INFINITY;
	for (size_t s = 0; s < n; s++) {
		const struct as_trace *t = panels[s].trace;
		if (s > 0 && panels[s - 1].trace == t)
			continue;
		if (t->end_time > tend)
			tend = t->end_time;
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			const struct as_buffer *b = &t->buffers[i];
			if (!as_r_buf_drawable(b))
				continue;
			double ls = as_r_log2_u64(b->size);
			double ll = as_r_log2_u64(b->end - b->start);
			r->size_lo = ls < r->size_lo ? ls : r->size_lo;
			r->size_hi = ls > r->size_hi ? ls : r->size_hi;
			r->life_lo = ll < r->life_lo ? ll : r->life_lo;
			r->life_hi = ll > r->life_hi ? ll : r->life_hi;
			if (b->end > tend)
				tend = b->end;
			if (b->start < tbase)
				tbase = b->start;
		}
	}
	r->tbase = tbase <= tend ? tbase : 0;
	r->tmax = (double)(tend - r->tbase);
	if (r->tmax <= 0)
		r->tmax = 1;
	/* Labels count from 0 unless the trace starts far from it. */
	r->rel_labels = (double)r->tbase > 10 * r->tmax;
	r->trace_lb = as_trace_lower_bound(panels[0].trace);
	uint64_t ops = 0;
	for (uint32_t e = 0; e < panels[0].trace->nevents; e++)
		ops += panels[0].trace->events[e].kind == AS_EV_ALLOC ||
		       panels[0].trace->events[e].kind == AS_EV_FREE;
	r->time_is_index = ops == panels[0].trace->end_time &&
			   !(panels[0].trace->format &&
			     strcmp(panels[0].trace->format, "csv") == 0);
	for (size_t i = 0; i < r->npanels; i++) {
		err = as_r_index_panel(r, &r->panels[i]);
		if (!err)
			err = as_r_plan_segments(&r->panels[i]);
		if (err)
			goto fail;
		r->panels[i].keeps_recorded = as_r_keeps_recorded(&r->panels[i]);
	}
	for (size_t i = 0; r->o.walk_at_peak && i < r->npanels; i++) {
		err = walk_peak(&r->panels[i], r->o.cancel);
		if (err)
			goto fail;
	}
	err = layout(r);
	if (err)
		goto fail;
	*out = r;
	return AS_OK;
fail:
	if (err == AS_ENOMEM)
		as_diag_set(diag, 0, err, "out of memory while drawing");
	else if (err == AS_ECANCELED)
		as_diag_set(diag, 0, err, "drawing canceled");
	as_render_destroy(r);
	return err;
}

static int layout(struct as_render *r)
{
	struct as_render_opts *o = &r->o;
	if (o->width <= 0 || o->height <= 0) {
		o->width = 1280;
		o->height = 800;
	}
	if (!(o->scale > 0))
		o->scale = 1;
	int W = o->width, H = o->height;
	r->header_h = o->header ? 28 : 8;
	r->sidebar_w = 0;
	if (o->sidebar && W >= 700) {
		r->sidebar_w = W / 5;
		if (r->sidebar_w < 180)
			r->sidebar_w = 180;
		if (r->sidebar_w > 280)
			r->sidebar_w = 280;
	}
	if (o->view.t1 > o->view.t0) {
		r->t0 = o->view.t0 - (double)r->tbase;
		r->t1 = o->view.t1 - (double)r->tbase;
	} else {
		r->t0 = 0;
		r->t1 = r->tmax;
	}

	r->mem_h = o->memory && H >= 400 ? MEM_H : 0;
	r->stage_h = as_r_stages_height(r);
	int chrome = r->header_h + BOTTOM_H + (r->mem_h ? MEM_GAP + MEM_H : 0) +
		     (r->stage_h ? r->stage_h + 4 : 0);
	for (size_t i = 0; i < r->npanels; i++)
		chrome += TITLE_H + (r->panels[i].failed ? STRIP_H : 0) +
			  (i + 1 < r->npanels ? PANEL_GAP : 0);
	int ph = (H - chrome) / (int)r->npanels;
	if (o->min_plot_height > 0 && ph < o->min_plot_height &&
	    o->min_plot_height <= 4096) {
		/* Taller rather than cramped: the picture grows. */
		ph = o->min_plot_height;
		long grown = (long)chrome + (long)ph * (long)r->npanels;
		o->height = grown > 32767 ? 32767 : (int)grown;
		H = o->height;
	}
	if (ph < 40)
		ph = 40;

	/* Vertical placement and address ticks (they need only heights). */
	double y = r->header_h;
	for (size_t i = 0; i < r->npanels; i++) {
		struct panel *pn = &r->panels[i];
		pn->top = y;
		y += TITLE_H;
		pn->strip_h = pn->failed ? STRIP_H : 0;
		pn->strip_y = y;
		y += pn->strip_h;
		pn->py = (int)y;
		pn->ph = ph;
		y += ph + PANEL_GAP;
		if (o->view.y1 > o->view.y0) {
			pn->v0 = o->view.y0;
			pn->v1 = o->view.y1;
		} else {
			double pad = ph / 5.0 < TOP_PAD_PX ? ph / 5.0 : TOP_PAD_PX;
			pn->v0 = 0;
			pn->v1 = (double)ph / (ph - pad);
		}
		int err = as_r_build_ticks(r, pn);
		if (err)
			return err;
	}

	r->stage_y = (int)(y - PANEL_GAP) + 4;
	if (r->stage_h)
		y += r->stage_h + 4;
	r->mem_y = (int)(y - PANEL_GAP) + MEM_GAP;

	/* The left margin fits the widest tick label of every panel. */
	double widest = 0;
	for (size_t i = 0; i < r->npanels; i++) {
		struct panel *pn = &r->panels[i];
		for (uint32_t k = 0; k < pn->nticks; k++) {
			double w = as_r_measure_text(r->m, pn->ticks[k].label, FS_TICK,
						pn->ticks[k].major);
			if (w > widest)
				widest = w;
		}
	}
	r->left = (int)ceil(widest) + 16;
	if (r->left < 56)
		r->left = 56;
	int pw = W - r->left - r->sidebar_w - 14;
	if (pw < 50)
		pw = 50;
	for (size_t i = 0; i < r->npanels; i++) {
		r->panels[i].px = r->left;
		r->panels[i].pw = pw;
	}
	return AS_OK;
}

int as_render_set_opts(struct as_render *r, const struct as_render_opts *o)
{
	if (!r || !o)
		return AS_EINVAL;
	bool rebuild = o->compress != r->o.compress;
	r->o = *o;
	if (rebuild) {
		for (size_t i = 0; i < r->npanels; i++) {
			struct panel *pn = &r->panels[i];
			free(pn->pieces);
			pn->pieces = NULL;
			pn->lod_valid = false;
			int err = as_r_build_axis(pn, o->compress);
			if (!err)
				err = as_r_index_panel(r, pn);
			if (err)
				return err;
		}
	}
	return layout(r);
}

const struct as_render_opts *as_render_get_opts(const struct as_render *r)
{
	return &r->o;
}

size_t as_render_panel_count(const struct as_render *r)
{
	return r ? r->npanels : 0;
}

int as_render_panel_info(const struct as_render *r, size_t i,
			 struct as_render_panel_info *out)
{
	if (!r || i >= r->npanels || !out)
		return AS_EINVAL;
	const struct panel *pn = &r->panels[i];
	out->title = pn->title;
	out->source = pn->source;
	out->space = pn->space;
	out->space_name = pn->space_name;
	out->x = pn->px;
	out->y = pn->py;
	out->w = pn->pw;
	out->h = pn->ph;
	out->peak = pn->peak;
	out->lower_bound = pn->lb;
	out->peak_time = pn->peak_time;
	out->lower_bound_time = pn->lb_time;
	out->buffers = pn->nbufs;
	out->failed = pn->failed;
	out->valid = pn->valid;
	out->violations = pn->violations;
	out->frames_moved = pn->lod_moved;
	out->frames_redrawn = pn->lod_redone;
	return AS_OK;
}
