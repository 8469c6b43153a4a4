/*
 * Private: the renderer's model and drawing surface. layout.c, axes.c,
 * hit.c, density.c, marks.c and paint.c compute all geometry (layout,
 * axes, level of detail) and emit primitives to a canvas; cairo.c paints
 * them with cairo (PNG, pixels, any cairo_t) and svg.c writes them as SVG
 * text. Both backends see the same coordinates, so PNG and SVG show the
 * same picture; neither calls back into the layout code.
 *
 * Colours are 0xAARRGGBB, not premultiplied; alpha 0 means "none".
 * Coordinates are logical pixels, y down.
 */
#ifndef AS_RENDER_PRIVATE_H
#define AS_RENDER_PRIVATE_H

#include "allocscope/render.h"
#include "core/internal.h"

enum { ANCHOR_START, ANCHOR_MIDDLE, ANCHOR_END };

struct measurer;

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

#define MIN_RECT_PX 2.0
#define MAX_RECTS 20000
#define TITLE_MIN_AREA 48.0
#define MAX_NAME_LABELS 400
#define MAX_BREAKS 8
#define LIVE_MAX 64
#define THIN_RECTS 4096 /* thin tall buffers drawn one by one */
#define ROUNDS_H 84 /* the sidebar's chart of search steps */

/* Colours, 0xAARRGGBB. */
#define C_BG 0xffffffffu
#define C_TEXT 0xff1a1a1au
#define C_TEXT2 0xff555555u
#define C_GRID 0xffebebebu
#define C_FRAME 0xff6e6e6eu
#define C_BREAK 0xfff2f2f2u
#define C_RED 0xffe41a1cu
#define C_DARKRED 0xff7f0000u
#define C_STRIP 0xfffde0e0u
#define C_PEAK 0xff000000u
#define C_LB 0xff000000u
#define C_LABEL_BG 0xe0ffffffu
#define C_OK 0xff1b5e20u

struct piece {
	uint64_t lo, hi;   /* addresses [lo, hi) */
	double u0, u1;     /* axis fractions */
	bool brk;          /* a compressed empty range */
};

struct tick {
	double y;
	char label[40];
	bool major;
};

/*
 * One placed buffer as the level of detail sees it: start and end
 * relative to the render's tbase, axis fractions of its bottom (offset)
 * and top (offset + extent). The exact values the pass used to compute
 * per frame, computed once, so the picture does not change.
 */
struct geo {
	double t0, t1, u0, u1;
};

#define GEO_BLOCK 64

/*
 * Time buckets for hit tests, over the placed buffers [0, nplaced).
 * Level j has buckets w0 << j time units wide; a buffer lives at the
 * lowest level whose width is at least its lifetime, in the bucket of its
 * start (relative to tbase), so it ends before the next bucket but one.
 * Buckets are runs of idx (positions in bufs, ascending within a
 * bucket): level j's bucket b is idx[off[base[j] + b], off[base[j] + b +
 * 1]). A time range meets only two extra buckets per level.
 */
#define HIX_LEVELS 64

struct hit_index {
	uint32_t *idx, *off;
	uint64_t w0, tend;      /* tend: the latest end, relative to tbase */
	uint32_t nlev;
	uint32_t base[HIX_LEVELS], nb[HIX_LEVELS];
};

