/*
 * cuda-caching: the allocator itself. The device model (first fit over
 * gaps), blocks and segments, request and segment sizes, the pools' best
 * fit, splitting and merging, expandable ranges (mapping and unmapping
 * pages), releasing cached segments and retrying before an OOM, garbage
 * collection, recorded OOMs, alloc and free, and the strategy's vtable.
 */
#include "strategies/cuda_caching/cuda_caching.h"

void as_cuda_emitf(struct cc *s, const char *fmt, ...)
{
	if (!s->emit)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->emit(s->ctx, line);
}

/* ---- device model: first fit over gaps ---- */

static int gap_add(struct cc *s, uint64_t addr, uint64_t size)
{
	/* merge with the gap before and after */
	uint32_t b = as_cuda_t_before(&s->tp, s->gaps, addr, 0, 0);
	if (b != NIL && s->tp.n[b].k0 + s->tp.n[b].size == addr) {
		uint64_t baddr = s->tp.n[b].k0;
		size += s->tp.n[b].size;
		as_cuda_t_erase_at(&s->tp, &s->gaps, baddr, 0, 0);
		addr = baddr;
	}
	uint32_t a = as_cuda_t_lower_bound(&s->tp, s->gaps, addr, 0, 0);
	if (a != NIL && s->tp.n[a].k0 == addr + size) {
		uint64_t asz = s->tp.n[a].size;
		as_cuda_t_erase_at(&s->tp, &s->gaps, addr + size, 0, 0);
		size += asz;
	}
	return as_cuda_t_insert(&s->tp, &s->gaps, addr, 0, 0, size, NIL);
}

/* cudaMalloc: the lowest address with room below `bound`; false if none. */
bool as_cuda_device_take(struct cc *s, uint64_t size, uint64_t bound,
			 uint64_t *out)
{
	uint64_t need = as_cuda_round_up(size, ROUND_LARGE);
	uint32_t g = as_cuda_t_first_fit(&s->tp, s->gaps, need);
	if (g == NIL)
		return false;
	uint64_t addr = s->tp.n[g].k0, gsz = s->tp.n[g].size;
	if (bound != NO_LIMIT && (addr > bound || need > bound - addr))
		return false;
	as_cuda_t_erase_at(&s->tp, &s->gaps, addr, 0, 0);
	if (gsz > need && as_cuda_t_insert(&s->tp, &s->gaps, addr + need, 0, 0,
					   gsz - need, NIL) != AS_OK)
		return false;
	*out = addr;
	return true;
}

/* ---- blocks and segments ---- */

uint32_t as_cuda_block_new(struct cc *s)
{
	uint32_t i;
	if (s->freeb != NIL) {
		i = s->freeb;
		s->freeb = s->b[i].next;
	} else {
		if (s->nb == s->capb) {
			uint32_t cap = s->capb ? s->capb * 2 : 8;
			struct block *n = realloc(s->b, (size_t)cap * sizeof(*n));
			if (!n || cap < s->capb)
				return NIL;
			s->b = n;
			s->capb = cap;
		}
		i = s->nb++;
	}
	memset(&s->b[i], 0, sizeof(s->b[i]));
	s->b[i].prev = s->b[i].next = s->b[i].buf = NIL;
	s->b[i].used = 1;
	s->b[i].mapped = 1;
	return i;
}

static void block_delete(struct cc *s, uint32_t i)
{
	s->b[i].used = 0;
	s->b[i].next = s->freeb;
	s->freeb = i;
}

static bool is_split(const struct block *b)
{
	return b->prev != NIL || b->next != NIL;
}

bool as_cuda_counts_inactive_split(const struct cc *s, const struct block *b)
{
	return is_split(b) && !s->s[b->seg].expandable;
}

/* Put a free mapped block into its pool's free set. */
int as_cuda_pool_insert(struct cc *s, uint32_t i)
{
	struct block *b = &s->b[i];
	struct pool *p = &s->pools[b->small ? 0 : 1];
	uint64_t key = as_cuda_bkey(s->s, b);
	if (!b->mapped)
		return as_cuda_t_insert(&s->tp, &p->unmapped, b->stream, key,
					0, 0, i);
	b->gc_base = p->calls;
	if (as_cuda_counts_inactive_split(s, b)) {
		as_cuda_stat_add(&s->inactive_split, 1);
		as_cuda_stat_add(&s->inactive_split_bytes, b->size);
	}
	return as_cuda_t_insert(&s->tp, &p->blocks, b->stream, b->size, key,
				0, i);
}

static void pool_remove(struct cc *s, uint32_t i)
{
	struct block *b = &s->b[i];
	struct pool *p = &s->pools[b->small ? 0 : 1];
	uint64_t key = as_cuda_bkey(s->s, b);
	if (!b->mapped) {
		as_cuda_t_erase_at(&s->tp, &p->unmapped, b->stream, key, 0);
		return;
	}
	if (as_cuda_counts_inactive_split(s, b)) {
		as_cuda_stat_sub(&s->inactive_split, 1);
		as_cuda_stat_sub(&s->inactive_split_bytes, b->size);
	}
	as_cuda_t_erase_at(&s->tp, &p->blocks, b->stream, b->size, key);
}

