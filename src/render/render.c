/*
 * The renderer: layout, address axes with compressed empty ranges, level
 * of detail, and the picture itself, emitted as canvas primitives that the
 * cairo backend (render_cairo.c) paints and the SVG backend (render_svg.c)
 * writes. No cairo here; every coordinate is decided in this file, so PNG
 * and SVG agree.
 *
 * Level of detail: a buffer at least MIN_RECT_PX pixels in both directions
 * is drawn as its own rectangle (at most MAX_RECTS per panel, the largest
 * first); every other buffer adds its exact pixel coverage and colour to a
 * density raster of the plot (one cell per pixel, filled through difference
 * arrays in O(1) per buffer), drawn as one image. Output size is therefore
 * bounded by the picture size, not by the trace.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

#define MIN_RECT_PX 2.0
#define MAX_RECTS 20000
#define TITLE_MIN_AREA 48.0
#define MAX_NAME_LABELS 400
#define MAX_BREAKS 8
#define LIVE_MAX 64

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

/*
 * Qualitative colours from Paul Tol's colour-blind safe schemes (muted,
 * bright and light), without their reds: red is kept for errors.
 */
static const uint32_t palette[] = {
	0x332288, 0x88ccee, 0x44aa99, 0x117733, 0x999933,
	0xddcc77, 0xaa4499, 0x4477aa, 0xee8866, 0xbbcc33,
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

/* Viridis (perceptually uniform, colour-blind safe), 9 control points. */
static const uint32_t viridis[] = {
	0x440154, 0x472c7a, 0x3b518b, 0x2c718e, 0x21908d,
	0x27ad81, 0x5cc863, 0xaadc32, 0xfde725,
};

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
	bool lod_any, lod_valid;
	double lod_key[9];
	int colors_for;        /* the enum as_color_by they were made for */
	uint64_t peak, lb, amax;
	uint32_t failed;
	bool valid;
	uint64_t violations;
	bool has_peak;
	uint64_t peak_time;
	uint32_t peak_buf;     /* the buffer that reaches the peak first */
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
	/* layout */
	double t0, t1;
	int left, sidebar_w, header_h;
	/* scratch for the density raster */
	float *vd, *hd;
	uint32_t *raster;
	size_t scratch_cells;
};

/* ---------------------------------------------------------------- text */

static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

const char *render_clean_text(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	if (len == 0)
		return buf;
	while (*p) {
		size_t n = utf8_len(p);
		if (n == 0) {
			if (o + 1 >= len)
				break;
			buf[o++] = '?';
			p++;
			continue;
		}
		if (o + n >= len)
			break;
		if (n == 1 && (*p < 0x20 || *p == 0x7f))
			buf[o++] = ' ';
		else
			memcpy(buf + o, p, n), o += n;
		p += n;
	}
	buf[o] = 0;
	return buf;
}

/* Fit clean text into maxw pixels, cutting with an ellipsis. */
static const char *fit_text(struct measurer *m, const char *s, double size,
			    bool bold, double maxw, char *buf, size_t len)
{
	render_clean_text(s, buf, len);
	if (measure_text(m, buf, size, bold) <= maxw)
		return buf;
	size_t n = strlen(buf);
	while (n > 0) {
		do
			n--;
		while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80);
		if (n + 4 > len)
			continue;
		char save[4];
		memcpy(save, buf + n, 4);
		memcpy(buf + n, "\xe2\x80\xa6", 4); /* U+2026 and NUL */
		if (measure_text(m, buf, size, bold) <= maxw)
			return buf;
		memcpy(buf + n, save, 4);
	}
	buf[0] = 0;
	return buf;
}

/* v with at most `dec` (<= 6) decimals, trailing zeros dropped; no locale. */
static char *fmt_fixed(double v, int dec, char *buf, size_t len)
{
	double scale = 1;
	if (dec > 6)
		dec = 6;
	for (int i = 0; i < dec; i++)
		scale *= 10;
	bool neg = v < 0;
	double q = floor(fabs(v) * scale + 0.5);
	unsigned long long ip = (unsigned long long)(q / scale);
	unsigned long long fp =
		(unsigned long long)(q - (double)ip * scale + 0.5);
	char frac[8];
	int k = dec;
	frac[k] = 0;
	while (k > 0) {
		frac[--k] = (char)('0' + fp % 10);
		fp /= 10;
	}
	k = dec;
	while (k > 0 && frac[k - 1] == '0')
		frac[--k] = 0;
	snprintf(buf, len, "%s%llu%s%s", neg && q > 0 ? "-" : "", ip,
		 k ? "." : "", frac);
	return buf;
}

/* Counts and times: 950, 12k, 1.5M. */
static char *fmt_count(double v, char *buf, size_t len)
{
	static const char *const sfx[] = {"", "k", "M", "G", "T", "P"};
	int u = 0;
	double a = fabs(v);
	if (a < 10000) {
		return fmt_fixed(v, a < 10 && a != floor(a) ? 2 : 0, buf,
				 len);
	}
	while (a >= 1000 && u < 5) {
		a /= 1000;
		v /= 1000;
		u++;
	}
	char num[32];
	fmt_fixed(v, 2, num, sizeof(num));
	snprintf(buf, len, "%s%s", num, sfx[u]);
	return buf;
}

/* Bytes on axes: 0, 768 KiB, 1.5 MiB (exact, up to 3 decimals). */
static char *fmt_bytes_tick(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB",
					   "TiB", "PiB", "EiB"};
	int u = 0;
	uint64_t d = 1;
	if (v == 0) {
		snprintf(buf, len, "0");
		return buf;
	}
	while (u < 6 && v >= d * 1024) {
		d *= 1024;
		u++;
	}
	char num[32];
	fmt_fixed((double)v / (double)d, 3, num, sizeof(num));
	snprintf(buf, len, "%s %s", num, unit[u]);
	return buf;
}

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : (path ? path : "trace");
}

/* ------------------------------------------------------------- colours */

static uint32_t mix(uint32_t a, uint32_t b, double t)
{
	uint32_t out = 0;
	for (int s = 0; s <= 16; s += 8) {
		double x = ((a >> s) & 0xff) * (1 - t) + ((b >> s) & 0xff) * t;
		out |= (uint32_t)(x + 0.5) << s;
	}
	return out;
}

static uint32_t seq_color(double t)
{
	if (!(t > 0))
		t = 0;
	if (t > 1)
		t = 1;
	double x = t * 8;
	int i = (int)x;
	if (i >= 8)
		return viridis[8];
	return mix(viridis[i], viridis[i + 1], x - i);
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static double log2_u64(uint64_t v)
{
	return v ? log2((double)v) : 0;
}

static uint32_t color_of(const struct as_render *r, const struct panel *pn,
			 uint32_t i)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	double t;
	switch (r->o.color_by) {
	case AS_COLOR_SIZE:
		t = r->size_hi > r->size_lo
			    ? (log2_u64(b->size) - r->size_lo) /
				      (r->size_hi - r->size_lo)
			    : 0.5;
		return seq_color(t);
	case AS_COLOR_LIFETIME:
		t = r->life_hi > r->life_lo
			    ? (log2_u64(b->end - b->start) - r->life_lo) /
				      (r->life_hi - r->life_lo)
			    : 0.5;
		return seq_color(t);
	case AS_COLOR_SPACE:
		return palette[as_plan_space_of(pn->p, pn->t, i) % NPALETTE];
	case AS_COLOR_BUFFER:
	default:
		if (!b->name)
			return palette[i % NPALETTE];
		return palette[hash_name(b->name) % NPALETTE];
	}
}

static double luminance(uint32_t c)
{
	return 0.299 * ((c >> 16) & 0xff) + 0.587 * ((c >> 8) & 0xff) +
	       0.114 * (c & 0xff);
}

/* ------------------------------------------------------- public helpers */

int as_image_format_from_path(const char *path, enum as_image_format *out)
{
	const char *dot = path ? strrchr(path, '.') : NULL;
	if (!dot)
		return AS_EINVAL;
	char ext[8] = {0};
	for (size_t i = 0; i < sizeof(ext) - 1 && dot[i + 1]; i++)
		ext[i] = (char)(dot[i + 1] | 0x20);
	if (strcmp(ext, "png") == 0)
		*out = AS_IMAGE_PNG;
	else if (strcmp(ext, "svg") == 0)
		*out = AS_IMAGE_SVG;
	else
		return AS_EINVAL;
	return AS_OK;
}

static const char *const color_names[] = {"buffer", "size", "pool",
					  "lifetime"};

int as_color_by_from_name(const char *name, enum as_color_by *out)
{
	if (!name)
		return AS_EINVAL;
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, color_names[i]) == 0) {
			*out = (enum as_color_by)i;
			return AS_OK;
		}
	}
	if (strcmp(name, "space") == 0 || strcmp(name, "core") == 0) {
		*out = AS_COLOR_SPACE;
		return AS_OK;
	}
	return AS_EINVAL;
}

const char *as_color_by_name(enum as_color_by c)
{
	return (unsigned)c < 4 ? color_names[c] : "?";
}

int as_render_parse_size(const char *s, int *width, int *height)
{
	uint64_t w = 0, h = 0;
	const char *x = s ? strchr(s, 'x') : NULL;
	if (!x || x == s || !x[1])
		return AS_EINVAL;
	for (const char *p = s; p < x; p++) {
		if (*p < '0' || *p > '9' || w > 100000)
			return AS_EINVAL;
		w = w * 10 + (uint64_t)(*p - '0');
	}
	for (const char *p = x + 1; *p; p++) {
		if (*p < '0' || *p > '9' || h > 100000)
			return AS_EINVAL;
		h = h * 10 + (uint64_t)(*p - '0');
	}
	if (w < 200 || h < 200 || w > 16384 || h > 16384)
		return AS_EINVAL;
	*width = (int)w;
	*height = (int)h;
	return AS_OK;
}

void as_render_opts_init(struct as_render_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->width = 1280;
	o->height = 800;
	o->scale = 1;
	o->color_by = AS_COLOR_BUFFER;
	o->highlight = AS_NONE;
	o->compress = true;
	o->sidebar = true;
	o->header = true;
	o->min_plot_height = 0;
}

/* -------------------------------------------------------- preparation */

static bool buf_drawable(const struct as_buffer *b)
{
	return b->size > 0 && b->end > b->start;
}

