/*
 * What a frame shows: the renderer's picture, then the status bar and the
 * boxes over it (the note while no plan is in, the time cursor, tooltip,
 * peak list, violations and help), painted by as_render_overlay_argb32.
 * Besides the pixels it writes only the hover hit a mouse move left stale,
 * the time cursor's cache, the frame's timings and `dirty`.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/certified.h"
#include "allocscope/io.h"
#include "viewer.h"

static const char help_text[] =
	"allocscope-view keys\n"
	"wheel\tzoom time at the mouse\n"
	"Ctrl or Shift + wheel\tzoom addresses at the mouse\n"
	"drag\tpan time and addresses\n"
	"double click\tzoom to the buffer\n"
	"click\tselect (highlighted in every panel)\n"
	"f\tfit everything\n"
	"+ / -, arrows\tzoom time, pan\n"
	"Tab, Shift+Tab, 1-9\tswitch strategy\n"
	"c\tcompare: all strategies, one time axis\n"
	"p\tjump to the peak, list buffers live there\n"
	"/ text Enter, n\tsearch buffers by name, next match\n"
	"v\tlist validation failures\n"
	"b\tcolour by buffer, size, pool, lifetime, prefix, frame\n"
	"t\ttime cursor: what is live at the mouse's time\n"
	"g\tgroup it by buffer, name prefix, stack frame, size,\n"
	"\tannotation stage\n"
	"m\tmemory over time (live, each plan's top)\n"
	"e\tcategory bands in memory over time\n"
	"a\tallocator's blocks at the mouse's time (bfc, ...)\n"
	"[ ]\tmark a time range at the mouse: its summary\n"
	"s\tsave the view as PNG and SVG\n"
	"r\treload the trace (or drop a file here)\n"
	"Esc\tclose lists, clear selection\n"
	"? / q\tthis help / quit";

/* ---- time cursor ---- */

struct group {
	char key[96];
	uint64_t bytes, count;
	uint32_t first; /* a buffer of the group, for its colour */
};

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->key, y->key);
}

#define CURSOR_GROUPS 512
#define CURSOR_LINES 16

/*
 * What is live at the hovered time in the hovered panel, grouped: a title
 * line, then up to CURSOR_LINES groups by bytes. Recomputed only when the
 * time moves to another unit or the panel changes.
 */
static size_t cursor_text(struct viewer *v, char *buf, size_t len,
			  uint32_t *cols)
{
	const struct as_trace *t = v->doc.t;
	int panel = v->hover.panel;
	double tm = floor(v->hover.time);
	if (!v->live) {
		v->live = malloc(sizeof(uint32_t) * ((size_t)t->nbuffers + 1));
		if (!v->live)
			return 0;
	}
	if (panel != v->cursor_panel || tm != v->cursor_time) {
		v->cursor_n = as_render_live_at(v->r, (size_t)panel, tm, v->live,
						t->nbuffers);
		v->cursor_panel = panel;
		v->cursor_time = tm;
	}
	if (v->cursor_n < 0)
		return 0;
	static struct group g[CURSOR_GROUPS];
	size_t ng = 0, other = 0;
	uint64_t total = 0, other_bytes = 0;
	for (int64_t k = 0; k < v->cursor_n; k++) {
		uint32_t i = v->live[k];
		char key[96];
		as_render_group(t, i, v->group, key, sizeof(key));
		uint64_t sz = t->buffers[i].size;
		total += sz;
		size_t j = 0;
		/* Linear search: the live list is sorted by size, so big
		 * groups come first; past CURSOR_GROUPS the rest is "other". */
		while (j < ng && strcmp(g[j].key, key) != 0)
			j++;
		if (j == ng) {
			if (ng == CURSOR_GROUPS) {
				other++;
				other_bytes += sz;
				continue;
			}
			snprintf(g[ng].key, sizeof(g[ng].key), "%s", key);
			g[ng].bytes = g[ng].count = 0;
			g[ng++].first = i;
		}
		g[j].bytes += sz;
		g[j].count++;
	}
	qsort(g, ng, sizeof(g[0]), cmp_group);
	char hb[32], tb[48];
	snprintf(tb, sizeof(tb), "%.0f", tm);
	int n = snprintf(buf, len, "live at t %s: %lld buffers, %s (by %s)", tb,
			 (long long)v->cursor_n,
			 as_human_bytes(total, hb, sizeof(hb)),
			 view_group_names[v->group]);
	size_t lines = 1;
	for (size_t j = 0; j < ng && j < CURSOR_LINES && n > 0 &&
			   (size_t)n < len;
	     j++) {
		cols[lines++] = 0xff000000u |
				as_render_buffer_color(v->r, (size_t)panel,
						       g[j].first);
		n += snprintf(buf + n, len - (size_t)n, "\n%-10s %5llu  %.60s",
			      as_human_bytes(g[j].bytes, hb, sizeof(hb)),
			      (unsigned long long)g[j].count, g[j].key);
	}
	if ((ng > CURSOR_LINES || other) && n > 0 && (size_t)n < len) {
		cols[lines++] = 0;
		snprintf(buf + n, len - (size_t)n, "\n... %zu more groups",
			 ng > CURSOR_LINES ? ng - CURSOR_LINES + (other ? 1 : 0)
					   : 1);
	}
	(void)other_bytes;
	return lines;
}

