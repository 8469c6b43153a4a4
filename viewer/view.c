/*
 * What the window shows (the plans in view, the view range, selection,
 * search, which lists are open) and how keys and the mouse change it.
 * frame.c turns it into pixels.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/explain.h"
#include "allocscope/io.h"
#include "viewer.h"

/* The time cursor's groupings (g), by enum as_group_by, in the order g
 * cycles through them: the first VIEW_GROUPS values. */
const char *const view_group_names[VIEW_GROUPS] = {
	"buffer", "name prefix", "stack frame", "size class",
	"annotation stage"};

void view_message(struct viewer *v, uint32_t color, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
	v->msg_color = color;
	v->dirty = true;
}

int view_pic_h(const struct viewer *v)
{
	int h = v->win_h - STATUS_H;
	return h < 100 ? 100 : h;
}

/* Whether slot s is handed over with a plan (so it can be drawn). */
bool view_shown(const struct strat *s)
{
	return s->ready && s->plan;
}

/* The slot drawn in panel `panel`; without one, the slot in view (which
 * may still be planning: check `ready` before reading more than spec). */
const struct strat *view_strat_of_panel(const struct viewer *v, int panel)
{
	struct as_render_panel_info info;
	if (v->r && panel >= 0 &&
	    as_render_panel_info(v->r, (size_t)panel, &info) == AS_OK) {
		if (!v->compare)
			return &v->doc.s[v->cur];
		if (info.source < v->npanel_slot)
			return &v->doc.s[v->panel_slot[info.source]];
	}
	if (v->compare && v->npanel_slot)
		return &v->doc.s[v->panel_slot[0]];
	return &v->doc.s[v->cur];
}

int view_rebuild(struct viewer *v)
{
	as_render_destroy(v->r);
	v->r = NULL;
	v->show_peak = false;
	v->hover.panel = -1;
	v->hover.buffer = AS_NONE;
	if (v->cur >= v->doc.ns)
		v->cur = 0;
	/* Only plans handed over are drawn: in compare mode the others are
	 * absent until they arrive, alone the window says "planning". */
	size_t n = 0;
	v->npanel_slot = 0;
	if (v->compare) {
		for (size_t i = 0; i < v->doc.ns && i < MAX_SPECS; i++)
			if (view_shown(&v->doc.s[i]))
				v->panel_slot[n++] = i;
		v->npanel_slot = n;
	} else if (v->doc.ns && view_shown(&v->doc.s[v->cur])) {
		n = 1;
	}
	v->dirty = true;
	if (n == 0)
		return AS_OK;
	struct as_render_panel *pn = calloc(n, sizeof(*pn));
	if (!pn)
		return AS_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct strat *s =
			&v->doc.s[v->compare ? v->panel_slot[i] : v->cur];
		pn[i] = (struct as_render_panel){s->spec, v->doc.t, s->plan,
						 &s->report,
						 AS_RENDER_ALL_SPACES};
	}
	v->o.width = v->win_w;
	v->o.height = view_pic_h(v);
	v->o.view = v->view;
	v->o.highlight = v->selected;
	struct as_diag d = {0};
	int err = as_render_create(pn, n, &v->o, &v->r, &d);
	free(pn);
	v->dirty = true;
	return err;
}

int view_init(struct viewer *v, int w, int h)
{
	as_render_opts_init(&v->o);
	v->o.min_plot_height = 0;
	v->o.memory = false; /* m shows memory over time */
	v->o.walk_at_peak = false; /* a walks where the mouse points */
	v->range_a = v->range_b = NAN;
	v->cursor_panel = -1;
	v->selected = AS_NONE;
	v->match = AS_NONE;
	v->hover.panel = -1;
	v->hover.buffer = AS_NONE;
	v->win_w = w;
	v->win_h = h;
	v->scale = 1;
	if (!v->save_dir[0])
		snprintf(v->save_dir, sizeof(v->save_dir), ".");
	return AS_OK;
}

/* The bands' categories go with their trace (the render must not keep
 * them: drop it first). */
static void drop_bands(struct viewer *v)
{
	free(v->bands);
	v->bands = NULL;
	v->nbands = 0;
	v->o.buffer_group = NULL;
	v->o.group_names = NULL;
	v->o.ngroups = 0;
}

