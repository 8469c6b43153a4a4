/* The trace model, the three input formats and the lower bound. */
#include "allocscope/build.h"
#include "core/internal.h"
#include "core/trace_private.h"
#include "helpers.h"
#include "tap.h"

static struct as_trace *parse(const char *name, const char *text,
			      struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_parse(name, text, strlen(text), NULL, &t, d) !=
	    AS_OK)
		return NULL;
	return t;
}

static const struct as_buffer *named(const struct as_trace *t,
				     const char *name, int nth)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(t->buffers[i].name, name) == 0 && nth-- == 0)
			return &t->buffers[i];
	return NULL;
}

static void ops_lifetimes_count_one_step_per_operation(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.ops", "# comment\n\nalloc a 100\n"
					    "alloc b 200 512\nfree a\n"
					    "dump\nfree b\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 2);
	CHECK_STR(t->format, "ops");
	CHECK_EQ_U64(named(t, "a", 0)->start, 0);
	CHECK_EQ_U64(named(t, "a", 0)->end, 2);
	CHECK_EQ_U64(named(t, "b", 0)->start, 1);
	CHECK_EQ_U64(named(t, "b", 0)->end, 3);
	CHECK_EQ_U64(as_buffer_align(named(t, "b", 0)), 512);
	CHECK_EQ_U64(as_buffer_align(named(t, "a", 0)), 64);
	CHECK_EQ_U64(t->nevents, 5); /* the dump line is an event too */
	CHECK_EQ_U64(t->events[3].kind, AS_EV_QUERY);
	as_trace_destroy(t);
}

static void ops_name_may_be_reused_after_free(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.ops", "alloc a 1\nfree a\nalloc a 2\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 2);
	CHECK_EQ_U64(named(t, "a", 1)->size, 2);
	CHECK_EQ_U64(named(t, "a", 1)->end, 3); /* never freed: to the end */
	CHECK(named(t, "a", 1)->flags & AS_BUF_NEVER_FREED);
	as_trace_destroy(t);
}

static void config_after_operations_starts_a_new_case(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.txt",
				   "config total=1024 growth=0\nalloc a 10\n"
				   "config total=2048\nalloc a 20\nfree a\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->ncases, 2);
	CHECK_STR(t->cases[0].options, "total=1024,growth=0");
	CHECK_STR(t->cases[1].options, "total=2048");
	/* The live 'a' of case 0 ends where case 1 starts. */
	CHECK_EQ_U64(named(t, "a", 0)->end, 1);
	CHECK_EQ_U64(named(t, "a", 1)->start, 1);
	CHECK_EQ_U64(as_trace_lower_bound(t), 20);
	as_trace_destroy(t);
}

static void ops_alloc_attributes_set_pool_offset_and_symbol(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.ops",
				   "alloc a 64 pool=l2 offset=128 symbol=S1\n"
				   "alloc b 64 1 symbol=S1\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nspaces, 2);
	CHECK_STR(t->spaces[named(t, "a", 0)->space].name, "l2");
	CHECK_EQ_U64(named(t, "a", 0)->recorded, 128);
	CHECK_EQ_U64(t->nsymbols, 1);
	CHECK_EQ_U64(named(t, "a", 0)->symbol, named(t, "b", 0)->symbol);
	as_trace_destroy(t);
}

static void csv_reads_minimalloc_columns_in_any_order(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.csv",
				   "id,lower,upper,size,offset,alignment\n"
				   "0,0,10,4,0,4\n1,5,15,8,4,4\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_STR(t->format, "csv");
	CHECK_EQ_U64(t->nbuffers, 2);
	CHECK_EQ_U64(named(t, "1", 0)->recorded, 4);
	CHECK_EQ_U64(named(t, "1", 0)->start, 5);
	CHECK_EQ_U64(as_trace_lower_bound(t), 12);
	as_trace_destroy(t);
}

