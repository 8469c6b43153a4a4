/*
 * Axes: the address axis (pieces, with huge empty ranges compressed), the
 * mapping of times and addresses to pixels and back, and address ticks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "render/render_private.h"

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
int as_r_build_axis(struct panel *pn, bool compress)
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
		if (as_r_is_alias(pn, i))
			continue;
		sp[n].lo = pn->p->offset[i];
		sp[n].hi = as_r_end_addr(pn, i);
		n++;
	}
	if (n)
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
double as_r_addr_u(const struct panel *pn, uint64_t a, bool *in_break)
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

uint64_t as_r_u_addr(const struct panel *pn, double u, bool *in_break)
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

double as_r_y_of_u(const struct panel *pn, double u)
{
	return pn->py + pn->ph - (u - pn->v0) / (pn->v1 - pn->v0) * pn->ph;
}

double as_r_y_of(const struct panel *pn, uint64_t a)
{
	return as_r_y_of_u(pn, as_r_addr_u(pn, a, NULL));
}

/* Times inside are relative to r->tbase, so that large timestamps keep
 * their precision. */
double as_r_rel_t(const struct as_render *r, uint64_t t)
{
	return t >= r->tbase ? (double)(t - r->tbase)
			     : -(double)(r->tbase - t);
}

double as_r_x_of(const struct as_render *r, const struct panel *pn,
	    double t)
{
	return pn->px + (t - r->t0) / (r->t1 - r->t0) * pn->pw;
}

/* Axis fraction, with a fast path for the usual single-piece axis. */
double as_r_fast_u(const struct panel *pn, uint64_t a)
{
	if (pn->npieces == 1 && a <= pn->pieces[0].hi)
		return (double)(a - pn->pieces[0].lo) /
		       (double)(pn->pieces[0].hi - pn->pieces[0].lo);
	return as_r_addr_u(pn, a, NULL);
}

/* Labels placed without overlap, in order of priority. */
static bool ticks_room(const struct tick *t, uint32_t n, double y, double h)
{
	for (uint32_t k = 0; k < n; k++)
		if (fabs(t[k].y - y) < h)
			return false;
	return true;
}

/*
 * A panel of recorded offsets that stand for real addresses (the trace's
 * address map, and a plan that keeps the recorded offsets: reserved.c):
 * its ticks name the real addresses.
 */
static bool shows_addresses(const struct panel *pn)
{
	return pn->t->naddr_map && pn->keeps_recorded;
}

bool as_r_real_address(const struct panel *pn, uint64_t off, uint64_t *addr)
{
	return shows_addresses(pn) &&
	       as_trace_address_of(pn->t, pn->space, off, addr);
}

/* The tick label of offset a on such a panel; false in a shrunk hole. */
static bool address_label(const struct panel *pn, uint64_t a, char *out,
			  size_t len)
{
	uint64_t real;
	if (!as_trace_address_of(pn->t, pn->space, a, &real))
		return false;
	snprintf(out, len, "0x%llx", (unsigned long long)real);
	return true;
}

/*
 * Major ticks of such a panel: the start of every range of the map (memory
 * the recording used, after a shrunk hole), named by its real address.
 */
static uint32_t range_ticks(const struct panel *pn, struct tick *t,
			    uint32_t n, uint32_t cap, double ytop, double ybot,
			    double min_gap)
{
	const struct as_trace *tr = pn->t;
	for (uint32_t k = 0; k < tr->naddr_map && n < cap; k++) {
		const struct as_addr_range *m = &tr->addr_map[k];
		if (m->space != pn->space)
			continue;
		double y = as_r_y_of(pn, m->offset);
		if (y > ybot + 0.5 || y < ytop || !ticks_room(t, n, y, min_gap))
			continue;
		t[n].y = y;
		t[n].major = true;
		snprintf(t[n].label, sizeof(t[n].label), "0x%llx",
			 (unsigned long long)m->address);
		n++;
	}
	return n;
}

/*
 * Address ticks of one panel: per uncompressed piece, powers of two. On a
 * panel of recorded offsets with an address map, labels are the real
 * addresses the offsets stand for.
 */
int as_r_build_ticks(struct as_render *r, struct panel *pn)
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
	bool real = shows_addresses(pn);
	if (real)
		n = range_ticks(pn, t, n, cap, ytop, ybot, min_gap);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < pn->npieces; k++) {
			const struct piece *pc = &pn->pieces[k];
			if (pc->brk)
				continue;
			double ya = as_r_y_of_u(pn, pc->u0), yb = as_r_y_of_u(pn, pc->u1);
			bool hex = pc->hi > ((uint64_t)1 << 40) ||
				   (pc->lo >= ((uint64_t)1 << 32));
			if (pass == 0) {
				/* The base of a piece that follows a break. */
				if (k == 0 || ya > ybot + 0.5 || ya < ytop)
					continue;
				if (n < cap && ticks_room(t, n, ya, min_gap)) {
					t[n].y = ya;
					t[n].major = true;
					if (real) {
						if (!address_label(
							    pn, pc->lo, t[n].label,
							    sizeof(t[n].label)))
							continue;
					} else if (hex)
						snprintf(t[n].label,
							 sizeof(t[n].label),
							 "0x%llx",
							 (unsigned long long)pc->lo);
					else
						as_r_fmt_bytes_tick(pc->lo, t[n].label,
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
			uint64_t a0 = as_r_u_addr(pn, uvis0, &ib);
			/* Hex pieces count from their base, others from 0. */
			uint64_t base = hex ? pc->lo : 0;
			if (a0 < pc->lo)
				a0 = pc->lo;
			uint64_t first =
				base + (a0 - base + step - 1) / step * step;
			if (first < a0) /* overflow */
				continue;
			for (uint64_t a = first; a <= pc->hi && n < cap;) {
				double y = as_r_y_of(pn, a);
				if (y < ytop - 0.5)
					break;
				if (y <= ybot + 0.5 &&
				    ticks_room(t, n, y, min_gap)) {
					t[n].y = y;
					t[n].major = false;
					if (real) {
						if (!address_label(
							    pn, a, t[n].label,
							    sizeof(t[n].label)))
							goto next;
					} else if (hex && a != pc->lo) {
						char b[32];
						as_r_fmt_bytes_tick(a - pc->lo, b,
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
						as_r_fmt_bytes_tick(a, t[n].label,
							       sizeof(t[n].label));
					}
					n++;
				}
			next:
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

int as_render_to_pixel(const struct as_render *r, size_t i, double time,
		       uint64_t address, double *x, double *y)
{
	if (!r || i >= r->npanels)
		return AS_EINVAL;
	const struct panel *pn = &r->panels[i];
	*x = as_r_x_of(r, pn, time - (double)r->tbase);
	*y = as_r_y_of(pn, address);
	return AS_OK;
}

double as_render_axis_at(const struct as_render *r, size_t i,
			 uint64_t address)
{
	if (!r || i >= r->npanels)
		return -1;
	return as_r_addr_u(&r->panels[i], address, NULL);
}

void as_r_clip_rect(const struct panel *pn, double *x0, double *x1,
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