void view_finish(struct viewer *v)
{
	as_render_destroy(v->r);
	v->r = NULL;
	drop_bands(v);
	free(v->px);
	v->px = NULL;
	free(v->live);
	v->live = NULL;
	free(v->blocks);
	v->blocks = NULL;
	v->nblocks = v->cap_blocks = 0;
	v->o.state = NULL;
	doc_finish(&v->doc);
}

int view_resize(struct viewer *v, int win_w, int win_h, int px_w, int px_h)
{
	if (win_w < 1 || win_h < 1 || px_w < 1 || px_h < 1)
		return AS_EINVAL;
	if (px_w != v->px_w || px_h != v->px_h || !v->px) {
		uint32_t *p = calloc((size_t)px_w * (size_t)px_h, 4);
		if (!p)
			return AS_ENOMEM;
		free(v->px);
		v->px = p;
	}
	v->win_w = win_w;
	v->win_h = win_h;
	v->px_w = px_w;
	v->px_h = px_h;
	v->scale = (double)px_w / win_w;
	v->o.width = win_w;
	v->o.height = view_pic_h(v);
	v->dirty = true;
	return v->r ? as_render_set_opts(v->r, &v->o) : AS_OK;
}

static void apply_view(struct viewer *v)
{
	v->o.view = v->view;
	v->o.highlight = v->selected;
	if (v->r)
		as_render_set_opts(v->r, &v->o);
	v->dirty = true;
	/* What lies under the mouse changed with the view (keyboard zoom
	 * and pan too): tooltip and status follow at the next paint. */
	v->hover_stale = true;
}

/*
 * The range shown now, read back from the renderer (also when fitted).
 * The points lie left of the plot, where a hit test does no buffer search.
 */
static void current_view(const struct viewer *v, struct as_render_view *out)
{
	struct as_render_panel_info info;
	*out = v->view;
	if (!v->r || as_render_panel_info(v->r, 0, &info) != AS_OK)
		return;
	struct as_render_hit a, b;
	double x = info.x - 1, ya = info.y + info.h * 0.25,
	       yb = info.y + info.h * 0.75;
	as_render_hit_test(v->r, x - 1, ya, 0, &a);
	as_render_hit_test(v->r, x, yb, 0, &b);
	double dt = (b.time - a.time) * info.w; /* per pixel, times width */
	double da = (a.axis - b.axis) * 2;
	out->t0 = b.time + (b.time - a.time) * (info.x - x);
	out->t1 = out->t0 + dt;
	out->y0 = b.axis - da / 4;
	out->y1 = out->y0 + da;
}

/* The drawn panel whose rows hold y (no buffer search), or 0. */
static int panel_at(const struct viewer *v, double y)
{
	struct as_render_panel_info info;
	size_t n = v->r ? as_render_panel_count(v->r) : 0;
	for (size_t i = 0; i < n; i++)
		if (as_render_panel_info(v->r, i, &info) == AS_OK &&
		    y < info.y + info.h + 8)
			return (int)i;
	return n ? (int)n - 1 : 0;
}

/* Plot of the panel under (x, y), or panel 0. */
static void plot_of(const struct viewer *v, int panel,
		    struct as_render_panel_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!v->r || as_render_panel_info(v->r, panel < 0 ? 0 : (size_t)panel,
					   info) != AS_OK)
		info->w = info->h = 1;
}

static void set_view(struct viewer *v, struct as_render_view nv)
{
	bool fit_t = nv.t0 == 0 && nv.t1 == 0, fit_y = nv.y0 == 0 && nv.y1 == 0;
	if (!fit_t && !(nv.t1 - nv.t0 >= 1e-3)) {
		double c = (nv.t0 + nv.t1) / 2;
		nv.t0 = c - 5e-4;
		nv.t1 = c + 5e-4;
	}
	if (!fit_y && !(nv.y1 - nv.y0 >= 1e-12)) {
		double c = (nv.y0 + nv.y1) / 2;
		nv.y0 = c - 5e-13;
		nv.y1 = c + 5e-13;
	}
	v->view = nv;
	apply_view(v);
}

void view_zoom_time(struct viewer *v, double factor, double at_x)
{
	struct as_render_view cv;
	current_view(v, &cv);
	struct as_render_panel_info info;
	plot_of(v, panel_at(v, v->my), &info);
	double f = (at_x - info.x) / info.w;
	if (f < 0 || f > 1)
		f = 0.5;
	double tm = cv.t0 + f * (cv.t1 - cv.t0);
	cv.t0 = tm - (tm - cv.t0) * factor;
	cv.t1 = tm + (cv.t1 - tm) * factor;
	set_view(v, cv);
}

