/*
 * Level of detail: a buffer at least MIN_RECT_PX pixels in both directions
 * is drawn as its own rectangle (at most MAX_RECTS per panel, the largest
 * first); every other buffer adds its exact pixel coverage and colour to a
 * density raster of the plot (one cell per pixel, filled through
 * difference arrays in O(1) per buffer), drawn as one image. A buffer at
 * least a pixel high covers at least a whole pixel column, so nothing tall
 * vanishes at low zoom. Output size is therefore bounded by the picture
 * size, not by the trace.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

/* The geometry and block bounds of the plain buffers (struct geo). */
int as_r_index_geo(const struct as_render *r, struct panel *pn)
{
	const uint32_t n = pn->nplain;
	const uint32_t nblk = (n + GEO_BLOCK - 1) / GEO_BLOCK;
	struct geo *g = malloc(sizeof(*g) * ((size_t)n + 1));
	double *be = malloc(sizeof(double) * ((size_t)nblk + 1));
	double *bs = malloc(sizeof(double) * ((size_t)nblk + 1));
	if (!g || !be || !bs) {
		free(g);
		free(be);
		free(bs);
		return AS_ENOMEM;
	}
	const uint64_t *chunk = pn->p->chunk;
	const uint64_t tb = r->tbase; /* every start is at or after it */
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = pn->bufs[k];
		const struct as_buffer *b = &pn->t->buffers[i];
		uint64_t off = pn->p->offset[i];
		uint64_t ext = chunk && chunk[i] > b->size ? chunk[i] : b->size;
		uint64_t top = off > UINT64_MAX - ext ? UINT64_MAX : off + ext;
		g[k].t0 = (double)(b->start - tb);
		g[k].t1 = (double)(b->end - tb);
		g[k].u0 = as_r_fast_u(pn, off);
		g[k].u1 = as_r_fast_u(pn, top);
	}
	double m = -INFINITY;
	for (uint32_t j = 0; j < nblk; j++) {
		uint32_t e = (j + 1) * GEO_BLOCK < n ? (j + 1) * GEO_BLOCK : n;
		for (uint32_t k = j * GEO_BLOCK; k < e; k++)
			m = g[k].t1 > m ? g[k].t1 : m;
		be[j] = m;
	}
	m = INFINITY;
	for (uint32_t j = nblk; j-- > 0;) {
		uint32_t e = (j + 1) * GEO_BLOCK < n ? (j + 1) * GEO_BLOCK : n;
		for (uint32_t k = j * GEO_BLOCK; k < e; k++)
			m = g[k].t0 < m ? g[k].t0 : m;
		bs[j] = m;
	}
	free(pn->geo);
	free(pn->blk_end);
	free(pn->blk_start);
	pn->geo = g;
	pn->blk_end = be;
	pn->blk_start = bs;
	pn->nblk = nblk;
	return AS_OK;
}