static bool is_alias(const struct panel *pn, uint32_t i)
{
	return as_plan_alias_of(pn->p, pn->t, i) != AS_NONE;
}

static uint64_t extent_of(const struct panel *pn, uint32_t i)
{
	uint64_t s = pn->t->buffers[i].size;
	if (pn->p->chunk && pn->p->chunk[i] > s)
		s = pn->p->chunk[i];
	return s;
}

static uint64_t end_addr(const struct panel *pn, uint32_t i)
{
	uint64_t o = pn->p->offset[i], e = extent_of(pn, i);
	return o > UINT64_MAX - e ? UINT64_MAX : o + e;
}

struct span {
	uint64_t lo, hi;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->hi > y->hi) - (x->hi < y->hi);
}

static int cmp_span_len_desc(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	uint64_t lx = x->hi - x->lo, ly = y->hi - y->lo;
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/*
 * The address axis: [0, amax) cut into pieces. Ranges that no buffer ever
 * uses and that are more than four times larger than all the used bytes
 * together (a heap near 0x55... and mmap regions near 0x7f...) become
 * breaks drawn at a fixed 5% of the axis.
 */
static int build_axis(struct panel *pn, bool compress)
{
	uint32_t n = 0;
	struct span *sp = NULL, *gaps = NULL;
	int err = AS_ENOMEM;
	if (pn->nplaced) {
		sp = malloc(sizeof(*sp) * pn->nplaced);
		if (!sp)
			goto out;
	}
	for (uint32_t k = 0; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		if (is_alias(pn, i))
			continue;
		sp[n].lo = pn->p->offset[i];
		sp[n].hi = end_addr(pn, i);
		n++;
	}
	qsort(sp, n, sizeof(*sp), cmp_span);
	uint32_t m = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (m && sp[k].lo <= sp[m - 1].hi) {
			if (sp[k].hi > sp[m - 1].hi)
				sp[m - 1].hi = sp[k].hi;
		} else {
			sp[m++] = sp[k];
		}
	}
	uint64_t amax = pn->lb;
	if (m && sp[m - 1].hi > amax)
		amax = sp[m - 1].hi;
	if (pn->peak > amax)
		amax = pn->peak;
	if (amax == 0)
		amax = 1;
	pn->amax = amax;

	uint32_t nbrk = 0;
	gaps = malloc(sizeof(*gaps) * (m + 1));
	if (!gaps)
		goto out;
	if (compress && m) {
		uint64_t used = 0;
		uint32_t ng = 0;
		for (uint32_t k = 0; k < m; k++)
			used += sp[k].hi - sp[k].lo;
		uint64_t prev = 0;
		for (uint32_t k = 0; k < m; k++) {
			if (sp[k].lo > prev)
				gaps[ng++] = (struct span){prev, sp[k].lo};
			prev = sp[k].hi;
		}
		qsort(gaps, ng, sizeof(*gaps), cmp_span_len_desc);
		for (uint32_t k = 0; k < ng && nbrk < MAX_BREAKS; k++) {
			uint64_t len = gaps[k].hi - gaps[k].lo;
			if (len / 4 <= used || len < 4096)
				break;
			gaps[nbrk++] = gaps[k];
		}
		qsort(gaps, nbrk, sizeof(*gaps), cmp_span);
	}
	pn->pieces = calloc(2 * nbrk + 1, sizeof(*pn->pieces));
	if (!pn->pieces)
		goto out;
	uint64_t cur = 0;
	double total = 0;
	uint32_t np = 0;
	for (uint32_t k = 0; k <= nbrk; k++) {
		uint64_t stop = k < nbrk ? gaps[k].lo : amax;
		if (stop > cur) {
			pn->pieces[np++] = (struct piece){cur, stop, 0, 0, false};
			total += (double)(stop - cur);
		}
		if (k < nbrk) {
			pn->pieces[np++] =
				(struct piece){gaps[k].lo, gaps[k].hi, 0, 0, true};
			cur = gaps[k].hi;
		}
	}
	double brk_len = total * 0.05;
	double sum = total + brk_len * nbrk, acc = 0;
	for (uint32_t k = 0; k < np; k++) {
		double len = pn->pieces[k].brk
				     ? brk_len
				     : (double)(pn->pieces[k].hi - pn->pieces[k].lo);
		pn->pieces[k].u0 = acc / sum;
		acc += len;
		pn->pieces[k].u1 = k + 1 == np ? 1.0 : acc / sum;
	}
	pn->npieces = np;
	err = AS_OK;
out:
	free(sp);
	free(gaps);
	return err;
}

/* Axis fraction of an address; *in_break when it lies in a break. */
static double addr_u(const struct panel *pn, uint64_t a, bool *in_break)
{
	uint32_t lo = 0, hi = pn->npieces;
	if (in_break)
		*in_break = false;
	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (pn->pieces[mid].lo <= a)
			lo = mid;
		else
			hi = mid;
	}
	const struct piece *pc = &pn->pieces[lo];
	if (a >= pc->hi && lo + 1 == pn->npieces)
		return pc->u1 + (pc->u1 - pc->u0) *
					((double)(a - pc->hi) /
					 (double)(pc->hi - pc->lo));
	if (pc->brk) {
		if (in_break)
			*in_break = a > pc->lo && a < pc->hi;
		return a <= pc->lo ? pc->u0 : (a >= pc->hi ? pc->u1 : pc->u0);
	}
	return pc->u0 + (pc->u1 - pc->u0) *
				((double)(a - pc->lo) / (double)(pc->hi - pc->lo));
}

static uint64_t u_addr(const struct panel *pn, double u, bool *in_break)
{
	uint32_t k = 0;
	while (k + 1 < pn->npieces && pn->pieces[k].u1 <= u)
		k++;
	const struct piece *pc = &pn->pieces[k];
	*in_break = pc->brk;
	if (pc->brk)
		return pc->lo;
	double f = (u - pc->u0) / (pc->u1 - pc->u0);
	if (f < 0)
		f = 0;
	double a = (double)pc->lo + f * (double)(pc->hi - pc->lo);
	if (a >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)a;
}

static double y_of_u(const struct panel *pn, double u)
{
	return pn->py + pn->ph - (u - pn->v0) / (pn->v1 - pn->v0) * pn->ph;
}

static double y_of(const struct panel *pn, uint64_t a)
{
	return y_of_u(pn, addr_u(pn, a, NULL));
}

/* Times inside are relative to r->tbase, so that large timestamps keep
 * their precision. */
static double rel_t(const struct as_render *r, uint64_t t)
{
	return t >= r->tbase ? (double)(t - r->tbase)
			     : -(double)(r->tbase - t);
}

static double x_of(const struct as_render *r, const struct panel *pn,
		   double t)
{
	return pn->px + (t - r->t0) / (r->t1 - r->t0) * pn->pw;
}

/* Axis fraction, with a fast path for the usual single-piece axis. */
static inline double fast_u(const struct panel *pn, uint64_t a)
{
	if (pn->npieces == 1 && a <= pn->pieces[0].hi)
		return (double)(a - pn->pieces[0].lo) /
		       (double)(pn->pieces[0].hi - pn->pieces[0].lo);
	return addr_u(pn, a, NULL);
}

/* The geometry and block bounds of the plain buffers (struct geo). */
static int index_geo(const struct as_render *r, struct panel *pn)
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
		g[k].u0 = fast_u(pn, off);
		g[k].u1 = fast_u(pn, top);
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

/* Level of a lifetime in the hit index: the first wide enough. */
static uint32_t hix_level(const struct hit_index *h, uint64_t len)
{
	uint32_t j = 0;
	uint64_t w = h->w0;
	while (len > w && j + 1 < h->nlev) {
		w <<= 1;
		j++;
	}
	return j;
}

static int index_hits(const struct as_render *r, struct panel *pn)
{
	struct hit_index *h = &pn->hix;
	const uint32_t n = pn->nplaced;
	free(h->idx);
	free(h->off);
	memset(h, 0, sizeof(*h));
	uint64_t tend = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t e = pn->t->buffers[pn->bufs[k]].end - r->tbase;
		tend = e > tend ? e : tend;
	}
	/* Beyond 2^50 time units doubles no longer tell every unit apart:
	 * hit tests then scan every buffer (no index). */
	if (tend > ((uint64_t)1 << 50))
		return AS_OK;
	/* About four buffers a bucket at the lowest level. */
	uint64_t nb0 = n / 4 > 0 ? n / 4 : 1;
	if (nb0 > ((uint64_t)1 << 22))
		nb0 = (uint64_t)1 << 22;
	h->tend = tend;
	h->w0 = tend / nb0 + 1;
	h->nlev = 1;
	for (uint64_t w = h->w0; w < tend && h->nlev < HIX_LEVELS; w <<= 1)
		h->nlev++;
	uint64_t total = 0;
	for (uint32_t j = 0; j < h->nlev; j++) {
		h->base[j] = (uint32_t)total;
		h->nb[j] = (uint32_t)((tend >> j) / h->w0 + 1);
		total += h->nb[j];
	}
	h->idx = malloc(sizeof(uint32_t) * ((size_t)n + 1));
	h->off = calloc(total + 1, sizeof(uint32_t));
	if (!h->idx || !h->off) {
		free(h->idx);
		free(h->off);
		memset(h, 0, sizeof(*h));
		return AS_ENOMEM;
	}
	/* A counting sort, stable: positions ascend within a bucket. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < n; k++) {
			const struct as_buffer *b =
				&pn->t->buffers[pn->bufs[k]];
			uint64_t s = b->start - r->tbase;
			uint32_t j = hix_level(h, b->end - b->start);
			uint64_t at = h->base[j] + s / (h->w0 << j);
			if (pass == 0)
				h->off[at + 1]++;
			else
				h->idx[h->off[at]++] = k;
		}
		if (pass == 0) {
			for (uint64_t c = 0; c < total; c++)
				h->off[c + 1] += h->off[c];
		} else { /* each off[c] moved to its bucket's end: shift back */
			memmove(h->off + 1, h->off, sizeof(uint32_t) * total);
			h->off[0] = 0;
		}
	}
	return AS_OK;
}

/* What frames need of the panel's buffers, prepared once per axis. */
static int index_panel(const struct as_render *r, struct panel *pn)
{
	int err = index_geo(r, pn);
	return err ? err : index_hits(r, pn);
}

