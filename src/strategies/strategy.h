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

#include "allocscope/allocscope.h"
#include "strategies/options.h"

struct as_online_impl {
	/* Start a case with its options (config line + spec). */
	int (*create)(const struct as_opts *o, as_emit_fn emit, void *ctx,
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

/*
 * What an offline planner returns when it cannot keep every address below
 * 2^64 (never seen by callers: as_strategy_run turns it into failed
 * allocations, docs/strategies.md "Past 2^64").
 */
#define AS_STRATEGY_PAST_2_64 (AS__ERR_FIRST - 1)

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
		    struct as_plan *p, struct as_diag *diag);
	/* Online allocators. */
	const struct as_online_impl *online;
	/*
	 * The plan depends on the trace and the spec alone (no clock, no
	 * randomness): a run of several strategies on one trace computes it
	 * once (as_trace_memo_*), plan_ms the time it took then.
	 */
	bool memo;
	/*
	 * The specs (memo ones, NULL-terminated) whose plans the plan of the
	 * bare NAME is made from, through the memo: as_strategy_run_many
	 * plans them first, side by side. NULL: none.
	 */
	const char *const *parts;
};

/*
 * Replay the trace through an online allocator; `spec_opts` are the
 * command-line options that override each case's config line.
 */
int as_online_replay(const struct as_strategy_impl *impl,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_run_hooks *hooks, struct as_plan *p,
		     struct as_diag *diag);

/*
 * The one printer of allocator dumps: a line per block from the allocator's
 * walk, "  [REGION ][start, end) size used|free[ symbol=S]".
 */
void as_dump_blocks(const struct as_online_impl *on, void *state,
		    as_emit_fn emit, void *ctx);

/*
 * What a check() found: how many problems, and the first one in words in
 * msg (len bytes, may be NULL). as_problem counts one more and words it when
 * it is the first.
 */
struct as_problems {
	uint64_t n;
	char *msg;
	size_t len;
};

void as_problem(struct as_problems *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Replay up to `time`, then walk (as_strategy_walk_at). */
int as_online_walk_at(const struct as_strategy_impl *impl,
		      const struct as_trace *t, const char *spec_opts,
		      uint64_t time, as_block_fn visit, void *ctx,
		      struct as_diag *diag);

/* The registry (registry.c). */
const struct as_strategy_impl *as_strategy_impl_find(const char *name);
/*
 * How long the run on this thread has waited so far for plans other
 * threads were making (as_strategy_run_many): not its own work, so its
 * plan_ms leaves it out, and strip's budget does too.
 */
double as_strategy_waited_ms(void);
/*
 * The steps the run on this thread has left (as_run_hooks.step_limit), for
 * the placers of the exact baselines (as_placer_limit); NULL: no limit.
 */
uint64_t *as_strategy_steps_left(void);
/*
 * Whether the run on this thread, a part of a spec (bestfit's orders run
 * side by side by as_strategy_run_many), was called off because another
 * part of the same spec stopped at its step limit: the spec is left out
 * whatever this part does, so a limited walk stops as if at its own limit.
 */
bool as_strategy_called_off(void);
/*
 * The default set's step limit (as_strategy_step_limit): AS_STEP_LIMIT_PER
 * n log2(n)^2 steps for n buffers, and at least AS_STEP_LIMIT_MIN (13 to
 * 40 s of walking on the machines of docs/benchmarks.md).
 */
#define AS_STEP_LIMIT_PER 4
#define AS_STEP_LIMIT_MIN (1ull << 31)
/*
 * A processor for the run on this thread besides its own, while one would
 * otherwise sit idle: fewer runs of its as_strategy_run_many are under way
 * (and claimed) than its jobs, or than the processors when jobs is 0. So a
 * claim never slows another run down. False outside as_strategy_run_many.
 * Each true is given back, on the same thread, with
 * as_strategy_release_processor.
 */
bool as_strategy_claim_processor(void);
void as_strategy_release_processor(void);
/* as_strategy_run_many's jobs 0: how many strategies of t run at once. */
unsigned as_strategy_jobs_default(const struct as_trace *t);

#endif
