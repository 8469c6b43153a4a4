/*
 * cuda-caching: memory from the device and back to it. The device model
 * (first fit over gaps), segments and their order keys, new cudaMalloc
 * segments, expandable ranges (mapping and unmapping pages), and what gives
 * cached memory back: empty_cache(), the release and retry before an OOM,
 * garbage collection. core.c serves requests from what these reserve.
 */
#include "strategies/cuda_caching/cuda_caching.h"

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

/* ---- segments, their order keys, the limit of the fraction ---- */

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

/* The limit set_per_process_memory_fraction gives, or NO_LIMIT. */
static uint64_t allowed_max(const struct cc *s)
{
	if (s->set.fraction <= 0.0 || s->capacity == 0)
		return NO_LIMIT;
	return (uint64_t)(s->set.fraction * (double)s->capacity);
}

/* ---- reserved bytes: inherited and made ---- */

/*
 * n bytes reserved by the model itself: the reserved stat, the peak of
 * what the model made (reserved minus the inherited bytes still held),
 * and the reserved peak after the inherited bytes were given back.
 */
void as_cuda_reserve(struct cc *s, uint64_t n)
{
	as_cuda_stat_add(&s->reserved_bytes, n);
	uint64_t made = s->reserved_bytes.cur - s->inherited_cur;
	if (made > s->made_peak)
		s->made_peak = made;
	if (s->released && s->reserved_bytes.cur > s->after_peak)
		s->after_peak = s->reserved_bytes.cur;
}

/* n bytes of segment g given back; the inherited ones go first. */
void as_cuda_unreserve(struct cc *s, struct segment *g, uint64_t n)
{
	as_cuda_stat_sub(&s->reserved_bytes, n);
	uint64_t inh = n < g->inherited ? n : g->inherited;
	g->inherited -= inh;
	s->inherited_cur -= inh > s->inherited_cur ? s->inherited_cur : inh;
}

/* ---- giving memory back ---- */

/* cudaFree of a whole-segment free block (already out of its pool). */
static void release_segment(struct cc *s, uint32_t bi)
{
	struct block *b = &s->b[bi];
	struct segment *g = &s->s[b->seg];
	as_cuda_emitf(s, "segment_free addr=0x%" PRIx64 " size=%" PRIu64,
		      g->addr, g->size);
	gap_add(s, g->addr, as_cuda_round_up(g->size, ROUND_LARGE));
	as_cuda_unreserve(s, g, g->size);
	as_cuda_stat_sub(&s->segment, 1);
	if (g->size >= s->set.max_split)
		as_cuda_stat_sub(&s->oversize_segments, 1);
	s->num_device_free++;
	key_del(s, b->seg);
	g->live = 0;
	g->first = s->frees;
	s->frees = b->seg;
	as_cuda_block_delete(s, bi);
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
	as_cuda_pool_remove(s, bi);
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
	as_cuda_unreserve(s, g, hi - lo);
	s->num_device_free++;
	as_cuda_emitf(s, "segment_unmap addr=0x%" PRIx64 " size=%" PRIu64, lo,
		      hi - lo);
	/* merge the unmapped range with unmapped neighbours */
	as_cuda_try_merge(s, bi, s->b[bi].prev);
	as_cuda_try_merge(s, bi, s->b[bi].next);
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
			} else if (!as_cuda_is_split(&s->b[bi])) {
				as_cuda_pool_remove(s, bi);
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
			as_cuda_pool_remove(s, bi);
			key_del(s, i);
			g->live = 0;
			as_cuda_block_delete(s, bi);
		}
	}
	return AS_OK;
}

/* release_available_cached_blocks: oversize cached segments, if enough. */
bool as_cuda_release_available(struct cc *s, struct pool *p, uint64_t size,
			       uint16_t stream)
{
	if (s->set.max_split == NO_LIMIT)
		return false;
	uint64_t key = size < s->set.max_split ? s->set.max_split : size;
	uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, stream, key, 0);
	if (it != NIL && s->tp.n[it].k0 == stream &&
	    !s->s[s->b[s->tp.n[it].val].seg].expandable) {
		uint32_t bi = s->tp.n[it].val;
		if (as_cuda_is_split(&s->b[bi]))
			return false;
		as_cuda_pool_remove(s, bi);
		release_segment(s, bi);
		s->in.model_releases++;
		return true;
	}
	/* several oversize blocks, the largest first */
	uint64_t released = 0;
	it = as_cuda_t_before(&s->tp, p->blocks, stream, key, 0);
	while (it != NIL && released < key && s->tp.n[it].k0 == stream &&
	       s->tp.n[it].k1 >= s->set.max_split) {
		uint32_t bi = s->tp.n[it].val;
		uint64_t k1 = s->tp.n[it].k1, k2 = s->tp.n[it].k2;
		if (!s->s[s->b[bi].seg].expandable &&
		    !as_cuda_is_split(&s->b[bi])) {
			released += s->b[bi].size;
			as_cuda_pool_remove(s, bi);
			release_segment(s, bi);
		}
		it = as_cuda_t_before(&s->tp, p->blocks, stream, k1, k2);
	}
	s->in.model_releases += released > 0;
	return released >= key;
}