struct sized {
	uint64_t size;
	uint32_t idx;
};

static int cmp_by_size_desc(const void *a, const void *b)
{
	const struct sized *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Placed, non-alias buffers live at t, largest first (all of them). */
static int collect_live(const struct panel *pn, uint64_t t, uint32_t **out,
			uint64_t *n_out, uint64_t *bytes)
{
	struct sized *v = malloc(sizeof(*v) * (pn->nplaced ? pn->nplaced : 1));
	uint64_t n = 0, sum = 0;
	if (!v)
		return AS_ENOMEM;
	for (uint32_t k = 0; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		const struct as_buffer *b = &pn->t->buffers[i];
		if (is_alias(pn, i) || b->start > t || b->end <= t)
			continue;
		v[n].size = b->size;
		v[n++].idx = i;
		sum += b->size;
	}
	qsort(v, n, sizeof(*v), cmp_by_size_desc);
	uint32_t *idx = (uint32_t *)(void *)v; /* compact in place */
	for (uint64_t k = 0; k < n; k++)
		idx[k] = v[k].idx;
	*out = idx;
	*n_out = n;
	if (bytes)
		*bytes = sum;
	return AS_OK;
}

static int prepare_panel(struct panel *pn, bool compress)
{
	const struct as_trace *t = pn->t;
	const struct as_plan *p = pn->p;
	uint32_t nb = t->nbuffers < p->nbuffers ? t->nbuffers : p->nbuffers;
	uint32_t nplaced = 0, nfailed = 0;
	for (uint32_t i = 0; i < nb; i++) {
		if (!buf_drawable(&t->buffers[i]) ||
		    as_plan_space_of(p, t, i) != pn->space)
			continue;
		if (p->offset[i] == AS_NO_OFFSET) {
			if (as_plan_alias_of(p, t, i) == AS_NONE)
				nfailed++;
		} else {
			nplaced++;
		}
	}
	pn->bufs = malloc(sizeof(uint32_t) * ((size_t)nplaced + nfailed + 1));
	if (!pn->bufs)
		return AS_ENOMEM;
	uint32_t a = 0, f = nplaced;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < nb; i++) {
			if (!buf_drawable(&t->buffers[i]) ||
			    as_plan_space_of(p, t, i) != pn->space)
				continue;
			bool alias = as_plan_alias_of(p, t, i) != AS_NONE;
			if (p->offset[i] != AS_NO_OFFSET) {
				if (alias == (pass == 1))
					pn->bufs[a++] = i;
			} else if (!alias && pass == 0) {
				pn->bufs[f++] = i;
			}
		}
		if (pass == 0)
			pn->nplain = a;
	}
	pn->nplaced = nplaced;
	pn->nbufs = nplaced + nfailed;
	pn->colors_for = -1;
	pn->failed = nfailed;
	pn->peak = as_plan_peak(p, t, pn->space);
	/* The trace's bound of a space holds when the plan keeps every
	 * buffer in its own space; a plan that moves buffers between spaces
	 * (levels, cores) has no per-space bound from the trace. */
	bool own_spaces = true;
	for (uint32_t i = 0; p->space && i < nb && own_spaces; i++)
		own_spaces = p->space[i] == t->buffers[i].space;
	pn->lb = own_spaces && pn->space < t->nspaces
			 ? as_trace_lower_bound_space(t, pn->space)
			 : 0;

	/* The peak is first reached when the buffer ending highest starts. */
	uint64_t best = 0;
	for (uint32_t k = 0; k < nplaced; k++) {
		uint32_t i = pn->bufs[k];
		if (is_alias(pn, i))
			continue;
		uint64_t e = pn->p->offset[i] + t->buffers[i].size;
		if (!pn->has_peak || e > best ||
		    (e == best && t->buffers[i].start < pn->peak_time)) {
			best = e;
			pn->peak_time = t->buffers[i].start;
			pn->peak_buf = i;
			pn->has_peak = true;
		}
	}
	if (pn->has_peak) {
		uint32_t *v;
		uint64_t n;
		int err = collect_live(pn, pn->peak_time, &v, &n,
				       &pn->live_bytes);
		if (err)
			return err;
		pn->nlive = n < LIVE_MAX ? (uint32_t)n : LIVE_MAX;
		memcpy(pn->live, v, sizeof(uint32_t) * pn->nlive);
		pn->nlive_total = n;
		free(v);
	}

	/* Validity of this space: a violation listed here, or unknown. */
	pn->valid = true;
	if (pn->rep && !pn->rep->valid) {
		bool here = pn->rep->violations > pn->rep->nfirst;
		for (uint32_t k = 0; k < pn->rep->nfirst; k++) {
			uint32_t i = pn->rep->first[k].a;
			if (i < nb && as_plan_space_of(p, t, i) == pn->space) {
				here = true;
				pn->violations++;
			}
		}
		if (pn->rep->violations > pn->rep->nfirst || pn->npieces == 0)
			pn->violations = pn->rep->violations;
		pn->valid = !here;
	}
	return build_axis(pn, compress);
}

static uint16_t plan_nspaces(const struct as_plan *p, const struct as_trace *t)
{
	if (p->nspaces)
		return p->nspaces;
	return t->nspaces ? t->nspaces : 1;
}

static void free_panels(struct as_render *r)
{
	for (size_t i = 0; i < r->npanels; i++) {
		free(r->panels[i].bufs);
		free(r->panels[i].pieces);
		free(r->panels[i].ticks);
		free(r->panels[i].colors);
		free(r->panels[i].lod_cand);
		free(r->panels[i].lod_raster);
		free(r->panels[i].geo);
		free(r->panels[i].blk_end);
		free(r->panels[i].blk_start);
		free(r->panels[i].hix.idx);
		free(r->panels[i].hix.off);
	}
	free(r->panels);
	r->panels = NULL;
	r->npanels = 0;
}

void as_render_destroy(struct as_render *r)
{
	if (!r)
		return;
	free_panels(r);
	free(r->src);
	free(r->own);
	measurer_destroy(r->m);
	free(r->vd);
	free(r->hd);
	free(r->raster);
	free(r);
}

static int layout(struct as_render *r);

int as_render_create(const struct as_render_panel *panels, size_t n,
		     const struct as_render_opts *o, struct as_render **out,
		     struct as_diag *diag)
{
	struct as_render *r = calloc(1, sizeof(*r));
	int err = AS_ENOMEM;
	if (!r)
		return AS_ENOMEM;
	if (o)
		r->o = *o;
	else
		as_render_opts_init(&r->o);
	if (n == 0 || !panels) {
		err = as_diag_set(diag, 0, AS_EINVAL, "nothing to draw");
		goto fail;
	}
	r->src = calloc(n, sizeof(*r->src));
	r->own = calloc(n, sizeof(*r->own));
	r->m = measurer_create();
	if (!r->src || !r->own || !r->m)
		goto fail;
	memcpy(r->src, panels, n * sizeof(*panels));
	r->nsrc = n;

	size_t total = 0;
	for (size_t s = 0; s < n; s++) {
		const struct as_render_panel *sp = &panels[s];
		if (!sp->trace || !sp->plan || !sp->plan->offset) {
			err = as_diag_set(diag, 0, AS_EINVAL,
					  "panel %zu has no trace or plan", s);
			goto fail;
		}
		uint16_t ns = plan_nspaces(sp->plan, sp->trace);
		if (sp->space >= (int)ns) {
			err = as_diag_set(diag, 0, AS_EINVAL,
					  "panel %zu: no space %d (the plan "
					  "has %u)",
					  s, sp->space, (unsigned)ns);
			goto fail;
		}
		total += sp->space == AS_RENDER_ALL_SPACES ? ns : 1;
		if (!sp->report) {
			err = as_validate(sp->trace, sp->plan, &r->own[s]);
			if (err)
				goto fail;
		}
	}
	r->panels = calloc(total, sizeof(*r->panels));
	if (!r->panels)
		goto fail;

	/* Expand spaces; a multi-space plan keeps only the spaces it uses. */
	for (size_t s = 0; s < n; s++) {
		const struct as_render_panel *sp = &panels[s];
		const struct as_trace *t = sp->trace;
		uint16_t ns = plan_nspaces(sp->plan, t);
		int first = sp->space == AS_RENDER_ALL_SPACES ? 0 : sp->space;
		int last = sp->space == AS_RENDER_ALL_SPACES ? ns - 1 : sp->space;
		size_t before = r->npanels;
		for (int sidx = first; sidx <= last; sidx++) {
			struct panel *pn = &r->panels[r->npanels];
			memset(pn, 0, sizeof(*pn));
			pn->t = t;
			pn->p = sp->plan;
			pn->rep = sp->report ? sp->report : &r->own[s];
			pn->title = sp->title ? sp->title : "plan";
			pn->source = (uint32_t)s;
			pn->space = (uint16_t)sidx;
			pn->show_space = ns > 1;
			render_clean_text(
				as_plan_space_name(sp->plan, t, (uint16_t)sidx),
				pn->space_name, sizeof(pn->space_name));
			r->npanels++;
			err = prepare_panel(pn, r->o.compress);
			if (err)
				goto fail;
			if (sp->space == AS_RENDER_ALL_SPACES && ns > 1 &&
			    pn->nbufs == 0) {
				free(pn->bufs);
				free(pn->pieces);
				r->npanels--;
			}
		}
		if (r->npanels == before) { /* nothing anywhere: keep space 0 */
			struct panel *pn = &r->panels[r->npanels++];
			memset(pn, 0, sizeof(*pn));
			pn->t = t;
			pn->p = sp->plan;
			pn->rep = sp->report ? sp->report : &r->own[s];
			pn->title = sp->title ? sp->title : "plan";
			pn->source = (uint32_t)s;
			render_clean_text(as_plan_space_name(sp->plan, t, 0),
					  pn->space_name, sizeof(pn->space_name));
			err = prepare_panel(pn, r->o.compress);
			if (err)
				goto fail;
		}
	}