static int cmp_cand_area(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	double ax = (double)(x->x1 - x->x0) * (x->y1 - x->y0);
	double ay = (double)(y->x1 - y->x0) * (y->y1 - y->y0);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_cand_idx(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static void rgb_f(uint32_t c, float *out)
{
	out[0] = ((c >> 16) & 0xff) / 255.0f;
	out[1] = ((c >> 8) & 0xff) / 255.0f;
	out[2] = (c & 0xff) / 255.0f;
}

/*
 * The density raster: coverage and colour sums through difference arrays.
 * With colours by buffer name an average colour means nothing, so the
 * raster keeps coverage only (one float a cell, drawn in one neutral
 * colour); the other modes keep coverage and coverage-weighted red, green
 * and blue (four floats a cell).
 */
struct dens {
	int w, h;
	int ch;    /* floats a cell: 1 (coverage) or 4 (and colour) */
	float *vd; /* (h + 1) x w cells: down the columns */
	float *hd; /* h x (w + 1) cells: along the rows */
	bool any;
};

#define C_DENSITY 0x3d4f63u /* slate: many small buffers */

static inline void dens_put(int ch, float *arr, size_t cell, double v,
			    const float *rgb)
{
	if (ch == 1) {
		arr[cell] += (float)v;
		return;
	}
	float *p = arr + cell * 4;
	p[0] += (float)v;
	p[1] += (float)(v * rgb[0]);
	p[2] += (float)(v * rgb[1]);
	p[3] += (float)(v * rgb[2]);
}

/*
 * A rectangle inside pixel column `col` that is no wider than tall (or
 * fits one cell): the common case of many small buffers, added exactly
 * as the general case below would, without its branches, which the
 * processor cannot predict when heights are random. A part that does
 * not apply adds zero, which leaves every sum as it was (they are never
 * -0). Row h of both arrays is scratch.
 */
/* c ? a : b through bit masks: compilers turn a ?: of doubles into a
 * branch, which is mispredicted half the time here. */
static inline double pick(bool c, double a, double b)
{
	uint64_t x, y, m = (uint64_t)0 - (uint64_t)c;
	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	x = (x & m) | (y & ~m);
	memcpy(&a, &x, sizeof(a));
	return a;
}

/* Inlined even when large (AS_ALWAYS_INLINE), as dens_add_ch: a copy per
 * constant channel count. */
static AS_ALWAYS_INLINE void dens_col(struct dens *d, int col, double f,
				      double y0, double y1, const float *rgb,
				      const int ch)
{
	const int W = d->w, H = d->h;
	const size_t RW = (size_t)W + 1;
	const int ra = (int)y0, rb = (int)y1;
	const double top = f * (pick(y1 < ra + 1, y1, ra + 1) - y0);
	const double bot =
		pick((rb > ra) & (y1 > rb) & (rb < H), f * (y1 - rb), 0);
	const double mid = pick(rb > ra + 1, f, 0);
	const size_t a = (size_t)ra * RW + col, b = (size_t)rb * RW + col;
	dens_put(ch, d->hd, a, top, rgb);
	dens_put(ch, d->hd, a + 1, -top, rgb);
	dens_put(ch, d->hd, b, bot, rgb);
	dens_put(ch, d->hd, b + 1, -bot, rgb);
	dens_put(ch, d->vd, (size_t)(ra + 1) * W + col, mid, rgb);
	dens_put(ch, d->vd, (size_t)rb * W + col, -mid, rgb);
}

/* The same for one pixel row of a rectangle wider than tall (f: the part
 * of the row it covers); zeros may land one cell past the row's end. */
static inline void dens_row(struct dens *d, int row, double f, double x0,
			    double x1, const float *rgb, const int ch)
{
	const int W = d->w;
	const size_t base = (size_t)row * ((size_t)W + 1);
	const int ca = (int)x0, cb = (int)x1;
	const double left = f * (pick(x1 < ca + 1, x1, ca + 1) - x0);
	const double right =
		pick((cb > ca) & (x1 > cb) & (cb < W), f * (x1 - cb), 0);
	const double mid = pick(cb > ca + 1, f, 0);
	dens_put(ch, d->hd, base + ca, left, rgb);
	dens_put(ch, d->hd, base + ca + 1, -left, rgb);
	dens_put(ch, d->hd, base + cb, right, rgb);
	dens_put(ch, d->hd, base + cb + 1, -right, rgb);
	dens_put(ch, d->hd, base + ca + 1, mid, rgb);
	dens_put(ch, d->hd, base + cb, -mid, rgb);
}

/*
 * Add a rectangle in plot pixels (clipped, x0 < x1, y0 < y1): column by
 * column when it is no wider than tall or inside one cell, else row by
 * row. ch is d->ch, a constant in each of the two copies below.
 */
static AS_ALWAYS_INLINE void dens_add_ch(struct dens *d, double x0,
					 double x1, double y0, double y1,
					 const float *rgb, const int ch)
{
	const int W = d->w, H = d->h;
	d->any = true;
	int cx = (int)x0, cy = (int)y0;
	/* Flags, not && and ||: which of them hold is unpredictable, the
	 * common case (one column, by columns) is not. */
	const int narrow = x1 - x0 <= y1 - y0, one_col = x1 <= cx + 1,
		  one_row = y1 <= cy + 1;
	const int by_cols = narrow | (one_col & one_row);
	if (by_cols & one_col) { /* the loop below, whose f is x1 - x0 */
		dens_col(d, cx, x1 - x0, y0, y1, rgb, ch);
		return;
	}
	if (by_cols) {
		int cb = (int)ceil(x1) - 1;
		if (cb >= W)
			cb = W - 1;
		for (int col = cx; col <= cb; col++) {
			double f = (x1 < col + 1 ? x1 : col + 1) -
				   (x0 > col ? x0 : col);
			if (f > 0)
				dens_col(d, col, f, y0, y1, rgb, ch);
		}
	} else {
		int rb = (int)ceil(y1) - 1;
		if (rb >= H)
			rb = H - 1;
		for (int row = cy; row <= rb; row++) {
			double f = (y1 < row + 1 ? y1 : row + 1) -
				   (y0 > row ? y0 : row);
			if (f > 0)
				dens_row(d, row, f, x0, x1, rgb, ch);
		}
	}
}

static void dens_add_mono(struct dens *d, double x0, double x1, double y0,
			  double y1)
{
	dens_add_ch(d, x0, x1, y0, y1, NULL, 1);
}

static void dens_add_rgb(struct dens *d, double x0, double x1, double y0,
			 double y1, const float *rgb)
{
	dens_add_ch(d, x0, x1, y0, y1, rgb, 4);
}

static void dens_add(struct dens *d, double x0, double x1, double y0,
		     double y1, const float *rgb)
{
	if (d->ch == 1)
		dens_add_mono(d, x0, x1, y0, y1);
	else
		dens_add_rgb(d, x0, x1, y0, y1, rgb);
}

/*
 * Resolve the sums into premultiplied ARGB32. Opacity grows as the square
 * root of the coverage so that sparse columns stay visible; it is kept to
 * 16 steps and colours to 32 per channel, which nobody sees and which makes
 * the raster compress far better in SVG files.
 */
static void dens_resolve(struct dens *d, uint32_t *out, size_t ostride)
{
	const int W = d->w, H = d->h, C = d->ch;
	float *acc = d->vd + (size_t)H * W * C; /* row H is scratch */
	memset(acc, 0, sizeof(float) * C * W);
	float mono[3];
	rgb_f(C_DENSITY, mono);
	if (C == 1) {
		/* One colour: a pixel depends on its opacity step only. */
		uint32_t lut[16];
		for (uint32_t A = 0; A < 16; A++) {
			uint32_t q[3];
			for (int ch = 0; ch < 3; ch++) {
				float v = mono[ch];
				v = v < 0 ? 0 : (v > 1 ? 1 : v);
				q[ch] = (uint32_t)(v * 31 + 0.5f);
			}
			lut[A] = (A * 17) << 24 |
				 ((q[0] * A * 255 + 232) / 465) << 16 |
				 ((q[1] * A * 255 + 232) / 465) << 8 |
				 ((q[2] * A * 255 + 232) / 465);
		}
		for (int row = 0; row < H; row++) {
			const float *vrow = d->vd + (size_t)row * W;
			const float *hrow = d->hd + (size_t)row * (W + 1);
			uint32_t *orow = out + (size_t)row * ostride;
			float h1 = 0;
			for (int col = 0; col < W; col++) {
				acc[col] += vrow[col];
				h1 += hrow[col];
				float cell = acc[col] + h1;
				uint32_t px = 0;
				if (cell > 1e-4f) {
					float a = sqrtf(cell);
					uint32_t A = a >= 1 ? 15
						     : (uint32_t)ceilf(a * 15);
					px = lut[A];
				}
				orow[col] = px;
			}
		}
		return;
	}
	/* Coverage and colour: four floats a cell (C is 4 from here on; a
	 * constant lets the compiler keep the four sums in one register). */
	for (int row = 0; row < H; row++) {
		float *vrow = d->vd + (size_t)row * W * 4;
		float *hrow = d->hd + (size_t)row * (W + 1) * 4;
		float h4[4] = {0, 0, 0, 0};
		for (int col = 0; col < W; col++) {
			float cell[4];
			for (int ch = 0; ch < 4; ch++) {
				acc[col * 4 + ch] += vrow[col * 4 + ch];
				h4[ch] += hrow[col * 4 + ch];
				cell[ch] = acc[col * 4 + ch] + h4[ch];
			}
			uint32_t px = 0;
			if (cell[0] > 1e-4f) {
				float a = sqrtf(cell[0]);
				uint32_t A = a >= 1 ? 15 : (uint32_t)ceilf(a * 15);
				float inv = 1.0f / cell[0];
				uint32_t q[3];
				for (int ch = 0; ch < 3; ch++) {
					float v = cell[ch + 1] * inv;
					v = v < 0 ? 0 : (v > 1 ? 1 : v);
					q[ch] = (uint32_t)(v * 31 + 0.5f);
				}
				/* Premultiplied: q/31 * A/15 * 255. */
				px = (A * 17) << 24 |
				     ((q[0] * A * 255 + 232) / 465) << 16 |
				     ((q[1] * A * 255 + 232) / 465) << 8 |
				     ((q[2] * A * 255 + 232) / 465);
			}
			out[(size_t)row * ostride + col] = px;
		}
	}
}

static int dens_init(struct as_render *r, struct dens *d, int w, int h,
		     int ch)
{
	size_t cells = (size_t)(w + 1) * (h + 1);
	if (cells > r->scratch_cells) {
		free(r->vd);
		free(r->hd);
		free(r->raster);
		r->vd = malloc(cells * 4 * sizeof(float));
		r->hd = malloc(cells * 4 * sizeof(float));
		r->raster = malloc(cells * sizeof(uint32_t));
		r->scratch_cells = r->vd && r->hd && r->raster ? cells : 0;
		if (!r->scratch_cells)
			return AS_ENOMEM;
	}
	d->w = w;
	d->h = h;
	d->ch = ch;
	d->vd = r->vd;
	d->hd = r->hd;
	d->any = false;
	memset(d->vd, 0, (size_t)(h + 1) * w * ch * sizeof(float));
	memset(d->hd, 0, (size_t)(h + 1) * (w + 1) * ch * sizeof(float));
	return AS_OK;
}

/* The colours of the panel's placed buffers, cached per colour mode. */
int as_r_panel_colors(struct as_render *r, struct panel *pn)
{
	if (pn->colors && pn->colors_for == (int)r->o.color_by)
		return AS_OK;
	if (!pn->colors) {
		pn->colors = malloc(sizeof(uint32_t) * (pn->nplaced + 1));
		if (!pn->colors)
			return AS_ENOMEM;
	}
	for (uint32_t k = 0; k < pn->nplaced; k++)
		pn->colors[k] = as_r_color_of(r, pn, pn->bufs[k]);
	pn->colors_for = (int)r->o.color_by;
	return AS_OK;
}

/*
 * Sort the panel's buffers into rectangles drawn one by one (the largest
 * MAX_RECTS of those at least MIN_RECT_PX both ways) and the density
 * raster (all others); the result is kept in the panel.
 */
int as_r_lod_pass(struct as_render *r, struct panel *pn)
{
	struct dens d;
	int err = dens_init(r, &d, pn->pw, pn->ph,
			    r->o.color_by == AS_COLOR_BUFFER ? 1 : 4);
	if (err)
		return err;
	struct cand *cand = malloc(sizeof(*cand) * (pn->nplaced + 1));
	uint32_t *raster = realloc(pn->lod_raster,
				   sizeof(uint32_t) * pn->pw * pn->ph);
	if (raster)
		pn->lod_raster = raster;
	if (!cand || !raster) {
		free(cand);
		return AS_ENOMEM;
	}
	/* Rectangles fill cand from the front, thin buffers from the back. */
	uint32_t nc = 0, nthin = pn->nplaced + 1;
	const double X0 = pn->px, Y0 = pn->py, X1 = pn->px + pn->pw,
		     Y1 = pn->py + pn->ph;
	/* The hot loop: x = ax + t * bx, y = ay - u * by. */
	const double bx = pn->pw / (r->t1 - r->t0), ax = X0 - r->t0 * bx;
	const double by = pn->ph / (pn->v1 - pn->v0), ay = Y1 + pn->v0 * by;
	const struct geo *g = pn->geo;
	uint32_t kb = 0, ke = pn->nplain;
	if (isfinite(ax) && isfinite(bx)) {
		/* Blocks ending left of the view, and from the first block
		 * starting right of it: nothing there is drawn. */
		uint32_t lo = 0, hi = pn->nblk;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (ax + pn->blk_end[mid] * bx <= X0)
				lo = mid + 1;
			else
				hi = mid;
		}
		kb = lo * GEO_BLOCK;
		hi = pn->nblk;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (ax + pn->blk_start[mid] * bx < X1)
				lo = mid + 1;
			else
				hi = mid;
		}
		if ((uint64_t)lo * GEO_BLOCK < ke)
			ke = lo * GEO_BLOCK;
		if (kb > ke)
			kb = ke;
	}
	const bool mono = d.ch == 1;
	for (uint32_t k = kb; k < ke; k++) {
		double x0 = ax + g[k].t0 * bx;
		double x1 = ax + g[k].t1 * bx;
		if (x1 <= X0 || x0 >= X1)
			continue;
		double y1 = ay - g[k].u0 * by;
		double y0 = ay - g[k].u1 * by;
		if (y1 <= Y0 || y0 >= Y1)
			continue;
		as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 - x0 >= MIN_RECT_PX && y1 - y0 >= MIN_RECT_PX) {
			cand[nc++] = (struct cand){(float)x0, (float)y0,
						   (float)x1, (float)y1, k};
		} else if (y1 - y0 >= 1 && x1 - x0 < 1) {
			/* A pixel high or more but thinner than a pixel: a
			 * whole column over the rectangles (the last pass),
			 * so that neighbours snapped to whole pixels cannot
			 * hide it however short its life. */
			double xc = floor((x0 + x1) / 2);
			xc = xc < X0 ? X0 : (xc + 1 > X1 ? X1 - 1 : xc);
			cand[--nthin] = (struct cand){(float)xc, (float)y0,
						      (float)xc + 1, (float)y1,
						      k};
		} else if (x1 > x0 && y1 > y0) {
			float rgb[3];
			if (mono) {
				dens_add_mono(&d, x0 - X0, x1 - X0, y0 - Y0,
					      y1 - Y0);
			} else {
				rgb_f(pn->colors[k], rgb);
				dens_add_rgb(&d, x0 - X0, x1 - X0, y0 - Y0,
					     y1 - Y0, rgb);
			}
		}
	}
	pn->lod_ax = ax;
	pn->lod_bx = bx;
	pn->lod_ay = ay;
	pn->lod_by = by;
	pn->lod_shiftable = nc <= MAX_RECTS && pn->hix.idx && isfinite(ax) &&
			    isfinite(bx) && isfinite(ay) && isfinite(by);
	if (nc > MAX_RECTS) {
		qsort(cand, nc, sizeof(*cand), cmp_cand_area);
		for (uint32_t k = MAX_RECTS; k < nc; k++) {
			float rgb[3];
			rgb_f(pn->colors[cand[k].idx], rgb);
			dens_add(&d, cand[k].x0 - X0, cand[k].x1 - X0,
				 cand[k].y0 - Y0, cand[k].y1 - Y0, rgb);
		}
		nc = MAX_RECTS;
	}
	pn->lod_any = d.any;
	if (d.any)
		dens_resolve(&d, pn->lod_raster, (size_t)pn->pw);
	/* The thin buffers, in their own colours, opaque: each fills its
	 * pixel column over the rows it covers (few buffers are a pixel
	 * high yet thinner than one; each costs its height in pixels). */
	pn->lod_over_any = false;
	uint32_t nt = pn->nplaced + 1 - nthin;
	free(pn->lod_thin);
	pn->lod_thin = NULL;
	pn->lod_nthin = 0;
	if (nt > 0 && nt <= THIN_RECTS) {
		/* Few: kept as rectangles, drawn one by one. */
		pn->lod_thin = malloc(sizeof(struct cand) * nt);
		if (!pn->lod_thin) {
			free(cand);
			return AS_ENOMEM;
		}
		memcpy(pn->lod_thin, cand + nthin, sizeof(struct cand) * nt);
		pn->lod_nthin = nt;
	} else if (nt > 0) {
		size_t cells = (size_t)pn->pw * pn->ph;
		uint32_t *over = realloc(pn->lod_over, sizeof(uint32_t) * cells);
		if (!over) {
			free(cand);
			return AS_ENOMEM;
		}
		pn->lod_over = over;
		memset(over, 0, sizeof(uint32_t) * cells);
		for (uint32_t k = nthin; k <= pn->nplaced; k++) {
			int col = (int)(cand[k].x0 - X0);
			int r0 = (int)floor(cand[k].y0 - Y0 + 0.5);
			int r1 = (int)floor(cand[k].y1 - Y0 + 0.5);
			r0 = r0 < 0 ? 0 : r0;
			r1 = r1 > pn->ph ? pn->ph : (r1 <= r0 ? r0 + 1 : r1);
			if (col < 0 || col >= pn->pw || r0 >= pn->ph)
				continue;
			uint32_t px = 0xff000000u | pn->colors[cand[k].idx];
			for (int row = r0; row < r1; row++)
				over[(size_t)row * pn->pw + col] = px;
		}
		pn->lod_over_any = true;
	}
	qsort(cand, nc, sizeof(*cand), cmp_cand_idx);
	struct cand *fit = realloc(cand, sizeof(*cand) * (nc + 1));
	free(pn->lod_cand);
	pn->lod_cand = fit ? fit : cand;
	pn->lod_nc = nc;
	return AS_OK;
}

