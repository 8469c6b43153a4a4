/*
 * Painting: the buffers of a panel (rectangles, density image, labels,
 * aliases), the grid, time axis, peak and bound lines, and the whole
 * picture emitted to a canvas.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

/*
 * Reserved memory, a pale band behind the buffers (reserved.c says which
 * panels show what): the recording allocator's segments on a panel of
 * the recorded offsets, or the segments the strategy reserved.
 */
static void emit_segments(struct as_render *r, struct canvas *c,
			  const struct panel *pn)
{
	const struct as_trace *t = pn->t;
	const struct as_segment *segs = pn->psegs;
	uint32_t n = pn->npsegs;
	if (pn->keeps_recorded && t->nsegments) {
		segs = t->segments;
		n = t->nsegments;
	}
	for (uint32_t k = 0; k < n; k++) {
		const struct as_segment *sg = &segs[k];
		if (sg->space != pn->space || sg->end <= sg->start)
			continue;
		double x0 = as_r_x_of(r, pn, as_r_rel_t(r, sg->start));
		double x1 = as_r_x_of(r, pn, as_r_rel_t(r, sg->end));
		uint64_t top = sg->addr > UINT64_MAX - sg->size
				       ? UINT64_MAX
				       : sg->addr + sg->size;
		double y0 = as_r_y_of(pn, top), y1 = as_r_y_of(pn, sg->addr);
		if (x1 <= pn->px || x0 >= pn->px + pn->pw ||
		    y1 <= pn->py || y0 >= pn->py + pn->ph)
			continue;
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 - x0 < 0.5 || y1 - y0 < 0.5)
			continue;
		RECT(c, x0, y0, x1 - x0, y1 - y0,
		     sg->flags & AS_SEG_EXPANDABLE ? 0xffe6eef7u : 0xffeeeeeeu,
		     0xffd0d0d0u, 1, NULL);
	}
}

static int emit_buffers(struct as_render *r, struct canvas *c,
			struct panel *pn, struct box *avoid, int navoid)
{
	int err = as_r_panel_colors(r, pn);
	if (err)
		return err;
	/* The level of detail of the last frame is kept while the view only
	 * moves by whole pixels (a pan): moved, not redone. */
	double key[5] = {pn->px, pn->py, pn->pw, pn->ph, (double)r->o.color_by};
	double bx = pn->pw / (r->t1 - r->t0), ax = pn->px - r->t0 * bx;
	double by = pn->ph / (pn->v1 - pn->v0),
	       ay = pn->py + pn->ph + pn->v0 * by;
	bool same = pn->lod_valid && memcmp(key, pn->lod_key, sizeof(key)) == 0;
	bool redo = !same || bx != pn->lod_bx || ax != pn->lod_ax ||
		    by != pn->lod_by || ay != pn->lod_ay;
	/* The same scales, to a thousandth of a pixel anywhere in view (the
	 * view read back from the window drifts by a few ulps). */
	if (redo && same && pn->lod_shiftable &&
	    fabs(bx - pn->lod_bx) * (fabs(r->t0) + fabs(r->t1) + 1) <= 1e-3 &&
	    fabs(by - pn->lod_by) * (fabs(pn->v0) + fabs(pn->v1) + 1) <= 1e-3) {
		double d = ax - pn->lod_ax, n = floor(d + 0.5);
		double e = ay - pn->lod_ay, m = floor(e + 0.5);
		if (fabs(d - n) <= 1e-3 && fabs(n) < pn->pw &&
		    fabs(e - m) <= 1e-3 && fabs(m) < pn->ph)
			redo = (n != 0 || m != 0) &&
			       as_r_lod_shift(r, pn, (int)n, (int)m) != 0;
		pn->lod_moved += (n != 0 || m != 0) && !redo;
	}
	if (redo) {
		pn->lod_valid = false;
		err = as_r_lod_pass(r, pn);
		if (err)
			return err;
		memcpy(pn->lod_key, key, sizeof(key));
		pn->lod_valid = true;
		pn->lod_redone++;
	}
	const struct cand *cand = pn->lod_cand;
	const uint32_t nc = pn->lod_nc;
	const double X0 = pn->px, Y0 = pn->py, X1 = pn->px + pn->pw,
		     Y1 = pn->py + pn->ph;
	if (pn->lod_any)
		c->impl->image(c, pn->px, pn->py, pn->pw, pn->ph, pn->lod_raster);