	/* Time axis and colour ranges over every trace. */
	uint64_t tbase = UINT64_MAX, tend = 0;
	r->size_lo = r->life_lo = INFINITY;
	r->size_hi = r->life_hi = -INFINITY;
	for (size_t s = 0; s < n; s++) {
		const struct as_trace *t = panels[s].trace;
		if (s > 0 && panels[s - 1].trace == t)
			continue;
		if (t->end_time > tend)
			tend = t->end_time;
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			const struct as_buffer *b = &t->buffers[i];
			if (!buf_drawable(b))
				continue;
			double ls = log2_u64(b->size);
			double ll = log2_u64(b->end - b->start);
			r->size_lo = ls < r->size_lo ? ls : r->size_lo;
			r->size_hi = ls > r->size_hi ? ls : r->size_hi;
			r->life_lo = ll < r->life_lo ? ll : r->life_lo;
			r->life_hi = ll > r->life_hi ? ll : r->life_hi;
			if (b->end > tend)
				tend = b->end;
			if (b->start < tbase)
				tbase = b->start;
		}
	}
	r->tbase = tbase <= tend ? tbase : 0;
	r->tmax = (double)(tend - r->tbase);
	if (r->tmax <= 0)
		r->tmax = 1;
	/* Labels count from 0 unless the trace starts far from it. */
	r->rel_labels = (double)r->tbase > 10 * r->tmax;
	r->trace_lb = as_trace_lower_bound(panels[0].trace);
	uint64_t ops = 0;
	for (uint32_t e = 0; e < panels[0].trace->nevents; e++)
		ops += panels[0].trace->events[e].kind == AS_EV_ALLOC ||
		       panels[0].trace->events[e].kind == AS_EV_FREE;
	r->time_is_index = ops == panels[0].trace->end_time &&
			   !(panels[0].trace->format &&
			     strcmp(panels[0].trace->format, "csv") == 0);
	for (size_t i = 0; i < r->npanels; i++) {
		err = index_panel(r, &r->panels[i]);
		if (err)
			goto fail;
	}
	err = layout(r);
	if (err)
		goto fail;
	*out = r;
	return AS_OK;
fail:
	if (err == AS_ENOMEM)
		as_diag_set(diag, 0, err, "out of memory while drawing");
	as_render_destroy(r);
	return err;
}

/* -------------------------------------------------------------- layout */

#define FS_TITLE 13.0
#define FS_STAT 12.0
#define FS_TICK 11.0
#define FS_SMALL 10.0
#define TITLE_H 22
#define STRIP_H 14
#define PANEL_GAP 14
#define BOTTOM_H 42
#define TOP_PAD_PX 22

/* Labels placed without overlap, in order of priority. */
static bool ticks_room(const struct tick *t, uint32_t n, double y, double h)
{
	for (uint32_t k = 0; k < n; k++)
		if (fabs(t[k].y - y) < h)
			return false;
	return true;
}

/* Address ticks of one panel: per uncompressed piece, powers of two. */
static int build_ticks(struct as_render *r, struct panel *pn)
{
	free(pn->ticks);
	pn->ticks = NULL;
	pn->nticks = 0;
	uint32_t cap = 64, n = 0;
	struct tick *t = calloc(cap, sizeof(*t));
	if (!t)
		return AS_ENOMEM;
	/* Labels stay clear of the failed strip and title above. */
	double ytop = pn->py + 6, ybot = pn->py + pn->ph;
	const double min_gap = FS_TICK + 5;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < pn->npieces; k++) {
			const struct piece *pc = &pn->pieces[k];
			if (pc->brk)
				continue;
			double ya = y_of_u(pn, pc->u0), yb = y_of_u(pn, pc->u1);
			bool hex = pc->hi > ((uint64_t)1 << 40) ||
				   (pc->lo >= ((uint64_t)1 << 32));
			if (pass == 0) {
				/* The base of a piece that follows a break. */
				if (k == 0 || ya > ybot + 0.5 || ya < ytop)
					continue;
				if (n < cap && ticks_room(t, n, ya, min_gap)) {
					t[n].y = ya;
					t[n].major = true;
					if (hex)
						snprintf(t[n].label,
							 sizeof(t[n].label),
							 "0x%llx",
							 (unsigned long long)pc->lo);
					else
						fmt_bytes_tick(pc->lo, t[n].label,
							       sizeof(t[n].label));
					n++;
				}
				continue;
			}
			double px_len = ya - yb;
			if (px_len <= 0)
				continue;
			double bpp = (double)(pc->hi - pc->lo) / px_len;
			double want = bpp * 36;
			uint64_t step = 1;
			while ((double)step < want && step < ((uint64_t)1 << 62))
				step <<= 1;
			/* Visible address range of the piece. */
			double uvis0 = pn->v0 > pc->u0 ? pn->v0 : pc->u0;
			double uvis1 = pn->v1 < pc->u1 ? pn->v1 : pc->u1;
			if (uvis1 <= uvis0)
				continue;
			bool ib;
			uint64_t a0 = u_addr(pn, uvis0, &ib);
			/* Hex pieces count from their base, others from 0. */
			uint64_t base = hex ? pc->lo : 0;
			if (a0 < pc->lo)
				a0 = pc->lo;
			uint64_t first =
				base + (a0 - base + step - 1) / step * step;
			if (first < a0) /* overflow */
				continue;
			for (uint64_t a = first; a <= pc->hi && n < cap;) {
				double y = y_of(pn, a);
				if (y < ytop - 0.5)
					break;
				if (y <= ybot + 0.5 &&
				    ticks_room(t, n, y, min_gap)) {
					t[n].y = y;
					t[n].major = false;
					if (hex && a != pc->lo) {
						char b[32];
						fmt_bytes_tick(a - pc->lo, b,
							       sizeof(b));
						snprintf(t[n].label,
							 sizeof(t[n].label),
							 "+%s", b);
					} else if (hex) {
						snprintf(t[n].label,
							 sizeof(t[n].label),
							 "0x%llx",
							 (unsigned long long)a);
					} else {
						fmt_bytes_tick(a, t[n].label,
							       sizeof(t[n].label));
					}
					n++;
				}
				if (a > UINT64_MAX - step)
					break;
				a += step;
			}
		}
	}
	pn->ticks = t;
	pn->nticks = n;
	return AS_OK;
}

static int layout(struct as_render *r)
{
	struct as_render_opts *o = &r->o;
	if (o->width <= 0 || o->height <= 0) {
		o->width = 1280;
		o->height = 800;
	}
	if (!(o->scale > 0))
		o->scale = 1;
	int W = o->width, H = o->height;
	r->header_h = o->header ? 28 : 8;
	r->sidebar_w = 0;
	if (o->sidebar && W >= 700) {
		r->sidebar_w = W / 5;
		if (r->sidebar_w < 180)
			r->sidebar_w = 180;
		if (r->sidebar_w > 280)
			r->sidebar_w = 280;
	}
	if (o->view.t1 > o->view.t0) {
		r->t0 = o->view.t0 - (double)r->tbase;
		r->t1 = o->view.t1 - (double)r->tbase;
	} else {
		r->t0 = 0;
		r->t1 = r->tmax;
	}

	int chrome = r->header_h + BOTTOM_H;
	for (size_t i = 0; i < r->npanels; i++)
		chrome += TITLE_H + (r->panels[i].failed ? STRIP_H : 0) +
			  (i + 1 < r->npanels ? PANEL_GAP : 0);
	int ph = (H - chrome) / (int)r->npanels;
	if (o->min_plot_height > 0 && ph < o->min_plot_height &&
	    o->min_plot_height <= 4096) {
		/* Taller rather than cramped: the picture grows. */
		ph = o->min_plot_height;
		long grown = (long)chrome + (long)ph * (long)r->npanels;
		o->height = grown > 32767 ? 32767 : (int)grown;
		H = o->height;
	}
	if (ph < 40)
		ph = 40;

	/* Vertical placement and address ticks (they need only heights). */
	double y = r->header_h;
	for (size_t i = 0; i < r->npanels; i++) {
		struct panel *pn = &r->panels[i];
		pn->top = y;
		y += TITLE_H;
		pn->strip_h = pn->failed ? STRIP_H : 0;
		pn->strip_y = y;
		y += pn->strip_h;
		pn->py = (int)y;
		pn->ph = ph;
		y += ph + PANEL_GAP;
		if (o->view.y1 > o->view.y0) {
			pn->v0 = o->view.y0;
			pn->v1 = o->view.y1;
		} else {
			double pad = ph / 5.0 < TOP_PAD_PX ? ph / 5.0 : TOP_PAD_PX;
			pn->v0 = 0;
			pn->v1 = (double)ph / (ph - pad);
		}
		int err = build_ticks(r, pn);
		if (err)
			return err;
	}

	/* The left margin fits the widest tick label of every panel. */
	double widest = 0;
	for (size_t i = 0; i < r->npanels; i++) {
		struct panel *pn = &r->panels[i];
		for (uint32_t k = 0; k < pn->nticks; k++) {
			double w = measure_text(r->m, pn->ticks[k].label, FS_TICK,
						pn->ticks[k].major);
			if (w > widest)
				widest = w;
		}
	}
	r->left = (int)ceil(widest) + 16;
	if (r->left < 56)
		r->left = 56;
	int pw = W - r->left - r->sidebar_w - 14;
	if (pw < 50)
		pw = 50;
	for (size_t i = 0; i < r->npanels; i++) {
		r->panels[i].px = r->left;
		r->panels[i].pw = pw;
	}
	return AS_OK;
}

int as_render_set_opts(struct as_render *r, const struct as_render_opts *o)
{
	if (!r || !o)
		return AS_EINVAL;
	bool rebuild = o->compress != r->o.compress;
	r->o = *o;
	if (rebuild) {
		for (size_t i = 0; i < r->npanels; i++) {
			struct panel *pn = &r->panels[i];
			free(pn->pieces);
			pn->pieces = NULL;
			pn->lod_valid = false;
			int err = build_axis(pn, o->compress);
			if (!err)
				err = index_panel(r, pn);
			if (err)
				return err;
		}
	}
	return layout(r);
}

const struct as_render_opts *as_render_get_opts(const struct as_render *r)
{
	return &r->o;
}

size_t as_render_panel_count(const struct as_render *r)
{
	return r ? r->npanels : 0;
}

