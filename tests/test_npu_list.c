/*
 * npu-list: one linked list of nodes over all memory, first fit from the
 * head (exact nodes taken whole, larger ones split, smaller and used ones
 * skipped), address symbols that map dependent instructions to one node,
 * and merge=immediate|never on release.
 */
#include "allocscope/allocscope.h"
#include "helpers.h"

static void all_memory_starts_as_one_free_node(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=4096", "t.ops", "dump\nalloc a 64\nfree a\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	test_dump_has(&r, "npu-list capacity=4096 nodes=1\n  [0, 4096) 4096 free\n");
	test_run_done(&r);
}

static void a_larger_free_node_is_split_into_the_request_and_a_free_successor(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=1024,granule=1", "t.ops", "alloc a 100 1\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "a"), 0);
	test_dump_has(&r, "  [0, 100) 100 used\n  [100, 1024) 924 free\n");
	CHECK_EQ_U64(test_stat(r.p, "splits"), 1);
	test_run_done(&r);
}

static void a_free_node_of_exactly_the_size_is_taken_whole(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=1024,granule=1", "t.ops",
	    "alloc a 100 1\nalloc b 50 1\nalloc c 100 1\nfree b\n"
	    "alloc d 50 1\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "d"), 100);
	CHECK_EQ_U64(test_stat(r.p, "exact_fits"), 1);
	CHECK_EQ_U64(test_stat(r.p, "splits"), 3);
	test_dump_has(&r, "  [100, 150) 50 used\n  [150, 250) 100 used\n");
	test_run_done(&r);
}

static void smaller_and_used_nodes_are_skipped(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=1024,granule=1", "t.ops",
	    "alloc a 100 1\nalloc b 50 1\nalloc c 100 1\nfree b\n"
	    "alloc d 80 1\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "d"), 250); /* b's 50-byte node is too small */
	test_run_done(&r);
}

static void requests_are_rounded_to_the_granule_and_aligned(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=4096,granule=1", "t.ops",
	    "alloc a 10 1\nalloc b 64 64\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), 64);
	test_dump_has(&r, "  [10, 64) 54 free\n  [64, 128) 64 used\n");
	CHECK_EQ_U64(test_stat(r.p, "alignment_pads"), 1);
	test_run_done(&r);
	test_run(&r, "npu-list:capacity=4096", "t.ops", "alloc a 10\nalloc b 10\n");
	CHECK_EQ_U64(test_offset(&r, "b"), 64); /* granule 64 by default */
	CHECK_EQ_U64(r.p->chunk[test_buffer(r.t, "a")], 64);
	test_run_done(&r);
}

static void a_request_that_fits_nowhere_fails_and_replay_goes_on(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=256,granule=1", "t.ops",
	    "alloc a 200 1\nalloc b 100 1\nalloc c 56 1\nalloc z 0 1\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), AS_NO_OFFSET);
	CHECK_EQ_U64(test_offset(&r, "c"), 200);
	CHECK_EQ_U64(as_plan_failed(r.p, r.t), 1);
	test_run_done(&r);
}

static void a_known_symbol_gets_the_same_node_and_the_plan_says_so(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc other 64\nalloc dma 4096 symbol=act0\n"
	    "alloc conv 4096 symbol=act0\nfree dma\nalloc next 64\n"
	    "free conv\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "dma"), 64);
	CHECK_EQ_U64(test_offset(&r, "conv"), 64);
	CHECK(r.p->alias_of != NULL);
	if (r.p->alias_of)
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "conv")], test_buffer(r.t, "dma"));
	/* the node is still held by conv: next goes after it */
	CHECK_EQ_U64(test_offset(&r, "next"), 64 + 4096);
	CHECK_EQ_U64(test_stat(r.p, "symbol_hits"), 1);
	test_run_done(&r);
}

