/*
 * Tests of the bfc strategy: the golden vectors of TensorFlow's real BFC
 * allocator (../shared/bfc-vectors, skipped when absent), our own small
 * vectors (tests/bfc), one test per rule, and seeded random traces checked
 * after every event, validated, and compared with a naive reference model.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>

#include "allocscope/build.h"
#include "strategies/bfc.h"
#include "tap.h"

/* ---- a growable list of lines ---- */

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		abort();
	l->n++;
}

static void lines_addf(struct lines *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void lines_addf(struct lines *l, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	lines_add(l, buf);
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void collect(void *ctx, const char *line)
{
	lines_add(ctx, line);
}

/* The lines of a file, without comments; false when it cannot be read. */
static bool read_lines(const char *path, struct lines *out)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	if (!f)
		return false;
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\r\n")] = 0;
		if (buf[0] == '#')
			continue;
		lines_add(out, buf);
	}
	fclose(f);
	return true;
}

/* Compare; print the first difference as a TAP comment. */
static bool same_lines(const struct lines *got, const struct lines *want,
		       const char *what)
{
	size_t n = got->n < want->n ? got->n : want->n;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(got->v[i], want->v[i]) != 0) {
			printf("#   %s: line %zu differs\n#     got:      %s\n"
			       "#     expected: %s\n",
			       what, i + 1, got->v[i], want->v[i]);
			return false;
		}
	}
	if (got->n != want->n) {
		printf("#   %s: %zu lines, expected %zu (first extra: %s)\n",
		       what, got->n, want->n,
		       got->n > want->n ? got->v[n] : want->v[n]);
		return false;
	}
	return true;
}

/* ---- replaying a trace in the .expected format ---- */

static const struct as_strategy_impl *bfc_impl(void)
{
	return as_strategy_impl_find("bfc");
}

static void config_line(const struct as_trace *t, uint32_t c,
			struct lines *out)
{
	static const char *const keys[] = {"total", "growth", "gc", "frag",
					   "coalesce", "capacity"};
	struct as_opts o;
	struct as_diag d = {0};
	char line[512] = "config";
	as_opts_parse(&o, "bfc", bfc_impl()->info.options,
		      t->cases[c].options, NULL, &d);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = as_opts_get(&o, keys[k]);
		size_t n = strlen(line);
		snprintf(line + n, sizeof(line) - n, " %s=%s", keys[k],
			 v ? v : "0");
	}
	lines_add(out, line);
}

static void alloc_line(const struct as_trace *t, uint32_t i, uint64_t off,
		       uint64_t chunk, struct lines *out)
{
	const struct as_buffer *b = &t->buffers[i];
	if (off == AS_NO_OFFSET)
		lines_addf(out, "alloc %s %" PRIu64 " align=%" PRIu64 " -> FAIL",
			   b->name, b->size, as_buffer_align(b));
	else
		lines_addf(out,
			   "alloc %s %" PRIu64 " align=%" PRIu64
			   " -> base+0x%" PRIx64 " (chunk %" PRIu64 ")",
			   b->name, b->size, as_buffer_align(b), off, chunk);
}

/*
 * Drive the allocator event by event, as the vectors' harness printed it:
 * config lines, [sub] lines, alloc and free lines, query output. check()
 * runs after every event; a broken invariant ends the replay with a line.
 */