static void zoom_axis(struct viewer *v, double factor, double at_y)
{
	struct as_render_view cv;
	current_view(v, &cv);
	struct as_render_panel_info info;
	plot_of(v, panel_at(v, at_y), &info);
	double f = (info.y + info.h - at_y) / info.h;
	if (f < 0 || f > 1)
		f = 0.5;
	double am = cv.y0 + f * (cv.y1 - cv.y0);
	cv.y0 = am - (am - cv.y0) * factor;
	cv.y1 = am + (cv.y1 - am) * factor;
	set_view(v, cv);
}

void view_pan(struct viewer *v, double ft, double fy)
{
	struct as_render_view cv;
	struct as_render_panel_info info;
	current_view(v, &cv);
	plot_of(v, 0, &info);
	/* The view moves by whole pixels: the renderer then moves the
	 * picture it has instead of drawing every buffer again. */
	double dt = (cv.t1 - cv.t0) * floor(ft * info.w + 0.5) / info.w;
	double dy = (cv.y1 - cv.y0) * floor(fy * info.h + 0.5) / info.h;
	cv.t0 += dt;
	cv.t1 += dt;
	cv.y0 += dy;
	cv.y1 += dy;
	set_view(v, cv);
}

static void fit(struct viewer *v)
{
	v->view = (struct as_render_view){0, 0, 0, 0};
	apply_view(v);
}

/* Zoom onto buffer b of drawn panel `panel` (time, and address if placed). */
/* The drawn panel of strategy panel `panel` that holds buffer b (its
 * address space), or `panel` itself. */
static int panel_of_buffer(const struct viewer *v, int panel, uint32_t b)
{
	struct as_render_panel_info want, info;
	if (panel < 0 || as_render_panel_info(v->r, (size_t)panel, &want))
		return panel;
	const struct strat *s = view_strat_of_panel(v, panel);
	if (!view_shown(s))
		return panel;
	uint16_t space = as_plan_space_of(s->plan, v->doc.t, b);
	for (size_t i = 0; i < as_render_panel_count(v->r); i++)
		if (as_render_panel_info(v->r, i, &info) == AS_OK &&
		    info.source == want.source && info.space == space)
			return (int)i;
	return panel;
}

static void zoom_to_buffer(struct viewer *v, int panel, uint32_t b)
{
	const struct as_trace *t = v->doc.t;
	if (b >= t->nbuffers)
		return;
	const struct as_buffer *x = &t->buffers[b];
	panel = panel_of_buffer(v, panel, b);
	const struct strat *s = view_strat_of_panel(v, panel);
	struct as_render_view cv;
	current_view(v, &cv);
	double len = (double)(x->end - x->start);
	if (len < 1)
		len = 1;
	cv.t0 = (double)x->start - len * 0.15;
	cv.t1 = (double)x->start + len * 1.15;
	uint64_t off = view_shown(s) ? s->plan->offset[b] : AS_NO_OFFSET;
	if (v->compare) {
		/* Panels have addresses of their own: zoom time only. */
		cv.y0 = cv.y1 = 0;
	} else if (off != AS_NO_OFFSET && panel >= 0) {
		double a0 = as_render_axis_at(v->r, (size_t)panel, off);
		double a1 = as_render_axis_at(v->r, (size_t)panel,
					      off + (x->size ? x->size : 1));
		if (a0 >= 0 && a1 > a0) {
			double h = a1 - a0;
			cv.y0 = a0 - h * 0.3;
			cv.y1 = a1 + h * 0.3;
		}
	}
	set_view(v, cv);
}

static void select_buffer(struct viewer *v, uint32_t b)
{
	v->selected = b;
	apply_view(v);
}

void view_update_hover(struct viewer *v)
{
	if (!v->r)
		return;
	struct as_render_hit h;
	as_render_hit_test(v->r, v->mx, v->my, 3.0, &h);
	if (!v->mouse_in)
		h.panel = -1, h.buffer = AS_NONE;
	if (h.panel != v->hover.panel || h.buffer != v->hover.buffer ||
	    h.in_plot)
		v->dirty = true;
	v->hover = h;
}

