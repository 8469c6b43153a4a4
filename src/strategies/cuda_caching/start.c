/*
 * cuda-caching: a recording's start and how far the model agrees with it.
 * The state at the start (segments and blocks live at time 0, at their
 * recorded addresses), the steps where the program emptied the cache, the
 * device size the recording tells, and the agreement figures
 * (blocks_reproduced, segments_reproduced, recorded reserved peaks, notes
 * with the first disagreements and their causes, the first divergence).
 */
#include "strategies/cuda_caching/cuda_caching.h"

/* ---- the state at the start of a recording ---- */

/*
 * How far offset `next` of `space` lies past offset `end` (an end, next >=
 * end) in real addresses, through the trace's address map: readers shrink
 * the empty ranges between PyTorch's virtual ranges, which cuda-caching
 * tells apart by their real distance. Offsets the map does not hold (no
 * map) count as addresses. next < end wraps, as the offsets' difference.
 */
static uint64_t real_gap(const struct as_trace *t, uint16_t space,
			 uint64_t end, uint64_t next)
{
	uint64_t ra, rb;
	if (next > end && as_trace_address_of(t, space, end - 1, &ra) &&
	    as_trace_address_of(t, space, next, &rb) && rb > ra)
		return rb - ra - 1;
	return next - end;
}

/*
 * Whether a recorded expandable piece at `addr` belongs to the range that
 * starts at `base` and whose pieces end at `end` so far: less than a device
 * apart from them, and (with a device size) inside the virtual range
 * PyTorch reserves, 1.125 times the device from its base; a range of the
 * other pool or stream starts beyond.
 */
static bool same_range(const struct cc *s, const struct as_trace *t,
		       uint64_t base, uint64_t end, uint64_t addr)
{
	uint64_t apart = s->capacity ? s->capacity : 4ull << 30;
	if (addr > end && real_gap(t, s->space, end, addr) >= apart)
		return false;
	if (!s->capacity || addr <= base)
		return true;
	return real_gap(t, s->space, base + 1, addr) + 1 <
	       s->capacity + s->capacity / 8;
}

/* Recorded segments of `space` live at time 0, by address. */
static bool initial_seg_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->segments[a].addr < t->segments[b].addr;
}

/*
 * A buffer is part of the state at the start when it is live at time step 0
 * at a recorded address (readers of recordings that start mid-run give the
 * blocks allocated before the recording step 0, the trace's own operations
 * later steps) inside a segment live at time 0.
 */
static bool initial_buffer(const struct as_trace *t, uint32_t i,
			   uint16_t space)
{
	const struct as_buffer *b = &t->buffers[i];
	return b->start == 0 && b->space == space &&
	       b->recorded != AS_NO_OFFSET && b->alias_of == AS_NONE;
}

/* A buffer the trace allocates (after time step 0) at a recorded address
 * of `space`. */
static bool later_buffer(const struct as_trace *t, uint32_t i,
			 uint16_t space)
{
	const struct as_buffer *b = &t->buffers[i];
	return b->start > 0 && b->space == space &&
	       b->recorded != AS_NO_OFFSET && b->alias_of == AS_NONE;
}

/* The recorded segment (index) holding addr at time `at`, or NIL. */
static uint32_t recorded_segment(const struct as_trace *t,
				 const uint32_t *by_addr, uint32_t n,
				 uint16_t space, uint64_t addr, uint64_t at)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->segments[by_addr[mid]].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* segments of one address over time: look back a bounded way */
	for (uint32_t k = 0; k < 64 && lo > 0; k++) {
		const struct as_segment *g = &t->segments[by_addr[--lo]];
		if (g->space == space && g->addr <= addr &&
		    addr - g->addr < g->size && g->start <= at &&
		    (at < g->end || g->end == g->start))
			return by_addr[lo];
	}
	return NIL;
}

/*
 * Append a block of kind 'f' (free), 'u' (unmapped) or 'a' (allocated) to
 * segment gi after *prev; a free or unmapped block extends a previous one
 * of the same kind (neighbours of one kind are merged).
 */
static int seed_block(struct cc *s, uint32_t gi, uint32_t *prev,
		      uint64_t addr, uint64_t size, char kind)
{
	if (size == 0)
		return AS_OK;
	if (kind != 'a' && *prev != NIL) {
		struct block *p = &s->b[*prev];
		if (!p->allocated && p->mapped == (kind == 'f') &&
		    p->addr + p->size == addr) {
			p->size += size;
			return AS_OK;
		}
	}
	uint32_t bi = as_cuda_block_new(s);
	if (bi == NIL)
		return AS_ENOMEM;
	struct segment *g = &s->s[gi];
	struct block *b = &s->b[bi];
	b->addr = addr;
	b->size = size;
	b->seg = gi;
	b->stream = g->stream;
	b->small = g->small;
	b->mapped = kind != 'u';
	b->allocated = kind == 'a';
	b->prev = *prev;
	if (*prev != NIL)
		s->b[*prev].next = bi;
	else
		g->first = bi;
	*prev = bi;
	return AS_OK;
}

