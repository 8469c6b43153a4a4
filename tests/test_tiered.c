/*
 * tiered: each branch of the decision (threshold, split of the largest free
 * block, tail extension, fresh memory from L2 then L3), merging on release,
 * the seed's worked examples, in-place reuse for reshape, concat and split
 * (and each case where it does not apply), options, and plans that validate
 * on bundled and seeded random traces and graphs.
 */
#include <dirent.h>
#include <stdarg.h>

#include "allocscope/allocscope.h"
#include "helpers.h"

#define MiB(x) ((uint64_t)(x) << 20)

static uint64_t level(const struct test_run *r, const char *name)
{
	int64_t i = r->t ? test_buffer(r->t, name) : -1;
	return i < 0 || !r->p ? 99 : as_plan_space_of(r->p, r->t, (uint32_t)i);
}

static uint64_t parent(const struct test_run *r, const char *name)
{
	int64_t i = r->t ? test_buffer(r->t, name) : -1;
	return i < 0 || !r->p ? 99 : as_plan_alias_of(r->p, r->t, (uint32_t)i);
}

/* ---- The seed's worked examples ---- */

static void worked_example_16_10_5_mib_fit_in_16_mib(void)
{
	/* 16 MiB, then 10 MiB and 5 MiB that overlap in time */
	struct test_run r;
	test_run(&r, "tiered", "w1.ops",
	    "alloc t16 16777216\nfree t16\nalloc t10 10485760\n"
	    "alloc t5 5242880\nfree t10\nfree t5\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "t16"), 0);
	CHECK_EQ_U64(test_offset(&r, "t10"), 0);
	CHECK_EQ_U64(test_offset(&r, "t5"), MiB(10));
	CHECK_EQ_U64(as_plan_peak(r.p, r.t, -1), MiB(16));
	CHECK_EQ_U64(test_stat(r.p, "blocks_reused"), 2);
	CHECK_EQ_U64(test_stat(r.p, "l2_bytes"), MiB(16));
	test_run_done(&r);
}

static void worked_example_a_10_mib_request_extends_the_4_mib_tail_block(void)
{
	/* free 2 MiB and 4 MiB blocks, the 4 MiB one at the tail */
	struct test_run r;
	test_run(&r, "tiered", "w2.ops",
	    "alloc a 2097152\nalloc keep 1048576\nalloc b 4194304\nfree a\n"
	    "free b\ndump\nalloc c 10485760\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	test_dump_has(&r, "  L2 [0, 2097152) 2097152 free\n"
		"  L2 [2097152, 3145728) 1048576 used\n"
		"  L2 [3145728, 7340032) 4194304 free\n");
	CHECK_EQ_U64(test_offset(&r, "c"), MiB(3));
	CHECK_EQ_U64(test_stat(r.p, "tail_extensions"), 1);
	CHECK_EQ_U64(test_stat(r.p, "extended_bytes"), MiB(6));
	CHECK_EQ_U64(as_plan_peak(r.p, r.t, -1), MiB(13));
	test_dump_has(&r, "  L2 [3145728, 13631488) 10485760 used\n");
	test_run_done(&r);
}

static void worked_example_a_10_mib_free_block_split_for_2_mib_leaves_8(void)
{
	struct test_run r;
	test_run(&r, "tiered", "w3.ops",
	    "alloc a 10485760\nfree a\nalloc b 2097152\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), 0);
	test_dump_has(&r, "  L2 [0, 2097152) 2097152 used\n"
		"  L2 [2097152, 10485760) 8388608 free\n");
	CHECK_EQ_U64(test_stat(r.p, "splits"), 1);
	test_run_done(&r);
}

static void worked_example_freeing_2_mib_between_free_2_and_6_leaves_10(void)
{
	struct test_run r;
	test_run(&r, "tiered", "w4.ops",
	    "alloc a 2097152\nalloc b 2097152\nalloc c 6291456\n"
	    "alloc keep 1048576\nfree a\nfree c\ndump\nfree b\ndump\n"
	    "alloc d 10485760\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	test_dump_has(&r, "  L2 [0, 2097152) 2097152 free\n"
		"  L2 [2097152, 4194304) 2097152 used\n"
		"  L2 [4194304, 10485760) 6291456 free\n");
	test_dump_has(&r, "L2 top=11534336 capacity=0 blocks=2 free=1\n"
		"tiered L3 top=0 capacity=0 blocks=0 free=0\n"
		"  L2 [0, 10485760) 10485760 free\n"
		"  L2 [10485760, 11534336) 1048576 used\n");
	CHECK_EQ_U64(test_stat(r.p, "merges"), 2);
	CHECK_EQ_U64(test_offset(&r, "d"), 0);
	test_run_done(&r);
}

/* ---- Each branch of the decision ---- */

static void a_request_up_to_the_threshold_is_carved_fresh(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=4096", "t.ops",
	    "alloc a 8192\nfree a\nalloc small 4096\nalloc big 4160\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "small"), 8192); /* not the free block at 0 */
	CHECK_EQ_U64(test_offset(&r, "big"), 0);      /* above it: reuse */
	CHECK_EQ_U64(test_stat(r.p, "small_fresh"), 1);
	test_run_done(&r);
	test_run(&r, "tiered:threshold=0", "t.ops",
	    "alloc a 8192\nfree a\nalloc small 4096\n");
	CHECK_EQ_U64(test_offset(&r, "small"), 0);
	test_run_done(&r);
}

static void the_largest_free_block_is_split_when_it_is_large_enough(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "t.ops",
	    "alloc a 1024\nalloc k1 64\nalloc b 4096\nalloc k2 64\nfree a\n"
	    "free b\nalloc c 512\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "c"), 1088); /* b's block, not a's first fit */
	test_dump_has(&r, "  L2 [1088, 1600) 512 used\n  L2 [1600, 5184) 3584 free\n");
	test_run_done(&r);
}

static void a_smaller_largest_block_not_at_the_tail_means_fresh_memory(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "t.ops",
	    "alloc a 2048\nalloc k1 64\nalloc b 1024\nfree b\nalloc k2 64\n"
	    "free a\nalloc c 4096\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	/* free: a (2048, not at the tail) and b's 1024 left of k2 */
	CHECK_EQ_U64(test_offset(&r, "k2"), 2112);
	CHECK_EQ_U64(test_offset(&r, "c"), 2112 + 64 + 960);
	CHECK_EQ_U64(test_stat(r.p, "tail_extensions"), 0);
	test_run_done(&r);
}

static void only_the_largest_free_block_is_considered_for_extension(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "t.ops",
	    "alloc a 4096\nalloc k 64\nalloc b 2048\nfree a\nfree b\n"
	    "alloc c 8192\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	/* b (2048) is the tail but a (4096) is the largest: fresh memory */
	CHECK_EQ_U64(test_offset(&r, "c"), 4096 + 64 + 2048);
	CHECK_EQ_U64(test_stat(r.p, "tail_extensions"), 0);
	test_run_done(&r);
}

static void l2_is_tried_first_then_l3(void)
{
	struct test_run r;
	test_run(&r, "tiered:l2=4M,l3=8M", "t.ops",
	    "alloc a 3145728\nalloc b 3145728\nalloc c 1048576\n"
	    "alloc d 6291456\nalloc e 1048576\nalloc f 4194304\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(level(&r, "a"), 0);
	CHECK_EQ_U64(test_offset(&r, "a"), 0);
	CHECK_EQ_U64(level(&r, "b"), 1); /* L2 has no room */
	CHECK_EQ_U64(test_offset(&r, "b"), 0);
	CHECK_EQ_U64(level(&r, "c"), 0); /* fits the rest of L2 */
	CHECK_EQ_U64(test_offset(&r, "c"), MiB(3));
	CHECK_EQ_U64(test_offset(&r, "d"), AS_NO_OFFSET); /* room in neither */
	CHECK_EQ_U64(level(&r, "e"), 1);
	CHECK_EQ_U64(test_offset(&r, "e"), MiB(3));
	CHECK_EQ_U64(level(&r, "f"), 1);
	CHECK_EQ_U64(test_offset(&r, "f"), MiB(4));
	CHECK_EQ_U64(as_plan_failed(r.p, r.t), 1);
	CHECK_EQ_U64(r.p->nspaces, 2);
	CHECK_EQ_U64(r.p->space_capacity[0], MiB(4));
	CHECK_EQ_U64(r.p->space_capacity[1], MiB(8));
	CHECK_STR(as_plan_space_name(r.p, r.t, 0), "L2");
	CHECK_STR(as_plan_space_name(r.p, r.t, 1), "L3");
	/* the memory used in all: both levels */
	CHECK_EQ_U64(as_plan_peak(r.p, r.t, -1), MiB(4) + MiB(8));
	CHECK_EQ_U64(test_stat(r.p, "l2_bytes"), MiB(4));
	CHECK_EQ_U64(test_stat(r.p, "l3_bytes"), MiB(8));
	test_run_done(&r);
}

static void l2_holds_the_memory_the_trace_states(void)
{
	/* the pool's 4 MiB are L2; what does not fit goes to L3 */
	static const char json[] =
		"{\"format\": \"allocscope-trace\", \"version\": 1,"
		" \"pools\": [{\"name\": \"hbm\", \"capacity\": 4194304}],"
		" \"events\": [{\"op\": \"alloc\", \"name\": \"a\","
		" \"size\": 3145728}, {\"op\": \"alloc\", \"name\": \"b\","
		" \"size\": 3145728}]}";
	struct test_run r;
	test_run(&r, "tiered", "t.json", json);
	if (test_run_ok(&r)) {
		CHECK_EQ_U64(level(&r, "a"), 0);
		CHECK_EQ_U64(level(&r, "b"), 1);
		CHECK_EQ_U64(r.p->space_capacity[0], MiB(4));
		CHECK(r.p->nnotes == 1);
		if (r.p->nnotes == 1)
			CHECK_STR(r.p->notes[0],
				  "capacity: L2: 4194304 B (4.00 MiB) from the "
				  "trace (its space's capacity)");
	}
	test_run_done(&r);
	/* l2=0 given: unlimited, whatever the trace says */
	test_run(&r, "tiered:l2=0", "t.json", json);
	if (test_run_ok(&r)) {
		CHECK_EQ_U64(level(&r, "b"), 0);
		CHECK_EQ_U64(r.p->nnotes, 0);
	}
	test_run_done(&r);
}

static void a_free_l2_block_is_reused_before_l3(void)
{
	struct test_run r;
	test_run(&r, "tiered:l2=4M", "t.ops",
	    "alloc a 3145728\nalloc b 3145728\nfree a\nalloc c 2097152\n"
	    "alloc d 2097152\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(level(&r, "c"), 0);
	CHECK_EQ_U64(test_offset(&r, "c"), 0);
	/* L2: 1 MiB free after c, 1 MiB of room: 2 MiB extends the tail */
	CHECK_EQ_U64(level(&r, "d"), 0);
	CHECK_EQ_U64(test_offset(&r, "d"), MiB(2));
	CHECK_EQ_U64(test_stat(r.p, "tail_extensions"), 1);
	test_run_done(&r);
}

static void a_tail_extension_beyond_l2_goes_to_l3(void)
{
	struct test_run r;
	test_run(&r, "tiered:l2=4M", "t.ops",
	    "alloc a 1048576\nalloc b 2097152\nfree b\nalloc c 4194304\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(level(&r, "c"), 1);
	CHECK_EQ_U64(test_stat(r.p, "tail_extensions"), 0);
	test_run_done(&r);
}

static void alignment_is_honoured_with_free_padding(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "t.ops",
	    "alloc a 64\nalloc b 4096 4096\nalloc c 64\nfree b\n"
	    "alloc d 64 1024\ndump\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "b"), 4096); /* [64, 4096) stays free */
	CHECK_EQ_U64(test_offset(&r, "c"), 64);   /* threshold 0: reuses it */
	CHECK_EQ_U64(test_offset(&r, "d"), 1024);
	test_dump_has(&r, "  L2 [128, 1024) 896 free\n  L2 [1024, 1088) 64 used\n"
		"  L2 [1088, 8192) 7104 free\n");
	test_run_done(&r);
}

static void a_config_case_restarts_with_its_own_levels(void)
{
	struct test_run r;
	test_run(&r, "tiered", "t.ops",
	    "config l2=1M\nalloc a 2097152\nconfig l2=4M\nalloc b 2097152\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(level(&r, "a"), 1);
	CHECK_EQ_U64(level(&r, "b"), 0);
	CHECK_EQ_U64(r.p->space_capacity[0], MiB(4)); /* the widest */
	test_run_done(&r);
}

static void traces_of_several_memories_are_refused(void)
{
	struct test_run r;
	test_run(&r, "tiered", "t.ops", "alloc a 64 pool=sram\nalloc b 64\n");
	CHECK(r.err == AS_EUNSUPPORTED);
	CHECK(strstr(r.d.msg, "needs a trace of one address space") != NULL);
	CHECK(r.t && !as_strategy_applies("tiered", r.t));
	CHECK(r.t && !as_strategy_applies("npu-list", r.t));
	test_run_done(&r);
	test_run(&r, "tiered", "t.ops", "alloc a 64\nalloc b 64\n");
	CHECK(r.t && as_strategy_applies("tiered", r.t));
	CHECK(r.t && as_strategy_applies("npu-list", r.t));
	test_run_done(&r);
}

static void options_out_of_range_are_refused_by_name(void)
{
	static const struct {
		const char *spec, *want;
		int err;
	} cases[] = {
		{"tiered:inplace=maybe", "inplace=maybe: expected one of off|on",
		 AS_EINVAL},
		{"tiered:granule=3", "granule=3: not a power of two", AS_EINVAL},
		{"tiered:granule=0", "granule=0: out of range", AS_EINVAL},
		{"tiered:l2=-1", "l2=-1: not a non-negative integer",
		 AS_EINVAL},
		{"tiered:threshold=1e9", "threshold=1e9", AS_EINVAL},
		{"tiered:l4=1", "unknown option 'l4'", AS_ENOTFOUND},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct test_run r;
		test_run(&r, cases[i].spec, "t.ops", "alloc a 8\n");
		CHECK(r.err == cases[i].err);
		if (!strstr(r.d.msg, cases[i].want)) {
			printf("#   %s: '%s'\n", cases[i].spec, r.d.msg);
			tap_cur_failed = 1;
		}
		test_run_done(&r);
	}
}

/* ---- In-place reuse ---- */

#define HEAD "{\"format\": \"allocscope-trace\", \"version\": 1, \"graph\": "
#define T(name, shape) \
	"{\"name\": \"" name "\", \"shape\": " shape ", \"dtype\": \"int8\"}"
#define OP(kind, in, out)                                                   \
	"{\"kind\": \"" kind "\", \"inputs\": [" in "], \"outputs\": [" out \
	"]}"
#define OPX(kind, axis, in, out)                                            \
	"{\"kind\": \"" kind "\", \"axis\": " axis ", \"inputs\": [" in      \
	"], \"outputs\": [" out "]}"

static const char *reshape_graph =
	HEAD "{\"tensors\": [" T("x", "[1, 64, 64]") "," T("a", "[1, 64, 64]")
	"," T("r", "[4096]") "," T("y", "[4096]") "],"
	"\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"ops\": ["
	OP("relu", "\"x\"", "\"a\"") "," OP("reshape", "\"a\"", "\"r\"") ","
	OP("relu", "\"r\"", "\"y\"") "]}}";

static void a_reshape_output_lives_in_its_input_block(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", reshape_graph);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "r"), test_offset(&r, "a"));
	CHECK_EQ_U64(parent(&r, "r"), test_buffer(r.t, "a"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_reshape"), 1);
	CHECK_EQ_U64(test_stat(r.p, "aliases"), 1);
	CHECK_EQ_U64(test_stat(r.p, "copies_avoided_bytes"), 4096);
	/* the block lives on for r, so y cannot take it */
	CHECK(test_offset(&r, "y") != test_offset(&r, "a"));
	test_run_done(&r);
	test_run(&r, "tiered:threshold=0,inplace=off", "g.json", reshape_graph);
	CHECK(test_offset(&r, "r") != test_offset(&r, "a"));
	CHECK_EQ_U64(parent(&r, "r"), AS_NONE);
	CHECK_EQ_U64(test_stat(r.p, "aliases"), 0);
	test_run_done(&r);
}

static void a_reshape_needing_a_stricter_alignment_is_not_in_place(void)
{
	const char *g =
		HEAD "{\"tensors\": [" T("x", "[1, 64, 64]") ","
		"{\"name\": \"a\", \"shape\": [4096], \"dtype\": \"int8\"},"
		"{\"name\": \"r\", \"shape\": [64, 64], \"dtype\": \"int8\","
		" \"align\": 4096}],"
		"\"inputs\": [\"x\"], \"outputs\": [\"r\"], \"ops\": ["
		OP("relu", "\"x\"", "\"a\"") "," OP("reshape", "\"a\"", "\"r\"")
		"]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", g);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "r"), AS_NONE);
	CHECK_EQ_U64(test_offset(&r, "r") % 4096, 0);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static const char *concat_graph =
	HEAD "{\"tensors\": [" T("x", "[1, 2, 64]") "," T("a", "[1, 1, 64]")
	"," T("b", "[1, 3, 64]") "," T("c", "[1, 4, 64]") ","
	T("y", "[1, 4, 64]") "],"
	"\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"ops\": ["
	OP("conv", "\"x\"", "\"a\"") "," OP("conv", "\"x\"", "\"b\"") ","
	OPX("concat", "1", "\"a\", \"b\"", "\"c\"") ","
	OP("relu", "\"c\"", "\"y\"") "]}}";

static void concat_inputs_live_at_consecutive_offsets_in_the_output(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", concat_graph);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "a"), test_offset(&r, "c"));
	CHECK_EQ_U64(test_offset(&r, "b"), test_offset(&r, "c") + 64);
	CHECK_EQ_U64(parent(&r, "a"), test_buffer(r.t, "c"));
	CHECK_EQ_U64(parent(&r, "b"), test_buffer(r.t, "c"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_concat"), 1);
	CHECK_EQ_U64(test_stat(r.p, "copies_avoided_bytes"), 256);
	/* c's block exists from a's production: x and c, nothing else */
	CHECK_EQ_U64(test_stat(r.p, "l2_bytes"), 128 + 256 + 256);
	test_run_done(&r);
}

static void a_concat_along_an_inner_axis_is_not_in_place(void)
{
	const char *g =
		HEAD "{\"tensors\": [" T("x", "[2, 64]") "," T("a", "[2, 32]")
		"," T("b", "[2, 32]") "," T("c", "[2, 64]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"c\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") "," OP("conv", "\"x\"", "\"b\"")
		"," OPX("concat", "1", "\"a\", \"b\"", "\"c\"") "]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", g);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "a"), AS_NONE);
	CHECK_EQ_U64(test_stat(r.p, "inplace_concat"), 0);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static void a_concat_of_a_graph_input_or_a_nested_tensor_is_not_in_place(void)
{
	const char *input =
		HEAD "{\"tensors\": [" T("x", "[2, 64]") "," T("a", "[2, 64]")
		"," T("c", "[4, 64]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"c\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") ","
		OPX("concat", "0", "\"x\", \"a\"", "\"c\"") "]}}";
	const char *nested =
		HEAD "{\"tensors\": [" T("x", "[2, 64]") "," T("a", "[2, 64]")
		"," T("r", "[2, 64]") "," T("c", "[4, 64]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"c\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") ","
		OP("reshape", "\"a\"", "\"r\"") ","
		OPX("concat", "0", "\"a\", \"r\"", "\"c\"") "]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", input);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "a"), AS_NONE);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
	test_run(&r, "tiered:threshold=0", "g.json", nested);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "r"), test_buffer(r.t, "a")); /* the reshape */
	CHECK_EQ_U64(parent(&r, "a"), AS_NONE);       /* not the concat */
	CHECK_EQ_U64(test_stat(r.p, "inplace_reshape"), 1);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
	const char *twice_ok =
		HEAD "{\"tensors\": [" T("x", "[2, 64]") "," T("a", "[2, 64]")
		"," T("c", "[4, 64]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"c\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") ","
		OPX("concat", "0", "\"a\", \"a\"", "\"c\"") "]}}";
	test_run(&r, "tiered:threshold=0", "g.json", twice_ok);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "a"), AS_NONE); /* one tensor, two places */
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static const char *split_graph =
	HEAD "{\"tensors\": [" T("x", "[1, 4, 64]") "," T("s", "[1, 4, 64]")
	"," T("p", "[1, 1, 64]") "," T("q", "[1, 3, 64]") ","
	T("y", "[1, 1, 64]") "," T("z", "[1, 3, 64]") "],"
	"\"inputs\": [\"x\"], \"outputs\": [\"y\", \"z\"], \"ops\": ["
	OP("conv", "\"x\"", "\"s\"") ","
	OPX("split", "-2", "\"s\"", "\"p\", \"q\"") ","
	OP("relu", "\"p\"", "\"y\"") "," OP("relu", "\"q\"", "\"z\"") "]}}";

static void split_outputs_live_inside_the_input(void)
{
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", split_graph);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(test_offset(&r, "p"), test_offset(&r, "s"));
	CHECK_EQ_U64(test_offset(&r, "q"), test_offset(&r, "s") + 64);
	CHECK_EQ_U64(parent(&r, "q"), test_buffer(r.t, "s"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_split"), 1);
	CHECK_EQ_U64(test_stat(r.p, "copies_avoided_bytes"), 256);
	test_run_done(&r);
	const char *inner =
		HEAD "{\"tensors\": [" T("x", "[2, 64]") "," T("s", "[2, 64]")
		"," T("p", "[2, 32]") "," T("q", "[2, 32]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"p\", \"q\"], \"ops\": ["
		OP("conv", "\"x\"", "\"s\"") ","
		OPX("split", "1", "\"s\"", "\"p\", \"q\"") "]}}";
	test_run(&r, "tiered:threshold=0", "g.json", inner);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK_EQ_U64(parent(&r, "p"), AS_NONE);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static void nested_in_place_decisions_chain_and_validate(void)
{
	/* split of a reshape, concat of the split's (processed) parts */
	const char *g =
		HEAD "{\"tensors\": [" T("x", "[1, 256]") "," T("a", "[1, 256]")
		"," T("r", "[1, 4, 64]") "," T("p", "[1, 2, 64]") ","
		T("q", "[1, 2, 64]") "," T("c", "[1, 4, 64]") ","
		T("f", "[256]") "," T("y", "[256]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") ","
		OP("reshape", "\"a\"", "\"r\"") ","
		OPX("split", "1", "\"r\"", "\"p\", \"q\"") ","
		OPX("concat", "1", "\"q\", \"p\"", "\"c\"") ","
		OP("reshape", "\"c\"", "\"f\"") ","
		OP("relu", "\"f\"", "\"y\"") "]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", g);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK(r.rep.valid);
	CHECK_EQ_U64(parent(&r, "r"), test_buffer(r.t, "a"));
	CHECK_EQ_U64(parent(&r, "p"), test_buffer(r.t, "r"));
	CHECK_EQ_U64(test_offset(&r, "q"), test_offset(&r, "a") + 128);
	/* p and q already live inside r: the concat cannot move them */
	CHECK_EQ_U64(parent(&r, "q"), test_buffer(r.t, "r"));
	CHECK_EQ_U64(parent(&r, "f"), test_buffer(r.t, "c"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_reshape"), 2);
	CHECK_EQ_U64(test_stat(r.p, "inplace_split"), 1);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static void a_reshape_of_a_concat_output_takes_the_parts_inside_it(void)
{
	/* concat then flatten: the flatten output holds the inputs */
	const char *g =
		HEAD "{\"tensors\": [" T("x", "[1, 2, 64]") "," T("a", "[1, 1, 64]")
		"," T("b", "[1, 1, 64]") "," T("c", "[1, 2, 64]") ","
		T("f", "[128]") "," T("y", "[128]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"ops\": ["
		OP("conv", "\"x\"", "\"a\"") "," OP("conv", "\"x\"", "\"b\"") ","
		OPX("concat", "1", "\"a\", \"b\"", "\"c\"") ","
		OP("reshape", "\"c\"", "\"f\"") ","
		OP("relu", "\"f\"", "\"y\"") "]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", g);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK(r.rep.valid);
	CHECK_EQ_U64(parent(&r, "f"), test_buffer(r.t, "c"));
	CHECK_EQ_U64(parent(&r, "a"), test_buffer(r.t, "f"));
	CHECK_EQ_U64(parent(&r, "b"), test_buffer(r.t, "f"));
	CHECK_EQ_U64(test_offset(&r, "b"), test_offset(&r, "c") + 64);
	CHECK_EQ_U64(test_offset(&r, "f"), test_offset(&r, "c"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_concat"), 1);
	CHECK_EQ_U64(test_stat(r.p, "inplace_reshape"), 1);
	test_run_done(&r);
}

static void a_tensor_is_split_in_place_once_and_reshaped_any_number_of_times(void)
{
	const char *g =
		HEAD "{\"tensors\": [" T("x", "[1, 2, 64]") "," T("s", "[1, 2, 64]")
		"," T("p", "[1, 1, 64]") "," T("q", "[1, 1, 64]") ","
		T("p2", "[1, 1, 64]") "," T("q2", "[1, 1, 64]") ","
		T("r1", "[128]") "," T("r2", "[2, 64]") "],"
		"\"inputs\": [\"x\"], \"outputs\": [\"p\", \"q\", \"p2\", "
		"\"q2\", \"r1\", \"r2\"], \"ops\": ["
		OP("conv", "\"x\"", "\"s\"") ","
		OPX("split", "1", "\"s\"", "\"p\", \"q\"") ","
		OP("reshape", "\"s\"", "\"r1\"") ","
		OPX("split", "1", "\"s\"", "\"p2\", \"q2\"") ","
		OP("reshape", "\"s\"", "\"r2\"") "]}}";
	struct test_run r;
	test_run(&r, "tiered:threshold=0", "g.json", g);
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK(r.rep.valid);
	/* each reshape takes the parts inside it: s > r1 > r2 > p, q */
	CHECK_EQ_U64(parent(&r, "r1"), test_buffer(r.t, "s"));
	CHECK_EQ_U64(parent(&r, "r2"), test_buffer(r.t, "r1"));
	CHECK_EQ_U64(parent(&r, "p"), test_buffer(r.t, "r2"));
	CHECK_EQ_U64(parent(&r, "q"), test_buffer(r.t, "r2"));
	CHECK_EQ_U64(test_offset(&r, "q"), test_offset(&r, "s") + 64);
	CHECK_EQ_U64(parent(&r, "p2"), AS_NONE); /* a second split */
	CHECK_EQ_U64(test_offset(&r, "r2"), test_offset(&r, "s"));
	CHECK_EQ_U64(test_stat(r.p, "inplace_split"), 1);
	CHECK_EQ_U64(test_stat(r.p, "inplace_reshape"), 2);
	CHECK_EQ_U64(test_stat(r.p, "inplace_refused"), 1);
	test_run_done(&r);
}

static void plain_traces_run_without_in_place_reuse(void)
{
	struct test_run r;
	test_run(&r, "tiered", "t.ops",
	    "alloc a 100000\nalloc b 100000\nfree a\nalloc c 50000\n");
	if (!test_run_ok(&r)) {
		test_run_done(&r);
		return;
	}
	CHECK(r.p->alias_of == NULL);
	CHECK_EQ_U64(test_stat(r.p, "aliases"), 0);
	CHECK_EQ_U64(test_offset(&r, "c"), 0);
	CHECK_EQ_U64(r.p->nspaces, 1); /* L2 unlimited: one level */
	test_run_done(&r);
}

static void the_bundled_cnn_graph_shows_in_place_reuse(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/cnn-graph.json",
		 src ? src : ".");
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
	if (!t)
		return;
	struct as_plan *on = NULL, *off_ = NULL;
	struct as_report r1, r2;
	CHECK(as_strategy_run("tiered", t, NULL, &on, &d) == AS_OK);
	CHECK(as_strategy_run("tiered:inplace=off", t, NULL, &off_, &d) ==
	      AS_OK);
	if (on && off_) {
		CHECK(as_validate(t, on, &r1) == AS_OK && r1.valid);
		CHECK(as_validate(t, off_, &r2) == AS_OK && r2.valid);
		CHECK_EQ_U64(test_stat(on, "inplace_reshape"), 1);
		CHECK_EQ_U64(test_stat(on, "inplace_concat"), 1);
		CHECK_EQ_U64(test_stat(on, "inplace_split"), 1);
		CHECK(as_plan_peak(on, t, -1) < as_plan_peak(off_, t, -1));
	}
	as_plan_destroy(on);
	as_plan_destroy(off_);
	as_trace_destroy(t);
}

/* ---- Conformance ---- */

static const char *const specs[] = {
	"tiered",
	"tiered:threshold=0",
	"tiered:inplace=off",
	"tiered:l2=64K,threshold=1024",
	"tiered:l2=256K,l3=1M,granule=1",
	"tiered:granule=4096,threshold=100000",
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static void conform(const char *name, const char *text, const char *what)
{
	for (size_t s = 0; s < NSPECS; s++) {
		struct test_run r;
		test_run(&r, specs[s], name, text);
		if (r.err == AS_EUNSUPPORTED && r.t && r.t->nspaces > 1) {
			test_run_done(&r); /* separate memories: not tiered's */
			continue;
		}
		if (r.err != AS_OK) {
			printf("#   %s on %s: %s\n", specs[s], what, r.d.msg);
			tap_cur_failed = 1;
		}
		if (getenv("AS_KEEP") && (r.err || !r.rep.valid)) {
			FILE *f = fopen(getenv("AS_KEEP"), "w");
			if (f) {
				fputs(text, f);
				fclose(f);
			}
		}
		test_run_done(&r);
	}
}

static void plans_validate_on_every_bundled_trace(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/traces", src ? src : ".");
	DIR *dp = opendir(dir);
	CHECK(dp != NULL);
	if (!dp)
		return;
	struct dirent *e;
	while ((e = readdir(dp))) {
		if (e->d_name[0] == '.')
			continue;
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		static char text[1 << 20];
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = 0;
		conform(e->d_name, text, e->d_name);
	}
	closedir(dp);
}

static uint64_t rng;

static uint64_t rnd(void)
{
	return test_rand(&rng);
}

struct gen {
	char *text;
	size_t used, cap;
};

static void put(struct gen *g, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(g->text + g->used, g->cap - g->used, fmt, ap);
	va_end(ap);
	if (w > 0 && g->used + (size_t)w < g->cap)
		g->used += (size_t)w;
}

static void new_tensor(struct gen *g, uint32_t *ch, uint32_t *hw,
		       uint32_t *wd, uint32_t *n, uint32_t c, uint32_t h,
		       uint32_t w)
{
	ch[*n] = c;
	hw[*n] = h;
	wd[*n] = w;
	put(g, "%s{\"name\": \"t%u\", \"shape\": [1, %u, %u, %u], "
	       "\"dtype\": \"float16\"}\n",
	    *n ? "," : "", *n, c, h, w);
	(*n)++;
}

/*
 * A random graph: tensors [1, C, H, W]; convs, adds, reshapes that swap
 * H and W, concats and
 * splits along axis 1 (in place) or 3 (not), reading random earlier
 * tensors, so parts end up in several concats, chains grow, and so on.
 */
static char *random_graph(uint64_t seed, uint32_t nops)
{
	enum { MAXT = 1024 };
	static uint32_t ch[MAXT], hw[MAXT], wd[MAXT];
	struct gen g = {malloc(1 << 20), 0, 1 << 20};
	struct gen ops = {malloc(1 << 20), 0, 1 << 20};
	uint32_t n = 0;
	rng = seed;
	put(&g, "{\"format\": \"allocscope-trace\", \"version\": 1, "
		"\"graph\": {\"align\": %u, \"tensors\": [\n",
	    1u << (rnd() % 7));
#define NEW(c, h, w) new_tensor(&g, ch, hw, wd, &n, (c), (h), (w))
	NEW(1 + (uint32_t)(rnd() % 8), 8, 8);
	for (uint32_t o = 0; o < nops && n + 4 < MAXT; o++) {
		uint32_t a = (uint32_t)(rnd() % n), k = (uint32_t)(rnd() % 6);
		put(&ops, "%s", o ? ",\n" : "");
		if (k == 0) { /* reshape: [1, C, H, W] to [1, C, W, H] */
			put(&ops, "{\"kind\": \"reshape\", \"inputs\": [\"t%u\"], "
				  "\"outputs\": [\"t%u\"]}",
			    a, n);
			NEW(ch[a], wd[a], hw[a]);
		} else if (k == 1 || k == 2) { /* concat */
			uint32_t b = (uint32_t)(rnd() % n);
			bool outer = k == 1;
			if (hw[b] != hw[a] || wd[b] != wd[a] ||
			    (!outer && ch[b] != ch[a]))
				b = a;
			put(&ops, "{\"kind\": \"concat\", \"axis\": %d, "
				  "\"inputs\": [\"t%u\", \"t%u\"], "
				  "\"outputs\": [\"t%u\"]}",
			    outer ? 1 : 3, a, b, n);
			if (outer)
				NEW(ch[a] + ch[b], hw[a], wd[a]);
			else
				NEW(ch[a], hw[a], wd[a] + wd[b]);
		} else if (k == 3 && ch[a] >= 2) { /* split along channels */
			uint32_t c1 = 1 + (uint32_t)(rnd() % (ch[a] - 1));
			put(&ops, "{\"kind\": \"split\", \"axis\": 1, "
				  "\"inputs\": [\"t%u\"], \"outputs\": "
				  "[\"t%u\", \"t%u\"]}",
			    a, n, n + 1);
			NEW(c1, hw[a], wd[a]);
			NEW(ch[a] - c1, hw[a], wd[a]);
		} else if (k == 4) { /* add of two */
			uint32_t b = (uint32_t)(rnd() % n);
			put(&ops, "{\"kind\": \"add\", \"inputs\": [\"t%u\", "
				  "\"t%u\"], \"outputs\": [\"t%u\"]}",
			    a, b, n);
			NEW(ch[a], hw[a], wd[a]);
		} else { /* conv */
			put(&ops, "{\"kind\": \"conv\", \"inputs\": [\"t%u\"], "
				  "\"outputs\": [\"t%u\"]}",
			    a, n);
			NEW(1 + (uint32_t)(rnd() % 8), hw[a], wd[a]);
		}
	}
#undef NEW
	put(&g, "], \"inputs\": [\"t0\"], \"outputs\": [\"t%u\"], "
		"\"ops\": [\n%s]}}\n",
	    n - 1, ops.text);
	free(ops.text);
	return g.text;
}

static void plans_validate_on_seeded_random_graphs_and_traces(void)
{
	uint64_t base = getenv("AS_SEED") ? strtoull(getenv("AS_SEED"), 0, 10)
					  : 777;
	printf("# seed %llu (set AS_SEED to replay)\n",
	       (unsigned long long)base);
	uint64_t aliases = 0;
	for (uint64_t k = 0; k < 30; k++) {
		char *text = random_graph(base + k, 10 + (uint32_t)k * 8);
		char what[64];
		snprintf(what, sizeof(what), "random graph seed %llu",
			 (unsigned long long)(base + k));
		conform("random.json", text, what);
		struct test_run r;
		test_run(&r, "tiered", "random.json", text);
		aliases += r.p ? (uint64_t)test_stat(r.p, "aliases") : 0;
		test_run_done(&r);
		free(text);
	}
	CHECK(aliases > 30); /* in-place reuse was exercised */
	for (uint64_t k = 0; k < 20; k++) {
		struct gen g = {malloc(1 << 20), 0, 1 << 20};
		uint32_t live[512], nlive = 0;
		rng = base * 31 + k;
		for (uint32_t i = 0; i < 100 + k * 30; i++) {
			while (nlive && (nlive == 512 || rnd() % 3 == 0)) {
				uint32_t j = (uint32_t)(rnd() % nlive);
				put(&g, "free b%u\n", live[j]);
				live[j] = live[--nlive];
			}
			if (k % 4 == 3 && rnd() % 50 == 0) {
				put(&g, "config l2=%u\n",
				    (unsigned)(rnd() % 300000));
				nlive = 0;
			}
			uint64_t size = rnd() % 8 == 0 ? rnd() % 64
					: rnd() % 4 == 0 ? 256 * (1 + rnd() % 64)
							 : 1 + rnd() % 100000;
			put(&g, "alloc b%u %llu %llu\n", i,
			    (unsigned long long)size,
			    (unsigned long long)(1ull << (rnd() % 13)));
			live[nlive++] = i;
		}
		char what[64];
		snprintf(what, sizeof(what), "random trace %llu",
			 (unsigned long long)k);
		conform("random.ops", g.text, what);
		free(g.text);
	}
}

/* Run the CLI through the shell; its exit status and first output line. */
static int cli(const char *args, char *out, size_t len)
{
	const char *exe = getenv("AS_EXE"), *src = getenv("AS_SOURCE_DIR");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s 2>&1", src ? src : ".",
		 exe ? exe : "build/allocscope", args);
	FILE *f = popen(cmd, "r");
	out[0] = 0;
	if (!f)
		return -1;
	if (!fgets(out, (int)len, f))
		out[0] = 0;
	char sink[4096];
	while (fgets(sink, sizeof(sink), f))
		;
	int st = pclose(f);
	return st >= 0 && (st & 0x7f) == 0 ? (st >> 8) & 0xff : -1;
}

static void the_cli_refuses_bad_options_with_status_2_and_replays_graphs(void)
{
	static const struct {
		const char *args, *want;
		int status;
	} cases[] = {
		{"replay traces/cnn-graph.json -s tiered:l2=abc",
		 "tiered: option l2=abc: not a non-negative integer", 2},
		{"replay traces/cnn-graph.json -s tiered:inplace=yes",
		 "tiered: option inplace=yes: expected one of off|on", 2},
		{"replay traces/npu-stream.ops -s npu-list:merge=sometimes",
		 "npu-list: option merge=sometimes: expected one of", 2},
		{"replay traces/npu-stream.ops -s npu-list:capacity=-4",
		 "npu-list: option capacity=-4", 2},
		{"replay traces/npu-stream.ops -s npu-list:colour=red",
		 "unknown option 'colour'", 2},
		{"replay traces/numa-small.json -s tiered",
		 "cannot plan this trace (needs a trace of one address space",
		 2},
		{"replay traces/numa-small.json -s npu-list",
		 "cannot plan this trace (needs a trace of one address space",
		 2},
		{"replay traces/cnn-graph.json -s tiered -s npu-list",
		 "trace traces/cnn-graph.json (json): 16 buffers", 0},
		{"replay traces/npu-stream.ops -s tiered:l2=64K -s npu-list",
		 "trace traces/npu-stream.ops (ops): 17 buffers", 0},
	};
	if (!getenv("AS_EXE")) {
		printf("#   AS_EXE is not set\n");
		tap_cur_failed = 1;
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[512];
		int st = cli(cases[i].args, out, sizeof(out));
		if (st != cases[i].status || !strstr(out, cases[i].want)) {
			printf("#   %s: status %d, '%s'\n", cases[i].args, st,
			       out);
			tap_cur_failed = 1;
		}
	}
}

int main(void)
{
	TEST_RUN(worked_example_16_10_5_mib_fit_in_16_mib);
	TEST_RUN(worked_example_a_10_mib_request_extends_the_4_mib_tail_block);
	TEST_RUN(worked_example_a_10_mib_free_block_split_for_2_mib_leaves_8);
	TEST_RUN(worked_example_freeing_2_mib_between_free_2_and_6_leaves_10);
	TEST_RUN(a_request_up_to_the_threshold_is_carved_fresh);
	TEST_RUN(the_largest_free_block_is_split_when_it_is_large_enough);
	TEST_RUN(a_smaller_largest_block_not_at_the_tail_means_fresh_memory);
	TEST_RUN(only_the_largest_free_block_is_considered_for_extension);
	TEST_RUN(l2_is_tried_first_then_l3);
	TEST_RUN(l2_holds_the_memory_the_trace_states);
	TEST_RUN(a_free_l2_block_is_reused_before_l3);
	TEST_RUN(a_tail_extension_beyond_l2_goes_to_l3);
	TEST_RUN(alignment_is_honoured_with_free_padding);
	TEST_RUN(a_config_case_restarts_with_its_own_levels);
	TEST_RUN(traces_of_several_memories_are_refused);
	TEST_RUN(options_out_of_range_are_refused_by_name);
	TEST_RUN(a_reshape_output_lives_in_its_input_block);
	TEST_RUN(a_reshape_needing_a_stricter_alignment_is_not_in_place);
	TEST_RUN(concat_inputs_live_at_consecutive_offsets_in_the_output);
	TEST_RUN(a_concat_along_an_inner_axis_is_not_in_place);
	TEST_RUN(a_concat_of_a_graph_input_or_a_nested_tensor_is_not_in_place);
	TEST_RUN(split_outputs_live_inside_the_input);
	TEST_RUN(nested_in_place_decisions_chain_and_validate);
	TEST_RUN(a_reshape_of_a_concat_output_takes_the_parts_inside_it);
	TEST_RUN(a_tensor_is_split_in_place_once_and_reshaped_any_number_of_times);
	TEST_RUN(plain_traces_run_without_in_place_reuse);
	TEST_RUN(the_bundled_cnn_graph_shows_in_place_reuse);
	TEST_RUN(plans_validate_on_every_bundled_trace);
	TEST_RUN(plans_validate_on_seeded_random_graphs_and_traces);
	TEST_RUN(the_cli_refuses_bad_options_with_status_2_and_replays_graphs);
	return tap_done();
}