/*
 * Panning by whole pixels. A buffer's kind (rectangle, thin column,
 * density) and its pixels depend only on its own clipped rectangle, so
 * after a pan by dx pixels everything is what it was, moved dx, except
 * the columns the pan exposes and the few at each edge where a buffer's
 * clipping changed (a buffer cut by an edge and narrower than
 * MIN_RECT_PX there lies within LOD_EDGE_PX of it). Those bands are
 * redone from the buffers that meet them in time (the hit index), the
 * rest of the rasters is moved, and the rectangles and thin columns
 * kept are moved and clipped again. What comes out is what a full pass
 * at the new view makes, up to the order of float sums in the bands.
 * It does not apply when the full pass had more than MAX_RECTS
 * rectangles (which of them go to the raster depends on all of them).
 */
enum { K_NONE, K_RECT, K_THIN, K_DENS };

struct map {
	double ax, bx, ay, by;
};

/* The kind the full pass gives plain buffer k, and its clipped rectangle
 * q = {x0, x1, y0, y1} (for a thin one, its column); c: the same as the
 * full pass keeps it. */
static int lod_kind(const struct panel *pn, uint32_t k, const struct map *m,
		    double *q, struct cand *c)
{
	const struct geo *g = &pn->geo[k];
	const double X0 = pn->px, Y0 = pn->py, X1 = pn->px + pn->pw,
		     Y1 = pn->py + pn->ph;
	double x0 = m->ax + g->t0 * m->bx;
	double x1 = m->ax + g->t1 * m->bx;
	if (x1 <= X0 || x0 >= X1)
		return K_NONE;
	double y1 = m->ay - g->u0 * m->by;
	double y0 = m->ay - g->u1 * m->by;
	if (y1 <= Y0 || y0 >= Y1)
		return K_NONE;
	as_r_clip_rect(pn, &x0, &x1, &y0, &y1);
	int kind = K_NONE;
	if (x1 - x0 >= MIN_RECT_PX && y1 - y0 >= MIN_RECT_PX) {
		kind = K_RECT;
	} else if (y1 - y0 >= 1 && x1 - x0 < 1) {
		double xc = floor((x0 + x1) / 2);
		xc = xc < X0 ? X0 : (xc + 1 > X1 ? X1 - 1 : xc);
		x0 = xc;
		x1 = xc + 1;
		kind = K_THIN;
	} else if (x1 > x0 && y1 > y0) {
		kind = K_DENS;
	}
	q[0] = x0;
	q[1] = x1;
	q[2] = y0;
	q[3] = y1;
	*c = (struct cand){(float)x0, (float)y0, (float)x1, (float)y1, k};
	return kind;
}

