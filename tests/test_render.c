/*
 * Tests of the renderer: golden SVGs of small traces, pixels of the drawn
 * picture at known positions, determinism, level of detail on 10^6
 * buffers, hit-testing and the file writers.
 *
 * AS_UPDATE_GOLDEN=1 rewrites the golden SVGs (tests/golden) from the current output;
 * AS_RENDER_KEEP=DIR keeps the pictures the tests draw, to look at them.
 */
#define _GNU_SOURCE /* mkstemps */
#include <cairo.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "allocscope/render.h"
#include "tap.h"

struct tbuf {
	const char *name;
	uint64_t size, start, end, offset; /* offset AS_NO_OFFSET: failed */
	uint16_t space;
	uint64_t chunk;                    /* 0: same as size */
};

/* A trace with explicit lifetimes and a plan giving every offset. */
static struct as_trace *make(const struct tbuf *b, size_t n,
			     const char *const *spaces, size_t nspaces,
			     struct as_plan **plan)
{
	struct as_diag d;
	struct as_builder *bl = as_builder_create("small.csv", "csv");
	struct as_trace *t = NULL;
	for (size_t s = 0; s < nspaces; s++)
		CHECK(as_builder_space(bl, spaces[s], 0) >= 0);
	for (size_t i = 0; i < n; i++) {
		int64_t k = as_builder_add_timed(bl, b[i].name, b[i].size, 1,
						 b[i].start, b[i].end, i + 1, &d);
		CHECK(k == (int64_t)i);
		if (k >= 0)
			as_builder_buffer(bl, (uint32_t)k)->space = b[i].space;
	}
	CHECK(as_builder_finish(bl, &t, &d) == AS_OK);
	if (!t)
		return NULL;
	struct as_plan *p = as_plan_create(t);
	bool chunks = false;
	for (size_t i = 0; i < n; i++) {
		p->offset[i] = b[i].offset;
		chunks |= b[i].chunk != 0;
	}
	if (chunks) {
		CHECK(as_plan_want_chunks(p) == AS_OK);
		for (size_t i = 0; i < n; i++)
			p->chunk[i] = b[i].chunk ? b[i].chunk : b[i].size;
	}
	*plan = p;
	return t;
}

static char *render_svg(const struct as_render_panel *pn, size_t n,
			const struct as_render_opts *o, size_t *len)
{
	struct as_render *r = NULL;
	struct as_diag d;
	char *buf = NULL;
	size_t sz = 0;
	CHECK(as_render_create(pn, n, o, &r, &d) == AS_OK);
	if (!r)
		return NULL;
	FILE *f = open_memstream(&buf, &sz);
	CHECK(as_render_write_stream(r, f, AS_IMAGE_SVG) == AS_OK);
	fclose(f);
	as_render_destroy(r);
	*len = sz;
	return buf;
}

static void keep(const char *name, const struct as_render_panel *pn,
		 size_t n, const struct as_render_opts *o)
{
	const char *dir = getenv("AS_RENDER_KEEP");
	char path[1024];
	struct as_diag d;
	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s.png", dir, name);
	CHECK(as_render_file(path, AS_IMAGE_AUTO, pn, n, o, &d) == AS_OK);
	snprintf(path, sizeof(path), "%s/%s.svg", dir, name);
	CHECK(as_render_file(path, AS_IMAGE_AUTO, pn, n, o, &d) == AS_OK);
}

static void golden(const char *name, const char *svg, size_t len)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/golden/%s", src ? src : ".",
		 name);
	if (getenv("AS_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "wb");
		CHECK(f != NULL);
		if (f) {
			fwrite(svg, 1, len, f);
			fclose(f);
		}
		printf("# wrote %s\n", path);
		return;
	}
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f) {
		printf("#   missing %s (run with AS_UPDATE_GOLDEN=1)\n", path);
		return;
	}
	char *want = malloc(len + 2);
	size_t got = fread(want, 1, len + 1, f);
	fclose(f);
	CHECK_EQ_U64(got, len);
	bool same = got == len && memcmp(want, svg, len) == 0;
	CHECK(same);
	if (!same) {
		size_t i = 0;
		while (i < got && i < len && want[i] == svg[i])
			i++;
		printf("#   %s differs from byte %zu: got \"%.60s\"\n", name, i,
		       svg + i);
	}
	free(want);
}

/* The CNN-like example used by several tests (offsets from a plan). */
static const struct tbuf small[] = {
	{"input", 3072, 0, 4, 0, 0, 0},
	{"conv1.out", 8192, 1, 6, 3072, 0, 0},
	{"bn1.out", 8192, 4, 9, 12288, 0, 0},
	{"pool.out", 2048, 6, 12, 0, 0, 0},
	{"fc.w", 1024, 2, 12, 11264, 0, 0},
	{"fc.out", 512, 9, 12, 2048, 0, 0},
};
#define NSMALL (sizeof(small) / sizeof(small[0]))