int as_render_panel_info(const struct as_render *r, size_t i,
			 struct as_render_panel_info *out)
{
	if (!r || i >= r->npanels || !out)
		return AS_EINVAL;
	const struct panel *pn = &r->panels[i];
	out->title = pn->title;
	out->source = pn->source;
	out->space = pn->space;
	out->space_name = pn->space_name;
	out->x = pn->px;
	out->y = pn->py;
	out->w = pn->pw;
	out->h = pn->ph;
	out->peak = pn->peak;
	out->lower_bound = pn->lb;
	out->peak_time = pn->peak_time;
	out->buffers = pn->nbufs;
	out->failed = pn->failed;
	out->valid = pn->valid;
	out->violations = pn->violations;
	return AS_OK;
}

int as_render_to_pixel(const struct as_render *r, size_t i, double time,
		       uint64_t address, double *x, double *y)
{
	if (!r || i >= r->npanels)
		return AS_EINVAL;
	const struct panel *pn = &r->panels[i];
	*x = x_of(r, pn, time - (double)r->tbase);
	*y = y_of(pn, address);
	return AS_OK;
}

double as_render_axis_at(const struct as_render *r, size_t i,
			 uint64_t address)
{
	if (!r || i >= r->npanels)
		return -1;
	return addr_u(&r->panels[i], address, NULL);
}

int64_t as_render_live_at(const struct as_render *r, size_t i, double time,
			  uint32_t *out, size_t max)
{
	if (!r || i >= r->npanels)
		return AS_EINVAL;
	uint32_t *v;
	uint64_t n;
	if (!(time >= 0) || time >= 18446744073709551615.0)
		return 0;
	int err = collect_live(&r->panels[i], (uint64_t)floor(time), &v, &n,
			       NULL);
	if (err)
		return err;
	for (uint64_t k = 0; k < n && k < max; k++)
		out[k] = v[k];
	free(v);
	return (int64_t)n;
}

uint32_t as_render_buffer_color(const struct as_render *r, size_t panel,
				uint32_t buffer)
{
	if (!r || panel >= r->npanels ||
	    buffer >= r->panels[panel].t->nbuffers)
		return 0;
	return color_of(r, &r->panels[panel], buffer);
}

/* Pixel rectangle of a placed buffer (unclipped, unsnapped). */
static void buf_rect(const struct as_render *r, const struct panel *pn,
		     uint32_t i, uint64_t extent, double *x0, double *x1,
		     double *y0, double *y1)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	uint64_t off = pn->p->offset[i];
	uint64_t top = off > UINT64_MAX - extent ? UINT64_MAX : off + extent;
	*x0 = x_of(r, pn, rel_t(r, b->start));
	*x1 = x_of(r, pn, rel_t(r, b->end));
	*y0 = y_of(pn, top);
	*y1 = y_of(pn, off);
}

static double rect_dist(double x, double y, double x0, double x1, double y0,
			double y1)
{
	double dx = x < x0 ? x0 - x : (x > x1 ? x - x1 : 0);
	double dy = y < y0 ? y0 - y : (y > y1 ? y - y1 : 0);
	return dx > dy ? dx : dy;
}

/*
 * The best hit so far. In the order of bufs a scan keeps the first of the
 * smallest containing rectangles and the last of the nearest within slop;
 * the index visits buffers in another order, so ties go by position.
 */
struct hit_best {
	double area, d;
	uint32_t in, near; /* positions in bufs, or AS_NONE */
};

static void hit_consider(const struct as_render *r, const struct panel *pn,
			 uint32_t k, double x, double y, struct hit_best *hb)
{
	uint32_t b = pn->bufs[k];
	double x0, x1, y0, y1;
	buf_rect(r, pn, b, extent_of(pn, b), &x0, &x1, &y0, &y1);
	double d = rect_dist(x, y, x0, x1, y0, y1);
	if (d == 0) {
		double area = (x1 - x0) * (y1 - y0);
		if (area < hb->area ||
		    (area == hb->area && hb->in != AS_NONE && k < hb->in)) {
			hb->area = area;
			hb->in = k;
		}
	} else if (d < hb->d ||
		   (d == hb->d && (hb->near == AS_NONE || k > hb->near))) {
		hb->d = d;
		hb->near = k;
	}
}

/*
 * The times (relative to tbase, whole units) that a buffer within slop
 * pixels of x must meet, padded by a pixel and a unit either side; false
 * when the index cannot answer (no index, odd numbers): scan everything.
 */
static bool hit_range(const struct as_render *r, const struct panel *pn,
		      double x, double slop, uint64_t *qa, uint64_t *qb)
{
	if (!pn->hix.idx)
		return false;
	double s = slop > 0 ? slop : 0;
	double k = (r->t1 - r->t0) / pn->pw;
	double ta = r->t0 + (x - s - 1 - pn->px) * k;
	double tb = r->t0 + (x + s + 1 - pn->px) * k;
	if (!isfinite(ta) || !isfinite(tb) || !(tb >= ta))
		return false;
	double tend = (double)pn->hix.tend;
	ta = floor(ta) - 1;
	tb = ceil(tb) + 1;
	ta = ta < 0 ? 0 : (ta > tend ? tend : ta);
	tb = tb < 0 ? 0 : (tb > tend ? tend : tb);
	*qa = (uint64_t)ta;
	*qb = (uint64_t)tb;
	return true;
}

int as_render_hit_test(const struct as_render *r, double x, double y,
		       double slop, struct as_render_hit *out)
{
	if (!r || !out)
		return AS_EINVAL;
	memset(out, 0, sizeof(*out));
	out->panel = -1;
	out->buffer = AS_NONE;
	for (size_t i = 0; i < r->npanels; i++) {
		const struct panel *pn = &r->panels[i];
		double bottom = pn->py + pn->ph;
		if (y < pn->top || y >= bottom + PANEL_GAP / 2.0 ||
		    (i + 1 == r->npanels && y >= bottom))
			continue;
		out->panel = (int)i;
		out->time = (double)r->tbase + r->t0 +
			    (x - pn->px) / pn->pw * (r->t1 - r->t0);
		out->axis = pn->v0 + (pn->py + pn->ph - y) / pn->ph *
					     (pn->v1 - pn->v0);
		out->address = u_addr(pn, out->axis, &out->in_break);
		out->in_plot = x >= pn->px && x < pn->px + pn->pw &&
			       y >= pn->py && y < bottom;
		bool in_strip = pn->strip_h > 0 && y >= pn->strip_y &&
				y < pn->strip_y + pn->strip_h &&
				x >= pn->px && x < pn->px + pn->pw;
		if (in_strip) {
			double best = slop + 1;
			for (uint32_t k = pn->nplaced; k < pn->nbufs; k++) {
				uint32_t b = pn->bufs[k];
				double x0 = x_of(r, pn, rel_t(r, pn->t->buffers[b].start));
				double x1 = x_of(r, pn, rel_t(r, pn->t->buffers[b].end));
				double d = rect_dist(x, 0, x0, x1, 0, 0);
				if (d < best) {
					best = d;
					out->buffer = b;
				}
			}
			return AS_OK;
		}
		if (!out->in_plot)
			return AS_OK;
		/* The smallest rectangle containing the point (aliases sit
		 * inside their parents), else the nearest within slop. */
		struct hit_best hb = {INFINITY, slop, AS_NONE, AS_NONE};
		uint64_t qa, qb;
		if (!hit_range(r, pn, x, slop, &qa, &qb)) {
			for (uint32_t k = 0; k < pn->nplaced; k++)
				hit_consider(r, pn, k, x, y, &hb);
		} else {
			const struct hit_index *h = &pn->hix;
			for (uint32_t j = 0; j < h->nlev; j++) {
				uint64_t w = h->w0 << j;
				uint64_t lo = qa / w, hi = qb / w;
				lo = lo > 0 ? lo - 1 : 0;
				if (hi >= h->nb[j])
					hi = h->nb[j] - 1;
				if (lo > hi)
					continue;
				uint32_t c = h->off[h->base[j] + lo];
				uint32_t e = h->off[h->base[j] + hi + 1];
				for (; c < e; c++)
					hit_consider(r, pn, h->idx[c], x, y,
						     &hb);
			}
		}
		out->buffer = hb.in != AS_NONE ? pn->bufs[hb.in]
			      : hb.near != AS_NONE ? pn->bufs[hb.near]
						   : AS_NONE;
		return AS_OK;
	}
	return AS_OK;
}

/* ----------------------------------------------------------- emission */

struct box {
	double x0, y0, x1, y1;
};

static bool box_hit(const struct box *a, const struct box *b)
{
	return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 &&
	       b->y0 < a->y1;
}

#define RECT(c, x, y, w, h, f, s, sw, ti) \
	(c)->impl->rect((c), (x), (y), (w), (h), (f), (s), (sw), (ti))
#define LINE(c, x0, y0, x1, y1, col, w, d) \
	(c)->impl->line((c), (x0), (y0), (x1), (y1), (col), (w), (d))
#define TEXT(c, x, y, s, sz, b, col, an) \
	(c)->impl->text((c), (x), (y), (s), (sz), (b), (col), (an))

/* Text on a light box, for labels over rectangles. */
static struct box label_box(struct as_render *r, double x, double y,
			    const char *s, double size, bool bold, int anchor)
{
	double w = measure_text(r->m, s, size, bold);
	double x0 = anchor == ANCHOR_END ? x - w : x;
	return (struct box){x0 - 4, y - size - 1, x0 + w + 4, y + 4};
}

static void boxed_text(struct as_render *r, struct canvas *c,
		       const struct box *b, double x, double y, const char *s,
		       double size, bool bold, uint32_t col, int anchor)
{
	RECT(c, b->x0, b->y0, b->x1 - b->x0, b->y1 - b->y0, C_LABEL_BG, 0, 0,
	     NULL);
	TEXT(c, x, y, s, size, bold, col, anchor);
}

struct cand {
	float x0, y0, x1, y1;
	uint32_t idx; /* position in the panel's bufs */
};

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

/* Inlined even when large: a copy per constant channel count. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

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

static ALWAYS_INLINE void dens_col(struct dens *d, int col, double f,
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
static ALWAYS_INLINE void dens_add_ch(struct dens *d, double x0, double x1,
				      double y0, double y1, const float *rgb,
				      const int ch)
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
static void dens_resolve(struct dens *d, uint32_t *out)
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
			uint32_t *orow = out + (size_t)row * W;
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
			out[(size_t)row * W + col] = px;
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


/*
 * A buffer in words, for SVG tooltips and the viewer:
 *   name
 *   8.00 KiB (8192 B) at offset 3072 (0xc00)
 *   live [1, 6), align 64
 *   chunk 10.0 KiB, waste 2.00 KiB          (online allocators)
 *     first stack frames                    (where the trace has them)
 */
