/*
 * Private: the strategy interface. A strategy is one file that defines one
 * `const struct as_strategy_impl` and is listed once in registry.c.
 *
 * Two shapes of the same idea, both ending in a plan:
 *  - offline planners set `plan` and see every buffer at once;
 *  - online allocators set `online` and see the events in order through the
 *    driver in online.c, which restarts them at every case (text `config`
 *    line), skips alias buffers and records failures.
 */
#ifndef AS_STRATEGY_H
#define AS_STRATEGY_H

#include "allocscope/build.h"
#include "strategies/options.h"
#include "strategies/place/budget.h"

/*
 * The buffers of each space, for an online allocator that serves one:
 * bufs[first[s] .. first[s + 1]) are space s's buffers in index order, and
 * rank[i] is buffer i's place among its space's. Per-buffer state sized by
 * the space's buffers, not the trace's, keeps 20,000 spaces as cheap as one
 * (online.c makes it once per replay).
 */
struct as_space_bufs {
	const uint32_t *first, *bufs, *rank;
};

/*
 * One strategy run: the runner (runner.c) makes it and passes it to plan()
 * and online create(); nothing is looked up elsewhere. It carries the
 * caller's text sink, the budget the run's walks spend, and its way to the
 * plans of other specs it starts from (as_run_reuse).
 */
struct as_run {
	struct as_runner *runner;
	/* Set by the online driver for the allocators it creates; NULL
	 * elsewhere (per-buffer state then spans the trace). */
	const struct as_space_bufs *space_bufs;
	as_emit_fn emit;          /* allocator text; NULL: none */
	void *ctx;
	struct as_budget budget;
	/* Filled by as_run_reuse, read by the runner to time the run: time
	 * spent waiting for plans other threads were making, making plans
	 * here, and those plans' own plan_ms. */
	double waited_ms, made_ms, parts_ms;
};

/*
 * The plan of `spec` on the run's trace, for a strategy that starts from
 * it (strip from the baselines, bestfit from its two orders): made once per
 * runner and kept (struct as_strategy_impl.memo), waited for when another
 * thread is making it, run under this run's step limit and stop flags.
 * *out is the caller's copy. AS_ELIMIT when it stopped at its limit.
 */
int as_run_reuse(struct as_run *run, const char *spec, struct as_plan **out,
		 struct as_diag *diag);
/*
 * The same, but a plan this run makes itself is called off when the
 * monotonic clock (as_now_ms) passes `deadline` (0: never): AS_ELIMIT,
 * and nothing is kept, so a later run makes it whole. A plan another
 * thread makes or made is waited for or copied as with as_run_reuse.
 */
int as_run_reuse_until(struct as_run *run, const char *spec,
		       double deadline, struct as_plan **out,
		       struct as_diag *diag);
/* Whether the runner keeps spec's plan or another run is making it (a
 * reuse then costs this run no work of its own). */
bool as_run_kept(struct as_run *run, const char *spec);

struct as_online_impl {
	/* Start a case with its options (config line + spec); run gives the
	 * text sink (run->emit, may be NULL). */
	int (*create)(const struct as_opts *o, const struct as_run *run,
		      void **state, struct as_diag *diag);
	/*
	 * Optional: called once after create with the trace and the space
	 * this state serves, before the case's first event (a recording's
	 * state at its start, settings the input carries, ...).
	 */
	int (*start)(void *state, const struct as_trace *t, uint16_t space,
		     uint32_t case_index, struct as_diag *diag);
	/*
	 * Place buffer `buf`: 0 with *offset and *chunk set; 1 when the
	 * allocator cannot satisfy it (a failed allocation, replay goes on);
	 * a negative code on an internal error.
	 */
	int (*alloc)(void *state, const struct as_trace *t, uint32_t buf,
		     uint64_t *offset, uint64_t *chunk);
	/* Release a buffer this allocator placed. */
	void (*free)(void *state, const struct as_trace *t, uint32_t buf);
	/* A query line of the trace (dump, stats, ...); NULL: ignored. */
	void (*query)(void *state, enum as_query q);
	/* Add this case's statistics to the plan (later cases overwrite). */
	void (*stats)(void *state, struct as_plan *p);
	/*
	 * Check every invariant; returns how many are broken and describes
	 * the first in msg. NULL: nothing to check.
	 */
	uint64_t (*check)(void *state, char *msg, size_t len);
	/*
	 * Visit every block in address order (space is passed through);
	 * returns false when `visit` stopped it. NULL: nothing to walk.
	 */
	bool (*walk)(void *state, uint16_t space, as_block_fn visit,
		     void *ctx);
	void (*destroy)(void *state);
};