static void json_traces_carry_symbols_too(void)
{
	const char *text =
		"{\"format\": \"allocscope-trace\", \"version\": 1, "
		"\"events\": ["
		"{\"op\": \"alloc\", \"name\": \"dma\", \"size\": 4096,"
		" \"symbol\": \"act0\"},"
		"{\"op\": \"alloc\", \"name\": \"conv\", \"size\": 4096,"
		" \"symbol\": \"act0\"},"
		"{\"op\": \"free\", \"name\": \"dma\"},"
		"{\"op\": \"free\", \"name\": \"conv\"}]}";
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	struct as_report rep;
	CHECK(as_trace_parse("s.json", text, strlen(text), NULL, &t,
			     &d) == AS_OK);
	if (!t)
		return;
	CHECK(as_strategy_run("npu-list", t, NULL, &p, &d) == AS_OK);
	if (p) {
		CHECK_EQ_U64(p->offset[1], p->offset[0]);
		CHECK(as_validate(t, p, &rep) == AS_OK && rep.valid);
		CHECK_EQ_U64(test_stat(p, "symbol_hits"), 1);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void an_unknown_symbol_gets_a_new_node_and_an_entry(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc a 64 symbol=s\nalloc b 64 symbol=t\nalloc c 64 symbol=t\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "a"), 0);
	CHECK_EQ_U64(test_offset(&r, "b"), 64);
	CHECK_EQ_U64(test_offset(&r, "c"), 64);
	test_run_done(&r);
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc a 64 symbol=s\nalloc b 64 symbol=t\ndump\n");
	test_dump_has(&r, "  [0, 64) 64 used symbol=s\n  [64, 128) 64 used symbol=t\n");
	test_run_done(&r);
}

static void a_symbol_is_forgotten_when_its_node_is_released(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc x 64 symbol=s\nfree x\nalloc y 64\nalloc z 64 symbol=s\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "y"), 0);
	CHECK_EQ_U64(test_offset(&r, "z"), 64); /* a new node, not y's */
	CHECK_EQ_U64(test_stat(r.p, "symbol_hits"), 0);
	test_run_done(&r);
}

static void sharers_nest_in_the_newest_live_buffer_of_the_node(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc a 256 symbol=s\nalloc b 256 symbol=s\nalloc c 128 symbol=s\n"
	    "free b\nfree c\nalloc d 256 symbol=s\nfree a\nalloc e 64 "
	    "symbol=s\nfree d\nfree e\nalloc f 64\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	if (r.p && r.p->alias_of) {
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "b")], test_buffer(r.t, "a"));
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "c")], test_buffer(r.t, "b"));
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "d")], test_buffer(r.t, "a"));
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "e")], test_buffer(r.t, "d"));
		CHECK_EQ_U64(r.p->alias_of[test_buffer(r.t, "f")], AS_NONE);
	}
	CHECK_EQ_U64(test_offset(&r, "e"), 0);
	CHECK_EQ_U64(test_offset(&r, "f"), 0); /* released after e */
	CHECK_EQ_U64(test_stat(r.p, "symbol_hits"), 4);
	test_run_done(&r);
}

static void a_sharer_larger_than_its_host_fails(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=65536", "t.ops",
	    "alloc a 64 symbol=s\nalloc b 128 symbol=s\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), AS_NO_OFFSET);
	CHECK_EQ_U64(test_stat(r.p, "symbol_conflicts"), 1);
	test_run_done(&r);
}

static const char *frag =
	"alloc a 100 1\nalloc b 100 1\nalloc c 100 1\nfree a\nfree c\n"
	"free b\ndump\nalloc d 200 1\n";

static void release_merges_with_a_free_successor_and_predecessor(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=300,granule=1", "t.ops", frag);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	test_dump_has(&r, "nodes=1\n  [0, 300) 300 free\n");
	CHECK_EQ_U64(test_stat(r.p, "merges"), 2);
	CHECK_EQ_U64(test_offset(&r, "d"), 0);
	test_run_done(&r);
	/* predecessor only, successor only */
	test_run(&r, "npu-list:capacity=300,granule=1", "t.ops",
	    "alloc a 100 1\nalloc b 100 1\nalloc c 100 1\nfree a\nfree b\n"
	    "dump\n");
	test_dump_has(&r, "  [0, 200) 200 free\n  [200, 300) 100 used\n");
	test_run_done(&r);
	test_run(&r, "npu-list:capacity=300,granule=1", "t.ops",
	    "alloc a 100 1\nalloc b 100 1\nalloc c 100 1\nfree c\nfree b\n"
	    "dump\n");
	test_dump_has(&r, "  [0, 100) 100 used\n  [100, 300) 200 free\n");
	test_run_done(&r);
}

static void merge_never_keeps_released_nodes_apart(void)
{
	struct test_run r;
	test_run(&r, "npu-list:capacity=300,granule=1,merge=never", "t.ops", frag);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	test_dump_has(&r, "nodes=3\n  [0, 100) 100 free\n  [100, 200) 100 free\n"
		"  [200, 300) 100 free\n");
	CHECK_EQ_U64(test_offset(&r, "d"), AS_NO_OFFSET); /* what merging buys */
	CHECK_EQ_U64(test_stat(r.p, "merges"), 0);
	test_run_done(&r);
}