static bool recorded_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return t->buffers[a].recorded < t->buffers[b].recorded;
}

/* The recorded pieces v[i, j) of one segment (or one expandable range). */
struct seed_range {
	const struct as_segment *const *pieces;
	uint32_t n;
	/* the trace's own allocations of the space, by recorded address */
	const uint32_t *later;
	uint32_t nlater;
	uint64_t base, end;     /* recorded addresses */
	bool expandable, small;
	uint16_t stream;
};

/*
 * Where the trace's first allocation into the recorded free range [lo, hi)
 * landed before time `before`, or hi. The allocator takes the low end of a
 * free block: a free block began there at the first event.
 */
static uint64_t first_landing(const struct as_trace *t,
			      const struct seed_range *r, uint64_t lo,
			      uint64_t hi, uint64_t before)
{
	uint32_t a = 0, b = r->nlater;
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (t->buffers[r->later[mid]].recorded < lo)
			a = mid + 1;
		else
			b = mid;
	}
	uint64_t first = before, at = hi;
	for (; a < r->nlater && t->buffers[r->later[a]].recorded < hi; a++)
		if (t->buffers[r->later[a]].start < first) {
			first = t->buffers[r->later[a]].start;
			at = t->buffers[r->later[a]].recorded;
		}
	return at;
}

/*
 * Fill model segment gi (at model address `at`) with the recorded range's
 * blocks: the buffers bufs[*k...] that lie in it at their recorded offsets,
 * free space between them, and (expandable) unmapped holes.
 */
static int seed_blocks(struct cc *s, const struct as_trace *t, uint32_t gi,
		       const struct seed_range *r, const uint32_t *bufs,
		       uint32_t nb, uint32_t *k)
{
	uint32_t prev = NIL;
	int err = AS_OK;
	uint64_t at = r->base; /* recorded address covered so far */
	uint64_t model = s->s[gi].addr;
	while (*k < nb && t->buffers[bufs[*k]].recorded < r->base)
		(*k)++;
	for (uint32_t p = 0, q; !err && p < r->n; p = q) {
		/* a run of touching pieces is one mapped stretch */
		uint64_t pa = r->pieces[p]->addr;
		uint64_t pe = pa + r->pieces[p]->size;
		for (q = p + 1; q < r->n && r->pieces[q]->addr <= pe; q++)
			if (r->pieces[q]->addr + r->pieces[q]->size > pe)
				pe = r->pieces[q]->addr + r->pieces[q]->size;
		if (pe <= at)
			continue;
		if (pa > at)
			err = seed_block(s, gi, &prev, at - r->base + model,
					 pa - at, 'u');
		if (pa > at)
			at = pa;
		for (; !err && *k < nb && t->buffers[bufs[*k]].recorded < pe;
		     (*k)++) {
			uint32_t buf = bufs[*k];
			const struct as_buffer *bb = &t->buffers[buf];
			uint64_t size = as_cuda_round_size(s, bb->size);
			/* overlapping the previous one or sticking out of
			 * the mapped stretch: the replay places it anew */
			if (bb->recorded < at || size > pe - bb->recorded)
				continue;
			err = seed_block(s, gi, &prev, at - r->base + model,
					 bb->recorded - at, 'f');
			/* a tail the allocator would not have split off
			 * belongs to the block */
			uint64_t next = pe;
			if (*k + 1 < nb &&
			    t->buffers[bufs[*k + 1]].recorded < pe)
				next = t->buffers[bufs[*k + 1]].recorded;
			uint64_t gap = next > bb->recorded + size
					       ? next - bb->recorded - size
					       : 0;
			bool large = !s->s[gi].small && !s->set.expandable &&
				     !s->s[gi].expandable;
			if (gap && (!large ? gap < MIN_BLOCK
					   : gap <= SMALL_SIZE)) {
				size += gap;
			} else if (gap && large) {
				/* no large-pool block is 1 MiB or less: a
				 * free block the trace first takes within
				 * 1 MiB after this one leaves it the rest */
				uint64_t lo = bb->recorded + size;
				uint64_t x = first_landing(t, r, lo, next,
							   bb->end);
				if (x > lo && x - lo <= SMALL_SIZE) {
					size += x - lo;
					s->in.tails++;
				}
			}
			if (!err)
				err = seed_block(s, gi, &prev,
						 bb->recorded - r->base + model,
						 size, 'a');
			if (err)
				break;
			struct block *b = &s->b[prev];
			b->stream = bb->stream;
			s->initial[as_cuda_slot(s, buf)] = SEEDED;
			s->in.blocks++;
			as_cuda_account_alloc(s, prev, buf,
					      as_cuda_requested_of(t, buf));
			at = bb->recorded + size;
		}
		if (!err && at < pe)
			err = seed_block(s, gi, &prev, at - r->base + model,
					 pe - at, 'f');
		if (at < pe)
			at = pe;
	}
	if (!err && at < r->end)
		err = seed_block(s, gi, &prev, at - r->base + model,
				 r->end - at, 'u');
	uint64_t mapped = 0;
	for (uint32_t x = s->s[gi].first; x != NIL; x = s->b[x].next)
		if (s->b[x].mapped) {
			mapped += s->b[x].size;
			s->s[gi].hiwater = s->b[x].addr + s->b[x].size -
					   s->s[gi].addr;
		}
	s->s[gi].mapped = mapped;
	/* taken as recorded: inherited, not made by the model */
	s->s[gi].inherited = mapped;
	s->inherited_cur += mapped;
	s->inherited_start += mapped;
	as_cuda_stat_add(&s->reserved_bytes, mapped);
	/* pool the free blocks now that the neighbours are known */
	for (uint32_t x = s->s[gi].first; !err && x != NIL; x = s->b[x].next)
		if (!s->b[x].allocated)
			err = as_cuda_pool_insert(s, x);
	return err;
}

