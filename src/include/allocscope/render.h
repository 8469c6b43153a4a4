/*
 * allocscope reports: one renderer that draws plans as pictures.
 *
 * A picture stacks one panel per plan (and per address space of a plan)
 * sharing the time axis: x is time, y is address, one rectangle per buffer,
 * with the plan's peak and the trace's lower bound as horizontal lines.
 * The same drawing code writes PNG and SVG files and paints a window (the
 * viewer draws into pixels it uploads as a texture), so what you see is
 * what you export.
 *
 * Ownership: a struct as_render keeps pointers to the traces, plans,
 * reports and titles it was created from; they must outlive it. Everything
 * else it allocates is released by as_render_destroy (which accepts NULL).
 * No function here prints; errors are negative AS_E* codes.
 *
 * cairo stays out of this header: as_render_draw_cairo takes the cairo_t
 * as a `void *`, and as_render_draw_argb32 needs no cairo at all.
 */
#ifndef ALLOCSCOPE_RENDER_H
#define ALLOCSCOPE_RENDER_H

#include "allocscope/allocscope.h"

enum as_image_format {
	AS_IMAGE_AUTO,    /* from the file name's extension */
	AS_IMAGE_PNG,
	AS_IMAGE_SVG,
};

/* ".png" or ".svg" (any case); AS_EINVAL for anything else. */
int as_image_format_from_path(const char *path, enum as_image_format *out);

/* What a rectangle's colour says. */
enum as_color_by {
	AS_COLOR_BUFFER,   /* a stable hash of the name: same tensor, same colour */
	AS_COLOR_SIZE,     /* size class (log2), sequential palette */
	AS_COLOR_SPACE,    /* pool, level or core */
	AS_COLOR_LIFETIME, /* lifetime length (log), sequential palette */
	AS_COLOR_PREFIX,   /* the name without its last part (as_render_group) */
	AS_COLOR_FRAME,    /* the first stack frame */
};

/* The group of buffer i of t (build.h's as_trace_group; enum as_group_by
 * in allocscope.h) as the picture prints it: control bytes as spaces,
 * bytes that are not UTF-8 as '?'; always terminated; returns buf. */
const char *as_render_group(const struct as_trace *t, uint32_t i,
			    enum as_group_by g, char *buf, size_t len);

/* "buffer", "size", "pool" (or "space"), "lifetime", "prefix", "frame";
 * AS_EINVAL otherwise. */
int as_color_by_from_name(const char *name, enum as_color_by *out);
const char *as_color_by_name(enum as_color_by c);

#define AS_RENDER_ALL_SPACES (-1)

/* One plan to draw. */
struct as_render_panel {
	const char *title;              /* e.g. the strategy spec */
	const struct as_trace *trace;
	const struct as_plan *plan;
	const struct as_report *report; /* NULL: the renderer validates */
	/* A space index, or AS_RENDER_ALL_SPACES: one panel per space used. */
	int space;
};

/*
 * The part of the picture shown. Time is in trace units; the address axis
 * is given as a fraction of each panel's whole axis (0 at the bottom, 1 at
 * its top), which stays meaningful when empty ranges are compressed.
 * A range whose end is not above its start means "everything".
 */
struct as_render_view {
	double t0, t1;
	double y0, y1;
};

/*
 * An online allocator's blocks at a time (as_strategy_walk_at), drawn as
 * a column at that time in drawn panel `panel`: free blocks red, blocks in
 * use outlined. The caller keeps the blocks.
 */
struct as_render_state {
	int panel;
	uint64_t time;
	const struct as_block *blocks;
	size_t nblocks;
};