/* ---- painting ---- */

static void fmt_time(double t, char *buf, size_t len)
{
	if (fabs(t) < 1e15)
		snprintf(buf, len, "%.0f", t);
	else
		snprintf(buf, len, "%.4g", t);
}

/* A gap in percent with the digits that tell it from none: +0.4%. */
static const char *fmt_gap(double pct, char *buf, size_t len)
{
	int dec = 1;
	while (dec < 6 && pct != 0 && fabs(pct) < 10.0 / pow(10, dec))
		dec++;
	snprintf(buf, len, "%+.*f%%", dec, pct);
	return buf;
}

static void status_line(struct viewer *v, char *buf, size_t len)
{
	const struct strat *s = view_strat_of_panel(v, v->hover.panel);
	char pk[32], lb[32], base[256], gp[32];
	const char *p = strrchr(v->doc.path, '/');
	snprintf(base, sizeof(base), "%.200s", p ? p + 1 : v->doc.path);
	size_t idx = (size_t)(s - v->doc.s) + 1;
	/* Nothing but spec and ready of a slot still planning: the thread
	 * writes the rest. */
	if (!s->ready || s->err) {
		snprintf(buf, len, "%s  |  %s%s (%zu/%zu)  |  %s  |  lower bound %s",
			 base, v->compare ? "compare · " : "", s->spec, idx,
			 v->doc.ns,
			 !s->ready	     ? "planning..."
			 : doc_left_out(s) ? "left out"
					     : "failed",
			 as_human_bytes(v->doc.lb, lb, sizeof(lb)));
		return;
	}
	double gap = v->doc.lb ? ((double)s->peak - (double)v->doc.lb) *
					 100.0 / (double)v->doc.lb
			       : 0;
	/* strip's certificate, beside the bound (one space: the trace's). */
	const struct as_certificate *cert =
		s->plan && s->plan->ncerts == 1
			? as_plan_certificate(s->plan, s->plan->certs[0].space)
			: NULL;
	char cw[48] = "";
	if (cert && cert->load == v->doc.lb)
		as_certificate_words(cert, s->peak, cw, sizeof(cw));
	int n = snprintf(buf, len,
			 "%s  |  %s%s (%zu/%zu)  |  peak %s  |  lower bound %s"
			 "  |  gap %s%s%s  |  %s  |  failed %u",
			 base, v->compare ? "compare · " : "", s->spec, idx,
			 v->doc.ns, as_human_bytes(s->peak, pk, sizeof(pk)),
			 as_human_bytes(v->doc.lb, lb, sizeof(lb)),
			 fmt_gap(gap, gp, sizeof(gp)), *cw ? ", " : "", cw,
			 s->report.valid ? "valid" : "INVALID", s->failed);
	if (v->hover.panel >= 0 && v->hover.in_plot && n > 0 &&
	    (size_t)n < len) {
		char tb[48], ab[32];
		fmt_time(v->hover.time, tb, sizeof(tb));
		if (v->hover.has_real) /* a recorded address, not an offset */
			snprintf(buf + n, len - (size_t)n,
				 "  |  t %s  addr 0x%llx", tb,
				 (unsigned long long)v->hover.real_address);
		else
			snprintf(buf + n, len - (size_t)n,
				 "  |  t %s  addr 0x%llx (%s)%s", tb,
				 (unsigned long long)v->hover.address,
				 as_human_bytes(v->hover.address, ab,
						sizeof(ab)),
				 v->hover.in_break ? " break" : "");
	}
}