	char title[400];
	uint32_t nlabels = 0;
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t i = pn->bufs[cand[k].idx];
		const struct as_buffer *b = &pn->t->buffers[i];
		double x0 = floor(cand[k].x0 + 0.5), x1 = floor(cand[k].x1 + 0.5);
		double y0 = floor(cand[k].y0 + 0.5), y1 = floor(cand[k].y1 + 0.5);
		if (x1 <= x0)
			x1 = x0 + 1;
		if (y1 <= y0)
			y1 = y0 + 1;
		uint32_t col = pn->colors[cand[k].idx];
		bool big = (x1 - x0) >= 4 && (y1 - y0) >= 4;
		const char *ti = NULL;
		if (c->wants_titles &&
		    (x1 - x0) * (y1 - y0) >= TITLE_MIN_AREA) {
			as_r_buffer_title(pn, i, title, sizeof(title));
			ti = title;
		}
		uint64_t ext = as_r_extent_of(pn, i);
		/* What the program asked for, when the trace knows it: the
		 * allocator's rounding above it is waste too. */
		const struct as_buffer_info *inf =
			pn->t->info ? &pn->t->info[i] : NULL;
		uint64_t used = inf && inf->requested > 0 &&
					inf->requested < b->size
				? inf->requested
				: b->size;
		if (ext > used) {
			/* Internal waste: the chunk above the request, lighter. */
			double yr;
			uint64_t off = pn->p->offset[i];
			yr = floor(as_r_y_of(pn, off + used) + 0.5);
			if (yr < y0)
				yr = y0;
			if (yr > y1)
				yr = y1;
			RECT(c, x0, y0, x1 - x0, yr - y0,
			     0xff000000u | as_r_mix(col, 0xffffff, 0.7), 0, 0, NULL);
			RECT(c, x0, yr, x1 - x0, y1 - yr, 0xff000000u | col, 0, 0,
			     NULL);
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0,
			     big ? as_r_darker(col) : 0, 1, ti);
		} else {
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0xff000000u | col,
			     big ? as_r_darker(col) : 0, 1, ti);
		}
		/* Freed by the program but not yet by the allocator (a
		 * stream still uses it): the pending part, paled. */
		if (inf && inf->free_requested > b->start &&
		    inf->free_requested < b->end) {
			double xf = floor(as_r_x_of(r, pn, as_r_rel_t(r, inf->free_requested)) +
					  0.5);
			if (xf < x0)
				xf = x0;
			if (xf < x1)
				RECT(c, xf, y0, x1 - xf, y1 - y0, 0x99ffffffu, 0, 0,
				     NULL);
		}
		/* Names inside rectangles that have room for them. */
		const char *bname = nlabels < MAX_NAME_LABELS &&
						    x1 - x0 >= 40 && y1 - y0 >= 15
					    ? as_trace_buffer_name(pn->t, i)
					    : NULL;
		if (bname) {
			char nm[120];
			double tw = as_r_measure_text(
				r->m, as_r_render_clean_text(bname, nm, sizeof(nm)),
				FS_SMALL, false);
			/* In the middle, else at the top, else the bottom. */
			double tys[3] = {floor((y0 + y1) / 2 + 4), y0 + 12,
					 y1 - 3};
			double ty = 0;
			bool ok = false;
			for (int t = 0; t < 3 && !ok && tw + 8 <= x1 - x0; t++) {
				ty = tys[t];
				struct box lb = {x0 + 3, ty - 11, x0 + 7 + tw,
						 ty + 3};
				ok = lb.y0 >= y0 && lb.y1 <= y1;
				for (int a = 0; ok && a < navoid; a++)
					ok = !as_r_box_hit(&lb, &avoid[a]);
			}
			if (ok) {
				TEXT(c, x0 + 4, ty, nm, FS_SMALL, false,
				     as_r_luminance(col) < 120 ? 0xffffffffu : C_TEXT,
				     ANCHOR_START);
				nlabels++;
			}
		}
	}

	/* Buffers a pixel high but thinner than a pixel, over the rest. */
	if (pn->lod_over_any)
		c->impl->image(c, pn->px, pn->py, pn->pw, pn->ph, pn->lod_over);
	for (uint32_t k = 0; k < pn->lod_nthin; k++) {
		const struct cand *t = &pn->lod_thin[k];
		double y0 = floor(t->y0 + 0.5), y1 = floor(t->y1 + 0.5);
		if (y1 <= y0)
			y1 = y0 + 1;
		RECT(c, t->x0, y0, 1, y1 - y0,
		     0xff000000u | pn->colors[t->idx], 0, 0, NULL);
	}

	/* Aliases: an outline inside the buffer that holds them. */
	for (uint32_t k = pn->nplain; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		double x0, x1, y0, y1;
		as_r_buf_rect(r, pn, i, pn->t->buffers[i].size, &x0, &x1, &y0, &y1);
		if (x1 <= X0 || x0 >= X1 || y1 <= Y0 || y0 >= Y1)
			continue;
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 - x0 >= 3 && y1 - y0 >= 3)
			RECT(c, floor(x0 + 0.5), floor(y0 + 0.5),
			     floor(x1 - x0 + 0.5), floor(y1 - y0 + 0.5), 0,
			     0xb0000000u, 1, NULL);
	}
	return AS_OK;
}

