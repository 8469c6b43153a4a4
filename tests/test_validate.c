/* The validator: it must catch every injected fault and accept valid plans. */
#include "allocscope/build.h"
#include "tap.h"

static struct as_trace *parse(const char *text)
{
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_parse("v.ops", text, strlen(text), "ops", &t, &d))
		printf("# parse: %s\n", d.msg);
	return t;
}

static struct as_report check(const struct as_trace *t, const uint64_t *off)
{
	struct as_plan *p = as_plan_create(t);
	struct as_report r = {0};
	for (uint32_t i = 0; i < t->nbuffers; i++)
		p->offset[i] = off[i];
	CHECK(as_validate(t, p, &r) == AS_OK);
	as_plan_destroy(p);
	return r;
}

/* a and b overlap in time; c starts after a is freed. */
static const char *three = "alloc a 100 1\nalloc b 100 1\nfree a\n"
			   "alloc c 100 1\n";

static void disjoint_addresses_are_valid(void)
{
	struct as_trace *t = parse(three);
	uint64_t off[] = {0, 100, 0};
	struct as_report r = check(t, off);
	CHECK(r.valid);
	CHECK_EQ_U64(r.violations, 0);
	as_trace_destroy(t);
}

static void overlap_of_live_buffers_is_caught_and_named(void)
{
	struct as_trace *t = parse(three);
	uint64_t off[] = {0, 99, 300};
	struct as_report r = check(t, off);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.overlaps, 1);
	CHECK_EQ_U64(r.first[0].kind, AS_V_OVERLAP);
	CHECK_EQ_U64(r.first[0].a, 0);
	CHECK_EQ_U64(r.first[0].b, 1);
	struct as_plan *p = as_plan_create(t);
	memcpy(p->offset, off, sizeof(off));
	char buf[512];
	as_violation_text(t, p, &r.first[0], buf, sizeof(buf));
	CHECK_STR(buf, "'a' (time [0, 2), addresses [0, 100)) overlaps 'b' "
		       "(time [1, 4), addresses [99, 199))");
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void reuse_after_free_is_not_an_overlap(void)
{
	struct as_trace *t = parse(three);
	uint64_t off[] = {0, 100, 0}; /* c takes a's old place */
	CHECK(check(t, off).valid);
	uint64_t bad[] = {0, 100, 150}; /* c overlaps live b */
	CHECK(!check(t, bad).valid);
	as_trace_destroy(t);
}

static void every_injected_overlap_is_caught(void)
{
	/* n buffers all live together, packed; shift one onto each other. */
	char text[4096] = "";
	size_t used = 0;
	const uint32_t n = 40;
	for (uint32_t i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "alloc b%u %u 1\n", i, 10 + i);
	struct as_trace *t = parse(text);
	uint64_t off[40], at = 0;
	for (uint32_t i = 0; i < n; i++) {
		off[i] = at;
		at += 10 + i;
	}
	CHECK(check(t, off).valid);
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t j = 0; j < n; j++) {
			if (i == j)
				continue;
			uint64_t save = off[i];
			off[i] = off[j] + (j % 5); /* inside j */
			struct as_report r = check(t, off);
			if (r.valid) {
				printf("#   moving b%u into b%u went unseen\n",
				       i, j);
				tap_cur_failed = 1;
			}
			off[i] = save;
		}
	}
	as_trace_destroy(t);
}

/*
 * Random ops with random offsets, most plans full of overlaps: the count is
 * a plain replay's, where each buffer is checked against the nearest live
 * buffers below and above it that passed, and one that overlaps is left out.
 */
