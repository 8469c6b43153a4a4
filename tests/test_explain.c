/*
 * explain: the peak's live set and groups against brute force on random
 * traces, stages (lanes, the innermost stage at a time, their bytes) against
 * scans, temporaries, frames without the allocator's, address-blind keys,
 * a plan's fragmentation, and two explains as result rows.
 */
#include <dirent.h>
#include <stdarg.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "allocscope/compare.h"
#include "allocscope/explain.h"
#include "core/internal.h"
#include "core/trace_private.h"
#include "helpers.h"
#include "tap.h"

static const char *const stacks[] = {
	"layer1 model.py:10\nmain train.py:3",
	"malloc libc.c:1\noperator new(unsigned long) new.cc:2\n"
	"make(c10::Allocator*) a.cc:3\nmain train.py:3",
	"layer2 model.py:20\nmain train.py:3",
	NULL, /* no frames */
	"0x7f0000001000 libc.so.6\nmain train.py:3",
};
#define NSTACKS (sizeof(stacks) / sizeof(stacks[0]))

/*
 * A random trace of allocs and frees over `nspaces` spaces, frames from
 * `stacks`, and random stages; the builder's trace, or NULL.
 */
static struct as_trace *random_trace(uint64_t seed, int nspaces, int ops,
				     int nstages)
{
	struct as_builder *b = as_builder_create("random", "ops");
	struct as_diag d;
	uint32_t live[512];
	uint32_t nlive = 0;
	char name[32];
	for (int s = 1; s < nspaces; s++) {
		snprintf(name, sizeof(name), "pool%d", s);
		as_builder_space(b, name, 0);
	}
	for (int k = 0; k < ops; k++) {
		if (nlive && (test_rand(&seed) % 100 < 45 || nlive == 512)) {
			uint32_t j = (uint32_t)(test_rand(&seed) % nlive);
			if (as_builder_free(b, as_builder_buffer(b, live[j])->name,
					    0, &d))
				goto fail;
			live[j] = live[--nlive];
			continue;
		}
		snprintf(name, sizeof(name), "t%d", k);
		uint64_t size = test_rand(&seed) % 7 == 0 ? 0 : 1 + test_rand(&seed) % 5000;
		int64_t idx = as_builder_alloc(b, name, size, 1, 0, &d);
		if (idx < 0)
			goto fail;
		as_builder_buffer(b, (uint32_t)idx)->space =
			(uint16_t)(test_rand(&seed) % (uint64_t)nspaces);
		const char *st = stacks[test_rand(&seed) % NSTACKS];
		if (st && as_builder_frames(b, (uint32_t)idx, st))
			goto fail;
		live[nlive++] = (uint32_t)idx;
	}
	uint64_t end = as_builder_time(b);
	for (int k = 0; k < nstages; k++) {
		uint64_t a = test_rand(&seed) % (end + 1),
			 z = test_rand(&seed) % (end + 1);
		struct as_stage s = {
			.name = k % 3 ? "step" : "phase",
			.start = a < z ? a : z,
			.end = a < z ? z : a,
			.space = (uint16_t)(test_rand(&seed) % (uint64_t)nspaces),
		};
		if (as_builder_stage(b, &s))
			goto fail;
	}
	struct as_trace *t;
	if (as_builder_finish(b, &t, &d) == AS_OK)
		return t;
fail:
	as_builder_destroy(b);
	return NULL;
}

/* Bytes live in `space` at time `time` (start <= time < end). */
static uint64_t live_at(const struct as_trace *t, int space, uint64_t time)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if ((space < 0 || b->space == space) && b->start <= time &&
		    time < b->end)
			sum += b->size;
	}
	return sum;
}

static void peak_groups_agree_with_brute_force_on_random_traces(void)
{
	for (uint64_t seed = 1; seed <= 60; seed++) {
		int nspaces = 1 + (int)(seed % 3);
		struct as_trace *t = random_trace(seed, nspaces, 300, 0);
		CHECK(t != NULL);
		if (!t)
			return;
		struct as_explain_options o;
		as_explain_options_init(&o);
		o.top = 0;
		struct as_explain *e;
		CHECK(as_explain_trace(t, &o, &e) == AS_OK);
		for (int s = 0; s < nspaces; s++) {
			uint64_t best = 0, best_t = 0;
			for (uint64_t tm = 0; tm <= t->end_time; tm++)
				if (live_at(t, s, tm) > best) {
					best = live_at(t, s, tm);
					best_t = tm;
				}
			const struct as_explain_space *x = &e->spaces[s];
			CHECK_EQ_U64(x->peak_bytes, best);
			if (!best)
				continue;
			CHECK_EQ_U64(x->peak_time, best_t);
			/* Each stack's bytes and count there. */
			uint64_t gb[NSTACKS] = {0}, gc[NSTACKS] = {0}, n = 0;
			for (uint32_t i = 0; i < t->nbuffers; i++) {
				const struct as_buffer *b = &t->buffers[i];
				if (b->space != s || b->start > best_t ||
				    b->end <= best_t)
					continue;
				const char *fr = as_trace_buffer_frames(t, i);
				size_t k = 0;
				while (k < NSTACKS &&
				       !(fr ? stacks[k] && strcmp(stacks[k], fr) == 0
					    : !stacks[k]))
					k++;
				gb[k] += b->size;
				gc[k]++;
				n++;
			}
			CHECK_EQ_U64(x->live_count, n);
			for (uint32_t j = 0; j < x->live.ngroups; j++) {
				const struct as_explain_group *g = &x->live.groups[j];
				size_t k = 0;
				while (k < NSTACKS &&
				       strcmp(stacks[k] ? stacks[k]
							: "(no frames: recorded "
							  "without a stack)",
					      g->key) != 0)
					k++;
				CHECK(k < NSTACKS);
				if (k == NSTACKS)
					continue;
				CHECK_EQ_U64(g->bytes, gb[k]);
				CHECK_EQ_U64(g->count, gc[k]);
				if (j)
					CHECK(g->bytes <= x->live.groups[j - 1].bytes);
			}
		}
		as_explain_destroy(e);
		as_trace_destroy(t);
	}
}

static void stages_take_lanes_and_the_innermost_holds_each_time(void)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct as_trace *t = random_trace(seed, 2, 200, 30);
		CHECK(t != NULL);
		if (!t)
			return;
		for (uint32_t k = 1; k < t->nstages; k++) {
			const struct as_stage *a = &t->stages[k - 1],
					      *b = &t->stages[k];
			CHECK(a->space < b->space ||
			      (a->space == b->space &&
			       (a->start < b->start ||
				(a->start == b->start && a->end >= b->end))));
		}
		/* Two stages of a space overlapping in time never share a
		 * lane (below 64 lanes). */
		for (uint32_t a = 0; a < t->nstages; a++)
			for (uint32_t c = a + 1; c < t->nstages; c++) {
				const struct as_stage *x = &t->stages[a],
						      *y = &t->stages[c];
				if (x->space == y->space && x->start < y->end &&
				    y->start < x->end && x->end > x->start &&
				    y->end > y->start)
					CHECK(x->lane != y->lane);
			}
		for (uint16_t s = 0; s < 2; s++)
			for (uint64_t tm = 0; tm <= t->end_time; tm++) {
				/* The one that started last, the shorter at
				 * equal starts. */
				uint32_t want = AS_NONE;
				for (uint32_t k = 0; k < t->nstages; k++) {
					const struct as_stage *x = &t->stages[k];
					if (x->space != s || x->start > tm ||
					    x->end <= tm)
						continue;
					if (want == AS_NONE ||
					    x->start > t->stages[want].start ||
					    (x->start == t->stages[want].start &&
					     x->end <= t->stages[want].end))
						want = k;
				}
				uint32_t got = as_trace_stage_at(t, s, tm);
				CHECK_EQ_U64(got, want);
				if (got != want) {
					printf("#   seed %llu space %u time %llu\n",
					       (unsigned long long)seed, s,
					       (unsigned long long)tm);
					break;
				}
			}
		as_trace_destroy(t);
	}
}

