/*
 * Memory over time: a strip under the plans on the shared time axis with
 * the bytes live (the lower-bound curve, grey), each plan's footprint (the
 * top address in use, a line per panel) and the memory the recording
 * allocator reserved (dashed) where the trace says; the gap between the
 * grey area and a line is that plan's fragmentation at that time. OOM and
 * failed allocations are red ticks on its time axis.
 *
 * Each curve is a step function prepared once (O(n log n)); a frame takes
 * per pixel column the highest value in the column's time range, through
 * block maxima, so that no peak falls between two columns.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

struct cedge {
	uint64_t t;
	uint64_t v;   /* size (live) or top address (footprint) */
	uint32_t i;
	bool start;
};

static int cmp_cedge(const void *a, const void *b)
{
	const struct cedge *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Bytes live after an interval of v bytes starts or ends, held within
 * [0, 2^64 - 1]. */
static uint64_t live_step(uint64_t live, uint64_t v, bool start)
{
	if (start)
		return v > UINT64_MAX - live ? UINT64_MAX : live + v;
	return live - (v < live ? v : live);
}

/* A sum over intervals [start, end) of weights: e[] holds 2 per item. */
static int curve_sum(struct cedge *e, size_t m, struct as_curve *c)
{
	qsort(e, m, sizeof(*e), cmp_cedge);
	int err = as_curve_alloc(c, m);
	if (err)
		return err;
	uint64_t live = 0;
	for (size_t k = 0; k < m;) {
		uint64_t now = e[k].t;
		for (; k < m && e[k].t == now; k++)
			live = live_step(live, e[k].v, e[k].start);
		as_curve_put(c, now, live);
	}
	return as_curve_finish(c);
}

/* The starts and ends of the buffers keep[] marks in o's time order
 * (as_order_edges) into *e (the caller frees it), *m of them, and c sized
 * for as many points. */
static int kept_edges(const struct as_order *o, const uint8_t *keep,
		      struct as_edge **e, size_t *m, struct as_curve *c)
{
	*e = malloc(sizeof(**e) * 2 * ((size_t)o->n + 1));
	if (!*e)
		return AS_ENOMEM;
	*m = as_order_edges(o, keep, *e);
	return as_curve_alloc(c, *m);
}

int as_r_curve_live(const struct as_order *o, struct as_curve *c)
{
	const struct as_trace *t = o->t;
	uint8_t *keep = calloc((size_t)t->nbuffers + 1, 1);
	struct as_edge *e = NULL;
	size_t m;
	int err = AS_ENOMEM;
	if (!keep)
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		keep[i] = t->buffers[i].alias_of == AS_NONE;
	err = kept_edges(o, keep, &e, &m, c);
	if (err)
		goto out;
	uint64_t live = 0;
	for (size_t k = 0; k < m;) {
		uint64_t now = e[k].t;
		for (; k < m && e[k].t == now; k++)
			live = live_step(live, t->buffers[e[k].i].size,
					 e[k].start);
		as_curve_put(c, now, live);
	}
	err = as_curve_finish(c);
out:
	free(keep);
	free(e);
	return err;
}

int as_r_curve_reserved(const struct as_trace *t, struct as_curve *c)
{
	memset(c, 0, sizeof(*c));
	if (!t->nsegments)
		return AS_OK;
	struct cedge *e = malloc(sizeof(*e) * 2 * (size_t)t->nsegments);
	if (!e)
		return AS_ENOMEM;
	size_t m = 0;
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *s = &t->segments[i];
		if (s->end <= s->start)
			continue;
		e[m++] = (struct cedge){s->start, s->size, i, true};
		e[m++] = (struct cedge){s->end, s->size, i, false};
	}
	int err = curve_sum(e, m, c);
	free(e);
	return err;
}

/* A max-heap of (top, position) for the footprint sweep. */
struct hent {
	uint64_t top;
	uint32_t k;
};

