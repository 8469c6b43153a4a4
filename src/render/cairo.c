/*
 * The cairo backend of the renderer: paints canvas primitives into any
 * cairo_t, measures text, and writes PNG. With render_svg.c (which uses
 * cairo only to encode the density raster) this is the only place cairo
 * appears.
 */
#include <errno.h>
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

#define FONT_FACE "DejaVu Sans"

struct cairo_canvas {
	struct canvas base;
	cairo_t *cr;
	cairo_surface_t *own; /* the image drawn into, when the canvas made it */
};

static void set_color(cairo_t *cr, uint32_t c)
{
	cairo_set_source_rgba(cr, ((c >> 16) & 0xff) / 255.0,
			      ((c >> 8) & 0xff) / 255.0, (c & 0xff) / 255.0,
			      (c >> 24) / 255.0);
}

static void select_font(cairo_t *cr, double size, bool bold)
{
	cairo_select_font_face(cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD
				    : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

static void c_rect(struct canvas *c, double x, double y, double w, double h,
		   uint32_t fill, uint32_t stroke, double sw, const char *title)
{
	cairo_t *cr = ((struct cairo_canvas *)c)->cr;
	if (fill >> 24) {
		set_color(cr, fill);
		cairo_rectangle(cr, x, y, w, h);
		cairo_fill(cr);
	}
	if ((stroke >> 24) && sw > 0 && w > sw && h > sw) {
		set_color(cr, stroke);
		cairo_set_line_width(cr, sw);
		cairo_set_dash(cr, NULL, 0, 0);
		cairo_rectangle(cr, x + sw / 2, y + sw / 2, w - sw, h - sw);
		cairo_stroke(cr);
	}
}

static void c_line(struct canvas *c, double x0, double y0, double x1,
		   double y1, uint32_t color, double width, double dash)
{
	cairo_t *cr = ((struct cairo_canvas *)c)->cr;
	set_color(cr, color);
	cairo_set_line_width(cr, width);
	if (dash > 0) {
		double d[2] = {dash, dash};
		cairo_set_dash(cr, d, 2, 0);
	} else {
		cairo_set_dash(cr, NULL, 0, 0);
	}
	cairo_move_to(cr, x0, y0);
	cairo_line_to(cr, x1, y1);
	cairo_stroke(cr);
	cairo_set_dash(cr, NULL, 0, 0);
}

static void c_poly(struct canvas *c, const double *xy, int n, bool closed,
		   uint32_t fill, uint32_t stroke, double sw)
{
	cairo_t *cr = ((struct cairo_canvas *)c)->cr;
	if (n < 2)
		return;
	cairo_new_path(cr);
	cairo_move_to(cr, xy[0], xy[1]);
	for (int i = 1; i < n; i++)
		cairo_line_to(cr, xy[2 * i], xy[2 * i + 1]);
	if (closed)
		cairo_close_path(cr);
	if (closed && (fill >> 24)) {
		set_color(cr, fill);
		cairo_fill_preserve(cr);
	}
	if ((stroke >> 24) && sw > 0) {
		set_color(cr, stroke);
		cairo_set_line_width(cr, sw);
		cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
		cairo_stroke_preserve(cr);
	}
	cairo_new_path(cr);
}

static void c_text(struct canvas *c, double x, double y, const char *s,
		   double size, bool bold, uint32_t color, int anchor)
{
	cairo_t *cr = ((struct cairo_canvas *)c)->cr;
	select_font(cr, size, bold);
	if (anchor != ANCHOR_START) {
		cairo_text_extents_t e;
		cairo_text_extents(cr, s, &e);
		x -= anchor == ANCHOR_MIDDLE ? e.x_advance / 2 : e.x_advance;
	}
	set_color(cr, color);
	cairo_move_to(cr, x, y);
	cairo_show_text(cr, s);
	cairo_new_path(cr);
}

static void c_image(struct canvas *c, double x, double y, int w, int h,
		    const uint32_t *argb)
{
	cairo_t *cr = ((struct cairo_canvas *)c)->cr;
	/* cairo only reads a source surface; the cast does not write. */
	cairo_surface_t *s = cairo_image_surface_create_for_data(
		(unsigned char *)(uintptr_t)argb, CAIRO_FORMAT_ARGB32, w, h,
		w * 4);
	if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
		cairo_save(cr);
		cairo_set_source_surface(cr, s, x, y);
		cairo_pattern_set_filter(cairo_get_source(cr),
					 CAIRO_FILTER_NEAREST);
		cairo_rectangle(cr, x, y, w, h);
		cairo_fill(cr);
		cairo_restore(cr);
	}
	cairo_surface_destroy(s);
}

static void c_begin_group(struct canvas *c, const char *cls) {}
static void c_end_group(struct canvas *c) {}

static const struct canvas_impl cairo_impl = {
	.rect = c_rect,
	.line = c_line,
	.poly = c_poly,
	.text = c_text,
	.image = c_image,
	.begin_group = c_begin_group,
	.end_group = c_end_group,
};

struct canvas *as_r_cairo_canvas_create(void *cr)
{
	struct cairo_canvas *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->base.impl = &cairo_impl;
	c->cr = cr;
	cairo_save(c->cr);
	return &c->base;
}

/* A canvas over an image surface it owns, user space scaled by sx, sy. */
static struct canvas *canvas_on(cairo_surface_t *s, double sx, double sy)
{
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(s);
		return NULL;
	}
	cairo_t *cr = cairo_create(s);
	cairo_scale(cr, sx, sy);
	struct cairo_canvas *c = (struct cairo_canvas *)(void *)
		as_r_cairo_canvas_create(cr);
	if (!c) {
		cairo_destroy(cr);
		cairo_surface_destroy(s);
		return NULL;
	}
	c->own = s;
	return &c->base;
}