/* What is still being planned: "planning NAME... N s, then A, B". Empty
 * when every plan is in. */
static void progress(const struct viewer *v, char *buf, size_t len)
{
	size_t slot;
	double ms;
	buf[0] = 0;
	if (!doc_planning(&v->doc, &slot, &ms))
		return;
	int n = snprintf(buf, len, "planning %s... %.0f s", v->doc.s[slot].spec,
			 ms / 1000);
	const char *sep = ", then ";
	for (size_t i = 0; i < v->doc.ns && n > 0 && (size_t)n < len; i++)
		if (i != slot && !v->doc.s[i].ready) {
			n += snprintf(buf + n, len - (size_t)n, "%s%s", sep,
				      v->doc.s[i].spec);
			sep = ", ";
		}
}

/* Keep a box of size w x h inside the window, near (x, y). */
static void place(const struct viewer *v, struct as_render_overlay *b,
		  double x, double y)
{
	double w, h;
	as_render_overlay_measure(b, &w, &h);
	if (x + w > v->win_w - 2)
		x = v->win_w - 2 - w;
	if (y + h > v->win_h - STATUS_H - 2)
		y = v->win_h - STATUS_H - 2 - h;
	b->x = x < 2 ? 2 : x;
	b->y = y < 2 ? 2 : y;
}

/*
 * The boxes painted over the picture in one frame and the text and line
 * colours they point at, which must live until as_render_overlay_argb32
 * has painted them. Painted in the order added: later boxes cover earlier.
 */
struct overlays {
	struct as_render_overlay box[10];
	size_t n;
	char status[2048], note[2048], tip[2048];
	char cursor[4096], peak[4096], vio[4096];
	uint32_t status_col[2];
	uint32_t cursor_col[CURSOR_LINES + 2];
	uint32_t peak_col[26];
	uint32_t vio_col[18];
};

/* The next box of `ov`, for the caller to fill. */
static struct as_render_overlay *add_box(struct overlays *ov)
{
	return &ov->box[ov->n++];
}

/* Draw the plot area (all but the status bar) into v->px: the renderer's
 * picture, or white while no plan is there to draw. */
static int paint_picture(struct viewer *v)
{
	int ph = (int)lround(view_pic_h(v) * v->scale);
	if (ph > v->px_h)
		ph = v->px_h;
	if (v->r)
		return as_render_draw_argb32(v->r, v->px, v->px_w, ph,
					     v->px_w * 4);
	for (int y = 0; y < ph; y++)
		for (int x = 0; x < v->px_w; x++)
			v->px[(size_t)y * (size_t)v->px_w + (size_t)x] =
				0xffffffffu;
	return AS_OK;
}

/* The status bar's second line into buf: the search prompt, else the last
 * message, the strategy's error, the planning progress, the first
 * violation or a reminder of the keys, in that order. Returns its colour. */