static void the_memory_is_what_the_trace_states_else_unlimited(void)
{
	/* no limit stated: 2 GiB fits (capacity=1G was the default once) */
	struct test_run r;
	test_run(&r, "npu-list", "t.ops", "alloc a 2147483648\nalloc b 64\n");
	if (test_run_ok(&r)) {
		CHECK_EQ_U64(as_plan_failed(r.p, r.t), 0);
		CHECK_EQ_U64(r.p->nnotes, 0);
	}
	test_run_done(&r);
	/* the option still sets it, and the run says so */
	test_run(&r, "npu-list:capacity=1G", "t.ops",
		 "alloc a 2147483648\nalloc b 64\n");
	if (test_run_ok(&r)) {
		CHECK_EQ_U64(as_plan_failed(r.p, r.t), 1);
		CHECK(r.p->nnotes == 1);
		if (r.p->nnotes == 1)
			CHECK_STR(r.p->notes[0],
				  "capacity: default: 1073741824 B (1.00 GiB) "
				  "from the option capacity=1073741824");
	}
	test_run_done(&r);
}

static void options_out_of_range_are_refused_by_name(void)
{
	struct test_run r;
	test_run(&r, "npu-list:merge=sometimes", "t.ops", "alloc a 8\n");
	CHECK(r.err == AS_EINVAL);
	CHECK(strstr(r.d.msg, "merge=sometimes: expected one of "
			      "immediate|never") != NULL);
	test_run_done(&r);
	test_run(&r, "npu-list:granule=48", "t.ops", "alloc a 8\n");
	CHECK(r.err == AS_EINVAL);
	CHECK(strstr(r.d.msg, "granule=48: not a power of two") != NULL);
	test_run_done(&r);
	test_run(&r, "npu-list:capacity=lots", "t.ops", "alloc a 8\n");
	CHECK(r.err == AS_EINVAL);
	CHECK(strstr(r.d.msg, "capacity=lots") != NULL);
	test_run_done(&r);
	test_run(&r, "npu-list:size=1", "t.ops", "alloc a 8\n");
	CHECK(r.err == AS_ENOTFOUND);
	CHECK(strstr(r.d.msg, "unknown option 'size'") != NULL);
	test_run_done(&r);
	test_run(&r, "npu-list:capacity=0", "t.ops", "alloc a 8\nalloc b 1000000000000\n");
	CHECK(r.err == AS_OK); /* 0: unlimited */
	CHECK_EQ_U64(as_plan_failed(r.p, r.t), 0);
	test_run_done(&r);
}

static void config_lines_set_options_per_case(void)
{
	struct test_run r;
	test_run(&r, "npu-list", "t.ops",
	    "config capacity=128 granule=1\nalloc a 100 1\nalloc b 100 1\n"
	    "config capacity=1024 granule=1\nalloc c 100 1\nalloc d 100 1\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), AS_NO_OFFSET);
	CHECK_EQ_U64(test_offset(&r, "c"), 0);
	CHECK_EQ_U64(test_offset(&r, "d"), 100);
	test_run_done(&r);
}

static void the_bundled_instruction_stream_shares_symbols_validly(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/npu-stream.ops",
		 src ? src : ".");
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	struct as_report rep;
	CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
	if (!t)
		return;
	CHECK(t->nsymbols > 0);
	CHECK(as_strategy_run("npu-list", t, NULL, &p, &d) == AS_OK);
	if (p) {
		CHECK(as_validate(t, p, &rep) == AS_OK && rep.valid);
		CHECK(test_stat(p, "symbol_hits") >= 4);
		CHECK_EQ_U64(as_plan_failed(p, t), 0);
		CHECK_EQ_U64(p->offset[test_buffer(t, "conv1.src")],
			     p->offset[test_buffer(t, "dma0.in.dst")]);
		CHECK_EQ_U64(p->offset[test_buffer(t, "pool.src")],
			     p->offset[test_buffer(t, "conv2.dst")]);
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* ---- Conformance: random streams with symbols, and traces/ ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	return test_rand(&rng);
}

static char *random_stream(uint64_t seed, uint32_t n)
{
	size_t cap = (size_t)n * 64 + 256, used = 0;
	char *text = malloc(cap);
	uint32_t *live = malloc(n * sizeof(*live)), nlive = 0;
	rng = seed;
	for (uint32_t i = 0; i < n; i++) {
		while (nlive && rnd() % 3 == 0) {
			uint32_t k = (uint32_t)(rnd() % nlive);
			used += (size_t)snprintf(text + used, cap - used,
						 "free b%u\n", live[k]);
			live[k] = live[--nlive];
		}
		uint64_t size = rnd() % 5 == 0 ? 4096 : 1 + rnd() % 20000;
		uint64_t align = (uint64_t)1 << (rnd() % 8);
		used += (size_t)snprintf(text + used, cap - used,
					 "alloc b%u %llu %llu", i,
					 (unsigned long long)size,
					 (unsigned long long)align);
		if (rnd() % 2)
			used += (size_t)snprintf(text + used, cap - used,
						 " symbol=s%u",
						 (unsigned)(rnd() % 8));
		used += (size_t)snprintf(text + used, cap - used, "\n");
		live[nlive++] = i;
	}
	free(live);
	return text;
}

/*
 * The model written out: a plain list walked from the head, as the file's
 * header describes it (no symbols). The strategy finds its answers through
 * a treap; offsets, failures and nodes_walked must be the walk's.
 */
struct ref_node {
	uint64_t start, size;
	bool used;
};

struct ref_list {
	struct ref_node *v;
	uint32_t n;
	uint64_t walks;
};

static void ref_insert(struct ref_list *l, uint32_t at, struct ref_node x)
{
	memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof(*l->v));
	l->v[at] = x;
	l->n++;
}

