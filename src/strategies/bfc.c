/*
 * bfc: TensorFlow/XLA's "best-fit with coalescing" allocator, replayed
 * address for address. The behaviour follows the facts listed in
 * ../shared/bfc-vectors/README.md; no TensorFlow code is used.
 *
 * Memory is a list of regions obtained from a bump sub-allocator. Each region
 * is tiled by chunks kept in a doubly linked list in address order. A request
 * is rounded up to 256 bytes and takes the smallest free chunk that fits (the
 * lowest address among equal sizes); the tail is split off when the chunk is
 * large enough. A freed chunk merges with its next, then its previous free
 * neighbour. When nothing fits, a new region is requested (growth, back-off,
 * garbage collection of fully free regions).
 *
 * Free chunks live in 21 bins (bin b: sizes [256 << b, 256 << (b + 1)), the
 * last bin unbounded), each a tree ordered by (size, offset), plus a bitmap
 * of non-empty bins: the best-fit search is a lower bound in one bin and, if
 * that fails, the minimum of the next non-empty bin: O(log n).
 *
 * Offsets are relative to the base of the first region (the bump allocator
 * starts at 0), so they are the same on every run.
 *
 * Ownership: the online driver creates one state per case (create) and
 * releases it with destroy, which accepts NULL and reports the regions it
 * gives back as "[sub] Free" lines. Text goes only to the emit callback.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/bfc.h"

static const struct as_option_desc bfc_options[] = {
	{"total", "trace", "memory limit: the single region (growth=0) or the ceiling for growth; not given: what the trace states (a space's capacity, a recording's device size), else unlimited; 0: unlimited"},
	{"growth", "0", "allow_growth: first region min(total, first_region), then doubling"},
	{"gc", "0", "garbage collection: on failure release fully free regions and retry"},
	{"frag", "0", "fragmentation fraction: split cap = frag*total instead of 128 MiB"},
	{"coalesce", "0", "sub-allocator coalesces: a region that starts where the last ends extends it"},
	{"capacity", "0", "device size: region requests beyond it fail (0: unlimited)"},
	{"align", "new", "new: honour alignment above 256 with a free prefix chunk; old: ignore it"},
	{"first_region", "2M", "first region size with growth=1 (older TensorFlow: 1M)"},
	{NULL, NULL, NULL},
};

/* ---- small helpers ---- */