/*
 * Time ticks of the view: round values of what the labels show, at most
 * 100, x at the pixel centre.
 */
/* A clock reading in us as a label for ticks `step` us apart: in the
 * unit of its size (s, ms, us), with the decimals that resolve the step. */
static void fmt_us(double v, double step, char *buf, size_t len)
{
	double unit = v >= 1e6 ? 1e6 : v >= 1e3 ? 1e3 : 1;
	const char *u = unit == 1e6 ? "s" : unit == 1e3 ? "ms" : "us";
	int dec = 0;
	while (dec < 6 && step < unit / pow(10, dec) * 0.999)
		dec++;
	char num[32];
	as_r_fmt_fixed(v / unit, dec, num, sizeof(num));
	snprintf(buf, len, "%s %s", num, u);
}

/*
 * Ticks of the recorded clock: evenly spaced on the x axis (one column per
 * time step), each labelled with the reading at its step, with the digits
 * that tell it from its neighbours (a program's pace is uneven: a snapshot
 * may spend 1.6 s in its first tenth of events and 0.2 s in the rest).
 * False when the view holds no clock range.
 */
static bool clock_ticks(const struct as_render *r, const struct panel *pn,
			struct tticks *tt)
{
	const struct as_trace *t = pn->t;
	const uint64_t *ck = t->clock;
	double tbase = (double)r->tbase, last = (double)t->end_time;
	double ta = r->t0 + tbase, tb = r->t1 + tbase;
	ta = ta < 0 ? 0 : (ta > last ? last : ta);
	tb = tb < 0 ? 0 : (tb > last ? last : tb);
	if (ck[(uint64_t)ceil(tb)] <= ck[(uint64_t)floor(ta)])
		return false;
	int n = pn->pw / 110 + 1;
	if (n > TTICKS_MAX)
		n = TTICKS_MAX;
	if (n < 2)
		n = 2;
	uint64_t steps[TTICKS_MAX];
	double xs[TTICKS_MAX];
	for (int k = 0; k < n; k++) {
		double x = pn->px + (double)k * pn->pw / (n - 1);
		double tm = r->t0 + (x - pn->px) / pn->pw * (r->t1 - r->t0) +
			    tbase;
		tm = tm < 0 ? 0 : (tm > last ? last : tm);
		steps[k] = (uint64_t)floor(tm);
		xs[k] = floor(as_r_x_of(r, pn, as_r_rel_t(r, steps[k]))) + 0.5;
	}
	tt->n = 0;
	for (int k = 0; k < n; k++) {
		/* The smallest difference to a neighbour sets the digits. */
		double d = INFINITY;
		if (k > 0 && ck[steps[k]] > ck[steps[k - 1]])
			d = (double)(ck[steps[k]] - ck[steps[k - 1]]);
		if (k + 1 < n && ck[steps[k + 1]] > ck[steps[k]]) {
			double d2 = (double)(ck[steps[k + 1]] - ck[steps[k]]);
			d = d2 < d ? d2 : d;
		}
		if (!isfinite(d))
			d = (double)(ck[steps[n - 1]] - ck[steps[0]]);
		tt->x[tt->n] = xs[k];
		fmt_us((double)ck[steps[k]], d, tt->label[tt->n],
		       sizeof(tt->label[0]));
		if (tt->n > 0 && strcmp(tt->label[tt->n],
					tt->label[tt->n - 1]) == 0)
			tt->label[tt->n][0] = 0; /* no time passed */
		tt->n++;
	}
	snprintf(tt->what, sizeof(tt->what),
		 "time (recorded clock; one column per event, so the pace "
		 "varies)");
	return true;
}