uint32_t as_cuda_segment_new(struct cc *s)
{
	if (s->frees != NIL) {
		uint32_t i = s->frees;
		s->frees = s->s[i].first;
		return i;
	}
	if (s->ns == s->caps) {
		uint32_t cap = s->caps ? s->caps * 2 : 4;
		struct segment *n = realloc(s->s, (size_t)cap * sizeof(*n));
		if (!n || cap < s->caps)
			return NIL;
		s->s = n;
		s->caps = cap;
	}
	return s->ns++;
}

/* The end of segment g's order key range. */
static uint64_t key_end(const struct segment *g)
{
	return g->key > UINT64_MAX - g->size ? UINT64_MAX : g->key + g->size;
}

/* Segment gi (live now) into the set of live key ranges, and out. */
int as_cuda_key_add(struct cc *s, uint32_t gi)
{
	return as_cuda_t_insert(&s->tp, &s->keys, s->s[gi].key, gi, 0,
				key_end(&s->s[gi]), NIL);
}

static void key_del(struct cc *s, uint32_t gi)
{
	as_cuda_t_erase_at(&s->tp, &s->keys, s->s[gi].key, gi, 0);
}

/* ---- sizes ---- */

static uint32_t divisions(const struct cc *s, uint64_t size)
{
	int idx = as_cuda_floor_log2(size) - 20;
	if (idx < 0)
		idx = 0;
	if (idx > NDIV - 1)
		idx = NDIV - 1;
	return s->div[idx];
}

static uint64_t next_division(uint64_t size, uint32_t d)
{
	if ((size & (size - 1)) == 0)
		return size;
	uint64_t floor = 1ull << as_cuda_floor_log2(size);
	uint64_t step = floor >> as_cuda_floor_log2(d);
	if (step == 0)
		return floor << 1;
	uint64_t f = size & ~(step - 1);
	return f == size ? size : f + step;
}

uint64_t as_cuda_round_size(const struct cc *s, uint64_t n)
{
	if (n < MIN_BLOCK)
		return MIN_BLOCK;
	uint32_t d = divisions(s, n);
	if (d > 1 && n > MIN_BLOCK * d)
		return next_division(n, d);
	return as_cuda_round_up(n, MIN_BLOCK);
}

static uint64_t allocation_size(const struct cc *s, uint64_t size)
{
	if (size <= SMALL_SIZE)
		return SMALL_BUFFER;
	if (size < MIN_LARGE_ALLOC)
		return s->large_seg;
	return as_cuda_round_up(size, ROUND_LARGE);
}

/* ---- the allocator ---- */

/* The limit set_per_process_memory_fraction gives, or NO_LIMIT. */
static uint64_t allowed_max(const struct cc *s)
{
	if (s->fraction <= 0.0 || s->capacity == 0)
		return NO_LIMIT;
	return (uint64_t)(s->fraction * (double)s->capacity);
}

static uint64_t expandable_size(const struct cc *s, uint32_t i)
{
	const struct block *b = &s->b[i];
	uint64_t n = b->size;
	if (b->next != NIL && !s->b[b->next].mapped)
		n += s->b[b->next].size;
	return n;
}

/* The cached block get_free_block takes, left in its pool; NIL: none. */
static uint32_t find_free_block(const struct cc *s, const struct pool *p,
				uint64_t size, uint16_t stream)
{
	uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, stream, size, 0);
	if (it == NIL || s->tp.n[it].k0 != stream)
		return NIL;
	uint32_t bi = s->tp.n[it].val;
	if (s->s[s->b[bi].seg].expandable && !s->expandable) {
		/* expandable segments turned off: only other blocks serve */
		while (it != NIL && s->tp.n[it].k0 == stream &&
		       s->s[s->b[s->tp.n[it].val].seg].expandable)
			it = as_cuda_t_next(&s->tp, p->blocks, it);
		if (it == NIL || s->tp.n[it].k0 != stream)
			return NIL;
		bi = s->tp.n[it].val;
	}
	if (s->s[s->b[bi].seg].expandable && s->expandable) {
		/* best fit by the size a block can grow to */
		uint32_t nx = as_cuda_t_next(&s->tp, p->blocks, it);
		while (s->s[s->b[bi].seg].expandable && nx != NIL &&
		       s->tp.n[nx].k0 == stream &&
		       expandable_size(s, s->tp.n[nx].val) <
			       expandable_size(s, bi)) {
			it = nx;
			bi = s->tp.n[it].val;
			nx = as_cuda_t_next(&s->tp, p->blocks, it);
		}
	}
	uint64_t bsize = s->b[bi].size;
	if (size < s->max_split && bsize >= s->max_split)
		return NIL;
	if (size >= s->max_split && bsize >= size + s->max_non_split)
		return NIL;
	return bi;
}