static void replay_expected_format(const struct as_trace *t,
				   const char *spec_opts, struct lines *out)
{
	const struct as_online_impl *on = bfc_impl()->online;
	struct as_diag d = {0};
	struct as_opts o;
	void *st = NULL;
	uint8_t *placed = calloc(t->nbuffers + 1, 1);
	for (uint32_t e = 0; e <= t->nevents; e++) {
		const struct as_event *ev = e < t->nevents ? &t->events[e] : NULL;
		if (e == 0 || (ev && ev->kind == AS_EV_CASE)) {
			uint32_t c = e == 0 ? 0 : ev->arg;
			config_line(t, c, out);
			on->destroy(st);
			st = NULL;
			if (as_opts_parse(&o, "bfc", bfc_impl()->info.options,
					  t->cases[c].options, spec_opts, &d) ||
			    on->create(&o, &(struct as_run){.emit = collect,
							    .ctx = out},
				       &st, &d)) {
				lines_addf(out, "ERROR %s", d.msg);
				break;
			}
			if (e == 0 && ev && ev->kind == AS_EV_CASE)
				continue;
		}
		if (!ev)
			break;
		uint32_t i = ev->arg;
		if (ev->kind == AS_EV_ALLOC) {
			uint64_t off = AS_NO_OFFSET, chunk = 0;
			int r = on->alloc(st, t, i, &off, &chunk);
			if (r < 0) {
				lines_addf(out, "ERROR alloc %d", r);
				break;
			}
			if (r == 1)
				off = AS_NO_OFFSET;
			placed[i] = r == 0;
			alloc_line(t, i, off, chunk, out);
		} else if (ev->kind == AS_EV_FREE) {
			if (placed[i])
				on->free(st, t, i);
			placed[i] = 0;
			lines_addf(out, "free %s", t->buffers[i].name);
		} else if (ev->kind == AS_EV_QUERY) {
			on->query(st, (enum as_query)i);
		}
		char msg[256];
		uint64_t broken = on->check(st, msg, sizeof(msg));
		if (broken) {
			lines_addf(out, "CHECK %" PRIu64 " broken: %s", broken,
				   msg);
			break;
		}
	}
	on->destroy(st);
	free(placed);
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * The same trace through the public path (as_strategy_run with emit and
 * checks): the plan's offsets and chunks must give the expected alloc lines
 * and the emitted lines the expected [sub], stats, dump and render lines.
 */
static bool run_public_path(const struct as_trace *t, const char *spec,
			    const struct lines *want)
{
	struct lines emitted = {0}, got_alloc = {0}, got_emit = {0};
	struct lines want_alloc = {0}, want_emit = {0};
	struct as_runner_options hooks = {.emit = collect,
					  .ctx = &emitted,
					  .check_every_event = true};
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	bool ok = true;
	int err = as_strategy_run(spec, t, &hooks, &p, &d);
	if (err) {
		printf("#   as_strategy_run(%s): %s\n", spec, d.msg);
		lines_free(&emitted);
		return false;
	}
	for (uint32_t e = 0; e < t->nevents; e++)
		if (t->events[e].kind == AS_EV_ALLOC) {
			uint32_t i = t->events[e].arg;
			alloc_line(t, i, p->offset[i], p->chunk[i], &got_alloc);
		}
	for (size_t i = 0; i < want->n; i++) {
		const char *s = want->v[i];
		if (starts(s, "alloc "))
			lines_add(&want_alloc, s);
		else if (!starts(s, "free ") && !starts(s, "config "))
			lines_add(&want_emit, s);
	}
	for (size_t i = 0; i < emitted.n; i++)
		lines_add(&got_emit, emitted.v[i]);
	ok &= same_lines(&got_alloc, &want_alloc, "plan allocations");
	ok &= same_lines(&got_emit, &want_emit, "emitted lines");
	/* old releases ignore alignment: alignment violations are the truth
	 * then, overlaps never are */
	bool align_old = strstr(spec, "align=old") != NULL;
	struct as_report rep;
	if (as_validate(t, p, &rep) != AS_OK || rep.overlaps ||
	    (!rep.valid && !align_old)) {
		printf("#   the plan does not validate\n");
		ok = false;
	}
	as_plan_destroy(p);
	lines_free(&emitted);
	lines_free(&got_alloc);
	lines_free(&got_emit);
	lines_free(&want_alloc);
	lines_free(&want_emit);
	return ok;
}

/* Variants of an expected file: NAME.VARIANT.expected and their options. */
static const char *variant_spec(const char *variant)
{
	if (strcmp(variant, "pre2026-04") == 0)
		return "align=old";
	return NULL;
}

/*
 * Replay every NAME.txt of `dir` and compare it with NAME.expected and
 * every NAME.VARIANT.expected. Returns how many files were compared.
 */
static int replay_vector_dir(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int compared = 0;
	if (!dp) {
		printf("#   cannot open %s\n", dir);
		tap_cur_failed = 1;
		return 0;
	}
	while ((de = readdir(dp))) {
		const char *name = de->d_name;
		size_t len = strlen(name);
		if (len < 10 || strcmp(name + len - 9, ".expected") != 0)
			continue;
		char base[256], variant[64] = "";
		const char *dot = memchr(name, '.', len);
		snprintf(base, sizeof(base), "%.*s", (int)(dot - name), name);
		if (dot != name + len - 9)
			snprintf(variant, sizeof(variant), "%.*s",
				 (int)(name + len - 9 - dot - 1), dot + 1);
		const char *spec_opts = variant[0] ? variant_spec(variant) : "";
		if (!spec_opts) {
			printf("#   %s: unknown variant '%s'\n", name, variant);
			tap_cur_failed = 1;
			continue;
		}
		char tpath[1024], epath[1024];
		snprintf(tpath, sizeof(tpath), "%s/%s.txt", dir, base);
		snprintf(epath, sizeof(epath), "%s/%s", dir, name);
		struct as_trace *t = NULL;
		struct as_diag d = {0};
		struct lines want = {0}, got = {0};
		if (as_trace_load(tpath, "ops", &t, &d) != AS_OK) {
			char buf[1024];
			printf("#   %s\n", as_diag_text(&d, buf, sizeof(buf)));
			tap_cur_failed = 1;
			continue;
		}
		CHECK(read_lines(epath, &want));
		replay_expected_format(t, spec_opts, &got);
		if (!same_lines(&got, &want, name))
			tap_cur_failed = 1;
		char spec[128];
		snprintf(spec, sizeof(spec), "bfc%s%s", spec_opts[0] ? ":" : "",
			 spec_opts);
		if (!run_public_path(t, spec, &want)) {
			printf("#   (public path of %s)\n", name);
			tap_cur_failed = 1;
		}
		compared++;
		lines_free(&want);
		lines_free(&got);
		as_trace_destroy(t);
	}
	closedir(dp);
	return compared;
}

static void bfc_reproduces_every_golden_vector_of_the_real_allocator(void)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/bfc-vectors", tap_shared_dir());
	int n = replay_vector_dir(dir);
	printf("#   %d expected files compared\n", n);
	CHECK(n >= 13);
}

static void bfc_reproduces_the_small_vectors_kept_in_this_repository(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/tests/bfc", src ? src : ".");
	int n = replay_vector_dir(dir);
	printf("#   %d expected files compared\n", n);
	CHECK(n >= 4);
}

/* ---- one test per rule, on traces written inline ---- */

struct run {
	struct as_trace *t;
	struct as_plan *p;
	struct lines emitted;
	int err;
};

static struct run run_ops(const char *text, const char *spec)
{
	struct run r = {0};
	struct as_diag d = {0};
	r.err = as_trace_parse("inline.ops", text, strlen(text), "ops",
			       &r.t, &d);
	if (r.err) {
		printf("#   parse: %s\n", d.msg);
		tap_cur_failed = 1;
		return r;
	}
	struct as_runner_options hooks = {.emit = collect,
					  .ctx = &r.emitted,
					  .check_every_event = true};
	r.err = as_strategy_run(spec, r.t, &hooks, &r.p, &d);
	if (r.err)
		printf("#   run: %s\n", d.msg);
	return r;
}

static void run_done(struct run *r)
{
	as_plan_destroy(r->p);
	as_trace_destroy(r->t);
	lines_free(&r->emitted);
}

/* The last buffer called `name`. */
static uint32_t buf_named(const struct as_trace *t, const char *name)
{
	for (uint32_t i = t ? t->nbuffers : 0; i-- > 0;)
		if (strcmp(t->buffers[i].name, name) == 0)
			return i;
	printf("#   no buffer %s\n", name);
	tap_cur_failed = 1;
	return 0;
}

static uint64_t off_of(const struct run *r, const char *name)
{
	return r->p ? r->p->offset[buf_named(r->t, name)] : 0;
}

static uint64_t chunk_of(const struct run *r, const char *name)
{
	return r->p ? r->p->chunk[buf_named(r->t, name)] : 0;
}

static uint64_t failed_of(const struct run *r)
{
	return r->p ? as_plan_failed(r->p, r->t) : UINT64_MAX;
}

static double stat_of(const struct run *r, const char *key)
{
	for (uint32_t i = 0; r->p && i < r->p->nstats; i++)
		if (strcmp(r->p->stats[i].key, key) == 0)
			return r->p->stats[i].value;
	printf("#   no stat %s\n", key);
	tap_cur_failed = 1;
	return -1;
}

static bool emitted_has(const struct run *r, const char *line)
{
	for (size_t i = 0; i < r->emitted.n; i++)
		if (strcmp(r->emitted.v[i], line) == 0)
			return true;
	printf("#   no emitted line '%s'\n", line);
	return false;
}

static void bfc_rounds_requests_up_to_multiples_of_256(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 1\nalloc b 256\nalloc c 257\n",
			       "bfc");
	CHECK_EQ_U64(r.err, 0);
	CHECK_EQ_U64(chunk_of(&r, "a"), 256);
	CHECK_EQ_U64(chunk_of(&r, "b"), 256);
	CHECK_EQ_U64(off_of(&r, "c"), 512);
	CHECK_EQ_U64(chunk_of(&r, "c"), 512);
	run_done(&r);
}