/* ---- search ---- */

static uint32_t find_from(const struct viewer *v, uint32_t from)
{
	const struct as_trace *t = v->doc.t;
	if (!v->query[0] || !t->nbuffers)
		return AS_NONE;
	for (uint32_t k = 0; k < t->nbuffers; k++) {
		uint32_t i = (uint32_t)(((uint64_t)from + k) % t->nbuffers);
		const char *n = as_trace_buffer_name(t, i);
		if (n && strstr(n, v->query))
			return i;
	}
	return AS_NONE;
}

static void search(struct viewer *v, uint32_t from)
{
	uint32_t m = find_from(v, from);
	if (m == AS_NONE) {
		view_message(v, C_RED_LIGHT, "no buffer name contains \"%s\"",
			     v->query);
		return;
	}
	uint32_t count = 0, rank = 0;
	for (uint32_t i = 0; i < v->doc.t->nbuffers; i++) {
		const char *n = as_trace_buffer_name(v->doc.t, i);
		if (n && strstr(n, v->query)) {
			count++;
			if (i <= m)
				rank++;
		}
	}
	v->match = m;
	v->selected = m;
	zoom_to_buffer(v, 0, m);
	view_message(v, C_OK, "match %u of %u for \"%s\": %s (n: next)", rank,
		     count, v->query, as_trace_buffer_name(v->doc.t, m));
}

/* ---- allocator state ---- */

/*
 * The state panel's replay runs on the UI thread, so it is a run with a
 * cancel flag that a timer (SDL's timer thread) sets after STATE_MS: a
 * replay too long for a key press stops there with a message.
 */
#define STATE_MS 2000

static Uint32 stop_state(Uint32 interval, void *flag)
{
	(void)interval;
	atomic_store((atomic_bool *)flag, true);
	return 0; /* once */
}

/* a: the blocks of the strategy in view at the mouse's time (again: off). */
static void allocator_state(struct viewer *v)
{
	if (v->o.state) {
		v->o.state = NULL;
		apply_view(v);
		view_message(v, C_BAR_TEXT, "allocator state hidden");
		return;
	}
	if (v->hover.panel < 0 || !v->hover.in_plot || !(v->hover.time >= 0)) {
		view_message(v, C_RED_LIGHT, "a: point at a time in a plot");
		return;
	}
	const struct strat *s = view_strat_of_panel(v, v->hover.panel);
	uint64_t tm = (uint64_t)floor(v->hover.time);
	struct as_diag d;
	struct as_block *blocks;
	size_t n;
	/* The first panel's space: the common case. */
	atomic_store(&v->state_stop, false);
	struct as_runner_options ro = {.cancel = &v->state_stop};
	SDL_TimerID timer = SDL_AddTimer(STATE_MS, stop_state, &v->state_stop);
	int err = as_strategy_blocks_at(s->spec, v->doc.t, &ro, tm, 0, &blocks,
					&n, &d);
	if (timer)
		SDL_RemoveTimer(timer);
	if (err == AS_ECANCELED) {
		view_message(v, C_RED_LIGHT,
			     "a: the replay to t %llu took over %d s; "
			     "point earlier",
			     (unsigned long long)tm, STATE_MS / 1000);
		return;
	}
	if (err != AS_OK) {
		view_message(v, C_RED_LIGHT, "%s", d.msg);
		return;
	}
	free(v->blocks);
	v->blocks = blocks;
	v->nblocks = v->cap_blocks = n;
	size_t nfree = 0;
	for (size_t k = 0; k < v->nblocks; k++)
		nfree += !v->blocks[k].in_use;
	v->state = (struct as_render_state){v->hover.panel, tm, v->blocks,
					    v->nblocks};
	v->o.state = &v->state;
	apply_view(v);
	view_message(v, C_OK, "%s at t %llu: %zu blocks, %zu free (red)",
		     s->spec, (unsigned long long)tm, v->nblocks, nfree);
}

/* [ and ]: mark the start and end of a time range at the mouse; with both,
 * the status bar summarises it. */