static uint32_t get_free_block(struct cc *s, struct pool *p, uint64_t size,
			       uint16_t stream)
{
	if (s->fraction > 0.0 && s->gc_threshold > 0.0)
		p->calls++;
	uint32_t bi = find_free_block(s, p, size, stream);
	if (bi != NIL)
		pool_remove(s, bi);
	return bi;
}

static bool should_split(const struct cc *s, const struct block *b,
			 uint64_t size)
{
	uint64_t remaining = b->size - size;
	if (b->small || s->expandable)
		return remaining >= MIN_BLOCK;
	return size < s->max_split && remaining > SMALL_SIZE;
}

/* cudaFree of a whole-segment free block (already out of its pool). */
static void release_segment(struct cc *s, uint32_t bi)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	as_cuda_emitf(s, "segment_free addr=0x%" PRIx64 " size=%" PRIu64,
		      g->addr, g->size);
	gap_add(s, g->addr, as_cuda_round_up(g->size, ROUND_LARGE));
	as_cuda_stat_sub(&s->reserved_bytes, g->size);
	as_cuda_stat_sub(&s->segment, 1);
	if (g->size >= s->max_split)
		as_cuda_stat_sub(&s->oversize_segments, 1);
	s->num_device_free++;
	key_del(s, b->seg);
	g->live = 0;
	g->first = s->frees;
	s->frees = b->seg;
	block_delete(s, bi);
}

/* Merge free neighbour `src` into `dst`; returns its size (0: no merge). */
static uint64_t try_merge(struct cc *s, uint32_t dst, uint32_t src)
{
	if (src == NIL)
		return 0;
	struct block *d = &s->b[dst], *c = &s->b[src];
	if (c->allocated || c->mapped != d->mapped)
		return 0;
	pool_remove(s, src);
	if (d->prev == src) {
		d->addr = c->addr;
		d->prev = c->prev;
		if (d->prev != NIL)
			s->b[d->prev].next = dst;
		else
			s->s[d->seg].first = dst;
	} else {
		d->next = c->next;
		if (d->next != NIL)
			s->b[d->next].prev = dst;
	}
	uint64_t n = c->size;
	d->size += n;
	block_delete(s, src);
	return n;
}

/*
 * Unmap the whole pages inside free block bi of an expandable segment; the
 * partial pages at its ends stay mapped as free blocks.
 */