static uint32_t status_second_line(const struct viewer *v,
				   const struct strat *s, const char *prog,
				   char *buf, size_t len)
{
	if (v->typing) {
		snprintf(buf, len, "search: %s_   (Enter: find, Esc: cancel)",
			 v->query);
		return C_PROMPT;
	}
	if (v->msg[0]) {
		snprintf(buf, len, "%s%s%s", prog, prog[0] ? "   |   " : "",
			 v->msg);
		return v->msg_color ? v->msg_color : C_BAR_TEXT;
	}
	if (s->ready && s->err) {
		char et[1024];
		snprintf(buf, len, "%s%s%s", prog, prog[0] ? "   |   " : "",
			 as_diag_text(&s->diag, et, sizeof(et)));
		return doc_left_out(s) ? C_PROMPT : C_RED_LIGHT;
	}
	if (prog[0]) {
		snprintf(buf, len, "%s", prog);
		return C_PROMPT;
	}
	if (view_shown(s) && !s->report.valid) {
		char vt[512];
		snprintf(buf, len, "INVALID: %llu violations; first: %s   "
			 "(v: list)", (unsigned long long)s->report.violations,
			 as_violation_text(v->doc.t, s->plan,
					   &s->report.first[0], vt, sizeof(vt)));
		return C_RED_LIGHT;
	}
	snprintf(buf, len, "? keys   wheel zoom   drag pan   f fit   Tab "
		 "strategy   c compare   p peak   / search");
	return 0xffaaaaaau;
}

/* The status bar: the facts of strategy s, then a message, prompt or its
 * first failure; the facts in red when its plan is invalid or failed. */
static void add_status_bar(struct viewer *v, const struct strat *s,
			   const char *prog, struct overlays *ov)
{
	char line1[1024], line2[1024];
	status_line(v, line1, sizeof(line1));
	uint32_t c2 = status_second_line(v, s, prog, line2, sizeof(line2));
	snprintf(ov->status, sizeof(ov->status), "%s\n%s", line1, line2);
	bool fine = !s->ready || doc_left_out(s) ||
		    (view_shown(s) && s->report.valid);
	ov->status_col[0] = fine ? C_BAR_TEXT : C_RED_LIGHT;
	ov->status_col[1] = c2;
	*add_box(ov) = (struct as_render_overlay){
		.x = 0, .y = v->win_h - STATUS_H, .w = v->win_w, .h = STATUS_H,
		.fill = C_BAR, .color = C_BAR_TEXT, .font_size = 12,
		.text = ov->status, .line_colors = ov->status_col,
		.nline_colors = 2,
	};
}

/* With no plan in view yet, a box in the middle saying what is being done
 * about it: planning, waiting, left out or failed. */
static void add_no_plan_note(const struct viewer *v, const struct strat *s,
			     const char *prog, struct overlays *ov)
{
	size_t slot;
	double ms;
	char et[1024];
	if (v->r)
		return;
	if (v->compare)
		snprintf(ov->note, sizeof(ov->note), "compare: no plan is "
			 "ready yet\n%s", prog);
	else if (s->ready)
		snprintf(ov->note, sizeof(ov->note), "%s %s\n%s", s->spec,
			 doc_left_out(s) ? "left out" : "failed",
			 as_diag_text(&s->diag, et, sizeof(et)));
	else if (doc_planning(&v->doc, &slot, &ms) &&
		 slot == (size_t)(s - v->doc.s))
		snprintf(ov->note, sizeof(ov->note), "planning %s... %.0f s\n"
			 "%zu of %zu plans ready: Tab or 1-9 shows another "
			 "strategy", s->spec, ms / 1000, v->doc.nready,
			 v->doc.ns);
	else
		snprintf(ov->note, sizeof(ov->note), "%s: waiting to be "
			 "planned\n%s", s->spec, prog);
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = C_BOX,
		.border = s->ready && !doc_left_out(s) ? C_RED : C_BORDER,
		.color = C_TEXT, .font_size = 14, .text = ov->note,
		.bold_first = true,
	};
	double w, h;
	as_render_overlay_measure(b, &w, &h);
	place(v, b, (v->win_w - w) / 2, (v->win_h - STATUS_H - h) / 2);
}