struct canvas *as_r_cairo_canvas_create_pixels(uint32_t *pixels, int width,
					  int height, int stride, double sx,
					  double sy)
{
	return canvas_on(cairo_image_surface_create_for_data(
				 (unsigned char *)pixels, CAIRO_FORMAT_ARGB32,
				 width, height, stride),
			 sx, sy);
}

struct canvas *as_r_cairo_canvas_create_image(int width, int height, double scale)
{
	return canvas_on(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width,
						    height),
			 scale, scale);
}

int as_r_cairo_canvas_finish(struct canvas *c)
{
	struct cairo_canvas *cc = (struct cairo_canvas *)(void *)c;
	cairo_restore(cc->cr);
	cairo_status_t st = cairo_status(cc->cr);
	if (cc->own)
		cairo_surface_flush(cc->own);
	if (st == CAIRO_STATUS_SUCCESS)
		return AS_OK;
	return st == CAIRO_STATUS_NO_MEMORY ? AS_ENOMEM : AS_EIO;
}

/* A PNG's destination: the stream, and the errno of its first failed
 * write (cairo keeps only "write error"). */
struct png_sink {
	FILE *f;
	int err;
};

static cairo_status_t write_file(void *closure, const unsigned char *data,
				 unsigned int len)
{
	struct png_sink *k = closure;
	if (fwrite(data, 1, len, k->f) == len)
		return CAIRO_STATUS_SUCCESS;
	if (!k->err)
		k->err = errno ? errno : EIO;
	return CAIRO_STATUS_WRITE_ERROR;
}

/* Surface s as PNG into f: AS_OK, or AS_EIO with errno the failed write's
 * (AS_ENOMEM: out of memory). */
static int write_png(cairo_surface_t *s, FILE *f)
{
	struct png_sink k = {f, 0};
	errno = 0;
	cairo_status_t st = cairo_surface_write_to_png_stream(s, write_file, &k);
	if (st == CAIRO_STATUS_SUCCESS)
		return AS_OK;
	if (st == CAIRO_STATUS_NO_MEMORY)
		return AS_ENOMEM;
	errno = k.err ? k.err : EIO;
	return AS_EIO;
}

int as_r_cairo_canvas_write_png(struct canvas *c, FILE *f)
{
	struct cairo_canvas *cc = (struct cairo_canvas *)(void *)c;
	if (!cc->own)
		return AS_EINVAL;
	return write_png(cc->own, f);
}

void as_r_cairo_canvas_destroy(struct canvas *c)
{
	struct cairo_canvas *cc = (struct cairo_canvas *)(void *)c;
	if (!cc)
		return;
	if (cc->own) {
		cairo_destroy(cc->cr);
		cairo_surface_destroy(cc->own);
	}
	free(cc);
}

struct measurer {
	cairo_surface_t *s;
	cairo_t *cr;
};