static void emitf(struct bfc *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void emitf(struct bfc *s, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	if (!s->emit)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->emit(s->ctx, line);
}

/* ---- chunk slots ---- */

static uint32_t chunk_new(struct bfc *s)
{
	uint32_t i;
	if (s->free_slot != NIL) {
		i = s->free_slot;
		s->free_slot = s->c[i].next;
	} else {
		if (s->nchunks == s->cap_chunks) {
			uint32_t n = s->cap_chunks ? s->cap_chunks * 2 : 8;
			if (n <= s->cap_chunks || n >= NIL)
				return NIL;
			struct chunk *c = realloc(s->c, (size_t)n * sizeof(*c));
			if (!c)
				return NIL;
			s->c = c;
			s->cap_chunks = n;
			s->tree.base = c;
		}
		i = s->nchunks++;
		s->tree.n = s->nchunks;
		s->c[i].req = 0;
	}
	/* a recycled slot keeps its stale req, as TensorFlow's chunk handles
	 * do: dumps show it on free chunks */
	uint64_t req = s->c[i].req;
	memset(&s->c[i], 0, sizeof(s->c[i]));
	s->c[i].req = req;
	s->c[i].prev = s->c[i].next = NIL;
	s->live_chunks++;
	return i;
}

static void chunk_delete(struct bfc *s, uint32_t i)
{
	s->c[i].next = s->free_slot;
	s->c[i].size = 0;
	s->free_slot = i;
	s->live_chunks--;
}

/* ---- bins: one tree (core/tree.h) per bin, ordered by (size, off) ---- */

static int chunk_cmp(const void *pa, const void *pb, void *ctx)
{
	(void)ctx;
	return key_less(pa, pb) ? -1 : key_less(pb, pa);
}

/* The bins' description, written out where it is used so the compiler
 * calls chunk_cmp directly (core/tree.h). */
#define CHUNK_TREE(t)                                                      \
	(&(struct as_tree){.base = (t)->base, .n = (t)->n,                 \
			   .stride = sizeof(struct chunk),                 \
			   .link = offsetof(struct chunk, link),           \
			   .cmp = chunk_cmp})

void as_bfc_tree_insert(struct bfc *s, uint32_t *root, uint32_t x)
{
	as_tree_insert(CHUNK_TREE(&s->tree), root, x, NULL, NULL);
}

static void bin_insert(struct bfc *s, uint32_t i)
{
	struct chunk *ch = &s->c[i];
	int b = bin_of(ch->size);
	ch->bin = (uint8_t)b;
	as_bfc_tree_insert(s, &s->root[b], i);
	s->nonempty |= 1u << b;
	s->nfree++;
}

/* Chunk i out of its bin. A missing i is left for check(). */
void as_bfc_bin_remove(struct bfc *s, uint32_t i)
{
	int b = s->c[i].bin;
	as_tree_remove(CHUNK_TREE(&s->tree), &s->root[b], &s->c[i]);
	if (s->root[b] == NIL)
		s->nonempty &= ~(1u << b);
	s->nfree--;
}

/* The first chunk of bin b with size >= size, or NIL. */
static uint32_t bin_lower_bound(const struct bfc *s, int b, uint64_t size)
{
	struct chunk key = {.size = size, .off = 0};
	return as_tree_lower_bound(CHUNK_TREE(&s->tree), s->root[b], &key);
}

/* Bytes needed in front of a chunk at `off` to reach alignment `align`. */
static uint64_t padding(uint64_t off, uint64_t align)
{
	return (align - (off & (align - 1))) & (align - 1);
}

/*
 * Best fit: the first free chunk in (size, off) order with size >= rounded
 * that also holds the aligned request. Without alignment above 256 that is
 * one lower bound; with it, chunks whose padding does not fit are skipped.
 */
static uint32_t find_fit(const struct bfc *s, uint64_t rounded, uint64_t align,
			 uint64_t *pad)
{
	int b0 = bin_of(rounded);
	uint32_t mask = s->nonempty & ~((1u << b0) - 1);
	while (mask) {
		int b = __builtin_ctz(mask);
		mask &= mask - 1;
		uint32_t i = bin_lower_bound(s, b, rounded);
		for (; i != NIL; i = as_tree_next(CHUNK_TREE(&s->tree), s->root[b], i)) {
			uint64_t p = align > MIN_ALLOC ?
					     padding(s->c[i].off, align) :
					     0;
			if (s->c[i].size >= p && s->c[i].size - p >= rounded) {
				*pad = p;
				return i;
			}
			if (align <= MIN_ALLOC)
				break;
		}
	}
	return NIL;
}

/* Cut chunk i at `at` bytes; the new upper part is returned. */
static uint32_t split(struct bfc *s, uint32_t i, uint64_t at)
{
	uint32_t n = chunk_new(s);
	if (n == NIL)
		return NIL;
	struct chunk *c = &s->c[i], *nc = &s->c[n];
	nc->off = c->off + at;
	nc->size = c->size - at;
	c->size = at;
	nc->prev = i;
	nc->next = c->next;
	if (c->next != NIL)
		s->c[c->next].prev = n;
	c->next = n;
	return n;
}

/* Chunk b (after a, both outside bins) is absorbed by a. */
static void merge(struct bfc *s, uint32_t a, uint32_t b)
{
	struct chunk *ca = &s->c[a], *cb = &s->c[b];
	ca->size += cb->size;
	ca->next = cb->next;
	if (cb->next != NIL)
		s->c[cb->next].prev = a;
	chunk_delete(s, b);
}

/* ---- regions: the bump sub-allocator ---- */


/*
 * Ask the sub-allocator for `bytes`: the region starts at the bump pointer
 * aligned up to `align`. Fails beyond `capacity` bytes held at once.
 */
static bool sub_alloc(struct bfc *s, uint64_t align, uint64_t bytes,
		      uint64_t *off)
{
	if (s->capacity && (bytes > s->capacity ||
			    s->pool_bytes > s->capacity - bytes)) {
		emitf(s, "  [sub] Alloc(%" PRIu64 ") -> FAIL (capacity)",
		      bytes);
		s->sub_fails++;
		return false;
	}
	uint64_t a = align > MIN_ALLOC ? align : MIN_ALLOC;
	if (s->bump > MAX_BYTES || bytes > MAX_BYTES || a > MAX_BYTES) {
		s->sub_fails++; /* beyond any address space we model */
		return false;
	}
	uint64_t start = as_round_up(s->bump, a);
	emitf(s, "  [sub] Alloc(align=%" PRIu64 ", %" PRIu64
		 ") -> base+0x%" PRIx64,
	      s->align_new ? a : align, bytes, start);
	s->bump = start + bytes;
	s->sub_allocs++;
	*off = start;
	return true;
}

static int regions_reserve(struct bfc *s)
{
	if (s->nregions < s->cap_regions)
		return AS_OK;
	uint32_t n = s->cap_regions ? s->cap_regions * 2 : 8;
	struct region *r = realloc(s->r, (size_t)n * sizeof(*r));
	if (!r)
		return AS_ENOMEM;
	s->r = r;
	s->cap_regions = n;
	return AS_OK;
}

static uint64_t backoff(uint64_t bytes)
{
	/* 0.9 in single precision, truncated, rounded up to 256 */
	float f = (float)((float)bytes * 0.9f);
	uint64_t n = as_round_up((uint64_t)f, MIN_ALLOC);
	if (n >= bytes)
		n = bytes >= MIN_ALLOC ? bytes - MIN_ALLOC : 0;
	return n;
}

/*
 * Grow the pool by one region able to hold `rounded` bytes. Returns 1 when a
 * region was added, 0 when none could be, a negative code on no memory.
 */
static int extend(struct bfc *s, uint64_t align, uint64_t rounded)
{
	uint64_t avail = (s->total - s->pool_bytes) / MIN_ALLOC * MIN_ALLOC;
	if (rounded > avail)
		return 0;
	bool doubled = false;
	while (rounded > s->curr_region) {
		s->curr_region *= 2;
		doubled = true;
	}
	uint64_t bytes = s->curr_region < avail ? s->curr_region : avail;
	uint64_t off;
	bool ok = sub_alloc(s, align, bytes, &off);
	while (!ok) {
		bytes = backoff(bytes);
		if (bytes < rounded || bytes == 0)
			return 0;
		ok = sub_alloc(s, align, bytes, &off);
	}
	if (!doubled && s->curr_region <= (UINT64_MAX >> 1))
		s->curr_region *= 2;

	if (regions_reserve(s) != AS_OK)
		return AS_ENOMEM;
	uint32_t h = chunk_new(s);
	if (h == NIL)
		return AS_ENOMEM;
	s->c[h].off = off;
	s->c[h].size = bytes;
	s->pool_bytes += bytes;
	if (s->pool_bytes > s->peak_pool_bytes)
		s->peak_pool_bytes = s->pool_bytes;

	struct region *last = s->nregions ? &s->r[s->nregions - 1] : NULL;
	if (s->coalesce && last && region_end(last) == off) {
		/* the sub-allocator merged it: extend the last region */
		uint32_t t = last->first;
		while (s->c[t].next != NIL)
			t = s->c[t].next;
		last->size += bytes;
		s->c[t].next = h;
		s->c[h].prev = t;
		if (!s->c[t].in_use) {
			as_bfc_bin_remove(s, t);
			merge(s, t, h);
			h = t;
		}
	} else {
		s->r[s->nregions++] = (struct region){off, bytes, h};
	}
	bin_insert(s, h);
	return 1;
}

/*
 * Garbage collection: release every region that is one free chunk, if the
 * released room could hold the request. Returns whether any was released.
 */
static bool release_free_regions(struct bfc *s, uint64_t rounded)
{
	uint64_t free_bytes = 0;
	for (uint32_t i = 0; i < s->nregions; i++) {
		const struct chunk *c = &s->c[s->r[i].first];
		if (!c->in_use && c->size == s->r[i].size)
			free_bytes += s->r[i].size;
	}
	if (free_bytes == 0 ||
	    rounded > s->total - s->pool_bytes + free_bytes)
		return false;
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->nregions; i++) {
		struct region r = s->r[i];
		const struct chunk *c = &s->c[r.first];
		if (!c->in_use && c->size == r.size) {
			emitf(s, "  [sub] Free(base+0x%" PRIx64 ", %" PRIu64 ")",
			      r.off, r.size);
			as_bfc_bin_remove(s, r.first);
			chunk_delete(s, r.first);
			s->pool_bytes -= r.size;
			s->sub_frees++;
		} else {
			s->r[k++] = r;
		}
	}
	s->nregions = k;
	s->gc_runs++;
	return true;
}