static void stage_bytes_agree_with_a_scan(void)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct as_trace *t = random_trace(seed, 2, 400, 25);
		CHECK(t != NULL);
		if (!t)
			return;
		struct as_explain *e;
		CHECK(as_explain_trace(t, NULL, &e) == AS_OK);
		for (uint16_t s = 0; s < 2; s++) {
			const struct as_explain_space *x = &e->spaces[s];
			for (uint32_t k = 0; k < x->nstages; k++) {
				const struct as_explain_stage *f = &x->stages[k];
				const struct as_stage *st = &t->stages[f->stage];
				CHECK_EQ_U64(st->space, s);
				uint64_t before = st->start
							  ? live_at(t, s, st->start - 1)
							  : 0;
				CHECK_EQ_U64(f->at_start, before);
				CHECK_EQ_U64(f->at_end,
					     st->end ? live_at(t, s, st->end - 1) : 0);
				/* The most inside [start, end), the earliest;
				 * an empty stage: what it started with. */
				uint64_t peak = before, when = st->start;
				if (st->end > st->start)
					peak = live_at(t, s, st->start);
				for (uint64_t tm = st->start + 1; tm < st->end; tm++)
					if (live_at(t, s, tm) > peak) {
						peak = live_at(t, s, tm);
						when = tm;
					}
				CHECK_EQ_U64(f->peak, peak);
				CHECK_EQ_U64(f->peak_time, when);
			}
		}
		as_explain_destroy(e);
		as_trace_destroy(t);
	}
}

static struct as_trace *ops(const char *text)
{
	struct as_trace *t = NULL;
	struct as_diag d;
	as_trace_parse("t.ops", text, strlen(text), "ops", &t, &d);
	return t;
}

static void temporaries_are_freed_before_the_next_allocation(void)
{
	/* b and c are temporaries; a is not (b was allocated in its life);
	 * d is never freed. */
	struct as_trace *t = ops("alloc a 100\nalloc b 4000\nfree b\n"
				 "free a\nalloc c 50\nfree c\nalloc d 7\n");
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_BUFFER;
	struct as_explain *e;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	const struct as_explain_list *l = &e->spaces[0].temporaries;
	CHECK_EQ_U64(l->count, 2);
	CHECK_EQ_U64(l->bytes, 4050);
	CHECK(l->ngroups == 2 && strcmp(l->groups[0].key, "b") == 0 &&
	      strcmp(l->groups[1].key, "c") == 0);
	CHECK_EQ_U64(e->spaces[0].never_freed.count, 1);
	CHECK_STR(e->spaces[0].never_freed.groups[0].key, "d");
	/* The peak: a and b live at t 1. */
	CHECK_EQ_U64(e->spaces[0].peak_bytes, 4100);
	CHECK_EQ_U64(e->spaces[0].peak_time, 1);
	as_explain_destroy(e);
	as_trace_destroy(t);
}

static void representative_frames_leave_out_the_allocator(void)
{
	struct as_trace *t = random_trace(7, 1, 200, 0);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.top = 0;
	struct as_explain *e;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	bool seen = false;
	const struct as_explain_space *x = &e->spaces[0];
	for (uint32_t j = 0; j < x->live.ngroups; j++) {
		const struct as_explain_group *g = &x->live.groups[j];
		if (strcmp(g->key, stacks[1]) != 0)
			continue;
		seen = true;
		/* malloc and operator new go; a user function whose
		 * parameter is an allocator type stays. */
		CHECK_EQ_U64(g->nframes, 2);
		CHECK_STR(g->frames[0], "make(c10::Allocator*) a.cc:3");
		CHECK_STR(g->frames[1], "main train.py:3");
	}
	CHECK(seen);
	char buf[128];
	as_explain_frame_text("??:0:at::native::f(at::Tensor const&, long) [clone]",
			      buf, sizeof(buf));
	CHECK_STR(buf, "at::native::f() [clone]");
	as_explain_frame_text("/home/u/proj/model.py:12:forward", buf, sizeof(buf));
	CHECK_STR(buf, "model.py:12:forward");
	as_explain_frame_text("work /src/prog.c:20", buf, sizeof(buf));
	CHECK_STR(buf, "work prog.c:20");
	as_explain_destroy(e);
	as_trace_destroy(t);
}

static void normalised_keys_merge_stacks_that_differ_in_addresses(void)
{
	struct as_builder *b = as_builder_create("n", "ops");
	struct as_diag d;
	for (int k = 0; k < 2; k++) {
		char name[8];
		snprintf(name, sizeof(name), "x%d", k);
		int64_t i = as_builder_alloc(b, name, 10, 1, 0, &d);
		CHECK(i >= 0 &&
		      as_builder_frames(b, (uint32_t)i,
					k ? "0x7f02 libc.so.6\nmain"
					  : "0x7f01aa libc.so.6\nmain") == AS_OK);
	}
	struct as_trace *t;
	CHECK(as_builder_finish(b, &t, &d) == AS_OK);
	struct as_explain_options o;
	as_explain_options_init(&o);
	struct as_explain *e1, *e2;
	CHECK(as_explain_trace(t, &o, &e1) == AS_OK);
	o.normalize = true;
	CHECK(as_explain_trace(t, &o, &e2) == AS_OK);
	CHECK_EQ_U64(e1->spaces[0].live.total_groups, 2);
	CHECK_EQ_U64(e2->spaces[0].live.total_groups, 1);
	CHECK_STR(e2->spaces[0].live.groups[0].key, "0x? libc.so.6\nmain");
	CHECK_EQ_U64(e2->spaces[0].live.groups[0].count, 2);
	as_explain_destroy(e1);
	as_explain_destroy(e2);
	as_trace_destroy(t);
}

/* t explained by buffer, every group listed (NULL: failed, checked). */
static struct as_explain *by_buffer(const struct as_trace *t)
{
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_BUFFER;
	o.top = 0;
	struct as_explain *e = NULL;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	return e;
}