struct measurer *as_r_measurer_create(void)
{
	struct measurer *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
	m->cr = cairo_create(m->s);
	if (cairo_status(m->cr) != CAIRO_STATUS_SUCCESS) {
		as_r_measurer_destroy(m);
		return NULL;
	}
	return m;
}

void as_r_measurer_destroy(struct measurer *m)
{
	if (!m)
		return;
	if (m->cr)
		cairo_destroy(m->cr);
	if (m->s)
		cairo_surface_destroy(m->s);
	free(m);
}

double as_r_measure_text(struct measurer *m, const char *s, double size,
		    bool bold)
{
	cairo_text_extents_t e;
	select_font(m->cr, size, bold);
	cairo_text_extents(m->cr, s, &e);
	return e.x_advance;
}

struct membuf {
	unsigned char *p;
	size_t len, cap;
};

static cairo_status_t write_mem(void *closure, const unsigned char *data,
				unsigned int len)
{
	struct membuf *m = closure;
	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4096;
		while (cap < m->len + len)
			cap *= 2;
		unsigned char *p = realloc(m->p, cap);
		if (!p)
			return CAIRO_STATUS_NO_MEMORY;
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->len, data, len);
	m->len += len;
	return CAIRO_STATUS_SUCCESS;
}

int as_r_png_encode(const uint32_t *argb, int w, int h, unsigned char **out,
	       size_t *len)
{
	struct membuf m = {0};
	cairo_surface_t *s = cairo_image_surface_create_for_data(
		(unsigned char *)(uintptr_t)argb, CAIRO_FORMAT_ARGB32, w, h,
		w * 4);
	cairo_status_t st = cairo_surface_status(s);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_write_to_png_stream(s, write_mem, &m);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS) {
		free(m.p);
		return st == CAIRO_STATUS_NO_MEMORY ? AS_ENOMEM : AS_EIO;
	}
	*out = m.p;
	*len = m.len;
	return AS_OK;
}

/* ---- Window overlays ---- */

#define OV_PAD 6.0
#define OV_SWATCH 10.0

static double ov_size(const struct as_render_overlay *b)
{
	return b->font_size > 0 ? b->font_size : 12.0;
}

/* The next line of text, as clean UTF-8 in buf and, after a tab, in col2
 * (else ""); returns the rest of the text or NULL. */
static const char *ov_line(const char *s, char *buf, size_t len, char *col2,
			   size_t len2)
{
	const char *nl = strchr(s, '\n');
	size_t l = nl ? (size_t)(nl - s) : strlen(s);
	char raw[512];
	if (l >= sizeof(raw))
		l = sizeof(raw) - 1;
	memcpy(raw, s, l);
	raw[l] = 0;
	char *tab = strchr(raw, '\t');
	col2[0] = 0;
	if (tab) {
		*tab = 0;
		as_r_render_clean_text(tab + 1, col2, len2);
	}
	as_r_render_clean_text(raw, buf, len);
	return nl ? nl + 1 : NULL;
}

static uint32_t ov_line_color(const struct as_render_overlay *b, size_t k)
{
	return k < b->nline_colors && b->line_colors[k] ? b->line_colors[k]
							  : 0;
}

/* Measure with `cr`: widest line and line count. */
static void ov_measure(cairo_t *cr, const struct as_render_overlay *b,
		       double *w, double *h)
{
	double size = ov_size(b), widest = 0;
	size_t lines = 0;
	for (const char *s = b->text; s && *s; lines++) {
		char line[768], col2[768];
		s = ov_line(s, line, sizeof(line), col2, sizeof(col2));
		select_font(cr, size, b->bold_first && lines == 0);
		cairo_text_extents_t e;
		cairo_text_extents(cr, line, &e);
		double lw = e.x_advance;
		if (col2[0] && b->tab > 0) {
			cairo_text_extents(cr, col2, &e);
			lw = b->tab + e.x_advance;
		}
		lw +=
			    (b->swatch && ov_line_color(b, lines) ? OV_SWATCH + 4
								   : 0);
		if (lw > widest)
			widest = lw;
	}
	*w = b->w > 0 ? b->w : ceil(widest + 2 * OV_PAD);
	*h = b->h > 0 ? b->h : ceil((double)lines * size * 1.35 + 2 * OV_PAD - size * 0.35);
}