/* ---- the online interface ---- */

/* The memory limit and what follows from it: the split cap and the first
 * region's size. */
static void set_total(struct bfc *s, uint64_t total)
{
	s->total = total;
	/* the split cap, converted to an integer as TensorFlow's int64 */
	s->split_cap = s->frag > 0.0 ? (uint64_t)(s->frag * (double)s->total)
				     : DEFAULT_SPLIT_CAP;
	s->curr_region = as_round_up(s->growth && s->first_region < s->total
					     ? s->first_region
					     : s->total,
				     MIN_ALLOC);
}

/* Without total=, the limit the trace states for this space, if any. */
static int bfc_start(void *state, const struct as_trace *t, uint16_t space,
		     uint32_t case_index, struct as_diag *diag)
{
	struct bfc *s = state;
	(void)case_index;
	(void)diag;
	s->t = t;
	s->space = space;
	if (s->limit.from != AS_LIMIT_NONE)
		return AS_OK;
	int err = as_trace_device_limit(t, space, &s->limit);
	if (err)
		return err;
	if (s->limit.bytes) {
		uint64_t n = s->limit.bytes;
		n = n > MAX_BYTES ? MAX_BYTES : n < MIN_ALLOC ? MIN_ALLOC : n;
		s->limit.bytes = n;
		set_total(s, n);
	}
	return AS_OK;
}

