/*
 * What is drawn around the buffers: panel titles, the failed strip,
 * violation marks, the sidebar (live at peak, rounds) and the header, and
 * a buffer described in words (tooltips).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

bool as_r_box_hit(const struct box *a, const struct box *b)
{
	return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 &&
	       b->y0 < a->y1;
}

/* Text on a light box, for labels over rectangles. */
struct box as_r_label_box(struct as_render *r, double x, double y,
		     const char *s, double size, bool bold, int anchor)
{
	double w = as_r_measure_text(r->m, s, size, bold);
	double x0 = anchor == ANCHOR_END ? x - w : x;
	return (struct box){x0 - 4, y - size - 1, x0 + w + 4, y + 4};
}

void as_r_boxed_text(struct as_render *r, struct canvas *c,
		const struct box *b, double x, double y, const char *s,
		double size, bool bold, uint32_t col, int anchor)
{
	RECT(c, b->x0, b->y0, b->x1 - b->x0, b->y1 - b->y0, C_LABEL_BG, 0, 0,
	     NULL);
	TEXT(c, x, y, s, size, bold, col, anchor);
}

/*
 * A buffer in words, for SVG tooltips and the viewer:
 *   name
 *   8.00 KiB (8192 B) at offset 3072 (0xc00)
 *     (or "at address 0x7f..." where the offsets stand for recorded
 *     addresses: the trace's address map)
 *   live [1, 6), align 64
 *   chunk 10.0 KiB, waste 2.00 KiB          (online allocators)
 *     first stack frames                    (where the trace has them)
 */
void as_r_buffer_title(const struct panel *pn, uint32_t i, char *buf,
		  size_t len)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	char name[160], sz[32], where[64], al[32] = "", ck[80] = "";
	uint64_t off = pn->p->offset[i];
	const char *bn = as_trace_buffer_name(pn->t, i);
	as_r_render_clean_text(bn ? bn : "?", name, sizeof(name));
	as_human_bytes(b->size, sz, sizeof(sz));
	uint64_t real;
	if (off == AS_NO_OFFSET)
		snprintf(where, sizeof(where), ": FAILED, no address");
	else if (as_r_real_address(pn, off, &real))
		snprintf(where, sizeof(where), " at address 0x%llx",
			 (unsigned long long)real);
	else
		snprintf(where, sizeof(where), " at offset %llu (0x%llx)",
			 (unsigned long long)off, (unsigned long long)off);
	if (b->align_log2)
		snprintf(al, sizeof(al), ", align %llu",
			 (unsigned long long)as_buffer_align(b));
	if (pn->p->chunk && pn->p->chunk[i] > b->size &&
	    off != AS_NO_OFFSET) {
		char c[32], w[32];
		snprintf(ck, sizeof(ck), "\nchunk %s, waste %s",
			 as_human_bytes(pn->p->chunk[i], c, sizeof(c)),
			 as_human_bytes(pn->p->chunk[i] - b->size, w, sizeof(w)));
	}
	int n = snprintf(buf, len, "%s\n%s (%llu B)%s\nlive [%llu, %llu)%s%s",
			 name, sz, (unsigned long long)b->size, where,
			 (unsigned long long)b->start,
			 (unsigned long long)b->end, al, ck);
	/* The first stack frames, where the trace has them. */
	const char *fr = as_trace_buffer_frames(pn->t, i);
	for (int k = 0; fr && *fr && k < 3 && n > 0 && (size_t)n + 2 < len;
	     k++) {
		const char *nl = strchr(fr, '\n');
		size_t l = nl ? (size_t)(nl - fr) : strlen(fr);
		char line[120];
		snprintf(line, sizeof(line), "%.*s", (int)(l < 119 ? l : 119),
			 fr);
		char clean[160];
		as_r_render_clean_text(line, clean, sizeof(clean));
		n += snprintf(buf + n, len - (size_t)n, "\n  %s", clean);
		fr = nl ? nl + 1 : fr + l;
	}
}

const char *as_render_buffer_text(const struct as_render *r, size_t panel,
				  uint32_t buffer, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	buf[0] = 0;
	if (!r || panel >= r->npanels ||
	    buffer >= r->panels[panel].t->nbuffers ||
	    buffer >= r->panels[panel].p->nbuffers)
		return buf;
	as_r_buffer_title(&r->panels[panel], buffer, buf, len);
	return buf;
}