/* garbage_collect_cached_blocks: whole large segments, oldest first. */
void as_cuda_garbage_collect(struct cc *s)
{
	uint64_t amax = allowed_max(s);
	if (amax == NO_LIMIT)
		return;
	uint64_t threshold = (uint64_t)(s->set.gc_threshold * (double)amax);
	if (s->reserved_bytes.cur <= threshold)
		return;
	uint64_t target = s->reserved_bytes.cur - threshold, reclaimed = 0;
	struct pool *p = &s->pools[1];
	double total_age = 0.0;
	uint64_t freeable = 0;
	for (uint32_t it = as_cuda_t_lower_bound(&s->tp, p->blocks, 0, 0, 0);
	     it != NIL; it = as_cuda_t_next(&s->tp, p->blocks, it)) {
		const struct block *b = &s->b[s->tp.n[it].val];
		if (!as_cuda_is_split(b)) {
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
			if (!as_cuda_is_split(b) && !s->s[b->seg].expandable &&
			    age >= age_threshold) {
				freed = true;
				reclaimed += b->size;
				total_age -= age;
				freeable--;
				as_cuda_pool_remove(s, bi);
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

/* ---- reserving memory ---- */

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
	/* a what-if has no rec_taken: its own addresses order */
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
			s->in.seg_keys++;
			return g->addr;
		}
	}
	s->in.model_keys++;
	return addr + s->key_base;
}

/*
 * Segment `rec` in a new record, its key range taken, with one free block
 * over all of it (mapped unless expandable, not pooled); NIL with *err set
 * when memory runs out.
 */
static uint32_t open_segment(struct cc *s, struct segment rec, int *err)
{
	uint32_t gi = as_cuda_segment_new(s);
	uint32_t bi = gi == NIL ? NIL : as_cuda_block_new(s);
	if (bi == NIL) {
		*err = AS_ENOMEM;
		return NIL;
	}
	rec.first = bi;
	s->s[gi] = rec;
	if (as_cuda_key_add(s, gi) != AS_OK) {
		*err = AS_ENOMEM;
		return NIL;
	}
	struct block *b = &s->b[bi];
	b->addr = rec.addr;
	b->size = rec.size;
	b->seg = gi;
	b->stream = rec.stream;
	b->small = rec.small;
	b->mapped = !rec.expandable;
	return bi;
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
	uint32_t bi = open_segment(s,
				   (struct segment){.addr = addr,
						    .size = alloc_size,
						    .mapped = alloc_size,
						    .stream = stream,
						    .small = small, .live = 1,
						    .key = key},
				   err);
	if (bi == NIL)
		return NIL;
	as_cuda_stat_add(&s->segment, 1);
	as_cuda_reserve(s, alloc_size);
	if (alloc_size >= s->set.max_split)
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
	as_cuda_pool_remove(s, bi);
	if (n < b->size) {
		int err = as_cuda_split_tail(s, bi, n);
		if (err)
			return err;
		b = &s->b[bi];
	}
	b->mapped = 1;
	g->mapped += n;
	if (b->addr + n - g->addr > g->hiwater)
		g->hiwater = b->addr + n - g->addr;
	as_cuda_reserve(s, n);
	s->num_device_alloc++;
	as_cuda_emitf(s, "segment_map addr=0x%" PRIx64 " size=%" PRIu64,
		      b->addr, n);
	as_cuda_try_merge(s, bi, s->b[bi].prev);
	as_cuda_try_merge(s, bi, s->b[bi].next);
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
	uint64_t page = small ? SMALL_BUFFER : s->set.large_seg;
	uint64_t va = s->capacity ? s->capacity + s->capacity / 8 : DEFAULT_VA;
	va = as_cuda_round_up(va, page);
	if (va < as_cuda_round_up(size, page))
		return NIL;
	if (va > UINT64_MAX / 2 - s->va_next)
		return NIL; /* virtual addresses run out */
	uint64_t addr = s->va_next;
	s->va_next += va;
	s->in.model_keys++;
	uint32_t bi = open_segment(s,
				   (struct segment){.addr = addr, .size = va,
						    .page = page,
						    .stream = stream,
						    .small = small,
						    .expandable = 1, .live = 1,
						    .key = addr + s->key_base},
				   err);
	if (bi == NIL || (*err = as_cuda_pool_insert(s, bi)) != AS_OK)
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
	as_cuda_pool_remove(s, c);
	return c;
}

/* alloc_block: a new segment or mapped range; NIL when the device says no. */
uint32_t as_cuda_alloc_block(struct cc *s, struct pool *p, bool small,
			     uint16_t stream, uint64_t size,
			     uint64_t alloc_size, bool retry, int *err)
{
	if (retry)
		s->num_alloc_retries++;
	uint64_t amax = allowed_max(s);
	if (amax != NO_LIMIT && s->reserved_bytes.cur + alloc_size > amax)
		return NIL;
	if (s->set.expandable)
		return alloc_expandable(s, p, small, stream, size, err);
	return new_segment(s, alloc_size, small, stream, err);
}
