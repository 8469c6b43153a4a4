/*
 * bfc's check (as_bfc_check): every invariant of its state (bfc.h) as data,
 * for the expensive-checks build and the tests that break it on purpose.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "core/internal.h"
#include "strategies/bfc.h"

struct bin_walk {
	const struct bfc *s;
	struct as_problems *p;
	int bin;
};

static int check_binned(uint32_t x, void *arg)
{
	const struct bin_walk *w = arg;
	const struct chunk *c = &w->s->c[x];
	if (c->in_use || c->size == 0)
		as_problem(w->p, "bin %d holds chunk base+0x%" PRIx64
			   " which is not free",
			w->bin, c->off);
	if (c->bin != w->bin || bin_of(c->size) != w->bin)
		as_problem(w->p, "chunk base+0x%" PRIx64 " size=%" PRIu64
			   " is in bin %d",
			c->off, c->size, w->bin);
	return 0;
}

/* Bin b's tree: its own invariants, then each chunk's state and bin;
 * returns its node count. `seen` marks the chunks met in any bin. */
static uint64_t check_bin(const struct bfc *s, int b, uint8_t *seen,
			  struct as_problems *p)
{
	uint64_t n = 0;
	if (as_tree_check(&s->tree, s->root[b], &n, seen)) {
		/* a broken shape may hold a cycle: no walk through it */
		as_problem(p, "bin %d: its tree is broken or out of "
			   "(size, address) order", b);
		return n;
	}
	struct bin_walk w = {s, p, b};
	as_tree_walk(&s->tree, s->root[b], check_binned, &w);
	return n;
}

uint64_t as_bfc_check(void *state, char *msg, size_t len)
{
	struct bfc *s = state;
	struct as_problems p = {0, msg, len};
	uint64_t nfree = 0, nused = 0, used_bytes = 0, used_req = 0, pool = 0;
	uint64_t nchunks = 0;
	if (msg && len)
		msg[0] = 0;
	for (uint32_t r = 0; r < s->nregions; r++) {
		const struct region *rg = &s->r[r];
		uint64_t at = rg->off;
		uint32_t prev = NIL;
		pool += rg->size;
		if (r > 0 && s->r[r - 1].off + s->r[r - 1].size > rg->off)
			as_problem(&p, "regions overlap at base+0x%" PRIx64,
				rg->off);
		if (r > 0 && s->coalesce && region_end(&s->r[r - 1]) == rg->off)
			as_problem(&p, "touching regions at base+0x%" PRIx64
				    " were not coalesced",
				rg->off);
		for (uint32_t i = rg->first; i != NIL; i = s->c[i].next) {
			if (i >= s->nchunks || nchunks > s->live_chunks) {
				as_problem(&p, "region base+0x%" PRIx64
					    ": broken chunk list",
					rg->off);
				break;
			}
			const struct chunk *c = &s->c[i];
			nchunks++;
			if (c->prev != prev)
				as_problem(&p, "chunk base+0x%" PRIx64
					    ": prev link broken",
					c->off);
			if (c->off != at)
				as_problem(&p, "chunk base+0x%" PRIx64
					    " should start at base+0x%" PRIx64,
					c->off, at);
			if (c->size == 0 || c->size % MIN_ALLOC)
				as_problem(&p, "chunk base+0x%" PRIx64
					    " has size %" PRIu64,
					c->off, c->size);
			if (prev != NIL && !c->in_use && !s->c[prev].in_use)
				as_problem(&p, "free neighbours at base+0x%" PRIx64,
					c->off);
			if (c->in_use) {
				nused++;
				used_bytes += c->size;
				used_req += c->req;
				if (c->req == 0 || c->req > c->size)
					as_problem(&p, "chunk base+0x%" PRIx64
						    " req=%" PRIu64 " size=%" PRIu64,
						c->off, c->req, c->size);
			} else {
				nfree++;
			}
			at += c->size;
			prev = i;
		}
		if (at != region_end(rg))
			as_problem(&p, "chunks of region base+0x%" PRIx64
				    " end at base+0x%" PRIx64 ", not base+0x%" PRIx64,
				rg->off, at, region_end(rg));
	}
	uint64_t in_bins = 0;
	uint8_t *seen = calloc((size_t)s->nchunks + 1, 1);
	if (!seen)
		as_problem(&p, "no memory to check the bins");
	for (int b = 0; b < NUM_BINS && seen; b++) {
		if ((s->root[b] != NIL) != !!(s->nonempty & (1u << b)))
			as_problem(&p, "bin %d: non-empty bit is wrong", b);
		in_bins += check_bin(s, b, seen, &p);
	}
	free(seen);
	if (in_bins != nfree || s->nfree != nfree)
		as_problem(&p, "bins hold %" PRIu64 " chunks, %" PRIu64
			    " chunks are free",
			in_bins, nfree);
	if (nchunks != s->live_chunks)
		as_problem(&p, "%" PRIu64 " chunks in regions, %" PRIu32 " allocated",
			nchunks, s->live_chunks);
	if (nused != s->live.n)
		as_problem(&p, "%" PRIu64 " chunks in use, %" PRIu32 " live buffers",
			nused, s->live.n);
	uint64_t in_map = 0;
	for (uint32_t k = 0; k < s->live.cap; k++) {
		const struct live_entry *le = &s->live.e[k];
		if (le->buf == NIL)
			continue;
		in_map++;
		uint32_t j = live_home(&s->live, le->buf);
		while (j != k && s->live.e[j].buf != NIL)
			j = (j + 1) & (s->live.cap - 1);
		if (j != k)
			as_problem(&p, "live buffer %" PRIu32 " is unreachable", le->buf);
		if (le->chunk >= s->nchunks || !s->c[le->chunk].in_use)
			as_problem(&p, "buffer %" PRIu32 " maps to a chunk not in use",
				le->buf);
	}
	if (in_map != s->live.n)
		as_problem(&p, "live map holds %" PRIu64 " entries, counts %" PRIu32,
			in_map, s->live.n);
	if (used_bytes != s->bytes_in_use || used_req != s->req_in_use)
		as_problem(&p, "bytes_in_use=%" PRIu64 " but chunks in use hold %" PRIu64,
			s->bytes_in_use, used_bytes);
	if (pool != s->pool_bytes)
		as_problem(&p, "pool_bytes=%" PRIu64 " but regions hold %" PRIu64,
			s->pool_bytes, pool);
	if (s->bytes_in_use > s->peak_bytes_in_use ||
	    s->pool_bytes > s->peak_pool_bytes || s->pool_bytes > s->total)
		as_problem(&p, "peaks or limit below current values");
	if (s->capacity && s->pool_bytes > s->capacity)
		as_problem(&p, "pool_bytes=%" PRIu64 " exceeds capacity %" PRIu64,
			s->pool_bytes, s->capacity);
	return p.n;
}
