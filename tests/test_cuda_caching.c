/*
 * Tests of the cuda-caching strategy: one test per rule of
 * ../shared/specs/pytorch-caching-allocator.md (the worked examples there),
 * seeded random traces checked after every event, check() reporting broken
 * invariants as data, and the agreement with the real snapshots in
 * ../shared/snapshots and its fidelity/ (skipped when absent or
 * unreadable).
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>

#include "allocscope/build.h"
#include "allocscope/cuda.h"
#include "strategies/strategy.h"
#include "tap.h"

/* The strategy's private header, to reach its state and break it on
 * purpose. */
#include "strategies/cuda_caching/cuda_caching.h"

#define MiB (1ull << 20)

static struct as_trace *parse_ops(const char *text)
{
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	if (as_trace_parse("test.ops", text, strlen(text), "ops", &t, &d)) {
		printf("#   parse: %s\n", d.msg);
		return NULL;
	}
	return t;
}

/* Run spec on t with checks after every event; NULL on error. */
static struct as_plan *run(const struct as_trace *t, const char *spec)
{
	struct as_runner_options hooks = {.check_every_event = true};
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	if (!t)
		return NULL;
	if (as_strategy_run(spec, t, &hooks, &p, &d)) {
		printf("#   %s: %s\n", spec, d.msg);
		return NULL;
	}
	struct as_report r;
	if (as_validate(t, p, &r) != AS_OK || !r.valid) {
		printf("#   %s: invalid plan\n", spec);
		as_plan_destroy(p);
		return NULL;
	}
	return p;
}

static double stat_of(const struct as_plan *p, const char *key)
{
	for (uint32_t i = 0; i < p->nstats; i++)
		if (strcmp(p->stats[i].key, key) == 0)
			return p->stats[i].value;
	printf("#   no stat %s\n", key);
	return -1;
}

static uint32_t buf_named(const struct as_trace *t, const char *name)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(t->buffers[i].name, name) == 0)
			return i;
	return 0;
}

/* Offset, chunk and segment of buffer `name` in the plan. */
#define OFF(name) (p->offset[buf_named(t, name)])
#define CHUNK(name) (p->chunk[buf_named(t, name)])
#define SEG(name) (p->segment_size[buf_named(t, name)])
#define SEGOFF(name) (p->segment_offset[buf_named(t, name)])

static void rounding_is_512_bytes_and_the_pools_split_at_one_mib(void)
{
	struct as_trace *t = parse_ops("alloc a 1 512\n"
				       "alloc b 1000 512\n"
				       "alloc c 1048576 512\n"
				       "alloc d 1048577 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(CHUNK("a"), 512);
		CHECK_EQ_U64(SEGOFF("a"), 0);
		CHECK_EQ_U64(CHUNK("b"), 1024);
		CHECK_EQ_U64(SEGOFF("b"), 512);
		CHECK_EQ_U64(SEG("a"), 2 * MiB);
		/* exactly 1 MiB is a small request: same small segment */
		CHECK_EQ_U64(SEG("c"), 2 * MiB);
		CHECK_EQ_U64(OFF("c") - OFF("a"), 1536);
		/* one byte more: the large pool, a 20 MiB segment */
		CHECK_EQ_U64(SEG("d"), 20 * MiB);
		CHECK_EQ_U64(SEGOFF("d"), 0);
		CHECK_EQ_U64(CHUNK("d"), 1048576 + 512);
		CHECK_EQ_U64(stat_of(p, "segment.current"), 2);
		CHECK_EQ_U64(stat_of(p, "reserved_bytes.peak"), 22 * MiB);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void roundup_power2_divisions_round_to_a_division(void)
{
	struct as_trace *t = parse_ops("alloc a 88080384 512\n" /* 84 MiB */
				       "alloc b 314572800 512\n" /* 300 MiB */
				       "alloc c 629145600 512\n" /* 600 MiB */
				       "alloc d 1200 512\n");
	struct as_plan *p = run(t, "cuda-caching:roundup_power2_divisions=4");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(CHUNK("a"), 96 * MiB);
		CHECK_EQ_U64(CHUNK("b"), 320 * MiB);
		CHECK_EQ_U64(CHUNK("c"), 640 * MiB);
		CHECK_EQ_U64(CHUNK("d"), 1536); /* <= 512 * 4: the 512 path */
	}
	as_plan_destroy(p);
	p = run(t, "cuda-caching:roundup_power2_divisions=[256:4,>:1]");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(CHUNK("a"), 96 * MiB);
		/* 300 MiB is not under 256 MiB: one division */
		CHECK_EQ_U64(CHUNK("b"), 300 * MiB);
		CHECK_EQ_U64(CHUNK("c"), 600 * MiB);
	}
	as_plan_destroy(p);
	uint32_t div[NDIV] = {0};
	CHECK(as_cuda_parse_divisions("[64:8,256:4,>:1]", div));
	/* under 64 MiB: 8; 64 to 256 MiB: 4; from 256 MiB: 1 */
	CHECK_EQ_U64(div[0], 8);
	CHECK_EQ_U64(div[5], 8);
	CHECK_EQ_U64(div[6], 4);
	CHECK_EQ_U64(div[7], 4);
	CHECK_EQ_U64(div[8], 1);
	CHECK_EQ_U64(div[15], 1);
	CHECK(!as_cuda_parse_divisions("3", div));
	CHECK(!as_cuda_parse_divisions("[100:4]", div));
	CHECK(!as_cuda_parse_divisions("[256:4", div));
	as_trace_destroy(t);
}