/* Zig-zag marks of an axis break at height y across [x0, x1]. */
void as_r_emit_zigzag(struct canvas *c, double x0, double x1, double y)
{
	double xy[2 * 65];
	int n = 0, k = 0;
	for (double x = x0; x <= x1 + 5.99; x += 6, k++) {
		xy[2 * n] = x < x1 ? x : x1;
		xy[2 * n + 1] = y + ((k & 1) ? 2.5 : -2.5);
		if (++n == 65) { /* continue in the next polyline */
			c->impl->poly(c, xy, n, false, 0, C_FRAME, 1);
			xy[0] = xy[2 * 64];
			xy[1] = xy[2 * 64 + 1];
			n = 1;
		}
	}
	if (n > 1)
		c->impl->poly(c, xy, n, false, 0, C_FRAME, 1);
}

void as_r_emit_title(struct as_render *r, struct canvas *c,
		const struct panel *pn)
{
	char seg[6][160];
	uint32_t col[6];
	bool bold[6];
	int n = 0;
	char a[32], b[32];
	double y = pn->top + 16;
	double maxw = r->o.width - pn->px - 8;

	as_r_fmt_bytes_apart(pn->peak, pn->lb ? pn->lb : pn->peak, a, b, sizeof(a));
	snprintf(seg[n], sizeof(seg[n]), "peak %s", a);
	col[n] = C_TEXT;
	bold[n++] = true;
	if (pn->lb) {
		char g[32];
		double gap = ((double)pn->peak - (double)pn->lb) / pn->lb * 100;
		snprintf(seg[n], sizeof(seg[n]), "lower bound %s", b);
		col[n] = C_TEXT;
		bold[n++] = false;
		if (as_r_span_scattered(pn))
			snprintf(seg[n], sizeof(seg[n]),
				 "scattered addresses: a span, no gap");
		else if (gap > 9999)
			snprintf(seg[n], sizeof(seg[n]), "gap > +9999%%");
		else
			snprintf(seg[n], sizeof(seg[n]), "gap %s",
				 as_r_fmt_pct(gap, g, sizeof(g)));
		col[n] = C_TEXT;
		bold[n++] = false;
	}
	/* strip's certificate, where it proves a bound: "optimal" or "<= X%
	 * above optimal", with the bound when it is above the load. */
	const struct as_certificate *cert =
		pn->lb ? as_plan_certificate(pn->p, pn->space) : NULL;
	if (cert) {
		char w[48], cb[32];
		as_certificate_words(cert, pn->peak, w, sizeof(w));
		if (cert->bound > pn->lb)
			snprintf(seg[n], sizeof(seg[n]), "certified %s: %s",
				 as_human_bytes(cert->bound, cb, sizeof(cb)),
				 w);
		else
			snprintf(seg[n], sizeof(seg[n]), "%s", w);
		col[n] = pn->peak <= cert->bound ? C_OK : C_TEXT;
		bold[n++] = false;
	}
	if (pn->valid) {
		snprintf(seg[n], sizeof(seg[n]), "valid");
		col[n] = C_OK;
		bold[n++] = false;
	} else {
		char v[32];
		as_r_fmt_count((double)pn->violations, v, sizeof(v));
		snprintf(seg[n], sizeof(seg[n]), "INVALID: %s violation%s", v,
			 pn->violations == 1 ? "" : "s");
		col[n] = C_RED;
		bold[n++] = true;
	}
	snprintf(seg[n], sizeof(seg[n]), "%u failed", pn->failed);
	col[n] = pn->failed ? C_RED : C_TEXT2;
	bold[n++] = pn->failed > 0;
	if (pn->folded[0]) {
		snprintf(seg[n], sizeof(seg[n]), "%s", pn->folded);
		col[n] = C_TEXT2;
		bold[n++] = false;
	}

	double stats_w = 0;
	for (int k = 0; k < n; k++)
		stats_w += as_r_measure_text(r->m, seg[k], FS_STAT, bold[k]) + 18;
	char title[200], full[200];
	if (pn->show_space)
		snprintf(full, sizeof(full), "%s \xc2\xb7 %s", pn->title,
			 pn->space_name);
	else
		snprintf(full, sizeof(full), "%s", pn->title);
	double room = maxw - stats_w - 18;
	if (room < 80)
		room = 80;
	as_r_fit_text(r->m, full, FS_TITLE, true, room, title, sizeof(title));
	double x = pn->px;
	TEXT(c, x, y, title, FS_TITLE, true, C_TEXT, ANCHOR_START);
	x += as_r_measure_text(r->m, title, FS_TITLE, true) + 18;
	for (int k = 0; k < n; k++) {
		double w = as_r_measure_text(r->m, seg[k], FS_STAT, bold[k]);
		if (x + w > r->o.width - 4)
			break;
		TEXT(c, x, y, seg[k], FS_STAT, bold[k], col[k], ANCHOR_START);
		x += w + 18;
	}
}