static void range_mark(struct viewer *v, bool start)
{
	if (v->hover.panel < 0 || !v->hover.in_plot) {
		view_message(v, C_RED_LIGHT, "[ ]: point at a time in a plot");
		return;
	}
	if (start)
		v->range_a = v->hover.time;
	else
		v->range_b = v->hover.time;
	if (isnan(v->range_a) || isnan(v->range_b)) {
		view_message(v, C_BAR_TEXT, "range %s at t %.0f; %s marks the %s",
			     start ? "starts" : "ends", v->hover.time,
			     start ? "]" : "[", start ? "end" : "start");
		return;
	}
	double a = v->range_a < v->range_b ? v->range_a : v->range_b;
	double b = v->range_a < v->range_b ? v->range_b : v->range_a;
	struct as_range_summary rs;
	if (as_render_range_summary(v->r, (size_t)v->hover.panel, a, b + 1,
				    &rs) != AS_OK) {
		view_message(v, C_RED_LIGHT, "range: out of memory");
		return;
	}
	char x[32], y[32], z[32], w[32];
	view_message(v, C_OK,
		     "t [%.0f, %.0f]: %llu allocated (%s), %llu freed (%s), "
		     "most live %s, top %s",
		     a, b, (unsigned long long)rs.allocs,
		     as_human_bytes(rs.alloc_bytes, x, sizeof(x)),
		     (unsigned long long)rs.frees,
		     as_human_bytes(rs.free_bytes, y, sizeof(y)),
		     as_human_bytes(rs.peak_live, z, sizeof(z)),
		     as_human_bytes(rs.peak_top, w, sizeof(w)));
}

/* ---- keys ---- */

static void peak(struct viewer *v)
{
	int panel = v->hover.panel >= 0 ? v->hover.panel : 0;
	struct as_render_panel_info info;
	if (!v->r || as_render_panel_info(v->r, (size_t)panel, &info))
		return;
	v->npeak = as_render_live_at(v->r, (size_t)panel,
				     (double)info.peak_time, v->peak_bufs,
				     sizeof(v->peak_bufs) /
					     sizeof(v->peak_bufs[0]));
	/* Jump to the peak moment: a window around it, a fortieth of the
	 * trace wide (at least 20 units, never before the trace starts),
	 * addresses the whole panel, so the peak line shows. */
	if (v->npeak > 0) {
		double end = (double)v->doc.t->end_time;
		double half = end / 80 > 10 ? end / 80 : 10;
		double at = (double)info.peak_time;
		double lo = at - half < 0 ? 0 : at - half;
		set_view(v, (struct as_render_view){lo, lo + 2 * half, 0, 0});
	}
	v->peak_panel = (size_t)panel;
	v->show_peak = v->npeak >= 0;
	char hb[32];
	view_message(v, C_OK, "peak %s of %s at time %llu: %lld buffers live",
		     as_human_bytes(info.peak, hb, sizeof(hb)), info.title,
		     (unsigned long long)info.peak_time, (long long)v->npeak);
}

static void switch_to(struct viewer *v, size_t i, bool compare)
{
	if (i >= v->doc.ns)
		return;
	v->cur = i;
	v->compare = compare;
	if (view_rebuild(v))
		view_message(v, C_RED_LIGHT, "out of memory");
	else
		view_message(v, C_BAR_TEXT, "%s%s", compare ? "compare: " : "",
			     compare ? "every strategy, one time axis"
				     : v->doc.s[i].spec);
}

static void save(struct viewer *v)
{
	char png[1100], svg[1100];
	for (;;) {
		v->saves++;
		snprintf(png, sizeof(png), "%s/allocscope-view-%d.png",
			 v->save_dir, v->saves);
		snprintf(svg, sizeof(svg), "%s/allocscope-view-%d.svg",
			 v->save_dir, v->saves);
		FILE *f = fopen(png, "rb");
		if (!f)
			break;
		fclose(f);
	}
	struct as_diag d = {0};
	char buf[1024];
	const char *in = v->doc.path, *out[] = {png, svg};
	if (as_output_check(out, 2, &in, 1, NULL, &d) ||
	    as_render_write(v->r, png, AS_IMAGE_PNG, &d) ||
	    as_render_write(v->r, svg, AS_IMAGE_SVG, &d))
		view_message(v, C_RED_LIGHT, "%s",
			     as_diag_text(&d, buf, sizeof(buf)));
	else
		view_message(v, C_OK, "saved %s and %s", png, svg);
}

/* e: the bytes live per explain category stacked in memory over time
 * (shown with it), or hidden again. */