static void bfc_destroy(void *state)
{
	struct bfc *s = state;
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nregions; i++)
		emitf(s, "  [sub] Free(base+0x%" PRIx64 ", %" PRIu64 ")",
		      s->r[i].off, s->r[i].size);
	free(s->c);
	free(s->r);
	free(s->live.e);
	free(s);
}

static int bfc_create(const struct as_opts *o, const struct as_run *run,
		      void **state, struct as_diag *diag)
{
	static const char *const modes[] = {"old", "new", NULL};
	uint64_t growth, gc, coalesce;
	int mode, err;
	struct bfc *s = calloc(1, sizeof(*s));
	if (!s)
		return AS_ENOMEM;
	if ((err = as_opts_u64(o, "total", 0, 0, MAX_BYTES, &s->total,
			       diag)) ||
	    (err = as_opts_u64(o, "growth", 0, 0, 1, &growth, diag)) ||
	    (err = as_opts_u64(o, "gc", 0, 0, 1, &gc, diag)) ||
	    (err = as_opts_u64(o, "coalesce", 0, 0, 1, &coalesce, diag)) ||
	    (err = as_opts_u64(o, "capacity", 0, 0, MAX_BYTES, &s->capacity,
			       diag)) ||
	    (err = as_opts_u64(o, "first_region", 2ull << 20, MIN_ALLOC,
			       MAX_BYTES, &s->first_region, diag)) ||
	    (err = as_opts_double(o, "frag", 0.0, 0.0, 1.0, &s->frag, diag)) ||
	    (err = as_opts_choice(o, "align", modes, 1, &mode, diag))) {
		free(s);
		return err;
	}
	if (s->total && s->total < MIN_ALLOC) {
		unsigned long long v = s->total;
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "bfc: option total=%llu: below %llu (0: "
				   "unlimited)",
				   v, (unsigned long long)MIN_ALLOC);
	}
	s->growth = growth;
	s->gc = gc;
	s->coalesce = coalesce;
	s->align_new = mode == 1;
	/* total=0 given: unlimited, whatever the trace says */
	s->limit = (struct as_limit){s->total, 0,
				     as_opts_get(o, "total") ? AS_LIMIT_OPTION
							     : AS_LIMIT_NONE};
	set_total(s, s->total ? s->total : MAX_BYTES);
	s->emit = run->emit;
	s->ctx = run->ctx;
	s->free_slot = NIL;
	s->tree = (struct as_tree){.stride = sizeof(struct chunk),
				   .link = offsetof(struct chunk, link),
				   .cmp = chunk_cmp};
	for (int b = 0; b < NUM_BINS; b++)
		s->root[b] = NIL;
	*state = s;
	return AS_OK;
}