static void a_new_group_counts_as_growth_from_nothing(void)
{
	struct as_trace *a = ops("alloc x 100\nalloc y 50\n");
	struct as_trace *bt = ops("alloc x 100\nalloc z 70\n");
	CHECK(a && bt);
	if (!a || !bt)
		return;
	struct as_explain *ea = by_buffer(a), *eb = by_buffer(bt);
	struct as_results *rb = as_results_create(), *rn = as_results_create();
	CHECK(as_explain_results(ea, eb, rb, rn) == AS_OK);
	CHECK_EQ_U64(rb->nrows, 3);
	CHECK_EQ_U64(rn->nrows, 3);
	struct as_comparison *c;
	CHECK(as_compare(rb, rn, NULL, &c) == AS_OK);
	CHECK_EQ_U64(c->count[AS_CH_SAME], 1);     /* x */
	CHECK_EQ_U64(c->count[AS_CH_BETTER], 1);   /* y: gone */
	CHECK_EQ_U64(c->count[AS_CH_REGRESSED], 1); /* z: new */
	size_t order[3];
	CHECK(as_explain_diff_order(c, order) == AS_OK);
	CHECK_STR(c->rows[order[0]].new_->strategy, "z");
	as_comparison_destroy(c);
	as_results_destroy(rb);
	as_results_destroy(rn);
	as_explain_destroy(ea);
	as_explain_destroy(eb);
	as_trace_destroy(a);
	as_trace_destroy(bt);
}

static void an_online_allocator_reports_its_fragmentation_at_its_peak(void)
{
	struct as_trace *t = random_trace(11, 1, 400, 0);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_plan *p;
	struct as_diag d;
	CHECK(as_strategy_run("bfc", t, NULL, &p, &d) == AS_OK);
	struct as_explain *e;
	CHECK(as_explain_plan(t, "bfc", p, NULL, &e, &d) == AS_OK);
	const struct as_explain_space *x = &e->spaces[0];
	CHECK(x->has_peak && x->frag.known);
	CHECK_EQ_U64(x->peak_bytes, as_plan_peak(p, t, -1));
	CHECK(x->frag.reserved >= x->frag.live);
	CHECK(x->frag.largest_free <= x->frag.free_bytes);
	CHECK_EQ_U64(x->frag.live, live_at(t, 0, x->peak_time));
	CHECK_EQ_U64(x->live.bytes, x->live_bytes);
	as_explain_destroy(e);
	/* An offline planner has no walk: no figures, no error. */
	struct as_plan *g;
	CHECK(as_strategy_run("greedy-size", t, NULL, &g, &d) == AS_OK);
	CHECK(as_explain_plan(t, "greedy-size", g, NULL, &e, &d) == AS_OK);
	CHECK(!e->spaces[0].frag.known);
	FILE *f = tmpfile();
	struct as_explain_entry entry = {e, NULL, 0};
	CHECK(f && as_explain_write_json(&entry, 1, f) == AS_OK &&
	      as_explain_write_text(&entry, 1, f) == AS_OK &&
	      as_explain_write_markdown(&entry, 1, f) == AS_OK);
	if (f)
		fclose(f);
	as_explain_destroy(e);
	as_plan_destroy(g);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* A snapshot-like trace: buffers i of sizes[i] with stacks[i], live to
 * the end (each allocated at step i + 1), stages optional. */
static struct as_trace *framed_trace(const char *format,
				     const char *const *st, const uint64_t *sizes,
				     const uint64_t *frees, int n,
				     const struct as_stage *stages, int nstages)
{
	struct as_builder *b = as_builder_create("framed", format);
	struct as_diag d;
	char name[32];
	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "b%d", k);
		uint64_t end = frees && frees[k] ? frees[k] : 1000;
		int64_t idx = as_builder_add_timed(b, name, sizes[k], 1,
						   (uint64_t)k + 1, end, 0, &d);
		if (idx < 0 || (st[k] && as_builder_frames(b, (uint32_t)idx, st[k])))
			goto fail;
	}
	for (int k = 0; k < nstages; k++)
		if (as_builder_stage(b, &stages[k]))
			goto fail;
	struct as_trace *t;
	if (as_builder_finish(b, &t, &d) == AS_OK)
		return t;
fail:
	as_builder_destroy(b);
	return NULL;
}

static const struct as_explain_group *group_named(const struct as_explain *e,
						  const char *key)
{
	const struct as_explain_list *l = &e->spaces[0].live;
	for (uint32_t j = 0; j < l->ngroups; j++)
		if (strcmp(l->groups[j].key, key) == 0)
			return &l->groups[j];
	return NULL;
}

static void by_frame_merges_generated_kernels_under_the_model_line(void)
{
	static const char *const st[] = {
		"/tmp/torchinductor_u/ab/cabc.py:100:call\n"
		"/home/u/model/transformer.py:22:forward\n"
		"/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py:5:_fn\n"
		"CUDACachingAllocator.cpp:0:c10::cuda::CUDACachingAllocator::malloc()",
		"/tmp/torchinductor_u/ab/cabc.py:200:call\n"
		"/home/u/model/transformer.py:22:forward\n"
		"CUDACachingAllocator.cpp:0:c10::cuda::CUDACachingAllocator::malloc()",
		"/venv/lib/python3.11/site-packages/torch/functional.py:9:einsum\n"
		"/usr/lib/python3.11/contextlib.py:3:inner\n"
		"/home/u/model/transformer.py:30:forward",
		"/tmp/torchinductor_u/cd/ccd.py:7:call\n"
		"/venv/lib/python3.11/site-packages/torch/_inductor/utils.py:1:run",
		NULL,
	};
	static const uint64_t sizes[] = {100, 200, 50, 7, 1000};
	struct as_trace *t = framed_trace("pickle", st, sizes, NULL, 5, NULL, 0);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_FRAME;
	struct as_explain *e;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	const struct as_explain_group *g =
		group_named(e, "/home/u/model/transformer.py:22:forward");
	CHECK(g && g->bytes == 300 && g->count == 2);
	/* What it called: the generated kernel, kept apart. */
	CHECK(g && g->nabove == 1 &&
	      strcmp(g->above[0], "/tmp/torchinductor_u/ab/cabc.py:200:call") == 0);
	CHECK(group_named(e, "/home/u/model/transformer.py:30:forward"));
	/* No user frame: the first one not the allocator's. */
	CHECK(group_named(e, "/tmp/torchinductor_u/cd/ccd.py:7:call"));
	g = group_named(e, "(no frames: allocated before the recording)");
	CHECK(g == NULL);
	CHECK_EQ_U64(e->spaces[0].live.total_groups, 4);
	as_explain_destroy(e);
	/* --skip-frames and --user-code move the frame. */
	o.skip_frames = "transformer\\.py:22";
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	CHECK(group_named(e, "/tmp/torchinductor_u/ab/cabc.py:100:call"));
	as_explain_destroy(e);
	o.skip_frames = NULL;
	o.user_code = "contextlib";
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	CHECK(group_named(e, "/usr/lib/python3.11/contextlib.py:3:inner"));
	as_explain_destroy(e);
	o.user_code = "([";
	CHECK(as_explain_trace(t, &o, &e) == AS_EINVAL);
	as_trace_destroy(t);
}