static void buffer_title(const struct panel *pn, uint32_t i, char *buf,
			 size_t len)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	char name[160], sz[32], where[64], al[32] = "", ck[80] = "";
	uint64_t off = pn->p->offset[i];
	render_clean_text(b->name ? b->name : "?", name, sizeof(name));
	as_human_bytes(b->size, sz, sizeof(sz));
	if (off == AS_NO_OFFSET)
		snprintf(where, sizeof(where), ": FAILED, no address");
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
	const char *fr = pn->t->frames ? pn->t->frames[i] : NULL;
	for (int k = 0; fr && *fr && k < 3 && n > 0 && (size_t)n + 2 < len;
	     k++) {
		const char *nl = strchr(fr, '\n');
		size_t l = nl ? (size_t)(nl - fr) : strlen(fr);
		char line[120];
		snprintf(line, sizeof(line), "%.*s", (int)(l < 119 ? l : 119),
			 fr);
		char clean[160];
		render_clean_text(line, clean, sizeof(clean));
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
	buffer_title(&r->panels[panel], buffer, buf, len);
	return buf;
}

static uint32_t darker(uint32_t c)
{
	return 0xff000000u | mix(c, 0x000000, 0.4);
}

/* Zig-zag marks of an axis break at height y across [x0, x1]. */
static void emit_zigzag(struct canvas *c, double x0, double x1, double y)
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

static void emit_title(struct as_render *r, struct canvas *c,
		       const struct panel *pn)
{
	char seg[6][160];
	uint32_t col[6];
	bool bold[6];
	int n = 0;
	char a[32], b[32];
	double y = pn->top + 16;
	double maxw = r->o.width - pn->px - 8;

	snprintf(seg[n], sizeof(seg[n]), "peak %s",
		 as_human_bytes(pn->peak, a, sizeof(a)));
	col[n] = C_TEXT;
	bold[n++] = true;
	if (pn->lb) {
		char g[32];
		double gap = ((double)pn->peak - (double)pn->lb) / pn->lb * 100;
		snprintf(seg[n], sizeof(seg[n]), "lower bound %s",
			 as_human_bytes(pn->lb, b, sizeof(b)));
		col[n] = C_TEXT;
		bold[n++] = false;
		if (gap > 9999)
			snprintf(seg[n], sizeof(seg[n]), "gap > +9999%%");
		else
			snprintf(seg[n], sizeof(seg[n]), "gap %s%s%%",
				 gap >= 0 ? "+" : "",
				 fmt_fixed(gap, 1, g, sizeof(g)));
		col[n] = C_TEXT;
		bold[n++] = false;
	}
	if (pn->valid) {
		snprintf(seg[n], sizeof(seg[n]), "valid");
		col[n] = C_OK;
		bold[n++] = false;
	} else {
		char v[32];
		fmt_count((double)pn->violations, v, sizeof(v));
		snprintf(seg[n], sizeof(seg[n]), "INVALID: %s violation%s", v,
			 pn->violations == 1 ? "" : "s");
		col[n] = C_RED;
		bold[n++] = true;
	}
	snprintf(seg[n], sizeof(seg[n]), "%u failed", pn->failed);
	col[n] = pn->failed ? C_RED : C_TEXT2;
	bold[n++] = pn->failed > 0;

	double stats_w = 0;
	for (int k = 0; k < n; k++)
		stats_w += measure_text(r->m, seg[k], FS_STAT, bold[k]) + 18;
	char title[200], full[200];
	if (pn->show_space)
		snprintf(full, sizeof(full), "%s \xc2\xb7 %s", pn->title,
			 pn->space_name);
	else
		snprintf(full, sizeof(full), "%s", pn->title);
	double room = maxw - stats_w - 18;
	if (room < 80)
		room = 80;
	fit_text(r->m, full, FS_TITLE, true, room, title, sizeof(title));
	double x = pn->px;
	TEXT(c, x, y, title, FS_TITLE, true, C_TEXT, ANCHOR_START);
	x += measure_text(r->m, title, FS_TITLE, true) + 18;
	for (int k = 0; k < n; k++) {
		double w = measure_text(r->m, seg[k], FS_STAT, bold[k]);
		if (x + w > r->o.width - 4)
			break;
		TEXT(c, x, y, seg[k], FS_STAT, bold[k], col[k], ANCHOR_START);
		x += w + 18;
	}
}

static void emit_failed_strip(struct as_render *r, struct canvas *c,
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
		double x0 = x_of(r, pn, rel_t(r, b->start)) - pn->px;
		double x1 = x_of(r, pn, rel_t(r, b->end)) - pn->px;
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

static void clip_rect(const struct panel *pn, double *x0, double *x1,
		      double *y0, double *y1)
{
	if (*x0 < pn->px)
		*x0 = pn->px;
	if (*x1 > pn->px + pn->pw)
		*x1 = pn->px + pn->pw;
	if (*y0 < pn->py)
		*y0 = pn->py;
	if (*y1 > pn->py + pn->ph)
		*y1 = pn->py + pn->ph;
}

/* A mark that stays visible however small the thing it marks. */
static void grow_min(double *x0, double *x1, double *y0, double *y1,
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

struct vmark {
	struct box b;
	bool overlap;
};

/* Where the listed violations of this panel are drawn (at most 16). */
static int violation_marks(const struct as_render *r, const struct panel *pn,
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
			uint64_t ea = end_addr(pn, a), eb = end_addr(pn, b);
			uint64_t hi = ea < eb ? ea : eb;
			if (hi < lo)
				hi = lo;
			x0 = x_of(r, pn, rel_t(r, ts));
			x1 = x_of(r, pn, rel_t(r, te));
			y0 = y_of(pn, hi);
			y1 = y_of(pn, lo);
		} else {
			buf_rect(r, pn, a, extent_of(pn, a), &x0, &x1, &y0, &y1);
		}
		grow_min(&x0, &x1, &y0, &y1, 8);
		clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 <= x0 || y1 <= y0)
			continue;
		out[n].b = (struct box){x0, y0, x1, y1};
		out[n++].overlap = overlap;
	}
	return n;
}

static void emit_violations(struct canvas *c, const struct panel *pn,
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

static void emit_sidebar(struct as_render *r, struct canvas *c,
			 const struct panel *pn)
{
	if (!r->sidebar_w)
		return;
	double x = pn->px + pn->pw + 14, w = r->sidebar_w - 8;
	double y = pn->py + 11, bottom = pn->py + pn->ph;
	char buf[200], a[32], b[32];
	const double row = 15;
	bool rounds = pn->p->nrounds >= 2 && pn->ph >= 150;
	if (rounds)
		bottom -= 64;

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
		render_clean_text(pn->t->buffers[v->a].name, na, sizeof(na));
		if (v->kind == AS_V_OVERLAP && v->b < pn->t->nbuffers) {
			render_clean_text(pn->t->buffers[v->b].name, nb,
					  sizeof(nb));
			snprintf(buf, sizeof(buf), "%s: %s \xc3\x97 %s",
				 kind[v->kind], na, nb);
		} else {
			snprintf(buf, sizeof(buf), "%s: %s",
				 (unsigned)v->kind < 5 ? kind[v->kind] : "?",
				 na);
		}
		char fit[200];
		fit_text(r->m, buf, FS_SMALL, true, w, fit, sizeof(fit));
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
			 fmt_count(rel_t(r, pn->peak_time), tt, sizeof(tt)));
	else
		snprintf(buf, sizeof(buf), "live at peak, t = %s",
			 fmt_count((double)pn->peak_time, tt, sizeof(tt)));
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
		uint32_t col = color_of(r, pn, i);
		RECT(c, x, y - 9, 10, 10, 0xff000000u | col, darker(col), 1,
		     NULL);
		as_human_bytes(bf->size, b, sizeof(b));
		double sw = measure_text(r->m, b, FS_SMALL, false);
		char fit[200];
		fit_text(r->m, bf->name ? bf->name : "?", FS_SMALL, false,
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

	if (rounds) {
		const struct as_round *rd = pn->p->rounds;
		uint32_t nr = pn->p->nrounds;
		double cy = pn->py + pn->ph - 64 + 14, ch = 44;
		char best[32];
		uint64_t lo = UINT64_MAX, hi = 0;
		uint32_t bi = 0;
		for (uint32_t k = 0; k < nr; k++) {
			if (rd[k].peak < lo) {
				lo = rd[k].peak;
				bi = k;
			}
			if (rd[k].peak > hi)
				hi = rd[k].peak;
		}
		snprintf(buf, sizeof(buf), "peak per round (%u), best %s", nr,
			 as_human_bytes(lo, best, sizeof(best)));
		char fit[200];
		fit_text(r->m, buf, FS_SMALL, false, w, fit, sizeof(fit));
		TEXT(c, x, cy - 4, fit, FS_SMALL, false, C_TEXT, ANCHOR_START);
		RECT(c, x, cy, w, ch, 0xfff7f7f7u, 0, 0, NULL);
		uint32_t nbars = nr < (uint32_t)w ? nr : (uint32_t)w;
		double bw = w / nbars;
		for (uint32_t k = 0; k < nbars; k++) {
			uint32_t i = (uint32_t)((uint64_t)k * nr / nbars);
			double f = hi ? (double)rd[i].peak / hi : 0;
			double bh = f * (ch - 2);
			RECT(c, x + k * bw, cy + ch - bh, bw > 2 ? bw - 1 : bw, bh,
			     i == bi ? 0xff000000u : 0xff9e9e9eu, 0, 0, NULL);
		}
	}
}

/* The colours of the panel's placed buffers, cached per colour mode. */
static int panel_colors(struct as_render *r, struct panel *pn)
{
	if (pn->colors && pn->colors_for == (int)r->o.color_by)
		return AS_OK;
	if (!pn->colors) {
		pn->colors = malloc(sizeof(uint32_t) * (pn->nplaced + 1));
		if (!pn->colors)
			return AS_ENOMEM;
	}
	for (uint32_t k = 0; k < pn->nplaced; k++)
		pn->colors[k] = color_of(r, pn, pn->bufs[k]);
	pn->colors_for = (int)r->o.color_by;
	return AS_OK;
}

/*
 * Sort the panel's buffers into rectangles drawn one by one (the largest
 * MAX_RECTS of those at least MIN_RECT_PX both ways) and the density
 * raster (all others); the result is kept in the panel.
 */
static int lod_pass(struct as_render *r, struct panel *pn)
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
	uint32_t nc = 0;
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
		clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 - x0 >= MIN_RECT_PX && y1 - y0 >= MIN_RECT_PX) {
			cand[nc++] = (struct cand){(float)x0, (float)y0,
						   (float)x1, (float)y1, k};
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
	qsort(cand, nc, sizeof(*cand), cmp_cand_idx);
	struct cand *fit = realloc(cand, sizeof(*cand) * (nc + 1));
	free(pn->lod_cand);
	pn->lod_cand = fit ? fit : cand;
	pn->lod_nc = nc;
	pn->lod_any = d.any;
	if (d.any)
		dens_resolve(&d, pn->lod_raster);
	return AS_OK;
}