static void toggle_bands(struct viewer *v)
{
	if (v->o.buffer_group) {
		v->o.buffer_group = NULL;
		v->o.group_names = NULL;
		v->o.ngroups = 0;
		apply_view(v);
		view_message(v, C_BAR_TEXT, "category bands hidden");
		return;
	}
	if (!v->bands) {
		struct as_explain_options eo;
		as_explain_options_init(&eo);
		v->bands = malloc((size_t)v->doc.t->nbuffers + 1);
		if (!v->bands ||
		    as_explain_buffer_categories(v->doc.t, &eo, v->bands,
						 v->band_names, 64,
						 &v->nbands) != AS_OK) {
			free(v->bands);
			v->bands = NULL;
			view_message(v, C_RED_LIGHT,
				     "cannot tell the categories: out of memory");
			return;
		}
	}
	v->o.buffer_group = v->bands;
	v->o.group_names = v->band_names;
	v->o.ngroups = v->nbands;
	if (!v->o.memory) {
		v->o.memory = true;
		v->o.height = view_pic_h(v);
	}
	apply_view(v);
	view_message(v, C_BAR_TEXT, "category bands shown in memory over time");
}

static void open_trace(struct viewer *v, const char *path)
{
	struct doc n;
	struct as_diag d = {0};
	char buf[1024];
	struct doc_opts o = v->load;
	o.wake = v->wake;
	int err = doc_load(&n, path, v->specs, v->nspecs, &o, &d);
	if (!err && v->batch) {
		/* Batch runs stay deterministic: every plan, or the first
		 * failure, as a load that fails. */
		doc_wait(&n, SIZE_MAX);
		const struct strat *e = doc_first_error(&n);
		if (e) {
			d = e->diag;
			err = e->err;
			doc_finish(&n);
		}
	}
	if (err) {
		view_message(v, C_RED_LIGHT, "%s",
			     as_diag_text(&d, buf, sizeof(buf)));
		return;
	}
	as_render_destroy(v->r);
	v->r = NULL;
	bool same = strcmp(n.path, v->doc.path) == 0;
	doc_finish(&v->doc); /* its planning thread may still run: it
			      * frees the old trace itself */
	v->doc = n;
	v->o.state = NULL;
	drop_bands(v);
	v->planning_tick = -1;
	if (!same) {
		v->view = (struct as_render_view){0, 0, 0, 0};
		v->cur = 0;
	}
	if (v->selected != AS_NONE && v->selected >= v->doc.t->nbuffers)
		v->selected = AS_NONE;
	if (!same)
		v->selected = AS_NONE;
	v->match = AS_NONE;
	if (view_rebuild(v))
		view_message(v, C_RED_LIGHT, "out of memory");
	else
		view_message(v, C_OK, "%s %s: %u buffers, %zu strategies%s",
			     same ? "reloaded" : "opened", path,
			     v->doc.t->nbuffers, v->doc.ns,
			     v->doc.nready < v->doc.ns ? ", planning" : "");
}

void view_poll(struct viewer *v)
{
	bool was = v->doc.ns && v->doc.s[v->cur].ready;
	bool before[MAX_SPECS];
	for (size_t i = 0; i < v->doc.ns && i < MAX_SPECS; i++)
		before[i] = v->doc.s[i].ready;
	if (doc_poll(&v->doc)) {
		/* A strategy that failed (or was left out) says so once;
		 * the others stay. */
		for (size_t i = 0; i < v->doc.ns && i < MAX_SPECS; i++)
			if (!before[i] && v->doc.s[i].ready && v->doc.s[i].err) {
				bool out = doc_left_out(&v->doc.s[i]);
				char et[1024];
				view_message(v, out ? C_PROMPT : C_RED_LIGHT,
					     "%s %s: %s", v->doc.s[i].spec,
					     out ? "left out" : "failed",
					     as_diag_text(&v->doc.s[i].diag,
							  et, sizeof(et)));
			}
		bool now = v->doc.ns && v->doc.s[v->cur].ready;
		if (v->compare || now != was) {
			/* Panels are numbered anew: the allocator state's
			 * panel would be another's. */
			v->o.state = NULL;
			if (view_rebuild(v))
				view_message(v, C_RED_LIGHT, "out of memory");
		}
		v->dirty = true;
	}
	size_t slot;
	double ms;
	if (doc_planning(&v->doc, &slot, &ms) &&
	    (long)(ms / 1000) != v->planning_tick) {
		v->planning_tick = (long)(ms / 1000);
		v->dirty = true; /* the status line's seconds */
	}
}