void as_r_time_ticks(const struct as_render *r, const struct panel *pn,
		struct tticks *tt)
{
	if (pn->t->clock && !r->o.time_events && clock_ticks(r, pn, tt))
		return;
	double want = (r->t1 - r->t0) / pn->pw * 90;
	double p10 = pow(10, floor(log10(want > 0 ? want : 1)));
	double tstep = p10;
	if (tstep < want)
		tstep = 2 * p10;
	if (tstep < want)
		tstep = 5 * p10;
	if (tstep < want)
		tstep = 10 * p10;
	if (tstep < 1)
		tstep = 1;
	double lab0 = r->rel_labels ? 0 : (double)r->tbase;
	double tfirst = ceil((r->t0 + lab0) / tstep) * tstep - lab0;
	/* Counted, not accumulated: far from 0 a step may vanish in t. */
	tt->n = 0;
	for (int k = 0; k < TTICKS_MAX; k++) {
		double t = tfirst + k * tstep;
		if (t > r->t1 + 1e-9 || (k && t == tfirst + (k - 1) * tstep))
			break;
		tt->x[tt->n] = floor(as_r_x_of(r, pn, t)) + 0.5;
		char num[32];
		as_r_fmt_time_tick(t + lab0, tstep, num, sizeof(num));
		snprintf(tt->label[tt->n], sizeof(tt->label[0]), "%s%s",
			 r->rel_labels && t > 0 ? "+" : "", num);
		tt->n++;
	}
	if (r->rel_labels)
		snprintf(tt->what, sizeof(tt->what), "time since %llu",
			 (unsigned long long)r->tbase);
	else
		snprintf(tt->what, sizeof(tt->what), "%s",
			 r->time_is_index ? "time (operation index)" : "time");
}

/* Tick marks under a plot at y1, and with `labels` the labels. */
void as_r_emit_time_axis(struct as_render *r, struct canvas *c,
		    const struct panel *pn, const struct tticks *tt, double y1,
		    bool labels)
{
	for (int k = 0; k < tt->n; k++) {
		LINE(c, tt->x[k], y1, tt->x[k], y1 + 4, C_FRAME, 1, 0);
		if (labels)
			TEXT(c, tt->x[k], y1 + 16, tt->label[k], FS_TICK, false,
			     C_TEXT, ANCHOR_MIDDLE);
	}
	if (labels)
		TEXT(c, pn->px + pn->pw / 2.0, y1 + 33, tt->what, FS_TICK, true,
		     C_TEXT, ANCHOR_MIDDLE);
}