/* Whether a recorded range holds small-pool blocks. */
static bool range_is_small(const struct cc *s, const struct as_trace *t,
			   const struct seed_range *r, const uint32_t *bufs,
			   uint32_t nb, uint32_t k)
{
	for (; k < nb && t->buffers[bufs[k]].recorded < r->end; k++)
		if (t->buffers[bufs[k]].recorded >= r->base)
			return as_cuda_round_size(s,
						  t->buffers[bufs[k]].size) <=
			       SMALL_SIZE;
	if (!r->expandable)
		return r->end - r->base == SMALL_BUFFER;
	for (uint32_t p = 0; p < r->n; p++)
		if (r->pieces[p]->size % s->set.large_seg)
			return true;
	return false;
}

static int seed_state(struct cc *s, const struct as_trace *t, uint16_t space)
{
	uint32_t n = 0, np = 0, nb = 0;
	for (uint32_t i = 0; i < t->nsegments; i++)
		n += t->segments[i].space == space &&
		     t->segments[i].start == 0;
	if (!n)
		return AS_OK;
	uint32_t nl = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		np += initial_buffer(t, i, space);
		nl += later_buffer(t, i, space);
	}
	uint32_t *v = malloc((size_t)n * sizeof(*v));
	const struct as_segment **pv = malloc((size_t)n * sizeof(*pv));
	uint32_t *bufs = malloc(((size_t)np + 1) * sizeof(*bufs));
	uint32_t *later = malloc(((size_t)nl + 1) * sizeof(*later));
	int err = v && pv && bufs && later ? AS_OK : AS_ENOMEM;
	n = 0;
	for (uint32_t i = 0; !err && i < t->nsegments; i++)
		if (t->segments[i].space == space && t->segments[i].start == 0)
			v[n++] = i;
	nl = 0;
	for (uint32_t i = 0; !err && i < t->nbuffers; i++) {
		if (initial_buffer(t, i, space))
			bufs[nb++] = i;
		if (later_buffer(t, i, space))
			later[nl++] = i;
	}
	if (!err)
		err = as_sort_u32(v, n, initial_seg_less, t);
	if (!err)
		err = as_sort_u32(bufs, nb, recorded_less, t);
	if (!err)
		err = as_sort_u32(later, nl, recorded_less, t);
	for (uint32_t i = 0; !err && i < n; i++)
		pv[i] = &t->segments[v[i]];
	/* ranges of an expandable segment: pieces of one stream in one
	 * virtual range (same_range) */
	uint32_t k = 0;
	for (uint32_t i = 0, j; !err && i < n; i = j) {
		struct seed_range r = {.pieces = pv + i, .later = later,
				       .nlater = nl, .base = pv[i]->addr,
				       .stream = pv[i]->stream,
				       .expandable = (pv[i]->flags &
						      AS_SEG_EXPANDABLE) != 0};
		r.end = r.base + pv[i]->size;
		for (j = i + 1; r.expandable && j < n &&
				(pv[j]->flags & AS_SEG_EXPANDABLE) &&
				pv[j]->stream == r.stream &&
				same_range(s, t, r.base, r.end, pv[j]->addr);
		     j++)
			if (pv[j]->addr + pv[j]->size > r.end)
				r.end = pv[j]->addr + pv[j]->size;
		r.n = j - i;
		r.small = range_is_small(s, t, &r, bufs, nb, k);
		uint64_t page = r.small ? SMALL_BUFFER : s->set.large_seg;
		uint64_t size = r.end - r.base;
		if (r.expandable) {
			uint64_t va = s->capacity ? s->capacity + s->capacity / 8
						  : DEFAULT_VA;
			if (va < size)
				va = size;
			size = as_cuda_round_up(va, page);
			r.end = r.base + size;
		}
		uint64_t addr = s->va_next;
		/* a range no device could hold is left out: its buffers are
		 * placed by the replay */
		if (size > MAX_BYTES ||
		    (r.expandable && size > UINT64_MAX / 2 - s->va_next) ||
		    (!r.expandable &&
		     !as_cuda_device_take(s, size, s->addr_bound, &addr)))
			continue;
		uint32_t gi = as_cuda_segment_new(s);
		if (gi == NIL) {
			err = AS_ENOMEM;
			break;
		}
		if (r.expandable)
			s->va_next += size;
		else if (addr + size > s->dev_top)
			s->dev_top = addr + size;
		s->s[gi] = (struct segment){.addr = addr, .size = size,
					    .stream = r.stream,
					    .small = r.small,
					    .expandable = r.expandable,
					    .live = 1, .initial = 1,
					    .page = page, .first = NIL,
					    .key = s->whatif ? addr : r.base};
		s->in.segments++;
		if (!r.expandable) {
			as_cuda_stat_add(&s->segment, 1);
			if (size >= s->set.max_split)
				as_cuda_stat_add(&s->oversize_segments, 1);
		}
		err = as_cuda_key_add(s, gi);
		if (!err)
			err = seed_blocks(s, t, gi, &r, bufs, nb, &k);
	}
	free(v);
	free(pv);
	free(bufs);
	free(later);
	return err;
}