static int live_grow(struct live *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 16;
	if (cap <= m->cap)
		return AS_ENOMEM;
	struct live_entry *e = malloc((size_t)cap * sizeof(*e));
	if (!e)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < cap; i++)
		e[i].buf = NIL;
	struct live old = *m;
	m->e = e;
	m->cap = cap;
	m->shift = (uint32_t)__builtin_clz(cap) + 1;
	for (uint32_t i = 0; i < old.cap; i++) {
		if (old.e[i].buf == NIL)
			continue;
		uint32_t j = live_home(m, old.e[i].buf);
		while (e[j].buf != NIL)
			j = (j + 1) & (cap - 1);
		e[j] = old.e[i];
	}
	free(old.e);
	return AS_OK;
}

static int live_put(struct live *m, uint32_t buf, uint32_t chunk)
{
	if ((m->n + 1) * 2 > m->cap) {
		int err = live_grow(m);
		if (err)
			return err;
	}
	uint32_t j = live_home(m, buf);
	while (m->e[j].buf != NIL)
		j = (j + 1) & (m->cap - 1);
	m->e[j] = (struct live_entry){buf, chunk};
	m->n++;
	return AS_OK;
}

/* Remove buf; returns its chunk, or NIL when it is not live. */
static uint32_t live_take(struct live *m, uint32_t buf)
{
	if (!m->cap)
		return NIL;
	uint32_t mask = m->cap - 1, i = live_home(m, buf);
	while (m->e[i].buf != buf) {
		if (m->e[i].buf == NIL)
			return NIL;
		i = (i + 1) & mask;
	}
	uint32_t chunk = m->e[i].chunk;
	/* backward shift: pull later entries of the run into the hole */
	for (uint32_t j = (i + 1) & mask; m->e[j].buf != NIL;
	     j = (j + 1) & mask) {
		uint32_t k = live_home(m, m->e[j].buf);
		/* j's entry may move to i unless its home lies in (i, j] */
		bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
		if (!stays) {
			m->e[i] = m->e[j];
			i = j;
		}
	}
	m->e[i].buf = NIL;
	m->n--;
	return chunk;
}

/* Hand chunk i (out of the bins) to a request of `req` bytes. */
static int take(struct bfc *s, uint32_t i, uint64_t pad, uint64_t rounded,
		uint64_t req)
{
	if (pad) {
		/* the free prefix stays in the bins; the rest is handed out */
		uint32_t n = split(s, i, pad);
		if (n == NIL)
			return AS_ENOMEM;
		bin_insert(s, i);
		i = n;
	}
	struct chunk *c = &s->c[i];
	uint64_t rest = c->size - rounded;
	if (rest > 0 && (c->size / 2 >= rounded || rest >= s->split_cap)) {
		uint32_t n = split(s, i, rounded);
		if (n == NIL)
			return AS_ENOMEM;
		bin_insert(s, n);
		c = &s->c[i];
	}
	c->in_use = 1;
	c->req = req;
	s->num_allocs++;
	s->bytes_in_use += c->size;
	s->req_in_use += req;
	if (s->bytes_in_use > s->peak_bytes_in_use) {
		s->peak_bytes_in_use = s->bytes_in_use;
		s->waste_at_peak = s->bytes_in_use - s->req_in_use;
	}
	if (c->size > s->largest_alloc_size)
		s->largest_alloc_size = c->size;
	return (int)i;
}

static int try_place(struct bfc *s, uint64_t rounded, uint64_t align,
		     uint64_t req, uint32_t *out)
{
	uint64_t pad = 0;
	uint32_t i = find_fit(s, rounded, align, &pad);
	if (i == NIL)
		return 0;
	as_bfc_bin_remove(s, i);
	int r = take(s, i, pad, rounded, req);
	if (r < 0)
		return r;
	*out = (uint32_t)r;
	return 1;
}

static int bfc_alloc(void *state, const struct as_trace *t, uint32_t buf,
		     uint64_t *offset, uint64_t *chunk)
{
	struct bfc *s = state;
	const struct as_buffer *b = &t->buffers[buf];
	uint64_t align = as_buffer_align(b);
	if (b->size == 0 || b->size > MAX_BYTES || align > MAX_BYTES)
		return 1;
	uint64_t rounded = as_round_up(b->size, MIN_ALLOC);
	/* old releases ignore alignment; so does everything up to 256 */
	uint64_t place_align = s->align_new ? align : 1;
	uint32_t i;
	int r = try_place(s, rounded, place_align, b->size, &i);
	if (r == 0) {
		r = extend(s, align, rounded);
		if (r > 0)
			r = try_place(s, rounded, place_align, b->size, &i);
	}
	if (r == 0 && s->gc && release_free_regions(s, rounded)) {
		r = extend(s, align, rounded);
		if (r > 0)
			r = try_place(s, rounded, place_align, b->size, &i);
	}
	if (r < 0)
		return r;
	if (r == 0)
		return 1;
	if (live_put(&s->live, buf, i) != AS_OK)
		return AS_ENOMEM;
	*offset = s->c[i].off;
	*chunk = s->c[i].size;
	return 0;
}