static void ref_remove(struct ref_list *l, uint32_t at)
{
	memmove(&l->v[at], &l->v[at + 1], (l->n - at - 1) * sizeof(*l->v));
	l->n--;
}

/* Offset of the request, or UINT64_MAX when nothing fits. */
static uint64_t ref_alloc(struct ref_list *l, uint64_t size, uint64_t align)
{
	for (uint32_t k = 0; k < l->n; k++) {
		struct ref_node *x = &l->v[k];
		l->walks++;
		if (x->used || x->size < size)
			continue;
		uint64_t pad = (x->start + align - 1) / align * align - x->start;
		if (pad) {
			if (x->size - size < pad)
				continue;
			struct ref_node rest = {x->start + pad, x->size - pad,
						false};
			x->size = pad;
			ref_insert(l, k + 1, rest);
			continue;
		}
		if (x->size > size) {
			struct ref_node rest = {x->start + size,
						x->size - size, false};
			x->size = size;
			ref_insert(l, k + 1, rest);
		}
		l->v[k].used = true;
		return l->v[k].start;
	}
	return UINT64_MAX;
}

static void ref_free(struct ref_list *l, uint64_t start, bool merge)
{
	uint32_t k = 0;
	while (l->v[k].start != start)
		k++;
	l->v[k].used = false;
	if (!merge)
		return;
	if (k + 1 < l->n && !l->v[k + 1].used) {
		l->v[k].size += l->v[k + 1].size;
		ref_remove(l, k + 1);
	}
	if (k > 0 && !l->v[k - 1].used) {
		l->v[k - 1].size += l->v[k].size;
		ref_remove(l, k);
	}
}