static void heap_push(struct hent *h, uint32_t *n, struct hent x)
{
	uint32_t i = (*n)++;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (h[p].top >= x.top)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void heap_pop(struct hent *h, uint32_t *n)
{
	struct hent x = h[--(*n)];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t mt = x.top;
		if (l < *n && h[l].top > mt)
			m = l, mt = h[l].top;
		if (r < *n && h[r].top > mt)
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = x;
}

int as_r_curve_top(const struct as_order *o, const struct panel *pn,
	      struct as_curve *c)
{
	const uint32_t nb = pn->t->nbuffers;
	struct as_edge *e = NULL;
	struct hent *h = malloc(sizeof(*h) * ((size_t)pn->nplain + 1));
	uint8_t *keep = calloc((size_t)nb + 1, 2);
	size_t m;
	int err = AS_ENOMEM;
	if (!h || !keep)
		goto out;
	uint8_t *dead = keep + nb + 1;
	for (uint32_t k = 0; k < pn->nplain; k++)
		keep[pn->bufs[k]] = 1;
	err = kept_edges(o, keep, &e, &m, c);
	if (err)
		goto out;
	uint32_t nh = 0;
	for (size_t k = 0; k < m;) {
		uint64_t now = e[k].t;
		for (; k < m && e[k].t == now; k++) {
			uint32_t i = e[k].i;
			if (e[k].start)
				heap_push(h, &nh,
					  (struct hent){as_r_end_addr(pn, i), i});
			else
				dead[i] = 1;
		}
		while (nh && dead[h[0].k])
			heap_pop(h, &nh);
		as_curve_put(c, now, nh ? h[0].top : 0);
	}
	err = as_curve_finish(c);
out:
	free(e);
	free(h);
	free(keep);
	return err;
}

/* The highest value over times [ta, tb) (absolute, as doubles). */
static uint64_t curve_max(const struct as_curve *c, double ta, double tb)
{
	if (!c->n)
		return 0;
	/* The last point at or before ta gives the value at ta. */
	uint32_t lo = 0, hi = c->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((double)c->t[mid] <= ta)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t m = lo > 0 ? c->v[lo - 1] : 0;
	uint32_t k = lo;
	while (k < c->n && (double)c->t[k] < tb) {
		uint32_t b = k / AS_CURVE_BLOCK;
		uint32_t be = (b + 1) * AS_CURVE_BLOCK;
		if (k % AS_CURVE_BLOCK == 0 && be <= c->n &&
		    (double)c->t[be - 1] < tb) {
			m = c->bmax[b] > m ? c->bmax[b] : m;
			k = be;
		} else {
			m = c->v[k] > m ? c->v[k] : m;
			k++;
		}
	}
	return m;
}

int as_r_memory_prepare(struct as_render *r)
{
	int err = as_r_curve_live(&r->ord, &r->live);
	if (!err)
		err = as_r_curve_reserved(r->ord.t, &r->reserved);
	for (size_t i = 0; !err && i < r->npanels; i++) {
		struct panel *pn = &r->panels[i];
		if (pn->t == r->ord.t) {
			err = as_r_curve_top(&r->ord, pn, &pn->foot);
			continue;
		}
		struct as_order o;
		err = as_order_build(pn->t, &o);
		if (!err)
			err = as_r_curve_top(&o, pn, &pn->foot);
		as_order_free(&o);
	}
	return err;
}

static const uint32_t line_colors[] = {
	0xff000000u, 0xff4477aau, 0xffaa4499u, 0xff228833u,
	0xffccbb44u, 0xff66ccee, 0xffee6677u, 0xff999933u,
};

/*
 * A plan's top address is a footprint when its addresses start near 0
 * (planners, online allocators). Recorded addresses of a real process
 * (0x7f..., with compressed gaps) are not bytes of memory: their panel
 * gets no line; the reserved bytes say what the recording allocator held.
 */
static bool foot_drawn(const struct panel *pn)
{
	if (pn->npieces == 0)
		return true;
	for (uint32_t k = 0; k < pn->npieces; k++)
		if (pn->pieces[k].brk)
			return false;
	return pn->pieces[0].lo < ((uint64_t)1 << 32);
}

/* A line of the strip: a curve, its panel (-1: reserved), its look. */
struct mline {
	const struct as_curve *cv;
	int panel;
	uint32_t col;
	double dash;
};

/* The picture of a curve: per column, the highest value there. */
static void column_max(const struct as_render *r, const struct as_curve *cv,
		       double *ys, int pw, double y1, double k)
{
	double dt = (r->t1 - r->t0) / pw, tb = (double)r->tbase;
	for (int col = 0; col < pw; col++) {
		double ta = tb + r->t0 + col * dt;
		ys[col] = y1 - (double)curve_max(cv, ta, ta + dt) * k;
	}
}

/* The corners of a step line through column values ys, appended at n. */
static int steps(const double *ys, int pw, double x0, double *xy, int n)
{
	for (int col = 0; col < pw; col++) {
		if (col > 0 && ys[col] == ys[col - 1])
			continue;
		if (col > 0) {
			xy[2 * n] = x0 + col;
			xy[2 * n++ + 1] = ys[col - 1];
		}
		xy[2 * n] = x0 + col;
		xy[2 * n++ + 1] = ys[col];
	}
	xy[2 * n] = x0 + pw;
	xy[2 * n++ + 1] = pw > 0 ? ys[pw - 1] : 0;
	return n;
}

/* Band colours, by group index (categories in their order). */
static const uint32_t band_colors[] = {
	0xff4477aau, 0xffee8866u, 0xff44bb99u, 0xffaa4499u,
	0xffdddd77u, 0xff777777u, 0xff99ddffu, 0xff999933u,
};

void as_r_bands_free(struct as_render *r)
{
	for (uint32_t g = 0; g < r->nbands; g++)
		as_curve_free(&r->bands[g]);
	free(r->bands);
	r->bands = NULL;
	r->nbands = 0;
	r->bands_for = NULL;
	r->bands_used = 0;
}

/* The bands of the options' groups, made again when they change:
 * bands[g] sums the buffers of groups 0..g (stacked). */
static int bands_prepare(struct as_render *r)
{
	const struct as_render_opts *o = &r->o;
	uint32_t ng = o->buffer_group && o->ngroups <= 64 ? o->ngroups : 0;
	if (r->bands_for == o->buffer_group && r->nbands == ng)
		return AS_OK;
	as_r_bands_free(r);
	if (ng == 0)
		return AS_OK;
	const struct as_trace *t = r->ord.t;
	r->bands = calloc(ng, sizeof(*r->bands));
	struct cedge *e = malloc(sizeof(*e) * 2 * ((size_t)t->nbuffers + 1));
	int err = r->bands && e ? AS_OK : AS_ENOMEM;
	for (uint32_t g = 0; !err && g < ng; g++) {
		size_t m = 0;
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			const struct as_buffer *b = &t->buffers[i];
			uint8_t k = o->buffer_group[i];
			if (b->alias_of != AS_NONE || b->size == 0 ||
			    b->end <= b->start || k > g)
				continue;
			if (k == g)
				r->bands_used |= (uint64_t)1 << g;
			e[m++] = (struct cedge){b->start, b->size, i, true};
			e[m++] = (struct cedge){b->end, b->size, i, false};
		}
		err = curve_sum(e, m, &r->bands[g]);
		r->nbands = g + 1;
	}
	free(e);
	if (err) {
		as_r_bands_free(r);
		return err;
	}
	r->bands_for = o->buffer_group;
	return AS_OK;
}