/* Move the columns of a w x h raster dx right (negative: left); the
 * columns left behind keep stale pixels, to be redrawn. */
static void shift_cols(uint32_t *px, int w, int h, int dx)
{
	int n = w - (dx > 0 ? dx : -dx);
	for (int row = 0; row < h; row++) {
		uint32_t *p = px + (size_t)row * w;
		if (dx > 0)
			memmove(p + dx, p, sizeof(uint32_t) * n);
		else
			memmove(p, p - dx, sizeof(uint32_t) * n);
	}
}

static bool less_u32(uint32_t a, uint32_t b, const void *ctx)
{
	(void)ctx;
	return a < b;
}

/* A growable list of cands. */
struct cands {
	struct cand *v;
	uint32_t n, cap;
};

static int cands_push(struct cands *c, const struct cand *x)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 256;
		struct cand *v = realloc(c->v, sizeof(*v) * cap);
		if (!v)
			return AS_ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = *x;
	return AS_OK;
}

/* Merge b into a (both sorted by idx, ascending or descending) into a
 * new array; NULL when out of memory. */
static struct cand *merge_cands(const struct cand *a, uint32_t na,
				const struct cand *b, uint32_t nb, bool desc)
{
	struct cand *out = malloc(sizeof(*out) * ((size_t)na + nb + 1));
	if (!out)
		return NULL;
	uint32_t i = 0, j = 0, o = 0;
	while (i < na && j < nb) {
		bool take_a = desc ? a[i].idx > b[j].idx : a[i].idx < b[j].idx;
		out[o++] = take_a ? a[i++] : b[j++];
	}
	while (i < na)
		out[o++] = a[i++];
	while (j < nb)
		out[o++] = b[j++];
	return out;
}

