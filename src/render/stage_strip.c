/*
 * Annotation stages (the trace's stages: record_function / NVTX ranges of
 * a PyTorch snapshot) as labelled bands on the shared time axis: a strip
 * under the last panel, one row per nesting lane (per space when several
 * spaces have stages), each stage a pale band from its start to its end
 * with its name where it fits (SVG: a tooltip with its steps). Traces
 * without stages get no strip: their pictures do not change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_private.h"

#define STAGE_ROW 15     /* pixels a row */
#define STAGE_ROWS_MAX 6 /* rows at most; deeper lanes share the last */
#define STAGE_LANES 3    /* lanes a space shows when several have stages */

static const uint32_t band_colors[] = {
	0xffdbe9f6u, 0xfffde2c4u, 0xffd9f0d3u, 0xffe8dcf0u,
	0xfff6dbe1u, 0xfffff2c2u,
};

/* Lanes a space shows: all (up to the rows) with one space of stages,
 * STAGE_LANES each with several. */
static int lanes_per_space(const struct as_trace *t)
{
	for (uint32_t i = 1; i < t->nstages; i++)
		if (t->stages[i].space != t->stages[0].space)
			return STAGE_LANES;
	return STAGE_ROWS_MAX;
}

/*
 * Walk the stages (by space) giving each its row: a space's lanes, the
 * spaces one after another, rows past the last shared by the last. With
 * `row` NULL, only the number of rows.
 */
static int stage_rows(const struct as_trace *t, int *row)
{
	int per = lanes_per_space(t), base = 0, depth = 0;
	for (uint32_t i = 0; i < t->nstages; i++) {
		if (i > 0 && t->stages[i].space != t->stages[i - 1].space) {
			base += depth;
			depth = 0;
		}
		int lane = t->stages[i].lane < per ? t->stages[i].lane : per - 1;
		depth = lane + 1 > depth ? lane + 1 : depth;
		if (row)
			row[i] = base + lane < STAGE_ROWS_MAX ? base + lane
							      : STAGE_ROWS_MAX - 1;
	}
	return base + depth < STAGE_ROWS_MAX ? base + depth : STAGE_ROWS_MAX;
}

int as_r_stages_height(const struct as_render *r)
{
	const struct as_trace *t = r->npanels ? r->panels[0].t : NULL;
	if (!t || !t->nstages)
		return 0;
	return STAGE_TITLE_H + stage_rows(t, NULL) * STAGE_ROW;
}

void as_r_emit_stages(struct as_render *r, struct canvas *c)
{
	if (!r->stage_h || !r->npanels)
		return;
	const struct panel *pn = &r->panels[r->npanels - 1];
	const struct as_trace *t = pn->t;
	const double X0 = pn->px, X1 = pn->px + pn->pw;
	const double Y0 = r->stage_y + STAGE_TITLE_H;
	int *row = malloc(sizeof(*row) * t->nstages);
	if (!row)
		return;
	int rows = stage_rows(t, row);
	bool spaces = lanes_per_space(t) == STAGE_LANES;
	c->impl->begin_group(c, "stages");
	TEXT(c, X0, r->stage_y + 11, "annotation stages", FS_SMALL, true,
	     C_TEXT, ANCHOR_START);
	RECT(c, X0, Y0, pn->pw, rows * STAGE_ROW, 0xfffafafau, 0, 0, NULL);
	for (uint32_t k = 0; k < t->nstages; k++) {
		const struct as_stage *s = &t->stages[k];
		double x0 = as_r_x_of(r, pn, as_r_rel_t(r, s->start));
		double x1 = as_r_x_of(r, pn, as_r_rel_t(r, s->end));
		if (x1 < X0 || x0 > X1)
			continue;
		x0 = x0 < X0 ? X0 : x0;
		x1 = x1 > X1 ? X1 : x1;
		if (x1 - x0 < 1)
			x1 = x0 + 1;
		double y = Y0 + row[k] * STAGE_ROW + 1;
		uint32_t fill = band_colors[as_hash_str(s->name) %
					    (sizeof(band_colors) /
					     sizeof(band_colors[0]))];
		char name[200], tip[320], fit[200];
		as_r_render_clean_text(s->name, name, sizeof(name));
		snprintf(tip, sizeof(tip), "%s%s%s: steps %llu to %llu%s", name,
			 spaces ? " on " : "",
			 spaces ? t->spaces[s->space].name : "",
			 (unsigned long long)s->start, (unsigned long long)s->end,
			 s->flags & AS_STAGE_NO_END     ? " (no END)"
			 : s->flags & AS_STAGE_NO_START ? " (no START)"
							: "");
		RECT(c, x0, y, x1 - x0, STAGE_ROW - 2, fill,
		     as_r_darker(fill), 0.8, tip);
		if (x1 - x0 >= 24) {
			as_r_fit_text(r->m, name, FS_SMALL, false, x1 - x0 - 6,
				      fit, sizeof(fit));
			if (fit[0])
				TEXT(c, x0 + 3, y + STAGE_ROW - 5, fit, FS_SMALL,
				     false, C_TEXT, ANCHOR_START);
		}
	}
	/* With several spaces, each one's name beside its first row. */
	for (uint32_t k = 0; spaces && k < t->nstages; k++)
		if (k == 0 || t->stages[k].space != t->stages[k - 1].space) {
			char sp[64];
			as_r_render_clean_text(t->spaces[t->stages[k].space].name,
					       sp, sizeof(sp));
			TEXT(c, X0 - 7, Y0 + row[k] * STAGE_ROW + STAGE_ROW - 4,
			     sp, FS_SMALL, false, C_TEXT2, ANCHOR_END);
		}
	RECT(c, X0 - 0.5, Y0 - 0.5, pn->pw + 1, rows * STAGE_ROW + 1, 0,
	     C_FRAME, 1, NULL);
	/* The time axis under the strip when no memory strip follows. */
	if (!r->mem_h) {
		struct tticks tt;
		as_r_time_ticks(r, pn, &tt);
		as_r_emit_time_axis(r, c, pn, &tt, Y0 + rows * STAGE_ROW, true);
	}
	c->impl->end_group(c);
	free(row);
}