/* ---- what the recording tells: the device's size, emptied caches ---- */

/* Append `time` to the array *v of *n (capacity *cap). */
static int add_step(uint64_t **v, uint32_t *n, uint32_t *cap, uint64_t time)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		uint64_t *x = realloc(*v, (size_t)c * sizeof(*x));
		if (!x || c < *cap)
			return AS_ENOMEM;
		*v = x;
		*cap = c;
	}
	(*v)[(*n)++] = time;
	return AS_OK;
}

static uint64_t recorded_peak(const struct as_trace *t, uint16_t space);

/*
 * The steps at which the recording gave cached segments back
 * (as_trace_release_steps), told apart:
 *  - a recorded OOM at that step: replayed from its mark;
 *  - segments given back, then one reserved at the same step, that would
 *    not have fitted beside what was reserved before under the most the
 *    recording ever reserved: the allocator retried a failed cudaMalloc
 *    (release_available_cached_blocks or release_cached_blocks, then
 *    alloc_block again), or the program emptied the cache right before a
 *    request no cached block served. s->maybe_at: the replay tells them
 *    apart (a cached block that serves the request means no cudaMalloc
 *    was tried);
 *  - else the program emptied the cache (torch.cuda.empty_cache(), or a
 *    release the settings do not explain): s->release_at, replayed as
 *    such. A garbage collection (with garbage_collection_threshold) gives
 *    old segments back before a cudaMalloc, not the whole cache: not
 *    replayed.
 * And the device's size as the recording tells it (as_trace_device_limit)
 * when no option or space gave one.
 */
static int recorded_capacity(struct cc *s, const struct as_trace *t,
			     uint16_t space)
{
	struct as_release_step *r = NULL;
	uint32_t n = 0, cap = 0, mcap = 0;
	uint64_t peak = recorded_peak(t, space);
	int err = as_trace_release_steps(t, space, &r, &n);
	for (uint32_t k = 0; !err && k < n; k++) {
		if (r[k].oom)
			continue;
		/*
		 * A what-if reads no sizes: a release with nothing reserved
		 * at its step is the program's empty_cache(); one before a
		 * cudaMalloc (a retry, or the program's) is left to the
		 * model, which retries when its own device is full.
		 */
		if (s->whatif) {
			if (r[k].started)
				s->in.left++;
			else
				err = add_step(&s->release_at, &s->nrelease,
					       &cap, r[k].time);
			continue;
		}
		if (r[k].started && r[k].before + r[k].started > peak)
			err = add_step(&s->maybe_at, &s->nmaybe, &mcap,
				       r[k].time);
		else if (!r[k].started || s->set.gc_threshold <= 0.0)
			err = add_step(&s->release_at, &s->nrelease, &cap,
				       r[k].time);
	}
	free(r);
	s->in.empty_cache = s->nrelease;
	if (err || s->capacity || s->opt_capacity)
		return err;
	if ((err = as_trace_device_limit(t, space, &s->cap)))
		return err;
	s->capacity = s->cap.bytes > MAX_BYTES ? MAX_BYTES : s->cap.bytes;
	return AS_OK;
}

