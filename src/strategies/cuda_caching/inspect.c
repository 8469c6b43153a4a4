/*
 * cuda-caching: looking at the state. walk (blocks in address order),
 * query (dump, stats), the plan's statistics as torch.cuda.memory_stats()
 * names them (and the note on what a run read from a recording), and check
 * (every invariant, reported as a count and a first message).
 */
#include "strategies/cuda_caching/cuda_caching.h"

/* ---- walk ---- */

static bool seg_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct cc *s = ctx;
	return s->s[a].addr < s->s[b].addr;
}

typedef bool (*seg_walk_fn)(void *ctx, const struct segment *g,
			    const struct block *b);

/* Segments in address order, and each one's blocks in address order;
 * false when fn stopped it. */
static bool seg_walk(const struct cc *s, seg_walk_fn fn, void *ctx)
{
	uint32_t *v = malloc(((size_t)s->ns + 1) * sizeof(*v));
	if (!v)
		return true;
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->ns; i++)
		if (s->s[i].live)
			v[n++] = i;
	bool go = true;
	if (as_sort_u32(v, n, seg_less, s) == AS_OK)
		for (uint32_t i = 0; go && i < n; i++) {
			const struct segment *g = &s->s[v[i]];
			for (uint32_t x = g->first; go && x != NIL;
			     x = s->b[x].next)
				go = fn(ctx, g, &s->b[x]);
		}
	free(v);
	return go;
}

struct walk_ctx {
	uint16_t space;
	as_block_fn visit;
	void *ctx;
	const struct as_trace *t;
};

static const char *region_of(const struct segment *g, const struct block *b)
{
	if (!b->mapped)
		return "unmapped";
	if (g->expandable)
		return g->small ? "expandable small" : "expandable large";
	return g->small ? "small segment" : "large segment";
}

static bool walk_one(void *ctx, const struct segment *g,
		     const struct block *b)
{
	struct walk_ctx *w = ctx;
	struct as_block blk = {
		.offset = b->addr,
		.size = b->size,
		.requested = b->allocated && w->t && b->buf < w->t->nbuffers
				     ? as_cuda_requested_of(w->t, b->buf)
				     : 0,
		.buffer = b->allocated ? b->buf : AS_NONE,
		.bin = -1,
		.region = region_of(g, b),
		.in_use = b->allocated,
	};
	return w->visit(w->ctx, w->space, &blk);
}

/* The blocks of every segment in address order (model addresses). */
bool as_cuda_walk(void *state, uint16_t space, as_block_fn visit, void *ctx)
{
	const struct cc *s = state;
	struct walk_ctx w = {space, visit, ctx, s->t};
	return seg_walk(s, walk_one, &w);
}

/* ---- queries and stats ---- */

static bool dump_one(void *ctx, const struct segment *g,
		     const struct block *b)
{
	struct cc *s = ctx;
	uint64_t sa = g->addr, ss = g->size, a = b->addr, n = b->size;
	char st = !b->mapped ? 'u' : b->allocated ? 'a' : 'f';
	as_cuda_emitf(s,
		      "  segment 0x%" PRIx64 "+%" PRIu64 ": block +0x%" PRIx64
		      " %" PRIu64 " %s",
		      sa, ss, a - sa, n,
		      st == 'a'   ? "allocated"
		      : st == 'f' ? "free"
				  : "unmapped");
	return true;
}

static void emit_stats(struct cc *s)
{
	as_cuda_emitf(s,
		      "allocated_bytes=%" PRIu64 " (peak %" PRIu64
		      ") reserved_bytes=%" PRIu64 " (peak %" PRIu64
		      ") segments=%" PRIu64 " inactive_split_bytes=%" PRIu64
		      " num_alloc_retries=%" PRIu64 " num_ooms=%" PRIu64,
		      s->allocated_bytes.cur, s->allocated_bytes.peak,
		      s->reserved_bytes.cur, s->reserved_bytes.peak,
		      s->segment.cur, s->inactive_split_bytes.cur,
		      s->num_alloc_retries, s->num_ooms);
}