static int cmp_cand_idx_desc(const void *a, const void *b)
{
	return cmp_cand_idx(b, a);
}

/* Append k to the reused list ks (AS_ENOMEM). */
static int push_key(uint32_t **ks, uint32_t *nks, uint32_t *cap, uint32_t k)
{
	if (*nks == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 1024;
		uint32_t *v = realloc(*ks, sizeof(*v) * nc);
		if (!v)
			return AS_ENOMEM;
		*ks = v;
		*cap = nc;
	}
	(*ks)[(*nks)++] = k;
	return AS_OK;
}

/* The plain buffers whose lives meet the plot columns [ca, cb) under m,
 * ascending, into ks (a reused list). */
static int band_buffers(const struct panel *pn, const struct map *m, int ca,
			int cb, uint32_t **ks, uint32_t *nks, uint32_t *cap)
{
	const struct hit_index *h = &pn->hix;
	*nks = 0;
	double ta = (pn->px + ca - 1 - m->ax) / m->bx;
	double tb = (pn->px + cb + 1 - m->ax) / m->bx;
	double tend = (double)h->tend;
	if (!(ta <= tb) || tb < 0 || ta > tend)
		return AS_OK;
	ta = floor(ta) - 1;
	tb = ceil(tb) + 1;
	uint64_t qa = (uint64_t)(ta < 0 ? 0 : ta);
	uint64_t qb = (uint64_t)(tb > tend ? tend : tb);
	for (uint32_t j = 0; j < h->nlev; j++) {
		uint32_t c, e;
		if (!as_r_hix_run(h, j, qa, qb, &c, &e))
			continue;
		for (; c < e; c++)
			if (h->idx[c] < pn->nplain &&
			    push_key(ks, nks, cap, h->idx[c]))
				return AS_ENOMEM;
	}
	return as_sort_u32(*ks, *nks, less_u32, NULL);
}