/* The order key of a new segment no recorded one stands for: above every
 * recorded address and every key the start gave. */
static void set_key_base(struct cc *s, const struct as_trace *t,
			 uint16_t space)
{
	uint64_t top = 0;
	/* a what-if orders every segment by the model's own address */
	if (s->whatif) {
		s->key_base = 0;
		return;
	}
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *g = &t->segments[i];
		if (g->space == space && g->addr + g->size > top)
			top = g->addr + g->size;
	}
	for (uint32_t i = 0; i < s->ns; i++)
		if (s->s[i].key + s->s[i].size > top)
			top = s->s[i].key + s->s[i].size;
	s->key_base = top ? as_cuda_round_up(top, ROUND_LARGE) : 0;
	/* model addresses stay below 2^61: keys do not wrap */
	if (s->key_base > (1ull << 62))
		s->key_base = 1ull << 62;
}

/*
 * Whether this run is a what-if: settings other than the recording's (its
 * allocator_settings, else PyTorch's defaults), or a capacity option other
 * than the device size the recording tells. Only a trace that recorded
 * something beyond requests and frees (segments, OOMs) has a difference
 * to make.
 */
static int decide_whatif(struct cc *s, const struct as_trace *t,
			 uint16_t space, const struct cc_settings *rec)
{
	size_t n = as_cuda_settings_differ(&s->set, rec, s->differs,
					   sizeof(s->differs));
	s->ndiffer = (uint32_t)n;
	if (!n && s->opt_capacity) {
		struct as_limit l;
		int err = as_trace_device_limit(t, space, &l);
		if (err)
			return err;
		if (l.bytes != s->capacity) {
			snprintf(s->differs, sizeof(s->differs), "capacity");
			n = 1;
		}
	}
	s->whatif = n > 0;
	return AS_OK;
}

/* oversize_segments and oversize_allocations under this run's split
 * limit (the start was seeded under the recording's). */
static void recount_oversize(struct cc *s)
{
	uint64_t segs = 0, allocs = 0;
	for (uint32_t i = 0; i < s->ns; i++) {
		const struct segment *g = &s->s[i];
		if (!g->live || g->expandable)
			continue;
		segs += g->size >= s->set.max_split;
		for (uint32_t x = g->first; x != NIL; x = s->b[x].next)
			allocs += s->b[x].allocated &&
				  s->b[x].size >= s->set.max_split;
	}
	s->oversize_segments = (struct as_cuda_stat){segs, segs};
	s->oversize_allocations = (struct as_cuda_stat){allocs, allocs};
}

int as_cuda_start(void *state, const struct as_trace *t, uint16_t space,
		  uint32_t case_index, struct as_diag *diag)
{
	struct cc *s = state;
	(void)diag;
	s->t = t;
	s->space = space;
	s->is_first_case = case_index == 0;
	if (s->opt_capacity)
		s->cap = (struct as_limit){s->capacity, 0, AS_LIMIT_OPTION};
	if (space < t->nspaces && t->spaces[space].capacity) {
		s->addr_bound = t->spaces[space].capacity;
		if (!s->opt_capacity) {
			s->capacity = t->spaces[space].capacity;
			s->cap = (struct as_limit){s->capacity, 0,
						   AS_LIMIT_SPACE};
		}
	}
	struct cc_settings rec;
	as_cuda_settings_default(&rec);
	if (t->metadata) {
		as_cuda_apply_settings(&s->set, &s->opts, t->metadata);
		as_cuda_apply_settings(&rec, NULL, t->metadata);
	}
	int err = as_cuda_ensure_arrays(s, t);
	if (!err)
		err = decide_whatif(s, t, space, &rec);
	if (!err && case_index == 0 && t->nsegments)
		err = recorded_capacity(s, t, space);
	if (!err && case_index == 0) {
		/* the state at the start is the recording's: its blocks took
		 * their sizes under the recorded settings */
		struct cc_settings mine = s->set;
		s->set = rec;
		err = seed_state(s, t, space);
		s->set = mine;
		recount_oversize(s);
	}
	/* the reserved peak may be the state at the start */
	s->seen_peak = s->reserved_bytes.peak;
	s->alloc_at_peak = s->allocated_bytes.cur;
	if (!err && t->nsegments) {
		set_key_base(s, t, space);
		if (!s->whatif && !(s->rec_taken = calloc(t->nsegments, 1)))
			err = AS_ENOMEM;
	}
	return err;
}

/* ---- the device size a run used ---- */

static const char *const dev_capacity_keys[MAX_DEV_KEYS] = {
	"capacity.space0", "capacity.space1", "capacity.space2",
	"capacity.space3", "capacity.space4", "capacity.space5",
	"capacity.space6", "capacity.space7",
};