/*
 * An allocator's blocks at a time: a column 10 pixels wide centred there,
 * free blocks in red, blocks in use outlined.
 */
static void emit_state(struct as_render *r, struct canvas *c,
		       const struct panel *pn, uint64_t time,
		       const struct as_block *b, size_t n)
{
	double xm = as_r_x_of(r, pn, as_r_rel_t(r, time));
	if (xm < pn->px || xm > pn->px + pn->pw || n == 0)
		return;
	xm = floor(xm) + 0.5;
	for (size_t k = 0; k < n; k++) {
		uint64_t top = b[k].offset > UINT64_MAX - b[k].size
				       ? UINT64_MAX
				       : b[k].offset + b[k].size;
		double x0 = xm - 5, x1 = xm + 5;
		double y0 = as_r_y_of(pn, top), y1 = as_r_y_of(pn, b[k].offset);
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (y1 - y0 < 0.5)
			y1 = y0 + 0.5;
		if (b[k].in_use)
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0xb0ffffffu,
			     0xff555555u, 0.5, NULL);
		else
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0xe0ff6b6bu, C_DARKRED,
			     0.5, NULL);
	}
	/* Right of the column, or left of it when it would run past the
	 * plot into the sidebar's heading. */
	static const char label[] = "allocator state";
	double w = as_r_measure_text(r->m, label, FS_SMALL, false);
	bool left = xm + 7 + w > pn->px + pn->pw && xm - 7 - w >= pn->px;
	TEXT(c, left ? xm - 7 : xm + 7, pn->py + 12, label, FS_SMALL, false,
	     C_DARKRED, left ? ANCHOR_END : ANCHOR_START);
}

static int emit_panel(struct as_render *r, struct canvas *c,
		      struct panel *pn, bool last)
{
	char a[48], lab[96];
	const double X0 = pn->px, X1 = pn->px + pn->pw, Y0 = pn->py,
		     Y1 = pn->py + pn->ph;
	c->impl->begin_group(c, "panel");
	as_r_emit_title(r, c, pn);
	as_r_emit_failed_strip(r, c, pn);
	RECT(c, X0, Y0, pn->pw, pn->ph, 0xffffffffu, 0, 0, NULL);

	/* Grid: address ticks and time ticks. */
	for (uint32_t k = 0; k < pn->nticks; k++) {
		double y = floor(pn->ticks[k].y) + 0.5;
		LINE(c, X0, y, X1, y, C_GRID, 1, 0);
	}
	struct tticks tt;
	as_r_time_ticks(r, pn, &tt);
	for (int k = 0; k < tt.n; k++)
		LINE(c, tt.x[k], Y0, tt.x[k], Y1, C_GRID, 1, 0);

	/* Breaks of the address axis. */
	for (uint32_t k = 0; k < pn->npieces; k++) {
		const struct piece *pc = &pn->pieces[k];
		if (!pc->brk)
			continue;
		double ya = as_r_y_of_u(pn, pc->u1), yb = as_r_y_of_u(pn, pc->u0);
		if (yb <= Y0 || ya >= Y1)
			continue;
		if (ya < Y0)
			ya = Y0;
		if (yb > Y1)
			yb = Y1;
		RECT(c, X0, ya, pn->pw, yb - ya, C_BREAK, 0, 0, NULL);
		as_r_emit_zigzag(c, X0 - 8, X1, ya + 1.5);
		as_r_emit_zigzag(c, X0 - 8, X1, yb - 1.5);
		if (yb - ya >= 13) {
			char sz[32];
			snprintf(lab, sizeof(lab), "%s unused, not to scale",
				 as_human_bytes(pc->hi - pc->lo, sz, sizeof(sz)));
			TEXT(c, X1 - 6, (ya + yb) / 2 + 3.5, lab, 9, false,
			     C_TEXT2, ANCHOR_END);
		}
	}