/* The stacked bands, largest sum first so each group shows above the
 * ones before it. */
static void emit_bands(struct as_render *r, struct canvas *c, double *ys,
		       double *xy, int pw, double X0, double X1, double Y1,
		       double k)
{
	for (uint32_t g = r->nbands; g-- > 0;) {
		if (!(r->bands_used >> g & 1))
			continue;
		column_max(r, &r->bands[g], ys, pw, Y1, k);
		int n = 0;
		xy[2 * n] = X0;
		xy[2 * n++ + 1] = Y1;
		n = steps(ys, pw, X0, xy, n);
		xy[2 * n] = X1;
		xy[2 * n++ + 1] = Y1;
		c->impl->poly(c, xy, n, true, band_colors[g % 8], 0, 0);
	}
}

/* The bands' legend from lx on; returns where the next entry goes. */
static double band_legend(struct as_render *r, struct canvas *c, double lx,
			  double ly, double X1)
{
	for (uint32_t g = 0; g < r->nbands; g++) {
		if (!(r->bands_used >> g & 1))
			continue;
		const char *name = r->o.group_names && r->o.group_names[g]
					   ? r->o.group_names[g]
					   : "?";
		char fit[64];
		as_r_fit_text(r->m, name, FS_SMALL, false, 120, fit, sizeof(fit));
		double w = as_r_measure_text(r->m, fit, FS_SMALL, false);
		if (lx + 14 + w > X1 - 4)
			break;
		RECT(c, lx, ly - 8, 10, 8, band_colors[g % 8], 0, 0, NULL);
		TEXT(c, lx + 14, ly, fit, FS_SMALL, false, C_TEXT,
		     ANCHOR_START);
		lx += 14 + w + 12;
	}
	return lx;
}