void as_r_emit_failed_strip(struct as_render *r, struct canvas *c,
		       const struct panel *pn)
{
	if (!pn->strip_h)
		return;
	double y = pn->strip_y + 1, h = pn->strip_h - 3;
	RECT(c, pn->px, y, pn->pw, h, C_STRIP, 0, 0, NULL);
	TEXT(c, pn->px - 6, y + h - 2, "failed", FS_SMALL, true, C_RED,
	     ANCHOR_END);
	/* One mark per run of covered pixel columns (bounded by width). */
	uint8_t *cols = calloc((size_t)pn->pw + 1, 1);
	if (!cols)
		return;
	for (uint32_t k = pn->nplaced; k < pn->nbufs; k++) {
		const struct as_buffer *b = &pn->t->buffers[pn->bufs[k]];
		double x0 = as_r_x_of(r, pn, as_r_rel_t(r, b->start)) - pn->px;
		double x1 = as_r_x_of(r, pn, as_r_rel_t(r, b->end)) - pn->px;
		if (x1 <= 0 || x0 >= pn->pw)
			continue;
		int a = x0 < 0 ? 0 : (int)floor(x0);
		int e = x1 > pn->pw ? pn->pw : (int)ceil(x1);
		if (e < a + 3)
			e = a + 3 < pn->pw ? a + 3 : pn->pw;
		for (int i = a; i < e; i++)
			cols[i] = 1;
	}
	for (int i = 0; i < pn->pw;) {
		if (!cols[i]) {
			i++;
			continue;
		}
		int j = i;
		while (j < pn->pw && cols[j])
			j++;
		RECT(c, pn->px + i, y, j - i, h, C_RED, 0, 0, NULL);
		i = j;
	}
	free(cols);
}

/* A mark that stays visible however small the thing it marks. */
void as_r_grow_min(double *x0, double *x1, double *y0, double *y1,
	      double min)
{
	if (*x1 - *x0 < min) {
		double m = (*x0 + *x1) / 2;
		*x0 = m - min / 2;
		*x1 = m + min / 2;
	}
	if (*y1 - *y0 < min) {
		double m = (*y0 + *y1) / 2;
		*y0 = m - min / 2;
		*y1 = m + min / 2;
	}
}

/* Where the listed violations of this panel are drawn (at most 16). */
int as_r_violation_marks(const struct as_render *r, const struct panel *pn,
		    struct vmark *out)
{
	const struct as_report *rep = pn->rep;
	int n = 0;
	if (!rep || rep->valid)
		return 0;
	for (uint32_t k = 0; k < rep->nfirst && k < 16; k++) {
		const struct as_violation *v = &rep->first[k];
		uint32_t a = v->a, b = v->b;
		if (a >= pn->t->nbuffers || pn->p->offset[a] == AS_NO_OFFSET ||
		    as_plan_space_of(pn->p, pn->t, a) != pn->space)
			continue;
		double x0, x1, y0, y1;
		bool overlap = v->kind == AS_V_OVERLAP && b < pn->t->nbuffers &&
			       pn->p->offset[b] != AS_NO_OFFSET;
		if (overlap) {
			const struct as_buffer *A = &pn->t->buffers[a],
					       *B = &pn->t->buffers[b];
			uint64_t ts = A->start > B->start ? A->start : B->start;
			uint64_t te = A->end < B->end ? A->end : B->end;
			uint64_t oa = pn->p->offset[a], ob = pn->p->offset[b];
			uint64_t lo = oa > ob ? oa : ob;
			uint64_t ea = as_r_end_addr(pn, a), eb = as_r_end_addr(pn, b);
			uint64_t hi = ea < eb ? ea : eb;
			if (hi < lo)
				hi = lo;
			x0 = as_r_x_of(r, pn, as_r_rel_t(r, ts));
			x1 = as_r_x_of(r, pn, as_r_rel_t(r, te));
			y0 = as_r_y_of(pn, hi);
			y1 = as_r_y_of(pn, lo);
		} else {
			as_r_buf_rect(r, pn, a, as_r_extent_of(pn, a), &x0, &x1, &y0, &y1);
		}
		as_r_grow_min(&x0, &x1, &y0, &y1, 8);
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 <= x0 || y1 <= y0)
			continue;
		out[n].b = (struct box){x0, y0, x1, y1};
		out[n++].overlap = overlap;
	}
	return n;
}