struct as_render_opts {
	int width, height;      /* logical pixels; 0: 1280 x 800 */
	double scale;           /* device pixels per logical pixel (PNG), 1 */
	enum as_color_by color_by;
	struct as_render_view view;
	uint32_t highlight;     /* buffer drawn selected in every panel, or AS_NONE */
	bool compress;          /* compress huge empty address ranges */
	bool sidebar;           /* largest buffers at the peak, rounds chart */
	bool header;            /* a line naming the trace on top */
	bool memory;            /* memory over time under the plans */
	/* Label time by event index even when the trace has a recorded
	 * clock (t->clock; otherwise labels read ms and s). */
	bool time_events;
	/* Walk each online allocator (a panel titled with its spec) at its
	 * peak moment and draw its blocks there (a replay per panel). */
	bool walk_at_peak;
	/* Stops those walks (as_strategy_blocks_at) from another thread:
	 * as_render_create fails with AS_ECANCELED; NULL: none. */
	atomic_bool *cancel;
	const struct as_render_state *state; /* NULL: none */
	/*
	 * When > 0, each plot is at least this many pixels high and the
	 * picture grows taller as needed (height is then a minimum; read the
	 * final size back with as_render_get_opts). 0: exactly height.
	 */
	int min_plot_height;
	/*
	 * Bands over time in the memory panel: buffer i of the first trace
	 * is in group buffer_group[i] (< ngroups, named group_names[k]);
	 * the bytes live per group are stacked instead of the grey area.
	 * The front end fills them (e.g. as_explain_buffer_categories) and
	 * keeps them while the render uses them; NULL: no bands.
	 */
	const uint8_t *buffer_group;
	const char *const *group_names;
	uint32_t ngroups;
};

/* Defaults: 1280 x 800 exactly, colour by buffer, whole view, all extras
 * on. */
void as_render_opts_init(struct as_render_opts *o);

struct as_render;

/*
 * Prepare `n` panels (the array is copied; what it points to is not);
 * `o` may be NULL for the defaults. This validates plans without a report,
 * expands multi-space plans and builds the address axes: O(n log n) in the
 * buffers, done once. A struct as_render keeps caches between frames: use
 * it from one thread at a time.
 */
int as_render_create(const struct as_render_panel *panels, size_t n,
		     const struct as_render_opts *o, struct as_render **out,
		     struct as_diag *diag);
void as_render_destroy(struct as_render *r);

/* Change size, view, colouring or highlight; cheap (layout only). */
int as_render_set_opts(struct as_render *r, const struct as_render_opts *o);
const struct as_render_opts *as_render_get_opts(const struct as_render *r);

/* Drawn panels, after expanding spaces. */
size_t as_render_panel_count(const struct as_render *r);

struct as_render_panel_info {
	const char *title;
	uint32_t source;          /* index in the panels given to create */
	uint16_t space;
	const char *space_name;
	double x, y, w, h;        /* the plot area, logical pixels */
	uint64_t peak, lower_bound;
	uint64_t peak_time;       /* the peak moment (as_plan_peak_moment) */
	uint64_t lower_bound_time; /* a moment of the lower bound */
	uint32_t buffers, failed;
	bool valid;
	uint64_t violations;
	/* Frames drawn so far whose buffers were moved from the frame before
	 * (a pan by whole pixels: only the uncovered columns drawn), and
	 * frames whose buffers were all placed again. For benchmarks. */
	uint64_t frames_moved, frames_redrawn;
};

int as_render_panel_info(const struct as_render *r, size_t i,
			 struct as_render_panel_info *out);

/* What lies under a point of the picture (logical pixels). */
struct as_render_hit {
	int panel;          /* drawn panel index, -1: none */
	bool in_plot;       /* inside the plot area (else title, axis, sidebar) */
	uint32_t buffer;    /* buffer under the point, or AS_NONE */
	double time;        /* time at x (meaningful in_plot) */
	double axis;        /* address axis fraction at y */
	uint64_t address;   /* address at y; in a compressed break: its start */
	bool in_break;      /* y lies in a compressed empty range */
	/* On a panel whose offsets stand for recorded addresses (the trace's
	 * address map, a plan keeping the recorded offsets): the real address
	 * `address` stands for (as_trace_address_of). */
	bool has_real;
	uint64_t real_address;
};

/*
 * Hit-test (x, y). Picks the buffer drawn there; where small buffers are
 * merged into density columns, the one nearest the point within `slop`
 * pixels. Returns 0 (out filled, out->panel -1 outside every panel).
 */
int as_render_hit_test(const struct as_render *r, double x, double y,
		       double slop, struct as_render_hit *out);

/* Pixel position of (time, address) in drawn panel i; AS_EINVAL if out. */
int as_render_to_pixel(const struct as_render *r, size_t i, double time,
		       uint64_t address, double *x, double *y);

/*
 * The address axis fraction (as in struct as_render_view) of an address in
 * drawn panel i, to zoom onto a buffer; negative if there is no panel i.
 */
double as_render_axis_at(const struct as_render *r, size_t i,
			 uint64_t address);

/*
 * Buffers of drawn panel i live at `time` (placed ones), largest first;
 * writes at most `max` indices and returns how many are live in all
 * (negative on error).
 */