static void csv_frees_come_before_allocations_at_equal_times(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.csv",
				   "id,lower,upper,size\n0,0,5,10\n1,5,9,10\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(as_trace_lower_bound(t), 10);
	CHECK_EQ_U64(t->events[1].kind, AS_EV_FREE);
	as_trace_destroy(t);
}

static void csv_events_follow_time_order_at_any_time_scale(void)
{
	/* Rows out of order, with small times (radix path) and times past
	 * 2^32 (comparison path): the events come out in time order. */
	static const char *const texts[] = {
		"id,lower,upper,size\n2,7,9,1\n0,0,8,2\n1,3,7,4\n",
		"id,lower,upper,size\n2,70000000007,70000000009,1\n"
		"0,70000000000,70000000008,2\n1,70000000003,70000000007,4\n",
	};
	for (int k = 0; k < 2; k++) {
		struct as_diag d;
		struct as_trace *t = parse("x.csv", texts[k], &d);
		CHECK(t != NULL);
		if (!t)
			continue;
		/* 0 alloc, 1 alloc, 1 free, 2 alloc (free first at 7), ... */
		static const uint32_t kind[] = {AS_EV_ALLOC, AS_EV_ALLOC,
						AS_EV_FREE,  AS_EV_ALLOC,
						AS_EV_FREE,  AS_EV_FREE};
		static const char *const who[] = {"0", "1", "1", "2", "0", "2"};
		for (int e = 0; e < 6; e++) {
			CHECK_EQ_U64(t->events[e].kind, kind[e]);
			CHECK_STR(t->buffers[t->events[e].arg].name, who[e]);
		}
		CHECK_EQ_U64(as_trace_lower_bound(t), 6);
		as_trace_destroy(t);
	}
}

static void an_id_live_twice_is_found_among_thousands_of_ids(void)
{
	/* 4000 ids; id 2718 comes back, overlapping its first buffer or
	 * right after it. */
	for (int overlap = 0; overlap < 2; overlap++) {
		size_t cap = 64 * 4002, len = 0;
		char *text = malloc(cap);
		len += (size_t)snprintf(text, cap, "id,lower,upper,size\n");
		for (int i = 0; i < 4000; i++)
			len += (size_t)snprintf(text + len, cap - len,
						"%d,%d,%d,16\n", i, i, i + 50);
		snprintf(text + len, cap - len, "2718,%d,9000,16\n",
			 overlap ? 2760 : 2768);
		struct as_diag d;
		struct as_trace *t = parse("x.csv", text, &d);
		if (overlap) {
			CHECK(t == NULL);
			CHECK(strstr(d.msg, "id '2718' of data rows 2719 and "
					    "4001") != NULL);
		} else {
			CHECK(t != NULL);
			CHECK(t && t->nbuffers == 4001);
		}
		as_trace_destroy(t);
		free(text);
	}
}