static void bfc_free(void *state, const struct as_trace *t, uint32_t buf)
{
	struct bfc *s = state;
	uint32_t h = live_take(&s->live, buf);
	if (h == NIL)
		return; /* failed allocations: freeing NULL is a no-op */
	struct chunk *c = &s->c[h];
	c->in_use = 0;
	s->bytes_in_use -= c->size;
	s->req_in_use -= c->req;
	uint32_t n = c->next;
	if (n != NIL && !s->c[n].in_use) {
		as_bfc_bin_remove(s, n);
		merge(s, h, n);
	}
	uint32_t p = s->c[h].prev;
	if (p != NIL && !s->c[p].in_use) {
		as_bfc_bin_remove(s, p);
		merge(s, p, h);
		h = p;
	}
	bin_insert(s, h);
}

/* ---- queries ---- */

static uint64_t largest_free(const struct bfc *s)
{
	if (!s->nonempty)
		return 0;
	int b = 31 - __builtin_clz(s->nonempty);
	return s->c[as_tree_last(CHUNK_TREE(&s->tree), s->root[b])].size;
}

static void emit_stats(struct bfc *s)
{
	emitf(s,
	      "stats num_allocs=%" PRIu64 " bytes_in_use=%" PRIu64
	      " peak_bytes_in_use=%" PRIu64 " largest_alloc_size=%" PRIu64
	      " pool_bytes=%" PRIu64 " peak_pool_bytes=%" PRIu64
	      " largest_free_block=%" PRIu64 " bytes_reserved=0",
	      s->num_allocs, s->bytes_in_use, s->peak_bytes_in_use,
	      s->largest_alloc_size, s->pool_bytes, s->peak_pool_bytes,
	      largest_free(s));
}

static bool bfc_walk(void *state, uint16_t space, as_block_fn visit,
		     void *ctx)
{
	const struct bfc *s = state;
	for (uint32_t r = 0; r < s->nregions; r++)
		for (uint32_t i = s->r[r].first; i != NIL; i = s->c[i].next) {
			const struct chunk *c = &s->c[i];
			struct as_block blk = {
				.offset = c->off,
				.size = c->size,
				.requested = c->req,
				.buffer = AS_NONE,
				.bin = c->in_use ? -1 : (int32_t)c->bin,
				.in_use = c->in_use,
			};
			if (!visit(ctx, space, &blk))
				return false;
		}
	return true;
}

/*
 * The dump in the format of TensorFlow's harness that the golden vectors
 * hold (not as_dump_blocks): a line per chunk from the walk, then a line
 * per bin.
 */
struct bfc_dump {
	struct bfc *s;
	uint64_t cnt[NUM_BINS], used[NUM_BINS];
	uint64_t bytes[NUM_BINS], ubytes[NUM_BINS];
};

static bool dump_chunk(void *ctx, uint16_t space, const struct as_block *c)
{
	struct bfc_dump *d = ctx;
	int b = bin_of(c->size);
	d->cnt[b]++;
	d->bytes[b] += c->size;
	if (c->in_use) {
		d->used[b]++;
		d->ubytes[b] += c->size;
	}
	emitf(d->s,
	      "  %s base+0x%" PRIx64 " size=%" PRIu64 " req=%" PRIu64
	      " bin=%d",
	      c->in_use ? "InUse" : "Free ", c->offset, c->size, c->requested,
	      (int)c->bin);
	return true;
}

static void emit_dump(struct bfc *s)
{
	struct bfc_dump d = {.s = s};
	emitf(s, "dump chunks=%" PRIu32, s->live_chunks);
	bfc_walk(s, 0, dump_chunk, &d);
	for (int b = 0; b < NUM_BINS; b++)
		if (d.cnt[b])
			emitf(s,
			      "  bin %d: chunks_in_bin=%" PRIu64
			      " in_use=%" PRIu64 " bytes_in_bin=%" PRIu64
			      " bytes_in_use=%" PRIu64,
			      b, d.cnt[b], d.used[b], d.bytes[b], d.ubytes[b]);
}