/* Stats `capacity` (summed over devices) and capacity.spaceN, and a note
 * (AS_NOTE_CAPACITY) with where it came from; nothing when unlimited. */
void as_cuda_capacity_note(struct cc *s, struct as_plan *p)
{
	if (s->cap.from == AS_LIMIT_NONE || !s->capacity || !s->t)
		return;
	struct as_limit l = s->cap;
	l.bytes = s->capacity;
	char opt[48];
	snprintf(opt, sizeof(opt), "capacity=%" PRIu64, s->capacity);
	as_plan_note_limit(p, as_trace_space_name(s->t, s->space), opt, &l);
	as_cuda_stat_sum(s, p, "capacity", s->capacity);
	if (s->space < MAX_DEV_KEYS)
		as_plan_stat_int(p, dev_capacity_keys[s->space], s->capacity);
}

/* ---- agreement with the recording ---- */

static const char *const dev_recorded_keys[MAX_DEV_KEYS] = {
	"recorded_reserved_peak.space0", "recorded_reserved_peak.space1",
	"recorded_reserved_peak.space2", "recorded_reserved_peak.space3",
	"recorded_reserved_peak.space4", "recorded_reserved_peak.space5",
	"recorded_reserved_peak.space6", "recorded_reserved_peak.space7",
};

/* The recorded reserved peak of a space (sum of live segments). */
static uint64_t recorded_peak(const struct as_trace *t, uint16_t space)
{
	uint64_t *peaks = calloc((size_t)t->nspaces + 1, sizeof(*peaks));
	uint64_t peak = 0;
	if (peaks && space < t->nspaces &&
	    as_trace_reserved_peaks(t, peaks) == AS_OK)
		peak = peaks[space];
	free(peaks);
	return peak;
}

static bool addr_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	if (t->segments[a].addr != t->segments[b].addr)
		return t->segments[a].addr < t->segments[b].addr;
	return t->segments[a].start < t->segments[b].start;
}

/*
 * Why buffer i landed elsewhere than in the recording. Later disagreements
 * usually follow the first one (the model's state differs from then on);
 * the first gets a cause.
 */
static const char *why(const struct cc *s, const struct as_trace *t,
		       uint32_t i, const struct as_segment *rg, bool first,
		       bool below)
{
	const struct as_buffer *b = &t->buffers[i];
	uint32_t slot = as_cuda_slot(s, i);
	if (s->seg_size[slot] == 0)
		return "the model ran out of memory";
	/* a device size is not a setting of the allocator */
	for (uint32_t k = 0; k < s->opts.n; k++)
		if (s->opts.kv[k].from_spec &&
		    strcmp(s->opts.kv[k].key, "capacity") != 0)
			return "the model runs with other settings than the "
			       "recording";
	if (below)
		return "the recorded allocator mapped pages below the lowest "
		       "one its range had mapped at the start";
	if (!first)
		return "follows an earlier disagreement";
	if (b->stream != 0)
		return "stream reuse: blocks are kept per stream";
	/* a block the program had let go of but the allocator had not
	 * (record_stream, stream events) */
	for (uint32_t j = 0; t->info && j < i; j++)
		if (t->buffers[j].space == b->space &&
		    t->info[j].free_requested < b->start &&
		    b->start < t->buffers[j].end)
			return "record_stream or stream events delayed a free";
	if (rg->start == 0 && !(s->initial[slot] & IN_INITIAL_SEG))
		return "the recorded allocator reused memory cached before "
		       "the recording (ring buffer truncation?)";
	if (rg->start > 0 && rg->start == b->start)
		return "the recorded allocator made a new segment where the "
		       "model reused a cached block (release, empty_cache or "
		       "version differences)";
	return "a different block was chosen (version differences, or state "
	       "from before the recording)";
}

/*
 * Agreement with the recording: per buffer allocated during the trace with
 * a recorded address, the same segment size and the same offset inside it.
 */
/*
 * Buffer i against the recording (its segment rg at recorded address
 * `raddr`, the block at roff of rsize bytes, rexp: an expandable range):
 * counted in d, and d's first divergence when it is earlier than the one
 * d holds. A model block stands in the recorded segment whose address its
 * segment's key is (seeded from it, or the address the recording's
 * cudaMalloc gave at the same step).
 */