	/* Line labels first, so that names inside rectangles avoid them; no
	 * label covers the peak-time marker or another label. */
	bool marker = pn->has_peak && as_r_rel_t(r, pn->peak_time) >= r->t0 &&
		      as_r_rel_t(r, pn->peak_time) <= r->t1;
	double mx = marker ? floor(as_r_x_of(r, pn, as_r_rel_t(r, pn->peak_time))) + 0.5
			   : -1000;
	struct box mbox = {mx - 8, Y0 - 1, mx + 8, Y0 + 10};
	struct box boxes[4 + 16];
	int nbox = 0, npeak = -1, nlb = -1;
	double y_peak = -1, y_lb = -1;
	char peak_lab[64], lb_lab[128];
	double peak_x = X1 - 6, lb_x = X1 - 6;
	int peak_anchor = ANCHOR_END, lb_anchor = ANCHOR_END;
	double lb_ty = 0, peak_ty = 0;
	bool lb_sample = false;
	if (pn->has_peak) {
		double y = floor(as_r_y_of(pn, pn->peak) + 0.5);
		if (y >= Y0 && y <= Y1) {
			y_peak = y;
			char lbs[48];
			as_r_fmt_bytes_apart(pn->peak, pn->lb ? pn->lb : pn->peak, a,
					lbs, sizeof(lbs));
			snprintf(peak_lab, sizeof(peak_lab), "peak %s", a);
			peak_ty = y - 5;
			if (peak_ty - FS_TICK < Y0)
				peak_ty = y + FS_TICK + 3;
			struct box bx = as_r_label_box(r, peak_x, peak_ty, peak_lab,
						  FS_TICK, true, ANCHOR_END);
			if (as_r_box_hit(&bx, &mbox)) {
				peak_x = X0 + 6;
				peak_anchor = ANCHOR_START;
				bx = as_r_label_box(r, peak_x, peak_ty, peak_lab,
					       FS_TICK, true, ANCHOR_START);
			}
			npeak = nbox;
			boxes[nbox++] = bx;
		}
	}
	bool lb_hidden;
	double ulb = as_r_addr_u(pn, pn->lb, &lb_hidden);
	if (pn->lb && !lb_hidden) {
		double y = floor(as_r_y_of_u(pn, ulb) + 0.5);
		if (y >= Y0 && y <= Y1) {
			y_lb = y;
			char pks[48];
			as_r_fmt_bytes_apart(pn->peak, pn->lb, pks, a, sizeof(a));
			/* With strip's certificate: what it says of the plan. */
			const struct as_certificate *cert =
				as_plan_certificate(pn->p, pn->space);
			char w[48] = "";
			if (cert)
				as_certificate_words(cert, pn->peak, w,
						     sizeof(w));
			snprintf(lb_lab, sizeof(lb_lab), "lower bound %s%s%s", a,
				 cert ? " \xc2\xb7 " : "", w);
			/* Above the peak line beside its label, where no
			 * buffer is drawn, with a sample of the dashes; else
			 * below the line, else above; right end, else left. */
			double tys[2] = {y + FS_TICK + 3, y - 5};
			bool placed = false;
			if (npeak >= 0 && peak_ty < y_peak &&
			    peak_anchor == ANCHOR_END && pn->lb <= pn->peak) {
				double lx = boxes[npeak].x0 - 30;
				struct box bx = as_r_label_box(r, lx, peak_ty, lb_lab,
							  FS_TICK, false,
							  ANCHOR_END);
				if (bx.x0 > X0 && !as_r_box_hit(&bx, &mbox)) {
					lb_ty = peak_ty;
					lb_x = lx;
					nlb = nbox;
					boxes[nbox++] = bx;
					lb_sample = true;
					placed = true;
				}
			}
			for (int k = 0; k < 4 && !placed; k++) {
				double ty = tys[k & 1];
				int an = k < 2 ? ANCHOR_END : ANCHOR_START;
				double lx = k < 2 ? X1 - 6 : X0 + 6;
				struct box bx = as_r_label_box(r, lx, ty, lb_lab,
							  FS_TICK, false, an);
				if (bx.y1 > Y1 || bx.y0 < Y0 ||
				    as_r_box_hit(&bx, &mbox) ||
				    (npeak >= 0 && as_r_box_hit(&bx, &boxes[npeak])))
					continue;
				lb_ty = ty;
				lb_x = lx;
				lb_anchor = an;
				nlb = nbox;
				boxes[nbox++] = bx;
				placed = true;
			}
		}
	}
	/* Names inside rectangles also keep off the two lines. */
	int nlabels = nbox;
	if (y_peak >= 0)
		boxes[nbox++] = (struct box){X0, y_peak - 2, X1, y_peak + 2};
	if (y_lb >= 0)
		boxes[nbox++] = (struct box){X0, y_lb - 2, X1, y_lb + 2};
	/* ... and off the red marks of violations. */
	struct vmark vm[16];
	int nvm = as_r_violation_marks(r, pn, vm);
	for (int k = 0; k < nvm; k++)
		boxes[nbox++] = vm[k].b;