static void key(struct viewer *v, SDL_Keycode k, Uint16 mod)
{
	if (v->typing) {
		if (k == SDLK_RETURN || k == SDLK_KP_ENTER) {
			v->typing = false;
			SDL_StopTextInput();
			search(v, 0);
		} else if (k == SDLK_ESCAPE) {
			v->typing = false;
			SDL_StopTextInput();
			view_message(v, C_BAR_TEXT, "search cancelled");
		} else if (k == SDLK_BACKSPACE) {
			size_t n = strlen(v->query);
			while (n > 0 && (v->query[n - 1] & 0xc0) == 0x80)
				n--; /* a whole UTF-8 character */
			if (n > 0)
				n--;
			v->query[n] = 0;
		}
		v->dirty = true;
		return;
	}
	bool shift = mod & KMOD_SHIFT;
	/* '?' arrives as Shift+/ on most layouts. */
	if (k == SDLK_QUESTION || (k == SDLK_SLASH && shift)) {
		v->help = !v->help;
		v->dirty = true;
		return;
	}
	switch (k) {
	case SDLK_q:
		v->quit = true;
		break;
	case SDLK_ESCAPE:
		if (v->help || v->show_peak || v->show_violations) {
			v->help = v->show_peak = v->show_violations = false;
			v->dirty = true;
		} else {
			select_buffer(v, AS_NONE);
		}
		break;
	case SDLK_f:
		fit(v);
		break;
	case SDLK_TAB:
		switch_to(v, (v->cur + (shift ? v->doc.ns - 1 : 1)) % v->doc.ns,
			  false);
		break;
	case SDLK_c:
		switch_to(v, v->cur, !v->compare);
		break;
	case SDLK_p:
		if (v->show_peak) {
			v->show_peak = false;
			v->dirty = true;
		} else {
			peak(v);
		}
		break;
	case SDLK_SLASH:
	case SDLK_KP_DIVIDE:
		v->typing = true;
		v->query[0] = 0;
		SDL_StartTextInput();
		v->dirty = true;
		break;
	case SDLK_n:
		if (v->query[0])
			search(v, v->match == AS_NONE ? 0 : v->match + 1);
		else
			view_message(v, C_BAR_TEXT, "/ to search first");
		break;
	case SDLK_v:
		v->show_violations = !v->show_violations;
		v->dirty = true;
		break;
	case SDLK_b:
		v->o.color_by = (enum as_color_by)((v->o.color_by + 1) % 6);
		apply_view(v);
		view_message(v, C_BAR_TEXT, "colour by %s",
			     as_color_by_name(v->o.color_by));
		break;
	case SDLK_s:
		save(v);
		break;
	case SDLK_a:
		allocator_state(v);
		break;
	case SDLK_LEFTBRACKET:
	case SDLK_RIGHTBRACKET:
		range_mark(v, k == SDLK_LEFTBRACKET);
		break;
	case SDLK_m:
		v->o.memory = !v->o.memory;
		v->o.height = view_pic_h(v);
		apply_view(v);
		view_message(v, C_BAR_TEXT, "memory over time %s",
			     v->o.memory ? "shown" : "hidden");
		break;
	case SDLK_e:
		toggle_bands(v);
		break;
	case SDLK_t:
		v->show_cursor = !v->show_cursor;
		v->cursor_panel = -1;
		v->dirty = true;
		break;
	case SDLK_g:
		v->group = (enum as_group_by)((v->group + 1) % VIEW_GROUPS);
		v->cursor_panel = -1;
		v->dirty = true;
		view_message(v, C_BAR_TEXT, "live list grouped by %s",
			     view_group_names[v->group]);
		break;
	case SDLK_r:
		open_trace(v, v->doc.path);
		break;
	case SDLK_PLUS:
	case SDLK_EQUALS:
	case SDLK_KP_PLUS:
		view_zoom_time(v, 0.5, -1);
		break;
	case SDLK_MINUS:
	case SDLK_KP_MINUS:
		view_zoom_time(v, 2.0, -1);
		break;
	case SDLK_LEFT:
		view_pan(v, -0.1, 0);
		break;
	case SDLK_RIGHT:
		view_pan(v, 0.1, 0);
		break;
	case SDLK_UP:
		view_pan(v, 0, 0.1);
		break;
	case SDLK_DOWN:
		view_pan(v, 0, -0.1);
		break;
	default:
		if (k >= SDLK_1 && k <= SDLK_9 && !shift) {
			if ((size_t)(k - SDLK_1) < v->doc.ns)
				switch_to(v, (size_t)(k - SDLK_1), false);
			else
				view_message(v, C_RED_LIGHT,
					     "there are %zu strategies",
					     v->doc.ns);
		}
		break;
	}
}