static int unmap_block(struct cc *s, uint32_t bi)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	uint64_t lo = as_cuda_round_up(b->addr - g->addr, g->page) + g->addr;
	uint64_t hi = (b->addr + b->size - g->addr) / g->page * g->page +
		      g->addr;
	if (hi <= lo)
		return AS_OK;
	pool_remove(s, bi);
	uint32_t before = NIL, after = NIL;
	if (lo > b->addr) {
		if ((before = as_cuda_block_new(s)) == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[before] = *b;
		s->b[before].size = lo - b->addr;
		s->b[before].next = bi;
		if (b->prev != NIL)
			s->b[b->prev].next = before;
		else
			s->s[b->seg].first = before;
		b->prev = before;
	}
	if (hi < b->addr + b->size) {
		if ((after = as_cuda_block_new(s)) == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[after] = *b;
		s->b[after].addr = hi;
		s->b[after].size = b->addr + b->size - hi;
		s->b[after].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = after;
		b->next = after;
	}
	b = &s->b[bi];
	b->addr = lo;
	b->size = hi - lo;
	b->mapped = 0;
	g->mapped -= hi - lo;
	as_cuda_stat_sub(&s->reserved_bytes, hi - lo);
	s->num_device_free++;
	as_cuda_emitf(s, "segment_unmap addr=0x%" PRIx64 " size=%" PRIu64, lo,
		      hi - lo);
	/* merge the unmapped range with unmapped neighbours */
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	int err = as_cuda_pool_insert(s, bi);
	if (err == AS_OK && before != NIL)
		err = as_cuda_pool_insert(s, before);
	if (err == AS_OK && after != NIL)
		err = as_cuda_pool_insert(s, after);
	return err;
}

/* release_cached_blocks (empty_cache): every whole free segment. */
int as_cuda_release_cached(struct cc *s)
{
	s->num_sync_all_streams++;
	for (int p = 1; p >= 0; p--) {
		/* collect first: releasing mutates the set */
		uint32_t n = 0;
		for (uint32_t it = as_cuda_t_lower_bound(
			     &s->tp, s->pools[p].blocks, 0, 0, 0);
		     it != NIL;
		     it = as_cuda_t_next(&s->tp, s->pools[p].blocks, it))
			n++;
		uint32_t *v = malloc(((size_t)n + 1) * sizeof(*v));
		if (!v)
			return AS_ENOMEM;
		n = 0;
		for (uint32_t it = as_cuda_t_lower_bound(
			     &s->tp, s->pools[p].blocks, 0, 0, 0);
		     it != NIL;
		     it = as_cuda_t_next(&s->tp, s->pools[p].blocks, it))
			v[n++] = s->tp.n[it].val;
		int err = AS_OK;
		for (uint32_t k = 0; k < n && err == AS_OK; k++) {
			uint32_t bi = v[k];
			if (!s->b[bi].used || s->b[bi].allocated ||
			    !s->b[bi].mapped)
				continue;
			if (s->s[s->b[bi].seg].expandable) {
				err = unmap_block(s, bi);
			} else if (!is_split(&s->b[bi])) {
				pool_remove(s, bi);
				release_segment(s, bi);
			}
		}
		free(v);
		if (err)
			return err;
	}
	/* expandable ranges left wholly unmapped are given back */
	for (uint32_t i = 0; i < s->ns; i++) {
		struct segment *g = &s->s[i];
		if (g->live && g->expandable && g->mapped == 0 &&
		    s->b[g->first].next == NIL) {
			uint32_t bi = g->first;
			pool_remove(s, bi);
			key_del(s, i);
			g->live = 0;
			block_delete(s, bi);
		}
	}
	return AS_OK;
}

/* release_available_cached_blocks: oversize cached segments, if enough. */
static bool release_available(struct cc *s, struct pool *p, uint64_t size,
			      uint16_t stream)
{
	if (s->max_split == NO_LIMIT)
		return false;
	uint64_t key = size < s->max_split ? s->max_split : size;
	uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, stream, key, 0);
	if (it != NIL && s->tp.n[it].k0 == stream &&
	    !s->s[s->b[s->tp.n[it].val].seg].expandable) {
		uint32_t bi = s->tp.n[it].val;
		if (is_split(&s->b[bi]))
			return false;
		pool_remove(s, bi);
		release_segment(s, bi);
		return true;
	}
	/* several oversize blocks, the largest first */
	uint64_t released = 0;
	it = as_cuda_t_before(&s->tp, p->blocks, stream, key, 0);
	while (it != NIL && released < key && s->tp.n[it].k0 == stream &&
	       s->tp.n[it].k1 >= s->max_split) {
		uint32_t bi = s->tp.n[it].val;
		uint64_t k1 = s->tp.n[it].k1, k2 = s->tp.n[it].k2;
		if (!s->s[s->b[bi].seg].expandable && !is_split(&s->b[bi])) {
			released += s->b[bi].size;
			pool_remove(s, bi);
			release_segment(s, bi);
		}
		it = as_cuda_t_before(&s->tp, p->blocks, stream, k1, k2);
	}
	return released >= key;
}

/* garbage_collect_cached_blocks: whole large segments, oldest first. */
static void garbage_collect(struct cc *s)
{
	uint64_t amax = allowed_max(s);
	if (amax == NO_LIMIT)
		return;
	uint64_t threshold = (uint64_t)(s->gc_threshold * (double)amax);
	if (s->reserved_bytes.cur <= threshold)
		return;
	uint64_t target = s->reserved_bytes.cur - threshold, reclaimed = 0;
	struct pool *p = &s->pools[1];
	double total_age = 0.0;
	uint64_t freeable = 0;
	for (uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, 0, 0, 0);
	     it != NIL; it = as_cuda_t_next(&s->tp, p->blocks, it)) {
		const struct block *b = &s->b[s->tp.n[it].val];
		if (!is_split(b)) {
			total_age += (double)(p->calls - b->gc_base);
			freeable++;
		}
	}
	if (!freeable)
		return;
	s->gc_runs++;
	bool freed = true;
	while (reclaimed < target && freed && freeable > 0) {
		double age_threshold = total_age / (double)freeable;
		freed = false;
		uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, 0, 0, 0);
		while (it != NIL) {
			uint32_t bi = s->tp.n[it].val;
			uint32_t nx = as_cuda_t_next(&s->tp, p->blocks, it);
			const struct block *b = &s->b[bi];
			double age = (double)(p->calls - b->gc_base);
			if (!is_split(b) && !s->s[b->seg].expandable &&
			    age >= age_threshold) {
				freed = true;
				reclaimed += b->size;
				total_age -= age;
				freeable--;
				pool_remove(s, bi);
				release_segment(s, bi);
				/* the set changed: find the next again */
				if (nx != NIL)
					nx = as_cuda_t_lower_bound(
						&s->tp, p->blocks,
						s->tp.n[nx].k0, s->tp.n[nx].k1,
						s->tp.n[nx].k2);
			}
			it = nx;
		}
	}
}

/* Whether [key, key + size) meets the key range of a live segment. */
static bool key_taken(const struct cc *s, uint64_t key, uint64_t size)
{
	uint64_t end = key > UINT64_MAX - size ? UINT64_MAX : key + size;
	return as_cuda_t_meets(&s->tp, s->keys, key, end);
}