static void each_buffer_gets_the_category_explain_gives_its_group(void)
{
	static const char *const st[] = {
		"/home/u/model.py:5:__init__",                /* parameters */
		"/home/u/model.py:9:forward",                 /* activations */
		"??:0:torch::autograd::Engine::thread_main()", /* gradients */
		"/home/u/train.py:3:main",                    /* in a stage */
		"/venv/lib/site-packages/torch/optim/adamw.py:1:_single",
		"/home/u/lora.py:4:forward",                  /* --rule */
		"/home/u/train.py:4:main",                    /* unknown */
		"/home/u/train.py:3:main",                    /* temporary */
	};
	static const uint64_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 128};
	/* The last, freed before any other allocation: a temporary, live
	 * at the peak (step 8, everything live). */
	static const uint64_t frees[] = {0, 0, 0, 0, 0, 0, 0, 9};
	struct as_stage stages[] = {
		{.name = "Optimizer.step#AdamW.step", .start = 4, .end = 5},
		{.name = "## backward ##", .start = 3, .end = 4},
	};
	struct as_trace *t = framed_trace("pickle", st, sizes, frees, 8, stages, 2);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_CATEGORY;
	o.top = 0;
	struct as_explain_rule rule = {"lora", "lora\\.py"};
	o.rules = &rule;
	o.nrules = 1;
	uint8_t cat[8];
	const char *names[16];
	uint32_t nn = 0;
	CHECK(as_explain_buffer_categories(t, &o, cat, names, 16, &nn) ==
	      AS_OK);
	CHECK_EQ_U64(nn, 7); /* six built-in categories and the rule */
	static const char *const want[] = {
		"parameters", "activations", "gradients", "optimizer",
		"optimizer",  "lora",        "unknown",   "temporaries"};
	for (uint32_t i = 0; i < 8 && nn == 7; i++)
		CHECK_STR(cat[i] < nn ? names[cat[i]] : "?", want[i]);
	CHECK(as_explain_buffer_categories(t, &o, cat, names, 6, &nn) ==
	      AS_EINVAL); /* no room for the names */
	as_trace_destroy(t);
}

static void categories_follow_the_documented_rules_and_sum_to_the_peak(void)
{
	static const char *const st[] = {
		"/home/u/model.py:5:__init__",                /* parameters */
		"/home/u/model.py:9:forward",                 /* activations */
		"??:0:torch::autograd::Engine::thread_main()", /* gradients */
		"/home/u/train.py:3:main",                    /* in a stage */
		"/venv/lib/site-packages/torch/optim/adamw.py:1:_single",
		"/home/u/lora.py:4:forward",                  /* --rule */
		"/home/u/train.py:4:main",                    /* unknown */
		"/home/u/train.py:3:main",                    /* temporary */
	};
	static const uint64_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 128};
	/* The last, freed before any other allocation: a temporary, live
	 * at the peak (step 8, everything live). */
	static const uint64_t frees[] = {0, 0, 0, 0, 0, 0, 0, 9};
	struct as_stage stages[] = {
		{.name = "Optimizer.step#AdamW.step", .start = 4, .end = 5},
		{.name = "## backward ##", .start = 3, .end = 4},
	};
	struct as_trace *t = framed_trace("pickle", st, sizes, frees, 8, stages, 2);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_CATEGORY;
	o.top = 0;
	struct as_explain_rule rule = {"lora", "lora\\.py"};
	o.rules = &rule;
	o.nrules = 1;
	struct as_explain *e;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	static const struct {
		const char *key;
		uint64_t bytes;
	} want[] = {{"parameters", 1}, {"activations", 2}, {"gradients", 4},
		    {"optimizer", 8 + 16}, {"lora", 32}, {"unknown", 64},
		    {"temporaries", 128}};
	uint64_t sum = 0;
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		const struct as_explain_group *g = group_named(e, want[k].key);
		CHECK(g != NULL);
		if (g)
			CHECK_EQ_U64(g->bytes, want[k].bytes);
		if (g)
			CHECK(g->nevidence >= 1 && g->evidence[0].rule);
		sum += g ? g->bytes : 0;
	}
	CHECK_EQ_U64(sum, e->spaces[0].peak_bytes);
	const struct as_explain_group *g = group_named(e, "optimizer");
	CHECK(g && g->nevidence == 2);
	as_explain_destroy(e);
	as_trace_destroy(t);
}

static void groupings_with_nothing_to_group_by_say_why(void)
{
	static const char *const st[] = {NULL, NULL};
	static const uint64_t sizes[] = {10, 20};
	struct as_trace *t = framed_trace("csv", st, sizes, NULL, 2, NULL, 0);
	CHECK(t != NULL);
	if (!t)
		return;
	struct as_explain_options o;
	as_explain_options_init(&o);
	static const enum as_group_by none[] = {AS_GROUP_STACK, AS_GROUP_FRAME,
						AS_GROUP_STAGE, AS_GROUP_CONTEXT};
	for (size_t k = 0; k < sizeof(none) / sizeof(none[0]); k++) {
		struct as_explain *e;
		o.by = none[k];
		CHECK(as_explain_trace(t, &o, &e) == AS_OK);
		CHECK(e->nothing_to_group != NULL);
		if (o.by == AS_GROUP_STACK)
			CHECK_STR(e->spaces[0].live.groups[0].key,
				  "(no frames: this format has no stacks)");
		as_explain_destroy(e);
	}
	o.by = AS_GROUP_PREFIX; /* "b0", "b1": a stem, not an address? */
	struct as_explain *e;
	CHECK(as_explain_trace(t, &o, &e) == AS_OK);
	CHECK(e->nothing_to_group != NULL); /* b0 reads as hex */
	as_explain_destroy(e);
	as_trace_destroy(t);
}

/* ---- One pass over malloc recordings against the whole trace ---- */

/* A growing text (the generators' output, the writers'). */
struct text {
	char *s;
	size_t n, cap;
};