void as_cuda_query(void *state, enum as_query q)
{
	struct cc *s = state;
	switch (q) {
	case AS_Q_DUMP:
		as_cuda_emitf(s, "cuda-caching state:");
		seg_walk(s, dump_one, s);
		emit_stats(s);
		break;
	case AS_Q_STATS:
	case AS_Q_CURR:
		emit_stats(s);
		break;
	case AS_Q_RENDER:
		break;
	}
}

/* Add to a stat summed over spaces (space 0 starts it afresh). */
void as_cuda_stat_sum(struct cc *s, struct as_plan *p, const char *key,
		      uint64_t v)
{
	/* one scan: thousands of spaces each add to every key */
	for (uint32_t i = 0; s->space > 0 && i < p->nstats; i++)
		if (p->stats[i].key == key || strcmp(p->stats[i].key, key) == 0) {
			p->stats[i].value = (double)((uint64_t)p->stats[i].value +
						     v);
			return;
		}
	as_plan_stat_int(p, key, v);
}

static const char *const dev_reserved_keys[MAX_DEV_KEYS] = {
	"reserved_bytes.peak.space0", "reserved_bytes.peak.space1",
	"reserved_bytes.peak.space2", "reserved_bytes.peak.space3",
	"reserved_bytes.peak.space4", "reserved_bytes.peak.space5",
	"reserved_bytes.peak.space6", "reserved_bytes.peak.space7",
};

/* Per device figures `tune` reads (keys are literals: plan stats keep
 * the pointer). */
#define DEV_KEYS(k)                                                        \
	{                                                                  \
		k ".space0", k ".space1", k ".space2", k ".space3",        \
			k ".space4", k ".space5", k ".space6", k ".space7" \
	}
static const char *const dev_made_keys[MAX_DEV_KEYS] =
	DEV_KEYS("reserved_made");
static const char *const dev_inherited_keys[MAX_DEV_KEYS] =
	DEV_KEYS("reserved_inherited");
static const char *const dev_after_keys[MAX_DEV_KEYS] =
	DEV_KEYS("reserved_peak_after_release");
static const char *const dev_released_keys[MAX_DEV_KEYS] =
	DEV_KEYS("inherited_released_at");
static const char *const dev_frag_keys[MAX_DEV_KEYS] =
	DEV_KEYS("fragmentation_at_peak");
static const char *const dev_ooms_keys[MAX_DEV_KEYS] =
	DEV_KEYS("num_ooms");
static const char *const dev_failing_keys[MAX_DEV_KEYS] =
	DEV_KEYS("oom_requests_failing");
static const char *const dev_over_keys[MAX_DEV_KEYS] =
	DEV_KEYS("inherited_over_capacity");

/*
 * Inherited and made: the bytes reserved at the first event (taken as
 * recorded), the peak of what the model reserved itself, and where the
 * program's empty_cache() gave inherited bytes back, the reserved peak
 * from then on (the reserved peak otherwise); summed over devices and
 * per device.
 */
static void inherited_stats(struct cc *s, struct as_plan *p, uint64_t frag)
{
	uint64_t after = s->released ? s->after_peak : s->reserved_bytes.peak;
	/* the state at the start does not fit the device: no request
	 * reserves anything until the program gives enough of it back */
	uint64_t over = s->capacity && s->inherited_start > s->capacity
				? s->inherited_start - s->capacity
				: 0;
	if (over)
		as_cuda_stat_sum(s, p, "inherited_over_capacity", over);
	/* how many allocator settings differ from the recording's (tune) */
	as_plan_stat_int(p, "settings_differ", s->ndiffer);
	as_cuda_stat_sum(s, p, "reserved_inherited", s->inherited_start);
	as_cuda_stat_sum(s, p, "reserved_made", s->made_peak);
	as_cuda_stat_sum(s, p, "reserved_peak_after_release", after);
	as_cuda_stat_sum(s, p, "inherited_released", s->released);
	if (s->space >= MAX_DEV_KEYS)
		return;
	as_plan_stat_int(p, dev_made_keys[s->space], s->made_peak);
	as_plan_stat_int(p, dev_inherited_keys[s->space], s->inherited_start);
	as_plan_stat_int(p, dev_frag_keys[s->space], frag);
	as_plan_stat_int(p, dev_ooms_keys[s->space], s->num_ooms);
	if (s->in.oom_requests)
		as_plan_stat_int(p, dev_failing_keys[s->space],
				 s->oom_failing);
	if (over)
		as_plan_stat_int(p, dev_over_keys[s->space], over);
	if (s->released) {
		as_plan_stat_int(p, dev_after_keys[s->space], s->after_peak);
		as_plan_stat_int(p, dev_released_keys[s->space],
				 s->released_at);
	}
}