/*
 * The order key of a new cudaMalloc segment. The device chooses addresses,
 * and PyTorch orders free blocks of one size by them: on a recording, the
 * address its cudaMalloc returned at this step for a segment of this size
 * and stream (a trace offset), when the model asks for the same; else one
 * above every recorded address.
 */
static uint64_t segment_key(struct cc *s, uint64_t addr, uint64_t size,
			    uint16_t stream)
{
	const struct as_trace *t = s->t;
	if (t && s->rec_taken) {
		uint32_t lo = 0, hi = t->nsegments;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (t->segments[mid].start < s->now)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t k = lo;
		     k < t->nsegments && t->segments[k].start == s->now; k++) {
			const struct as_segment *g = &t->segments[k];
			if (s->rec_taken[k] || g->space != s->space ||
			    g->size != size || g->stream != stream ||
			    (g->flags & AS_SEG_EXPANDABLE) ||
			    key_taken(s, g->addr, size))
				continue;
			s->rec_taken[k] = 1;
			return g->addr;
		}
	}
	return addr + s->key_base;
}

/* A new segment of alloc_size bytes holding one free block (not pooled). */
static uint32_t new_segment(struct cc *s, uint64_t alloc_size, bool small,
			    uint16_t stream, int *err)
{
	uint64_t amax = allowed_max(s);
	if (amax != NO_LIMIT && s->reserved_bytes.cur + alloc_size > amax)
		return NIL;
	if (s->capacity && s->reserved_bytes.cur + alloc_size > s->capacity)
		return NIL;
	uint64_t addr;
	/* capacity counts bytes (CUDA maps physical memory anywhere); only
	 * a trace's own space capacity bounds the addresses of the plan */
	if (!as_cuda_device_take(s, alloc_size, s->addr_bound, &addr))
		return NIL;
	uint64_t key = segment_key(s, addr, alloc_size, stream);
	uint32_t gi = as_cuda_segment_new(s);
	uint32_t bi = gi == NIL ? NIL : as_cuda_block_new(s);
	if (bi == NIL) {
		*err = AS_ENOMEM;
		return NIL;
	}
	s->s[gi] = (struct segment){.addr = addr, .size = alloc_size,
				    .mapped = alloc_size, .first = bi,
				    .stream = stream, .small = small,
				    .live = 1, .key = key};
	if (as_cuda_key_add(s, gi) != AS_OK) {
		*err = AS_ENOMEM;
		return NIL;
	}
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = alloc_size;
	b->seg = gi;
	b->stream = stream;
	b->small = small;
	as_cuda_stat_add(&s->segment, 1);
	as_cuda_stat_add(&s->reserved_bytes, alloc_size);
	if (alloc_size >= s->max_split)
		as_cuda_stat_add(&s->oversize_segments, 1);
	s->num_device_alloc++;
	if (addr + alloc_size > s->dev_top)
		s->dev_top = addr + alloc_size;
	as_cuda_emitf(s, "segment_alloc addr=0x%" PRIx64 " size=%" PRIu64, addr,
		      alloc_size);
	return bi;
}

/* Map pages at the start of unmapped block bi to cover `size` bytes. */
static int map_block(struct cc *s, uint32_t bi, uint64_t size, bool *ok)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	uint64_t n = as_cuda_round_up(size, g->page);
	if (n > b->size)
		n = b->size;
	uint64_t amax = allowed_max(s);
	*ok = false;
	if ((s->capacity && s->reserved_bytes.cur + n > s->capacity) ||
	    (amax != NO_LIMIT && s->reserved_bytes.cur + n > amax))
		return AS_OK;
	pool_remove(s, bi);
	if (n < b->size) {
		uint32_t r = as_cuda_block_new(s);
		if (r == NIL)
			return AS_ENOMEM;
		b = &s->b[bi];
		s->b[r] = *b;
		s->b[r].addr = b->addr + n;
		s->b[r].size = b->size - n;
		s->b[r].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = r;
		b->next = r;
		b->size = n;
		int err = as_cuda_pool_insert(s, r);
		if (err)
			return err;
	}
	b->mapped = 1;
	g->mapped += n;
	if (b->addr + n - g->addr > g->hiwater)
		g->hiwater = b->addr + n - g->addr;
	as_cuda_stat_add(&s->reserved_bytes, n);
	s->num_device_alloc++;
	as_cuda_emitf(s, "segment_map addr=0x%" PRIx64 " size=%" PRIu64,
		      b->addr, n);
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	*ok = true;
	return as_cuda_pool_insert(s, bi);
}

static bool allocatable(const struct cc *s, uint32_t i)
{
	return i != NIL && !s->b[i].allocated;
}

/* find_expandable_block: the lowest unmapped range with room, or a new
 * virtual range. */