/* Time cursor (t), while the mouse is in a plot and not dragging: what is
 * live at its time, grouped, in the plot's top right corner. */
static void add_time_cursor(struct viewer *v, struct overlays *ov)
{
	if (!v->show_cursor || v->hover.panel < 0 || !v->hover.in_plot ||
	    v->dragging)
		return;
	size_t nl = cursor_text(v, ov->cursor, sizeof(ov->cursor),
				ov->cursor_col);
	struct as_render_panel_info info;
	if (!nl || as_render_panel_info(v->r, (size_t)v->hover.panel,
					&info) != AS_OK)
		return;
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = C_BOX, .border = C_BORDER, .color = C_TEXT,
		.font_size = 12, .text = ov->cursor, .bold_first = true,
		.line_colors = ov->cursor_col, .nline_colors = nl,
		.swatch = true,
	};
	double bw, bh;
	as_render_overlay_measure(b, &bw, &bh);
	place(v, b, info.x + info.w - bw - 8, info.y + 8);
}

/* The tooltip of the buffer under the mouse, below and right of it. */
static void add_tooltip(const struct viewer *v, struct overlays *ov)
{
	if (v->hover.panel < 0 || v->hover.buffer == AS_NONE || v->dragging)
		return;
	as_render_buffer_text(v->r, (size_t)v->hover.panel, v->hover.buffer,
			      ov->tip, sizeof(ov->tip));
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = C_BOX, .border = C_BORDER, .color = C_TEXT,
		.font_size = 12, .text = ov->tip, .bold_first = true,
	};
	place(v, b, v->mx + 16, v->my + 16);
}

/* The peak list's text into buf: a title, then up to 24 of the buffers
 * live at the peak, largest first, each line's colour the buffer's in
 * cols[line]. Returns how many buffers it names. */
static size_t peak_text(const struct viewer *v,
			const struct as_render_panel_info *info, char *buf,
			size_t len, uint32_t *cols)
{
	char hb[32];
	int n = snprintf(buf, len, "live at the peak (t %llu), largest first",
			 (unsigned long long)info->peak_time);
	size_t shown = (size_t)v->npeak < 24 ? (size_t)v->npeak : 24;
	for (size_t i = 0; i < shown && n > 0 && (size_t)n < len; i++) {
		uint32_t id = v->peak_bufs[i];
		const struct as_buffer *x = &v->doc.t->buffers[id];
		const char *xn = as_trace_buffer_name(v->doc.t, id);
		cols[i + 1] = 0xff000000u |
			      as_render_buffer_color(v->r, v->peak_panel, id);
		n += snprintf(buf + n, len - (size_t)n, "\n%-10s %.60s",
			      as_human_bytes(x->size, hb, sizeof(hb)),
			      xn ? xn : "?");
	}
	if ((size_t)v->npeak > shown && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "\n... and %lld more",
			 (long long)v->npeak - (long long)shown);
	return shown;
}

/* The buffers live at the peak (p), in the top left corner of its plot,
 * cut by lines until it fits there rather than cover the next panel's
 * title. */