/* floor(x * 100 / total) without overflowing 64 bits */
static uint64_t cell(uint64_t x, uint64_t total, uint64_t res)
{
	return x / total * res + (x % total) * res / total;
}

static void paint(char *line, uint64_t res, uint64_t total, uint64_t at,
		  uint64_t len, char ch)
{
	uint64_t a = cell(at, total, res), e = cell(at + len - 1, total, res);
	for (uint64_t k = a; k <= e && k < res; k++)
		line[k] = ch;
}

/*
 * The occupancy line: the regions laid end to end over 100 cells; each
 * in-use chunk paints its padding 'x' (size - requested) and then its
 * requested bytes '*'; everything else stays '_'.
 */
static void emit_render(struct bfc *s)
{
	enum { RES = 100 };
	char line[RES + 1];
	uint64_t total = 0;
	for (uint32_t r = 0; r < s->nregions; r++)
		total += s->r[r].size;
	if (total == 0) {
		emitf(s, "render <allocator contains no memory>");
		return;
	}
	memset(line, '_', RES);
	line[RES] = 0;
	uint64_t base = 0;
	for (uint32_t r = 0; r < s->nregions; r++) {
		for (uint32_t i = s->r[r].first; i != NIL; i = s->c[i].next) {
			const struct chunk *c = &s->c[i];
			if (!c->in_use)
				continue;
			uint64_t at = base + (c->off - s->r[r].off);
			if (c->size > c->req)
				paint(line, RES, total, at + c->req,
				      c->size - c->req, 'x');
			paint(line, RES, total, at, c->req, '*');
		}
		base += s->r[r].size;
	}
	emitf(s, "render %s", line);
}

static void bfc_query(void *state, enum as_query q)
{
	struct bfc *s = state;
	switch (q) {
	case AS_Q_DUMP:
		emit_dump(s);
		break;
	case AS_Q_STATS:
		emit_stats(s);
		break;
	case AS_Q_RENDER:
		emit_render(s);
		break;
	case AS_Q_CURR:
		emitf(s, "curr_region_allocation_bytes=%" PRIu64,
		      s->curr_region);
		break;
	}
}

static void bfc_stats(void *state, struct as_plan *p)
{
	struct bfc *s = state;
	uint64_t lf = largest_free(s);
	uint64_t free_pool = s->pool_bytes - s->bytes_in_use;
	as_plan_stat_int(p, "num_allocs", s->num_allocs);
	as_plan_stat_int(p, "bytes_in_use", s->bytes_in_use);
	as_plan_stat_int(p, "peak_bytes_in_use", s->peak_bytes_in_use);
	as_plan_stat_int(p, "largest_alloc_size", s->largest_alloc_size);
	as_plan_stat_int(p, "pool_bytes", s->pool_bytes);
	as_plan_stat_int(p, "peak_pool_bytes", s->peak_pool_bytes);
	as_plan_stat_int(p, "largest_free_block", lf);
	as_plan_stat_int(p, "bytes_reserved", 0);
	as_plan_stat(p, "fragmentation",
		     free_pool ? (double)(free_pool - lf) / (double)free_pool
			       : 0.0);
	as_plan_stat_int(p, "regions", s->nregions);
	as_plan_stat_int(p, "internal_waste_at_peak", s->waste_at_peak);
	as_plan_stat_int(p, "region_requests", s->sub_allocs);
	as_plan_stat_int(p, "region_refusals", s->sub_fails);
	as_plan_stat_int(p, "regions_released", s->sub_frees);
	if (s->t) {
		char opt[48];
		snprintf(opt, sizeof(opt), "total=%" PRIu64, s->total);
		as_plan_note_limit(p, as_trace_space_name(s->t, s->space), opt,
				   &s->limit);
	}
}

static const struct as_online_impl bfc_online = {
	.create = bfc_create,
	.start = bfc_start,
	.alloc = bfc_alloc,
	.free = bfc_free,
	.query = bfc_query,
	.stats = bfc_stats,
	.check = as_bfc_check,
	.walk = bfc_walk,
	.destroy = bfc_destroy,
};

const struct as_strategy_impl as_strategy_bfc = {
	.info = {
		.name = "bfc",
		.summary = "TensorFlow/XLA BFC allocator, address for address",
		.online = true,
		.options = bfc_options,
	},
	.online = &bfc_online,
};