static uint32_t find_expandable(struct cc *s, struct pool *p, bool small,
				uint16_t stream, uint64_t size, int *err)
{
	for (uint32_t it =
		     as_cuda_t_lower_bound(&s->tp, p->unmapped, stream, 0, 0);
	     it != NIL && s->tp.n[it].k0 == stream;
	     it = as_cuda_t_next(&s->tp, p->unmapped, it)) {
		uint32_t c = s->tp.n[it].val;
		if (allocatable(s, s->b[c].prev))
			c = s->b[c].prev;
		uint64_t bytes = 0;
		for (uint32_t x = c; bytes < size && allocatable(s, x);
		     x = s->b[x].next)
			bytes += s->b[x].size;
		if (bytes >= size)
			return c;
	}
	uint64_t page = small ? SMALL_BUFFER : s->large_seg;
	uint64_t va = s->capacity ? s->capacity + s->capacity / 8 : DEFAULT_VA;
	va = as_cuda_round_up(va, page);
	if (va < as_cuda_round_up(size, page))
		return NIL;
	if (va > UINT64_MAX / 2 - s->va_next)
		return NIL; /* virtual addresses run out */
	uint64_t addr = s->va_next;
	s->va_next += va;
	uint32_t gi = as_cuda_segment_new(s);
	uint32_t bi = gi == NIL ? NIL : as_cuda_block_new(s);
	if (bi == NIL) {
		*err = AS_ENOMEM;
		return NIL;
	}
	s->s[gi] = (struct segment){.addr = addr, .size = va, .page = page,
				    .first = bi, .stream = stream,
				    .small = small, .expandable = 1,
				    .live = 1, .key = addr + s->key_base};
	if ((*err = as_cuda_key_add(s, gi)) != AS_OK)
		return NIL;
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = va;
	b->seg = gi;
	b->stream = stream;
	b->small = small;
	b->mapped = 0;
	if ((*err = as_cuda_pool_insert(s, bi)) != AS_OK)
		return NIL;
	return bi;
}

static uint32_t alloc_expandable(struct cc *s, struct pool *p, bool small,
				 uint16_t stream, uint64_t size, int *err)
{
	uint32_t c = find_expandable(s, p, small, stream, size, err);
	if (c == NIL)
		return NIL;
	bool ok = true;
	if (!s->b[c].mapped) {
		uint64_t n = s->b[c].size < size ? s->b[c].size : size;
		if ((*err = map_block(s, c, n, &ok)) || !ok)
			return NIL;
	}
	while (s->b[c].size < size) {
		uint32_t nx = s->b[c].next;
		if (nx == NIL || s->b[nx].mapped)
			return NIL;
		uint64_t rem = size - s->b[c].size;
		if ((*err = map_block(s, nx, rem < s->b[nx].size ? rem
								 : s->b[nx].size,
				      &ok)) ||
		    !ok)
			return NIL;
		/* nx merged c into itself: it is the candidate now */
		c = nx;
	}
	pool_remove(s, c);
	return c;
}

/* alloc_block: a new segment or mapped range; NIL when the device says no. */
static uint32_t alloc_block(struct cc *s, struct pool *p, bool small,
			    uint16_t stream, uint64_t size, uint64_t alloc_size,
			    bool retry, int *err)
{
	if (retry)
		s->num_alloc_retries++;
	uint64_t amax = allowed_max(s);
	if (amax != NO_LIMIT && s->reserved_bytes.cur + alloc_size > amax)
		return NIL;
	if (s->expandable)
		return alloc_expandable(s, p, small, stream, size, err);
	return new_segment(s, alloc_size, small, stream, err);
}

/* alloc_found_block: split at the low end when the rules allow. */
static int take_block(struct cc *s, uint32_t bi, uint64_t size)
{
	if (should_split(s, &s->b[bi], size)) {
		uint32_t r = as_cuda_block_new(s);
		if (r == NIL)
			return AS_ENOMEM;
		struct block *b = &s->b[bi];
		s->b[r] = *b;
		s->b[r].addr = b->addr + size;
		s->b[r].size = b->size - size;
		s->b[r].prev = bi;
		if (b->next != NIL)
			s->b[b->next].prev = r;
		b->next = r;
		b->size = size;
		int err = as_cuda_pool_insert(s, r);
		if (err)
			return err;
	}
	struct block *b = &s->b[bi];
	b->allocated = 1;
	return AS_OK;
}

int as_cuda_ensure_arrays(struct cc *s, const struct as_trace *t)
{
	if (s->blk_of)
		return AS_OK;
	s->t = t;
	size_t n = (size_t)as_cuda_nslots(s) + 1;
	s->blk_of = malloc(n * sizeof(*s->blk_of));
	s->seg_of = malloc(n * sizeof(*s->seg_of));
	s->seg_size = calloc(n, sizeof(*s->seg_size));
	s->seg_off = calloc(n, sizeof(*s->seg_off));
	s->initial = calloc(n, 1);
	/* a recording: which of its segments each block went to */
	if (t->nsegments)
		s->seg_key = calloc(n, sizeof(*s->seg_key));
	if (!s->blk_of || !s->seg_of || !s->seg_size || !s->seg_off ||
	    !s->initial || (t->nsegments && !s->seg_key))
		return AS_ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->blk_of[i] = s->seg_of[i] = NIL;
	return AS_OK;
}