static void diverge(const struct cc *s, struct as_divergence *d, uint32_t i,
		    const struct as_segment *rg, uint64_t raddr, uint64_t roff,
		    uint64_t rsize, bool rexp, bool rnew)
{
	const struct as_trace *t = s->t;
	const struct as_buffer *b = &t->buffers[i];
	uint32_t slot = as_cuda_slot(s, i);
	uint8_t f = s->initial[slot];
	struct as_div_side m = {
		.segment = s->seg_key && s->seg_key[slot] < s->key_base
				   ? s->seg_key[slot]
				   : AS_NO_OFFSET,
		.segment_size = s->seg_size[slot],
		.offset = s->seg_off[slot],
		.small = (f & IN_SMALL_POOL) != 0,
		.new_segment = (f & MADE_SEGMENT) != 0,
		.expandable = (f & IN_EXPANDABLE) != 0,
	};
	struct as_div_side r = {
		.segment = raddr,
		.segment_size = rsize,
		.offset = roff,
		/* a 2 MiB cudaMalloc is a small pool's; else the request */
		.small = !rexp ? rg->size == SMALL_BUFFER
			       : as_cuda_round_size(s, as_cuda_requested_of(
							       t, i)) <=
					 SMALL_SIZE,
		.new_segment = rnew,
		.expandable = rexp,
	};
	if (!m.segment_size)
		m.small = r.small; /* no block: no pool to tell */
	enum as_div_kind k = AS_DIV_NONE;
	if (!m.segment_size)
		k = AS_DIV_OUT_OF_MEMORY;
	else if (m.small != r.small)
		k = AS_DIV_POOL;
	else if (m.new_segment != r.new_segment)
		k = AS_DIV_NEW_SEGMENT;
	else if (m.expandable != r.expandable ||
		 (!r.expandable && m.segment_size != r.segment_size))
		k = AS_DIV_SEGMENT_SIZE;
	else if (!r.expandable && m.segment != r.segment)
		k = AS_DIV_BLOCK;
	else if (m.offset != r.offset)
		k = AS_DIV_OFFSET;
	d->compared++;
	if (k == AS_DIV_NONE) {
		d->agree++;
		return;
	}
	if (d->kind != AS_DIV_NONE && d->time <= b->start)
		return;
	d->kind = k;
	d->buffer = i;
	d->space = s->space;
	d->time = b->start;
	d->model = m;
	d->recorded = r;
	snprintf(d->cause, sizeof(d->cause), "%s",
		 why(s, t, i, rg, true, rexp && roff > rsize));
}

/* The key the divergence is attached to a plan under (as_plan_attach). */
#define DIVERGENCE "cuda-caching:divergence"

const struct as_divergence *as_plan_divergence(const struct as_plan *p)
{
	return as_plan_attached(p, DIVERGENCE);
}

const char *as_div_kind_name(enum as_div_kind k)
{
	switch (k) {
	case AS_DIV_NONE:
		return "none";
	case AS_DIV_OUT_OF_MEMORY:
		return "out of memory";
	case AS_DIV_POOL:
		return "pool";
	case AS_DIV_NEW_SEGMENT:
		return "new segment or cached block";
	case AS_DIV_SEGMENT_SIZE:
		return "segment size";
	case AS_DIV_BLOCK:
		return "block chosen";
	case AS_DIV_OFFSET:
		return "offset";
	}
	return "?";
}