/* Move a w x h raster dx columns right and dy rows down (negative: left,
 * up); what is left behind keeps stale pixels, to be redrawn. */
static void shift_2d(uint32_t *px, int w, int h, int dx, int dy)
{
	if (dy == 0) {
		shift_cols(px, w, h, dx);
		return;
	}
	int n = w - (dx > 0 ? dx : -dx);
	int d0 = dx > 0 ? dx : 0, s0 = dx > 0 ? 0 : -dx;
	if (dy > 0) {
		for (int y = h - 1; y >= dy; y--)
			memmove(px + (size_t)y * w + d0,
				px + (size_t)(y - dy) * w + s0,
				sizeof(uint32_t) * n);
	} else {
		for (int y = 0; y < h + dy; y++)
			memmove(px + (size_t)y * w + d0,
				px + (size_t)(y - dy) * w + s0,
				sizeof(uint32_t) * n);
	}
}

/* What a shift works with. */
struct shift {
	struct as_render *r;
	struct panel *pn;
	struct map m;
	int ch;
	bool over_mode, had;
	uint8_t *mark;
	struct cands add, addt, bandt;
};

/*
 * Redo the region of plot columns [ca, cb) and rows [r0, r1) from the
 * buffers ks that may meet it: density and thin columns inside it, and
 * rectangles and thin columns not yet listed.
 */