struct panel {
	const struct as_trace *t;
	const struct as_plan *p;
	const struct as_report *rep;
	const char *title;
	uint32_t source;
	uint16_t space;
	char space_name[64];
	bool show_space;
	/* Drawable buffers of this space: [0, nplain) placed ones that are not
	 * aliases, then [nplain, nplaced) placed aliases, then failed ones. */
	uint32_t *bufs;
	uint32_t nbufs, nplaced, nplain;
	uint32_t *colors;      /* 0xRRGGBB of bufs[k], for the colour mode */
	/* What every frame reads, gathered once per axis (index_panel):
	 * geo[k] for the plain buffers [0, nplain); blk_end[j] the latest
	 * end of the buffers before block j's end, blk_start[j] the earliest
	 * start from block j's start on (blocks of GEO_BLOCK), so that a
	 * view skips whole runs of buffers that end before it or start
	 * after it; and the time buckets of every placed buffer for hit
	 * tests. */
	struct geo *geo;
	double *blk_end, *blk_start;
	uint32_t nblk;
	struct hit_index hix;
	/* The level-of-detail pass of the last frame (rectangles drawn one by
	 * one, density raster), reused while the view, the layout and the
	 * colours stay the same: a viewer redraws on every hover. */
	struct cand *lod_cand;
	uint32_t lod_nc;
	uint32_t *lod_raster;
	uint32_t *lod_over;    /* thin buffers a pixel high, drawn on top */
	struct cand *lod_thin; /* or, when few, the same as rectangles */
	uint32_t lod_nthin;
	bool lod_any, lod_over_any, lod_valid;
	double lod_key[5];
	/* The mapping of that pass (x = lod_ax + t * lod_bx, y = lod_ay -
	 * u * lod_by), and whether a pan by whole pixels may shift it
	 * (as_r_lod_shift): not
	 * when rectangles overflowed into the raster or there is no time
	 * index. lod_mark: scratch, one flag per plain buffer, all clear
	 * between passes. */
	double lod_ax, lod_bx, lod_ay, lod_by;
	bool lod_shiftable;
	uint8_t *lod_mark;
	uint64_t lod_moved, lod_redone; /* frames_moved, frames_redrawn */
	int colors_for;        /* the enum as_color_by they were made for */
	uint64_t peak, lb, amax;
	uint32_t failed;
	bool valid;
	uint64_t violations;
	bool has_peak;
	uint64_t peak_time;
	uint32_t peak_buf;     /* a buffer reaching the peak, live then */
	bool has_lb_time;
	uint64_t lb_time;      /* a moment of the lower bound */
	uint32_t live[LIVE_MAX];
	uint32_t nlive;
	uint64_t nlive_total, live_bytes;
	struct piece *pieces;
	uint32_t npieces;
	/* layout */
	double top;            /* top of the title line */
	double strip_y, strip_h;
	int px, py, pw, ph;    /* plot area */
	double v0, v1;         /* axis fractions shown */
	struct tick *ticks;
	uint32_t nticks;
	struct as_curve foot;     /* the top address in use over time */
	struct as_block *walk; /* the allocator's blocks at the peak */
	size_t nwalk;
	/* Reserved memory to draw behind the buffers (reserved.c): the
	 * trace's segments when the plan keeps the recorded offsets, else
	 * the segments the strategy reserved (psegs). */
	bool keeps_recorded;
	/* Spaces of the same plan too small to draw (layout.c's
	 * order_spaces): one line of text, empty when none. */
	char folded[160];
	struct as_segment *psegs;
	uint32_t npsegs;
};

struct as_render {
	struct as_render_opts o;
	struct as_render_panel *src;
	size_t nsrc;
	struct as_report *own;     /* reports the renderer computed */
	struct panel *panels;
	size_t npanels;
	struct measurer *m;
	uint64_t tbase;            /* earliest start: times are drawn from it */
	double tmax;               /* latest end, relative to tbase */
	bool rel_labels;           /* time labels "+t" from tbase (far from 0) */
	uint64_t trace_lb;         /* lower bound of the first trace */
	bool time_is_index;        /* time counts operations (no given times) */
	double size_lo, size_hi;   /* log2 ranges for sequential colours */
	double life_lo, life_hi;
	struct as_order ord;          /* of the first trace */
	struct as_curve live;         /* bytes live in the first trace */
	struct as_curve reserved;     /* bytes its allocator reserved, if known */
	/* layout */
	double t0, t1;
	int left, sidebar_w, header_h;
	int mem_y, mem_h;          /* the memory strip; mem_h 0: none */
	int stage_y, stage_h;      /* the stages' strip; stage_h 0: none */
	bool mem_ready;            /* its curves are made (memory_prepare) */
	/* scratch for the density raster */
	float *vd, *hd;
	uint32_t *raster;
	size_t scratch_cells;
	/* Bands over time (memory.c): bands[g] the bytes live in groups
	 * 0..g, made for the groups at bands_for. */
	struct as_curve *bands;
	uint32_t nbands;
	const uint8_t *bands_for;
	uint64_t bands_used;   /* bit g: group g has bytes */
};

#define FS_TITLE 13.0
#define FS_STAT 12.0
#define FS_TICK 11.0
#define FS_SMALL 10.0
#define TITLE_H 22
#define STRIP_H 14
#define PANEL_GAP 14
#define BOTTOM_H 42
#define TOP_PAD_PX 22
#define MEM_H 120 /* the memory strip */
#define MEM_GAP 30 /* above it: its title */
#define STAGE_TITLE_H 16 /* the stages' strip: its title, then rows */

struct box {
	double x0, y0, x1, y1;
};

#define RECT(c, x, y, w, h, f, s, sw, ti) \
	(c)->impl->rect((c), (x), (y), (w), (h), (f), (s), (sw), (ti))
#define LINE(c, x0, y0, x1, y1, col, w, d) \
	(c)->impl->line((c), (x0), (y0), (x1), (y1), (col), (w), (d))
#define TEXT(c, x, y, s, sz, b, col, an) \
	(c)->impl->text((c), (x), (y), (s), (sz), (b), (col), (an))

struct cand {
	float x0, y0, x1, y1;
	uint32_t idx; /* position in the panel's bufs */
};

