/*
 * Output dispatch: the one place that picks a backend. The picture goes
 * to a cairo_t or caller-owned pixels (cairo backend), to a PNG or SVG
 * stream, or to a file written whole or not at all. Backends only paint
 * what render_emit gives them; none of them calls back into layout.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

/* Emit to a canvas and finish it; the first error wins. */
static int emit_cairo(struct as_render *r, struct canvas *c)
{
	int err = as_r_render_emit(r, c);
	int ferr = as_r_cairo_canvas_finish(c);
	return err ? err : ferr;
}

int as_render_draw_cairo(struct as_render *r, void *cr)
{
	if (!r || !cr)
		return AS_EINVAL;
	struct canvas *c = as_r_cairo_canvas_create(cr);
	if (!c)
		return AS_ENOMEM;
	int err = emit_cairo(r, c);
	as_r_cairo_canvas_destroy(c);
	return err;
}

int as_render_draw_argb32(struct as_render *r, uint32_t *pixels, int width,
			  int height, int stride)
{
	if (!r || !pixels || width <= 0 || height <= 0 || stride < width * 4)
		return AS_EINVAL;
	struct canvas *c = as_r_cairo_canvas_create_pixels(
		pixels, width, height, stride, (double)width / r->o.width,
		(double)height / r->o.height);
	if (!c)
		return AS_EINVAL;
	int err = emit_cairo(r, c);
	as_r_cairo_canvas_destroy(c);
	return err;
}

int as_r_output_open(const char *path, struct as_atomic **at, FILE **f,
		     struct as_diag *diag)
{
	int err = as_atomic_open(path, at, f);
	return err ? as_diag_set(diag, 0, err, "cannot write: %s",
				 strerror(errno))
		   : AS_OK;
}

int as_r_output_commit(struct as_atomic *at, struct as_diag *diag)
{
	int err = as_atomic_commit(at);
	return err ? as_diag_set(diag, 0, err, "write failed: %s",
				 strerror(errno))
		   : AS_OK;
}

static int png_write(struct as_render *r, FILE *f)
{
	double scale = r->o.scale;
	int pw = (int)(r->o.width * scale + 0.5);
	int ph = (int)(r->o.height * scale + 0.5);
	struct canvas *c = as_r_cairo_canvas_create_image(pw, ph, scale);
	if (!c)
		return AS_ENOMEM;
	int err = emit_cairo(r, c);
	if (!err)
		err = as_r_cairo_canvas_write_png(c, f);
	as_r_cairo_canvas_destroy(c);
	return err;
}

int as_render_write_stream(struct as_render *r, FILE *f,
			   enum as_image_format fmt)
{
	if (!r || !f || fmt == AS_IMAGE_AUTO)
		return AS_EINVAL;
	if (fmt == AS_IMAGE_PNG)
		return png_write(r, f);
	struct canvas *c = as_r_svg_canvas_create(f, r->o.width, r->o.height);
	if (!c)
		return AS_ENOMEM;
	int err = as_r_render_emit(r, c);
	int ferr = as_r_svg_canvas_finish(c);
	as_r_svg_canvas_destroy(c);
	return err ? err : ferr;
}

int as_render_write(struct as_render *r, const char *path,
		    enum as_image_format fmt, struct as_diag *diag)
{
	struct as_atomic *at = NULL;
	FILE *f = NULL;
	if (diag) {
		snprintf(diag->file, sizeof(diag->file), "%s", path ? path : "");
		diag->line = 0;
	}
	if (!r || !path)
		return as_diag_set(diag, 0, AS_EINVAL, "no picture to write");
	if (fmt == AS_IMAGE_AUTO && as_image_format_from_path(path, &fmt))
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cannot tell the image format: use a .png "
				   "or .svg file name");
	int err = as_r_output_open(path, &at, &f, diag);
	if (err)
		return err;
	errno = 0;
	err = as_render_write_stream(r, f, fmt);
	if (err) {
		/* A write that failed says why (a full disk), not "I/O". */
		int e = errno;
		bool wrote = err == AS_EIO && (ferror(f) || e);
		as_atomic_abort(at);
		if (wrote)
			return as_diag_set(diag, 0, err, "write failed: %s",
					   strerror(e ? e : EIO));
		return as_diag_set(diag, 0, err, "cannot draw the picture: %s",
				   as_strerror(err));
	}
	return as_r_output_commit(at, diag);
}

int as_render_file(const char *path, enum as_image_format fmt,
		   const struct as_render_panel *panels, size_t n,
		   const struct as_render_opts *o, struct as_diag *diag)
{
	struct as_render *r = NULL;
	if (diag) {
		snprintf(diag->file, sizeof(diag->file), "%s", path ? path : "");
		diag->line = 0;
	}
	if (fmt == AS_IMAGE_AUTO && as_image_format_from_path(path, &fmt))
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cannot tell the image format: use a .png "
				   "or .svg file name");
	int err = as_render_create(panels, n, o, &r, diag);
	if (err)
		return err;
	err = as_render_write(r, path, fmt, diag);
	as_render_destroy(r);
	return err;
}
