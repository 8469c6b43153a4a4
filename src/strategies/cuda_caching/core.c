/*
 * cuda-caching: a request served and a block freed. Blocks and the pools'
 * free sets, request sizes, the best fit, splitting and merging, the
 * recording's OOMs and empty_cache() steps replayed, alloc and free, and the
 * strategy's vtable. Memory comes from the device and goes back to it in
 * segments.c.
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

/* ---- blocks ---- */

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

/* Slot i back to the stack of unused ones. */
void as_cuda_block_delete(struct cc *s, uint32_t i)
{
	s->b[i].used = 0;
	s->b[i].next = s->freeb;
	s->freeb = i;
}

bool as_cuda_counts_inactive_split(const struct cc *s, const struct block *b)
{
	return as_cuda_is_split(b) && !s->s[b->seg].expandable;
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

/* Take block i out of its pool's free (or unmapped) set. */
void as_cuda_pool_remove(struct cc *s, uint32_t i)
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

/* ---- sizes ---- */

static uint32_t divisions(const struct cc *s, uint64_t size)
{
	int idx = as_cuda_floor_log2(size) - 20;
	if (idx < 0)
		idx = 0;
	if (idx > NDIV - 1)
		idx = NDIV - 1;
	return s->set.div[idx];
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
		return s->set.large_seg;
	return as_cuda_round_up(size, ROUND_LARGE);
}

/* ---- the allocator ---- */

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
	if (s->s[s->b[bi].seg].expandable && !s->set.expandable) {
		/* expandable segments turned off: only other blocks serve */
		while (it != NIL && s->tp.n[it].k0 == stream &&
		       s->s[s->b[s->tp.n[it].val].seg].expandable)
			it = as_cuda_t_next(&s->tp, p->blocks, it);
		if (it == NIL || s->tp.n[it].k0 != stream)
			return NIL;
		bi = s->tp.n[it].val;
	}
	if (s->s[s->b[bi].seg].expandable && s->set.expandable) {
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
	if (size < s->set.max_split && bsize >= s->set.max_split)
		return NIL;
	if (size >= s->set.max_split && bsize >= size + s->set.max_non_split)
		return NIL;
	return bi;
}

static uint32_t get_free_block(struct cc *s, struct pool *p, uint64_t size,
			       uint16_t stream)
{
	if (s->set.fraction > 0.0 && s->set.gc_threshold > 0.0)
		p->calls++;
	uint32_t bi = find_free_block(s, p, size, stream);
	if (bi != NIL)
		as_cuda_pool_remove(s, bi);
	return bi;
}

static bool should_split(const struct cc *s, const struct block *b,
			 uint64_t size)
{
	uint64_t remaining = b->size - size;
	if (b->small || s->set.expandable)
		return remaining >= MIN_BLOCK;
	return size < s->set.max_split && remaining > SMALL_SIZE;
}

/* Merge free neighbour `src` into `dst`; returns its size (0: no merge). */
uint64_t as_cuda_try_merge(struct cc *s, uint32_t dst, uint32_t src)
{
	if (src == NIL)
		return 0;
	struct block *d = &s->b[dst], *c = &s->b[src];
	if (c->allocated || c->mapped != d->mapped)
		return 0;
	as_cuda_pool_remove(s, src);
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
	as_cuda_block_delete(s, src);
	return n;
}

/*
 * Split block bi (out of its pool) at `size`: the rest becomes the next
 * block of its segment, free, mapped as bi is, and in its pool.
 */
int as_cuda_split_tail(struct cc *s, uint32_t bi, uint64_t size)
{
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
	return as_cuda_pool_insert(s, r);
}

/* alloc_found_block: split at the low end when the rules allow. */
static int take_block(struct cc *s, uint32_t bi, uint64_t size)
{
	if (should_split(s, &s->b[bi], size)) {
		int err = as_cuda_split_tail(s, bi, size);
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
	if (b->size >= s->set.max_split)
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
 * Whether a request of `req` bytes (stream 0: an OOM entry names none)
 * would be served now, without serving it: a cached block, or memory from
 * the device once every cached segment (whole free pages of expandable
 * ranges) went back. What a what-if says of a request the recording ran
 * out of memory on; its state stays as it is.
 */
/* What a request of `size` rounded bytes asks of the device when no
 * cached block serves it: a segment, or the pages that cover it. */
static uint64_t device_need(const struct cc *s, uint64_t size)
{
	if (!s->set.expandable)
		return allocation_size(s, size);
	return as_cuda_round_up(size, size <= SMALL_SIZE ? SMALL_BUFFER
							 : s->set.large_seg);
}

static bool request_fits(const struct cc *s, uint64_t req)
{
	uint64_t size = as_cuda_round_size(s, req);
	bool small = size <= SMALL_SIZE;
	if (find_free_block(s, &s->pools[small ? 0 : 1], size, 0) != NIL)
		return true;
	uint64_t need = device_need(s, size);
	uint64_t limit = s->capacity ? s->capacity : NO_LIMIT;
	if (s->set.fraction > 0.0 && s->capacity &&
	    (uint64_t)(s->set.fraction * (double)s->capacity) < limit)
		limit = (uint64_t)(s->set.fraction * (double)s->capacity);
	if (limit == NO_LIMIT)
		return true;
	uint64_t back = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t it = as_cuda_t_lower_bound(
			     &s->tp, s->pools[k].blocks, 0, 0, 0);
		     it != NIL;
		     it = as_cuda_t_next(&s->tp, s->pools[k].blocks, it)) {
			const struct block *b = &s->b[s->tp.n[it].val];
			const struct segment *g = &s->s[b->seg];
			if (g->expandable) {
				uint64_t lo = as_cuda_round_up(b->addr - g->addr,
							       g->page);
				uint64_t hi = (b->addr + b->size - g->addr) /
					      g->page * g->page;
				back += hi > lo ? hi - lo : 0;
			} else if (!as_cuda_is_split(b)) {
				back += b->size;
			}
		}
	uint64_t held = s->reserved_bytes.cur - back;
	return need <= limit && held <= limit - need;
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
		/* the request it failed is the program's; a what-if asks
		 * its own state whether it would fit, and releases nothing
		 * for it (the recorded run's releases are the recording's) */
		s->in.oom_requests++;
		uint64_t size = as_cuda_round_size(s, m->size ? m->size : 1);
		if (s->whatif) {
			if (!request_fits(s, m->size)) {
				s->oom_failing++;
				as_cuda_oom_record(s, m->time, m->size, size,
						   device_need(s, size), true);
			}
			continue;
		}
		s->oom_failing++;
		s->recorded_ooms++;
		as_cuda_oom_record(s, m->time, m->size, size,
				   device_need(s, size), true);
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
	/* the program emptied the cache (torch.cuda.empty_cache()); the
	 * first call that gives inherited bytes back starts the reserved
	 * peak a setting can change */
	while (err == AS_OK && s->next_release < s->nrelease &&
	       s->release_at[s->next_release] <= now) {
		s->next_release++;
		s->recorded_releases++;
		uint64_t held = s->inherited_cur;
		err = as_cuda_release_cached(s);
		if (!s->released && s->inherited_cur < held) {
			s->released = true;
			s->released_at = now;
			s->after_peak = s->reserved_bytes.cur;
		}
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
		    (told && !s->set.expandable && s->set.max_split == NO_LIMIT &&
		     s->reserved_bytes.cur + alloc_size <= s->capacity)) {
			if (served)
				s->recorded_releases++;
			else
				s->in.retries++;
			if ((err = as_cuda_release_cached(s)))
				return err;
		}
	}
	err = AS_OK;
	uint32_t bi = get_free_block(s, p, size, stream);
	bool made = bi == NIL;
	if (bi == NIL) {
		if (s->set.fraction > 0.0 && s->set.gc_threshold > 0.0)
			as_cuda_garbage_collect(s);
		bi = as_cuda_alloc_block(s, p, small, stream, size, alloc_size,
					 false, &err);
		if (bi == NIL && !err &&
		    as_cuda_release_available(s, p, size, stream))
			bi = as_cuda_alloc_block(s, p, small, stream, size,
						 alloc_size, false, &err);
		if (bi == NIL && !err) {
			s->in.model_releases++;
			err = as_cuda_release_cached(s);
			if (!err)
				bi = as_cuda_alloc_block(s, p, small, stream,
							 size, alloc_size, true,
							 &err);
		}
	}
	if (err)
		return err;
	if (bi == NIL) {
		s->num_ooms++;
		as_cuda_oom_record(s, s->now, req, size,
				   device_need(s, size), false);
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
	if (b->size >= s->set.max_split)
		as_cuda_stat_sub(&s->oversize_allocations, 1);
	as_cuda_try_merge(s, bi, s->b[bi].prev);
	as_cuda_try_merge(s, bi, s->b[bi].next);
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
