/*
 * The registry: the one place that lists strategies, finds them by spec and
 * makes one plan (options, aliases, the 2^64 rule). Running them (timing,
 * the plans kept for reuse, threads, cancel) is runner.c's. Adding a
 * strategy is one file and one line in `registry` below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "strategies/place/place.h"
#include "strategies/strategy.h"

/* Online allocators and offline planners; baselines before the planners
 * that improve on them. */
extern const struct as_strategy_impl as_strategy_recorded;
extern const struct as_strategy_impl as_strategy_greedy_size;
extern const struct as_strategy_impl as_strategy_greedy_breadth;
extern const struct as_strategy_impl as_strategy_bestfit;
extern const struct as_strategy_impl as_strategy_strip;
extern const struct as_strategy_impl as_strategy_bfc;
extern const struct as_strategy_impl as_strategy_cuda_caching;
extern const struct as_strategy_impl as_strategy_tiered;
extern const struct as_strategy_impl as_strategy_npu_list;
extern const struct as_strategy_impl as_strategy_numa_flat;
extern const struct as_strategy_impl as_strategy_numa_bundle;

/*
 * The exact baselines: each query walks the gaps of the memory in use over
 * its buffer's lifetime, so the cost grows with how fragmented that memory
 * is (see place/placer.c), not only with n. Hence the default set's size
 * limit (AS_PLACE_BASELINE_MAX) and step limit (as_strategy_step_limit).
 */
#define STR_(x) #x
#define STR(x) STR_(x)
#define BASELINE_TIME                                                        \
	"O(n log n + sum of k log k), k the placed buffers sharing a "     \
	"buffer's time; in the default set up to "                         \
	STR(AS_PLACE_BASELINE_MAX) " buffers, and left out of it once its " \
	"walk passes max(2^31, 4 n log2(n)^2) steps or falls well behind " \
	"the pace to stay within them"

/*
 * One row per strategy, with its running time in n, the buffers (planners)
 * or events (online allocators) of a trace, as `allocscope strategies`
 * prints it. The default set (replay without -s) is every row whose
 * strategy applies and takes the trace by default (by_default), with its
 * default options: each of those is O(n log n) or O(n log^2 n), or says
 * here why not and where it stops.
 */
static const struct entry {
	const struct as_strategy_impl *impl;
	const char *time;
} registry[] = {
	{&as_strategy_recorded, "O(n): copies the input's offsets"},
	{&as_strategy_greedy_size, BASELINE_TIME},
	{&as_strategy_greedy_breadth, BASELINE_TIME},
	{&as_strategy_bestfit, BASELINE_TIME},
	{&as_strategy_strip,
	 "the baselines, then O(n log n) sweeps; steps whose cost grows with "
	 "overlapping pairs run under a pair cap and only when their "
	 "estimated time fits in budget_ms; the rest of it goes to restarts "
	 "of the skyline greedy, O((n + r) log n) each for r <= the "
	 "overlapping pairs, cut at the deadline"},
	{&as_strategy_bfc,
	 "O(n log n): best fit in size-ordered trees (core/tree), one per bin"},
	{&as_strategy_cuda_caching,
	 "O(n log n): pools, segments and device gaps in trees (core/tree)"},
	{&as_strategy_tiered,
	 "O(n log n): free blocks in a tree by size (core/tree), neighbours linked"},
	{&as_strategy_npu_list,
	 "O(n log n): the list's first fit found through a tree by address "
	 "(any merge= setting)"},
	{&as_strategy_numa_flat,
	 "O(n log n + sum of k log k), k the placed blocks sharing a block's "
	 "time on its core"},
	{&as_strategy_numa_bundle,
	 "O(n log n + sum of k log k), k the placed bundles sharing a "
	 "bundle's time on its core"},
};

#define NREG (sizeof(registry) / sizeof(registry[0]))

size_t as_strategy_count(void)
{
	return NREG;
}