static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void overlaps_are_counted_as_a_plain_replay_counts_them(void)
{
	uint64_t rng = 7;
	for (int round = 0; round < 30; round++) {
		enum { N = 120 };
		char text[N * 48];
		size_t used = 0;
		uint32_t live[N], nlive = 0, size[N];
		for (uint32_t i = 0; i < N; i++) {
			if (nlive && next(&rng) % 3 == 0) {
				uint32_t k = (uint32_t)(next(&rng) % nlive);
				used += (size_t)snprintf(text + used,
							 sizeof(text) - used,
							 "free b%u\n", live[k]);
				live[k] = live[--nlive];
			}
			size[i] = 1 + (uint32_t)(next(&rng) % 40);
			used += (size_t)snprintf(text + used, sizeof(text) - used,
						 "alloc b%u %u 1\n", i, size[i]);
			live[nlive++] = i;
		}
		struct as_trace *t = parse(text);
		uint64_t off[N];
		for (uint32_t i = 0; i < N; i++)
			off[i] = next(&rng) % (round * 40 + 200);
		/* The plain replay: the buffers that passed, live. */
		bool in[N] = {false};
		uint64_t want = 0;
		for (uint32_t e = 0; e < t->nevents; e++) {
			uint32_t i = t->events[e].arg;
			if (t->events[e].kind == AS_EV_FREE) {
				in[i] = false;
				continue;
			}
			int64_t below = -1, above = -1;
			for (uint32_t j = 0; j < N; j++) {
				if (!in[j])
					continue;
				bool before = off[j] != off[i] ? off[j] < off[i]
							       : j < i;
				if (before && (below < 0 || off[j] > off[below] ||
					       (off[j] == off[below] && j > below)))
					below = j;
				if (!before && (above < 0 || off[j] < off[above] ||
						(off[j] == off[above] && j < above)))
					above = j;
			}
			if ((below >= 0 && off[below] + size[below] > off[i]) ||
			    (above >= 0 && off[i] + size[i] > off[above]))
				want++;
			else
				in[i] = true;
		}
		struct as_report r = check(t, off);
		CHECK_EQ_U64(r.overlaps, want);
		CHECK(r.valid == (want == 0));
		as_trace_destroy(t);
	}
}

static void zero_size_and_failed_buffers_take_no_space(void)
{
	struct as_trace *t = parse("alloc a 100 1\nalloc z 0 1\nalloc f 50 1\n");
	uint64_t off[] = {0, 50, AS_NO_OFFSET};
	CHECK(check(t, off).valid);
	as_trace_destroy(t);
}

static void misalignment_is_caught(void)
{
	struct as_trace *t = parse("alloc a 100 64\n");
	uint64_t off[] = {32};
	struct as_report r = check(t, off);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.first[0].kind, AS_V_ALIGNMENT);
	as_trace_destroy(t);
}

static void capacity_of_a_space_is_enforced(void)
{
	struct as_trace *t = parse("alloc a 100 1\n");
	struct as_plan *p = as_plan_create(t);
	struct as_report r;
	p->offset[0] = 0;
	CHECK(as_plan_want_spaces(p, t, 1) == AS_OK);
	p->space_capacity[0] = 99;
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.first[0].kind, AS_V_CAPACITY);
	p->space_capacity[0] = 100;
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(r.valid);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void buffers_in_different_spaces_never_overlap(void)
{
	struct as_trace *t = parse("alloc a 100 1 pool=x\nalloc b 100 1 pool=y\n");
	uint64_t off[] = {0, 0};
	CHECK(check(t, off).valid);
	as_trace_destroy(t);
}

static void alias_inside_its_parent_is_not_an_overlap(void)
{
	struct as_trace *t = parse("alloc p 100 1\nalloc a 40 1\nalloc b 40 1\n"
				   "free p\nalloc q 10 1\n");
	struct as_plan *p = as_plan_create(t);
	struct as_report r;
	CHECK(as_plan_want_aliases(p, t) == AS_OK);
	uint64_t off[] = {0, 0, 40, 0};
	memcpy(p->offset, off, sizeof(off));
	p->alias_of[1] = 0;
	p->alias_of[2] = 0;
	/* p is freed at time 3, but its aliases live on: q may not reuse it. */
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.first[0].kind, AS_V_OVERLAP);
	p->offset[3] = 100;
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(r.valid);
	/* Two aliases that overlap each other are still an overlap. */
	p->offset[2] = 20;
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(!r.valid);
	/* An alias sticking out of its parent is caught. */
	p->offset[2] = 80;
	CHECK(as_validate(t, p, &r) == AS_OK);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.first[0].kind, AS_V_ALIAS);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

static void offsets_that_overflow_are_caught(void)
{
	struct as_trace *t = parse("alloc a 100 1\n");
	uint64_t off[] = {UINT64_MAX - 10};
	struct as_report r = check(t, off);
	CHECK(!r.valid);
	CHECK_EQ_U64(r.first[0].kind, AS_V_OVERFLOW);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(disjoint_addresses_are_valid);
	TEST_RUN(overlap_of_live_buffers_is_caught_and_named);
	TEST_RUN(reuse_after_free_is_not_an_overlap);
	TEST_RUN(every_injected_overlap_is_caught);
	TEST_RUN(overlaps_are_counted_as_a_plain_replay_counts_them);
	TEST_RUN(zero_size_and_failed_buffers_take_no_space);
	TEST_RUN(misalignment_is_caught);
	TEST_RUN(capacity_of_a_space_is_enforced);
	TEST_RUN(buffers_in_different_spaces_never_overlap);
	TEST_RUN(alias_inside_its_parent_is_not_an_overlap);
	TEST_RUN(offsets_that_overflow_are_caught);
	return tap_done();
}