struct as_strategy_impl {
	struct as_strategy_info info;
	/* Whether the trace suits this strategy; NULL means always. */
	bool (*applies)(const struct as_trace *t);
	/*
	 * Whether replay without -s runs it on this trace (it applies too);
	 * NULL means whenever it applies. A strategy named with -s runs on
	 * any trace it applies to.
	 */
	bool (*by_default)(const struct as_trace *t);
	/* Offline planners: fill p->offset (and optional arrays). */
	int (*plan)(const struct as_trace *t, const struct as_opts *o,
		    struct as_run *run, struct as_plan *p,
		    struct as_diag *diag);
	/* Online allocators. */
	const struct as_online_impl *online;
	/*
	 * The plan depends on the trace and the spec alone (no clock, no
	 * randomness): a runner makes it once and keeps it for later runs of
	 * the same spec and for as_run_reuse, plan_ms the time it took then.
	 */
	bool memo;
	/*
	 * The specs (memo ones, NULL-terminated) whose plans the plan of the
	 * bare NAME is made from (as_run_reuse): as_runner_run_many plans
	 * them first, side by side, and the NAME's plan_ms is theirs plus its
	 * own. NULL: none.
	 */
	const char *const *parts;
	/* Its plan starts from other specs' plans (strip from the exact
	 * baselines'): as_runner_run_many runs it after them. */
	bool reuses;
};

/*
 * Replay the trace through an online allocator; `spec_opts` are the
 * command-line options that override each case's config line.
 */
int as_online_replay(const struct as_strategy_impl *impl,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_runner_options *o, struct as_run *run,
		     struct as_plan *p, struct as_diag *diag);

/*
 * The one printer of allocator dumps: a line per block from the allocator's
 * walk, "  [REGION ][start, end) size used|free[ symbol=S]".
 */
void as_dump_blocks(const struct as_online_impl *on, void *state,
		    as_emit_fn emit, void *ctx);

/* An `applies` for the allocators that model one memory (tiered, npu-list):
 * the trace has one address space. */
bool as_one_space(const struct as_trace *t);

/* x rounded up to a multiple of a, a power of two (the online allocators'
 * granules and alignments). */
static inline uint64_t as_round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * Replay up to `time` under `run` (its budget's cancel flag stops it:
 * AS_ECANCELED), then walk (as_strategy_walk_at).
 */
int as_online_walk_at(const struct as_strategy_impl *impl,
		      const struct as_trace *t, const char *spec_opts,
		      struct as_run *run, uint64_t time, as_block_fn visit,
		      void *ctx, struct as_diag *diag);

/* The registry (registry.c). */
const struct as_strategy_impl *as_strategy_impl_find(const char *name);
/* The strategy SPEC ("NAME[:k=v,...]") names, NULL for none. */
const struct as_strategy_impl *as_strategy_spec_impl(const char *spec);
/*
 * The strategy SPEC ("NAME[:k=v,...]") names, checked against the trace;
 * *opts points at the options part of SPEC. Fails with diag filled.
 */
int as_strategy_find_spec(const char *spec, const struct as_trace *t,
			  const struct as_strategy_impl **out,
			  const char **opts, struct as_diag *diag);
/*
 * The plan of impl with the spec's options `spec_opts`, made under `run`:
 * aliases resolved, what passes 2^64 failed (docs/strategies.md), zero-size
 * buffers at 0. Untimed, unkept: the runner does both.
 */
int as_strategy_plan(const struct as_strategy_impl *impl,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_runner_options *o, struct as_run *run,
		     struct as_plan **out, struct as_diag *diag);

/* The runner (runner.c): how many strategies of t run at once when the
 * caller's jobs is 0. */
unsigned as_runner_jobs_default(const struct as_trace *t);

/*
 * as_strategy_walk_at and as_strategy_blocks_at on a runner's trace, under
 * a run of the runner (its cancel flag, its hook): as_runner_cancel stops
 * them.
 */
int as_runner_walk_at(struct as_runner *r, const char *spec, uint64_t time,
		      as_block_fn visit, void *ctx, struct as_diag *diag);
int as_runner_blocks_at(struct as_runner *r, const char *spec, uint64_t time,
			uint16_t space, struct as_block **blocks, size_t *n,
			struct as_diag *diag);

/*
 * Tests only, never reached from the command line: the runner's cancel
 * flag is set at the (checks + 1)th look any of its runs takes at it
 * (struct as_cancel_hook), so a test cancels a run at the same place on
 * every machine. Call it before the runs.
 */
void as_runner_cancel_after(struct as_runner *r, uint64_t checks);

#endif