static int emit_buffers(struct as_render *r, struct canvas *c,
			struct panel *pn, struct box *avoid, int navoid)
{
	int err = panel_colors(r, pn);
	if (err)
		return err;
	double key[9] = {r->t0, r->t1, pn->v0, pn->v1, pn->px, pn->py,
			 pn->pw, pn->ph, (double)r->o.color_by};
	if (!pn->lod_valid || memcmp(key, pn->lod_key, sizeof(key)) != 0) {
		pn->lod_valid = false;
		err = lod_pass(r, pn);
		if (err)
			return err;
		memcpy(pn->lod_key, key, sizeof(key));
		pn->lod_valid = true;
	}
	const struct cand *cand = pn->lod_cand;
	const uint32_t nc = pn->lod_nc;
	const double X0 = pn->px, Y0 = pn->py, X1 = pn->px + pn->pw,
		     Y1 = pn->py + pn->ph;
	if (pn->lod_any)
		c->impl->image(c, pn->px, pn->py, pn->pw, pn->ph, pn->lod_raster);

	char title[400];
	uint32_t nlabels = 0;
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t i = pn->bufs[cand[k].idx];
		const struct as_buffer *b = &pn->t->buffers[i];
		double x0 = floor(cand[k].x0 + 0.5), x1 = floor(cand[k].x1 + 0.5);
		double y0 = floor(cand[k].y0 + 0.5), y1 = floor(cand[k].y1 + 0.5);
		if (x1 <= x0)
			x1 = x0 + 1;
		if (y1 <= y0)
			y1 = y0 + 1;
		uint32_t col = pn->colors[cand[k].idx];
		bool big = (x1 - x0) >= 4 && (y1 - y0) >= 4;
		const char *ti = NULL;
		if (c->wants_titles &&
		    (x1 - x0) * (y1 - y0) >= TITLE_MIN_AREA) {
			buffer_title(pn, i, title, sizeof(title));
			ti = title;
		}
		uint64_t ext = extent_of(pn, i);
		if (ext > b->size) {
			/* Internal waste: the chunk above the request, lighter. */
			double yr;
			uint64_t off = pn->p->offset[i];
			yr = floor(y_of(pn, off + b->size) + 0.5);
			if (yr < y0)
				yr = y0;
			if (yr > y1)
				yr = y1;
			RECT(c, x0, y0, x1 - x0, yr - y0,
			     0xff000000u | mix(col, 0xffffff, 0.7), 0, 0, NULL);
			RECT(c, x0, yr, x1 - x0, y1 - yr, 0xff000000u | col, 0, 0,
			     NULL);
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0,
			     big ? darker(col) : 0, 1, ti);
		} else {
			RECT(c, x0, y0, x1 - x0, y1 - y0, 0xff000000u | col,
			     big ? darker(col) : 0, 1, ti);
		}
		/* Names inside rectangles that have room for them. */
		if (nlabels < MAX_NAME_LABELS && x1 - x0 >= 40 &&
		    y1 - y0 >= 15 && b->name) {
			char nm[120];
			double tw = measure_text(
				r->m, render_clean_text(b->name, nm, sizeof(nm)),
				FS_SMALL, false);
			/* In the middle, else at the top, else the bottom. */
			double tys[3] = {floor((y0 + y1) / 2 + 4), y0 + 12,
					 y1 - 3};
			double ty = 0;
			bool ok = false;
			for (int t = 0; t < 3 && !ok && tw + 8 <= x1 - x0; t++) {
				ty = tys[t];
				struct box lb = {x0 + 3, ty - 11, x0 + 7 + tw,
						 ty + 3};
				ok = lb.y0 >= y0 && lb.y1 <= y1;
				for (int a = 0; ok && a < navoid; a++)
					ok = !box_hit(&lb, &avoid[a]);
			}
			if (ok) {
				TEXT(c, x0 + 4, ty, nm, FS_SMALL, false,
				     luminance(col) < 120 ? 0xffffffffu : C_TEXT,
				     ANCHOR_START);
				nlabels++;
			}
		}
	}

	/* Aliases: an outline inside the buffer that holds them. */
	for (uint32_t k = pn->nplain; k < pn->nplaced; k++) {
		uint32_t i = pn->bufs[k];
		double x0, x1, y0, y1;
		buf_rect(r, pn, i, pn->t->buffers[i].size, &x0, &x1, &y0, &y1);
		if (x1 <= X0 || x0 >= X1 || y1 <= Y0 || y0 >= Y1)
			continue;
		clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 - x0 >= 3 && y1 - y0 >= 3)
			RECT(c, floor(x0 + 0.5), floor(y0 + 0.5),
			     floor(x1 - x0 + 0.5), floor(y1 - y0 + 0.5), 0,
			     0xb0000000u, 1, NULL);
	}
	return AS_OK;
}

static int emit_panel(struct as_render *r, struct canvas *c,
		      struct panel *pn, bool last)
{
	char a[48], lab[96];
	const double X0 = pn->px, X1 = pn->px + pn->pw, Y0 = pn->py,
		     Y1 = pn->py + pn->ph;
	c->impl->begin_group(c, "panel");
	emit_title(r, c, pn);
	emit_failed_strip(r, c, pn);
	RECT(c, X0, Y0, pn->pw, pn->ph, 0xffffffffu, 0, 0, NULL);

	/* Grid: address ticks and time ticks. */
	for (uint32_t k = 0; k < pn->nticks; k++) {
		double y = floor(pn->ticks[k].y) + 0.5;
		LINE(c, X0, y, X1, y, C_GRID, 1, 0);
	}
	double tstep = 0;
	{
		double want = (r->t1 - r->t0) / pn->pw * 90;
		double p10 = pow(10, floor(log10(want > 0 ? want : 1)));
		tstep = p10;
		if (tstep < want)
			tstep = 2 * p10;
		if (tstep < want)
			tstep = 5 * p10;
		if (tstep < want)
			tstep = 10 * p10;
		if (tstep < 1)
			tstep = 1;
	}
	/* Ticks at round values of what the labels show. */
	double lab0 = r->rel_labels ? 0 : (double)r->tbase;
	double tfirst = ceil((r->t0 + lab0) / tstep) * tstep - lab0;
	/* Counted, not accumulated: far from 0 a step may vanish in t. */
	int nt = 0;
	for (int k = 0; k < 100; k++, nt++) {
		double t = tfirst + k * tstep;
		if (t > r->t1 + 1e-9 || (k && t == tfirst + (k - 1) * tstep))
			break;
		double x = floor(x_of(r, pn, t)) + 0.5;
		LINE(c, x, Y0, x, Y1, C_GRID, 1, 0);
	}

	/* Breaks of the address axis. */
	for (uint32_t k = 0; k < pn->npieces; k++) {
		const struct piece *pc = &pn->pieces[k];
		if (!pc->brk)
			continue;
		double ya = y_of_u(pn, pc->u1), yb = y_of_u(pn, pc->u0);
		if (yb <= Y0 || ya >= Y1)
			continue;
		if (ya < Y0)
			ya = Y0;
		if (yb > Y1)
			yb = Y1;
		RECT(c, X0, ya, pn->pw, yb - ya, C_BREAK, 0, 0, NULL);
		emit_zigzag(c, X0 - 8, X1, ya + 1.5);
		emit_zigzag(c, X0 - 8, X1, yb - 1.5);
		if (yb - ya >= 13) {
			char sz[32];
			snprintf(lab, sizeof(lab), "%s unused, not to scale",
				 as_human_bytes(pc->hi - pc->lo, sz, sizeof(sz)));
			TEXT(c, X1 - 6, (ya + yb) / 2 + 3.5, lab, 9, false,
			     C_TEXT2, ANCHOR_END);
		}
	}

