/*
 * The SVG backend of the renderer: writes canvas primitives as SVG text.
 *
 * Written by hand rather than through cairo's SVG surface so that large
 * rectangles can carry a <title> (a browser tooltip), text stays text, and
 * the output is byte-for-byte deterministic: numbers are printed from
 * integers (hundredths of a pixel), never through the locale.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_private.h"

struct svg_canvas {
	struct canvas base;
	FILE *f;
	int err;
};

/* Print v rounded to 0.01 without locale: "12", "12.5", "-0.25". */
static void put_num(FILE *f, double v)
{
	if (!isfinite(v))
		v = 0;
	long long q = llround(v * 100.0);
	if (q < 0) {
		putc('-', f);
		q = -q;
	}
	fprintf(f, "%lld", q / 100);
	int frac = (int)(q % 100);
	if (frac) {
		if (frac % 10)
			fprintf(f, ".%02d", frac);
		else
			fprintf(f, ".%d", frac / 10);
	}
}

static void put_attr_num(FILE *f, const char *name, double v)
{
	fprintf(f, " %s=\"", name);
	put_num(f, v);
	putc('"', f);
}

/* Text in an SVG element or attribute: XML's marks as entities. What the
 * renderer writes is clean already (as_r_render_clean_text: UTF-8, no
 * control byte), so nothing else needs escaping. */
static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: putc(*s, f);
		}
	}
}

static void put_color(FILE *f, const char *what, uint32_t c)
{
	fprintf(f, " %s=\"#%06x\"", what, (unsigned)(c & 0xffffff));
	unsigned a = c >> 24;
	if (a != 0xff) {
		fprintf(f, " %s-opacity=\"", what);
		put_num(f, a / 255.0);
		putc('"', f);
	}
}

static void s_rect(struct canvas *c, double x, double y, double w, double h,
		   uint32_t fill, uint32_t stroke, double sw, const char *title)
{
	FILE *f = ((struct svg_canvas *)c)->f;
	bool do_stroke = (stroke >> 24) && sw > 0 && w > sw && h > sw;
	if (!(fill >> 24) && !do_stroke)
		return;
	if (do_stroke) {
		/* The stroke lies inside the rectangle, as in the cairo
		 * backend; the fill under it is hidden either way. */
		x += sw / 2;
		y += sw / 2;
		w -= sw;
		h -= sw;
	}
	fputs("<rect", f);
	put_attr_num(f, "x", x);
	put_attr_num(f, "y", y);
	put_attr_num(f, "width", w);
	put_attr_num(f, "height", h);
	if (fill >> 24)
		put_color(f, "fill", fill);
	else
		fputs(" fill=\"none\"", f);
	if (do_stroke) {
		put_color(f, "stroke", stroke);
		put_attr_num(f, "stroke-width", sw);
	}
	if (title) {
		fputs("><title>", f);
		put_escaped(f, title);
		fputs("</title></rect>\n", f);
	} else {
		fputs("/>\n", f);
	}
}

static void s_line(struct canvas *c, double x0, double y0, double x1,
		   double y1, uint32_t color, double width, double dash)
{
	FILE *f = ((struct svg_canvas *)c)->f;
	fputs("<line", f);
	put_attr_num(f, "x1", x0);
	put_attr_num(f, "y1", y0);
	put_attr_num(f, "x2", x1);
	put_attr_num(f, "y2", y1);
	put_color(f, "stroke", color);
	put_attr_num(f, "stroke-width", width);
	if (dash > 0) {
		fputs(" stroke-dasharray=\"", f);
		put_num(f, dash);
		putc(' ', f);
		put_num(f, dash);
		putc('"', f);
	}
	fputs("/>\n", f);
}