static void bfc_fails_a_request_of_zero_bytes_and_ignores_its_free(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc z 0\nfree z\nalloc a 10\n",
			       "bfc");
	CHECK_EQ_U64(r.err, 0);
	CHECK_EQ_U64(off_of(&r, "z"), AS_NO_OFFSET);
	CHECK_EQ_U64(failed_of(&r), 0); /* empty ones don't count */
	CHECK_EQ_U64(off_of(&r, "a"), 0);
	CHECK_EQ_U64(stat_of(&r, "num_allocs"), 1);
	/* no region is requested for a zero-byte request */
	CHECK_EQ_U64(r.emitted.n, 2); /* one [sub] Alloc, one [sub] Free */
	run_done(&r);
}

static void bfc_takes_the_smallest_fitting_chunk_at_the_lowest_address(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc h1 1024\nalloc g1 256\n"
			       "alloc h2 768\nalloc g2 256\n"
			       "alloc h3 1024\nalloc g3 256\n"
			       "free h3\nfree h1\nfree h2\n"
			       "alloc x 700\nalloc y 1000\nalloc w 1000\n",
			       "bfc");
	CHECK_EQ_U64(off_of(&r, "x"), 0x500);  /* 768 is the best fit */
	CHECK_EQ_U64(chunk_of(&r, "x"), 768);
	CHECK_EQ_U64(off_of(&r, "y"), 0);      /* 1024s: lowest address */
	CHECK_EQ_U64(off_of(&r, "w"), 0x900);
	run_done(&r);
}

static void bfc_splits_only_when_the_chunk_is_twice_the_request(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 1024\nalloc g 256\nfree a\n"
			       "alloc b 513\n"         /* 1024 < 2*768 */
			       "free b\nalloc c 512\n" /* 1024 = 2*512 */
			       "alloc d 256\n",
			       "bfc");
	CHECK_EQ_U64(chunk_of(&r, "b"), 1024);
	CHECK_EQ_U64(chunk_of(&r, "c"), 512);
	CHECK_EQ_U64(off_of(&r, "d"), 512);
	run_done(&r);
}

static void bfc_splits_when_the_rest_reaches_the_split_cap(void)
{
	/* 300 MiB hole, 160 MiB request: 140 MiB >= 128 MiB -> split */
	struct run r = run_ops("config total=1G growth=0\n"
			       "alloc a 314572800\nalloc g 256\nfree a\n"
			       "alloc b 167772160\nalloc c 1\n",
			       "bfc");
	CHECK_EQ_U64(chunk_of(&r, "b"), 167772160);
	CHECK_EQ_U64(off_of(&r, "c"), 167772160);
	run_done(&r);
	/* frag=0.25: cap 256 MiB, so the same 140 MiB stays attached */
	r = run_ops("config total=1G growth=0 frag=0.25\n"
		    "alloc a 314572800\nalloc g 256\nfree a\n"
		    "alloc b 167772160\n",
		    "bfc");
	CHECK_EQ_U64(chunk_of(&r, "b"), 314572800);
	run_done(&r);
}

static void bfc_merges_a_freed_chunk_with_next_then_previous(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 256\nalloc b 256\nalloc c 256\n"
			       "alloc d 256\nfree a\nfree c\nfree b\n"
			       "dump\nalloc e 768\n",
			       "bfc");
	/* b merged with c (next) and then a (previous): one 768 chunk */
	CHECK(emitted_has(&r, "  Free  base+0x0 size=768 req=256 bin=1"));
	CHECK_EQ_U64(off_of(&r, "e"), 0);
	CHECK_EQ_U64(chunk_of(&r, "e"), 768);
	run_done(&r);
}

static void bfc_never_merges_across_regions_without_coalesce(void)
{
	struct run r = run_ops("config total=1G growth=1\n"
			       "alloc a 1048576\nalloc b 3145728\nfree a\nfree b\n"
			       "dump\n",
			       "bfc");
	CHECK(emitted_has(&r, "dump chunks=2"));
	CHECK(emitted_has(&r, "  Free  base+0x0 size=2097152 req=1048576 bin=13"));
	CHECK(emitted_has(&r, "  Free  base+0x200000 size=4194304 req=3145728 bin=14"));
	run_done(&r);
}

static void bfc_coalesces_touching_regions_when_the_sub_allocator_can(void)
{
	struct run r = run_ops("config total=1G growth=1 coalesce=1\n"
			       "alloc a 1048576\nalloc b 3145728\nfree a\nfree b\n"
			       "dump\n",
			       "bfc");
	/* the new 4 MiB region merges with the free 1 MiB tail of region
	 * 0; b takes that 5 MiB chunk whole (5 < 2 * 3) */
	CHECK_EQ_U64(off_of(&r, "b"), 0x100000);
	CHECK_EQ_U64(chunk_of(&r, "b"), 5242880);
	CHECK(emitted_has(&r, "dump chunks=1"));
	CHECK(emitted_has(&r, "  [sub] Free(base+0x0, 6291456)"));
	run_done(&r);
}

static void bfc_grows_regions_by_doubling_the_target(void)
{
	struct run r = run_ops("config total=1G growth=1\n"
			       "curr\nalloc a 2097152\ncurr\nalloc b 20971520\ncurr\n"
			       "alloc c 1\n",
			       "bfc");
	CHECK(emitted_has(&r, "curr_region_allocation_bytes=2097152"));
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 2097152) -> base+0x0"));
	CHECK(emitted_has(&r, "curr_region_allocation_bytes=4194304"));
	/* 20 MiB > 4 MiB: doubles to 32 MiB and does not double again */
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 33554432) -> base+0x200000"));
	CHECK(emitted_has(&r, "curr_region_allocation_bytes=33554432"));
	/* 32 MiB < 2 * 20 MiB: the whole region is handed out */
	CHECK_EQ_U64(chunk_of(&r, "b"), 33554432);
	/* nothing free: a third region of the (undoubled) 32 MiB target */
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 33554432) -> base+0x2200000"));
	CHECK_EQ_U64(off_of(&r, "c"), 0x2200000);
	run_done(&r);
}

static void bfc_first_region_option_gives_the_older_1_MiB_start(void)
{
	struct run r = run_ops("config total=1G growth=1\n"
			       "alloc a 1\n",
			       "bfc:first_region=1M");
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 1048576) -> base+0x0"));
	run_done(&r);
}