static void segment_sizes_follow_the_request(void)
{
	struct as_trace *t = parse_ops("alloc a 12582913 512\n"
				       "alloc b 12582912 512\n"
				       "alloc c 5000000 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		/* 12 MiB + 1 -> 14 MiB segment, split: remainder > 1 MiB */
		CHECK_EQ_U64(SEG("a"), 14 * MiB);
		CHECK_EQ_U64(CHUNK("a"), 12583424);
		/* exactly 12 MiB: its own 12 MiB segment */
		CHECK_EQ_U64(SEG("b"), 12 * MiB);
		CHECK_EQ_U64(SEGOFF("b"), 0);
		/* 1-10 MiB: a 20 MiB segment (the 14 MiB one's remainder
		 * of 2 MiB is too small) */
		CHECK_EQ_U64(SEG("c"), 20 * MiB);
		CHECK_EQ_U64(stat_of(p, "segment.current"), 3);
		CHECK_EQ_U64(stat_of(p, "inactive_split_bytes.current"),
			     14 * MiB - 12583424 + 20 * MiB - 5000192);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void a_request_of_exactly_10_mib_gets_a_10_mib_segment(void)
{
	/* get_allocation_size: size < kMinLargeAlloc takes 20 MiB, so 10
	 * MiB itself is rounded to 2 MiB: a 10 MiB segment */
	struct as_trace *t = parse_ops("alloc a 10485760 512\n"
				       "alloc b 10485248 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(SEG("a"), 10 * MiB);
		CHECK_EQ_U64(SEG("b"), 20 * MiB);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void best_fit_takes_the_smallest_block_then_the_lowest_address(void)
{
	/* three 2 MiB-ish holes of different sizes in one 20 MiB segment */
	struct as_trace *t = parse_ops("alloc h1 3145728 512\n" /* 3 MiB */
				       "alloc k1 2097152 512\n"
				       "alloc h2 2621440 512\n" /* 2.5 MiB */
				       "alloc k2 2097152 512\n"
				       "alloc h3 2621440 512\n"
				       "alloc k3 2097152 512\n"
				       "free h1\nfree h2\nfree h3\n"
				       "alloc x 2400000 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		/* the 2.5 MiB holes fit best; h2 is lower than h3; the
		 * 0.2 MiB remainder is not split off (<= 1 MiB) */
		CHECK_EQ_U64(OFF("x"), OFF("h2"));
		CHECK_EQ_U64(CHUNK("x"), 2621440);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void large_blocks_split_only_above_one_mib_small_ones_at_512(void)
{
	struct as_trace *t = parse_ops("alloc a 19922944 512\n" /* 19 MiB */
				       "alloc s 1000 512\n"
				       "free s\n"
				       "alloc s2 400 512\n"
				       "alloc s3 100 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		/* 20 MiB segment, remainder 1 MiB exactly: no split */
		CHECK_EQ_U64(CHUNK("a"), 20 * MiB);
		CHECK_EQ_U64(stat_of(p, "inactive_split_bytes.peak") > 0, 1);
		/* small pool: the 1024 block is split into 512 + 512 */
		CHECK_EQ_U64(CHUNK("s2"), 512);
		CHECK_EQ_U64(OFF("s2"), OFF("s"));
		CHECK_EQ_U64(OFF("s3"), OFF("s") + 512);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void oversize_blocks_serve_only_close_oversize_requests(void)
{
	/* the spec's example: max_split_size_mb=100 on a 300 MiB device */
	struct as_trace *t = parse_ops("alloc big 157286400 512\n" /* 150 */
				       "free big\n"
				       "alloc m 52428800 512\n"         /* 50 */
				       "alloc l 125829120 512\n");      /* 120 */
	struct as_plan *p =
		run(t, "cuda-caching:max_split_size_mb=100,capacity=300M");
	CHECK(p != NULL);
	if (p) {
		/* 50 MiB: the 150 MiB block is oversize, a new segment */
		CHECK_EQ_U64(SEG("m"), 50 * MiB);
		CHECK(OFF("m") != OFF("big"));
		/* 120 MiB: 150 >= 120 + 20 refused; no room on the device:
		 * release_available_cached_blocks frees it, address 0 */
		CHECK_EQ_U64(OFF("l"), OFF("big"));
		CHECK_EQ_U64(SEG("l"), 120 * MiB);
		CHECK_EQ_U64(stat_of(p, "num_device_free"), 1);
		CHECK_EQ_U64(stat_of(p, "num_alloc_retries"), 0);
		CHECK_EQ_U64(stat_of(p, "num_ooms"), 0);
		CHECK_EQ_U64(stat_of(p, "oversize_allocations.peak"), 1);
	}
	as_plan_destroy(p);
	/* within max_non_split_rounding an oversize block is reused */
	as_trace_destroy(t);
	t = parse_ops("alloc big 157286400 512\nfree big\n"
		      "alloc l 140000000 512\n");
	p = run(t, "cuda-caching:max_split_size_mb=100");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(OFF("l"), OFF("big"));
		CHECK_EQ_U64(CHUNK("l"), 150 * MiB); /* not split */
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

struct collect {
	char states[64];
	uint64_t sizes[64];
	uint32_t n;
};

static bool collect_blocks(void *ctx, uint16_t space, const struct as_block *b)
{
	struct collect *c = ctx;
	(void)space;
	if (c->n < 64) {
		c->states[c->n] = b->in_use ? 'a'
				  : strcmp(b->region, "unmapped") == 0 ? 'u'
								       : 'f';
		c->sizes[c->n] = b->size;
		c->n++;
	}
	return true;
}

/* The state itself: create, start, alloc/free by hand. */
struct harness {
	struct as_trace *t;
	void *st;
};

static bool harness_open(struct harness *h, const char *ops, const char *opts)
{
	struct as_opts o;
	struct as_diag d = {0};
	h->t = parse_ops(ops);
	h->st = NULL;
	if (!h->t ||
	    as_opts_parse(&o, "cuda-caching", as_cuda_options, "", opts, &d) ||
	    as_cuda_create(&o, &(struct as_run){0}, &h->st, &d) ||
	    as_cuda_start(h->st, h->t, 0, 0, &d)) {
		printf("#   harness: %s\n", d.msg);
		return false;
	}
	return true;
}

static void harness_close(struct harness *h)
{
	as_cuda_destroy(h->st);
	as_trace_destroy(h->t);
}

static bool step(struct harness *h, bool alloc, const char *name)
{
	uint32_t i = buf_named(h->t, name);
	uint64_t off, chunk;
	if (alloc && as_cuda_alloc(h->st, h->t, i, &off, &chunk) != AS_OK)
		return false;
	if (!alloc)
		as_cuda_free(h->st, h->t, i);
	char msg[256] = "";
	if (as_cuda_check(h->st, msg, sizeof(msg))) {
		printf("#   check: %s\n", msg);
		return false;
	}
	return true;
}

static void a_free_block_merges_with_prev_then_next(void)
{
	struct harness h;
	CHECK(harness_open(&h,
			   "alloc a 1000 512\nalloc b 1000 512\n"
			   "alloc c 1000 512\nfree a\nfree c\nfree b\n",
			   ""));
	CHECK(step(&h, true, "a") && step(&h, true, "b") &&
	      step(&h, true, "c") && step(&h, false, "a") &&
	      step(&h, false, "c"));
	struct collect c = {0};
	as_cuda_walk(h.st, 0, collect_blocks, &c);
	/* a's block, b, and c merged with the tail */
	CHECK_EQ_U64(c.n, 3);
	CHECK(c.states[0] == 'f' && c.states[1] == 'a' && c.states[2] == 'f');
	struct cc *s = h.st;
	uint32_t bb = s->blk_of[buf_named(h.t, "b")];
	uint64_t b_addr = s->b[bb].addr;
	CHECK(step(&h, false, "b"));
	memset(&c, 0, sizeof(c));
	as_cuda_walk(h.st, 0, collect_blocks, &c);
	CHECK_EQ_U64(c.n, 1);
	CHECK_EQ_U64(c.sizes[0], 2 * MiB);
	/* b's block absorbed its previous neighbour first: it starts at
	 * the segment's base and is still slot bb */
	CHECK(s->b[bb].used && s->b[bb].addr == b_addr - 1024 &&
	      s->b[bb].size == 2 * MiB);
	CHECK_EQ_U64(s->inactive_split_bytes.cur, 0);
	harness_close(&h);
}

static void oom_releases_cached_segments_and_retries_then_fails(void)
{
	struct as_trace *t = parse_ops("alloc a 15728640 512\n"  /* 15 MiB */
				       "free a\n"
				       "alloc b 31457280 512\n"  /* 30 MiB */
				       "alloc c 31457280 512\n");
	struct as_plan *p = run(t, "cuda-caching:capacity=40M");
	CHECK(p != NULL);
	if (p) {
		/* 16 + 30 > 40: the cached 16 MiB segment is released and
		 * the retry takes address 0 */
		CHECK_EQ_U64(OFF("b"), 0);
		CHECK_EQ_U64(stat_of(p, "num_alloc_retries"), 2);
		CHECK_EQ_U64(stat_of(p, "num_device_free"), 1);
		/* no room at all: a failed allocation */
		CHECK_EQ_U64(OFF("c"), AS_NO_OFFSET);
		CHECK_EQ_U64(stat_of(p, "num_ooms"), 1);
		CHECK_EQ_U64(as_plan_failed(p, t), 1);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* The note of plan p that starts with `prefix` and holds `text`. */
static bool has_note(const struct as_plan *p, const char *prefix,
		     const char *text)
{
	for (uint32_t k = 0; k < p->nnotes; k++)
		if (strncmp(p->notes[k], prefix, strlen(prefix)) == 0 &&
		    strstr(p->notes[k], text))
			return true;
	printf("#   no note %s...%s\n", prefix, text);
	return false;
}

static void an_oom_says_whether_fragmentation_or_live_memory_failed_it(void)
{
	/* two 20 MiB segments, each cut by two 8 MiB blocks; one of each
	 * freed: 16 MiB live on a 40 MiB device, 24 MiB cached in 8 and 4 MiB
	 * blocks, but no 16 MiB piece (z:
	 * fragmentation); then 16 + 30 MiB live would not fit (w) */
	struct as_trace *t = parse_ops("alloc x1 8388608 512\n"
				       "alloc x2 8388608 512\n"
				       "alloc y1 8388608 512\n"
				       "alloc y2 8388608 512\n"
				       "free x1\n"
				       "free y1\n"
				       "alloc z 16777216 512\n"
				       "alloc w 31457280 512\n");
	struct as_plan *p = run(t, "cuda-caching:capacity=40M");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(OFF("z"), AS_NO_OFFSET);
		CHECK_EQ_U64(OFF("w"), AS_NO_OFFSET);
		CHECK_EQ_U64(stat_of(p, "oom_fragmentation"), 1);
		CHECK_EQ_U64(stat_of(p, "oom_live_memory"), 1);
		CHECK(has_note(p, "oom: ", "out of memory on 16777216 B"));
		CHECK(has_note(p, "oom: ", "largest free block 8.00 MiB: "
					   "fragmentation"));
		CHECK(has_note(p, "oom: ", "1-10 MiB 24.0 MiB"));
		CHECK(has_note(p, "oom: ", "out of memory on 31457280 B"));
		CHECK(has_note(p, "oom: ", "live memory (the live bytes"));
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void expandable_segments_grow_one_range_by_pages(void)
{
	struct as_trace *t = parse_ops("alloc a 5242880 512\n"   /* 5 MiB */
				       "alloc b 31457280 512\n"  /* 30 MiB */
				       "alloc s 1000 512\n"
				       "free a\nfree b\n"
				       "alloc c 36700160 512\n"); /* 35 MiB */
	struct as_plan *p = run(t, "cuda-caching:expandable_segments=1");
	CHECK(p != NULL);
	if (p) {
		/* one virtual range: b follows a directly */
		CHECK_EQ_U64(OFF("b") - OFF("a"), 5 * MiB);
		CHECK_EQ_U64(SEGOFF("b"), 5 * MiB);
		/* 5 MiB maps a 20 MiB page, 30 more map one more page */
		CHECK_EQ_U64(SEG("b"), 40 * MiB);
		/* the small pool has its own range of 2 MiB pages */
		CHECK_EQ_U64(SEG("s"), 2 * MiB);
		CHECK_EQ_U64(stat_of(p, "reserved_bytes.peak"), 42 * MiB);
		/* a and b merged back: c reuses the range's start */
		CHECK_EQ_U64(OFF("c"), OFF("a"));
	}
	as_plan_destroy(p);
	/* on OOM the fully free pages are unmapped */
	as_trace_destroy(t);
	t = parse_ops("alloc a 41943040 512\nfree a\n"
		      "alloc s 1048576 512\nalloc s2 1048576 512\n"
		      "alloc s3 1048576 512\n");
	p = run(t, "cuda-caching:expandable_segments=1,capacity=42M");
	CHECK(p != NULL);
	if (p) {
		CHECK(OFF("s3") != AS_NO_OFFSET);
		CHECK_EQ_U64(stat_of(p, "num_ooms"), 0);
		CHECK_EQ_U64(stat_of(p, "num_alloc_retries"), 1);
		CHECK_EQ_U64(stat_of(p, "reserved_bytes.current"), 4 * MiB);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void a_recorded_oom_releases_the_cache_and_tells_the_device_size(void)
{
	struct as_diag d = {0};
	struct as_builder *b = as_builder_create("oom.ops", "ops");
	struct as_trace *t = NULL;
	CHECK(b != NULL);
	if (!b)
		return;
	struct as_mark m = {.size = 40 * MiB, .device_free = 24 * MiB,
			    .kind = AS_MARK_OOM};
	bool ok = as_builder_alloc(b, "a", 15 * MiB, 512, 1, &d) >= 0 &&
		  as_builder_free(b, "a", 2, &d) == AS_OK &&
		  as_builder_mark(b, &m) == AS_OK &&
		  as_builder_alloc(b, "b", 20 * MiB, 512, 3, &d) >= 0 &&
		  as_builder_alloc(b, "c", 6 * MiB, 512, 4, &d) >= 0 &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	CHECK(ok);
	if (!ok) {
		as_builder_destroy(b);
		return;
	}
	struct as_plan *p = NULL;
	struct as_runner_options hooks = {.check_every_event = true};
	CHECK(as_strategy_run("cuda-caching", t, &hooks, &p, &d) == AS_OK);
	if (p) {
		/* the OOM released a's cached 16 MiB segment: b reuses its
		 * address; then nothing held plus 24 MiB free: a 24 MiB
		 * device, on which c's 20 MiB segment does not fit */
		CHECK_EQ_U64(stat_of(p, "recorded_ooms_replayed"), 1);
		CHECK_EQ_U64(OFF("b"), OFF("a"));
		CHECK_EQ_U64(OFF("c"), AS_NO_OFFSET);
		CHECK_EQ_U64(stat_of(p, "num_ooms"), 1);
		CHECK_EQ_U64(stat_of(p, "num_device_free"), 1);
	}
	as_plan_destroy(p);
	/* a capacity option wins over what the recording tells */
	p = NULL;
	CHECK(as_strategy_run("cuda-caching:capacity=1G", t, &hooks, &p, &d) ==
	      AS_OK);
	if (p)
		CHECK(OFF("c") != AS_NO_OFFSET);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void free_blocks_are_reused_only_by_their_own_stream(void)
{
	struct as_trace *t = parse_ops("alloc a 4000 512 stream=0\n"
				       "free a\n"
				       "alloc b 4000 512 stream=1\n"
				       "alloc c 4000 512 stream=0\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK(OFF("b") != OFF("a"));
		CHECK_EQ_U64(SEGOFF("b"), 0); /* a segment of its own */
		CHECK_EQ_U64(OFF("c"), OFF("a"));
		CHECK_EQ_U64(stat_of(p, "segment.current"), 2);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void garbage_collection_frees_old_segments_above_the_threshold(void)
{
	struct as_trace *t = parse_ops("alloc a 31457280 512\nfree a\n"
				       "alloc b 41943040 512\n");
	struct as_plan *p = run(t, "cuda-caching:capacity=100M,fraction=1,"
				   "garbage_collection_threshold=0.2");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(stat_of(p, "gc_runs"), 1);
		CHECK_EQ_U64(stat_of(p, "num_device_free"), 1);
		CHECK_EQ_U64(OFF("b"), 0);
	}
	as_plan_destroy(p);
	/* without the fraction, no collection: b goes after a */
	p = run(t, "cuda-caching:capacity=100M,garbage_collection_threshold=0.2");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(stat_of(p, "gc_runs"), 0);
		CHECK_EQ_U64(OFF("b"), 30 * MiB);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void snapshot_settings_are_the_defaults_and_options_win(void)
{
	struct as_trace *t = parse_ops("alloc a 88080384 512\n"    /* 84 MiB */
				       "alloc b 157286400 512\n"); /* 150 */
	if (!t) {
		CHECK(t != NULL);
		return;
	}
	const char *saved = t->metadata;
	t->metadata = "{\"allocator_settings\": {\"PYTORCH_CUDA_ALLOC_CONF\": "
		      "\"roundup_power2_divisions:[256:4,>:1],"
		      "max_split_size_mb:100\", \"max_split_size\": 104857600, "
		      "\"expandable_segments\": false}}";
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(CHUNK("a"), 96 * MiB);
		CHECK_EQ_U64(stat_of(p, "oversize_allocations.peak"), 1);
	}
	as_plan_destroy(p);
	p = run(t, "cuda-caching:roundup_power2_divisions=0");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(CHUNK("a"), 84 * MiB);
		CHECK_EQ_U64(stat_of(p, "oversize_allocations.peak"), 1);
	}
	as_plan_destroy(p);
	t->metadata = saved;
	as_trace_destroy(t);
}

static void bad_options_are_refused_by_name(void)
{
	struct as_trace *t = parse_ops("alloc a 1 512\n");
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK(as_strategy_run("cuda-caching:max_split_size_mb=10", t, NULL,
			      &p, &d) == AS_EINVAL);
	CHECK(strstr(d.msg, "max_split_size_mb") != NULL);
	CHECK(as_strategy_run("cuda-caching:roundup_power2_divisions=[3:4]", t,
			      NULL, &p, &d) == AS_EINVAL);
	CHECK(as_strategy_run("cuda-caching:roundup_power2_divisions=[256:4",
			      t, NULL, &p, &d) == AS_EINVAL);
	CHECK(as_strategy_run("cuda-caching:capacity=80G", t, NULL, &p, &d) ==
	      AS_OK);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void the_plan_csv_carries_segment_columns(void)
{
	struct as_trace *t = parse_ops("alloc a 1000 512\nalloc b 3000000 512\n");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	FILE *f = tmpfile();
	CHECK(f != NULL);
	if (p && f) {
		CHECK(as_plan_write_csv(p, t, f) == AS_OK);
		rewind(f);
		char line[256];
		CHECK(fgets(line, sizeof(line), f) != NULL);
		CHECK_STR(line, "id,lower,upper,size,offset,segment_size,"
				"segment_offset\n");
		CHECK(fgets(line, sizeof(line), f) != NULL);
		CHECK(strstr(line, ",2097152,0\n") != NULL);
		CHECK(fgets(line, sizeof(line), f) != NULL);
		CHECK(strstr(line, ",20971520,0\n") != NULL);
	}
	if (f)
		fclose(f);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void check_reports_broken_invariants_as_data(void)
{
	struct harness h;
	CHECK(harness_open(&h, "alloc a 1000 512\nalloc b 3000000 512\n", ""));
	CHECK(step(&h, true, "a") && step(&h, true, "b"));
	struct cc *s = h.st;
	char msg[256] = "";
	s->reserved_bytes.cur += 512;
	CHECK(as_cuda_check(s, msg, sizeof(msg)) >= 1);
	CHECK(strstr(msg, "reserved_bytes") != NULL);
	s->reserved_bytes.cur -= 512;
	CHECK_EQ_U64(as_cuda_check(s, msg, sizeof(msg)), 0);
	uint32_t bi = s->blk_of[buf_named(h.t, "a")];
	s->b[bi].size += 512;
	CHECK(as_cuda_check(s, msg, sizeof(msg)) >= 1);
	s->b[bi].size -= 512;
	s->inactive_split_bytes.cur = 7;
	CHECK(as_cuda_check(s, msg, sizeof(msg)) >= 1);
	CHECK(strstr(msg, "inactive_split") != NULL);
	harness_close(&h);
}

/* Random alloc/free traces (sizes from 1 B to 200 MiB, streams 0-1). */
static char *random_ops(uint64_t seed, uint32_t n)
{
	size_t cap = (size_t)n * 64 + 64, len = 0;
	char *s = malloc(cap);
	uint32_t live[256], nlive = 0, next = 0;
	if (!s)
		return NULL;
	s[0] = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t r = as_splitmix64(&seed);
		if (nlive && (nlive == 256 || r % 100 < 45)) {
			uint32_t j = (uint32_t)(r >> 8) % nlive;
			len += (size_t)snprintf(s + len, cap - len, "free b%u\n",
						live[j]);
			live[j] = live[--nlive];
			continue;
		}
		uint64_t sz;
		switch ((r >> 16) % 4) {
		case 0:
			sz = 1 + (r >> 24) % 4096;
			break;
		case 1:
			sz = 1 + (r >> 24) % (1ull << 20);
			break;
		case 2:
			sz = (1ull << 20) + (r >> 24) % (12ull << 20);
			break;
		default:
			sz = 1 + (r >> 24) % (200ull << 20);
			break;
		}
		len += (size_t)snprintf(s + len, cap - len,
					"alloc b%u %" PRIu64 " 512 stream=%u\n",
					next, sz, (unsigned)((r >> 60) & 1));
		live[nlive++] = next++;
	}
	return s;
}

static void random_traces_keep_every_invariant_after_every_event(void)
{
	static const char *const specs[] = {
		"cuda-caching",
		"cuda-caching:max_split_size_mb=20",
		"cuda-caching:roundup_power2_divisions=[64:8,>:2]",
		"cuda-caching:expandable_segments=1",
		"cuda-caching:capacity=2G",
		"cuda-caching:capacity=1G,max_split_size_mb=64",
		"cuda-caching:capacity=3G,fraction=0.5,"
		"garbage_collection_threshold=0.6",
		"cuda-caching:expandable_segments=1,capacity=1G",
	};
	uint64_t seed0 = 20261123;
	printf("# seed %" PRIu64 "\n", seed0);
	for (uint64_t k = 0; k < 12; k++) {
		char *ops = random_ops(seed0 + k, 600);
		struct as_trace *t = ops ? parse_ops(ops) : NULL;
		for (size_t i = 0; t && i < sizeof(specs) / sizeof(*specs);
		     i++) {
			struct as_plan *p = run(t, specs[i]);
			if (!p)
				printf("#   seed %" PRIu64 " spec %s\n",
				       seed0 + k, specs[i]);
			CHECK(p != NULL);
			as_plan_destroy(p);
		}
		CHECK(t != NULL);
		as_trace_destroy(t);
		free(ops);
	}
}

/* ---- replaying a recording ---- */

/* A recorded buffer: [start, end) at recorded offset `at`. */
static bool rec_buf(struct as_builder *b, const char *name, uint64_t size,
		    uint64_t start, uint64_t end, uint64_t at)
{
	struct as_diag d = {0};
	int64_t i = as_builder_add_timed(b, name, size, 1, start, end, 0, &d);
	if (i < 0)
		return false;
	as_builder_buffer(b, (uint32_t)i)->recorded = at;
	return true;
}

static bool rec_seg(struct as_builder *b, uint64_t addr, uint64_t size,
		    uint64_t start, uint64_t end)
{
	struct as_segment g = {addr, size, start, end, 0, 0, 0};
	return as_builder_segment(b, &g) == AS_OK;
}

/*
 * A recording whose device gave the second 20 MiB segment (B, at 0) a
 * lower address than the first (A, at 100 MiB): two 9 MiB blocks in each,
 * then a 2 MiB request that x_at puts in one of the two 2 MiB holes left.
 */
static struct as_trace *two_holes(uint64_t x_at)
{
	struct as_builder *b = as_builder_create("holes.pickle", "pickle");
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	bool ok = b && rec_seg(b, 100 * MiB, 20 * MiB, 1, 8) &&
		  rec_seg(b, 0, 20 * MiB, 3, 8) &&
		  rec_buf(b, "a1", 9 * MiB, 1, 8, 100 * MiB) &&
		  rec_buf(b, "a2", 9 * MiB, 2, 8, 109 * MiB) &&
		  rec_buf(b, "b1", 9 * MiB, 3, 8, 0) &&
		  rec_buf(b, "b2", 9 * MiB, 4, 8, 9 * MiB) &&
		  rec_buf(b, "x", 2 * MiB, 5, 6, x_at) &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	if (!ok) {
		printf("#   two_holes: %s\n", d.msg);
		as_builder_destroy(b);
		return NULL;
	}
	return t;
}

static void equal_free_blocks_are_ordered_by_the_recorded_addresses(void)
{
	/* PyTorch takes the lower address: B's hole, though B came later */
	struct as_trace *t = two_holes(18 * MiB);
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(stat_of(p, "blocks_reproduced"), 1);
		const struct as_divergence *dv = as_plan_divergence(p);
		CHECK(dv != NULL);
		if (dv) {
			CHECK_EQ_U64(dv->kind, AS_DIV_NONE);
			CHECK_EQ_U64(dv->compared, 5);
			CHECK_EQ_U64(dv->agree, 5);
			CHECK_EQ_U64(dv->buffer, AS_NONE);
		}
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void the_divergence_names_the_first_block_chosen_otherwise(void)
{
	/* an edited recording: x in A's hole, where PyTorch would not put
	 * it. Same segment size and offset: only the strict comparison
	 * (which recorded segment) tells. */
	struct as_trace *t = two_holes(118 * MiB);
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	const struct as_divergence *dv = p ? as_plan_divergence(p) : NULL;
	CHECK(dv != NULL);
	if (dv) {
		CHECK_EQ_U64(dv->kind, AS_DIV_BLOCK);
		CHECK_EQ_U64(dv->buffer, buf_named(t, "x"));
		CHECK_EQ_U64(dv->time, 5);
		CHECK_EQ_U64(dv->compared, 5);
		CHECK_EQ_U64(dv->agree, 4);
		CHECK_EQ_U64(dv->same_place, 5);
		CHECK_EQ_U64(dv->model.segment, 0);
		CHECK_EQ_U64(dv->recorded.segment, 100 * MiB);
		CHECK_EQ_U64(dv->model.offset, 18 * MiB);
		CHECK_EQ_U64(dv->recorded.offset, 18 * MiB);
		CHECK_EQ_U64(dv->model.segment_size, 20 * MiB);
		CHECK(!dv->model.small && !dv->recorded.small);
		CHECK(!dv->model.new_segment && !dv->recorded.new_segment);
		CHECK_STR(as_div_kind_name(dv->kind), "block chosen");
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void a_copied_plan_keeps_its_divergence_and_other_plans_have_none(void)
{
	/* the divergence is attached to the plan, not a field of it: a copy
	 * (the runner's kept plans) has its own, equal; bfc compares itself
	 * with no recording */
	struct as_trace *t = two_holes(118 * MiB);
	struct as_plan *p = run(t, "cuda-caching");
	struct as_plan *c = p ? as_plan_copy(p) : NULL;
	struct as_plan *o = run(t, "bfc");
	const struct as_divergence *dp = p ? as_plan_divergence(p) : NULL;
	const struct as_divergence *dc = c ? as_plan_divergence(c) : NULL;
	CHECK(dp != NULL && dc != NULL && dp != dc);
	if (dp && dc)
		CHECK(memcmp(dp, dc, sizeof(*dp)) == 0);
	CHECK(o != NULL && as_plan_divergence(o) == NULL);
	as_plan_destroy(o);
	as_plan_destroy(p);
	/* the copy's is its own: it outlives the plan it came from */
	if (dc)
		CHECK_EQ_U64(dc->kind, AS_DIV_BLOCK);
	as_plan_destroy(c);
	as_trace_destroy(t);
}

static void a_cache_emptied_by_the_program_is_emptied_in_the_replay(void)
{
	/* C (30 MiB, cached, free) is given back at step 2 and a 20 MiB
	 * segment D reserved for y: C would have served y, so no
	 * cudaMalloc failed; the program called empty_cache() */
	struct as_builder *b = as_builder_create("empty.pickle", "pickle");
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	bool ok = b && rec_seg(b, 0, 30 * MiB, 0, 2) &&
		  rec_seg(b, 50 * MiB, 20 * MiB, 2, 4) &&
		  rec_buf(b, "w", 4096, 1, 3, 50 * MiB - 2 * MiB) &&
		  rec_buf(b, "y", 20 * MiB, 2, 3, 50 * MiB) &&
		  rec_seg(b, 48 * MiB, 2 * MiB, 1, 4) &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	CHECK(ok);
	if (!ok) {
		printf("#   %s\n", d.msg);
		as_builder_destroy(b);
		return;
	}
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(SEG("y"), 20 * MiB);
		CHECK_EQ_U64(stat_of(p, "blocks_reproduced"), 1);
		CHECK_EQ_U64(stat_of(p, "recorded_empty_cache_replayed"), 1);
		CHECK_EQ_U64(stat_of(p, "num_ooms"), 0);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/*
 * What differs between the two recordings of what_if_trace: where the
 * device put the segments made during the trace (and so every later
 * block's recorded address), their sizes, and the OOM's entry.
 */
struct recorded_side {
	uint64_t a_seg, a_size, f_seg, f_size, g_seg, oom_free, oom_size;
};

/* h takes the lower of f's and g's segments, as PyTorch would. */
static uint64_t h_at(const struct recorded_side *r)
{
	return r->f_seg < r->g_seg ? r->f_seg : r->g_seg;
}

/*
 * A recording that starts with a 20 MiB segment holding w (inherited),
 * then: a (30 MiB) in a new segment, b and d in the inherited one, a freed
 * and its segment given back by the program's empty_cache() at step 4
 * (nothing reserved at that step), an OOM entry at step 5, f and g (40 MiB
 * each) in new segments, both freed, then h (40 MiB) in one of the two
 * equal cached blocks.
 */
static struct as_trace *what_if_trace(const struct recorded_side *r)
{
	struct as_builder *b = as_builder_create("whatif.pickle", "pickle");
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	struct as_mark m = {.time = 5, .size = r->oom_size,
			    .device_free = r->oom_free, .kind = AS_MARK_OOM};
	bool ok = b && rec_seg(b, 0, 20 * MiB, 0, 14) &&
		  rec_buf(b, "w", 4 * MiB, 0, 14, 0) &&
		  rec_seg(b, r->a_seg, r->a_size, 1, 4) &&
		  rec_buf(b, "a", 30 * MiB, 1, 3, r->a_seg) &&
		  rec_buf(b, "b", 8 * MiB, 2, 9, 4 * MiB) &&
		  rec_buf(b, "d", 2 * MiB, 4, 13, 12 * MiB) &&
		  as_builder_mark(b, &m) == AS_OK &&
		  rec_seg(b, r->f_seg, r->f_size, 6, 14) &&
		  rec_buf(b, "f", 40 * MiB, 6, 11, r->f_seg) &&
		  rec_seg(b, r->g_seg, 40 * MiB, 7, 14) &&
		  rec_buf(b, "g", 40 * MiB, 7, 10, r->g_seg) &&
		  rec_buf(b, "h", 40 * MiB, 12, 13, h_at(r)) &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	if (!ok) {
		printf("#   what_if_trace: %s\n", d.msg);
		as_builder_destroy(b);
		return NULL;
	}
	return t;
}

/* Whether two plans of traces with the same buffers place them alike and
 * report the same model figures. */
static bool same_plan(const struct as_trace *t, const struct as_plan *x,
		      const struct as_plan *y)
{
	static const char *const keys[] = {
		"reserved_bytes.peak", "reserved_made", "reserved_inherited",
		"num_ooms", "num_alloc_retries", "model_segment_addresses",
		"fragmentation_at_peak", "recorded_empty_cache_replayed",
	};
	bool same = true;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (x->offset[i] != y->offset[i] ||
		    x->chunk[i] != y->chunk[i] ||
		    x->segment_size[i] != y->segment_size[i] ||
		    x->segment_offset[i] != y->segment_offset[i]) {
			printf("#   %s: %" PRIu64 " vs %" PRIu64 "\n",
			       t->buffers[i].name, x->offset[i], y->offset[i]);
			same = false;
		}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (stat_of(x, keys[k]) != stat_of(y, keys[k])) {
			printf("#   %s: %.0f vs %.0f\n", keys[k],
			       stat_of(x, keys[k]), stat_of(y, keys[k]));
			same = false;
		}
	return same;
}

static void a_what_if_plan_ignores_recorded_addresses_sizes_and_ooms(void)
{
	const struct recorded_side one = {100 * MiB, 30 * MiB, 100 * MiB,
					  40 * MiB, 200 * MiB, 10 * MiB,
					  60 * MiB};
	const struct recorded_side two = {300 * MiB, 32 * MiB, 500 * MiB,
					  42 * MiB, 40 * MiB, 90 * MiB,
					  70 * MiB};
	struct as_trace *t1 = what_if_trace(&one), *t2 = what_if_trace(&two);
	CHECK(t1 && t2);
	static const char *const specs[] = {
		"cuda-caching:max_split_size_mb=20,capacity=64M",
		"cuda-caching:expandable_segments=1,capacity=64M",
		"cuda-caching:roundup_power2_divisions=4,capacity=1G",
		"cuda-caching:capacity=64M",
	};
	for (size_t k = 0; t1 && t2 && k < sizeof(specs) / sizeof(specs[0]);
	     k++) {
		struct as_plan *p1 = run(t1, specs[k]), *p2 = run(t2, specs[k]);
		CHECK(p1 && p2);
		if (p1 && p2) {
			printf("#   %s\n", specs[k]);
			CHECK(same_plan(t1, p1, p2));
			CHECK_EQ_U64(stat_of(p1, "whatif"), 1);
			/* decided by the model alone */
			CHECK_EQ_U64(stat_of(p1, "recorded_ooms_replayed"), 0);
			CHECK_EQ_U64(stat_of(p1, "recorded_segment_addresses_used"),
				     0);
			CHECK_EQ_U64(stat_of(p1, "recorded_empty_cache_replayed"),
				     1);
			CHECK_EQ_U64(stat_of(p1, "inherited_segments"), 1);
			CHECK_EQ_U64(stat_of(p1, "inherited_blocks"), 1);
			CHECK_EQ_U64(stat_of(p1, "reserved_inherited"),
				     20 * MiB);
		}
		/* at 64 MiB, w's segment, f's and g's do not fit: the model
		 * runs out of memory itself, where the recording did not;
		 * at 1 GiB h takes the lower of two equal cached blocks by
		 * the model's addresses, not the recording's */
		if (p1 && k < 2) {
			struct as_trace *t = t1;
			struct as_plan *p = p1;
			CHECK_EQ_U64(stat_of(p, "num_ooms"), 1);
			CHECK_EQ_U64(OFF("g"), AS_NO_OFFSET);
		}
		if (p1 && k == 2) {
			struct as_trace *t = t1;
			struct as_plan *p = p1;
			CHECK_EQ_U64(OFF("h"), OFF("f"));
		}
		as_plan_destroy(p1);
		as_plan_destroy(p2);
	}
	as_trace_destroy(t1);
	as_trace_destroy(t2);
}

static void a_reproduce_run_disagrees_only_where_the_recording_changed(void)
{
	/* the recording's own settings, two recordings: every block agrees
	 * in the first; in the second a's segment is 2 MiB larger than any
	 * allocator would make it, and only a disagrees */
	const struct recorded_side one = {100 * MiB, 30 * MiB, 100 * MiB,
					  40 * MiB, 200 * MiB, 10 * MiB,
					  60 * MiB};
	struct recorded_side two = one;
	two.a_size = 32 * MiB;
	struct as_trace *t1 = what_if_trace(&one), *t = what_if_trace(&two);
	struct as_plan *p1 = run(t1, "cuda-caching");
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p1 && p);
	if (p1 && p) {
		CHECK_EQ_U64(stat_of(p1, "whatif"), 0);
		CHECK_EQ_U64(stat_of(p1, "blocks_compared"), 6);
		CHECK_EQ_U64(stat_of(p1, "blocks_same_place"), 6);
		CHECK_EQ_U64(stat_of(p1, "recorded_ooms_replayed"), 1);
		CHECK_EQ_U64(stat_of(p, "blocks_compared"), 6);
		CHECK_EQ_U64(stat_of(p, "blocks_same_place"), 5);
		const struct as_divergence *dv = as_plan_divergence(p);
		CHECK(dv != NULL);
		if (dv) {
			CHECK_EQ_U64(dv->buffer, buf_named(t, "a"));
			CHECK_EQ_U64(dv->kind, AS_DIV_SEGMENT_SIZE);
		}
		/* the rest of the plan is the first recording's */
		for (uint32_t i = 0; i < t->nbuffers; i++)
			if (i != buf_named(t, "a"))
				CHECK_EQ_U64(p->offset[i], p1->offset[i]);
	}
	as_plan_destroy(p1);
	as_plan_destroy(p);
	as_trace_destroy(t1);
	as_trace_destroy(t);
}

static void inherited_memory_given_back_starts_the_peak_a_setting_changes(void)
{
	/* I (40 MiB, free) and K (20 MiB, holding w) are from before the
	 * recording; the program's empty_cache() gives I back at step 3
	 * (nothing reserved then); d takes a new 30 MiB segment */
	struct as_builder *b = as_builder_create("inherit.pickle", "pickle");
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	bool ok = b && rec_seg(b, 0, 40 * MiB, 0, 3) &&
		  rec_seg(b, 100 * MiB, 20 * MiB, 0, 10) &&
		  rec_buf(b, "w", 4 * MiB, 0, 10, 100 * MiB) &&
		  rec_buf(b, "c", 4 * MiB, 1, 3, 104 * MiB) &&
		  rec_seg(b, 200 * MiB, 30 * MiB, 4, 10) &&
		  rec_buf(b, "d", 30 * MiB, 4, 9, 200 * MiB) &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	CHECK(ok);
	if (!ok) {
		printf("#   %s\n", d.msg);
		as_builder_destroy(b);
		return;
	}
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(stat_of(p, "blocks_reproduced"), 1);
		CHECK_EQ_U64(stat_of(p, "reserved_bytes.peak"), 60 * MiB);
		CHECK_EQ_U64(stat_of(p, "reserved_inherited"), 60 * MiB);
		CHECK_EQ_U64(stat_of(p, "reserved_made"), 30 * MiB);
		CHECK_EQ_U64(stat_of(p, "inherited_released_at.space0"), 3);
		CHECK_EQ_U64(stat_of(p, "reserved_peak_after_release"),
			     50 * MiB);
	}
	as_plan_destroy(p);
	/* expandable segments map d in 20 MiB pages: 40 MiB made, the peak
	 * after the release 60 MiB, the reserved peak the same */
	p = run(t, "cuda-caching:expandable_segments=1");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_U64(stat_of(p, "whatif"), 1);
		CHECK_EQ_U64(stat_of(p, "reserved_bytes.peak"), 60 * MiB);
		CHECK_EQ_U64(stat_of(p, "reserved_made"), 40 * MiB);
		CHECK_EQ_U64(stat_of(p, "reserved_peak_after_release"),
			     60 * MiB);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* ---- agreement with real snapshots ---- */

/*
 * Every snapshot with a trace in `path`: at least `min` of the blocks in a
 * segment of the recorded size at the recorded offset, the reserved peak
 * within 1% of the recording's, and no failed allocation (none of them
 * records an OOM). Counts the snapshots in *seen; false when one could not
 * be read.
 */
/*
 * One snapshot with a trace: at least `min` of the blocks in the recorded
 * block and in a segment of the recorded size at the recorded offset, the
 * reserved peak within 1% of the recording's, and no failed allocation.
 * Counts it in *seen; false when it could not be read.
 */
static bool agree_one(const char *file, const char *name, double min,
		      uint32_t *seen)
{
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	if (as_trace_load(file, NULL, &t, &d) != AS_OK)
		return false;
	uint32_t nalloc = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		nalloc += t->buffers[i].start > 0;
	if (!t->nsegments || !nalloc) {
		as_trace_destroy(t);
		return true;
	}
	(*seen)++;
	struct as_plan *p = run(t, "cuda-caching");
	CHECK(p != NULL);
	if (p) {
		double br = stat_of(p, "blocks_reproduced");
		double sr = stat_of(p, "segments_reproduced");
		double mp = stat_of(p, "reserved_bytes.peak");
		double rp = stat_of(p, "recorded_reserved_peak");
		const struct as_divergence *dv = as_plan_divergence(p);
		double in = dv && dv->compared
				    ? (double)dv->agree / (double)dv->compared
				    : 0;
		printf("#   %s: in the recorded block %.4f blocks_reproduced "
		       "%.4f segments_reproduced %.4f reserved peak %.0f "
		       "recorded %.0f\n",
		       name, in, br, sr, mp, rp);
		CHECK(in >= min);
		CHECK(br >= min);
		CHECK(sr >= min);
		CHECK(rp > 0 && mp >= rp * 0.99 && mp <= rp * 1.01);
		CHECK_EQ_U64(as_plan_failed(p, t), 0);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
	return true;
}

/* agree_one for every snapshot in `path`. */
static bool agree_in(const char *path, double min, uint32_t *seen)
{
	DIR *dd = opendir(path);
	if (!dd)
		return true;
	bool readable = true;
	struct dirent *e;
	while ((e = readdir(dd))) {
		size_t l = strlen(e->d_name);
		if (l < 7 || strcmp(e->d_name + l - 7, ".pickle") != 0)
			continue;
		char file[1300];
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		readable = agree_one(file, e->d_name, min, seen) && readable;
	}
	closedir(dd);
	return readable;
}

/* ../shared/snapshots (the bundled ones: every block), fidelity/ (real
 * snapshots of other projects) and diverging/: at
 * least 99%. */
static void snapshots_are_reproduced_block_for_block(void)
{
	const char *dir = getenv("AS_SHARED_DIR");
	char path[1024];
	if (!dir) {
		TEST_SKIP(snapshots_are_reproduced_block_for_block,
			  "AS_SHARED_DIR is not set");
		return;
	}
	snprintf(path, sizeof(path), "%s/snapshots", dir);
	DIR *dd = opendir(path);
	if (!dd) {
		TEST_SKIP(snapshots_are_reproduced_block_for_block,
			  "no ../shared/snapshots");
		return;
	}
	closedir(dd);
	uint32_t seen = 0;
	tap_cur_failed = 0;
	bool readable = agree_in(path, 1.0, &seen);
	snprintf(path, sizeof(path), "%s/snapshots/fidelity", dir);
	readable = agree_in(path, 0.99, &seen) && readable;
	/* diverging/: expandable segments mapped during the recording, and
	 * the tails of blocks from before it */
	snprintf(path, sizeof(path), "%s/snapshots/diverging", dir);
	readable = agree_in(path, 0.99, &seen) && readable;
	if (!seen) {
		TEST_SKIP(snapshots_are_reproduced_block_for_block,
			  readable ? "no snapshot with a trace"
				   : "snapshots cannot be read by this build");
		return;
	}
	tap_n++;
	printf("%sok %d - %s\n", tap_cur_failed ? "not " : "", tap_n,
	       "snapshots_are_reproduced_block_for_block");
	tap_failed += tap_cur_failed;
}

int main(void)
{
	TEST_RUN(rounding_is_512_bytes_and_the_pools_split_at_one_mib);
	TEST_RUN(roundup_power2_divisions_round_to_a_division);
	TEST_RUN(segment_sizes_follow_the_request);
	TEST_RUN(a_request_of_exactly_10_mib_gets_a_10_mib_segment);
	TEST_RUN(best_fit_takes_the_smallest_block_then_the_lowest_address);
	TEST_RUN(large_blocks_split_only_above_one_mib_small_ones_at_512);
	TEST_RUN(oversize_blocks_serve_only_close_oversize_requests);
	TEST_RUN(a_free_block_merges_with_prev_then_next);
	TEST_RUN(oom_releases_cached_segments_and_retries_then_fails);
	TEST_RUN(an_oom_says_whether_fragmentation_or_live_memory_failed_it);
	TEST_RUN(expandable_segments_grow_one_range_by_pages);
	TEST_RUN(a_recorded_oom_releases_the_cache_and_tells_the_device_size);
	TEST_RUN(free_blocks_are_reused_only_by_their_own_stream);
	TEST_RUN(garbage_collection_frees_old_segments_above_the_threshold);
	TEST_RUN(snapshot_settings_are_the_defaults_and_options_win);
	TEST_RUN(bad_options_are_refused_by_name);
	TEST_RUN(the_plan_csv_carries_segment_columns);
	TEST_RUN(check_reports_broken_invariants_as_data);
	TEST_RUN(random_traces_keep_every_invariant_after_every_event);
	TEST_RUN(equal_free_blocks_are_ordered_by_the_recorded_addresses);
	TEST_RUN(the_divergence_names_the_first_block_chosen_otherwise);
	TEST_RUN(a_copied_plan_keeps_its_divergence_and_other_plans_have_none);
	TEST_RUN(a_cache_emptied_by_the_program_is_emptied_in_the_replay);
	TEST_RUN(a_what_if_plan_ignores_recorded_addresses_sizes_and_ooms);
	TEST_RUN(a_reproduce_run_disagrees_only_where_the_recording_changed);
	TEST_RUN(inherited_memory_given_back_starts_the_peak_a_setting_changes);
	snapshots_are_reproduced_block_for_block();
	return tap_done();
}