static void put_text(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put_text(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (t->n + (size_t)n + 1 > t->cap) {
		size_t cap = (t->n + (size_t)n + 1) * 2;
		char *p = realloc(t->s, cap);
		if (!p)
			return;
		t->s = p;
		t->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
	va_end(ap);
	t->n += (size_t)n;
}

/* What a writer gives for e and its plans' explains pe[0..n): text, JSON
 * (0, 1) or Markdown (2). */
static char *written_run(const struct as_explain *e,
			 const struct as_explain *const *pe, size_t n, int how)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	struct as_explain_entry entry = {e, pe, n};
	int err = how == 0   ? as_explain_write_text(&entry, 1, f)
		  : how == 1 ? as_explain_write_json(&entry, 1, f)
			     : as_explain_write_markdown(&entry, 1, f);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The same for e alone. */
static char *written(const struct as_explain *e, int how)
{
	return written_run(e, NULL, 0, how);
}

/* A trace of buffers named names[k], 100 * (k + 1) bytes each, all live
 * at once. */
static struct as_trace *named_trace(const char *const *names, int n)
{
	struct as_builder *b = as_builder_create("t|1.ops", "ops");
	struct as_diag d;
	for (int k = 0; k < n; k++)
		if (as_builder_add_timed(b, names[k], 100 * ((uint64_t)k + 1), 1,
					 1, 10, 0, &d) < 0) {
			as_builder_destroy(b);
			return NULL;
		}
	struct as_trace *t;
	if (as_builder_finish(b, &t, &d) == AS_OK)
		return t;
	as_builder_destroy(b);
	return NULL;
}

/* What `write` wrote to a memory stream, NUL-terminated (NULL on error). */
static char *captured(int (*write)(FILE *, const void *), const void *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int err = write(f, ctx);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct diff_md {
	const struct as_comparison *c;
	const struct as_explain *a, *b;
};

static int write_diff_md(FILE *f, const void *ctx)
{
	const struct diff_md *m = ctx;
	return as_explain_write_diff_markdown(m->c, m->a, m->b, f, true);
}

static int write_compare_md(FILE *f, const void *ctx)
{
	return as_comparison_write_markdown(ctx, f, true);
}

static void every_markdown_writer_escapes_a_pipe_in_a_name(void)
{
	const char *const na[] = {"a|b #", "c\x1b[2Jd"};
	const char *const nb[] = {"a|b #", "c\x1b[2Jd", "e<f>"};
	struct as_trace *ta = named_trace(na, 2), *tb = named_trace(nb, 3);
	CHECK(ta && tb);
	if (!ta || !tb)
		return;
	struct as_explain *ea = by_buffer(ta), *eb = by_buffer(tb);
	CHECK(ea && eb);
	if (!ea || !eb)
		return;
	/* explain --markdown: the groups and the trace's path. */
	char *md = written(ea, 2);
	CHECK(md && strstr(md, "| **a\\|b \\#** |") != NULL);
	CHECK(md && strstr(md, "| **c\\x1b\\[2Jd** |") != NULL);
	CHECK(md && strstr(md, "explain: t\\|1.ops\n") != NULL);
	CHECK(md && !strchr(md, '\x1b'));
	free(md);
	/* explain's text: the same rule as every terminal line. */
	char *tx = written(ea, 0);
	CHECK(tx && strstr(tx, "c\\x1b[2Jd") != NULL && !strchr(tx, '\x1b'));
	free(tx);
	/* diff --by --markdown and compare's report of the same rows. */
	struct as_results *rb = as_results_create(), *rn = as_results_create();
	CHECK(as_explain_results(ea, eb, rb, rn) == AS_OK);
	struct as_comparison *c;
	CHECK(as_compare(rb, rn, NULL, &c) == AS_OK);
	struct diff_md dm = {c, ea, eb};
	char *d = captured(write_diff_md, &dm);
	CHECK(d && strstr(d, "| a\\|b \\# |") != NULL);
	CHECK(d && strstr(d, "| e&lt;f&gt; |") != NULL);
	CHECK(d && strstr(d, "Base t\\|1.ops, new t\\|1.ops.") != NULL);
	CHECK(d && strstr(d, "|---|---|---:|---:|---:|---:|---|\n") != NULL);
	char *cm = captured(write_compare_md, c);
	CHECK(cm && strstr(cm, " | a\\|b \\# | ") != NULL);
	CHECK(cm && strstr(cm, " | e&lt;f&gt; | ") != NULL);
	CHECK(cm && !strchr(cm, '\x1b'));
	free(d);
	free(cm);
	as_comparison_destroy(c);
	as_results_destroy(rb);
	as_results_destroy(rn);
	as_explain_destroy(ea);
	as_explain_destroy(eb);
	as_trace_destroy(ta);
	as_trace_destroy(tb);
}

static void a_spec_names_its_strategy_before_the_first_colon(void)
{
	const struct as_strategy_info *si = as_strategy_find_by_spec("bfc");
	CHECK(si && strcmp(si->name, "bfc") == 0 && si->online);
	si = as_strategy_find_by_spec("cuda-caching:expandable_segments=1");
	CHECK(si && strcmp(si->name, "cuda-caching") == 0);
	CHECK(as_strategy_find_by_spec("cuda-caching-x") == NULL);
	CHECK(as_strategy_find_by_spec(":bfc") == NULL);
	CHECK(as_strategy_find_by_spec("") == NULL);
	CHECK(as_strategy_find_by_spec(NULL) == NULL);
}

/* What the whole trace's explain held: how much the comparison covered. */
struct covered {
	int loaded, peaks, temporaries, never_freed, clocked;
};

/*
 * The recording at `path` explained from the whole trace and in one pass
 * with options o: the writers' outputs must be the same bytes, or both
 * refuse it with the same words. Returns how many differed.
 */
static int file_differs(const char *path, const struct as_explain_options *o,
			struct covered *cov)
{
	struct as_trace *whole = NULL, *skel = NULL;
	struct as_explain *a = NULL, *b = NULL;
	struct as_explain_stream *st = NULL;
	struct as_live_sink sink;
	struct as_diag d1 = {0}, d2 = {0};
	int e1 = as_trace_load(path, NULL, &whole, &d1);
	if (!e1)
		e1 = as_explain_trace(whole, o, &a);
	int e2 = as_explain_stream_create(o, &st, &sink);
	if (!e2)
		e2 = as_trace_load_live(path, NULL, &sink, &skel, &d2);
	if (!e2)
		e2 = as_explain_stream_finish(st, skel, &b);
	as_explain_stream_destroy(st);
	int bad = 0;
	if ((e1 || e2) && (e1 != e2 || d1.line != d2.line ||
			   strcmp(d1.msg, d2.msg) != 0)) {
		printf("# %s: whole %d (%" PRIu64 ": %s), one pass %d (%" PRIu64
		       ": %s)\n",
		       path, e1, d1.line, d1.msg, e2, d2.line, d2.msg);
		bad = 1;
	}
	if (!e1 && cov) {
		const struct as_explain_space *x = &a->spaces[0];
		cov->loaded++;
		cov->peaks += x->has_peak && x->live.ngroups > 1;
		cov->temporaries += x->temporaries.ngroups > 1;
		cov->never_freed += x->never_freed.count > 0;
		cov->clocked += whole->clock != NULL;
	}
	for (int how = 0; how < 3 && !e1 && !e2; how++) {
		char *x = written(a, how), *y = written(b, how);
		if (!x || !y || strcmp(x, y) != 0) {
			size_t k = 0;
			while (x && y && x[k] && x[k] == y[k])
				k++;
			printf("# %s: writer %d differs at byte %zu:\n# whole "
			       "'%.80s'\n# one pass '%.80s'\n",
			       path, how, k, x ? x + k : "(null)",
			       y ? y + k : "(null)");
			bad++;
		}
		free(x);
		free(y);
	}
	as_explain_destroy(a);
	as_explain_destroy(b);
	as_trace_destroy(whole);
	as_trace_destroy(skel);
	return bad;
}

/* file_differs under each option set the one-pass path serves. */
static int file_differs_any(const char *path, struct covered *cov)
{
	int bad = 0;
	for (int k = 0; k < 12; k++) {
		struct as_explain_options o;
		as_explain_options_init(&o);
		o.by = k & 1 ? AS_GROUP_FRAME : AS_GROUP_STACK;
		o.top = (uint32_t[]){10, 0, 2}[(k >> 1) % 3];
		o.frames = k >= 6 ? 1 : 5;
		o.normalize = k % 4 == 3;
		bad += file_differs(path, &o, cov);
	}
	return bad;
}

/* The same for the recording `text`, saved under a name ending in EXT
 * (which names its format). */
static int streamed_differs_any(const char *text, const char *ext,
				struct covered *cov)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/one-pass-%ld%s",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(),
		 ext);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0) {
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	int bad = file_differs_any(path, cov);
	remove(path);
	return bad;
}

/* Every malloc recording the sources hold: the refused ones (tests/bad),
 * the fuzzers' seeds and regressions. */
static void one_pass_agrees_on_the_bundled_malloc_recordings(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	static const char *const dirs[] = {"tests/bad", "tests/fuzz/seeds",
					   "tests/fuzz/regress"};
	int files = 0;
	for (size_t k = 0; src && k < sizeof(dirs) / sizeof(dirs[0]); k++) {
		char dir[512];
		snprintf(dir, sizeof(dir), "%s/%s", src, dirs[k]);
		DIR *d = opendir(dir);
		CHECK(d != NULL);
		for (struct dirent *de; d && (de = readdir(d));) {
			const char *n = de->d_name;
			if ((!strstr(n, "mtrace") && !strstr(n, "heaptrack")) ||
			    strstr(n, ".expected"))
				continue;
			char path[1024];
			snprintf(path, sizeof(path), "%s/%s", dir, n);
			int bad = file_differs_any(path, NULL);
			if (bad)
				printf("# %s: %d differ\n", n, bad);
			CHECK(bad == 0);
			files++;
		}
		if (d)
			closedir(d);
	}
	CHECK(files >= 20);
}

/*
 * A random heaptrack file (interpreted: what `heaptrack -o` writes):
 * allocation infos sharing trace nodes, sizes with ties and zeros, frees
 * of infos with nothing live, clock readings, blocks left live.
 */
static void random_heaptrack(uint64_t seed, int ops, struct text *t)
{
	put_text(t, "v 10400 3\nX prog --flag\n");
	static const char *const strs[] = {
		"/usr/bin/prog", "malloc", "main", "layer_one", "layer_two",
		"model.c", "/lib/libc.so.6"};
	for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++)
		put_text(t, "s %zx %s\n", strlen(strs[k]), strs[k]);
	/* ips 1..5: malloc (libc), main, layer_one, layer_two, unnamed */
	put_text(t, "i 7f0000001000 7 2\ni 401000 1 3 6 a\n"
		    "i 401100 1 4 6 14\ni 401200 1 5 6 1e\ni 401300 1\n");
	/* nodes 1..6 */
	put_text(t, "t 2 0\nt 3 1\nt 4 1\nt 1 2\nt 1 3\nt 5 3\n");
	uint64_t sizes[] = {0x10, 0x10, 0, 0x400, 0x10, 0x2000, 0x7, 0x400};
	int ninfo = 16;
	for (int k = 0; k < ninfo; k++)
		put_text(t, "a %" PRIx64 " %d\n",
			 sizes[test_rand(&seed) % 8],
			 (int)(test_rand(&seed) % 7));
	int live[16] = {0};
	uint64_t ms = 0;
	for (int k = 0; k < ops; k++) {
		uint64_t r = test_rand(&seed) % 100;
		int i = (int)(test_rand(&seed) % (uint64_t)ninfo);
		if (r < 4) {
			ms += test_rand(&seed) % 3;
			put_text(t, "c %" PRIx64 "\n", ms);
		} else if (r < 50 || !live[i]) {
			put_text(t, "+ %x\n", i);
			live[i]++;
		} else {
			put_text(t, "- %x\n", i);
			live[i]--;
		}
		if (r == 99)
			put_text(t, "- %x\n", (i + 1) % ninfo); /* maybe none */
		if (r == 99 && live[(i + 1) % ninfo])
			live[(i + 1) % ninfo]--;
	}
}