static void bfc_growth_stops_at_the_total(void)
{
	struct run r = run_ops("config total=3M growth=1\n"
			       "alloc a 2097152\nalloc b 1048576\nalloc c 256\n",
			       "bfc");
	/* the second region is min(4 MiB, room left 1 MiB) */
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 1048576) -> base+0x200000"));
	CHECK_EQ_U64(off_of(&r, "b"), 0x200000);
	CHECK_EQ_U64(off_of(&r, "c"), AS_NO_OFFSET);
	CHECK_EQ_U64(failed_of(&r), 1);
	run_done(&r);
}

static void bfc_backs_off_by_0_9_in_single_precision(void)
{
	struct run r = run_ops("config total=1G growth=0 capacity=700M\n"
			       "alloc a 256\n",
			       "bfc");
	CHECK(emitted_has(&r, "  [sub] Alloc(1073741824) -> FAIL (capacity)"));
	CHECK(emitted_has(&r, "  [sub] Alloc(966367744) -> FAIL (capacity)"));
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 704482304) -> base+0x0"));
	CHECK_EQ_U64(stat_of(&r, "region_refusals"), 4);
	run_done(&r);
}

static void bfc_back_off_gives_up_below_the_request(void)
{
	struct run r = run_ops("config total=1G growth=1 capacity=3M\n"
			       "alloc a 2097152\nalloc b 1048576\nalloc c 2097152\n",
			       "bfc");
	/* only 1 MiB is left on the device: 4 MiB backs off step by step
	 * to 1067008 (refused), then 960512 < 1 MiB: b fails, and so does c */
	CHECK_EQ_U64(off_of(&r, "a"), 0);
	CHECK_EQ_U64(off_of(&r, "b"), AS_NO_OFFSET);
	CHECK(emitted_has(&r, "  [sub] Alloc(1067008) -> FAIL (capacity)"));
	CHECK_EQ_U64(off_of(&r, "c"), AS_NO_OFFSET);
	CHECK(stat_of(&r, "pool_bytes") <= 3145728);
	run_done(&r);
}

static void bfc_garbage_collects_free_regions_and_retries_once(void)
{
	struct run r = run_ops("config total=8M growth=1 gc=1\n"
			       "alloc a 1048576\nfree a\nalloc b 7340032\n",
			       "bfc");
	CHECK(emitted_has(&r, "  [sub] Free(base+0x0, 2097152)"));
	CHECK_EQ_U64(off_of(&r, "b"), 0x200000);
	CHECK_EQ_U64(stat_of(&r, "regions_released"), 1);
	run_done(&r);
	r = run_ops("config total=8M growth=1 gc=0\n"
		    "alloc a 1048576\nfree a\nalloc b 7340032\n",
		    "bfc");
	CHECK_EQ_U64(off_of(&r, "b"), AS_NO_OFFSET);
	run_done(&r);
}

static void bfc_honours_alignment_above_256_with_a_free_prefix(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 256\nalloc b 256 65536\ndump\n",
			       "bfc");
	CHECK_EQ_U64(off_of(&r, "b"), 65536);
	CHECK(emitted_has(&r, "  Free  base+0x100 size=65280 req=0 bin=7"));
	run_done(&r);
	r = run_ops("config total=1M growth=0\n"
		    "alloc a 256\nalloc b 256 65536\n",
		    "bfc:align=old");
	CHECK_EQ_U64(off_of(&r, "b"), 256);
	run_done(&r);
}

static void bfc_skips_chunks_too_small_once_aligned(void)
{
	/* 512@0x100 would fit 512 bytes, but not 512 aligned to 1 KiB */
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 256\nalloc h 512\nalloc g 256\n"
			       "alloc i 1280\nalloc k 256\n"
			       "free h\nfree i\nalloc b 512 1024\n",
			       "bfc");
	CHECK_EQ_U64(off_of(&r, "b"), 0x400); /* 1280@0x400, split */
	CHECK_EQ_U64(chunk_of(&r, "b"), 512);
	run_done(&r);
}

static void bfc_starts_offsets_again_at_each_case(void)
{
	struct run r = run_ops("config total=1M growth=0\nalloc a 300\n"
			       "config total=1M growth=0\nalloc b 300\n",
			       "bfc");
	CHECK_EQ_U64(off_of(&r, "a"), 0);
	CHECK_EQ_U64(off_of(&r, "b"), 0);
	run_done(&r);
}

static void bfc_reports_its_statistics_in_the_plan(void)
{
	struct run r = run_ops("config total=1M growth=0\n"
			       "alloc a 100\nalloc b 1000\nalloc c 300\n"
			       "free a\nfree c\n",
			       "bfc");
	CHECK_EQ_U64(stat_of(&r, "num_allocs"), 3);
	CHECK_EQ_U64(stat_of(&r, "bytes_in_use"), 1024);
	CHECK_EQ_U64(stat_of(&r, "peak_bytes_in_use"), 1792);
	CHECK_EQ_U64(stat_of(&r, "largest_alloc_size"), 1024);
	CHECK_EQ_U64(stat_of(&r, "pool_bytes"), 1048576);
	CHECK_EQ_U64(stat_of(&r, "peak_pool_bytes"), 1048576);
	CHECK_EQ_U64(stat_of(&r, "largest_free_block"), 1048576 - 1280);
	CHECK_EQ_U64(stat_of(&r, "regions"), 1);
	/* waste at the peak: (256-100) + (1024-1000) + (512-300) */
	CHECK_EQ_U64(stat_of(&r, "internal_waste_at_peak"), 392);
	double frag = stat_of(&r, "fragmentation");
	double free_pool = 1048576.0 - 1024.0;
	CHECK(frag > (256.0 / free_pool) - 1e-12 &&
	      frag < (256.0 / free_pool) + 1e-12);
	run_done(&r);
}

static void bfc_renders_the_100_character_occupancy_line(void)
{
	/* 25600 bytes: one cell is 256 bytes. x takes p's 3840-byte hole
	 * whole (3840 < 2 * 2048): requested cells 0..7, padding 8..14 */
	struct run r = run_ops("config total=25600 growth=0\nrender\n"
			       "alloc p 3840\nalloc q 256\nfree p\n"
			       "alloc x 2000\nrender\n",
			       "bfc");
	char want[128] = "render ";
	memset(want + 7, '*', 8);
	memset(want + 15, 'x', 7);
	memset(want + 22, '*', 1);
	memset(want + 23, '_', 84);
	want[107] = 0;
	CHECK_EQ_U64(chunk_of(&r, "x"), 3840);
	CHECK(emitted_has(&r, "render <allocator contains no memory>"));
	CHECK(emitted_has(&r, want));
	run_done(&r);
}

