/*
 * Hit tests: the time-bucket index over a panel's placed buffers and the
 * queries on it (what lies under a point, what is live at a time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

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

bool as_r_hix_run(const struct hit_index *h, uint32_t j, uint64_t qa,
		  uint64_t qb, uint32_t *c, uint32_t *e)
{
	uint64_t w = h->w0 << j;
	uint64_t lo = qa / w, hi = qb / w;
	lo = lo > 0 ? lo - 1 : 0; /* a buffer ends before the next bucket but one */
	if (hi >= h->nb[j])
		hi = h->nb[j] - 1;
	if (lo > hi)
		return false;
	*c = h->off[h->base[j] + lo];
	*e = h->off[h->base[j] + hi + 1];
	return true;
}

int as_r_index_hits(const struct as_render *r, struct panel *pn)
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

int64_t as_render_live_at(const struct as_render *r, size_t i, double time,
			  uint32_t *out, size_t max)
{
	if (!r || i >= r->npanels)
		return AS_EINVAL;
	uint32_t *v;
	uint64_t n;
	if (!(time >= 0) || time >= 18446744073709551615.0)
		return 0;
	int err = as_r_collect_live(&r->panels[i], (uint64_t)floor(time), &v, &n,
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
	return as_r_color_of(r, &r->panels[panel], buffer);
}

/* Pixel rectangle of a placed buffer (unclipped, unsnapped). */
void as_r_buf_rect(const struct as_render *r, const struct panel *pn,
	      uint32_t i, uint64_t extent, double *x0, double *x1,
	      double *y0, double *y1)
{
	const struct as_buffer *b = &pn->t->buffers[i];
	uint64_t off = pn->p->offset[i];
	uint64_t top = off > UINT64_MAX - extent ? UINT64_MAX : off + extent;
	*x0 = as_r_x_of(r, pn, as_r_rel_t(r, b->start));
	*x1 = as_r_x_of(r, pn, as_r_rel_t(r, b->end));
	*y0 = as_r_y_of(pn, top);
	*y1 = as_r_y_of(pn, off);
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
	as_r_buf_rect(r, pn, b, as_r_extent_of(pn, b), &x0, &x1, &y0, &y1);
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
		out->address = as_r_u_addr(pn, out->axis, &out->in_break);
		out->has_real = !out->in_break &&
				as_r_real_address(pn, out->address,
						  &out->real_address);
		out->in_plot = x >= pn->px && x < pn->px + pn->pw &&
			       y >= pn->py && y < bottom;
		bool in_strip = pn->strip_h > 0 && y >= pn->strip_y &&
				y < pn->strip_y + pn->strip_h &&
				x >= pn->px && x < pn->px + pn->pw;
		if (in_strip) {
			double best = slop + 1;
			for (uint32_t k = pn->nplaced; k < pn->nbufs; k++) {
				uint32_t b = pn->bufs[k];
				double x0 = as_r_x_of(r, pn, as_r_rel_t(r, pn->t->buffers[b].start));
				double x1 = as_r_x_of(r, pn, as_r_rel_t(r, pn->t->buffers[b].end));
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
			/* Plain buffers are first judged from their kept
			 * geometry (struct geo, read in one cache line),
			 * with a pixel to spare: only those that may be
			 * hit are looked up in the trace and the plan. */
			const double bx = pn->pw / (r->t1 - r->t0),
				     ax = pn->px - r->t0 * bx;
			const double by = pn->ph / (pn->v1 - pn->v0),
				     ay = pn->py + pn->ph + pn->v0 * by;
			const double reach = slop + 1;
			for (uint32_t j = 0; j < h->nlev; j++) {
				uint32_t c, e;
				if (!as_r_hix_run(h, j, qa, qb, &c, &e))
					continue;
				for (; c < e; c++) {
					uint32_t k = h->idx[c];
					if (k < pn->nplain && pn->geo) {
						const struct geo *g = &pn->geo[k];
						if (rect_dist(x, y, ax + g->t0 * bx,
							      ax + g->t1 * bx,
							      ay - g->u1 * by,
							      ay - g->u0 * by) >
						    reach)
							continue;
					}
					hit_consider(r, pn, k, x, y, &hb);
				}
			}
		}
		out->buffer = hb.in != AS_NONE ? pn->bufs[hb.in]
			      : hb.near != AS_NONE ? pn->bufs[hb.near]
						   : AS_NONE;
		return AS_OK;
	}
	return AS_OK;
}