const struct as_strategy_info *as_strategy_at(size_t i)
{
	return i < NREG ? &registry[i].impl->info : NULL;
}

const char *as_strategy_time(size_t i)
{
	return i < NREG ? registry[i].time : NULL;
}

const struct as_strategy_impl *as_strategy_impl_find(const char *name)
{
	for (size_t i = 0; i < NREG; i++)
		if (strcmp(registry[i].impl->info.name, name) == 0)
			return registry[i].impl;
	return NULL;
}

const struct as_strategy_info *as_strategy_find(const char *name)
{
	const struct as_strategy_impl *s = as_strategy_impl_find(name);
	return s ? &s->info : NULL;
}

bool as_strategy_applies(const char *name, const struct as_trace *t)
{
	const struct as_strategy_impl *s = as_strategy_impl_find(name);
	return s && (!s->applies || s->applies(t));
}

bool as_strategy_by_default(const char *name, const struct as_trace *t)
{
	const struct as_strategy_impl *s = as_strategy_impl_find(name);
	return as_strategy_applies(name, t) &&
	       (!s->by_default || s->by_default(t));
}

/* Buffers the input places inside another follow their parent. */
static void resolve_aliases(const struct as_trace *t, struct as_plan *p)
{
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (b->alias_of == AS_NONE)
			continue;
		uint64_t po = p->offset[b->alias_of];
		p->offset[i] = po == AS_NO_OFFSET ? AS_NO_OFFSET
						  : po + b->alias_offset;
		if (p->space)
			p->space[i] = p->space[b->alias_of];
	}
}

/*
 * A plan holds at most 2^64-1 bytes, all its spaces together: the limit a
 * trace is held to at load (core/limits.c), so no figure saturates. In
 * allocation order, a buffer that ends past 2^64-1 or would take the sum of
 * the spaces' peaks past it fails, as an allocation fails when memory is
 * full; an offline planner that gives up on the trace as a whole
 * (AS_STRATEGY_PAST_2_64) fails every buffer. The same rule for every
 * strategy, here only (docs/strategies.md, "Past 2^64").
 */
static int fail_past_2_64(const struct as_trace *t, struct as_plan *p,
			  bool all)
{
	uint16_t ns = p->nspaces > t->nspaces ? p->nspaces : t->nspaces;
	uint64_t *top = calloc(ns ? ns : 1, sizeof(*top));
	if (!top)
		return AS_ENOMEM;
	uint64_t total = 0, failed = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		uint64_t off = p->offset[i], size = t->buffers[i].size;
		uint16_t sp = as_plan_space_of(p, t, i);
		if (off == AS_NO_OFFSET || sp >= ns)
			continue; /* the validator reports a bad space */
		uint64_t end = off + size;
		if (!all && off <= UINT64_MAX - size &&
		    (end <= top[sp] || end - top[sp] <= UINT64_MAX - total)) {
			if (end > top[sp]) {
				total += end - top[sp];
				top[sp] = end;
			}
			continue;
		}
		p->offset[i] = AS_NO_OFFSET;
		failed += size > 0;
	}
	/* What a strategy placed inside a failed buffer fails with it. */
	for (uint32_t i = 0; failed && i < t->nbuffers; i++) {
		uint32_t a = as_plan_alias_of(p, t, i);
		if (a < t->nbuffers && p->offset[a] == AS_NO_OFFSET)
			p->offset[i] = AS_NO_OFFSET;
	}
	free(top);
	if (!failed)
		return AS_OK;
	char note[96];
	snprintf(note, sizeof(note),
		 "%llu allocations failed: memory past 2^64-1 bytes",
		 (unsigned long long)failed);
	return as_plan_note(p, note);
}

#define SPEC_NAME_MAX 64

/* The length of a spec's name (before its first ':'), 0 when there is none
 * or it is longer than any strategy's. */
static size_t spec_name_len(const char *spec)
{
	size_t len = strcspn(spec, ":");
	return len < SPEC_NAME_MAX ? len : 0;
}