/*
 * The summary beside memory over time: what the trace allocates (count,
 * bytes, temporaries: freed at the next step; never freed: live at the
 * end), a histogram of sizes (powers of 16) and per plan its peak, gap
 * to the bound and failures.
 */
static void emit_summary(struct as_render *r, struct canvas *c, double x,
			 double y, double w, double bottom)
{
	const struct as_trace *t = r->panels[0].t;
	uint64_t n = 0, bytes = 0, temp = 0, never = 0, hist[8] = {0};
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (b->alias_of != AS_NONE || b->size == 0)
			continue;
		n++;
		bytes = b->size > UINT64_MAX - bytes ? UINT64_MAX : bytes + b->size;
		temp += b->end == b->start + 1;
		never += b->end >= t->end_time;
		int k = 0;
		for (uint64_t s = b->size; s >= 64 && k < 7; s >>= 4)
			k++;
		hist[k]++;
	}
	char buf[200], a[32], fit[200], cnt[32];
	const double row = 13;
	TEXT(c, x, y, "summary", FS_SMALL, true, C_TEXT, ANCHOR_START);
	y += row;
	snprintf(buf, sizeof(buf), "%s allocations, %s",
		 as_r_fmt_count((double)n, cnt, sizeof(cnt)),
		 as_human_bytes(bytes, a, sizeof(a)));
	as_r_fit_text(r->m, buf, FS_SMALL, false, w, fit, sizeof(fit));
	TEXT(c, x, y, fit, FS_SMALL, false, C_TEXT2, ANCHOR_START);
	y += row;
	char c2[32];
	snprintf(buf, sizeof(buf), "%s temporary, %s never freed",
		 as_r_fmt_count((double)temp, cnt, sizeof(cnt)),
		 as_r_fmt_count((double)never, c2, sizeof(c2)));
	as_r_fit_text(r->m, buf, FS_SMALL, false, w, fit, sizeof(fit));
	TEXT(c, x, y, fit, FS_SMALL, false, C_TEXT2, ANCHOR_START);
	y += 6;
	/* Sizes: bars for < 64 B, < 1 KiB, < 16 KiB, ... >= 1 GiB. */
	static const char *const lab[8] = {"64", "1K", "16K", "256K",
					   "4M", "64M", "1G", ""};
	uint64_t hmax = 1;
	for (int k = 0; k < 8; k++)
		hmax = hist[k] > hmax ? hist[k] : hmax;
	double bw = w / 8, bh = 24;
	if (y + bh + 12 <= bottom) {
		for (int k = 0; k < 8; k++) {
			double h = hist[k] ? 1 + (bh - 1) * (double)hist[k] / hmax
					   : 0;
			if (h > 0)
				RECT(c, x + k * bw, y + bh - h, bw - 2, h,
				     0xff9e9e9eu, 0, 0, NULL);
			if (lab[k][0])
				TEXT(c, x + (k + 1) * bw - 1, y + bh + 9, lab[k],
				     8, false, C_TEXT2, ANCHOR_MIDDLE);
		}
		y += bh + 12;
	}
	/* Per plan: peak, gap, failures. */
	for (size_t i = 0; i < r->npanels && y + row <= bottom; i++) {
		const struct panel *pn = &r->panels[i];
		y += row;
		char g[32] = "";
		if (as_r_span_scattered(pn))
			snprintf(g, sizeof(g), "(span of scattered addresses)");
		else if (pn->lb)
			as_r_fmt_pct(((double)pn->peak - (double)pn->lb) / pn->lb * 100,
				g, sizeof(g));
		snprintf(buf, sizeof(buf), "%s %s %s%s%s", pn->title,
			 as_human_bytes(pn->peak, a, sizeof(a)), g,
			 pn->failed ? ", failed " : "",
			 pn->failed ? as_r_fmt_count(pn->failed, cnt, sizeof(cnt))
				    : "");
		as_r_fit_text(r->m, buf, FS_SMALL, false, w, fit, sizeof(fit));
		TEXT(c, x, y, fit, FS_SMALL, false,
		     pn->failed || !pn->valid ? C_RED : C_TEXT, ANCHOR_START);
	}
}