/*
 * A note (AS_CUDA_NOTE_INPUTS) per device: reproduce or what-if, what the run
 * took from the recording after its first event and what it decided.
 */
static void inputs_note(struct cc *s, struct as_plan *p)
{
	char line[768], hb[32];
	const char *dev = as_trace_space_name(s->t, s->space);
	bool size = s->cap.from == AS_LIMIT_OOM ||
		    s->cap.from == AS_LIMIT_RETRY;
	int n = snprintf(line, sizeof(line),
			 AS_CUDA_NOTE_INPUTS "%s: %s%s%s; the state at the first "
			 "event as recorded (%" PRIu64 " segments, %s, %" PRIu64
			 " blocks); read after it: %" PRIu64
			 " empty_cache() calls of the program",
			 dev, s->whatif ? "what-if (" : "reproduce",
			 s->whatif ? s->differs : "",
			 s->whatif ? " not the recording's)" : "",
			 s->in.segments,
			 as_human_bytes(s->inherited_start, hb, sizeof(hb)),
			 s->in.blocks, s->in.empty_cache);
	if (n > 0 && (size_t)n < sizeof(line) && s->in.tails)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ", the tails of %" PRIu64 " blocks of the start "
			      "(where the trace first allocated after each)",
			      s->in.tails);
	if (n > 0 && (size_t)n < sizeof(line) && !s->whatif)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ", %" PRIu64 " OOMs, %" PRIu64
			      " releases before a retried cudaMalloc, %" PRIu64
			      " cudaMalloc addresses",
			      s->recorded_ooms, s->in.retries, s->in.seg_keys);
	if (n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      "%s; decided by the model: %" PRIu64
			      " segment addresses, %" PRIu64
			      " releases before an OOM, %" PRIu64
			      " OOMs, %" PRIu64 " garbage collections",
			      size ? ", the device size" : "",
			      s->in.model_keys, s->in.model_releases,
			      s->num_ooms, s->gc_runs);
	if (n > 0 && (size_t)n < sizeof(line) && s->in.left)
		snprintf(line + n, sizeof(line) - (size_t)n,
			 "; %" PRIu64 " recorded releases before a cudaMalloc "
			 "left to the model (a retry or the program's: not "
			 "told apart without the recording's sizes)",
			 s->in.left);
	as_plan_note(p, line);
}

/* Which recorded inputs the run read after the first event (counts) and
 * what it decided itself; only on a recording. */
static void input_stats(struct cc *s, struct as_plan *p)
{
	const struct as_trace *t = s->t;
	if (!t || (!t->nsegments && !t->nmarks))
		return;
	as_plan_stat_int(p, "whatif", s->whatif);
	as_cuda_stat_sum(s, p, "inherited_segments", s->in.segments);
	as_cuda_stat_sum(s, p, "inherited_blocks", s->in.blocks);
	as_cuda_stat_sum(s, p, "inherited_tails_from_trace", s->in.tails);
	as_cuda_stat_sum(s, p, "recorded_retry_releases_replayed",
			 s->in.retries);
	as_cuda_stat_sum(s, p, "recorded_segment_addresses_used",
			 s->in.seg_keys);
	as_cuda_stat_sum(s, p, "recorded_device_size_used",
			 s->cap.from == AS_LIMIT_OOM ||
				 s->cap.from == AS_LIMIT_RETRY);
	as_cuda_stat_sum(s, p, "recorded_releases_left_to_model", s->in.left);
	as_cuda_stat_sum(s, p, "model_segment_addresses", s->in.model_keys);
	as_cuda_stat_sum(s, p, "model_releases", s->in.model_releases);
	as_cuda_stat_sum(s, p, "recorded_oom_requests", s->in.oom_requests);
	as_cuda_stat_sum(s, p, "oom_requests_failing", s->oom_failing);
	if (s->is_first_case)
		inputs_note(s, p);
}