const struct as_strategy_impl *as_strategy_spec_impl(const char *spec)
{
	char name[SPEC_NAME_MAX];
	size_t len = spec_name_len(spec);
	if (len == 0)
		return NULL;
	memcpy(name, spec, len);
	name[len] = 0;
	return as_strategy_impl_find(name);
}

const struct as_strategy_info *as_strategy_find_by_spec(const char *spec)
{
	const struct as_strategy_impl *s = spec ? as_strategy_spec_impl(spec)
						: NULL;
	return s ? &s->info : NULL;
}

int as_strategy_find_spec(const char *spec, const struct as_trace *t,
			  const struct as_strategy_impl **out,
			  const char **opts, struct as_diag *diag)
{
	size_t len = strcspn(spec, ":");
	const struct as_strategy_impl *s = as_strategy_spec_impl(spec);
	const char *colon = strchr(spec, ':');
	*opts = colon ? colon + 1 : "";
	if (diag)
		snprintf(diag->file, sizeof(diag->file), "%s", t->path);
	if (spec_name_len(spec) == 0)
		return as_diag_set(diag, 0, AS_EINVAL,
				   "bad strategy spec '%s'", spec);
	if (!s)
		return as_diag_set(diag, 0, AS_ENOTFOUND,
				   "unknown strategy '%.*s' (see 'allocscope "
				   "strategies')",
				   (int)len, spec);
	if (s->applies && !s->applies(t))
		return as_diag_set(diag, 0, AS_EUNSUPPORTED,
				   "strategy '%s' cannot plan this trace (%s)",
				   s->info.name, s->info.summary);
	*out = s;
	return AS_OK;
}

/*
 * The default set's step limit: AS_STEP_LIMIT_PER n log2(n)^2 steps for n
 * buffers, and at least AS_STEP_LIMIT_MIN (13 to 40 s of walking on the
 * machines of docs/benchmarks.md).
 */
#define AS_STEP_LIMIT_PER 4
#define AS_STEP_LIMIT_MIN (1ull << 31)

uint64_t as_strategy_step_limit(const struct as_trace *t)
{
	uint64_t n = t->nbuffers, log2n = 1;
	while (log2n < 63 && (1ull << log2n) < n)
		log2n++;
	/* n < 2^32: no overflow */
	uint64_t steps = AS_STEP_LIMIT_PER * n * log2n * log2n;
	return steps > AS_STEP_LIMIT_MIN ? steps : AS_STEP_LIMIT_MIN;
}

int as_strategy_plan(const struct as_strategy_impl *s,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_runner_options *ro, struct as_run *run,
		     struct as_plan **out, struct as_diag *diag)
{
	struct as_plan *p = as_plan_create(t);
	if (!p)
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	int err;
	if (s->online) {
		err = as_online_replay(s, t, spec_opts, ro, run, p, diag);
	} else {
		struct as_opts o;
		err = as_opts_parse(&o, s->info.name, s->info.options,
				    t->cases[0].options, spec_opts, diag);
		if (err && err != AS_ENOMEM && diag) /* its line, if any */
			diag->line = t->cases[0].line;
		if (err == AS_OK)
			err = s->plan(t, &o, run, p, diag);
		if (err == AS_STRATEGY_PAST_2_64)
			err = fail_past_2_64(t, p, true);
		for (uint32_t i = 0; err == AS_OK && i < t->nbuffers; i++)
			if (t->buffers[i].size == 0 &&
			    p->offset[i] == AS_NO_OFFSET)
				p->offset[i] = 0;
	}
	if (err == AS_OK && (err = fail_past_2_64(t, p, false)))
		as_diag_set(diag, 0, err, "%s: out of memory", s->info.name);
	if (err) {
		as_plan_destroy(p);
		return err;
	}
	resolve_aliases(t, p);
	*out = p;
	return AS_OK;
}