static void the_treap_finds_what_a_walk_from_the_head_finds(void)
{
	enum { N = 600, CAP = 1 << 20 };
	for (uint64_t seed = 1; seed <= 6; seed++) {
		bool merge = seed & 1;
		size_t cap = (size_t)N * 48 + 64, used = 0;
		char *text = malloc(cap);
		uint64_t *sz = malloc(N * sizeof(*sz)), *al = malloc(N * 8);
		uint32_t *live = malloc(N * sizeof(*live)), nlive = 0;
		uint32_t *ev = malloc(2 * N * sizeof(*ev)), nev = 0;
		struct ref_list l = {malloc((2 * N + 2) * sizeof(*l.v)), 1, 0};
		uint64_t *want = malloc(N * sizeof(*want));
		CHECK(text && sz && al && live && ev && l.v && want);
		if (!text || !sz || !al || !live || !ev || !l.v || !want)
			goto next;
		rng = seed * 991;
		for (uint32_t i = 0; i < N; i++) {
			while (nlive && rnd() % 5 < 2) {
				uint32_t k = (uint32_t)(rnd() % nlive);
				used += (size_t)snprintf(text + used,
							 cap - used,
							 "free b%u\n", live[k]);
				ev[nev++] = live[k] | 0x80000000u;
				live[k] = live[--nlive];
			}
			sz[i] = (1 + rnd() % 300) * 64;
			al[i] = (uint64_t)64 << (rnd() % 4 == 0 ? rnd() % 5 : 0);
			used += (size_t)snprintf(
				text + used, cap - used, "alloc b%u %llu %llu\n",
				i, (unsigned long long)sz[i],
				(unsigned long long)al[i]);
			ev[nev++] = i;
			live[nlive++] = i;
		}
		/* The reference replay. */
		l.v[0] = (struct ref_node){0, CAP, false};
		for (uint32_t e = 0; e < nev; e++) {
			uint32_t i = ev[e] & 0x7fffffffu;
			if (ev[e] & 0x80000000u) {
				if (want[i] != UINT64_MAX)
					ref_free(&l, want[i], merge);
			} else {
				want[i] = ref_alloc(&l, sz[i], al[i]);
			}
		}
		char spec[64];
		snprintf(spec, sizeof(spec),
			 "npu-list:capacity=%d,granule=64,merge=%s", CAP,
			 merge ? "immediate" : "never");
		struct test_run r;
		test_run(&r, spec, "t.ops", text);
		if (test_run_ok(&r)) {
			uint32_t same = 0;
			for (uint32_t i = 0; i < N; i++) {
				char name[16];
				snprintf(name, sizeof(name), "b%u", i);
				uint64_t got = test_offset(&r, name);
				same += got == want[i] ||
					(got == AS_NO_OFFSET &&
					 want[i] == UINT64_MAX);
			}
			CHECK_EQ_U64(same, N);
			CHECK_EQ_U64((uint64_t)test_stat(r.p, "nodes_walked"),
				     l.walks);
			CHECK_EQ_U64((uint64_t)test_stat(r.p, "nodes"), l.n);
		}
		test_run_done(&r);
	next:
		free(text);
		free(sz);
		free(al);
		free(live);
		free(ev);
		free(l.v);
		free(want);
	}
}

static void plans_validate_on_seeded_random_streams_with_symbols(void)
{
	uint64_t base = getenv("AS_SEED") ? strtoull(getenv("AS_SEED"), 0, 10)
					  : 4242;
	printf("# seed %llu (set AS_SEED to replay)\n",
	       (unsigned long long)base);
	static const char *const specs[] = {
		"npu-list", "npu-list:merge=never",
		"npu-list:capacity=200000,granule=1",
		"npu-list:capacity=100000,merge=never"};
	for (uint64_t k = 0; k < 24; k++) {
		char *text = random_stream(base + k, 40 + (uint32_t)k * 20);
		for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
			struct test_run r;
			test_run(&r, specs[s], "t.ops", text);
			if (r.err != AS_OK) {
				printf("#   %s, seed %llu: %s\n", specs[s],
				       (unsigned long long)(base + k),
				       r.d.msg);
				tap_cur_failed = 1;
			}
			test_run_done(&r);
		}
		free(text);
	}
}

int main(void)
{
	TEST_RUN(all_memory_starts_as_one_free_node);
	TEST_RUN(a_larger_free_node_is_split_into_the_request_and_a_free_successor);
	TEST_RUN(a_free_node_of_exactly_the_size_is_taken_whole);
	TEST_RUN(smaller_and_used_nodes_are_skipped);
	TEST_RUN(requests_are_rounded_to_the_granule_and_aligned);
	TEST_RUN(a_request_that_fits_nowhere_fails_and_replay_goes_on);
	TEST_RUN(a_known_symbol_gets_the_same_node_and_the_plan_says_so);
	TEST_RUN(json_traces_carry_symbols_too);
	TEST_RUN(an_unknown_symbol_gets_a_new_node_and_an_entry);
	TEST_RUN(a_symbol_is_forgotten_when_its_node_is_released);
	TEST_RUN(sharers_nest_in_the_newest_live_buffer_of_the_node);
	TEST_RUN(a_sharer_larger_than_its_host_fails);
	TEST_RUN(release_merges_with_a_free_successor_and_predecessor);
	TEST_RUN(merge_never_keeps_released_nodes_apart);
	TEST_RUN(the_memory_is_what_the_trace_states_else_unlimited);
	TEST_RUN(options_out_of_range_are_refused_by_name);
	TEST_RUN(config_lines_set_options_per_case);
	TEST_RUN(the_bundled_instruction_stream_shares_symbols_validly);
	TEST_RUN(plans_validate_on_seeded_random_streams_with_symbols);
	TEST_RUN(the_treap_finds_what_a_walk_from_the_head_finds);
	return tap_done();
}