struct vmark {
	struct box b;
	bool overlap;
};

/* text.c */

/*
 * Copy `s` into buf as the picture's text: valid UTF-8 (as_utf8_len), a
 * control byte as a space, a byte that is not UTF-8 as '?', cut between
 * characters. Text in pixels, unlike a terminal's (as_escape), keeps one
 * glyph a byte it cannot show, so a label's width stays its own.
 */
const char *as_r_render_clean_text(const char *s, char *buf, size_t len);
const char *as_r_fit_text(struct measurer *m, const char *s, double size,
		     bool bold, double maxw, char *buf, size_t len);
char *as_r_fmt_fixed(double v, int dec, char *buf, size_t len);
char *as_r_fmt_count(double v, char *buf, size_t len);
char *as_r_fmt_bytes_tick(uint64_t v, char *buf, size_t len);
char *as_r_fmt_pct(double pct, char *buf, size_t len);
char *as_r_fmt_time_tick(double v, double step, char *buf, size_t len);
void as_r_fmt_bytes_apart(uint64_t a, uint64_t b, char *ba, char *bb, size_t len);
const char *as_r_basename_of(const char *path);
uint32_t as_r_mix(uint32_t a, uint32_t b, double t);
uint32_t as_r_seq_color(double t);
double as_r_log2_u64(uint64_t v);
uint32_t as_r_color_of(const struct as_render *r, const struct panel *pn,
		  uint32_t i);
double as_r_luminance(uint32_t c);
uint32_t as_r_darker(uint32_t c);

/* layout.c */

bool as_r_buf_drawable(const struct as_buffer *b);
bool as_r_is_alias(const struct panel *pn, uint32_t i);
uint64_t as_r_extent_of(const struct panel *pn, uint32_t i);
uint64_t as_r_end_addr(const struct panel *pn, uint32_t i);
int as_r_index_panel(const struct as_render *r, struct panel *pn);
int as_r_collect_live(const struct panel *pn, uint64_t t, uint32_t **out,
		 uint64_t *n_out, uint64_t *bytes);

/* axes.c */

int as_r_build_axis(struct panel *pn, bool compress);
double as_r_addr_u(const struct panel *pn, uint64_t a, bool *in_break);
uint64_t as_r_u_addr(const struct panel *pn, double u, bool *in_break);
double as_r_y_of_u(const struct panel *pn, double u);
double as_r_y_of(const struct panel *pn, uint64_t a);
double as_r_rel_t(const struct as_render *r, uint64_t t);
double as_r_x_of(const struct as_render *r, const struct panel *pn,
	    double t);
double as_r_fast_u(const struct panel *pn, uint64_t a);
/* The real address recorded offset `off` stands for, on a panel that
 * shows real addresses (address map, recorded offsets); false elsewhere
 * or in a shrunk gap. */
bool as_r_real_address(const struct panel *pn, uint64_t off, uint64_t *addr);
int as_r_build_ticks(struct as_render *r, struct panel *pn);
void as_r_clip_rect(const struct panel *pn, double *x0, double *x1,
	       double *y0, double *y1);

/* hit.c */

int as_r_index_hits(const struct as_render *r, struct panel *pn);
/* The run idx[*c, *e) of level j's buckets that may hold a buffer living
 * in the relative times [qa, qb]; false when there is none. */
bool as_r_hix_run(const struct hit_index *h, uint32_t j, uint64_t qa,
		  uint64_t qb, uint32_t *c, uint32_t *e);
void as_r_buf_rect(const struct as_render *r, const struct panel *pn,
	      uint32_t i, uint64_t extent, double *x0, double *x1,
	      double *y0, double *y1);

/* density.c */

int as_r_index_geo(const struct as_render *r, struct panel *pn);
int as_r_panel_colors(struct as_render *r, struct panel *pn);
int as_r_lod_pass(struct as_render *r, struct panel *pn);
/* The kept pass moved dx whole pixels right and dy down (negative: left,
 * up): shift its rasters and rectangles, redo only the columns and rows
 * a pan uncovers or whose clipping changed. Returns 1 when it cannot,
 * and the caller makes a full pass. */
#define LOD_EDGE_PX 4
int as_r_lod_shift(struct as_render *r, struct panel *pn, int dx, int dy);

/* reserved.c */

/* The plan puts every buffer of the panel at its recorded offset (or the
 * panel is titled `recorded`). */
bool as_r_keeps_recorded(const struct panel *pn);
/* The bands' curves (memory.c). */
void as_r_bands_free(struct as_render *r);
/* A panel drawing the recorded addresses of a space whose buffers lie
 * scattered (its span over 100 times the bytes live at once): the span is
 * no packing, so it is not compared with the bound. */