void as_r_emit_violations(struct canvas *c, const struct panel *pn,
		     const struct vmark *m, int n)
{
	for (int k = 0; k < n; k++) {
		double x0 = m[k].b.x0, y0 = m[k].b.y0, x1 = m[k].b.x1,
		       y1 = m[k].b.y1;
		RECT(c, x0, y0, x1 - x0, y1 - y0, m[k].overlap ? 0xd8e41a1cu : 0,
		     C_DARKRED, m[k].overlap ? 2 : 3, NULL);
		if (!m[k].overlap)
			RECT(c, x0 + 3, y0 + 3, x1 - x0 - 6, y1 - y0 - 6, 0, C_RED,
			     1.5, NULL);
		/* An arrow in the tick zone points at it, clear of the tick
		 * labels (they end 7 pixels left of the plot). */
		double ym = (y0 + y1) / 2, xa = pn->px - 1;
		double tri[6] = {xa - 6, ym - 5, xa, ym, xa - 6, ym + 5};
		c->impl->poly(c, tri, 3, true, C_RED, C_DARKRED, 1);
	}
}

/* Whether round k of the plan is about this panel's space. */
static bool round_here(const struct panel *pn, const struct as_round *rd)
{
	if (!pn->show_space)
		return true;
	unsigned sp;
	int used = 0;
	if (sscanf(rd->label, "s%u %n", &sp, &used) == 1 && used > 0)
		return sp == pn->space;
	return true;
}

/*
 * The steps of a tuning search: one bar per recorded step whose peak is a
 * whole plan's (at or above the lower bound; steps on parts of the plan
 * are below it and left out, and counted), on an axis from the bound to
 * the highest step, the plan's own peak as a line.
 */