/*
 * Plan offsets of blocks in expandable ranges: the ranges (virtual, far
 * apart) are laid out one after the other above the cudaMalloc segments,
 * each as long as its highest mapped address ever, so that the plan's peak
 * tells memory rather than address space.
 */
static int lay_out_ranges(struct cc *s, struct as_plan *p)
{
	uint64_t *base = malloc(((size_t)s->ns + 1) * sizeof(*base));
	if (!base)
		return AS_ENOMEM;
	uint64_t at = as_cuda_round_up(s->dev_top, ROUND_LARGE);
	for (uint32_t i = 0; i < s->ns; i++) {
		base[i] = at;
		if (s->s[i].expandable)
			at += as_cuda_round_up(s->s[i].hiwater, ROUND_LARGE);
	}
	for (uint32_t k = 0; k < as_cuda_nslots(s); k++) {
		uint32_t g = s->seg_of[k], i = as_cuda_buf(s, k);
		/* the block's own flag: a cudaMalloc segment's slot may hold
		 * an expandable range later */
		if (g != NIL && s->s[g].expandable &&
		    (s->initial[k] & IN_EXPANDABLE) &&
		    p->offset[i] != AS_NO_OFFSET)
			p->offset[i] = base[g] + s->seg_off[k];
	}
	free(base);
	return AS_OK;
}

void as_cuda_stats(void *state, struct as_plan *p)
{
	struct cc *s = state;
	if (s->t && s->seg_of)
		lay_out_ranges(s, p);
	if (s->t && s->seg_size && as_plan_want_segments(p) == AS_OK)
		for (uint32_t k = 0; k < as_cuda_nslots(s); k++)
			if (s->seg_size[k]) {
				uint32_t i = as_cuda_buf(s, k);
				p->segment_size[i] = s->seg_size[k];
				p->segment_offset[i] = s->seg_off[k];
			}
	as_cuda_stat_sum(s, p, "allocated_bytes.current",
			 s->allocated_bytes.cur);
	as_cuda_stat_sum(s, p, "allocated_bytes.peak", s->allocated_bytes.peak);
	as_cuda_stat_sum(s, p, "reserved_bytes.current", s->reserved_bytes.cur);
	as_cuda_stat_sum(s, p, "reserved_bytes.peak", s->reserved_bytes.peak);
	/* reserved minus allocated at the reserved peak */
	uint64_t frag = s->reserved_bytes.peak -
			(s->seen_peak == s->reserved_bytes.peak ? s->alloc_at_peak
								: 0);
	as_cuda_stat_sum(s, p, "fragmentation_at_peak", frag);
	as_cuda_stat_sum(s, p, "requested_bytes.peak", s->requested_bytes.peak);
	as_cuda_stat_sum(s, p, "allocation.peak", s->allocation.peak);
	as_cuda_stat_sum(s, p, "segment.current", s->segment.cur);
	as_cuda_stat_sum(s, p, "segment.peak", s->segment.peak);
	as_cuda_stat_sum(s, p, "inactive_split.current", s->inactive_split.cur);
	as_cuda_stat_sum(s, p, "inactive_split_bytes.current",
			 s->inactive_split_bytes.cur);
	as_cuda_stat_sum(s, p, "inactive_split_bytes.peak",
			 s->inactive_split_bytes.peak);
	as_cuda_stat_sum(s, p, "oversize_allocations.peak",
			 s->oversize_allocations.peak);
	as_cuda_stat_sum(s, p, "oversize_segments.peak",
			 s->oversize_segments.peak);
	as_cuda_stat_sum(s, p, "num_alloc_retries", s->num_alloc_retries);
	as_cuda_stat_sum(s, p, "num_ooms", s->num_ooms);
	as_cuda_stat_sum(s, p, "num_device_alloc", s->num_device_alloc);
	as_cuda_stat_sum(s, p, "num_device_free", s->num_device_free);
	as_cuda_stat_sum(s, p, "num_sync_all_streams", s->num_sync_all_streams);
	as_cuda_stat_sum(s, p, "gc_runs", s->gc_runs);
	as_cuda_stat_sum(s, p, "recorded_ooms_replayed", s->recorded_ooms);
	as_cuda_stat_sum(s, p, "recorded_empty_cache_replayed",
			 s->recorded_releases);
	inherited_stats(s, p, frag);
	input_stats(s, p);
	if (s->is_first_case && s->t)
		as_cuda_oom_notes(s, p);
	if (s->is_first_case)
		as_cuda_capacity_note(s, p);
	if (s->space < MAX_DEV_KEYS)
		as_plan_stat_int(p, dev_reserved_keys[s->space],
				 s->reserved_bytes.peak);
	if (s->t && s->is_first_case)
		as_cuda_agreement(s, p);
}