void as_cuda_agreement(struct cc *s, struct as_plan *p)
{
	const struct as_trace *t = s->t;
	if (!t || !t->nsegments)
		return;
	/* one divergence per plan, the earliest over its spaces */
	const struct as_divergence none = {.buffer = AS_NONE};
	struct as_divergence *div =
		as_plan_attach(p, DIVERGENCE, &none, sizeof(none));
	uint32_t *by = malloc(((size_t)t->nsegments + 1) * sizeof(*by));
	if (!by)
		return;
	for (uint32_t i = 0; i < t->nsegments; i++)
		by[i] = i;
	if (as_sort_u32(by, t->nsegments, addr_less, t) != AS_OK) {
		free(by);
		return;
	}
	/*
	 * Expandable ranges map their pages from the base up, lowest
	 * unmapped first: every address ever mapped in a range lies in one
	 * run from its base. Runs of recorded pieces give the bases.
	 */
	uint64_t (*runs)[3] = malloc(((size_t)t->nsegments + 1) *
				     sizeof(*runs));
	uint32_t nruns = 0;
	/* pieces of one range as seeding has them (same_range: a hole in
	 * the middle may never be mapped while recording) */
	for (uint32_t k = 0; runs && k < t->nsegments; k++) {
		const struct as_segment *g = &t->segments[by[k]];
		if (g->space != s->space || !(g->flags & AS_SEG_EXPANDABLE))
			continue;
		if (nruns && same_range(s, t, runs[nruns - 1][0],
					runs[nruns - 1][1], g->addr)) {
			if (g->addr + g->size > runs[nruns - 1][1])
				runs[nruns - 1][1] = g->addr + g->size;
			if (g->start == 0 && g->addr < runs[nruns - 1][2])
				runs[nruns - 1][2] = g->addr;
			continue;
		}
		runs[nruns][0] = g->addr;
		runs[nruns][1] = g->addr + g->size;
		runs[nruns++][2] = g->start == 0 ? g->addr : UINT64_MAX;
	}
	uint64_t compared = 0, same = 0, seg_same = 0, notes = 0;
	for (uint32_t slot = 0; s->seg_size && slot < as_cuda_nslots(s);
	     slot++) {
		uint32_t i = as_cuda_buf(s, slot);
		const struct as_buffer *b = &t->buffers[i];
		/* blocks from before the recording are the start, not the
		 * replay */
		if (b->space != s->space || b->start == 0 ||
		    b->recorded == AS_NO_OFFSET || b->alias_of != AS_NONE)
			continue;
		uint32_t g = recorded_segment(t, by, t->nsegments, s->space,
					      b->recorded, b->start);
		if (g == NIL)
			continue;
		const struct as_segment *rg = &t->segments[g];
		compared++;
		uint64_t roff = b->recorded - rg->addr, rsize = rg->size;
		bool rexp = (rg->flags & AS_SEG_EXPANDABLE) && runs;
		uint32_t k = slot;
		bool mexp = (s->initial[k] & IN_EXPANDABLE) != 0;
		if (rexp) {
			uint32_t lo = 0, hi = nruns;
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (runs[mid][0] <= b->recorded)
					lo = mid + 1;
				else
					hi = mid;
			}
			/* a range live at the start is measured from its
			 * lowest page mapped then, as seeding has it (pages
			 * mapped below it later are out of the model's
			 * reach); a later one from its lowest page */
			if (lo > 0) {
				uint64_t base = runs[lo - 1][2] != UINT64_MAX
							? runs[lo - 1][2]
							: runs[lo - 1][0];
				roff = b->recorded - base;
				rsize = runs[lo - 1][1] - base;
			}
		}
		/* an expandable range has no one size: the offset from its
		 * base tells */
		bool ss = rexp || mexp ? rexp == mexp
				       : s->seg_size[k] == rg->size;
		bool so = ss && s->seg_off[k] == roff;
		seg_same += ss;
		same += so;
		/* memory reserved for it: its segment, or (expandable) a page
		 * mapped at its step under its last byte */
		bool rnew = rg->start == b->start;
		if (rexp && !rnew) {
			uint64_t n = as_cuda_round_size(
				s, as_cuda_requested_of(t, i));
			uint32_t g2 = recorded_segment(t, by, t->nsegments,
						       s->space,
						       b->recorded + n - 1,
						       b->start);
			rnew = g2 != NIL && t->segments[g2].start == b->start;
		}
		if (div)
			diverge(s, div, i, rg,
				rexp ? b->recorded - roff : rg->addr, roff,
				rsize, rexp, rnew);
		if (!so && notes < 8) {
			char line[512];
			snprintf(line, sizeof(line),
				 "%s: buffer %s (#%u, %" PRIu64
				 " B) model segment %" PRIu64 " +%" PRIu64
				 ", recorded segment %" PRIu64 " %+" PRId64
				 ": %s",
				 t->spaces[s->space].name, b->name, i, b->size,
				 s->seg_size[k], s->seg_off[k], rsize,
				 (int64_t)roff,
				 why(s, t, i, rg, notes == 0,
				     rexp && roff > rsize));
			as_plan_note(p, line);
			as_cuda_emitf(s, "disagreement %s", line);
			notes++;
		}
	}
	free(by);
	free(runs);
	if (div)
		div->same_place += same;
	as_cuda_stat_sum(s, p, "blocks_compared", compared);
	as_cuda_stat_sum(s, p, "blocks_same_place", same);
	as_cuda_stat_sum(s, p, "blocks_same_segment_size", seg_same);
	double c = 0, a = 0, z = 0;
	for (uint32_t k = 0; k < p->nstats; k++) {
		if (strcmp(p->stats[k].key, "blocks_compared") == 0)
			c = p->stats[k].value;
		if (strcmp(p->stats[k].key, "blocks_same_place") == 0)
			a = p->stats[k].value;
		if (strcmp(p->stats[k].key, "blocks_same_segment_size") == 0)
			z = p->stats[k].value;
	}
	/* nothing to compare (a snapshot without a trace): no fraction */
	if (c > 0) {
		as_plan_stat(p, "blocks_reproduced", a / c);
		as_plan_stat(p, "segments_reproduced", z / c);
	}
	uint64_t rp = recorded_peak(t, s->space);
	if (s->space < MAX_DEV_KEYS)
		as_plan_stat_int(p, dev_recorded_keys[s->space], rp);
	as_cuda_stat_sum(s, p, "recorded_reserved_peak", rp);
}