static void emit_rounds(struct as_render *r, struct canvas *c,
			const struct panel *pn, double x, double y0, double w)
{
	const struct as_round *rd = pn->p->rounds;
	uint32_t nr = pn->p->nrounds, shown = 0, parts = 0;
	uint64_t lo = UINT64_MAX, hi = 0, base = pn->lb;
	char buf[200], a[32], b[32], fit[200];
	for (uint32_t k = 0; k < nr; k++) {
		if (!round_here(pn, &rd[k]))
			continue;
		if (rd[k].peak < base) {
			parts++;
			continue;
		}
		shown++;
		lo = rd[k].peak < lo ? rd[k].peak : lo;
		hi = rd[k].peak > hi ? rd[k].peak : hi;
	}
	hi = pn->peak > hi ? pn->peak : hi;
	snprintf(buf, sizeof(buf), "search steps (%u plans)", shown);
	as_r_fit_text(r->m, buf, FS_SMALL, true, w, fit, sizeof(fit));
	TEXT(c, x, y0 + 10, fit, FS_SMALL, true, C_TEXT, ANCHOR_START);
	double cx = x + 46, cw = w - 46, cy = y0 + 16, ch = 44;
	RECT(c, cx, cy, cw, ch, 0xfff7f7f7u, 0, 0, NULL);
	/* The axis: the bound at the bottom, the highest step on top. */
	TEXT(c, cx - 4, cy + 8, as_human_bytes(hi, a, sizeof(a)), 9, false,
	     C_TEXT2, ANCHOR_END);
	TEXT(c, cx - 4, cy + ch, as_human_bytes(base, b, sizeof(b)), 9, false,
	     C_TEXT2, ANCHOR_END);
	LINE(c, cx - 0.5, cy, cx - 0.5, cy + ch, C_FRAME, 1, 0);
	double span = hi > base ? (double)(hi - base) : 1;
	if (shown) {
		uint32_t nbars = shown < (uint32_t)cw ? shown : (uint32_t)cw;
		double bw = cw / nbars;
		uint32_t seen = 0, bar = 0;
		for (uint32_t k = 0; k < nr && bar < nbars; k++) {
			if (!round_here(pn, &rd[k]) || rd[k].peak < base)
				continue;
			/* Bars sample the steps when they outnumber pixels. */
			if ((uint64_t)bar * shown / nbars != seen++)
				continue;
			double f = (double)(rd[k].peak - base) / span;
			double bh = 2 + f * (ch - 2);
			RECT(c, cx + bar * bw, cy + ch - bh, bw > 2 ? bw - 1 : bw,
			     bh, rd[k].peak == lo ? 0xff000000u : 0xff9e9e9eu, 0,
			     0, NULL);
			bar++;
		}
	}
	double yp = cy + ch - (double)(pn->peak - (pn->peak > base ? base
								   : pn->peak)) /
				  span * (ch - 2) - 2;
	LINE(c, cx, floor(yp) + 0.5, cx + cw, floor(yp) + 0.5, C_PEAK, 1, 3);
	snprintf(buf, sizeof(buf), "black: best %s; - - this plan",
		 as_human_bytes(lo == UINT64_MAX ? pn->peak : lo, a,
				sizeof(a)));
	as_r_fit_text(r->m, buf, 9, false, w, fit, sizeof(fit));
	TEXT(c, x, cy + ch + 11, fit, 9, false, C_TEXT2, ANCHOR_START);
	if (parts) {
		/* Steps on parts of the plan peak below the bound. */
		snprintf(buf, sizeof(buf), "%u steps on parts not shown", parts);
		as_r_fit_text(r->m, buf, 9, false, w, fit, sizeof(fit));
		TEXT(c, x, cy + ch + 22, fit, 9, false, C_TEXT2, ANCHOR_START);
	}
}

void as_r_emit_sidebar(struct as_render *r, struct canvas *c,
		  const struct panel *pn)
{
	if (!r->sidebar_w)
		return;
	double x = pn->px + pn->pw + 14, w = r->sidebar_w - 8;
	double y = pn->py + 11, bottom = pn->py + pn->ph;
	char buf[200], a[32], b[32];
	const double row = 15;
	bool rounds = pn->p->nrounds >= 2 && pn->ph >= 180;
	if (rounds)
		bottom -= ROUNDS_H;

	/* Violations first, in red: they are what must be fixed. */
	const struct as_report *rep = pn->rep;
	for (uint32_t k = 0; rep && !rep->valid && k < rep->nfirst; k++) {
		const struct as_violation *v = &rep->first[k];
		if (v->a >= pn->t->nbuffers ||
		    as_plan_space_of(pn->p, pn->t, v->a) != pn->space)
			continue;
		if (y + row > bottom)
			return;
		static const char *const kind[] = {"overlap", "misaligned",
						   "over capacity",
						   "outside parent", "overflow"};
		char na[80], nb[80];
		const char *an = as_trace_buffer_name(pn->t, v->a);
		as_r_render_clean_text(an ? an : "?", na, sizeof(na));
		if (v->kind == AS_V_OVERLAP && v->b < pn->t->nbuffers) {
			const char *bn = as_trace_buffer_name(pn->t, v->b);
			as_r_render_clean_text(bn ? bn : "?", nb, sizeof(nb));
			snprintf(buf, sizeof(buf), "%s: %s \xc3\x97 %s",
				 kind[v->kind], na, nb);
		} else {
			snprintf(buf, sizeof(buf), "%s: %s",
				 (unsigned)v->kind < 5 ? kind[v->kind] : "?",
				 na);
		}
		char fit[200];
		as_r_fit_text(r->m, buf, FS_SMALL, true, w, fit, sizeof(fit));
		TEXT(c, x, y, fit, FS_SMALL, true, C_RED, ANCHOR_START);
		y += row;
	}
	if (!pn->has_peak)
		return;
	if (y + 2 * row > bottom)
		return;
	char tt[32];
	if (r->rel_labels)
		snprintf(buf, sizeof(buf), "live at peak, t = +%s",
			 as_r_fmt_count(as_r_rel_t(r, pn->peak_time), tt, sizeof(tt)));
	else
		snprintf(buf, sizeof(buf), "live at peak, t = %s",
			 as_r_fmt_count((double)pn->peak_time, tt, sizeof(tt)));
	TEXT(c, x, y, buf, FS_SMALL, true, C_TEXT, ANCHOR_START);
	y += row - 2;
	snprintf(buf, sizeof(buf), "%llu buffers, %s",
		 (unsigned long long)pn->nlive_total,
		 as_human_bytes(pn->live_bytes, a, sizeof(a)));
	TEXT(c, x, y, buf, FS_SMALL, false, C_TEXT2, ANCHOR_START);
	y += row;
	uint32_t shown = 0;
	for (; shown < pn->nlive && y + 2 <= bottom; shown++) {
		uint32_t i = pn->live[shown];
		const struct as_buffer *bf = &pn->t->buffers[i];
		/* The last row that fits says how many are not listed. */
		if (y + row + 2 > bottom && pn->nlive_total > shown + 1)
			break;
		uint32_t col = as_r_color_of(r, pn, i);
		RECT(c, x, y - 9, 10, 10, 0xff000000u | col, as_r_darker(col), 1,
		     NULL);
		as_human_bytes(bf->size, b, sizeof(b));
		double sw = as_r_measure_text(r->m, b, FS_SMALL, false);
		char fit[200];
		as_r_fit_text(r->m, bf->name ? bf->name : "?", FS_SMALL, false,
			 w - 14 - sw - 8, fit, sizeof(fit));
		TEXT(c, x + 14, y, fit, FS_SMALL, false, C_TEXT, ANCHOR_START);
		TEXT(c, x + w, y, b, FS_SMALL, false, C_TEXT2, ANCHOR_END);
		y += row;
	}
	if (pn->nlive_total > shown && y + 2 <= bottom) {
		snprintf(buf, sizeof(buf), "\xe2\x80\xa6 %llu more",
			 (unsigned long long)(pn->nlive_total - shown));
		TEXT(c, x, y, buf, FS_SMALL, false, C_TEXT2, ANCHOR_START);
	}

	if (rounds)
		emit_rounds(r, c, pn, x, pn->py + pn->ph - ROUNDS_H, w);
}