void view_event(struct viewer *v, const SDL_Event *e)
{
	switch (e->type) {
	case SDL_KEYDOWN:
		key(v, e->key.keysym.sym, e->key.keysym.mod);
		break;
	case SDL_TEXTINPUT:
		if (v->typing && !(v->query[0] == 0 &&
				   strcmp(e->text.text, "/") == 0)) {
			size_t n = strlen(v->query), l = strlen(e->text.text);
			if (n + l < sizeof(v->query)) {
				memcpy(v->query + n, e->text.text, l + 1);
				v->dirty = true;
			}
		}
		break;
	case SDL_MOUSEMOTION:
		v->mx = e->motion.x;
		v->my = e->motion.y;
		v->mouse_in = true;
		if (v->dragging) {
			int dx = v->mx - v->drag_x, dy = v->my - v->drag_y;
			if (abs(dx) + abs(dy) > 2)
				v->drag_moved = true;
			if (v->drag_moved) {
				struct as_render_panel_info info;
				plot_of(v, panel_at(v, v->drag_y), &info);
				struct as_render_view cv = v->drag_view;
				double st = (cv.t1 - cv.t0) * dx / info.w;
				double sy = (cv.y1 - cv.y0) * dy / info.h;
				cv.t0 -= st;
				cv.t1 -= st;
				cv.y0 += sy;
				cv.y1 += sy;
				set_view(v, cv);
			}
		}
		v->hover_stale = true; /* one hit test a frame, not an event */
		v->dirty = true;
		break;
	case SDL_MOUSEBUTTONDOWN:
		if (e->button.button != SDL_BUTTON_LEFT)
			break;
		v->mx = e->button.x;
		v->my = e->button.y;
		v->mouse_in = true;
		view_update_hover(v);
		if (e->button.clicks >= 2) {
			if (v->hover.buffer != AS_NONE)
				zoom_to_buffer(v, v->hover.panel,
					       v->hover.buffer);
			v->dragging = false;
			break;
		}
		v->dragging = true;
		v->drag_moved = false;
		v->drag_x = v->mx;
		v->drag_y = v->my;
		current_view(v, &v->drag_view);
		break;
	case SDL_MOUSEBUTTONUP:
		if (e->button.button != SDL_BUTTON_LEFT || !v->dragging)
			break;
		v->dragging = false;
		if (!v->drag_moved) {
			view_update_hover(v);
			select_buffer(v, v->hover.buffer);
			if (v->hover.buffer != AS_NONE)
				view_message(v, C_BAR_TEXT, "selected %s",
					     as_trace_buffer_name(
						     v->doc.t, v->hover.buffer));
		}
		break;
	case SDL_MOUSEWHEEL: {
		int y = e->wheel.y;
		if (e->wheel.direction == SDL_MOUSEWHEEL_FLIPPED)
			y = -y;
		if (y == 0)
			break;
		double f = pow(0.8, y);
		if (SDL_GetModState() & (KMOD_CTRL | KMOD_SHIFT))
			zoom_axis(v, f, v->my);
		else
			view_zoom_time(v, f, v->mx);
		v->hover_stale = true;
		break;
	}
	case SDL_DROPFILE:
		open_trace(v, e->drop.file);
		SDL_free(e->drop.file);
		break;
	case SDL_DROPTEXT:
		SDL_free(e->drop.file);
		break;
	case SDL_WINDOWEVENT:
		if (e->window.event == SDL_WINDOWEVENT_LEAVE) {
			v->mouse_in = false;
			v->hover.panel = -1;
			v->hover.buffer = AS_NONE;
		}
		v->dirty = true;
		break;
	default:
		break;
	}
}