	/* Line labels first, so that names inside rectangles avoid them; no
	 * label covers the peak-time marker or another label. */
	bool marker = pn->has_peak && rel_t(r, pn->peak_time) >= r->t0 &&
		      rel_t(r, pn->peak_time) <= r->t1;
	double mx = marker ? floor(x_of(r, pn, rel_t(r, pn->peak_time))) + 0.5
			   : -1000;
	struct box mbox = {mx - 8, Y0 - 1, mx + 8, Y0 + 10};
	struct box boxes[4 + 16];
	int nbox = 0, npeak = -1, nlb = -1;
	double y_peak = -1, y_lb = -1;
	char peak_lab[64], lb_lab[64];
	double peak_x = X1 - 6, lb_x = X1 - 6;
	int peak_anchor = ANCHOR_END, lb_anchor = ANCHOR_END;
	double lb_ty = 0, peak_ty = 0;
	if (pn->has_peak) {
		double y = floor(y_of(pn, pn->peak) + 0.5);
		if (y >= Y0 && y <= Y1) {
			y_peak = y;
			snprintf(peak_lab, sizeof(peak_lab), "peak %s",
				 as_human_bytes(pn->peak, a, sizeof(a)));
			peak_ty = y - 5;
			if (peak_ty - FS_TICK < Y0)
				peak_ty = y + FS_TICK + 3;
			struct box bx = label_box(r, peak_x, peak_ty, peak_lab,
						  FS_TICK, true, ANCHOR_END);
			if (box_hit(&bx, &mbox)) {
				peak_x = X0 + 6;
				peak_anchor = ANCHOR_START;
				bx = label_box(r, peak_x, peak_ty, peak_lab,
					       FS_TICK, true, ANCHOR_START);
			}
			npeak = nbox;
			boxes[nbox++] = bx;
		}
	}
	bool lb_hidden;
	double ulb = addr_u(pn, pn->lb, &lb_hidden);
	if (pn->lb && !lb_hidden) {
		double y = floor(y_of_u(pn, ulb) + 0.5);
		if (y >= Y0 && y <= Y1) {
			y_lb = y;
			snprintf(lb_lab, sizeof(lb_lab), "lower bound %s",
				 as_human_bytes(pn->lb, a, sizeof(a)));
			/* Below the line, else above; right end, else left. */
			double tys[2] = {y + FS_TICK + 3, y - 5};
			bool placed = false;
			for (int k = 0; k < 4 && !placed; k++) {
				double ty = tys[k & 1];
				int an = k < 2 ? ANCHOR_END : ANCHOR_START;
				double lx = k < 2 ? X1 - 6 : X0 + 6;
				struct box bx = label_box(r, lx, ty, lb_lab,
							  FS_TICK, false, an);
				if (bx.y1 > Y1 || bx.y0 < Y0 ||
				    box_hit(&bx, &mbox) ||
				    (npeak >= 0 && box_hit(&bx, &boxes[npeak])))
					continue;
				lb_ty = ty;
				lb_x = lx;
				lb_anchor = an;
				nlb = nbox;
				boxes[nbox++] = bx;
				placed = true;
			}
		}
	}
	/* Names inside rectangles also keep off the two lines. */
	int nlabels = nbox;
	if (y_peak >= 0)
		boxes[nbox++] = (struct box){X0, y_peak - 2, X1, y_peak + 2};
	if (y_lb >= 0)
		boxes[nbox++] = (struct box){X0, y_lb - 2, X1, y_lb + 2};
	/* ... and off the red marks of violations. */
	struct vmark vm[16];
	int nvm = violation_marks(r, pn, vm);
	for (int k = 0; k < nvm; k++)
		boxes[nbox++] = vm[k].b;

	int err = emit_buffers(r, c, pn, boxes, nbox);
	if (err)
		return err;
	emit_violations(c, pn, vm, nvm);

	/* The buffer that reaches the peak, outlined even when tiny. */
	if (pn->has_peak) {
		double x0, x1, y0, y1;
		buf_rect(r, pn, pn->peak_buf, pn->t->buffers[pn->peak_buf].size,
			 &x0, &x1, &y0, &y1);
		if ((x1 - x0 < 6 || y1 - y0 < 6) && x1 > X0 && x0 < X1 &&
		    y1 > Y0 && y0 < Y1) {
			grow_min(&x0, &x1, &y0, &y1, 6);
			clip_rect(pn, &x0, &x1, &y0, &y1);
			RECT(c, floor(x0), floor(y0), ceil(x1 - x0), ceil(y1 - y0),
			     0, C_PEAK, 1.5, NULL);
		}
	}

	/* When the peak happens. */
	if (marker) {
		LINE(c, mx, Y0, mx, Y1, 0xc0000000u, 1, 3);
		double tri[6] = {mx - 6, Y0, mx + 6, Y0, mx, Y0 + 8};
		c->impl->poly(c, tri, 3, true, C_PEAK, 0xffffffffu, 1);
	}
	if (y_lb >= 0)
		LINE(c, X0, y_lb, X1, y_lb, C_LB, 1.5, 6);
	if (y_peak >= 0)
		LINE(c, X0, y_peak, X1, y_peak, C_PEAK, 2, 0);
	if (npeak >= 0)
		boxed_text(r, c, &boxes[npeak], peak_x, peak_ty, peak_lab,
			   FS_TICK, true, C_TEXT, peak_anchor);
	if (nlb >= 0)
		boxed_text(r, c, &boxes[nlb], lb_x, lb_ty, lb_lab, FS_TICK,
			   false, C_TEXT, lb_anchor);
	(void)nlabels;

	/* Selection (the viewer's click), visible at any size. */
	uint32_t h = r->o.highlight;
	if (h < pn->t->nbuffers && h < pn->p->nbuffers &&
	    pn->p->offset[h] != AS_NO_OFFSET &&
	    as_plan_space_of(pn->p, pn->t, h) == pn->space &&
	    buf_drawable(&pn->t->buffers[h])) {
		double x0, x1, y0, y1;
		buf_rect(r, pn, h, extent_of(pn, h), &x0, &x1, &y0, &y1);
		grow_min(&x0, &x1, &y0, &y1, 7);
		clip_rect(pn, &x0, &x1, &y0, &y1);
		if (x1 > x0 && y1 > y0) {
			RECT(c, x0 - 1, y0 - 1, x1 - x0 + 2, y1 - y0 + 2, 0,
			     0xff000000u, 2.5, NULL);
			RECT(c, x0 + 1, y0 + 1, x1 - x0 - 2, y1 - y0 - 2, 0,
			     0xffffffffu, 1, NULL);
		}
	}

	if (pn->nbufs == 0)
		TEXT(c, (X0 + X1) / 2, (Y0 + Y1) / 2, "no buffers", FS_STAT,
		     false, C_TEXT2, ANCHOR_MIDDLE);

	/* Frame, address ticks and labels. */
	RECT(c, X0 - 0.5, Y0 - 0.5, pn->pw + 1, pn->ph + 1, 0, C_FRAME, 1,
	     NULL);
	for (uint32_t k = 0; k < pn->nticks; k++) {
		double y = floor(pn->ticks[k].y) + 0.5;
		LINE(c, X0 - 4, y, X0, y, C_FRAME, 1, 0);
		double ty = y + 4;
		if (ty > Y1 + 4)
			ty = Y1 + 4;
		TEXT(c, X0 - 7, ty, pn->ticks[k].label, FS_TICK,
		     pn->ticks[k].major, C_TEXT, ANCHOR_END);
	}
	for (int k = 0; k < nt; k++) {
		double t = tfirst + k * tstep;
		double x = floor(x_of(r, pn, t)) + 0.5;
		LINE(c, x, Y1, x, Y1 + 4, C_FRAME, 1, 0);
		if (last) {
			char tl[40], num[32];
			fmt_count(t + lab0, num, sizeof(num));
			snprintf(tl, sizeof(tl), "%s%s",
				 r->rel_labels && t > 0 ? "+" : "", num);
			int an = ANCHOR_MIDDLE;
			TEXT(c, x, Y1 + 16, tl, FS_TICK, false, C_TEXT, an);
		}
	}
	if (last) {
		char what[80];
		if (r->rel_labels)
			snprintf(what, sizeof(what), "time since %llu",
				 (unsigned long long)r->tbase);
		else
			snprintf(what, sizeof(what), "%s",
				 r->time_is_index ? "time (operation index)"
						  : "time");
		TEXT(c, (X0 + X1) / 2, Y1 + 33, what, FS_TICK, true, C_TEXT,
		     ANCHOR_MIDDLE);
	}
	emit_sidebar(r, c, pn);
	c->impl->end_group(c);
	return AS_OK;
}

static void emit_header(struct as_render *r, struct canvas *c)
{
	if (!r->o.header)
		return;
	const struct as_trace *t = r->panels[0].t;
	char buf[400], name[200], lb[32], nb[32];
	render_clean_text(basename_of(t->path), name, sizeof(name));
	snprintf(buf, sizeof(buf), "%s \xc2\xb7 %s buffers \xc2\xb7 lower bound %s",
		 name, fmt_count(t->nbuffers, nb, sizeof(nb)),
		 as_human_bytes(r->trace_lb, lb, sizeof(lb)));
	char legend[80];
	snprintf(legend, sizeof(legend), "colour: %s",
		 r->o.color_by == AS_COLOR_BUFFER ? "buffer name"
		 : r->o.color_by == AS_COLOR_SIZE ? "size (small \xe2\x86\x92 large)"
		 : r->o.color_by == AS_COLOR_LIFETIME
			 ? "lifetime (short \xe2\x86\x92 long)"
			 : "pool");
	double lw = measure_text(r->m, legend, FS_TICK, false);
	bool seq = r->o.color_by == AS_COLOR_SIZE ||
		   r->o.color_by == AS_COLOR_LIFETIME;
	double gx = r->o.width - 10 - (seq ? 90 : 0);
	char fit[400];
	fit_text(r->m, buf, FS_STAT, true, gx - lw - 40, fit, sizeof(fit));
	TEXT(c, 10, 18, fit, FS_STAT, true, C_TEXT, ANCHOR_START);
	TEXT(c, gx - (seq ? 8 : 0), 18, legend, FS_TICK, false, C_TEXT2,
	     ANCHOR_END);
	if (seq) {
		for (int k = 0; k < 90; k++)
			RECT(c, gx + k, 8, 1, 12,
			     0xff000000u | seq_color(k / 89.0), 0, 0, NULL);
	}
}

int render_emit(struct as_render *r, struct canvas *c)
{
	RECT(c, 0, 0, r->o.width, r->o.height, C_BG, 0, 0, NULL);
	emit_header(r, c);
	for (size_t i = 0; i < r->npanels; i++) {
		int err = emit_panel(r, c, &r->panels[i], i + 1 == r->npanels);
		if (err)
			return err;
	}
	return AS_OK;
}

/* ------------------------------------------------------------- output */

int as_render_write_stream(struct as_render *r, FILE *f,
			   enum as_image_format fmt)
{
	if (!r || !f || fmt == AS_IMAGE_AUTO)
		return AS_EINVAL;
	if (fmt == AS_IMAGE_PNG)
		return png_write(r, f, r->o.width, r->o.height, r->o.scale);
	struct canvas *c = svg_canvas_create(f, r->o.width, r->o.height);
	if (!c)
		return AS_ENOMEM;
	int err = render_emit(r, c);
	int ferr = svg_canvas_finish(c);
	svg_canvas_destroy(c);
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
	int err = as_atomic_open(path, &at, &f);
	if (err)
		return as_diag_set(diag, 0, err, "cannot create the file");
	err = as_render_write_stream(r, f, fmt);
	if (err) {
		as_atomic_abort(at);
		return as_diag_set(diag, 0, err, "cannot draw the picture: %s",
				   as_strerror(err));
	}
	err = as_atomic_commit(at);
	if (err)
		return as_diag_set(diag, 0, err, "cannot write the file");
	return AS_OK;
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
