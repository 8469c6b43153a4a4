/*
 * Text and colours: UTF-8 cleaning, fitting text to a width, number and
 * byte formats, the colour of a buffer in each colour mode, and the
 * public helpers that parse option names and sizes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

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

const char *as_r_render_clean_text(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *end = p + strlen((const char *)p);
	if (len == 0)
		return buf;
	while (p < end) {
		size_t n = as_utf8_len(p, (size_t)(end - p));
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
const char *as_r_fit_text(struct measurer *m, const char *s, double size,
		     bool bold, double maxw, char *buf, size_t len)
{
	as_r_render_clean_text(s, buf, len);
	if (as_r_measure_text(m, buf, size, bold) <= maxw)
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
		if (as_r_measure_text(m, buf, size, bold) <= maxw)
			return buf;
		memcpy(buf + n, save, 4);
	}
	buf[0] = 0;
	return buf;
}

/* v with at most `dec` (<= 6) decimals, trailing zeros dropped; no locale. */
char *as_r_fmt_fixed(double v, int dec, char *buf, size_t len)
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
char *as_r_fmt_count(double v, char *buf, size_t len)
{
	static const char *const sfx[] = {"", "k", "M", "G", "T", "P"};
	int u = 0;
	double a = fabs(v);
	if (a < 10000) {
		return as_r_fmt_fixed(v, a < 10 && a != floor(a) ? 2 : 0, buf,
				 len);
	}
	while (a >= 1000 && u < 5) {
		a /= 1000;
		v /= 1000;
		u++;
	}
	char num[32];
	as_r_fmt_fixed(v, 2, num, sizeof(num));
	snprintf(buf, len, "%s%s", num, sfx[u]);
	return buf;
}

/*
 * A time tick label: as fmt_count, with the digits that tell ticks `step`
 * apart (2.2105M, 2.2106M), or every digit when a suffix would need more
 * than four decimals.
 */
char *as_r_fmt_time_tick(double v, double step, char *buf, size_t len)
{
	static const char *const sfx[] = {"", "k", "M", "G", "T", "P"};
	double a = fabs(v), unit = 1;
	int u = 0;
	if (a < 10000)
		return as_r_fmt_count(v, buf, len);
	while (a >= 1000 && u < 5) {
		a /= 1000;
		unit *= 1000;
		u++;
	}
	int dec = 2;
	while (dec <= 4 && step > 0 && step < unit / pow(10, dec) * 0.999)
		dec++;
	if (dec > 4)
		return as_r_fmt_fixed(v, 0, buf, len);
	char num[32];
	as_r_fmt_fixed(v / unit, dec, num, sizeof(num));
	snprintf(buf, len, "%s%s", num, sfx[u]);
	return buf;
}

/* Bytes on axes: 0, 768 KiB, 1.5 MiB (exact, up to 3 decimals). */
char *as_r_fmt_bytes_tick(uint64_t v, char *buf, size_t len)
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
	as_r_fmt_fixed((double)v / (double)d, 3, num, sizeof(num));
	snprintf(buf, len, "%s %s", num, unit[u]);
	return buf;
}

/*
 * A percentage with a sign and enough digits to tell a small gap from
 * none: +17.6%, +0.4%, +0.012%; exactly 0 is "+0%".
 */
char *as_r_fmt_pct(double pct, char *buf, size_t len)
{
	char num[32];
	double a = fabs(pct);
	int dec = 1;
	while (dec < 6 && a > 0 && a < 10.0 / pow(10, dec))
		dec++;
	if (a > 0 && a < 1e-6)
		snprintf(buf, len, "%s<0.000001%%", pct < 0 ? "-" : "+");
	else
		snprintf(buf, len, "%s%s%%", pct < 0 ? "" : "+",
			 as_r_fmt_fixed(pct, dec, num, sizeof(num)));
	return buf;
}

/*
 * Two byte counts in words (as_human_bytes), with more digits when they
 * differ but would read the same: 5.19 GiB against 5.188 GiB.
 */