int64_t as_render_live_at(const struct as_render *r, size_t i, double time,
			  uint32_t *out, size_t max);

/* The colour (0xRRGGBB) buffer i has in drawn panel `panel`; 0 if none. */
uint32_t as_render_buffer_color(const struct as_render *r, size_t panel,
				uint32_t buffer);

/*
 * A buffer in words (name; size and offset, or FAILED; lifetime and
 * alignment; chunk and waste; first stack frames), one fact a line: the
 * SVG tooltip, and the viewer's. Writes "" for no such buffer; returns buf.
 */
const char *as_render_buffer_text(const struct as_render *r, size_t panel,
				  uint32_t buffer, char *buf, size_t len);

/*
 * Draw the whole picture into `cr`, a cairo_t * whose user space is in
 * logical pixels (scale it yourself for HiDPI). The caller keeps cr.
 */
int as_render_draw_cairo(struct as_render *r, void *cr);

/*
 * Draw into caller-owned pixels: premultiplied ARGB32 in native byte order
 * (SDL_PIXELFORMAT_ARGB8888), `stride` bytes a row. The picture is scaled
 * to width x height device pixels.
 */
int as_render_draw_argb32(struct as_render *r, uint32_t *pixels, int width,
			  int height, int stride);

/* Write PNG or SVG to an open stream (not atomic; for tests and pipes). */
int as_render_write_stream(struct as_render *r, FILE *f,
			   enum as_image_format fmt);

/* Write a file whole or not at all (temporary file, then rename). */
int as_render_write(struct as_render *r, const char *path,
		    enum as_image_format fmt, struct as_diag *diag);

/* Create, write, destroy: what the CLI needs for --png / --svg. */
int as_render_file(const char *path, enum as_image_format fmt,
		   const struct as_render_panel *panels, size_t n,
		   const struct as_render_opts *o, struct as_diag *diag);

/* Parse "WxH" (e.g. "1280x800"), each within [200, 16384]. */
int as_render_parse_size(const char *s, int *width, int *height);

/* What happens in a time range of a drawn panel. */
struct as_range_summary {
	uint64_t allocs, alloc_bytes;  /* buffers starting in [t0, t1) */
	uint64_t frees, free_bytes;    /* buffers ending in [t0, t1) */
	uint64_t peak_live;            /* most bytes live in the trace then */
	uint64_t peak_top;             /* the plan's highest top address then */
};

/*
 * Summarise times [t0, t1) of drawn panel i (O(n) in the buffers, plus the
 * curves of memory over time, prepared on first use).
 */
int as_render_range_summary(struct as_render *r, size_t i, double t0,
			    double t1, struct as_range_summary *out);


/* ---- Window overlays (the viewer's status bar, tooltips and help) ---- */

/*
 * A box with lines of text, painted over pixels already drawn: what a
 * window needs besides the picture, drawn with the renderer's font so the
 * viewer needs no text library of its own.
 */
struct as_render_overlay {
	double x, y;            /* top-left corner, logical pixels */
	double w, h;            /* size; 0: fit the text (with padding) */
	uint32_t fill, border;  /* 0xAARRGGBB; alpha 0: none */
	uint32_t color;         /* text colour, 0xAARRGGBB */
	double font_size;       /* 0: 12 */
	const char *text;       /* lines separated by '\n'; NULL: no text */
	/* Per line: a colour (0: `color`), and when `swatch` a small square
	 * of that colour before the line instead of coloured text. */
	const uint32_t *line_colors;
	size_t nline_colors;
	bool swatch;
	bool bold_first;        /* the first line in bold */
	/* > 0: a tab in a line starts a second column this far right. */
	double tab;
};

/* The size a box takes when w or h is 0 (logical pixels). */
int as_render_overlay_measure(const struct as_render_overlay *b, double *w,
			      double *h);

/*
 * Paint `n` boxes in order over caller-owned pixels (premultiplied ARGB32,
 * native order, as as_render_draw_argb32), `scale` device pixels per
 * logical pixel. Text is cut at the box's right edge.
 */
int as_render_overlay_argb32(uint32_t *pixels, int width, int height,
			     int stride, double scale,
			     const struct as_render_overlay *boxes, size_t n);

/* Write caller-owned ARGB32 pixels as a PNG file, whole or not at all
 * (screenshots). */
int as_render_write_png_argb32(const char *path, const uint32_t *pixels,
			       int width, int height, int stride,
			       struct as_diag *diag);

#endif