void as_cuda_account_alloc(struct cc *s, uint32_t bi, uint32_t buf,
			   uint64_t requested)
{
	struct block *b = &s->b[bi];
	uint32_t k = as_cuda_slot(s, buf);
	b->buf = buf;
	s->blk_of[k] = bi;
	as_cuda_stat_add(&s->allocation, 1);
	as_cuda_stat_add(&s->allocated_bytes, b->size);
	as_cuda_stat_add(&s->requested_bytes, requested);
	if (b->size >= s->max_split)
		as_cuda_stat_add(&s->oversize_allocations, 1);
	const struct segment *g = &s->s[b->seg];
	s->seg_size[k] = g->expandable ? g->mapped : g->size;
	s->seg_off[k] = b->addr - g->addr;
	if (g->initial)
		s->initial[k] |= IN_INITIAL_SEG;
	if (g->expandable)
		s->initial[k] |= IN_EXPANDABLE;
	if (b->small)
		s->initial[k] |= IN_SMALL_POOL;
	if (s->seg_key)
		s->seg_key[k] = g->key;
	s->seg_of[k] = b->seg;
}

uint64_t as_cuda_requested_of(const struct as_trace *t, uint32_t buf)
{
	uint64_t n = t->buffers[buf].size;
	if (t->info && t->info[buf].requested && t->info[buf].requested <= n)
		n = t->info[buf].requested;
	return n;
}

/*
 * The recording ran out of memory before time `now`: the real allocator
 * released every cached segment before it gave up (release_cached_blocks),
 * and so does the model; only the mark's time is read. The same for the
 * steps where the program emptied the cache (start.c finds them: cached
 * segments given back with no cudaMalloc after them).
 */
static int replay_marks(struct cc *s, const struct as_trace *t, uint64_t now)
{
	int err = AS_OK;
	s->now = now;
	while (err == AS_OK && s->next_mark < t->nmarks &&
	       t->marks[s->next_mark].time <= now) {
		const struct as_mark *m = &t->marks[s->next_mark++];
		if (m->kind != AS_MARK_OOM || m->space != s->space)
			continue;
		s->recorded_ooms++;
		err = as_cuda_release_cached(s);
		/*
		 * A trace without the recording's segments (start.c reads the
		 * device size from them): the device is as large as what the
		 * model holds now plus what the device had free then.
		 */
		if (!err && s->cap.from == AS_LIMIT_NONE && m->device_free &&
		    m->device_free <= MAX_BYTES) {
			s->capacity = s->reserved_bytes.cur + m->device_free;
			s->cap = (struct as_limit){s->capacity, m->time,
						   AS_LIMIT_OOM};
		}
	}
	/* the program emptied the cache (torch.cuda.empty_cache()) */
	while (err == AS_OK && s->next_release < s->nrelease &&
	       s->release_at[s->next_release] <= now) {
		s->next_release++;
		s->recorded_releases++;
		err = as_cuda_release_cached(s);
	}
	while (s->next_maybe < s->nmaybe && s->maybe_at[s->next_maybe] < now)
		s->next_maybe++;
	return err;
}