/* A random glibc mtrace: a few addresses reused (allocations over live
 * ones, frees of unknown ones), reallocs, callers and none, zero sizes. */
static void random_mtrace(uint64_t seed, int ops, bool end, struct text *t)
{
	static const char *const callers[] = {
		"@ ./prog:(alloc_a+0x10)[0x401010] ",
		"@ ./prog:(alloc_b+0x20)[0x401120] ",
		"@ /lib/libc.so.6:[0x7f0000001234] ", ""};
	put_text(t, "= Start\n");
	for (int k = 0; k < ops; k++) {
		uint64_t r = test_rand(&seed) % 100;
		uint64_t addr = 0x1000 + 0x40 * (test_rand(&seed) % 24);
		const char *c = callers[test_rand(&seed) % 4];
		uint64_t size = (uint64_t[]){0x20, 0x20, 0, 0x100, 0x3,
					     0x1000}[test_rand(&seed) % 6];
		if (r < 45)
			put_text(t, "%s+ %#" PRIx64 " %#" PRIx64 "\n", c, addr,
				 size);
		else if (r < 85)
			put_text(t, "%s- %#" PRIx64 "\n", c, addr);
		else if (r < 95)
			put_text(t, "%s< %#" PRIx64 "\n%s> %#" PRIx64
				    " %#" PRIx64 "\n",
				 c, addr, c,
				 0x1000 + 0x40 * (test_rand(&seed) % 24), size);
		else
			put_text(t, "%s- (nil)\n", c);
	}
	if (end)
		put_text(t, "= End\n");
}

/* A random raw heaptrack file (`heaptrack -r`: addresses, module map). */
static void random_raw_heaptrack(uint64_t seed, int ops, struct text *t)
{
	put_text(t, "v 10400 3\nx d /usr/bin/prog\n"
		    "m 1 x 400000 0 2000\nm e /lib/libc.so.6 7f0000000000 0 "
		    "10000\nt 7f0000001000 0\nt 401010 1\nt 401200 1\n"
		    "t 500000 2\n");
	for (int k = 0; k < ops; k++) {
		uint64_t addr = 0x2000 + 0x40 * (test_rand(&seed) % 20);
		if (test_rand(&seed) % 100 < 52)
			put_text(t, "+ %" PRIx64 " %d %" PRIx64 "\n",
				 (uint64_t[]){0x10, 0, 0x80, 0x80,
					      0x800}[test_rand(&seed) % 5],
				 (int)(test_rand(&seed) % 5), addr);
		else
			put_text(t, "- %" PRIx64 "\n", addr);
	}
}

static void one_pass_gives_the_whole_traces_explain_on_heaptrack_files(void)
{
	struct covered cov = {0};
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct text t = {0};
		random_heaptrack(seed * 7919, seed < 4 ? 30 : 600, &t);
		int bad = t.s ? streamed_differs_any(t.s, ".heaptrack",
						     &cov)
			      : 1;
		if (bad)
			printf("# seed %" PRIu64 ": %d outputs differ\n", seed,
			       bad);
		CHECK(bad == 0);
		free(t.s);
	}
	/* Every file loaded, with groups at the peak, temporaries and
	 * blocks never freed to compare. */
	CHECK_EQ_U64(cov.loaded, 12 * 12);
	CHECK(cov.peaks > 0 && cov.temporaries > 0 && cov.never_freed > 0);
	CHECK(cov.clocked > 0);
}

static void one_pass_gives_the_whole_traces_explain_on_mtrace_files(void)
{
	struct covered cov = {0};
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct text t = {0};
		random_mtrace(seed * 104729, seed < 4 ? 25 : 700, seed & 1, &t);
		int bad = t.s ? streamed_differs_any(t.s, ".mtrace", &cov)
			      : 1;
		if (bad)
			printf("# seed %" PRIu64 ": %d outputs differ\n", seed,
			       bad);
		CHECK(bad == 0);
		free(t.s);
	}
	/* Every file loaded, with groups at the peak, temporaries and
	 * blocks never freed to compare. */
	CHECK_EQ_U64(cov.loaded, 12 * 12);
	CHECK(cov.peaks > 0 && cov.temporaries > 0 && cov.never_freed > 0);
}