/* ---- check ---- */

struct check_walk {
	const struct cc *s;
	struct as_problems *p;
	uint64_t seg_addr, at, blocks, allocated, reserved, isplit;
	char last;
};

static bool check_one(void *ctx, const struct segment *g,
		      const struct block *b)
{
	struct check_walk *w = ctx;
	uint64_t sa = g->addr, ss = g->size, a = b->addr, n = b->size;
	char st = !b->mapped ? 'u' : b->allocated ? 'a' : 'f';
	if (sa != w->seg_addr) {
		w->seg_addr = sa;
		w->at = sa;
		w->last = 0;
	}
	if (a != w->at)
		as_problem(w->p, "segment 0x%" PRIx64 ": block at +0x%" PRIx64
			      " does not follow the previous one (+0x%" PRIx64 ")",
			sa, a - sa, w->at - sa);
	if (n == 0)
		as_problem(w->p, "segment 0x%" PRIx64 ": empty block", sa);
	if (st == w->last && st != 'a')
		as_problem(w->p, "segment 0x%" PRIx64 ": two %s neighbours at +0x%" PRIx64
			      " not merged",
			sa, st == 'f' ? "free" : "unmapped", a - sa);
	w->last = st;
	w->at = a + n;
	if (w->at > sa + ss)
		as_problem(w->p, "segment 0x%" PRIx64 ": block +0x%" PRIx64
			      " runs past its end",
			sa, a - sa);
	w->blocks++;
	if (st == 'a')
		w->allocated += n;
	return true;
}