static int redo_region(struct shift *s, int ca, int cb, int r0, int r1,
		       const uint32_t *ks, uint32_t nks)
{
	struct panel *pn = s->pn;
	const int W = pn->pw, bw = cb - ca, bh = r1 - r0;
	const double XA = pn->px + ca, XB = pn->px + cb;
	const double YA = pn->py + r0, YB = pn->py + r1;
	struct dens d;
	if (bw <= 0 || bh <= 0)
		return AS_OK;
	if (dens_init(s->r, &d, bw, bh, s->ch))
		return AS_ENOMEM;
	s->bandt.n = 0;
	struct cand q;
	double g[4];
	for (uint32_t i = 0; i < nks; i++) {
		uint32_t k = ks[i];
		int kind = lod_kind(pn, k, &s->m, g, &q);
		if (kind == K_RECT && !s->mark[k]) {
			if (cands_push(&s->add, &q))
				return AS_ENOMEM;
			s->mark[k] = 1;
		} else if (kind == K_THIN && s->over_mode) {
			if (q.x0 >= XA && q.x0 < XB && q.y1 > YA && q.y0 < YB &&
			    cands_push(&s->bandt, &q))
				return AS_ENOMEM;
		} else if (kind == K_THIN && !s->mark[k]) {
			if (cands_push(&s->addt, &q))
				return AS_ENOMEM;
			s->mark[k] = 1;
		} else if (kind == K_DENS) {
			double x0 = g[0] > XA ? g[0] : XA;
			double x1 = g[1] < XB ? g[1] : XB;
			double y0 = g[2] > YA ? g[2] : YA;
			double y1 = g[3] < YB ? g[3] : YB;
			if (!(x1 > x0) || !(y1 > y0))
				continue;
			float rgb[3] = {0, 0, 0};
			if (s->ch == 4)
				rgb_f(pn->colors[k], rgb);
			dens_add(&d, x0 - XA, x1 - XA, y0 - YA, y1 - YA, rgb);
		}
	}
	if (d.any && !s->had) {
		memset(pn->lod_raster, 0, sizeof(uint32_t) * W * pn->ph);
		s->had = true;
	}
	if (s->had)
		dens_resolve(&d, pn->lod_raster + (size_t)r0 * W + ca,
			     (size_t)W);
	if (s->over_mode) {
		/* The region's cells again, smallest position last as in
		 * the full pass. */
		for (int row = r0; row < r1; row++)
			memset(pn->lod_over + (size_t)row * W + ca, 0,
			       sizeof(uint32_t) * bw);
		if (s->bandt.n)
			qsort(s->bandt.v, s->bandt.n, sizeof(*s->bandt.v),
			      cmp_cand_idx_desc);
		for (uint32_t i = 0; i < s->bandt.n; i++) {
			const struct cand *t = &s->bandt.v[i];
			int col = (int)(t->x0 - pn->px);
			int a = (int)floor(t->y0 - pn->py + 0.5);
			int b = (int)floor(t->y1 - pn->py + 0.5);
			a = a < 0 ? 0 : a;
			b = b > pn->ph ? pn->ph : (b <= a ? a + 1 : b);
			a = a < r0 ? r0 : a;
			b = b > r1 ? r1 : b;
			if (col < ca || col >= cb)
				continue;
			uint32_t px = 0xff000000u | pn->colors[t->idx];
			for (int row = a; row < b; row++)
				pn->lod_over[(size_t)row * W + col] = px;
		}
	}
	return AS_OK;
}

/* The plain buffers drawn in the view whose rows meet [r0, r1), in order
 * (a pass over the buffers in view, judging rows only). */
static int row_buffers(const struct panel *pn, const struct map *m, int r0,
		       int r1, uint32_t **ks, uint32_t *nks, uint32_t *cap)
{
	*nks = 0;
	const double X0 = pn->px, X1 = pn->px + pn->pw;
	const double YA = pn->py + r0 - 1, YB = pn->py + r1 + 1;
	const struct geo *g = pn->geo;
	uint32_t lo = 0, hi = pn->nblk;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->ax + pn->blk_end[mid] * m->bx <= X0)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t kb = lo * GEO_BLOCK, ke = pn->nplain;
	hi = pn->nblk;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->ax + pn->blk_start[mid] * m->bx < X1)
			lo = mid + 1;
		else
			hi = mid;
	}
	if ((uint64_t)lo * GEO_BLOCK < ke)
		ke = lo * GEO_BLOCK;
	for (uint32_t k = kb; k < ke; k++) {
		double y1 = m->ay - g[k].u0 * m->by;
		double y0 = m->ay - g[k].u1 * m->by;
		if (y1 < YA || y0 > YB)
			continue;
		double x1 = m->ax + g[k].t1 * m->bx;
		double x0 = m->ax + g[k].t0 * m->bx;
		if (x1 <= X0 || x0 >= X1)
			continue;
		if (push_key(ks, nks, cap, k))
			return AS_ENOMEM;
	}
	return AS_OK;
}