static void one_pass_gives_the_whole_traces_explain_on_raw_heaptrack_files(void)
{
	struct covered cov = {0};
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct text t = {0};
		random_raw_heaptrack(seed * 31337, 400, &t);
		int bad = t.s ? streamed_differs_any(t.s, ".heaptrack",
						     &cov)
			      : 1;
		if (bad)
			printf("# seed %" PRIu64 ": %d outputs differ\n", seed,
			       bad);
		CHECK(bad == 0);
		free(t.s);
	}
	/* Every file loaded, with groups at the peak, temporaries and
	 * blocks never freed to compare. */
	CHECK_EQ_U64(cov.loaded, 8 * 12);
	CHECK(cov.peaks > 0 && cov.temporaries > 0 && cov.never_freed > 0);
}

static void one_pass_agrees_on_recordings_without_a_peak_or_blocks(void)
{
	/* Only blocks of 0 bytes: no peak; nothing at all but a header. */
	CHECK(streamed_differs_any("= Start\n+ 0x1000 0\n+ 0x2000 0\n"
				   "- 0x1000\n= End\n",
				   ".mtrace", NULL) == 0);
	CHECK(streamed_differs_any("= Start\n- 0x1000\n= End\n",
				   ".mtrace", NULL) == 0);
	/* Two equal maxima: the earlier is the peak; a refused file is
	 * refused with the same words. */
	CHECK(streamed_differs_any("= Start\n+ 0x1000 0x10\n- 0x1000\n"
				   "+ 0x2000 0x10\n= End\n",
				   ".mtrace", NULL) == 0);
	CHECK(streamed_differs_any("= Start\n+ 0x1000 0x8000000000000000\n"
				   "+ 0x2000 0x8000000000000000\n",
				   ".mtrace", NULL) == 0);
}

static void one_pass_is_left_to_what_needs_the_whole_trace(void)
{
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.by = AS_GROUP_PREFIX;
	struct as_explain_stream *st = NULL;
	struct as_live_sink sink;
	CHECK(as_explain_stream_create(&o, &st, &sink) == AS_EUNSUPPORTED);
	CHECK(st == NULL);
	o.by = AS_GROUP_STACK;
	CHECK(as_explain_stream_create(&o, &st, &sink) == AS_OK);
	char path[256];
	snprintf(path, sizeof(path), "%s/one-pass-%ld.ops",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("alloc a 10\nfree a\n", f);
		fclose(f);
	}
	/* Another format loads whole, and finish says so. */
	struct as_trace *t = NULL;
	struct as_explain *e = NULL;
	struct as_diag d = {0};
	CHECK(as_trace_load_live(path, NULL, &sink, &t, &d) == AS_OK);
	CHECK(t != NULL && t->nbuffers == 1 && t->buffers[0].size == 10);
	CHECK(t && as_explain_stream_finish(st, t, &e) == AS_EUNSUPPORTED);
	CHECK(e == NULL);
	as_trace_destroy(t);
	as_explain_stream_destroy(st);
	remove(path);
}

/* ---- Out of memory ---- */

#define MiB (1ull << 20)

/* What the writers give for a trace's explain and plan explains pe[n]:
 * text (0), JSON (1) or Markdown (2). */
static void recorded_ooms_tell_live_and_reserved_bytes_and_why_they_failed(void)
{
	/* a 20 MiB segment; b (8 MiB) live at the first OOM, b and c (9 MiB)
	 * at the second; 4 MiB free on the device: 24 MiB in all. The first
	 * asks 16: 8 + 16 <= 24, fragmentation; the second 20: 9 + 20 > 24,
	 * live memory */
	struct as_diag d = {0};
	struct as_builder *b = as_builder_create("oom.ops", "ops");
	struct as_trace *t = NULL;
	CHECK(b != NULL);
	if (!b)
		return;
	struct as_mark m1 = {.size = 16 * MiB, .device_free = 4 * MiB,
			     .kind = AS_MARK_OOM};
	struct as_mark m2 = {.size = 20 * MiB, .device_free = 4 * MiB,
			     .kind = AS_MARK_OOM};
	struct as_segment g = {.addr = 0, .size = 20 * MiB, .start = 0,
			       .end = 6};
	bool ok = as_builder_alloc(b, "a", 8 * MiB, 512, 1, &d) >= 0 &&
		  as_builder_alloc(b, "b", 8 * MiB, 512, 2, &d) >= 0 &&
		  as_builder_free(b, "a", 3, &d) == AS_OK &&
		  as_builder_mark(b, &m1) == AS_OK &&
		  as_builder_alloc(b, "c", 1 * MiB, 512, 4, &d) >= 0 &&
		  as_builder_mark(b, &m2) == AS_OK &&
		  as_builder_free(b, "c", 5, &d) == AS_OK &&
		  as_builder_segment(b, &g) == AS_OK &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	CHECK(ok);
	if (!ok) {
		printf("#   %s\n", d.msg);
		as_builder_destroy(b);
		return;
	}
	struct as_explain *e = NULL;
	CHECK(as_explain_trace(t, NULL, &e) == AS_OK);
	CHECK(e && e->nooms == 2);
	if (e && e->nooms == 2) {
		const struct as_explain_oom *o = e->ooms;
		CHECK(o[0].recorded && !o[0].modelled);
		CHECK_EQ_U64(o[0].request, 16 * MiB);
		CHECK_EQ_U64(o[0].live, 8 * MiB);
		CHECK(o[0].has_reserved);
		CHECK_EQ_U64(o[0].reserved, 20 * MiB);
		CHECK_EQ_U64(o[0].device_free, 4 * MiB);
		CHECK_EQ_U64(o[0].device_total, 24 * MiB);
		CHECK(o[0].verdict == AS_OOM_FRAGMENTATION);
		CHECK_EQ_U64(o[1].request, 20 * MiB);
		CHECK_EQ_U64(o[1].live, 9 * MiB);
		CHECK(o[1].verdict == AS_OOM_LIVE_MEMORY);
		char *text = written_run(e, NULL, 0, 0);
		CHECK(text && strstr(text, "out of memory (recorded): "));
		CHECK(text && strstr(text, "failed for fragmentation"));
		CHECK(text && strstr(text, "failed for live memory"));
		CHECK(text && strstr(text, "explain -s cuda-caching"));
		free(text);
		char *json = written_run(e, NULL, 0, 1);
		CHECK(json && strstr(json, "\"request\": 16777216, \"recorded\": "
					   "true, \"modelled\": false, \"live\": "
					   "8388608, \"reserved\": 20971520"));
		CHECK(json && strstr(json, "\"verdict\": \"live memory\""));
		free(json);
		char *md = written_run(e, NULL, 0, 2);
		CHECK(md && strstr(md, "#### Out of memory"));
		CHECK(md && strstr(md, "| fragmentation |"));
		free(md);
	}
	as_explain_destroy(e);
	as_trace_destroy(t);
}