int as_render_overlay_measure(const struct as_render_overlay *b, double *w,
			      double *h)
{
	if (!b || !w || !h)
		return AS_EINVAL;
	struct measurer *m = as_r_measurer_create();
	if (!m)
		return AS_ENOMEM;
	ov_measure(m->cr, b, w, h);
	as_r_measurer_destroy(m);
	return AS_OK;
}

static void ov_paint(cairo_t *cr, const struct as_render_overlay *b)
{
	double w, h, size = ov_size(b);
	ov_measure(cr, b, &w, &h);
	if (b->fill >> 24) {
		set_color(cr, b->fill);
		cairo_rectangle(cr, b->x, b->y, w, h);
		cairo_fill(cr);
	}
	if (b->border >> 24) {
		set_color(cr, b->border);
		cairo_set_line_width(cr, 1);
		cairo_rectangle(cr, b->x + 0.5, b->y + 0.5, w - 1, h - 1);
		cairo_stroke(cr);
	}
	cairo_save(cr);
	cairo_rectangle(cr, b->x, b->y, w, h);
	cairo_clip(cr);
	double y = b->y + OV_PAD + size * 0.8;
	size_t k = 0;
	for (const char *s = b->text; s && *s; k++, y += size * 1.35) {
		char line[768], col2[768];
		s = ov_line(s, line, sizeof(line), col2, sizeof(col2));
		double x = b->x + OV_PAD;
		uint32_t lc = ov_line_color(b, k), tc = b->color;
		if (lc && b->swatch) {
			set_color(cr, lc);
			cairo_rectangle(cr, x, y - OV_SWATCH + 1, OV_SWATCH,
					OV_SWATCH);
			cairo_fill(cr);
			x += OV_SWATCH + 4;
		} else if (lc) {
			tc = lc;
		}
		select_font(cr, size, b->bold_first && k == 0);
		set_color(cr, tc);
		cairo_move_to(cr, x, y);
		cairo_show_text(cr, line);
		if (col2[0] && b->tab > 0) {
			cairo_move_to(cr, x + b->tab, y);
			cairo_show_text(cr, col2);
		}
		cairo_new_path(cr);
	}
	cairo_restore(cr);
}

int as_render_overlay_argb32(uint32_t *pixels, int width, int height,
			     int stride, double scale,
			     const struct as_render_overlay *boxes, size_t n)
{
	if (!pixels || width <= 0 || height <= 0 || stride < width * 4 ||
	    !(scale > 0) || (n && !boxes))
		return AS_EINVAL;
	cairo_surface_t *s = cairo_image_surface_create_for_data(
		(unsigned char *)pixels, CAIRO_FORMAT_ARGB32, width, height,
		stride);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(s);
		return AS_EINVAL;
	}
	cairo_t *cr = cairo_create(s);
	cairo_scale(cr, scale, scale);
	for (size_t i = 0; i < n; i++)
		ov_paint(cr, &boxes[i]);
	int err = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? AS_OK : AS_ENOMEM;
	cairo_destroy(cr);
	cairo_surface_flush(s);
	cairo_surface_destroy(s);
	return err;
}

int as_render_write_png_argb32(const char *path, const uint32_t *pixels,
			       int width, int height, int stride,
			       struct as_diag *diag)
{
	if (diag) {
		snprintf(diag->file, sizeof(diag->file), "%s", path ? path : "");
		diag->line = 0;
	}
	if (!path || !pixels || width <= 0 || height <= 0 ||
	    stride < width * 4)
		return as_diag_set(diag, 0, AS_EINVAL, "no pixels to write");
	cairo_surface_t *s = cairo_image_surface_create_for_data(
		(unsigned char *)(uintptr_t)pixels, CAIRO_FORMAT_ARGB32, width,
		height, stride);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(s);
		return as_diag_set(diag, 0, AS_EINVAL, "bad pixel buffer");
	}
	struct as_atomic *at = NULL;
	FILE *f = NULL;
	int err = as_r_output_open(path, &at, &f, diag);
	if (err) {
		cairo_surface_destroy(s);
		return err;
	}
	if ((err = write_png(s, f)) != AS_OK) {
		int e = errno;
		cairo_surface_destroy(s);
		as_atomic_abort(at);
		return err == AS_EIO ? as_diag_set(diag, 0, err,
						   "write failed: %s",
						   strerror(e))
				     : as_diag_set(diag, 0, err,
						   "cannot write the PNG: %s",
						   as_strerror(err));
	}
	cairo_surface_destroy(s);
	return as_r_output_commit(at, diag);
}