	emit_segments(r, c, pn);
	int err = emit_buffers(r, c, pn, boxes, nbox);
	if (err)
		return err;
	as_r_emit_violations(c, pn, vm, nvm);

	/* The buffer that reaches the peak, outlined even when tiny. */
	if (pn->has_peak) {
		double x0, x1, y0, y1;
		as_r_buf_rect(r, pn, pn->peak_buf, pn->t->buffers[pn->peak_buf].size,
			 &x0, &x1, &y0, &y1);
		if ((x1 - x0 < 6 || y1 - y0 < 6) && x1 > X0 && x0 < X1 &&
		    y1 > Y0 && y0 < Y1) {
			as_r_grow_min(&x0, &x1, &y0, &y1, 6);
			as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
			RECT(c, floor(x0), floor(y0), ceil(x1 - x0), ceil(y1 - y0),
			     0, C_PEAK, 1.5, NULL);
		}
	}

	/* When the peak happens. */
	if (marker) {
		LINE(c, mx, Y0, mx, Y1, 0xc0000000u, 1, 3);
		double tri[6] = {mx - 6, Y0, mx + 6, Y0, mx, Y0 + 8};
		c->impl->poly(c, tri, 3, true, C_PEAK, 0xffffffffu, 1);
	}
	/* Both moments on the time axis: the peak filled, the bound hollow. */
	if (pn->has_lb_time && as_r_rel_t(r, pn->lb_time) >= r->t0 &&
	    as_r_rel_t(r, pn->lb_time) <= r->t1) {
		double bx = floor(as_r_x_of(r, pn, as_r_rel_t(r, pn->lb_time))) + 0.5;
		double tri[6] = {bx - 5, Y1 + 8, bx + 5, Y1 + 8, bx, Y1};
		c->impl->poly(c, tri, 3, true, 0xffffffffu, C_LB, 1.2);
	}
	if (marker) {
		double tri[6] = {mx - 5, Y1 + 8, mx + 5, Y1 + 8, mx, Y1};
		c->impl->poly(c, tri, 3, true, C_PEAK, C_PEAK, 1);
	}
	if (y_lb >= 0)
		LINE(c, X0, y_lb, X1, y_lb, C_LB, 1.5, 6);
	if (y_peak >= 0)
		LINE(c, X0, y_peak, X1, y_peak, C_PEAK, 2, 0);
	if (npeak >= 0)
		as_r_boxed_text(r, c, &boxes[npeak], peak_x, peak_ty, peak_lab,
			   FS_TICK, true, C_TEXT, peak_anchor);
	if (nlb >= 0)
		as_r_boxed_text(r, c, &boxes[nlb], lb_x, lb_ty, lb_lab, FS_TICK,
			   false, C_TEXT, lb_anchor);
	if (lb_sample)
		LINE(c, lb_x + 6, lb_ty - 4, lb_x + 24, lb_ty - 4, C_LB, 1.5, 6);
	(void)nlabels;