static void json_events_carry_pools_metadata_and_frames(void)
{
	struct as_diag d;
	struct as_trace *t = parse(
		"x.json",
		"{\"format\": \"allocscope-trace\", \"version\": 1,\n"
		" \"metadata\": {\"model\": \"m\"},\n"
		" \"pools\": [{\"name\": \"hbm\", \"capacity\": 4096},\n"
		"           {\"name\": \"sram\", \"capacity\": 256}],\n"
		" \"config\": {\"total\": 1024},\n"
		" \"events\": [\n"
		"  {\"op\": \"alloc\", \"name\": \"a\", \"size\": 100,"
		"   \"pool\": \"sram\", \"frames\": [\"f.py:1\", \"g.py:2\"]},\n"
		"  {\"op\": \"alloc\", \"name\": \"v\", \"size\": 50,"
		"   \"alias_of\": \"a\", \"alias_offset\": 50},\n"
		"  {\"op\": \"free\", \"name\": \"v\"},\n"
		"  {\"op\": \"free\", \"name\": \"a\"}]}\n",
		&d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_STR(t->spaces[0].name, "hbm");
	CHECK_EQ_U64(t->spaces[1].capacity, 256);
	CHECK_EQ_U64(named(t, "a", 0)->space, 1);
	CHECK_STR(as_trace_buffer_frames(t, 0), "f.py:1\ng.py:2");
	CHECK(as_trace_buffer_frames(t, 1) == NULL);
	CHECK_STR(t->cases[0].options, "total=1024");
	CHECK_STR(t->metadata, "{\"model\":\"m\"}");
	CHECK_EQ_U64(named(t, "v", 0)->alias_of, 0);
	CHECK_EQ_U64(named(t, "v", 0)->space, 1); /* follows its parent */
	/* The alias takes no memory of its own. */
	CHECK_EQ_U64(as_trace_lower_bound(t), 100);
	as_trace_destroy(t);
}

static void frames_are_one_string_per_stack_and_a_number_per_buffer(void)
{
	struct as_builder *b = as_builder_create("stacks", "ops");
	CHECK(b != NULL);
	if (!b)
		return;
	struct as_diag d;
	char name[16];
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		int64_t idx = as_builder_alloc(b, name, 16, 16, 1, &d);
		CHECK(idx == i);
		char fr[32];
		snprintf(fr, sizeof(fr), "f%d\nmain", i % 3);
		if (i % 5 && idx >= 0) /* every fifth without frames */
			CHECK(as_builder_frames(b, (uint32_t)idx, fr) == AS_OK);
	}
	const char *shared = as_builder_intern(b, "x\ny");
	CHECK(as_builder_frames_interned(b, 0, shared) == AS_OK);
	CHECK(as_builder_frames(b, 200, "f") == AS_EINVAL);
	struct as_trace *t = NULL;
	CHECK(as_builder_finish(b, &t, &d) == AS_OK);
	if (!t) {
		as_builder_destroy(b);
		return;
	}
	CHECK(as_trace_buffer_frames(t, 0) == shared);
	CHECK_STR(as_trace_buffer_frames(t, 1), "f1\nmain");
	CHECK(as_trace_buffer_frames(t, 5) == NULL);
	/* Same text, same string: three stacks (and x\ny) for 160 buffers. */
	CHECK(as_trace_buffer_frames(t, 1) == as_trace_buffer_frames(t, 4));
	CHECK(as_trace_buffer_frames(t, 1) != as_trace_buffer_frames(t, 2));
	CHECK(t->priv->nstacks == 4);
	CHECK(as_trace_buffer_frames(t, 200) == NULL);
	as_trace_destroy(t);
}