static void s_poly(struct canvas *c, const double *xy, int n, bool closed,
		   uint32_t fill, uint32_t stroke, double sw)
{
	FILE *f = ((struct svg_canvas *)c)->f;
	if (n < 2)
		return;
	fputs(closed ? "<polygon points=\"" : "<polyline points=\"", f);
	for (int i = 0; i < n; i++) {
		if (i)
			putc(' ', f);
		put_num(f, xy[2 * i]);
		putc(',', f);
		put_num(f, xy[2 * i + 1]);
	}
	putc('"', f);
	if (closed && (fill >> 24))
		put_color(f, "fill", fill);
	else
		fputs(" fill=\"none\"", f);
	if ((stroke >> 24) && sw > 0) {
		put_color(f, "stroke", stroke);
		put_attr_num(f, "stroke-width", sw);
		fputs(" stroke-linejoin=\"round\"", f);
	}
	fputs("/>\n", f);
}

static void s_text(struct canvas *c, double x, double y, const char *s,
		   double size, bool bold, uint32_t color, int anchor)
{
	FILE *f = ((struct svg_canvas *)c)->f;
	fputs("<text", f);
	put_attr_num(f, "x", x);
	put_attr_num(f, "y", y);
	put_attr_num(f, "font-size", size);
	if (bold)
		fputs(" font-weight=\"bold\"", f);
	if (anchor == ANCHOR_MIDDLE)
		fputs(" text-anchor=\"middle\"", f);
	else if (anchor == ANCHOR_END)
		fputs(" text-anchor=\"end\"", f);
	put_color(f, "fill", color);
	putc('>', f);
	put_escaped(f, s);
	fputs("</text>\n", f);
}

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_base64(FILE *f, const unsigned char *p, size_t n)
{
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
			     p[i + 2];
		putc(b64[v >> 18], f);
		putc(b64[(v >> 12) & 63], f);
		putc(b64[(v >> 6) & 63], f);
		putc(b64[v & 63], f);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		putc(b64[v >> 18], f);
		putc(b64[(v >> 12) & 63], f);
		fputs("==", f);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		putc(b64[v >> 18], f);
		putc(b64[(v >> 12) & 63], f);
		putc(b64[(v >> 6) & 63], f);
		putc('=', f);
	}
}

static void s_image(struct canvas *c, double x, double y, int w, int h,
		    const uint32_t *argb)
{
	struct svg_canvas *sc = (struct svg_canvas *)c;
	unsigned char *png = NULL;
	size_t len = 0;
	int err = as_r_png_encode(argb, w, h, &png, &len);
	if (err != AS_OK) {
		sc->err = err;
		return;
	}
	fputs("<image", sc->f);
	put_attr_num(sc->f, "x", x);
	put_attr_num(sc->f, "y", y);
	put_attr_num(sc->f, "width", w);
	put_attr_num(sc->f, "height", h);
	fputs(" preserveAspectRatio=\"none\" style=\"image-rendering:"
	      "pixelated\" xlink:href=\"data:image/png;base64,",
	      sc->f);
	put_base64(sc->f, png, len);
	fputs("\"/>\n", sc->f);
	free(png);
}

static void s_begin_group(struct canvas *c, const char *cls)
{
	FILE *f = ((struct svg_canvas *)c)->f;
	if (cls) {
		fputs("<g class=\"", f);
		put_escaped(f, cls);
		fputs("\">\n", f);
	} else {
		fputs("<g>\n", f);
	}
}

static void s_end_group(struct canvas *c)
{
	fputs("</g>\n", ((struct svg_canvas *)c)->f);
}

static const struct canvas_impl svg_impl = {
	.rect = s_rect,
	.line = s_line,
	.poly = s_poly,
	.text = s_text,
	.image = s_image,
	.begin_group = s_begin_group,
	.end_group = s_end_group,
};

struct canvas *as_r_svg_canvas_create(FILE *f, int width, int height)
{
	struct svg_canvas *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->base.impl = &svg_impl;
	c->base.wants_titles = true;
	c->f = f;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n",
		width, height, width, height);
	return &c->base;
}

int as_r_svg_canvas_finish(struct canvas *c)
{
	struct svg_canvas *sc = (struct svg_canvas *)c;
	fputs("</svg>\n", sc->f);
	if (ferror(sc->f) && sc->err == AS_OK)
		sc->err = AS_EIO;
	return sc->err;
}

void as_r_svg_canvas_destroy(struct canvas *c)
{
	free(c);
}