int as_render_range_summary(struct as_render *r, size_t i, double t0,
			    double t1, struct as_range_summary *out)
{
	if (!r || i >= r->npanels || !out || !(t1 > t0))
		return AS_EINVAL;
	if (!r->mem_ready) {
		int err = as_r_memory_prepare(r);
		if (err)
			return err;
		r->mem_ready = true;
	}
	const struct panel *pn = &r->panels[i];
	memset(out, 0, sizeof(*out));
	for (uint32_t k = 0; k < pn->nplain; k++) {
		const struct as_buffer *b = &pn->t->buffers[pn->bufs[k]];
		if ((double)b->start >= t0 && (double)b->start < t1) {
			out->allocs++;
			out->alloc_bytes += b->size;
		}
		if ((double)b->end >= t0 && (double)b->end < t1) {
			out->frees++;
			out->free_bytes += b->size;
		}
	}
	if (pn->t == r->ord.t)
		out->peak_live = curve_max(&r->live, t0, t1);
	out->peak_top = curve_max(&pn->foot, t0, t1);
	return AS_OK;
}

int as_r_emit_memory(struct as_render *r, struct canvas *c)
{
	if (!r->mem_h)
		return AS_OK;
	/* The curves, once, when first shown (a viewer may never). */
	if (!r->mem_ready) {
		int err = as_r_memory_prepare(r);
		if (err)
			return err;
		r->mem_ready = true;
	}
	const struct panel *p0 = &r->panels[0];
	const int pw = p0->pw;
	const double X0 = p0->px, X1 = p0->px + pw, Y0 = r->mem_y,
		     Y1 = r->mem_y + r->mem_h;
	char buf[200], a[32];
	c->impl->begin_group(c, "memory");
	TEXT(c, X0, Y0 - 6, "memory over time", FS_TITLE, true, C_TEXT,
	     ANCHOR_START);
	RECT(c, X0, Y0, pw, r->mem_h, 0xffffffffu, 0, 0, NULL);
	int berr = bands_prepare(r);
	if (berr) {
		c->impl->end_group(c);
		return berr;
	}
	uint64_t vmax = r->live.vmax > r->reserved.vmax ? r->live.vmax
							 : r->reserved.vmax;
	for (size_t i = 0; i < r->npanels; i++)
		if (foot_drawn(&r->panels[i]))
			vmax = r->panels[i].foot.vmax > vmax
				       ? r->panels[i].foot.vmax
				       : vmax;
	if (vmax == 0)
		vmax = 1;
	const double top_pad = 14;
	const double k = (r->mem_h - top_pad) / (double)vmax;
	/* Grid and axis: 0, half and the highest value. */
	for (int g = 0; g <= 2; g++) {
		uint64_t v = vmax / 2 * (uint64_t)g;
		if (g == 2)
			v = vmax;
		double y = floor(Y1 - (double)v * k) + 0.5;
		LINE(c, X0, y, X1, y, C_GRID, 1, 0);
		LINE(c, X0 - 4, y, X0, y, C_FRAME, 1, 0);
		TEXT(c, X0 - 7, y + 4, as_human_bytes(v, a, sizeof(a)), FS_TICK,
		     false, C_TEXT, ANCHOR_END);
	}
	double *ys = malloc(sizeof(double) * (size_t)(pw > 0 ? pw : 1));
	double *xy = malloc(sizeof(double) * 4 * ((size_t)pw + 2));
	if (!ys || !xy) {
		free(ys);
		free(xy);
		c->impl->end_group(c);
		return AS_ENOMEM;
	}
	/* Live bytes: a grey area. */
	column_max(r, &r->live, ys, pw, Y1, k);
	int n = 0;
	xy[2 * n] = X0;
	xy[2 * n++ + 1] = Y1;
	n = steps(ys, pw, X0, xy, n);
	xy[2 * n] = X1;
	xy[2 * n++ + 1] = Y1;
	c->impl->poly(c, xy, n, true, 0xffc8c8c8u, 0, 0);
	if (r->nbands)
		emit_bands(r, c, ys, xy, pw, X0, X1, Y1, k);
	/* Reserved bytes (dashed) and each plan's top address. */
	struct mline lines[9];
	int nl = 0;
	if (r->reserved.n)
		lines[nl++] = (struct mline){&r->reserved, -1, 0xff7f7f7fu, 4};
	for (size_t i = 0; i < r->npanels && nl < 9; i++)
		if (foot_drawn(&r->panels[i]))
			lines[nl++] = (struct mline){&r->panels[i].foot, (int)i,
						     line_colors[i % 8], 0};
	for (int l = 0; l < nl; l++) {
		column_max(r, lines[l].cv, ys, pw, Y1, k);
		n = steps(ys, pw, X0, xy, 0);
		if (lines[l].dash > 0) {
			for (int s = 0; s + 1 < n; s++)
				LINE(c, xy[2 * s], xy[2 * s + 1], xy[2 * s + 2],
				     xy[2 * s + 3], lines[l].col, 1.5,
				     lines[l].dash);
		} else {
			c->impl->poly(c, xy, n, false, 0, lines[l].col, 1.5);
		}
	}
	free(ys);
	free(xy);
	/* Marks of the input: OOM and failed allocations. */
	const struct as_trace *t = p0->t;
	for (uint32_t m = 0; m < t->nmarks; m++) {
		double x = as_r_x_of(r, p0, as_r_rel_t(r, t->marks[m].time));
		if (x < X0 || x > X1)
			continue;
		x = floor(x) + 0.5;
		LINE(c, x, Y0, x, Y1, t->marks[m].kind == AS_MARK_OOM
					      ? C_RED
					      : 0xffff7f00u,
		     1.5, 0);
	}
	/* Legend, top left. */
	double lx = X0 + 6, ly = Y0 + 11;
	RECT(c, lx, ly - 8, 10, 8, 0xffc8c8c8u, 0, 0, NULL);
	lx += 14;
	TEXT(c, lx, ly, "live bytes", FS_SMALL, false, C_TEXT, ANCHOR_START);
	lx += as_r_measure_text(r->m, "live bytes", FS_SMALL, false) + 12;
	if (r->nbands)
		lx = band_legend(r, c, lx, ly, X1);
	for (int l = 0; l < nl; l++) {
		const char *name;
		if (lines[l].panel < 0) {
			name = "reserved";
		} else {
			const struct panel *pn = &r->panels[lines[l].panel];
			if (pn->show_space)
				snprintf(buf, sizeof(buf), "%s top (%s)",
					 pn->title, pn->space_name);
			else
				snprintf(buf, sizeof(buf), "%s top", pn->title);
			name = buf;
		}
		char fit[120];
		as_r_fit_text(r->m, name, FS_SMALL, false, 200, fit, sizeof(fit));
		double w = as_r_measure_text(r->m, fit, FS_SMALL, false);
		if (lx + 18 + w > X1 - 4)
			break;
		LINE(c, lx, ly - 4, lx + 14, ly - 4, lines[l].col, 2,
		     lines[l].dash);
		TEXT(c, lx + 18, ly, fit, FS_SMALL, false, C_TEXT,
		     ANCHOR_START);
		lx += 18 + w + 12;
	}
	if (t->nmarks && lx + 120 < X1) {
		LINE(c, lx + 5, ly - 9, lx + 5, ly + 1, C_RED, 1.5, 0);
		TEXT(c, lx + 10, ly, "OOM / failed", FS_SMALL, false, C_TEXT,
		     ANCHOR_START);
	}
	RECT(c, X0 - 0.5, Y0 - 0.5, pw + 1, r->mem_h + 1, 0, C_FRAME, 1, NULL);
	struct tticks tt;
	as_r_time_ticks(r, p0, &tt);
	as_r_emit_time_axis(r, c, p0, &tt, Y1, true);
	if (r->sidebar_w)
		emit_summary(r, c, X1 + 14, Y0 - 8, r->sidebar_w - 8, Y1 + 30);
	c->impl->end_group(c);
	return AS_OK;
}