void as_r_fmt_bytes_apart(uint64_t a, uint64_t b, char *ba, char *bb, size_t len)
{
	as_human_bytes(a, ba, len);
	as_human_bytes(b, bb, len);
	if (a == b || strcmp(ba, bb) != 0)
		return;
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB",
					   "TiB", "PiB", "EiB"};
	uint64_t m = a > b ? a : b, d = 1;
	int u = 0;
	while (u < 6 && m >= d * 1024) {
		d *= 1024;
		u++;
	}
	char na[32], nb[32];
	for (int dec = 3; dec <= 6; dec++) {
		as_r_fmt_fixed((double)a / (double)d, dec, na, sizeof(na));
		as_r_fmt_fixed((double)b / (double)d, dec, nb, sizeof(nb));
		if (strcmp(na, nb) != 0)
			break;
	}
	snprintf(ba, len, "%s %s", na, unit[u]);
	snprintf(bb, len, "%s %s", nb, unit[u]);
}

const char *as_r_basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : (path ? path : "trace");
}

uint32_t as_r_mix(uint32_t a, uint32_t b, double t)
{
	uint32_t out = 0;
	for (int s = 0; s <= 16; s += 8) {
		double x = ((a >> s) & 0xff) * (1 - t) + ((b >> s) & 0xff) * t;
		out |= (uint32_t)(x + 0.5) << s;
	}
	return out;
}

uint32_t as_r_seq_color(double t)
{
	if (!(t > 0))
		t = 0;
	if (t > 1)
		t = 1;
	double x = t * 8;
	int i = (int)x;
	if (i >= 8)
		return viridis[8];
	return as_r_mix(viridis[i], viridis[i + 1], x - i);
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

double as_r_log2_u64(uint64_t v)
{
	return v ? log2((double)v) : 0;
}

uint32_t as_r_color_of(const struct as_render *r, const struct panel *pn,
		  uint32_t i)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	double t;
	switch (r->o.color_by) {
	case AS_COLOR_SIZE:
		t = r->size_hi > r->size_lo
			    ? (as_r_log2_u64(b->size) - r->size_lo) /
				      (r->size_hi - r->size_lo)
			    : 0.5;
		return as_r_seq_color(t);
	case AS_COLOR_LIFETIME:
		t = r->life_hi > r->life_lo
			    ? (as_r_log2_u64(b->end - b->start) - r->life_lo) /
				      (r->life_hi - r->life_lo)
			    : 0.5;
		return as_r_seq_color(t);
	case AS_COLOR_SPACE:
		return palette[as_plan_space_of(pn->p, pn->t, i) % NPALETTE];
	case AS_COLOR_PREFIX:
	case AS_COLOR_FRAME: {
		char key[200];
		as_render_group(pn->t, i,
				r->o.color_by == AS_COLOR_PREFIX ? AS_GROUP_PREFIX
								 : AS_GROUP_FRAME,
				key, sizeof(key));
		return palette[hash_name(key) % NPALETTE];
	}
	case AS_COLOR_BUFFER:
	default: {
		const char *name = as_trace_buffer_name(pn->t, i);
		if (!name)
			return palette[i % NPALETTE];
		return palette[hash_name(name) % NPALETTE];
	}
	}
}

double as_r_luminance(uint32_t c)
{
	return 0.299 * ((c >> 16) & 0xff) + 0.587 * ((c >> 8) & 0xff) +
	       0.114 * (c & 0xff);
}

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
					  "lifetime", "prefix", "frame"};
#define NCOLOR_NAMES (sizeof(color_names) / sizeof(color_names[0]))

int as_color_by_from_name(const char *name, enum as_color_by *out)
{
	if (!name)
		return AS_EINVAL;
	for (size_t i = 0; i < NCOLOR_NAMES; i++) {
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
	return (unsigned)c < NCOLOR_NAMES ? color_names[c] : "?";
}

const char *as_render_group(const struct as_trace *t, uint32_t i,
			    enum as_group_by g, char *buf, size_t len)
{
	if (!buf || len == 0)
		return buf;
	char clean[200];
	as_trace_group(t, i, g, buf, len);
	as_r_render_clean_text(buf, clean, sizeof(clean));
	snprintf(buf, len, "%s", clean);
	return buf;
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
	o->memory = true;
	o->walk_at_peak = true;
	o->min_plot_height = 0;
}

uint32_t as_r_darker(uint32_t c)
{
	return 0xff000000u | as_r_mix(c, 0x000000, 0.4);
}