static void json_buffers_form_has_explicit_lifetimes(void)
{
	struct as_diag d;
	struct as_trace *t = parse(
		"x.json",
		"{\"format\": \"allocscope-trace\", \"version\": 1, \"buffers\": ["
		"{\"name\": \"a\", \"size\": \"18446744073709551000\", "
		"\"start\": 0, \"end\": 4},"
		"{\"name\": \"b\", \"size\": 7, \"start\": 4, \"end\": 8, "
		"\"offset\": 0}]}",
		&d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(named(t, "a", 0)->size, 18446744073709551000ull);
	CHECK_EQ_U64(named(t, "b", 0)->recorded, 0);
	as_trace_destroy(t);
}

static void lower_bound_matches_hand_computed_cases(void)
{
	static const struct {
		const char *text;
		uint64_t lb;
	} cases[] = {
		{"alloc a 10\nalloc b 20\nfree a\nalloc c 5\n", 30},
		{"alloc a 10\nfree a\nalloc b 20\nfree b\nalloc c 5\n", 20},
		{"alloc a 7\nalloc b 0\nalloc c 3\nfree a\nalloc d 8\n", 11},
		{"alloc z 0\nfree z\n", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct as_diag d;
		struct as_trace *t = parse("x.ops", cases[i].text, &d);
		CHECK(t != NULL);
		if (!t)
			continue;
		CHECK_EQ_U64(as_trace_lower_bound(t), cases[i].lb);
		as_trace_destroy(t);
	}
}

static void empty_text_files_are_refused_on_line_1(void)
{
	static const char *const texts[][2] = {
		{"x.ops", ""},
		{"x.ops", "\n  \n\t\r\n"},
		{"x.ops", "# a comment\n\n# and another\n"},
		{"x.mtrace", ""},
		{"x.heaptrack", " \n"},
		{"x.csv", ""},
		{"x.csv", "id,lower,upper,size\n"},
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct as_diag d;
		struct as_trace *t = parse(texts[i][0], texts[i][1], &d);
		CHECK(t == NULL);
		CHECK_EQ_U64(d.line, 1);
		as_trace_destroy(t);
	}
	/* A config alone is a trace: its case, with no buffers. */
	struct as_diag d;
	struct as_trace *t = parse("x.ops", "config total=1G\n", &d);
	CHECK(t != NULL);
	as_trace_destroy(t);
}

static void lower_bound_of_separate_spaces_is_the_sum_of_their_bounds(void)
{
	struct as_diag d;
	struct as_trace *t = parse("x.ops",
				   "alloc a 10 pool=x\nalloc b 20 pool=y\n"
				   "free a\nalloc c 15 pool=x\n",
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(as_trace_lower_bound_space(t, 1), 15);
	CHECK_EQ_U64(as_trace_lower_bound_space(t, 2), 20);
	CHECK_EQ_U64(as_trace_lower_bound(t), 15 + 20);
	as_trace_destroy(t);
	/* The sum of the spaces' bounds, not the most live at once (15). */
	t = parse("x.ops", "alloc a 10 pool=x\nfree a\nalloc b 15 pool=y\n",
		  &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(as_trace_lower_bound(t), 10 + 15);
	as_trace_destroy(t);
}

/*
 * With many spaces the bound is one pass over the events, not one per space
 * (fuzz_json: a numa trace of 4096 cores took minutes): the same figures as
 * each space's own sweep, across case boundaries. Seeded.
 */
static void lower_bound_of_many_spaces_equals_the_sum_of_each_sweep(void)
{
	struct as_trace *t = test_random_pools_trace(17, 40, 1500);
	CHECK(t != NULL && t->nspaces > 30);
	if (!t)
		return;
	uint64_t sum = 0;
	for (uint16_t s = 0; s < t->nspaces; s++)
		sum += as_trace_lower_bound_space(t, s);
	CHECK_EQ_U64(as_trace_lower_bound(t), sum);
	as_trace_destroy(t);
}

static void traces_past_2_64_bytes_live_are_refused_where_they_pass_it(void)
{
	struct as_diag d;
	/* 2^64-1 bytes live at once is the most a trace may hold. */
	struct as_trace *t = parse("x.ops",
				   "alloc a 18446744073709551000 1\n"
				   "alloc b 615 1\n"
				   "free b\n"
				   "alloc c 615\n",
				   &d);
	CHECK(t != NULL);
	if (t)
		CHECK_EQ_U64(as_trace_lower_bound(t), UINT64_MAX);
	as_trace_destroy(t);
	t = parse("x.ops",
		  "alloc a 18446744073709551000 1\n"
		  "# two lines on\n"
		  "alloc b 616 1\n",
		  &d);
	CHECK(t == NULL);
	CHECK_EQ_U64(d.line, 3);
	CHECK(strcmp(d.msg, "more than 2^64-1 bytes live at once") == 0);
	as_trace_destroy(t);
	/* With spaces, the peaks of the spaces sum, even at different times. */
	t = parse("x.ops",
		  "alloc a 9223372036854775808 pool=p\n"
		  "free a\n"
		  "alloc b 9223372036854775808 pool=q\n",
		  &d);
	CHECK(t == NULL);
	CHECK_EQ_U64(d.line, 3);
	as_trace_destroy(t);
}

static void format_is_detected_by_content_without_extension(void)
{
	struct as_diag d;
	struct as_trace *t = parse("noext", "id,lower,upper,size\n0,0,1,1\n",
				   &d);
	CHECK(t && strcmp(t->format, "csv") == 0);
	as_trace_destroy(t);
	t = parse("noext", "  {\"format\": \"allocscope-trace\", \"version\":"
			   " 1, \"events\": []}",
		  &d);
	CHECK(t && strcmp(t->format, "json") == 0);
	as_trace_destroy(t);
}

static void errors_name_the_line_and_the_problem(void)
{
	static const struct {
		const char *name, *text, *want;
	} cases[] = {
		{"a.ops", "alloc a 1\nalloc a 2\n", "a.ops:2: alloc of 'a', which is still live"},
		{"a.ops", "alloc a 1\nfree a\nfree a\n", "a.ops:3: free of 'a', which is already freed"},
		{"a.ops", "free q\n", "a.ops:1: free of unknown name 'q'"},
		{"a.ops", "alloc a -5\n", "a.ops:1: size '-5' is not a non-negative integer"},
		{"a.ops", "alloc a 99999999999999999999\n", "a.ops:1: size 99999999999999999999 overflows 64 bits"},
		{"a.ops", "alloc a 8 3\n", "a.ops:1: alignment 3 is not a power of two"},
		{"a.csv", "id,lower,upper,size\n0,5,5,1\n", "a.csv:2: lifetime [5, 5) is empty"},
		{"a.csv", "id,lower,upper,size,gaps\n", "a.csv:1: unknown column 'gaps'"},
		{"a.csv", "id,lower,size\n", "a.csv:1: missing column 'upper'"},
		{"a.json", "{\"format\": \"allocscope-trace\",\n \"version\": 1,\n \"events\": [\n", "a.json:4: truncated JSON"},
		{"a.json", "{\"format\": \"allocscope-trace\", \"version\": 1,\n \"events\": [\n  {\"op\": \"alloc\", \"name\": \"a\", \"size\": \"x\"}]}", "a.json:3: events[0].size: 'x' is not a non-negative integer"},
		{"a.json", "{\"format\": \"allocscope-trace\", \"version\": 1,\n \"events\": [{\"op\": \"alloc\",\n \"name\": 5, \"size\": 1}]}", "a.json:3: events[0].name: expected a string"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct as_diag d;
		struct as_trace *t = parse(cases[i].name, cases[i].text, &d);
		char buf[1024];
		CHECK(t == NULL);
		as_trace_destroy(t);
		as_diag_text(&d, buf, sizeof(buf));
		if (strncmp(buf, cases[i].want, strlen(cases[i].want)) != 0) {
			printf("#   case %zu: got '%s'\n#   want '%s...'\n", i,
			       buf, cases[i].want);
			tap_cur_failed = 1;
		}
	}
}

static void minimalloc_benchmarks_have_the_published_lower_bounds(void)
{
	static const struct {
		const char *file;
		uint64_t lb;
	} b[] = {
		{"benchmarks/minimalloc/A.1048576.csv", 1048576},
		{"benchmarks/minimalloc/B.1048576.csv", 1048576},
		{"benchmarks/minimalloc/C.1048576.csv", 1039360},
		{"benchmarks/minimalloc/D.1048576.csv", 986112},
		{"benchmarks/minimalloc/E.1048576.csv", 1048576},
		{"benchmarks/minimalloc/F.1048576.csv", 1048576},
		{"benchmarks/minimalloc/G.1048576.csv", 1048576},
		{"benchmarks/minimalloc/H.1048576.csv", 1048576},
		{"benchmarks/minimalloc/I.1048576.csv", 1048576},
		{"benchmarks/minimalloc/J.1048576.csv", 989184},
		{"benchmarks/minimalloc/K.1048576.csv", 1048576},
		{"benchmarks/idealloc/G_1.csv", 3030937746ull},
		{"benchmarks/idealloc/resnet50.csv", 1515472556ull},
	};
	const char *shared = tap_shared_dir();
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
		char path[1024];
		struct as_diag d;
		struct as_trace *t;
		snprintf(path, sizeof(path), "%s/%s", shared, b[i].file);
		CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
		if (t == NULL)
			continue;
		CHECK_EQ_U64(as_trace_lower_bound(t), b[i].lb);
		as_trace_destroy(t);
	}
}

/*
 * The address map merges touching ranges, shrinks holes to the gap plus
 * their remainder, and turns offsets into addresses and back; offsets in a
 * shrunk hole, other spaces and traces without a map have no address.
 */
static void address_map_turns_compressed_offsets_into_addresses(void)
{
	struct as_builder *b = as_builder_create("map", "csv");
	CHECK(b != NULL);
	if (!b)
		return;
	CHECK(as_builder_space(b, "other", 0) == 1);
	struct as_addr_range r[] = {
		{.address = 0x7f0000100000, .length = 0x200},
		{.address = 0x7f0000000800, .length = 0x1000},
		{.address = 0x50000010, .length = 16, .space = 1},
		{.address = 0x7f0000000000, .length = 0x1000},
	};
	CHECK_EQ_U64(as_builder_addr_map(b, r, 4, 4096, 4096), AS_OK);
	CHECK_EQ_U64(as_builder_addr_map(b, r, 4, 4096, 4096), AS_EINVAL);
	uint64_t off = 0;
	CHECK(as_builder_offset_of(b, 0, 0x7f0000100100, &off));
	CHECK_EQ_U64(off, 0x3100); /* 0x1800 used, a 0x1800 hole */
	CHECK(!as_builder_offset_of(b, 0, 0x7f0000002000, &off));
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_builder_finish(b, &t, &d) == AS_OK);
	if (!t) {
		as_builder_destroy(b);
		return;
	}
	CHECK_EQ_U64(t->naddr_map, 3);
	uint64_t a = 0;
	CHECK(as_trace_address_of(t, 0, 0, &a));
	CHECK_EQ_U64(a, 0x7f0000000000);
	CHECK(as_trace_address_of(t, 0, 0x17ff, &a));
	CHECK_EQ_U64(a, 0x7f00000017ff);
	a = 7;
	CHECK(!as_trace_address_of(t, 0, 0x1800, &a)); /* the shrunk hole */
	CHECK_EQ_U64(a, 7);
	CHECK(as_trace_address_of(t, 0, 0x3000, &a));
	CHECK_EQ_U64(a, 0x7f0000100000);
	CHECK(!as_trace_address_of(t, 0, 0x3200, &a));
	CHECK(as_trace_address_of(t, 1, 0x10, &a));
	CHECK_EQ_U64(a, 0x50000010);
	CHECK(!as_trace_address_of(t, 1, 0, &a));
	CHECK(!as_trace_address_of(t, 2, 0x10, &a));
	as_trace_destroy(t);
	/* Without a map nothing is an address. */
	b = as_builder_create("plain", "csv");
	t = NULL;
	CHECK(b && as_builder_finish(b, &t, &d) == AS_OK);
	CHECK(t && !as_trace_address_of(t, 0, 0, &a));
	as_trace_destroy(t);
}

/* Strategies add a round per address space; a trace may have thousands. */
static void a_plan_keeps_every_round_and_stat_through_copies(void)
{
	struct as_diag d = {0};
	struct as_trace *t = test_parse("r.ops", "alloc a 8\nfree a\n", NULL, &d);
	struct as_plan *p = as_plan_create(t);
	for (uint32_t i = 0; i < 5000; i++)
		CHECK(as_plan_round(p, "round", i) == AS_OK);
	CHECK(as_plan_stat_int(p, "one", 1) == AS_OK);
	struct as_plan *c = as_plan_copy(p);
	CHECK(c != NULL);
	for (uint32_t i = 5000; c && i < 5003; i++)
		CHECK(as_plan_round(c, "after the copy", i) == AS_OK);
	CHECK(c && as_plan_stat_int(c, "two", 2) == AS_OK);
	CHECK_EQ_U64(c ? c->nrounds : 0, 5003);
	CHECK_EQ_U64(c ? c->nstats : 0, 2);
	for (uint32_t i = 0; c && i < c->nrounds; i++)
		if (c->rounds[i].peak != i)
			CHECK(c->rounds[i].peak == i);
	CHECK_STR(c ? c->rounds[5002].label : NULL, "after the copy");
	as_plan_destroy(c);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

/* Moments sort the lifetimes: times past 32 bits (a CSV's own clock) are
 * ordered as event steps are. */
static void a_peak_moment_is_the_same_whatever_the_width_of_the_times(void)
{
	static const char *const csv[2] = {
		"id,lower,upper,size\n0,0,10,8\n1,5,30,4\n2,3,6,2\n"
		"3,7,9,16\n4,12,40,32\n",
		"id,lower,upper,size\n0,5000000000,5000000010,8\n"
		"1,5000000005,5000000030,4\n2,5000000003,5000000006,2\n"
		"3,5000000007,5000000009,16\n4,5000000012,5000000040,32\n",
	};
	struct as_moment m[2] = {{0}};
	for (int w = 0; w < 2; w++) {
		struct as_diag d = {0};
		struct as_trace *t = test_parse("m.csv", csv[w], "csv", &d);
		CHECK(t != NULL);
		CHECK(t && as_trace_peak_moment(t, 0, &m[w]) == AS_OK);
		as_trace_destroy(t);
	}
	CHECK_EQ_U64(m[0].live_bytes, 36);
	CHECK_EQ_U64(m[1].live_bytes, m[0].live_bytes);
	CHECK_EQ_U64(m[1].time - 5000000000u, m[0].time);
	CHECK_EQ_U64(m[1].live, m[0].live);
}

int main(void)
{
	TEST_RUN(ops_lifetimes_count_one_step_per_operation);
	TEST_RUN(address_map_turns_compressed_offsets_into_addresses);
	TEST_RUN(ops_name_may_be_reused_after_free);
	TEST_RUN(config_after_operations_starts_a_new_case);
	TEST_RUN(ops_alloc_attributes_set_pool_offset_and_symbol);
	TEST_RUN(csv_reads_minimalloc_columns_in_any_order);
	TEST_RUN(csv_frees_come_before_allocations_at_equal_times);
	TEST_RUN(csv_events_follow_time_order_at_any_time_scale);
	TEST_RUN(an_id_live_twice_is_found_among_thousands_of_ids);
	TEST_RUN(json_events_carry_pools_metadata_and_frames);
	TEST_RUN(frames_are_one_string_per_stack_and_a_number_per_buffer);
	TEST_RUN(json_buffers_form_has_explicit_lifetimes);
	TEST_RUN(lower_bound_matches_hand_computed_cases);
	TEST_RUN(empty_text_files_are_refused_on_line_1);
	TEST_RUN(lower_bound_of_separate_spaces_is_the_sum_of_their_bounds);
	TEST_RUN(lower_bound_of_many_spaces_equals_the_sum_of_each_sweep);
	TEST_RUN(traces_past_2_64_bytes_live_are_refused_where_they_pass_it);
	TEST_RUN(format_is_detected_by_content_without_extension);
	TEST_RUN(errors_name_the_line_and_the_problem);
	TEST_RUN(a_plan_keeps_every_round_and_stat_through_copies);
	TEST_RUN(a_peak_moment_is_the_same_whatever_the_width_of_the_times);
	if (tap_shared_dir())
		TEST_RUN(minimalloc_benchmarks_have_the_published_lower_bounds);
	else
		TEST_SKIP(minimalloc_benchmarks_have_the_published_lower_bounds,
			  "../shared is absent");
	return tap_done();
}