bool as_r_span_scattered(const struct panel *pn);
/* The segments the panel's strategy reserved, from the plan (psegs). */
int as_r_plan_segments(struct panel *pn);

/* marks.c */

bool as_r_box_hit(const struct box *a, const struct box *b);
struct box as_r_label_box(struct as_render *r, double x, double y,
		     const char *s, double size, bool bold, int anchor);
void as_r_boxed_text(struct as_render *r, struct canvas *c,
		const struct box *b, double x, double y, const char *s,
		double size, bool bold, uint32_t col, int anchor);
void as_r_buffer_title(const struct panel *pn, uint32_t i, char *buf,
		  size_t len);
void as_r_emit_zigzag(struct canvas *c, double x0, double x1, double y);
void as_r_emit_title(struct as_render *r, struct canvas *c,
		const struct panel *pn);
void as_r_emit_failed_strip(struct as_render *r, struct canvas *c,
		       const struct panel *pn);
void as_r_grow_min(double *x0, double *x1, double *y0, double *y1,
	      double min);
int as_r_violation_marks(const struct as_render *r, const struct panel *pn,
		    struct vmark *out);
void as_r_emit_violations(struct canvas *c, const struct panel *pn,
		     const struct vmark *m, int n);
void as_r_emit_sidebar(struct as_render *r, struct canvas *c,
		  const struct panel *pn);
void as_r_emit_header(struct as_render *r, struct canvas *c);

/* cairo.c */

/* Text measurement shared by layout and every backend. */
struct measurer;
struct measurer *as_r_measurer_create(void);
void as_r_measurer_destroy(struct measurer *m);
double as_r_measure_text(struct measurer *m, const char *s, double size,
		    bool bold);

/* A canvas painting into a cairo_t (not owned; its state is saved and
 * restored by cairo_canvas_finish). */
struct canvas *as_r_cairo_canvas_create(void *cr);
/* A canvas painting into caller-owned premultiplied ARGB32 pixels, user
 * space scaled by (sx, sy); NULL if cairo refuses the pixels. */
struct canvas *as_r_cairo_canvas_create_pixels(uint32_t *pixels, int width,
					  int height, int stride, double sx,
					  double sy);
/* A canvas over its own width x height image, user space times scale. */
struct canvas *as_r_cairo_canvas_create_image(int width, int height, double scale);
/* Done painting: AS_OK, or AS_ENOMEM / AS_EIO if cairo failed. */
int as_r_cairo_canvas_finish(struct canvas *c);
/* The image of a cairo_canvas_create_image canvas as PNG. */
int as_r_cairo_canvas_write_png(struct canvas *c, FILE *f);
/* Accepts NULL. */
void as_r_cairo_canvas_destroy(struct canvas *c);

/* Encode a premultiplied ARGB32 raster as PNG into a malloc'd buffer. */
int as_r_png_encode(const uint32_t *argb, int w, int h, unsigned char **out,
	       size_t *len);

/* svg.c */

struct canvas *as_r_svg_canvas_create(FILE *f, int width, int height);
/* Finish the document; returns AS_EIO if writing failed. */
int as_r_svg_canvas_finish(struct canvas *c);
void as_r_svg_canvas_destroy(struct canvas *c);

/* stage_strip.c */

/* The height of the stages' strip (0: the trace has no stages). */
int as_r_stages_height(const struct as_render *r);
void as_r_emit_stages(struct as_render *r, struct canvas *c);

/* memory.c */

int as_r_curve_live(const struct as_order *o, struct as_curve *c);
int as_r_curve_reserved(const struct as_trace *t, struct as_curve *c);
int as_r_curve_top(const struct as_order *o, const struct panel *pn,
	      struct as_curve *c);
int as_r_memory_prepare(struct as_render *r);
int as_r_emit_memory(struct as_render *r, struct canvas *c);

/* paint.c */

#define TTICKS_MAX 100
struct tticks {
	int n;
	double x[TTICKS_MAX];
	char label[TTICKS_MAX][40];
	char what[96];
};
void as_r_time_ticks(const struct as_render *r, const struct panel *pn,
		struct tticks *tt);
void as_r_emit_time_axis(struct as_render *r, struct canvas *c,
		    const struct panel *pn, const struct tticks *tt, double y1,
		    bool labels);

/* Emit the whole picture to a canvas. */
int as_r_render_emit(struct as_render *r, struct canvas *c);

/* dispatch.c */

/*
 * The image file at `path`, written whole or not at all (as_atomic_open,
 * as_atomic_commit). On failure diag says why, in the CLI's words for its
 * other outputs: "cannot write: Permission denied", "write failed: No
 * space left on device".
 */
int as_r_output_open(const char *path, struct as_atomic **at, FILE **f,
		     struct as_diag *diag);
int as_r_output_commit(struct as_atomic *at, struct as_diag *diag);

#endif