void as_r_emit_header(struct as_render *r, struct canvas *c)
{
	if (!r->o.header)
		return;
	const struct as_trace *t = r->panels[0].t;
	char buf[400], name[200], lb[32], nb[32];
	as_r_render_clean_text(as_r_basename_of(t->path), name, sizeof(name));
	snprintf(buf, sizeof(buf), "%s \xc2\xb7 %s buffers \xc2\xb7 lower bound %s",
		 name, as_r_fmt_count(t->nbuffers, nb, sizeof(nb)),
		 as_human_bytes(r->trace_lb, lb, sizeof(lb)));
	char legend[80];
	snprintf(legend, sizeof(legend), "colour: %s",
		 r->o.color_by == AS_COLOR_BUFFER ? "buffer name"
		 : r->o.color_by == AS_COLOR_SIZE ? "size (small \xe2\x86\x92 large)"
		 : r->o.color_by == AS_COLOR_LIFETIME
			 ? "lifetime (short \xe2\x86\x92 long)"
		 : r->o.color_by == AS_COLOR_PREFIX ? "name prefix"
		 : r->o.color_by == AS_COLOR_FRAME  ? "first stack frame"
						    : "pool");
	double lw = as_r_measure_text(r->m, legend, FS_TICK, false);
	bool seq = r->o.color_by == AS_COLOR_SIZE ||
		   r->o.color_by == AS_COLOR_LIFETIME;
	double gx = r->o.width - 10 - (seq ? 90 : 0);
	char fit[400];
	as_r_fit_text(r->m, buf, FS_STAT, true, gx - lw - 40, fit, sizeof(fit));
	TEXT(c, 10, 18, fit, FS_STAT, true, C_TEXT, ANCHOR_START);
	TEXT(c, gx - (seq ? 8 : 0), 18, legend, FS_TICK, false, C_TEXT2,
	     ANCHOR_END);
	if (seq) {
		for (int k = 0; k < 90; k++)
			RECT(c, gx + k, 8, 1, 12,
			     0xff000000u | as_r_seq_color(k / 89.0), 0, 0, NULL);
	}
}