static void bfc_rejects_options_out_of_range_with_a_clear_error(void)
{
	static const char *const bad[] = {
		"bfc:growth=2", "bfc:frag=1.5", "bfc:align=sideways",
		"bfc:total=100", "bfc:nonsense=1", "bfc:first_region=12",
	};
	const char *text = "alloc a 1\n";
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct as_trace *t = NULL;
		struct as_plan *p = NULL;
		struct as_diag d = {0};
		CHECK(as_trace_parse("x.ops", text, strlen(text), "ops",
				     &t, &d) == AS_OK);
		int err = as_strategy_run(bad[i], t, NULL, &p, &d);
		CHECK(err < 0);
		CHECK(strstr(d.msg, "bfc") != NULL);
		if (err >= 0)
			printf("#   %s accepted\n", bad[i]);
		as_plan_destroy(p);
		as_trace_destroy(t);
	}
}

/* The remark (AS_NOTE_CAPACITY) of a plan, or NULL. */
static const char *capacity_note(const struct as_plan *p)
{
	for (uint32_t i = 0; p && i < p->nnotes; i++)
		if (strncmp(p->notes[i], AS_NOTE_CAPACITY,
			    strlen(AS_NOTE_CAPACITY)) == 0)
			return p->notes[i];
	return NULL;
}