int as_r_lod_shift(struct as_render *r, struct panel *pn, int dx, int dy)
{
	const int W = pn->pw, H = pn->ph;
	if (!pn->lod_valid || !pn->lod_shiftable || (dx == 0 && dy == 0))
		return 1;
	/* Columns: uncovered and at the edges (only when time moved). */
	const int lb = dx ? (dx > 0 ? dx : 0) + LOD_EDGE_PX : 0;
	const int ra = dx ? W - (dx < 0 ? -dx : 0) - LOD_EDGE_PX : W;
	/* Rows: the same when addresses moved. */
	const int tb = dy ? (dy > 0 ? dy : 0) + LOD_EDGE_PX : 0;
	const int ba = dy ? H - (dy < 0 ? -dy : 0) - LOD_EDGE_PX : H;
	if (lb >= ra || tb >= ba)
		return 1;
	if (!pn->lod_mark) {
		pn->lod_mark = calloc((size_t)pn->nplain + 1, 1);
		if (!pn->lod_mark)
			return AS_ENOMEM;
	}
	struct shift s = {
		.r = r, .pn = pn,
		.m = {pn->lod_ax + dx, pn->lod_bx, pn->lod_ay + dy, pn->lod_by},
		.ch = r->o.color_by == AS_COLOR_BUFFER ? 1 : 4,
		.over_mode = pn->lod_over_any, .had = pn->lod_any,
		.mark = pn->lod_mark,
	};
	uint8_t *mark = s.mark;
	int err = AS_ENOMEM;
	struct cands keep = {0}, keept = {0};
	uint32_t *ks = NULL, nks = 0, capks = 0;
	struct cand *nc = NULL, *nt = NULL;
	struct cand q;
	double g[4];

	/* The rectangles and thin columns kept, moved (still sorted). */
	for (uint32_t i = 0; i < pn->lod_nc; i++) {
		uint32_t k = pn->lod_cand[i].idx;
		if (lod_kind(pn, k, &s.m, g, &q) == K_RECT) {
			if (cands_push(&keep, &q))
				goto out;
			mark[k] = 1;
		}
	}
	for (uint32_t i = 0; i < pn->lod_nthin; i++) {
		uint32_t k = pn->lod_thin[i].idx;
		if (lod_kind(pn, k, &s.m, g, &q) == K_THIN) {
			if (cands_push(&keept, &q))
				goto out;
			mark[k] = 1;
		}
	}
	if (s.had)
		shift_2d(pn->lod_raster, W, H, dx, dy);
	if (s.over_mode)
		shift_2d(pn->lod_over, W, H, dx, dy);

	/* Column bands between the row bands, then the row bands across. */
	const int cols[2][2] = {{0, lb}, {ra, W}};
	for (int bi = 0; dx && bi < 2; bi++) {
		if (band_buffers(pn, &s.m, cols[bi][0], cols[bi][1], &ks, &nks,
				 &capks) ||
		    redo_region(&s, cols[bi][0], cols[bi][1], tb, ba, ks, nks))
			goto out;
	}
	const int rows[2][2] = {{0, tb}, {ba, H}};
	for (int bi = 0; dy && bi < 2; bi++) {
		if (row_buffers(pn, &s.m, rows[bi][0], rows[bi][1], &ks, &nks,
				&capks) ||
		    redo_region(&s, 0, W, rows[bi][0], rows[bi][1], ks, nks))
			goto out;
	}

	/* Merge what the bands added into what was kept. */
	if (s.add.n)
		qsort(s.add.v, s.add.n, sizeof(*s.add.v), cmp_cand_idx);
	if (s.addt.n)
		qsort(s.addt.v, s.addt.n, sizeof(*s.addt.v), cmp_cand_idx_desc);
	err = 1;
	if (keep.n + s.add.n > MAX_RECTS ||
	    (!s.over_mode && keept.n + s.addt.n > THIN_RECTS))
		goto out; /* the full pass decides who goes where */
	err = AS_ENOMEM;
	nc = merge_cands(keep.v, keep.n, s.add.v, s.add.n, false);
	nt = merge_cands(keept.v, keept.n, s.addt.v, s.addt.n, true);
	if (!nc || !nt)
		goto out;
	free(pn->lod_cand);
	pn->lod_cand = nc;
	pn->lod_nc = keep.n + s.add.n;
	nc = NULL;
	if (!s.over_mode) {
		free(pn->lod_thin);
		pn->lod_thin = nt;
		pn->lod_nthin = keept.n + s.addt.n;
		nt = NULL;
	}
	pn->lod_any = s.had;
	pn->lod_ax = s.m.ax;
	pn->lod_ay = s.m.ay;
	err = AS_OK;
out:
	for (uint32_t i = 0; i < keep.n; i++)
		mark[keep.v[i].idx] = 0;
	for (uint32_t i = 0; i < keept.n; i++)
		mark[keept.v[i].idx] = 0;
	for (uint32_t i = 0; i < s.add.n; i++)
		mark[s.add.v[i].idx] = 0;
	for (uint32_t i = 0; i < s.addt.n; i++)
		mark[s.addt.v[i].idx] = 0;
	if (err)
		pn->lod_valid = false; /* rasters half moved: a full pass */
	free(keep.v);
	free(keept.v);
	free(s.add.v);
	free(s.addt.v);
	free(s.bandt.v);
	free(ks);
	free(nc);
	free(nt);
	return err;
}