static void add_peak_list(const struct viewer *v, struct overlays *ov)
{
	if (!v->show_peak || v->npeak < 0)
		return;
	struct as_render_panel_info info;
	as_render_panel_info(v->r, v->peak_panel, &info);
	size_t shown = peak_text(v, &info, ov->peak, sizeof(ov->peak),
				 ov->peak_col);
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = C_BOX, .border = C_BORDER, .color = C_TEXT,
		.font_size = 12, .text = ov->peak, .bold_first = true,
		.line_colors = ov->peak_col, .nline_colors = shown + 1,
		.swatch = true,
	};
	double bw, bh;
	as_render_overlay_measure(b, &bw, &bh);
	while (bh > info.h - 16 && b->nline_colors > 2) {
		char *nl = strrchr(ov->peak, '\n');
		if (!nl)
			break;
		*nl = 0;
		b->nline_colors--;
		as_render_overlay_measure(b, &bw, &bh);
	}
	place(v, b, info.x + 8, info.y + 8);
}

/* The validation failures of strategy s (v), in red, when it has a plan. */
static void add_violations(const struct viewer *v,
			   const struct strat *s, struct overlays *ov)
{
	if (!v->show_violations || !view_shown(s))
		return;
	char *buf = ov->vio;
	size_t len = sizeof(ov->vio);
	int n;
	if (s->report.valid)
		n = snprintf(buf, len, "%s: valid, no violations", s->spec);
	else
		n = snprintf(buf, len, "%s: %llu violations (%llu overlaps)",
			     s->spec, (unsigned long long)s->report.violations,
			     (unsigned long long)s->report.overlaps);
	for (uint32_t i = 0; i < s->report.nfirst && n > 0 && (size_t)n < len;
	     i++) {
		char vt[512];
		ov->vio_col[i + 1] = C_RED;
		n += snprintf(buf + n, len - (size_t)n, "\n%s",
			      as_violation_text(v->doc.t, s->plan,
						&s->report.first[i], vt,
						sizeof(vt)));
	}
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = C_BOX, .border = C_RED, .color = C_TEXT,
		.font_size = 12, .text = buf, .bold_first = true,
		.line_colors = ov->vio_col, .nline_colors = 17,
	};
	place(v, b, 60, 40);
}

/* The keys (?), in the middle of the picture. */
static void add_help(const struct viewer *v, struct overlays *ov)
{
	if (!v->help)
		return;
	struct as_render_overlay *b = add_box(ov);
	*b = (struct as_render_overlay){
		.fill = 0xf8ffffffu, .border = C_BORDER, .color = C_TEXT,
		.font_size = 13, .text = help_text, .bold_first = true,
		.tab = 190,
	};
	double w, h;
	as_render_overlay_measure(b, &w, &h);
	place(v, b, (v->win_w - w) / 2, (v->win_h - STATUS_H - h) / 2);
}

int view_paint(struct viewer *v)
{
	if (!v->px)
		return AS_EINVAL;
	/* A mouse move leaves its hit test to here; a drag does none. */
	if (v->hover_stale && !v->dragging)
		view_update_hover(v);
	v->hover_stale = v->dragging && v->hover_stale;

	double freq = (double)SDL_GetPerformanceFrequency();
	Uint64 c0 = SDL_GetPerformanceCounter();
	int err = paint_picture(v);
	if (err)
		return err;
	Uint64 c1 = SDL_GetPerformanceCounter();
	v->draw_ms = (double)(c1 - c0) * 1000.0 / freq;

	struct overlays ov = {.n = 0}; /* line colours not set are 0 */
	const struct strat *s = view_strat_of_panel(v, v->hover.panel);
	char prog[512];
	progress(v, prog, sizeof(prog));
	add_status_bar(v, s, prog, &ov);
	add_no_plan_note(v, s, prog, &ov);
	add_time_cursor(v, &ov);
	add_tooltip(v, &ov);
	add_peak_list(v, &ov);
	add_violations(v, s, &ov);
	add_help(v, &ov);
	err = as_render_overlay_argb32(v->px, v->px_w, v->px_h, v->px_w * 4,
				       v->scale, ov.box, ov.n);
	v->overlay_ms = (double)(SDL_GetPerformanceCounter() - c1) * 1000.0 /
			freq;
	v->dirty = false;
	return err;
}