static void bfc_takes_its_limit_from_the_trace_else_none(void)
{
	/* no limit stated: 20 GiB fits (total=16G was the default once) */
	struct run r = run_ops("alloc a 21474836480\nalloc b 256\n", "bfc");
	CHECK_EQ_U64(r.err, AS_OK);
	if (r.p) {
		CHECK_EQ_U64(as_plan_failed(r.p, r.t), 0);
		CHECK(capacity_note(r.p) == NULL);
	}
	run_done(&r);
	/* an option still sets it, and the run says so */
	r = run_ops("alloc a 21474836480\nalloc b 256\n", "bfc:total=16G");
	if (r.p) {
		CHECK_EQ_U64(as_plan_failed(r.p, r.t), 1);
		CHECK_STR(capacity_note(r.p),
			  "capacity: default: 17179869184 B (16.0 GiB) from "
			  "the option total=17179869184");
	}
	run_done(&r);
	/* a pool's capacity is the limit */
	const char *json =
		"{\"format\": \"allocscope-trace\", \"version\": 1,"
		" \"pools\": [{\"name\": \"hbm\", \"capacity\": 1048576}],"
		" \"events\": [{\"op\": \"alloc\", \"name\": \"a\","
		" \"size\": 2097152}, {\"op\": \"alloc\", \"name\": \"b\","
		" \"size\": 4096}]}";
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d = {0};
	CHECK(as_trace_parse("pool.json", json, strlen(json), "json", &t,
			     &d) == AS_OK);
	if (t && as_strategy_run("bfc", t, NULL, &p, &d) == AS_OK) {
		CHECK_EQ_U64(p->offset[0], AS_NO_OFFSET);
		CHECK(p->offset[1] != AS_NO_OFFSET);
		CHECK_STR(capacity_note(p),
			  "capacity: hbm: 1048576 B (1.00 MiB) from the trace "
			  "(its space's capacity)");
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void bfc_config_lines_are_overridden_by_the_spec(void)
{
	struct run r = run_ops("config total=1M growth=0\nalloc a 2097152\n",
			       "bfc:total=4M");
	CHECK_EQ_U64(off_of(&r, "a"), 0);
	CHECK(emitted_has(&r, "  [sub] Alloc(align=256, 4194304) -> base+0x0"));
	run_done(&r);
}

/* A state with regions, in-use and free chunks in several bins. */
static struct bfc *broken_state_base(struct as_trace **tp)
{
	static const char text[] =
		"config total=64M growth=1\n"
		"alloc a 1000\nalloc b 5000\nalloc c 70000\nalloc d 3000000\n"
		"alloc e 300\nfree b\nfree d\n";
	struct as_diag d = {0};
	struct as_opts o;
	void *st = NULL;
	if (as_trace_parse("x.ops", text, strlen(text), "ops", tp, &d) ||
	    as_opts_parse(&o, "bfc", bfc_impl()->info.options,
			  (*tp)->cases[0].options, NULL, &d) ||
	    bfc_impl()->online->create(&o, &(struct as_run){0}, &st, &d))
		return NULL;
	for (uint32_t e = 0; e < (*tp)->nevents; e++) {
		const struct as_event *ev = &(*tp)->events[e];
		uint64_t off, chunk;
		if (ev->kind == AS_EV_ALLOC)
			bfc_impl()->online->alloc(st, *tp, ev->arg, &off, &chunk);
		else if (ev->kind == AS_EV_FREE)
			bfc_impl()->online->free(st, *tp, ev->arg);
	}
	return st;
}

/* The first free and in-use chunks in address order. */
static uint32_t chunk_where(struct bfc *s, bool in_use)
{
	for (uint32_t r = 0; r < s->nregions; r++)
		for (uint32_t i = s->r[r].first; i != NIL; i = s->c[i].next)
			if (s->c[i].in_use == in_use)
				return i;
	return NIL;
}

static void bfc_check_reports_each_broken_invariant_as_data(void)
{
	enum { SIZE, FREE_FLAG, UNBINNED, BYTES, LINK, WRONG_BIN, POOL, LIVE, N };
	static const char *const what[N] = {
		"a chunk size", "an in-use chunk marked free",
		"a free chunk missing from its bin", "bytes_in_use",
		"a prev link", "a chunk in the wrong bin", "pool_bytes",
		"the live buffer map"};
	for (int k = 0; k < N; k++) {
		struct as_trace *t = NULL;
		struct bfc *s = broken_state_base(&t);
		char msg[256] = "";
		CHECK(s != NULL);
		if (!s) {
			as_trace_destroy(t);
			continue;
		}
		CHECK_EQ_U64(as_bfc_check(s, msg, sizeof(msg)), 0);
		uint32_t f = chunk_where(s, false), u = chunk_where(s, true);
		CHECK(f != NIL && u != NIL);
		if (f == NIL || u == NIL) {
			bfc_impl()->online->destroy(s);
			as_trace_destroy(t);
			continue;
		}
		switch (k) {
		case SIZE: s->c[u].size += 256; break;
		case FREE_FLAG: s->c[u].in_use = 0; break;
		case UNBINNED: as_bfc_bin_remove(s, f); break;
		case BYTES: s->bytes_in_use += 256; break;
		case LINK: s->c[s->c[u].next != NIL ? s->c[u].next : u].prev = NIL - 1; break;
		case WRONG_BIN:
			as_bfc_bin_remove(s, f);
			as_bfc_tree_insert(s, &s->root[(s->c[f].bin + 1) % NUM_BINS], f);
			s->nonempty |= 1u << ((s->c[f].bin + 1) % NUM_BINS);
			s->nfree++;
			break;
		case POOL: s->pool_bytes -= 256; break;
		case LIVE:
			for (uint32_t j = 0; j < s->live.cap; j++)
				if (s->live.e[j].buf != NIL) {
					s->live.e[j].buf = NIL;
					break;
				}
			break;
		}
		uint64_t broken = as_bfc_check(s, msg, sizeof(msg));
		if (broken == 0)
			printf("#   %s went unnoticed\n", what[k]);
		else
			printf("#   %s: %" PRIu64 " broken: %s\n", what[k], broken, msg);
		CHECK(broken > 0 && msg[0]);
		if (k == SIZE || k == LINK)
			s->nregions = 0; /* destroy must not walk a broken list */
		bfc_impl()->online->destroy(s);
		as_trace_destroy(t);
	}
}

/* ---- a naive reference model: arrays and linear scans ---- */

struct rchunk {
	uint64_t off, size;
	uint32_t region, buf;
	bool used;
};

struct rregion {
	uint64_t off, size;
	uint32_t id;
};

struct ref {
	uint64_t total, capacity, split_cap, curr, bump, pool;
	bool growth, gc, coalesce, align_new;
	struct rchunk c[1 << 14];
	size_t n;
	struct rregion r[256];
	size_t nr;
	uint32_t next_id;
	struct lines *out;
};

static uint64_t rup(uint64_t n, uint64_t a)
{
	return (n + a - 1) / a * a;
}

static void ref_insert(struct ref *m, size_t at, struct rchunk c)
{
	if (m->n == sizeof(m->c) / sizeof(m->c[0]))
		abort();
	memmove(&m->c[at + 1], &m->c[at], (m->n - at) * sizeof(c));
	m->c[at] = c;
	m->n++;
}

static void ref_erase(struct ref *m, size_t at)
{
	memmove(&m->c[at], &m->c[at + 1], (m->n - at - 1) * sizeof(m->c[0]));
	m->n--;
}

static bool ref_place(struct ref *m, uint64_t rounded, uint64_t align,
		      uint32_t buf, uint64_t *off, uint64_t *chunk)
{
	size_t best = SIZE_MAX;
	uint64_t bpad = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct rchunk *c = &m->c[i];
		if (c->used)
			continue;
		uint64_t pad = m->align_new && align > 256 ?
				       rup(c->off, align) - c->off :
				       0;
		if (c->size < pad + rounded)
			continue;
		if (best == SIZE_MAX || c->size < m->c[best].size ||
		    (c->size == m->c[best].size && c->off < m->c[best].off)) {
			best = i;
			bpad = pad;
		}
	}
	if (best == SIZE_MAX)
		return false;
	if (bpad) {
		struct rchunk rest = m->c[best];
		rest.off += bpad;
		rest.size -= bpad;
		m->c[best].size = bpad;
		ref_insert(m, ++best, rest);
	}
	struct rchunk *c = &m->c[best];
	uint64_t left = c->size - rounded;
	if (left && (c->size >= 2 * rounded || left >= m->split_cap)) {
		struct rchunk tail = *c;
		tail.off += rounded;
		tail.size = left;
		c->size = rounded;
		ref_insert(m, best + 1, tail);
		c = &m->c[best];
	}
	c->used = true;
	c->buf = buf;
	*off = c->off;
	*chunk = c->size;
	return true;
}

static bool ref_sub(struct ref *m, uint64_t align, uint64_t bytes,
		    uint64_t *off)
{
	if (m->capacity && m->pool + bytes > m->capacity) {
		lines_addf(m->out, "  [sub] Alloc(%" PRIu64 ") -> FAIL (capacity)",
			   bytes);
		return false;
	}
	uint64_t a = align > 256 ? align : 256;
	*off = rup(m->bump, a);
	lines_addf(m->out, "  [sub] Alloc(align=%" PRIu64 ", %" PRIu64
			   ") -> base+0x%" PRIx64,
		   m->align_new ? a : align, bytes, *off);
	m->bump = *off + bytes;
	return true;
}

static bool ref_extend(struct ref *m, uint64_t align, uint64_t rounded)
{
	uint64_t avail = (m->total - m->pool) / 256 * 256;
	if (rounded > avail)
		return false;
	bool doubled = false;
	while (rounded > m->curr) {
		m->curr *= 2;
		doubled = true;
	}
	uint64_t bytes = m->curr < avail ? m->curr : avail, off;
	bool ok = ref_sub(m, align, bytes, &off);
	while (!ok) {
		float f = (float)bytes * 0.9f;
		uint64_t n = rup((uint64_t)f, 256);
		bytes = n < bytes ? n : bytes - 256;
		if (bytes < rounded || bytes == 0)
			return false;
		ok = ref_sub(m, align, bytes, &off);
	}
	if (!doubled)
		m->curr *= 2;
	m->pool += bytes;
	struct rregion *last = m->nr ? &m->r[m->nr - 1] : NULL;
	if (m->coalesce && last && last->off + last->size == off) {
		last->size += bytes;
		struct rchunk *lc = &m->c[m->n - 1];
		if (!lc->used)
			lc->size += bytes;
		else
			ref_insert(m, m->n,
				   (struct rchunk){off, bytes, last->id, 0, 0});
	} else {
		m->r[m->nr++] = (struct rregion){off, bytes, m->next_id};
		ref_insert(m, m->n, (struct rchunk){off, bytes, m->next_id, 0, 0});
		m->next_id++;
	}
	return true;
}

static bool ref_gc(struct ref *m, uint64_t rounded)
{
	uint64_t free_bytes = 0;
	for (size_t k = 0; k < m->nr; k++)
		for (size_t i = 0; i < m->n; i++)
			if (m->c[i].region == m->r[k].id && !m->c[i].used &&
			    m->c[i].size == m->r[k].size)
				free_bytes += m->r[k].size;
	if (!free_bytes || rounded > m->total - m->pool + free_bytes)
		return false;
	size_t kk = 0;
	for (size_t k = 0; k < m->nr; k++) {
		bool gone = false;
		for (size_t i = 0; i < m->n; i++)
			if (m->c[i].region == m->r[k].id && !m->c[i].used &&
			    m->c[i].size == m->r[k].size) {
				ref_erase(m, i);
				gone = true;
				break;
			}
		if (gone) {
			lines_addf(m->out, "  [sub] Free(base+0x%" PRIx64
					   ", %" PRIu64 ")",
				   m->r[k].off, m->r[k].size);
			m->pool -= m->r[k].size;
		} else {
			m->r[kk++] = m->r[k];
		}
	}
	m->nr = kk;
	return true;
}

static bool ref_alloc(struct ref *m, uint64_t size, uint64_t align,
		      uint32_t buf, uint64_t *off, uint64_t *chunk)
{
	if (size == 0)
		return false;
	uint64_t rounded = rup(size, 256);
	if (ref_place(m, rounded, align, buf, off, chunk))
		return true;
	if (ref_extend(m, align, rounded) &&
	    ref_place(m, rounded, align, buf, off, chunk))
		return true;
	if (m->gc && ref_gc(m, rounded) && ref_extend(m, align, rounded) &&
	    ref_place(m, rounded, align, buf, off, chunk))
		return true;
	return false;
}

static void ref_free(struct ref *m, uint32_t buf)
{
	size_t i;
	for (i = 0; i < m->n; i++)
		if (m->c[i].used && m->c[i].buf == buf)
			break;
	if (i == m->n)
		return;
	m->c[i].used = false;
	if (i + 1 < m->n && !m->c[i + 1].used &&
	    m->c[i + 1].region == m->c[i].region) {
		m->c[i].size += m->c[i + 1].size;
		ref_erase(m, i + 1);
	}
	if (i > 0 && !m->c[i - 1].used && m->c[i - 1].region == m->c[i].region) {
		m->c[i - 1].size += m->c[i].size;
		ref_erase(m, i);
	}
}

/* ---- seeded random traces ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A size between 1 and 2^maxlog, log-uniform, sometimes exact powers. */
static uint64_t rnd_size(int maxlog)
{
	int lg = (int)(rng() % (uint64_t)maxlog);
	uint64_t s = ((uint64_t)1 << lg) + rng() % ((uint64_t)1 << lg);
	if (rng() % 8 == 0)
		s = (uint64_t)1 << lg;
	return s;
}

struct rnd_cfg {
	const char *config;
	uint64_t total, capacity;
	bool growth, gc, coalesce;
	int maxlog;
	unsigned live;      /* target number of live buffers */
	unsigned ops;
	unsigned flush;     /* free everything every `flush` operations */
};

static struct as_trace *random_trace(const struct rnd_cfg *cfg)
{
	struct as_builder *b = as_builder_create("random.ops", "ops");
	struct as_diag d = {0};
	struct as_trace *t = NULL;
	unsigned nlive = 0, next = 0;
	unsigned *live = calloc(cfg->ops + 1, sizeof(*live));
	char name[32];
	as_builder_case(b, cfg->config, &d);
	for (unsigned k = 0; k < cfg->ops; k++) {
		if (cfg->flush && k % cfg->flush == cfg->flush - 1) {
			while (nlive) {
				snprintf(name, sizeof(name), "b%u", live[--nlive]);
				if (as_builder_free(b, name, k + 1, &d) != AS_OK)
					abort();
			}
			continue;
		}
		bool do_alloc = nlive == 0 ||
				(rng() % (2 * cfg->live)) >= nlive;
		if (do_alloc) {
			uint64_t align = 64;
			unsigned a = (unsigned)(rng() % 10);
			if (a >= 7)
				align = (uint64_t)1 << (9 + rng() % 8); /* 512..64K */
			uint64_t size = rng() % 50 == 0 ? 0 : rnd_size(cfg->maxlog);
			snprintf(name, sizeof(name), "b%u", next);
			if (as_builder_alloc(b, name, size, align, k + 1, &d) < 0)
				abort();
			live[nlive++] = next++;
		} else {
			unsigned j = (unsigned)(rng() % nlive);
			snprintf(name, sizeof(name), "b%u", live[j]);
			if (as_builder_free(b, name, k + 1, &d) != AS_OK)
				abort();
			live[j] = live[--nlive];
		}
	}
	free(live);
	if (as_builder_finish(b, &t, &d) != AS_OK)
		abort();
	return t;
}

static const struct rnd_cfg rnd_cfgs[] = {
	/* growth with room to spare */
	{"total=256M growth=1", 256 << 20, 0, 1, 0, 0, 22, 60, 3000},
	/* growth under a tight limit: many failures */
	{"total=12M growth=1", 12 << 20, 0, 1, 0, 0, 22, 80, 3000},
	/* one region, no growth, tight */
	{"total=8M growth=0", 8 << 20, 0, 0, 0, 0, 21, 100, 3000},
	/* garbage collection, with and without coalescing regions */
	{"total=16M growth=1 gc=1 coalesce=1", 16 << 20, 0, 1, 1, 1, 22, 80, 3000, 0},
	{"total=16M growth=1 gc=1", 16 << 20, 0, 1, 1, 0, 22, 80, 3000, 0},
	/* ... and with phases that free everything, so regions empty out */
	{"total=16M growth=1 gc=1", 16 << 20, 0, 1, 1, 0, 23, 30, 3000, 97},
	{"total=24M growth=1 gc=1 coalesce=1", 24 << 20, 0, 1, 1, 1, 23, 30, 3000, 61},
	{"total=6M growth=1 gc=1", 6 << 20, 0, 1, 1, 0, 22, 6, 3000, 13},
	{"total=8M growth=1 gc=1", 8 << 20, 0, 1, 1, 0, 23, 2, 3000, 5},
	{"total=6M growth=1 gc=1 coalesce=1", 6 << 20, 0, 1, 1, 1, 22, 6, 3000, 13},
	/* a device smaller than the limit: back-off */
	{"total=64M growth=1 capacity=10M", 64 << 20, 10 << 20, 1, 0, 0, 21, 80, 3000},
	{"total=64M growth=0 capacity=6M frag=0.01", 64 << 20, 6 << 20, 0, 0, 0, 20, 120, 3000},
};

static void bfc_matches_a_naive_reference_on_seeded_random_traces(void)
{
	uint64_t seed = 20260401;
	const char *env = getenv("AS_SEED");
	if (env)
		seed = strtoull(env, NULL, 10);
	printf("#   seed %" PRIu64 " (set AS_SEED to repeat)\n", seed);
	uint64_t total_failed = 0, released = 0, refused = 0;
	for (size_t k = 0; k < sizeof(rnd_cfgs) / sizeof(rnd_cfgs[0]); k++) {
		for (int rep = 0; rep < 3; rep++) {
			const struct rnd_cfg *cfg = &rnd_cfgs[k];
			rng_state = seed + k * 1000 + (uint64_t)rep;
			struct as_trace *t = random_trace(cfg);
			for (int mode = 0; mode < 2; mode++) {
				const char *spec = mode ? "bfc:align=old" : "bfc";
				struct lines emitted = {0}, want = {0};
				struct as_runner_options hooks = {
					.emit = collect,
					.ctx = &emitted,
					.check_every_event = true};
				struct as_plan *p = NULL;
				struct as_diag d = {0};
				int err = as_strategy_run(spec, t, &hooks, &p, &d);
				if (err) {
					printf("#   %s %s: %s\n", cfg->config, spec,
					       d.msg);
					tap_cur_failed = 1;
					lines_free(&emitted);
					continue;
				}
				/* old releases ignore alignment: only alignment
				 * violations are allowed then, never overlaps */
				struct as_report rep_v;
				CHECK(as_validate(t, p, &rep_v) == AS_OK);
				CHECK(rep_v.overlaps == 0);
				if (mode == 0)
					CHECK(rep_v.valid);
				for (uint32_t v = 0; v < rep_v.nfirst; v++)
					CHECK(rep_v.first[v].kind == AS_V_ALIGNMENT);
				uint32_t failed = as_plan_failed(p, t);
				total_failed += failed;
				for (uint32_t k2 = 0; k2 < p->nstats; k2++) {
					if (!strcmp(p->stats[k2].key, "regions_released"))
						released += (uint64_t)p->stats[k2].value;
					if (!strcmp(p->stats[k2].key, "region_refusals"))
						refused += (uint64_t)p->stats[k2].value;
				}
				if (rep == 0)
					printf("#   %s %s: %u failed of %u\n",
					       cfg->config, spec, failed,
					       t->nbuffers);

				static struct ref m;
				memset(&m, 0, sizeof(m));
				m.total = cfg->total;
				m.capacity = cfg->capacity;
				m.growth = cfg->growth;
				m.gc = cfg->gc;
				m.coalesce = cfg->coalesce;
				m.align_new = mode == 0;
				m.split_cap = strstr(cfg->config, "frag=0.01") ?
						      (uint64_t)(0.01 * (double)cfg->total) :
						      128ull << 20;
				m.curr = cfg->growth ? 2 << 20 : cfg->total;
				m.out = &want;
				bool same = true;
				for (uint32_t e = 0; e < t->nevents && same; e++) {
					const struct as_event *ev = &t->events[e];
					const struct as_buffer *bb = &t->buffers[ev->arg];
					if (ev->kind == AS_EV_ALLOC) {
						uint64_t off = AS_NO_OFFSET, ch = 0;
						if (!ref_alloc(&m, bb->size,
							       as_buffer_align(bb),
							       ev->arg, &off, &ch)) {
							off = AS_NO_OFFSET;
							ch = 0;
						}
						if (off != p->offset[ev->arg] ||
						    ch != p->chunk[ev->arg]) {
							printf("#   %s %s rep %d: %s size %" PRIu64
							       " align %" PRIu64 ": offset 0x%" PRIx64
							       " chunk %" PRIu64 ", reference 0x%" PRIx64
							       " chunk %" PRIu64 "\n",
							       cfg->config, spec, rep, bb->name,
							       bb->size, as_buffer_align(bb),
							       p->offset[ev->arg], p->chunk[ev->arg],
							       off, ch);
							same = false;
						}
					} else if (ev->kind == AS_EV_FREE) {
						ref_free(&m, ev->arg);
					}
				}
				for (size_t i = 0; i < m.nr; i++)
					lines_addf(&want,
						   "  [sub] Free(base+0x%" PRIx64 ", %" PRIu64 ")",
						   m.r[i].off, m.r[i].size);
				if (!same)
					tap_cur_failed = 1;
				else if (!same_lines(&emitted, &want, cfg->config))
					tap_cur_failed = 1;
				lines_free(&emitted);
				lines_free(&want);
				as_plan_destroy(p);
			}
			as_trace_destroy(t);
		}
	}
	printf("#   %" PRIu64 " failed allocations in all\n", total_failed);
	printf("#   %" PRIu64 " regions released by gc, %" PRIu64
	       " region requests refused\n", released, refused);
	CHECK(total_failed >= 300);
	CHECK(released >= 10);
	CHECK(refused >= 10);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!bfc_impl()) {
		printf("1..0 # SKIP bfc is not registered\n");
		return 0;
	}
	if (tap_shared_dir())
		TEST_RUN(bfc_reproduces_every_golden_vector_of_the_real_allocator);
	else
		TEST_SKIP(bfc_reproduces_every_golden_vector_of_the_real_allocator,
			  "../shared/bfc-vectors is absent");
	TEST_RUN(bfc_reproduces_the_small_vectors_kept_in_this_repository);
	TEST_RUN(bfc_rounds_requests_up_to_multiples_of_256);
	TEST_RUN(bfc_fails_a_request_of_zero_bytes_and_ignores_its_free);
	TEST_RUN(bfc_takes_the_smallest_fitting_chunk_at_the_lowest_address);
	TEST_RUN(bfc_splits_only_when_the_chunk_is_twice_the_request);
	TEST_RUN(bfc_splits_when_the_rest_reaches_the_split_cap);
	TEST_RUN(bfc_merges_a_freed_chunk_with_next_then_previous);
	TEST_RUN(bfc_never_merges_across_regions_without_coalesce);
	TEST_RUN(bfc_coalesces_touching_regions_when_the_sub_allocator_can);
	TEST_RUN(bfc_grows_regions_by_doubling_the_target);
	TEST_RUN(bfc_first_region_option_gives_the_older_1_MiB_start);
	TEST_RUN(bfc_growth_stops_at_the_total);
	TEST_RUN(bfc_backs_off_by_0_9_in_single_precision);
	TEST_RUN(bfc_back_off_gives_up_below_the_request);
	TEST_RUN(bfc_garbage_collects_free_regions_and_retries_once);
	TEST_RUN(bfc_honours_alignment_above_256_with_a_free_prefix);
	TEST_RUN(bfc_skips_chunks_too_small_once_aligned);
	TEST_RUN(bfc_starts_offsets_again_at_each_case);
	TEST_RUN(bfc_reports_its_statistics_in_the_plan);
	TEST_RUN(bfc_renders_the_100_character_occupancy_line);
	TEST_RUN(bfc_rejects_options_out_of_range_with_a_clear_error);
	TEST_RUN(bfc_takes_its_limit_from_the_trace_else_none);
	TEST_RUN(bfc_config_lines_are_overridden_by_the_spec);
	TEST_RUN(bfc_check_reports_each_broken_invariant_as_data);
	TEST_RUN(bfc_matches_a_naive_reference_on_seeded_random_traces);
	return tap_done();
}