int as_cuda_alloc(void *state, const struct as_trace *t, uint32_t buf,
		  uint64_t *offset, uint64_t *chunk)
{
	struct cc *s = state;
	int err = as_cuda_ensure_arrays(s, t);
	if (err)
		return err;
	if ((err = replay_marks(s, t, t->buffers[buf].start)))
		return err;
	uint32_t k = as_cuda_slot(s, buf);
	if ((s->initial[k] & SEEDED) && s->blk_of[k] != NIL) {
		const struct block *b = &s->b[s->blk_of[k]];
		*offset = b->addr;
		*chunk = b->size;
		return AS_OK;
	}
	uint64_t req = as_cuda_requested_of(t, buf);
	uint64_t align = as_buffer_align(&t->buffers[buf]);
	/* no device holds this much: a failed allocation, not an overflow */
	if (t->buffers[buf].size > MAX_BYTES || align > MAX_BYTES) {
		s->num_ooms++;
		return 1;
	}
	uint64_t size = as_cuda_round_size(s, req);
	if (size < t->buffers[buf].size)
		size = as_cuda_round_size(s, t->buffers[buf].size);
	/* PyTorch aligns to 512 bytes; a larger alignment (not a CUDA
	 * input) is had by asking for the slack and aligning inside */
	if (align > MIN_BLOCK)
		size = as_cuda_round_size(s, size + align - MIN_BLOCK);
	bool small = size <= SMALL_SIZE;
	struct pool *p = &s->pools[small ? 0 : 1];
	uint16_t stream = t->buffers[buf].stream;
	uint64_t alloc_size = allocation_size(s, size);
	s->allocs++;
	/*
	 * The recording gave cached segments back before reserving one for
	 * this request. A cached block that serves it means no cudaMalloc
	 * failed: the program emptied the cache (start.c). Else the model's
	 * own cudaMalloc fails at the device size and releases; when the
	 * size the recording told leaves room now (the device had less free
	 * then: other memory), the release is the recording's all the same,
	 * whichever it was (without max_split_size both empty the cache).
	 */
	if (s->next_maybe < s->nmaybe && s->maybe_at[s->next_maybe] == s->now) {
		s->next_maybe++;
		bool served = find_free_block(s, p, size, stream) != NIL;
		bool told = s->cap.from == AS_LIMIT_OOM ||
			    s->cap.from == AS_LIMIT_RETRY;
		if (served ||
		    (told && !s->expandable && s->max_split == NO_LIMIT &&
		     s->reserved_bytes.cur + alloc_size <= s->capacity)) {
			s->recorded_releases++;
			if ((err = as_cuda_release_cached(s)))
				return err;
		}
	}
	err = AS_OK;
	uint32_t bi = get_free_block(s, p, size, stream);
	bool made = bi == NIL;
	if (bi == NIL) {
		if (s->fraction > 0.0 && s->gc_threshold > 0.0)
			garbage_collect(s);
		bi = alloc_block(s, p, small, stream, size, alloc_size, false,
				 &err);
		if (bi == NIL && !err && release_available(s, p, size, stream))
			bi = alloc_block(s, p, small, stream, size, alloc_size,
					 false, &err);
		if (bi == NIL && !err) {
			err = as_cuda_release_cached(s);
			if (!err)
				bi = alloc_block(s, p, small, stream, size,
						 alloc_size, true, &err);
		}
	}
	if (err)
		return err;
	if (bi == NIL) {
		s->num_ooms++;
		/* Names are made on first read: only when told. */
		const char *name = s->emit ? as_trace_buffer_name(t, buf) : NULL;
		as_cuda_emitf(s,
			      "oom: tried to allocate %" PRIu64
			      " (segment %" PRIu64 ") for buffer %s",
			      size, alloc_size, name ? name : "?");
		return 1;
	}
	if ((err = take_block(s, bi, size)))
		return err;
	as_cuda_account_alloc(s, bi, buf, req);
	if (made)
		s->initial[as_cuda_slot(s, buf)] |= MADE_SEGMENT;
	if (s->reserved_bytes.peak != s->seen_peak) {
		s->seen_peak = s->reserved_bytes.peak;
		s->alloc_at_peak = 0;
	}
	if (s->reserved_bytes.cur == s->reserved_bytes.peak &&
	    s->allocated_bytes.cur > s->alloc_at_peak)
		s->alloc_at_peak = s->allocated_bytes.cur;
	*offset = as_cuda_round_up(s->b[bi].addr, align);
	*chunk = s->b[bi].size;
	s->seg_off[as_cuda_slot(s, buf)] += *offset - s->b[bi].addr;
	return AS_OK;
}

void as_cuda_free(void *state, const struct as_trace *t, uint32_t buf)
{
	struct cc *s = state;
	if (!s->blk_of || buf >= t->nbuffers ||
	    s->blk_of[as_cuda_slot(s, buf)] == NIL)
		return;
	/* out of memory here only delays the release: check() tells */
	replay_marks(s, t, t->buffers[buf].end);
	uint32_t bi = s->blk_of[as_cuda_slot(s, buf)];
	s->blk_of[as_cuda_slot(s, buf)] = NIL;
	struct block *b = &s->b[bi];
	b->allocated = 0;
	b->buf = NIL;
	as_cuda_stat_sub(&s->allocation, 1);
	as_cuda_stat_sub(&s->allocated_bytes, b->size);
	as_cuda_stat_sub(&s->requested_bytes, as_cuda_requested_of(t, buf));
	if (b->size >= s->max_split)
		as_cuda_stat_sub(&s->oversize_allocations, 1);
	try_merge(s, bi, s->b[bi].prev);
	try_merge(s, bi, s->b[bi].next);
	/* out of memory here leaves the block out of the pool: check()
	 * reports it */
	as_cuda_pool_insert(s, bi);
}

static const struct as_online_impl cc_online = {
	.create = as_cuda_create,
	.start = as_cuda_start,
	.alloc = as_cuda_alloc,
	.free = as_cuda_free,
	.query = as_cuda_query,
	.stats = as_cuda_stats,
	.check = as_cuda_check,
	.walk = as_cuda_walk,
	.destroy = as_cuda_destroy,
};

const struct as_strategy_impl as_strategy_cuda_caching = {
	.info = {
		.name = "cuda-caching",
		.summary = "PyTorch CUDA caching allocator (DeviceCachingAllocator)",
		.online = true,
		.options = as_cuda_options,
	},
	.online = &cc_online,
};