static void an_oom_without_recorded_segments_gives_no_verdict(void)
{
	struct as_diag d = {0};
	struct as_builder *b = as_builder_create("oom.ops", "ops");
	struct as_trace *t = NULL;
	CHECK(b != NULL);
	if (!b)
		return;
	struct as_mark m = {.size = 16 * MiB, .kind = AS_MARK_OOM};
	bool ok = as_builder_alloc(b, "a", 8 * MiB, 512, 1, &d) >= 0 &&
		  as_builder_mark(b, &m) == AS_OK &&
		  as_builder_finish(b, &t, &d) == AS_OK;
	CHECK(ok);
	if (!ok) {
		as_builder_destroy(b);
		return;
	}
	struct as_explain *e = NULL;
	CHECK(as_explain_trace(t, NULL, &e) == AS_OK);
	CHECK(e && e->nooms == 1);
	if (e && e->nooms == 1) {
		CHECK_EQ_U64(e->ooms[0].live, 8 * MiB);
		CHECK(!e->ooms[0].has_reserved);
		CHECK(e->ooms[0].verdict == AS_OOM_UNKNOWN);
		char *json = written_run(e, NULL, 0, 1);
		CHECK(json && strstr(json, "\"reserved\": null"));
		CHECK(json && strstr(json, "\"verdict\": null"));
		free(json);
	}
	as_explain_destroy(e);
	as_trace_destroy(t);
}

static void a_modelled_oom_gives_cached_blocks_by_class_and_the_largest(void)
{
	/* test_cuda_caching's: two 20 MiB segments, each cut into two 8 MiB
	 * blocks and a 4 MiB tail; one 8 MiB block of each freed: 16 MiB
	 * live, 40 MiB reserved on a 40 MiB device, 24 MiB cached in the
	 * 1-10 MiB class, the largest 8 MiB. z (16 MiB): 16 + 16 <= 40,
	 * fragmentation; w (30 MiB): 16 + 30 > 40, live memory */
	static const char ops[] = "alloc x1 8388608 512\n"
				  "alloc x2 8388608 512\n"
				  "alloc y1 8388608 512\n"
				  "alloc y2 8388608 512\n"
				  "free x1\n"
				  "free y1\n"
				  "alloc z 16777216 512\n"
				  "alloc w 31457280 512\n";
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	CHECK(as_trace_parse("oom.ops", ops, strlen(ops), "ops", &t, &d) ==
	      AS_OK);
	if (!t)
		return;
	const char *spec = "cuda-caching:capacity=40M";
	struct as_plan *p = NULL;
	CHECK(as_strategy_run(spec, t, NULL, &p, &d) == AS_OK);
	struct as_explain *e = NULL, *pe = NULL;
	CHECK(p && p->nooms == 2);
	if (p) {
		struct as_plan *c = as_plan_copy(p);
		CHECK(c && c->nooms == 2 && c->ooms[1].request == 30 * MiB);
		as_plan_destroy(c);
	}
	CHECK(p && as_explain_plan(t, spec, p, NULL, &pe, &d) == AS_OK);
	CHECK(as_explain_trace(t, NULL, &e) == AS_OK);
	CHECK(e && e->nooms == 0);
	CHECK(pe && pe->nooms == 2);
	if (e && pe && pe->nooms == 2) {
		const struct as_explain_oom *o = pe->ooms;
		CHECK(o[0].modelled && !o[0].recorded);
		CHECK_EQ_U64(o[0].request, 16 * MiB);
		CHECK_EQ_U64(o[0].live, 16 * MiB);
		CHECK_EQ_U64(o[0].reserved, 40 * MiB);
		CHECK_EQ_U64(o[0].device_total, 40 * MiB);
		CHECK_EQ_U64(o[0].cached[0], 0);
		CHECK_EQ_U64(o[0].cached[1], 24 * MiB);
		CHECK_EQ_U64(o[0].cached[2] + o[0].cached[3] + o[0].cached[4],
			     0);
		CHECK_EQ_U64(o[0].largest_free, 8 * MiB);
		CHECK(o[0].verdict == AS_OOM_FRAGMENTATION);
		CHECK_EQ_U64(o[1].request, 30 * MiB);
		CHECK_EQ_U64(o[1].live, 16 * MiB);
		CHECK_EQ_U64(o[1].largest_free, 8 * MiB);
		CHECK(o[1].verdict == AS_OOM_LIVE_MEMORY);
		const struct as_explain *plans[] = {pe};
		char *text = written_run(e, plans, 1, 0);
		CHECK(text && strstr(text, "out of memory (modelled)"));
		CHECK(text && strstr(text, "1-10 MiB 24.0 MiB"));
		CHECK(text && strstr(text, "largest free block 8.00 MiB"));
		CHECK(text && !strstr(text, "explain -s cuda-caching"));
		free(text);
		char *json = written_run(e, plans, 1, 1);
		CHECK(json && strstr(json, "\"cached_by_class\": {\"<=1 MiB\": 0, "
					   "\"1-10 MiB\": 25165824"));
		CHECK(json && strstr(json, "\"largest_free\": 8388608, "
					   "\"verdict\": \"fragmentation\""));
		free(json);
		char *md = written_run(e, plans, 1, 2);
		CHECK(md && strstr(md, "#### Out of memory · cuda-caching"));
		CHECK(md && strstr(md, "| live memory |"));
		free(md);
	}
	as_explain_destroy(e);
	as_explain_destroy(pe);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(peak_groups_agree_with_brute_force_on_random_traces);
	TEST_RUN(stages_take_lanes_and_the_innermost_holds_each_time);
	TEST_RUN(stage_bytes_agree_with_a_scan);
	TEST_RUN(temporaries_are_freed_before_the_next_allocation);
	TEST_RUN(representative_frames_leave_out_the_allocator);
	TEST_RUN(normalised_keys_merge_stacks_that_differ_in_addresses);
	TEST_RUN(a_new_group_counts_as_growth_from_nothing);
	TEST_RUN(every_markdown_writer_escapes_a_pipe_in_a_name);
	TEST_RUN(a_spec_names_its_strategy_before_the_first_colon);
	TEST_RUN(an_online_allocator_reports_its_fragmentation_at_its_peak);
	TEST_RUN(by_frame_merges_generated_kernels_under_the_model_line);
	TEST_RUN(categories_follow_the_documented_rules_and_sum_to_the_peak);
	TEST_RUN(each_buffer_gets_the_category_explain_gives_its_group);
	TEST_RUN(groupings_with_nothing_to_group_by_say_why);
	TEST_RUN(one_pass_gives_the_whole_traces_explain_on_heaptrack_files);
	TEST_RUN(one_pass_gives_the_whole_traces_explain_on_mtrace_files);
	TEST_RUN(one_pass_gives_the_whole_traces_explain_on_raw_heaptrack_files);
	TEST_RUN(one_pass_agrees_on_recordings_without_a_peak_or_blocks);
	if (getenv("AS_SOURCE_DIR"))
		TEST_RUN(one_pass_agrees_on_the_bundled_malloc_recordings);
	else
		TEST_SKIP(one_pass_agrees_on_the_bundled_malloc_recordings,
			  "AS_SOURCE_DIR is not set (meson test sets it)");
	TEST_RUN(one_pass_is_left_to_what_needs_the_whole_trace);
	TEST_RUN(recorded_ooms_tell_live_and_reserved_bytes_and_why_they_failed);
	TEST_RUN(an_oom_without_recorded_segments_gives_no_verdict);
	TEST_RUN(a_modelled_oom_gives_cached_blocks_by_class_and_the_largest);
	return tap_done();
}