	/* Selection (the viewer's click), visible at any size. */
	uint32_t h = r->o.highlight;
	if (h < pn->t->nbuffers && h < pn->p->nbuffers &&
	    pn->p->offset[h] != AS_NO_OFFSET &&
	    as_plan_space_of(pn->p, pn->t, h) == pn->space &&
	    as_r_buf_drawable(&pn->t->buffers[h])) {
		double x0, x1, y0, y1;
		as_r_buf_rect(r, pn, h, as_r_extent_of(pn, h), &x0, &x1, &y0, &y1);
		as_r_grow_min(&x0, &x1, &y0, &y1, 7);
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 > x0 && y1 > y0) {
			RECT(c, x0 - 1, y0 - 1, x1 - x0 + 2, y1 - y0 + 2, 0,
			     0xff000000u, 2.5, NULL);
			RECT(c, x0 + 1, y0 + 1, x1 - x0 - 2, y1 - y0 - 2, 0,
			     0xffffffffu, 1, NULL);
		}
	}

	/* An online allocator's blocks: at the peak, or where asked. */
	const struct as_render_state *st = r->o.state;
	if (st && st->panel >= 0 && (size_t)st->panel < r->npanels &&
	    &r->panels[st->panel] == pn)
		emit_state(r, c, pn, st->time, st->blocks, st->nblocks);
	else if (pn->nwalk)
		emit_state(r, c, pn, pn->peak_time, pn->walk, pn->nwalk);

	/* OOM (red) and failed allocations (orange) on the time axis. */
	for (uint32_t m = 0; m < pn->t->nmarks; m++) {
		const struct as_mark *mk = &pn->t->marks[m];
		double x = as_r_x_of(r, pn, as_r_rel_t(r, mk->time));
		if (mk->space != pn->space || x < X0 || x > X1)
			continue;
		x = floor(x) + 0.5;
		uint32_t col = mk->kind == AS_MARK_OOM ? C_RED : 0xffff7f00u;
		double tri[6] = {x - 4, Y1 - 7, x + 4, Y1 - 7, x, Y1};
		c->impl->poly(c, tri, 3, true, col, C_DARKRED, 1);
	}

	if (pn->nbufs == 0)
		TEXT(c, (X0 + X1) / 2, (Y0 + Y1) / 2, "no buffers", FS_STAT,
		     false, C_TEXT2, ANCHOR_MIDDLE);

	/* Frame, address ticks and labels. */
	RECT(c, X0 - 0.5, Y0 - 0.5, pn->pw + 1, pn->ph + 1, 0, C_FRAME, 1,
	     NULL);
	for (uint32_t k = 0; k < pn->nticks; k++) {
		double y = floor(pn->ticks[k].y) + 0.5;
		LINE(c, X0 - 4, y, X0, y, C_FRAME, 1, 0);
		double ty = y + 4;
		if (ty > Y1 + 4)
			ty = Y1 + 4;
		TEXT(c, X0 - 7, ty, pn->ticks[k].label, FS_TICK,
		     pn->ticks[k].major, C_TEXT, ANCHOR_END);
	}
	as_r_emit_time_axis(r, c, pn, &tt, Y1, last && !r->mem_h && !r->stage_h);
	as_r_emit_sidebar(r, c, pn);
	c->impl->end_group(c);
	return AS_OK;
}

int as_r_render_emit(struct as_render *r, struct canvas *c)
{
	RECT(c, 0, 0, r->o.width, r->o.height, C_BG, 0, 0, NULL);
	as_r_emit_header(r, c);
	for (size_t i = 0; i < r->npanels; i++) {
		int err = emit_panel(r, c, &r->panels[i], i + 1 == r->npanels);
		if (err)
			return err;
	}
	as_r_emit_stages(r, c);
	return as_r_emit_memory(r, c);
}
