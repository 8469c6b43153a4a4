/*
 * Private: the renderer's drawing surface. render.c computes all geometry
 * (layout, axes, level of detail) once and emits primitives to a canvas;
 * render_cairo.c paints them with cairo (PNG, pixels, any cairo_t) and
 * render_svg.c writes them as SVG text. Both backends see the same
 * coordinates, so PNG and SVG show the same picture.
 *
 * Colours are 0xAARRGGBB, not premultiplied; alpha 0 means "none".
 * Coordinates are logical pixels, y down.
 */
#ifndef AS_RENDER_PRIVATE_H
#define AS_RENDER_PRIVATE_H

#include "allocscope/render.h"

enum { ANCHOR_START, ANCHOR_MIDDLE, ANCHOR_END };

struct canvas;

struct canvas_impl {
	/* A filled and/or stroked rectangle; `title` (may be NULL) is the
	 * tooltip a backend may attach. */
	void (*rect)(struct canvas *c, double x, double y, double w, double h,
		     uint32_t fill, uint32_t stroke, double stroke_width,
		     const char *title);
	/* A straight line; dash > 0 draws dashes of that length. */
	void (*line)(struct canvas *c, double x0, double y0, double x1,
		     double y1, uint32_t color, double width, double dash);
	/* A polygon (closed) or polyline (open) of n points. */
	void (*poly)(struct canvas *c, const double *xy, int n, bool closed,
		     uint32_t fill, uint32_t stroke, double stroke_width);
	/* Text at baseline y; `s` is valid UTF-8 without control bytes. */
	void (*text)(struct canvas *c, double x, double y, const char *s,
		     double size, bool bold, uint32_t color, int anchor);
	/* A w x h raster (premultiplied ARGB32, native order, w*4 stride)
	 * drawn at (x, y) one cell per logical pixel. */
	void (*image)(struct canvas *c, double x, double y, int w, int h,
		      const uint32_t *argb);
	/* Groups (SVG <g>), for structure only. */
	void (*begin_group)(struct canvas *c, const char *cls);
	void (*end_group)(struct canvas *c);
};

struct canvas {
	const struct canvas_impl *impl;
	bool wants_titles;
};

/* render_cairo.c */

/* Text measurement shared by layout and every backend. */
struct measurer;
struct measurer *measurer_create(void);
void measurer_destroy(struct measurer *m);
double measure_text(struct measurer *m, const char *s, double size,
		    bool bold);

/* A canvas painting into a cairo_t (not owned). */
struct canvas *cairo_canvas_create(void *cr);
void cairo_canvas_destroy(struct canvas *c);

/* Render to a PNG stream: w x h logical pixels times scale. */
int png_write(struct as_render *r, FILE *f, int w, int h, double scale);

/* Encode a premultiplied ARGB32 raster as PNG into a malloc'd buffer. */
int png_encode(const uint32_t *argb, int w, int h, unsigned char **out,
	       size_t *len);

/* render_svg.c */

struct canvas *svg_canvas_create(FILE *f, int width, int height);
/* Finish the document; returns AS_EIO if writing failed. */
int svg_canvas_finish(struct canvas *c);
void svg_canvas_destroy(struct canvas *c);

/* render.c */

/* Emit the whole picture to a canvas. */
int render_emit(struct as_render *r, struct canvas *c);

/* Copy `s` into buf as valid UTF-8 without control characters. */
const char *render_clean_text(const char *s, char *buf, size_t len);

#endif