static void a_label_keeps_utf8_and_blanks_control_bytes(void)
{
	/* The picture's text: valid UTF-8 as it is, a control byte a space
	 * and a byte that is not UTF-8 a '?' (an overlong form, a surrogate
	 * and a cut sequence among them). */
	const struct tbuf b[] = {
		{"a\x1b[2Jb\tc", 8, 0, 2, 0, 0, 0},
		{"caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80", 8, 0, 2, 8, 0, 0},
		{"x\xff\xc0\xaf\xed\xa0\x80y\xe2\x82", 8, 0, 2, 16, 0, 0},
	};
	struct as_plan *p = NULL;
	struct as_trace *t = make(b, 3, NULL, 0, &p);
	CHECK(t != NULL);
	if (!t)
		return;
	char buf[64];
	CHECK_STR(as_render_group(t, 0, AS_GROUP_BUFFER, buf, sizeof(buf)),
		  "a [2Jb c");
	CHECK_STR(as_render_group(t, 1, AS_GROUP_BUFFER, buf, sizeof(buf)),
		  "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
	CHECK_STR(as_render_group(t, 2, AS_GROUP_BUFFER, buf, sizeof(buf)),
		  "x??????y??");
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void small_trace_renders_as_the_golden_svg(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	static const uint64_t rounds[] = {26624, 24576, 20480, 22528, 20480};
	for (int k = 0; k < 5; k++)
		CHECK(as_plan_round(p, "order", rounds[k]) == AS_OK);
	struct as_render_panel pn = {"strip:rounds=5", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.width = 900;
	o.height = 560; /* the plot, the rounds chart and memory over time */
	size_t len;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && strstr(svg, "<title>conv1.out\n8.00 KiB (8192 B) at "
				 "offset 3072 (0xc00)\nlive [1, 6)</title>"));
	struct as_render *r = NULL;
	struct as_diag d;
	char text[256];
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	CHECK_STR(as_render_buffer_text(r, 0, 1, text, sizeof(text)),
		  "conv1.out\n8.00 KiB (8192 B) at offset 3072 (0xc00)\n"
		  "live [1, 6)");
	CHECK_STR(as_render_buffer_text(r, 0, 99, text, sizeof(text)), "");
	as_render_destroy(r);
	CHECK(svg && strstr(svg, ">peak 20.0 KiB</text>"));
	CHECK(svg && strstr(svg, ">search steps (5 plans)</text>"));
	CHECK(svg && strstr(svg, ">black: best 20.0 KiB; - - this plan<"));
	if (svg)
		golden("small.svg", svg, len);
	keep("small", &pn, 1, &o);
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* Two spaces, a failed allocation, an overlap and internal waste. */
static const struct tbuf bad[] = {
	{"a", 4096, 0, 10, 0, 0, 0},
	{"b", 4096, 5, 15, 2048, 0, 0},      /* overlaps a in [5, 10) */
	{"c", 8192, 2, 8, AS_NO_OFFSET, 0, 0}, /* failed */
	{"d", 3000, 12, 20, 8192, 0, 4096},  /* chunk above the request */
	{"w0", 1024, 0, 20, 0, 1, 0},
	{"w1", 2048, 4, 16, 1024, 1, 0},
};
#define NBAD (sizeof(bad) / sizeof(bad[0]))

static void invalid_plan_with_failures_renders_as_the_golden_svg(void)
{
	static const char *const spaces[] = {"sram"};
	struct as_plan *p;
	struct as_trace *t = make(bad, NBAD, spaces, 1, &p);
	struct as_render_panel pn = {"recorded", t, p, NULL,
				     AS_RENDER_ALL_SPACES};
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.width = 900;
	o.height = 520;
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	CHECK_EQ_U64(as_render_panel_count(r), 2);
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	CHECK(!in.valid);
	CHECK_EQ_U64(in.failed, 1);
	CHECK(as_render_panel_info(r, 1, &in) == AS_OK);
	CHECK(in.valid);
	CHECK_STR(in.space_name, "sram");
	as_render_destroy(r);
	size_t len;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && strstr(svg, "INVALID: 1 violation"));
	CHECK(svg && strstr(svg, "overlap: a \xc3\x97 b"));
	CHECK(svg && strstr(svg, ">1 failed</text>"));
	CHECK(svg && strstr(svg, "chunk 4.00 KiB, waste 1.07 KiB"));
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	char text[256];
	CHECK_STR(as_render_buffer_text(r, 0, 2, text, sizeof(text)),
		  "c\n8.00 KiB (8192 B): FAILED, no address\nlive [2, 8)");
	as_render_destroy(r);
	if (svg)
		golden("invalid.svg", svg, len);
	keep("invalid", &pn, 1, &o);
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void the_same_input_gives_byte_identical_svg_and_png(void)
{
	struct as_plan *p;
	struct as_trace *t = make(bad, NBAD, (const char *const[]){"x"}, 1, &p);
	struct as_render_panel pn[2] = {
		{"one", t, p, NULL, AS_RENDER_ALL_SPACES},
		{"two", t, p, NULL, 1},
	};
	size_t l1, l2;
	char *a = render_svg(pn, 2, NULL, &l1);
	char *b = render_svg(pn, 2, NULL, &l2);
	CHECK(a && b && l1 == l2 && memcmp(a, b, l1) == 0);
	free(a);
	free(b);
	/* PNG too. */
	char *png[2] = {NULL, NULL};
	size_t plen[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		struct as_render *r = NULL;
		struct as_diag d;
		CHECK(as_render_create(pn, 2, NULL, &r, &d) == AS_OK);
		FILE *f = open_memstream(&png[k], &plen[k]);
		CHECK(as_render_write_stream(r, f, AS_IMAGE_PNG) == AS_OK);
		fclose(f);
		as_render_destroy(r);
	}
	CHECK(plen[0] > 0 && plen[0] == plen[1] &&
	      memcmp(png[0], png[1], plen[0]) == 0);
	free(png[0]);
	free(png[1]);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* Draw to pixels and read one back (0xRRGGBB, alpha dropped). */
/* A seeded generator (splitmix64): the same numbers every run. */
static uint64_t as_test_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t *draw(struct as_render *r, int w, int h)
{
	uint32_t *px = calloc((size_t)w * h, 4);
	CHECK(as_render_draw_argb32(r, px, w, h, w * 4) == AS_OK);
	return px;
}

static uint32_t at(const uint32_t *px, int w, double x, double y)
{
	return px[(size_t)y * w + (size_t)x] & 0xffffff;
}

static void buffers_have_their_colour_and_empty_space_stays_white(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn = {"greedy-size", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	uint32_t *px = draw(r, o.width, o.height);
	for (uint32_t i = 0; i < NSMALL; i++) {
		double x0, y0, x1, y1;
		CHECK(as_render_to_pixel(r, 0, small[i].start, small[i].offset,
					 &x0, &y0) == AS_OK);
		CHECK(as_render_to_pixel(r, 0, small[i].end,
					 small[i].offset + small[i].size, &x1,
					 &y1) == AS_OK);
		/* A point inside, away from outlines and name labels. */
		double x = x0 + 3, y = y0 - 3;
		CHECK_EQ_U64(at(px, o.width, x, y),
			     as_render_buffer_color(r, 0, i));
	}
	/* At t = 10.5 only [0, 2560) and fc.w are used: 6500 is empty. */
	double x, y;
	CHECK(as_render_to_pixel(r, 0, 10.5, 6500, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), 0xffffff);
	/* The peak line is black across the plot. */
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	CHECK(as_render_to_pixel(r, 0, 3, in.peak, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y - 0.5), 0x000000);
	free(px);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void the_png_file_holds_the_same_pixels(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn = {"greedy-size", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	char path[] = "/tmp/as_render_testXXXXXX.png";
	int fd = mkstemps(path, 4);
	CHECK(fd >= 0);
	close(fd);
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	CHECK(as_render_write(r, path, AS_IMAGE_AUTO, &d) == AS_OK);
	cairo_surface_t *s = cairo_image_surface_create_from_png(path);
	CHECK(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
	CHECK_EQ_U64(cairo_image_surface_get_width(s), 1280);
	CHECK_EQ_U64(cairo_image_surface_get_height(s), 800);
	uint32_t *px = draw(r, o.width, o.height);
	const unsigned char *data = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s);
	double x, y;
	/* Inside bn1.out, inside fc.w, and empty space. */
	static const double probe[][2] = {{5, 14000}, {7, 11500}, {10.5, 6500}};
	for (size_t k = 0; k < 3 && data; k++) {
		CHECK(as_render_to_pixel(r, 0, probe[k][0], (uint64_t)probe[k][1],
					 &x, &y) == AS_OK);
		uint32_t v = *(const uint32_t *)(const void *)(data +
							       (size_t)y * stride +
							       (size_t)x * 4);
		CHECK_EQ_U64(v & 0xffffff, at(px, o.width, x, y));
	}
	CHECK(as_render_to_pixel(r, 0, 5, 14000, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), as_render_buffer_color(r, 0, 2));
	free(px);
	cairo_surface_destroy(s);
	unlink(path);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static bool reddish(uint32_t c)
{
	unsigned R = c >> 16, G = (c >> 8) & 0xff, B = c & 0xff;
	return R > 150 && G < 90 && B < 90;
}

static void failures_overlaps_and_waste_are_drawn_where_they_happen(void)
{
	struct as_plan *p;
	struct as_trace *t = make(bad, NBAD, (const char *const[]){"x"}, 1, &p);
	struct as_render_panel pn = {"recorded", t, p, NULL,
				     AS_RENDER_ALL_SPACES};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	uint32_t *px = draw(r, o.width, o.height);
	double x, y;
	/* The overlap of a and b: [5, 10) x [2048, 4096). */
	CHECK(as_render_to_pixel(r, 0, 7.5, 3072, &x, &y) == AS_OK);
	CHECK(reddish(at(px, o.width, x, y)));
	/* The failed c lives [2, 8): its mark in the strip above the plot. */
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	CHECK(as_render_to_pixel(r, 0, 5, 0, &x, &y) == AS_OK);
	CHECK(reddish(at(px, o.width, x, in.y - 6)));
	CHECK(as_render_to_pixel(r, 0, 1, 0, &x, &y) == AS_OK);
	CHECK(!reddish(at(px, o.width, x, in.y - 6)));
	/* d: the request in its colour, the chunk above it lighter. */
	uint32_t col = as_render_buffer_color(r, 0, 3);
	CHECK(as_render_to_pixel(r, 0, 16, 8192 + 1500, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), col);
	CHECK(as_render_to_pixel(r, 0, 16, 8192 + 3600, &x, &y) == AS_OK);
	uint32_t light = at(px, o.width, x, y);
	CHECK(light != col);
	CHECK(((light >> 8) & 0xff) >= ((col >> 8) & 0xff));
	free(px);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void hit_test_names_the_buffer_under_the_pointer(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn = {"greedy-size", t, p, NULL, 0};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	double x, y;
	struct as_render_hit h;
	CHECK(as_render_to_pixel(r, 0, 5, 14000, &x, &y) == AS_OK);
	CHECK(as_render_hit_test(r, x, y, 3, &h) == AS_OK);
	CHECK_EQ_U64(h.panel, 0);
	CHECK(h.in_plot);
	CHECK_EQ_U64(h.buffer, 2); /* bn1.out */
	CHECK(h.time > 4.9 && h.time < 5.1);
	CHECK(h.address > 13900 && h.address < 14100);
	CHECK(as_render_to_pixel(r, 0, 10.5, 6500, &x, &y) == AS_OK);
	CHECK(as_render_hit_test(r, x, y, 3, &h) == AS_OK);
	CHECK_EQ_U64(h.buffer, AS_NONE);
	CHECK(as_render_hit_test(r, 2, 2, 3, &h) == AS_OK);
	CHECK_EQ_U64((uint64_t)(int64_t)h.panel, (uint64_t)(int64_t)-1);
	uint32_t live[8];
	CHECK_EQ_U64(as_render_live_at(r, 0, 4.5, live, 8), 3);
	CHECK_EQ_U64(live[0], 1); /* conv1.out and bn1.out: 8 KiB each */
	CHECK_EQ_U64(live[1], 2);
	CHECK_EQ_U64(live[2], 4);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * The hit test looks buffers up in time buckets; it must answer what a
 * scan of every buffer answers: the first smallest rectangle holding the
 * point, else the last nearest one within slop. Short and long lives,
 * equal rectangles (ties), zoomed views.
 */
static void hit_test_agrees_with_a_scan_of_every_buffer(void)
{
	const uint32_t n = 3000;
	struct tbuf *b = calloc(n, sizeof(*b));
	uint64_t seed = 99;
	for (uint32_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t start = (seed >> 33) % 100000;
		uint64_t len = i % 97 == 0 ? 1 + (seed >> 20) % 90000
					   : 1 + (seed >> 44) % 300;
		b[i] = (struct tbuf){"x", 64 + (seed >> 50) % 5000, start,
				     start + len, (i % 400) * 4096, 0, 0};
		if (i % 50 == 1) /* a twin of the buffer before: a tie */
			b[i] = b[i - 1];
	}
	struct as_plan *p;
	struct as_trace *t = make(b, n, NULL, 0, &p);
	struct as_render_panel pn = {"hits", t, p, NULL, 0};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	struct as_render_opts o = *as_render_get_opts(r);
	const struct as_render_view views[] = {
		{0, 0, 0, 0},
		{40000, 41000, 0, 0},
		{50000, 50020, 0.3, 0.31},
	};
	uint32_t mismatches = 0, hits = 0;
	for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
		o.view = views[v];
		CHECK(as_render_set_opts(r, &o) == AS_OK);
		struct as_render_panel_info in;
		CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
		for (double y = in.y + 0.5; y < in.y + in.h; y += 9.7) {
			for (double x = in.x + 0.25; x < in.x + in.w;
			     x += 13.3) {
				double slop = (int)x % 3 == 0 ? 0 : 4;
				struct as_render_hit h;
				CHECK(as_render_hit_test(r, x, y, slop, &h) ==
				      AS_OK);
				/* The scan, from the public pixel mapping. */
				double best_area = INFINITY, best_d = slop;
				uint32_t in_b = AS_NONE, near = AS_NONE;
				for (uint32_t i = 0; i < n; i++) {
					double x0, x1, y0, y1;
					uint64_t lo = b[i].offset,
						 hi = lo + b[i].size;
					as_render_to_pixel(r, 0,
							   (double)b[i].start,
							   lo, &x0, &y1);
					as_render_to_pixel(r, 0,
							   (double)b[i].end,
							   hi, &x1, &y0);
					double dx = x < x0 ? x0 - x
						    : (x > x1 ? x - x1 : 0);
					double dy = y < y0 ? y0 - y
						    : (y > y1 ? y - y1 : 0);
					double dd = dx > dy ? dx : dy;
					if (dd == 0) {
						double a = (x1 - x0) *
							   (y1 - y0);
						if (a < best_area) {
							best_area = a;
							in_b = i;
						}
					} else if (dd <= best_d) {
						best_d = dd;
						near = i;
					}
				}
				uint32_t want = in_b != AS_NONE ? in_b : near;
				hits += want != AS_NONE;
				mismatches += h.buffer != want;
			}
		}
	}
	CHECK(hits > 1000);
	CHECK_EQ_U64(mismatches, 0);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
	free(b);
}

/*
 * The peak moment, by brute force: every whole time, the bytes live then,
 * among the times when a buffer reaching the plan's top is live.
 */
static uint64_t brute_peak_time(const struct tbuf *b, size_t n, bool bound)
{
	uint64_t top = 0, tend = 0, best = 0, when = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		top = b[i].offset + b[i].size > top ? b[i].offset + b[i].size
						    : top;
		tend = b[i].end > tend ? b[i].end : tend;
	}
	for (uint64_t t = 0; t < tend; t++) {
		uint64_t live = 0;
		bool at_top = bound;
		for (size_t i = 0; i < n; i++) {
			if (b[i].start > t || b[i].end <= t)
				continue;
			live += b[i].size;
			at_top |= b[i].offset + b[i].size == top;
		}
		if (at_top && live > 0 && (when == UINT64_MAX || live > best)) {
			best = live;
			when = t;
		}
	}
	return when;
}

static void peak_time_is_the_most_bytes_live_while_the_top_is_in_use(void)
{
	/* The defect: a long-lived buffer at the top from t=0 made "live at
	 * peak" t=0, while the bytes pile up at t=50. */
	static const struct tbuf shape[] = {
		{"long", 100, 0, 100, 1000, 0, 0},
		{"a", 400, 40, 60, 0, 0, 0},
		{"b", 500, 45, 55, 400, 0, 0},
		{"early", 50, 0, 10, 0, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(shape, 4, NULL, 0, &p);
	struct as_moment m;
	CHECK(as_plan_peak_moment(t, p, AS_RENDER_ALL_SPACES, &m) == AS_OK);
	CHECK_EQ_U64(m.time, 45);
	CHECK_EQ_U64(m.live_bytes, 1000);
	CHECK_EQ_U64(m.top_buffer, 0);
	struct as_render_panel pn = {"p", t, p, NULL, AS_RENDER_ALL_SPACES};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	struct as_render_panel_info info;
	CHECK(as_render_panel_info(r, 0, &info) == AS_OK);
	CHECK_EQ_U64(info.peak_time, 45);
	CHECK_EQ_U64(info.lower_bound_time, 45);
	uint32_t live[8];
	CHECK(as_render_live_at(r, 0, (double)info.peak_time, live, 8) == 3);
	/* What happens in [40, 60): a and b start, b ends; 1000 bytes live
	 * at most; the top in use is long's, 1100. */
	struct as_range_summary rs;
	CHECK(as_render_range_summary(r, 0, 40, 60, &rs) == AS_OK);
	CHECK_EQ_U64(rs.allocs, 2);
	CHECK_EQ_U64(rs.alloc_bytes, 900);
	CHECK_EQ_U64(rs.frees, 1);
	CHECK_EQ_U64(rs.free_bytes, 500);
	CHECK_EQ_U64(rs.peak_live, 1000);
	CHECK_EQ_U64(rs.peak_top, 1100);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);

	/* Random traces and random (not necessarily valid) plans. */
	uint64_t seed = 20261123;
	printf("# seed %llu\n", (unsigned long long)seed);
	for (int round = 0; round < 200; round++) {
		struct tbuf b[40];
		char names[40][24];
		size_t n = 1 + as_test_rand(&seed) % 40;
		for (size_t i = 0; i < n; i++) {
			snprintf(names[i], sizeof(names[i]), "b%zu", i);
			uint64_t s = as_test_rand(&seed) % 90;
			b[i] = (struct tbuf){names[i],
					     1 + as_test_rand(&seed) % 1000, s,
					     s + 1 + as_test_rand(&seed) % 30,
					     (as_test_rand(&seed) % 8) * 512, 0, 0};
		}
		t = make(b, n, NULL, 0, &p);
		if (!t)
			break;
		CHECK(as_plan_peak_moment(t, p, AS_RENDER_ALL_SPACES, &m) ==
		      AS_OK);
		CHECK_EQ_U64(m.time, brute_peak_time(b, n, false));
		CHECK(as_trace_peak_moment(t, AS_RENDER_ALL_SPACES, &m) ==
		      AS_OK);
		CHECK_EQ_U64(m.time, brute_peak_time(b, n, true));
		CHECK_EQ_U64(m.live_bytes, as_trace_lower_bound(t));
		as_plan_destroy(p);
		as_trace_destroy(t);
	}
}

static bool near_colour(uint32_t a, uint32_t b)
{
	for (int sh = 0; sh < 24; sh += 8) {
		int d = (int)((a >> sh) & 0xff) - (int)((b >> sh) & 0xff);
		if (d < -12 || d > 12)
			return false;
	}
	return true;
}

/* Defect: tall buffers with short lives vanished at low zoom. */
static void tall_short_lived_buffers_stay_visible_at_low_zoom(void)
{
	static const struct tbuf shape[] = {
		{"tall-a", 391u << 20, 10000, 10005, 0, 0, 0},
		{"tall-b", 391u << 20, 15000, 15007, 391u << 20, 0, 0},
		{"long", 100u << 20, 0, 22000, 782u << 20, 0, 0},
		{"tiny", 1024, 0, 22000, 900u << 20, 0, 0},
		/* Neighbours in the same addresses right before and after:
		 * drawn snapped to whole pixels, they used to cover it. */
		{"before-a", 391u << 20, 0, 10000, 0, 0, 0},
		{"after-a", 391u << 20, 10005, 22000, 0, 0, 0},
		{"before-b", 391u << 20, 0, 15000, 391u << 20, 0, 0},
		{"after-b", 391u << 20, 15007, 22000, 391u << 20, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(shape, 8, NULL, 0, &p);
	for (int mode = 0; mode < 2; mode++) {
		struct as_render_opts o;
		as_render_opts_init(&o);
		o.color_by = mode ? AS_COLOR_SIZE : AS_COLOR_BUFFER;
		struct as_render_panel pn = {"p", t, p, NULL,
					     AS_RENDER_ALL_SPACES};
		struct as_render *r = NULL;
		struct as_diag d;
		CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
		if (!r)
			break;
		uint32_t *px = draw(r, o.width, o.height);
		for (int k = 0; k < 2; k++) {
			/* Every pixel row of the buffer, in the column of its
			 * life (or the next: the column is whole). */
			double x0, y0, x1, y1;
			const struct tbuf *b = &shape[k];
			CHECK(as_render_to_pixel(r, 0, (double)b->start,
						 b->offset + b->size, &x0,
						 &y0) == AS_OK);
			CHECK(as_render_to_pixel(r, 0, (double)b->end,
						 b->offset, &x1, &y1) == AS_OK);
			uint32_t want = as_render_buffer_color(r, 0, k);
			int coloured = 0, rows = 0;
			for (int y = (int)ceil(y0) + 1; y < (int)y1 - 1; y++) {
				rows++;
				bool any = false;
				for (int x = (int)floor(x0) - 1;
				     x <= (int)ceil(x1); x++)
					any |= near_colour(at(px, o.width, x, y),
							   want);
				coloured += any;
			}
			CHECK(rows > 100);
			CHECK(coloured == rows);
		}
		free(px);
		as_render_destroy(r);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* Defect: "2.21M, 2.21M" on the time axis when zoomed at large times. */
static void time_labels_never_repeat_when_zoomed_at_large_times(void)
{
	static const struct tbuf shape[] = {
		{"long", 4096, 0, 3000000, 0, 0, 0},
		{"late", 1024, 2210100, 2210200, 4096, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(shape, 2, NULL, 0, &p);
	static const double spans[] = {400, 40, 4000, 40000};
	for (int k = 0; k < 4; k++) {
		struct as_render_opts o;
		as_render_opts_init(&o);
		o.view.t0 = 2210000;
		o.view.t1 = 2210000 + spans[k];
		struct as_render_panel pn = {"p", t, p, NULL,
					     AS_RENDER_ALL_SPACES};
		size_t len;
		char *svg = render_svg(&pn, 1, &o, &len);
		/* Time labels are the texts made of digits, '.' and k/M. */
		char seen[64][32];
		int n = 0, dup = 0;
		for (const char *q = svg; q && (q = strstr(q, "\">")); q += 2) {
			const char *e = strstr(q + 2, "</text>");
			size_t l = e ? (size_t)(e - q - 2) : 0;
			if (!e || l == 0 || l >= 32 ||
			    strspn(q + 2, "0123456789.kM") != l)
				continue;
			char lab[32];
			memcpy(lab, q + 2, l);
			lab[l] = 0;
			for (int j = 0; j < n; j++)
				dup += strcmp(seen[j], lab) == 0;
			if (n < 64)
				snprintf(seen[n++], sizeof(seen[0]), "%s", lab);
		}
		CHECK(n >= 3);
		CHECK(dup == 0);
		if (dup)
			printf("# span %.0f: a label repeats\n", spans[k]);
		free(svg);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * What recorded traces (snapshots, malloc traces) add: a clock (labels in
 * ms), an OOM mark, a reserved segment behind the recorded plan, the
 * allocator's rounding above the request and the pending part of a buffer
 * freed by the program but not yet by the allocator.
 */
static struct as_trace *make_recorded(struct as_plan **plan)
{
	struct as_diag d;
	struct as_builder *bl = as_builder_create("snap.pickle", "pickle");
	char name[16];
	for (int k = 0; k < 40; k++) {
		CHECK(as_builder_clock(bl, (uint64_t)k * 2500, 0, &d) == AS_OK);
		snprintf(name, sizeof(name), "x%d", k);
		int64_t i = as_builder_alloc(bl, name, 4096, 1, 0, &d);
		CHECK(i == k);
		struct as_buffer_info *inf = as_builder_info(bl, (uint32_t)i);
		CHECK(inf != NULL);
		if (inf)
			inf->requested = 1024;
		if (k == 20) {
			struct as_mark m = {0, 1 << 20, 0, 0, AS_MARK_OOM};
			CHECK(as_builder_mark(bl, &m) == AS_OK);
		}
		if (k >= 5) {
			snprintf(name, sizeof(name), "x%d", k - 5);
			CHECK(as_builder_free(bl, name, 0, &d) == AS_OK);
		}
	}
	struct as_segment sg = {0, 64 << 10, 0, 200, 0, 0, 0};
	CHECK(as_builder_segment(bl, &sg) == AS_OK);
	struct as_trace *t = NULL;
	CHECK(as_builder_finish(bl, &t, &d) == AS_OK);
	if (!t)
		return NULL;
	/* Buffer 3: the program let go of it halfway through its life. */
	t->info[3].free_requested =
		(t->buffers[3].start + t->buffers[3].end) / 2;
	struct as_plan *p = as_plan_create(t);
	for (uint32_t i = 0; i < t->nbuffers; i++)
		p->offset[i] = (uint64_t)(i % 8) * 4096;
	*plan = p;
	return t;
}

static void recorded_clock_marks_segments_and_waste_are_drawn(void)
{
	struct as_plan *p;
	struct as_trace *t = make_recorded(&p);
	if (!t)
		return;
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render_panel pn = {"recorded", t, p, NULL,
				     AS_RENDER_ALL_SPACES};
	size_t len;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && strstr(svg, " ms</text>"));
	CHECK(svg && strstr(svg, ">time (recorded clock"));
	CHECK(svg && strstr(svg, "fill=\"#eeeeee\"")); /* the segment */
	CHECK(svg && strstr(svg, ">memory over time</text>"));
	CHECK(svg && strstr(svg, ">OOM / failed</text>"));
	free(svg);
	o.time_events = true;
	svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && !strstr(svg, " ms</text>"));
	free(svg);
	keep("recorded", &pn, 1, &o);

	/* Pixels: the rounding above the request and the pending part are
	 * lighter than the requested bytes in use. */
	o.time_events = false;
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	if (r) {
		uint32_t *px = draw(r, o.width, o.height);
		const struct as_buffer *b = &t->buffers[3];
		double xa, ya, xb, yb, xc, yc;
		uint64_t off = p->offset[3];
		/* Early in its life: low (requested) and high (rounding). */
		as_render_to_pixel(r, 0, b->start + 0.3 * (b->end - b->start),
				   off + 512, &xa, &ya);
		as_render_to_pixel(r, 0, b->start + 0.3 * (b->end - b->start),
				   off + 3072, &xb, &yb);
		/* Late in its life (pending), requested bytes. */
		as_render_to_pixel(r, 0, b->start + 0.8 * (b->end - b->start),
				   off + 512, &xc, &yc);
		uint32_t used = at(px, o.width, xa, ya);
		uint32_t round = at(px, o.width, xb, yb);
		uint32_t pend = at(px, o.width, xc, yc);
		int lu = (int)((used >> 16) & 0xff) + ((used >> 8) & 0xff) +
			 (used & 0xff);
		int lr = (int)((round >> 16) & 0xff) + ((round >> 8) & 0xff) +
			 (round & 0xff);
		int lp = (int)((pend >> 16) & 0xff) + ((pend >> 8) & 0xff) +
			 (pend & 0xff);
		CHECK(lr > lu + 60);
		CHECK(lp > lu + 60);
		free(px);
		as_render_destroy(r);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * Reserved memory is drawn wherever the plan has some: the segments a
 * strategy reserved (cuda-caching's per-buffer segment size and offset),
 * cached after their buffers end until a later segment takes their
 * addresses, whatever the panel's title; nothing for a plan without them.
 */
static void segments_a_strategy_reserved_are_drawn_on_its_panel(void)
{
	const uint64_t M = 1 << 20;
	static const struct tbuf shape[] = {
		{"a", 1 << 20, 0, 10, 0, 0, 0},          /* segment [0, 2M) */
		{"b", 1 << 20, 20, 30, 1 << 20, 0, 0},   /* the same */
		{"c", 1 << 20, 5, 15, 4 << 20, 0, 0},    /* segment [4M, 6M) */
		{"d", 1 << 20, 60, 100, 1 << 20, 0, 0},  /* segment [1M, 3M) */
	};
	struct as_plan *p;
	struct as_trace *t = make(shape, 4, NULL, 0, &p);
	if (!t)
		return;
	CHECK(as_plan_want_segments(p) == AS_OK);
	const uint64_t ssz[4] = {2 * M, 2 * M, 2 * M, 2 * M};
	const uint64_t soff[4] = {0, M, 0, 0};
	for (int i = 0; i < 4; i++) {
		p->segment_size[i] = ssz[i];
		p->segment_offset[i] = soff[i];
	}
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.width = 800;
	o.height = 400;
	o.sidebar = false;
	struct as_render_panel pn = {"cuda-caching", t, p, NULL, 0};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	if (!r)
		goto out;
	uint32_t *px = draw(r, o.width, o.height);
	double x, y;
	/* Cached: segment 1 after its buffers ended, segment 2 to the end. */
	CHECK(as_render_to_pixel(r, 0, 47, 3 * M / 10, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), 0xeeeeee);
	CHECK(as_render_to_pixel(r, 0, 87, 46 * M / 10, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), 0xeeeeee);
	/* Released when segment 3 took part of its range at 60. */
	CHECK(as_render_to_pixel(r, 0, 83, 3 * M / 10, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), 0xffffff);
	/* Segment 3 under and beside its buffer's life. */
	CHECK(as_render_to_pixel(r, 0, 83, 27 * M / 10, &x, &y) == AS_OK);
	CHECK_EQ_U64(at(px, o.width, x, y), 0xeeeeee);
	free(px);
	as_render_destroy(r);
	keep("segments", &pn, 1, &o);
	/* The same plan without segments: nothing reserved to show. */
	free(p->segment_size);
	free(p->segment_offset);
	p->segment_size = p->segment_offset = NULL;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	if (r) {
		px = draw(r, o.width, o.height);
		CHECK(as_render_to_pixel(r, 0, 47, 3 * M / 10, &x, &y) == AS_OK);
		CHECK_EQ_U64(at(px, o.width, x, y), 0xffffff);
		free(px);
		as_render_destroy(r);
	}
out:
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * A heap recording: offsets are addresses with the empty ranges between
 * mappings shrunk (the address map). A plan that keeps them, whatever its
 * name, says real addresses in its tooltip and under the mouse, and shows
 * the recording's segments; a plan of its own says offsets.
 */
static void recorded_offsets_read_as_real_addresses(void)
{
	char path[] = "/tmp/as_render_mtraceXXXXXX.mtrace";
	int fd = mkstemps(path, 7);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	const char *text = "= Start\n"
			   "@ ./a.out:[0x401136] + 0x5555555592a0 0x100\n"
			   "@ ./a.out:[0x401136] + 0x7f0000001000 0x20000\n"
			   "@ ./a.out:[0x401136] - 0x5555555592a0\n"
			   "@ ./a.out:[0x401136] + 0x555555559400 0x80\n"
			   "@ ./a.out:[0x401136] - 0x7f0000001000\n"
			   "@ ./a.out:[0x401136] - 0x555555559400\n"
			   "= End\n";
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
	unlink(path);
	if (!t)
		return;
	CHECK(t->naddr_map > 0);
	struct as_plan *mine = as_plan_create(t), *other = as_plan_create(t);
	uint32_t big = AS_NONE;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		mine->offset[i] = t->buffers[i].recorded;
		other->offset[i] = (uint64_t)i << 20;
		if (t->buffers[i].size == 0x20000)
			big = i;
	}
	CHECK(big != AS_NONE);
	struct as_render_panel pn[2] = {{"from a file", t, mine, NULL, 0},
					{"greedy", t, other, NULL, 0}};
	struct as_render *r = NULL;
	CHECK(as_render_create(pn, 2, NULL, &r, &d) == AS_OK);
	if (r && big != AS_NONE) {
		char buf[1024];
		as_render_buffer_text(r, 0, big, buf, sizeof(buf));
		CHECK(strstr(buf, "at address 0x7f0000001000") != NULL);
		as_render_buffer_text(r, 1, big, buf, sizeof(buf));
		CHECK(strstr(buf, "at offset") != NULL);
		const struct as_buffer *b = &t->buffers[big];
		double x, y;
		CHECK(as_render_to_pixel(r, 0, (b->start + b->end) / 2.0,
					 mine->offset[big] + 0x10000, &x,
					 &y) == AS_OK);
		struct as_render_hit h;
		CHECK(as_render_hit_test(r, x, y, 0, &h) == AS_OK);
		CHECK_EQ_U64(h.buffer, big);
		CHECK(h.has_real);
		CHECK(h.real_address >= 0x7f0000001000ull &&
		      h.real_address < 0x7f0000021000ull);
		CHECK(h.address < 0x7f0000001000ull); /* the offset */
		CHECK(as_render_to_pixel(r, 1, (b->start + b->end) / 2.0,
					 other->offset[big] + 0x10000, &x,
					 &y) == AS_OK);
		CHECK(as_render_hit_test(r, x, y, 0, &h) == AS_OK);
		CHECK(!h.has_real);
	}
	as_render_destroy(r);
	as_plan_destroy(mine);
	as_plan_destroy(other);
	as_trace_destroy(t);
}

/* Defect: "+0%" and "peak 100 MiB, lower bound 100 MiB" for a 0.4% gap. */
static void small_gaps_keep_their_digits(void)
{
	static const struct tbuf shape[] = {
		{"a", 50u << 20, 0, 10, 0, 0, 0},
		{"b", 50u << 20, 0, 10, (50u << 20) + (400u << 10), 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(shape, 2, NULL, 0, &p);
	struct as_render_panel pn = {"p", t, p, NULL, AS_RENDER_ALL_SPACES};
	size_t len;
	char *svg = render_svg(&pn, 1, NULL, &len);
	CHECK(svg && strstr(svg, ">gap +0.39%</text>"));
	CHECK(svg && strstr(svg, ">peak 100.391 MiB</text>"));
	CHECK(svg && strstr(svg, ">lower bound 100 MiB</text>"));
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void far_apart_address_ranges_are_compressed_with_a_break(void)
{
	static const struct tbuf far[] = {
		{"heap1", 1 << 20, 0, 10, 0x555555550000ull, 0, 0},
		{"heap2", 1 << 20, 5, 20, 0x555555650000ull, 0, 0},
		{"mmap1", 4 << 20, 2, 18, 0x7ffff7a00000ull, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(far, 3, NULL, 0, &p);
	struct as_render_panel pn = {"recorded", t, p, NULL, 0};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	double x, ya, yb;
	for (int i = 0; i < 3; i++) {
		CHECK(as_render_to_pixel(r, 0, 0, far[i].offset, &x, &ya) == 0);
		CHECK(as_render_to_pixel(r, 0, 0, far[i].offset + far[i].size,
					 &x, &yb) == 0);
		/* Each buffer takes a real share of the height, not a sliver. */
		CHECK(ya - yb > in.h * 0.1);
	}
	size_t len;
	char *svg = render_svg(&pn, 1, NULL, &len);
	CHECK(svg && strstr(svg, "unused, not to scale"));
	CHECK(svg && strstr(svg, ">0x7ffff7a00000</text>"));
	keep("compressed", &pn, 1, NULL);
	free(svg);
	/* Without compression the heap is a sliver. */
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.compress = false;
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	CHECK(as_render_to_pixel(r, 0, 0, far[0].offset, &x, &ya) == 0);
	CHECK(as_render_to_pixel(r, 0, 0, far[0].offset + far[0].size, &x,
				 &yb) == 0);
	CHECK(ya - yb < 1);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* 10^6 buffers in 2000 lanes; lane k is a row of short-lived buffers. */
static struct as_trace *make_big(uint32_t n, struct as_plan **plan)
{
	struct as_diag d;
	struct as_builder *bl = as_builder_create("big.csv", "csv");
	const uint32_t lanes = 2000;
	uint64_t *clock = calloc(lanes, sizeof(*clock));
	uint64_t seed = 12345;
	char name[32];
	for (uint32_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t lane = i % lanes;
		uint64_t len = 1 + (seed >> 33) % 8;
		uint64_t size = 64 + (seed >> 40) % 4000;
		snprintf(name, sizeof(name), "t%u", i);
		as_builder_add_timed(bl, name, size, 1, clock[lane],
				     clock[lane] + len, 0, &d);
		clock[lane] += len + (seed >> 50) % 3;
	}
	struct as_trace *t = NULL;
	CHECK(as_builder_finish(bl, &t, &d) == AS_OK);
	struct as_plan *p = as_plan_create(t);
	for (uint32_t i = 0; i < n; i++)
		p->offset[i] = (uint64_t)(i % lanes) * 4096;
	free(clock);
	*plan = p;
	return t;
}

/*
 * A pan by whole pixels moves the picture it has and draws only the
 * uncovered columns (and rows) and those at the plot's edges: the pixels are those
 * of a picture drawn afresh at the new view (a density cell may differ
 * by a step where float sums were added in another order), in both
 * raster modes, at four zooms, with thin tall buffers and with buffers
 * cut by the edges.
 */
static void panning_by_whole_pixels_draws_what_a_fresh_picture_draws(void)
{
	const uint32_t n = 60000, lanes = 100;
	struct tbuf *b = calloc(n, sizeof(*b));
	uint64_t *clock = calloc(lanes, sizeof(*clock));
	uint64_t seed = 16;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t x = as_test_rand(&seed);
		uint32_t lane = i % lanes;
		uint64_t len = i % 211 == 0 ? 500 + x % 20000
			       : i % 17 == 0 ? 20 + x % 200 : 1 + x % 6;
		/* Every tenth lane tall: more thin tall buffers than are
		 * drawn one by one (the raster of them). */
		uint64_t size = lane % 10 == 0 ? 200000 : 64 + (x >> 20) % 4000;
		b[i] = (struct tbuf){i % 3 ? "a.x" : "b.y", size, clock[lane],
				     clock[lane] + len,
				     (uint64_t)lane * 4096 +
					     (lane / 10) * 200000,
				     0, 0};
		clock[lane] += len + (x >> 40) % 3;
	}
	struct as_plan *p;
	struct as_trace *t = make(b, n, NULL, 0, &p);
	struct as_render_panel pn = {"pan", t, p, NULL, 0};
	const enum as_color_by modes[] = {AS_COLOR_BUFFER, AS_COLOR_SIZE};
	uint64_t ndiff = 0, cells = 0, moved = 0, steps = 0;
	for (size_t mi = 0; mi < 2; mi++) {
		struct as_render_opts o;
		as_render_opts_init(&o);
		o.width = 900;
		o.height = 500;
		o.color_by = modes[mi];
		struct as_render *r = NULL, *f = NULL;
		struct as_diag d;
		CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
		struct as_render_panel_info in;
		CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
		/* A twentieth of the trace, a half, all of it, and a few
		 * pixels a time unit near its end. */
		const double spans[] = {clock[0] / 20.0, clock[0] / 2.0,
					clock[0] * 1.1, 300};
		const double from[] = {1000, 1000, 1000, clock[0] * 0.9};
		/* Time, and at the second and fourth zoom addresses too. */
		const int shifts[] = {7, 7, -13, 1, -1, 120, -300, 2};
		const int yshifts[] = {0, 3, 0, -1, 9, 0, -40, 1};
		for (size_t si = 0; si < 4; si++) {
			o.view = (struct as_render_view){
				from[si], from[si] + spans[si], 0, 0};
			if (si == 1 || si == 3)
				o.view.y0 = 0.02, o.view.y1 = 0.9;
			CHECK(as_render_set_opts(r, &o) == AS_OK);
			free(draw(r, o.width, o.height));
			for (size_t k = 0; k < 8; k++) {
				double dt = shifts[k] * spans[si] / in.w;
				o.view.t0 += dt;
				o.view.t1 += dt;
				if (si == 1 || si == 3) {
					double du = yshifts[k] *
						    (o.view.y1 - o.view.y0) /
						    in.h;
					o.view.y0 += du;
					o.view.y1 += du;
				}
				CHECK(as_render_set_opts(r, &o) == AS_OK);
				uint32_t *a = draw(r, o.width, o.height);
				CHECK(as_render_create(&pn, 1, &o, &f, &d) ==
				      AS_OK);
				uint32_t *c = draw(f, o.width, o.height);
				for (int y = (int)in.y; y < in.y + in.h; y++)
					for (int x = (int)in.x;
					     x < in.x + in.w; x++) {
						uint32_t u = a[y * o.width + x],
							 v = c[y * o.width + x];
						int worst = 0;
						for (int s = 0; s < 32; s += 8) {
							int e = (int)((u >> s) & 255) -
								(int)((v >> s) & 255);
							e = e < 0 ? -e : e;
							worst = e > worst ? e : worst;
						}
						ndiff += worst > 0;
						cells++;
					}
				as_render_destroy(f);
				free(a);
				free(c);
				steps++;
			}
		}
		CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
		moved += in.frames_moved;
		as_render_destroy(r);
	}
	/* Most steps moved the picture (the largest ones uncover much). */
	CHECK(moved * 4 >= steps * 3);
	printf("# %llu of %llu steps moved; %llu of %llu pixels differ\n",
	     (unsigned long long)moved, (unsigned long long)steps,
	     (unsigned long long)ndiff, (unsigned long long)cells);
	CHECK(ndiff * 100000 <= cells);
	as_plan_destroy(p);
	as_trace_destroy(t);
	free(clock);
	free(b);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Times are printed for the record (benchmarks judge speed), not asserted:
 * a loaded machine must not fail the suite.
 */
static void a_million_buffers_render_into_a_bounded_svg(void)
{
	struct as_plan *p;
	struct as_trace *t = make_big(1000000, &p);
	struct as_report rep;
	CHECK(as_validate(t, p, &rep) == AS_OK && rep.valid);
	struct as_render_panel pn[2] = {
		{"lanes", t, p, &rep, 0},
		{"lanes again", t, p, &rep, 0},
	};
	double t0 = now();
	size_t len;
	char *svg = render_svg(pn, 2, NULL, &len);
	double t1 = now();
	struct as_render *r = NULL;
	struct as_diag d;
	char *png = NULL;
	size_t plen = 0;
	CHECK(as_render_create(pn, 2, NULL, &r, &d) == AS_OK);
	FILE *f = open_memstream(&png, &plen);
	CHECK(as_render_write_stream(r, f, AS_IMAGE_PNG) == AS_OK);
	fclose(f);
	double t2 = now();
	printf("# 10^6 buffers, 2 panels: SVG %zu bytes in %.2f s, PNG %zu "
	       "bytes in %.2f s\n",
	       len, t1 - t0, plen, t2 - t1);
	CHECK(len < 2 * 1024 * 1024);
	CHECK(svg && strstr(svg, "data:image/png;base64,"));
	/* Viewer frames: after a pan (level of detail recomputed), then
	 * again (a hover: reused). */
	uint32_t *px = calloc((size_t)1280 * 800, 4);
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.view = (struct as_render_view){10, 2000, 0, 0};
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	double t3 = now();
	CHECK(as_render_draw_argb32(r, px, 1280, 800, 1280 * 4) == AS_OK);
	double t4 = now();
	o.highlight = 77;
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	CHECK(as_render_draw_argb32(r, px, 1280, 800, 1280 * 4) == AS_OK);
	double t5 = now();
	printf("# 10^6 buffers, 2 panels, 1280x800 frame: %.0f ms after a pan, "
	       "%.0f ms after a hover\n",
	       (t4 - t3) * 1000, (t5 - t4) * 1000);
	free(px);
	keep("million", pn, 2, NULL);
	free(svg);
	free(png);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void colours_follow_the_name_in_every_panel_and_mode(void)
{
	static const struct tbuf twice[] = {
		{"same", 1024, 0, 4, 0, 0, 0},
		{"other", 512, 0, 8, 1024, 0, 0},
		{"same", 1024, 5, 8, 0, 0, 0},
	};
	struct as_plan *p, *q;
	struct as_trace *t = make(twice, 3, NULL, 0, &p);
	q = as_plan_create(t);
	q->offset[0] = 512;
	q->offset[1] = 0;
	q->offset[2] = 512;
	struct as_render_panel pn[2] = {{"p", t, p, NULL, 0},
					{"q", t, q, NULL, 0}};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(pn, 2, &o, &r, &d) == AS_OK);
	CHECK_EQ_U64(as_render_buffer_color(r, 0, 0),
		     as_render_buffer_color(r, 1, 2));
	o.color_by = AS_COLOR_SIZE;
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	CHECK(as_render_buffer_color(r, 0, 0) != as_render_buffer_color(r, 0, 1));
	o.color_by = AS_COLOR_LIFETIME;
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	CHECK(as_render_buffer_color(r, 0, 0) != as_render_buffer_color(r, 0, 1));
	keep("lifetime", pn, 2, &o);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_plan_destroy(q);
	as_trace_destroy(t);
}

static void option_parsers_accept_good_values_and_reject_bad_ones(void)
{
	int w = 0, h = 0;
	enum as_image_format f;
	enum as_color_by c;
	CHECK(as_render_parse_size("1280x800", &w, &h) == AS_OK);
	CHECK(w == 1280 && h == 800);
	CHECK(as_render_parse_size("100x800", &w, &h) == AS_EINVAL);
	CHECK(as_render_parse_size("1280x", &w, &h) == AS_EINVAL);
	CHECK(as_render_parse_size("12a0x800", &w, &h) == AS_EINVAL);
	CHECK(as_render_parse_size("99999999999999999999x800", &w, &h) ==
	      AS_EINVAL);
	CHECK(as_image_format_from_path("a/b.PNG", &f) == AS_OK &&
	      f == AS_IMAGE_PNG);
	CHECK(as_image_format_from_path("b.svg", &f) == AS_OK &&
	      f == AS_IMAGE_SVG);
	CHECK(as_image_format_from_path("b.jpg", &f) == AS_EINVAL);
	CHECK(as_color_by_from_name("pool", &c) == AS_OK &&
	      c == AS_COLOR_SPACE);
	CHECK(as_color_by_from_name("lifetime", &c) == AS_OK &&
	      c == AS_COLOR_LIFETIME);
	CHECK(as_color_by_from_name("rainbow", &c) == AS_EINVAL);
}

static void a_file_that_cannot_be_written_leaves_nothing_behind(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn = {"x", t, p, NULL, 0};
	struct as_diag d = {0};
	CHECK(as_render_file("/nonexistent-dir/x.png", AS_IMAGE_AUTO, &pn, 1,
			     NULL, &d) != AS_OK);
	CHECK_STR(d.file, "/nonexistent-dir/x.png");
	CHECK_STR(d.msg, "cannot write: No such file or directory");
	CHECK(as_render_file("/tmp/x.gif", AS_IMAGE_AUTO, &pn, 1, NULL, &d) ==
	      AS_EINVAL);
	struct stat st;
	CHECK(stat("/tmp/x.gif", &st) != 0);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void names_that_are_not_utf8_still_render(void)
{
	static const struct tbuf odd[] = {
		{"bad\xff\xfename<&>\"", 4096, 0, 10, 0, 0, 0},
		{"tab\there", 4096, 0, 10, 4096, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(odd, 2, NULL, 0, &p);
	struct as_render_panel pn = {"odd <title>", t, p, NULL, 0};
	size_t len;
	char *svg = render_svg(&pn, 1, NULL, &len);
	CHECK(svg && strstr(svg, "bad??name&lt;&amp;&gt;&quot;"));
	CHECK(svg && !strstr(svg, "\xff"));
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	uint32_t *px = draw(r, 1280, 800);
	free(px);
	as_render_destroy(r);
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void zoomed_views_clip_and_hidpi_pixels_scale(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn = {"greedy-size", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.view = (struct as_render_view){4, 8, 0.2, 0.6};
	o.highlight = 2;
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	struct as_render_hit h;
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	CHECK(as_render_hit_test(r, in.x + 1, in.y + in.h - 1, 0, &h) == 0);
	CHECK(h.time > 3.9 && h.time < 4.1);
	CHECK(h.axis > 0.19 && h.axis < 0.21);
	/* Zoom onto fc.w with the axis fractions of its addresses. */
	double u0 = as_render_axis_at(r, 0, small[4].offset);
	double u1 = as_render_axis_at(r, 0, small[4].offset + small[4].size);
	CHECK(u0 > 0 && u1 > u0 && u1 <= 1);
	struct as_render_opts z = o;
	z.view = (struct as_render_view){small[4].start, small[4].end, u0, u1};
	CHECK(as_render_set_opts(r, &z) == AS_OK);
	CHECK(as_render_hit_test(r, in.x + in.w / 2, in.y + in.h / 2, 0, &h) ==
	      AS_OK);
	CHECK_EQ_U64(h.buffer, 4);
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	uint32_t *px = calloc((size_t)2560 * 1600, 4);
	CHECK(as_render_draw_argb32(r, px, 2560, 1600, 2560 * 4) == AS_OK);
	/* The background far right of the header is white at 2x too. */
	CHECK_EQ_U64(px[(size_t)30 * 2560 + 2000] & 0xffffff, 0xffffff);
	free(px);
	keep("zoomed", &pn, 1, &o);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void timestamps_far_from_zero_keep_their_precision(void)
{
	static const struct tbuf late[] = {
		{"a", 100, 1000000000000000000ull, 1000000000000000010ull, 0, 0, 0},
		{"b", 100, 1000000000000000005ull, 1000000000000000020ull, 100, 0,
		 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(late, 2, NULL, 0, &p);
	struct as_render_panel pn = {"recorded", t, p, NULL, 0};
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, NULL, &r, &d) == AS_OK);
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 0, &in) == AS_OK);
	/* b starts halfway along the axis [start of a, end of b) ... */
	double x, y;
	uint32_t *px = draw(r, 1280, 800);
	CHECK(as_render_to_pixel(r, 0, 0, 150, &x, &y) == AS_OK);
	struct as_render_hit h;
	double xb = in.x + in.w * 5 / 20.0 + 4, xa = in.x + 4;
	CHECK(as_render_hit_test(r, xb, y, 0, &h) == AS_OK);
	CHECK_EQ_U64(h.buffer, 1);
	CHECK(as_render_hit_test(r, xa, y, 0, &h) == AS_OK);
	CHECK_EQ_U64(h.buffer, AS_NONE);
	CHECK_EQ_U64(at(px, 1280, xb, y), as_render_buffer_color(r, 0, 1));
	CHECK_EQ_U64(at(px, 1280, xa, y), 0xffffff);
	free(px);
	size_t len;
	char *svg = render_svg(&pn, 1, NULL, &len);
	CHECK(svg && strstr(svg, ">time since 1000000000000000000</text>"));
	CHECK(svg && strstr(svg, ">+10</text>"));
	free(svg);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void hostile_offsets_and_sizes_still_draw(void)
{
	static const struct tbuf wild[] = {
		{"top", 100, 0, 10, UINT64_MAX - 10, 0, 0},
		{"huge", UINT64_MAX / 2, 2, 8, 0, 0, 0},
		{"one", 1, 3, 4, 1ull << 63, 0, 0},
		{"zero-life", 8, 5, 6, 12345, 0, 0},
	};
	struct as_plan *p;
	struct as_trace *t = make(wild, 4, NULL, 0, &p);
	struct as_render_panel pn = {"wild", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	uint32_t *px = draw(r, o.width, o.height);
	free(px);
	o.compress = false;
	o.view = (struct as_render_view){-5, 1e30, 0.999999, 1.0};
	CHECK(as_render_set_opts(r, &o) == AS_OK);
	px = draw(r, o.width, o.height);
	free(px);
	struct as_render_hit h;
	CHECK(as_render_hit_test(r, 300, 300, 2, &h) == AS_OK);
	size_t len;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg != NULL);
	free(svg);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void many_panels_grow_the_picture_when_asked(void)
{
	struct as_plan *p;
	struct as_trace *t = make(small, NSMALL, NULL, 0, &p);
	struct as_render_panel pn[12];
	for (int k = 0; k < 12; k++)
		pn[k] = (struct as_render_panel){"same", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(pn, 12, &o, &r, &d) == AS_OK);
	CHECK_EQ_U64(as_render_get_opts(r)->height, 800);
	as_render_destroy(r);
	o.min_plot_height = 100;
	CHECK(as_render_create(pn, 12, &o, &r, &d) == AS_OK);
	int h = as_render_get_opts(r)->height;
	CHECK(h > 12 * 100 && h < 12 * 100 + 800);
	struct as_render_panel_info in;
	CHECK(as_render_panel_info(r, 11, &in) == AS_OK);
	CHECK_EQ_U64(in.h, 100);
	CHECK(in.y + in.h < h);
	as_render_destroy(r);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), fmt, getenv("AS_EXE"), a, b);
	int rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool file_starts(const char *path, const char *magic, size_t n)
{
	char buf[16] = {0};
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t got = fread(buf, 1, n, f);
	fclose(f);
	return got == n && memcmp(buf, magic, n) == 0;
}

static void the_cli_draws_pictures_and_refuses_bad_options(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char dir[] = "/tmp/as_render_cliXXXXXX", trace[1024], out[1200];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(trace, sizeof(trace), "%s/traces/small-cnn.json",
		 src ? src : ".");
	snprintf(out, sizeof(out), "--png %s/a.png --svg %s/a.svg", dir, dir);
	CHECK_EQ_U64(run("%s replay %s %s --size 1024x640 --color-by size "
			 ">/dev/null",
			 trace, out),
		     0);
	snprintf(out, sizeof(out), "%s/a.png", dir);
	CHECK(file_starts(out, "\x89PNG\r\n", 6));
	unlink(out);
	snprintf(out, sizeof(out), "%s/a.svg", dir);
	CHECK(file_starts(out, "<?xml", 5));
	unlink(out);
	snprintf(out, sizeof(out), "--svg %s/c.svg --bands category", dir);
	CHECK_EQ_U64(run("%s replay %s %s >/dev/null", trace, out), 0);
	snprintf(out, sizeof(out), "%s/c.svg", dir);
	CHECK(file_starts(out, "<?xml", 5));
	unlink(out);
	snprintf(out, sizeof(out), "--png %s/b.png --bands rainbow", dir);
	CHECK_EQ_U64(run("%s replay %s %s 2>/dev/null >/dev/null", trace, out),
		     2);
	/* Bad options: status 2 before any work, nothing written. */
	snprintf(out, sizeof(out), "--png %s/b.png --size 10x10", dir);
	CHECK_EQ_U64(run("%s replay %s %s 2>/dev/null >/dev/null", trace, out),
		     2);
	snprintf(out, sizeof(out), "--png %s/b.png --color-by rainbow", dir);
	CHECK_EQ_U64(run("%s replay %s %s 2>/dev/null >/dev/null", trace, out),
		     2);
	CHECK_EQ_U64(run("%s replay %s %s 2>/dev/null >/dev/null", trace,
			 "--png /nonexistent-dir/b.png"),
		     2);
	snprintf(out, sizeof(out), "%s/b.png", dir);
	struct stat st;
	CHECK(stat(out, &st) != 0);
	CHECK(rmdir(dir) == 0); /* empty: no temporary file left behind */
}

static void overlay_boxes_fill_fit_their_text_and_scale(void)
{
	const int W = 200, H = 100;
	uint32_t *px = calloc((size_t)W * H * 4, 4);
	CHECK(px != NULL);
	if (!px)
		return;
	struct as_render_overlay b[2] = {
		{.x = 10, .y = 10, .w = 50, .h = 20, .fill = 0xff0000ffu},
		{.x = 10, .y = 40, .fill = 0xffffffffu, .border = 0xff000000u,
		 .color = 0xff000000u, .text = "name\nsize\t4 KiB",
		 .bold_first = true, .tab = 40},
	};
	double w, h, w1, h1;
	CHECK(as_render_overlay_measure(&b[1], &w, &h) == AS_OK);
	CHECK(w > 60 && w < 160 && h > 30 && h < 50); /* two lines, two columns */
	struct as_render_overlay one = b[1];
	one.text = "name";
	CHECK(as_render_overlay_measure(&one, &w1, &h1) == AS_OK);
	CHECK(h1 < h && w1 < w);
	CHECK(as_render_overlay_argb32(px, W, H, W * 4, 1.0, b, 2) == AS_OK);
	CHECK_EQ_U64(px[20 * W + 30], 0xff0000ffu);  /* the filled box */
	CHECK_EQ_U64(px[5 * W + 5], 0);              /* outside: untouched */
	CHECK_EQ_U64(px[40 * W + 10], 0xff000000u);  /* the border */
	int dark = 0;                                /* some text is drawn */
	for (int y = 42; y < 40 + (int)h - 2; y++)
		for (int x = 12; x < 10 + (int)w - 2; x++)
			dark += (px[y * W + x] & 0xff) < 100;
	CHECK(dark > 20);
	/* At scale 2 the same box covers twice the pixels. */
	memset(px, 0, (size_t)W * H * 4 * 4);
	CHECK(as_render_overlay_argb32(px, 2 * W, 2 * H, 2 * W * 4, 2.0, b,
				       1) == AS_OK);
	CHECK_EQ_U64(px[58 * 2 * W + 118], 0xff0000ffu);
	CHECK_EQ_U64(px[62 * 2 * W + 122], 0);
	CHECK(as_render_overlay_argb32(px, W, H, W, 1.0, b, 1) == AS_EINVAL);
	/* Raw pixels to a PNG file, read back. */
	char path[] = "/tmp/as_overlay_testXXXXXX.png";
	int fd = mkstemps(path, 4);
	CHECK(fd >= 0);
	close(fd);
	struct as_diag d;
	CHECK(as_render_write_png_argb32(path, px, W, H, W * 4, &d) == AS_OK);
	cairo_surface_t *s = cairo_image_surface_create_from_png(path);
	CHECK(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
	CHECK_EQ_U64(cairo_image_surface_get_width(s), W);
	cairo_surface_destroy(s);
	unlink(path);
	CHECK(as_render_write_png_argb32("/nonexistent/dir/x.png", px, W, H,
					 W * 4, &d) != AS_OK);
	CHECK_STR(d.msg, "cannot write: No such file or directory");
	free(px);
}

static void spaces_are_drawn_largest_first_and_tiny_ones_fold_into_a_line(void)
{
	static const char *const spaces[] = {"cpu", "cuda:0", "cuda:1"};
	const struct tbuf b[] = {
		{"host", 8, 0, 4, 0, 1, 0}, /* space 0 is "default" */
		{"small", 65536, 0, 4, 0, 2, 0},
		{"big", 1 << 20, 1, 3, 0, 3, 0},
	};
	struct as_plan *p = NULL;
	struct as_trace *t = make(b, 3, spaces, 3, &p);
	struct as_render_panel pn = {"greedy", t, p, NULL,
				     AS_RENDER_ALL_SPACES};
	struct as_render_opts o;
	as_render_opts_init(&o);
	struct as_render *r = NULL;
	struct as_diag d;
	CHECK(as_render_create(&pn, 1, &o, &r, &d) == AS_OK);
	CHECK_EQ_U64(as_render_panel_count(r), 2);
	struct as_render_panel_info info;
	CHECK(as_render_panel_info(r, 0, &info) == AS_OK);
	CHECK_STR(info.space_name, "cuda:1");
	CHECK(as_render_panel_info(r, 1, &info) == AS_OK);
	CHECK_STR(info.space_name, "cuda:0");
	as_render_destroy(r);
	size_t len = 0;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && strstr(svg, "not drawn (&lt; 1%): cpu 8 B"));
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void a_span_of_scattered_recorded_addresses_has_no_gap(void)
{
	static const char *const spaces[] = {"cpu"};
	const struct tbuf b[] = {
		{"a", 8, 0, 4, 0, 0, 0},
		{"b", 8, 1, 3, 1 << 20, 0, 0},
	};
	struct as_plan *p = NULL;
	struct as_trace *t = make(b, 2, spaces, 1, &p);
	struct as_render_panel pn = {"recorded", t, p, NULL, 0};
	struct as_render_opts o;
	as_render_opts_init(&o);
	size_t len = 0;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && !strstr(svg, "9999"));
	CHECK(svg && strstr(svg, "scattered addresses: a span, no gap"));
	CHECK(svg && strstr(svg, "(span of scattered addresses)"));
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void category_bands_stack_in_memory_over_time_with_their_names(void)
{
	static const char *const spaces[] = {"gpu"};
	const struct tbuf b[] = {
		{"w", 4096, 0, 9, 0, 1, 0},
		{"act", 1024, 2, 5, 4096, 1, 0},
		{"opt", 2048, 6, 9, 4096, 1, 0},
	};
	struct as_plan *p = NULL;
	struct as_trace *t = make(b, 3, spaces, 1, &p);
	struct as_render_panel pn = {"greedy", t, p, NULL, 1};
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.memory = true;
	size_t len = 0;
	char *plain = render_svg(&pn, 1, &o, &len);
	CHECK(plain && !strstr(plain, ">weights<"));
	static const uint8_t group[] = {0, 1, 2};
	static const char *const names[] = {"weights", "acts", "state",
					    "never used"};
	o.buffer_group = group;
	o.group_names = names;
	o.ngroups = 4;
	char *svg = render_svg(&pn, 1, &o, &len);
	CHECK(svg && strstr(svg, ">weights<") && strstr(svg, ">acts<") &&
	      strstr(svg, ">state<"));
	CHECK(svg && !strstr(svg, ">never used<")); /* no bytes: no key */
	/* One filled area more per band than without them. */
	size_t polys_plain = 0, polys = 0;
	for (const char *q = plain; q && (q = strstr(q, "<polygon")); q++)
		polys_plain++;
	for (const char *q = svg; q && (q = strstr(q, "<polygon")); q++)
		polys++;
	CHECK_EQ_U64(polys, polys_plain + 3);
	free(plain);
	free(svg);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(a_label_keeps_utf8_and_blanks_control_bytes);
	TEST_RUN(small_trace_renders_as_the_golden_svg);
	TEST_RUN(invalid_plan_with_failures_renders_as_the_golden_svg);
	TEST_RUN(the_same_input_gives_byte_identical_svg_and_png);
	TEST_RUN(buffers_have_their_colour_and_empty_space_stays_white);
	TEST_RUN(the_png_file_holds_the_same_pixels);
	TEST_RUN(failures_overlaps_and_waste_are_drawn_where_they_happen);
	TEST_RUN(hit_test_names_the_buffer_under_the_pointer);
	TEST_RUN(hit_test_agrees_with_a_scan_of_every_buffer);
	TEST_RUN(peak_time_is_the_most_bytes_live_while_the_top_is_in_use);
	TEST_RUN(tall_short_lived_buffers_stay_visible_at_low_zoom);
	TEST_RUN(time_labels_never_repeat_when_zoomed_at_large_times);
	TEST_RUN(recorded_clock_marks_segments_and_waste_are_drawn);
	TEST_RUN(segments_a_strategy_reserved_are_drawn_on_its_panel);
	TEST_RUN(recorded_offsets_read_as_real_addresses);
	TEST_RUN(small_gaps_keep_their_digits);
	TEST_RUN(far_apart_address_ranges_are_compressed_with_a_break);
	TEST_RUN(a_million_buffers_render_into_a_bounded_svg);
	TEST_RUN(panning_by_whole_pixels_draws_what_a_fresh_picture_draws);
	TEST_RUN(colours_follow_the_name_in_every_panel_and_mode);
	TEST_RUN(option_parsers_accept_good_values_and_reject_bad_ones);
	TEST_RUN(a_file_that_cannot_be_written_leaves_nothing_behind);
	TEST_RUN(names_that_are_not_utf8_still_render);
	TEST_RUN(zoomed_views_clip_and_hidpi_pixels_scale);
	TEST_RUN(timestamps_far_from_zero_keep_their_precision);
	TEST_RUN(hostile_offsets_and_sizes_still_draw);
	TEST_RUN(many_panels_grow_the_picture_when_asked);
	TEST_RUN(overlay_boxes_fill_fit_their_text_and_scale);
	TEST_RUN(spaces_are_drawn_largest_first_and_tiny_ones_fold_into_a_line);
	TEST_RUN(a_span_of_scattered_recorded_addresses_has_no_gap);
	TEST_RUN(category_bands_stack_in_memory_over_time_with_their_names);
	if (getenv("AS_EXE"))
		TEST_RUN(the_cli_draws_pictures_and_refuses_bad_options);
	else
		TEST_SKIP(the_cli_draws_pictures_and_refuses_bad_options,
			  "AS_EXE is not set");
	return tap_done();
}