uint64_t as_cuda_check(void *state, char *msg, size_t len)
{
	const struct cc *s = state;
	struct as_problems p = {0, msg, len};
	struct check_walk w = {.s = s, .p = &p, .seg_addr = UINT64_MAX};
	seg_walk(s, check_one, &w);
	uint64_t reserved = 0, isplit = 0, nseg = 0, free_blocks = 0;
	for (uint32_t i = 0; i < s->ns; i++) {
		const struct segment *g = &s->s[i];
		if (!g->live)
			continue;
		nseg += !g->expandable;
		reserved += g->expandable ? g->mapped : g->size;
		uint64_t sum = 0, mapped = 0;
		for (uint32_t x = g->first; x != NIL; x = s->b[x].next) {
			const struct block *b = &s->b[x];
			if (!b->used || b->seg != i)
				as_problem(&p, "segment 0x%" PRIx64
					    ": block list holds a stray block",
					g->addr);
			if (b->next != NIL && s->b[b->next].prev != x)
				as_problem(&p, "segment 0x%" PRIx64
					    ": prev/next links disagree",
					g->addr);
			sum += b->size;
			if (b->mapped)
				mapped += b->size;
			if (b->mapped && !b->allocated) {
				free_blocks++;
				struct pool const *pl = &s->pools[b->small ? 0 : 1];
				uint64_t key = as_cuda_bkey(s->s, b);
				uint32_t it = as_cuda_t_lower_bound(
					&s->tp, pl->blocks, b->stream, b->size,
					key);
				if (it == NIL || s->tp.n[it].val != x ||
				    s->tp.n[it].k2 != key)
					as_problem(&p, "free block 0x%" PRIx64
						    " is not in its pool",
						b->addr);
				if (as_cuda_counts_inactive_split(s, b))
					isplit += b->size;
			}
			if (b->allocated && (b->buf == NIL ||
					     s->blk_of[as_cuda_slot(s, b->buf)] !=
						     x))
				as_problem(&p, "allocated block 0x%" PRIx64
					    " is not its buffer's",
					b->addr);
			if (b->small != g->small)
				as_problem(&p, "block 0x%" PRIx64
					    " is in the other pool's segment",
					b->addr);
		}
		if (sum != g->size)
			as_problem(&p, "segment 0x%" PRIx64 ": blocks cover %" PRIu64
				    " of %" PRIu64 " bytes",
				g->addr, sum, g->size);
		if (mapped != g->mapped)
			as_problem(&p, "segment 0x%" PRIx64 ": %" PRIu64
				    " bytes mapped, blocks say %" PRIu64,
				g->addr, g->mapped, mapped);
	}
	uint64_t keyed = 0, live = 0;
	for (uint32_t it = as_cuda_t_lower_bound(&s->tp, s->keys, 0, 0, 0);
	     it != NIL; it = as_cuda_t_next(&s->tp, s->keys, it)) {
		uint32_t gi = (uint32_t)s->tp.n[it].k1;
		keyed++;
		if (gi >= s->ns || !s->s[gi].live ||
		    s->tp.n[it].k0 != s->s[gi].key)
			as_problem(&p, "order key 0x%" PRIx64
				    " stands for no live segment",
				s->tp.n[it].k0);
	}
	for (uint32_t i = 0; i < s->ns; i++)
		live += s->s[i].live;
	if (keyed != live)
		as_problem(&p, "%" PRIu64 " order keys for %" PRIu64
			    " live segments",
			keyed, live);
	uint64_t pooled = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t it = as_cuda_t_lower_bound(
			     &s->tp, s->pools[k].blocks, 0, 0, 0);
		     it != NIL;
		     it = as_cuda_t_next(&s->tp, s->pools[k].blocks, it))
			pooled++;
	if (pooled != free_blocks)
		as_problem(&p, "pools hold %" PRIu64 " blocks, segments %" PRIu64
			    " free ones",
			pooled, free_blocks);
	if (reserved != s->reserved_bytes.cur)
		as_problem(&p, "reserved_bytes=%" PRIu64 " but segments hold %" PRIu64,
			s->reserved_bytes.cur, reserved);
	if (w.allocated != s->allocated_bytes.cur)
		as_problem(&p, "allocated_bytes=%" PRIu64 " but blocks hold %" PRIu64,
			s->allocated_bytes.cur, w.allocated);
	if (isplit != s->inactive_split_bytes.cur)
		as_problem(&p, "inactive_split_bytes=%" PRIu64 " but %" PRIu64
			    " found",
			s->inactive_split_bytes.cur, isplit);
	if (nseg != s->segment.cur)
		as_problem(&p, "segment=%" PRIu64 " but %" PRIu64 " are live",
			s->segment.cur, nseg);
	/* more only while memory from before the recording is held */
	if (s->capacity && s->reserved_bytes.cur > s->capacity &&
	    s->reserved_bytes.cur > s->inherited_cur)
		as_problem(&p, "reserved_bytes=%" PRIu64 " exceeds capacity %" PRIu64,
			s->reserved_bytes.cur, s->capacity);
	return p.n;
}
