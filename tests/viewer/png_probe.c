/*
 * png_probe: read pixels of PNG screenshots for the viewer's tests.
 *
 *   png_probe FILE X Y                      prints the pixel as rrggbb
 *   png_probe diff A B X0 Y0 X1 Y1          prints how many pixels of the
 *                                           rectangle differ between A and B
 *
 * Exit status 0, or 2 when a file cannot be read or a point is outside.
 */
#include <cairo.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cairo_surface_t *load(const char *path)
{
	cairo_surface_t *s = cairo_image_surface_create_from_png(path);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		fprintf(stderr, "%s: cannot read the PNG\n", path);
		cairo_surface_destroy(s);
		return NULL;
	}
	cairo_surface_flush(s);
	return s;
}

static uint32_t px(cairo_surface_t *s, int x, int y)
{
	const unsigned char *d = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s);
	uint32_t v;
	memcpy(&v, d + (size_t)y * (size_t)stride + (size_t)x * 4, 4);
	return v & 0xffffff;
}

static bool inside(cairo_surface_t *s, int x, int y)
{
	return x >= 0 && y >= 0 && x < cairo_image_surface_get_width(s) &&
	       y < cairo_image_surface_get_height(s);
}

int main(int argc, char **argv)
{
	if (argc == 4) {
		cairo_surface_t *s = load(argv[1]);
		int x = atoi(argv[2]), y = atoi(argv[3]);
		if (!s || !inside(s, x, y))
			return 2;
		printf("%06x\n", px(s, x, y));
		cairo_surface_destroy(s);
		return 0;
	}
	if (argc == 8 && strcmp(argv[1], "diff") == 0) {
		cairo_surface_t *a = load(argv[2]), *b = load(argv[3]);
		int x0 = atoi(argv[4]), y0 = atoi(argv[5]);
		int x1 = atoi(argv[6]), y1 = atoi(argv[7]);
		if (!a || !b || !inside(a, x0, y0) || !inside(a, x1 - 1, y1 - 1) ||
		    !inside(b, x1 - 1, y1 - 1))
			return 2;
		long n = 0;
		for (int y = y0; y < y1; y++)
			for (int x = x0; x < x1; x++)
				n += px(a, x, y) != px(b, x, y);
		printf("%ld\n", n);
		cairo_surface_destroy(a);
		cairo_surface_destroy(b);
		return 0;
	}
	fputs("usage: png_probe FILE X Y | png_probe diff A B X0 Y0 X1 Y1\n",
	      stderr);
	return 2;
}
