/*
 * Private: what the walks of one strategy run may spend, and what stops them.
 *
 * The runner (strategies/runner.c) fills one as_budget per run and passes it
 * down: planners hand it to their placers (as_placer_budget) and check it in
 * their own loops. Nothing here knows who made it, so the placement code is
 * built and tested without the runner.
 */
#ifndef AS_BUDGET_H
#define AS_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "allocscope/build.h"
#include "core/internal.h"

/*
 * What an offline planner returns when it cannot keep every address below
 * 2^64 (never seen by callers: as_strategy_plan turns it into failed
 * allocations, docs/strategies.md "Past 2^64").
 */
#define AS_STRATEGY_PAST_2_64 (AS__ERR_FIRST - 1)

/*
 * Processors a run may lend to a walk for work beside it (the placer's
 * puts, place/pipe.c): `busy` of `max` are at work. A claim succeeds only
 * while one would otherwise sit idle, so it never slows another run down.
 */
struct as_procs {
	atomic_uint busy;
	unsigned max;
};

/* One processor more for the caller, if one is idle; NULL: none. Each true
 * is given back with as_procs_release. */
static inline bool as_procs_claim(struct as_procs *p)
{
	if (!p)
		return false;
	unsigned now = atomic_load(&p->busy);
	while (now < p->max)
		if (atomic_compare_exchange_weak(&p->busy, &now, now + 1))
			return true;
	return false;
}

static inline void as_procs_release(struct as_procs *p)
{
	if (p)
		atomic_fetch_sub(&p->busy, 1);
}

/*
 * Tests only (the runner's as_runner_cancel_after): the cancel flag is set
 * at the (after + 1)th look at it, so a run stops at the same place on
 * every machine, whatever the clock says. Shared by the runs of a runner.
 */
struct as_cancel_hook {
	atomic_uint_fast64_t seen;
	uint64_t after;
	atomic_bool *flag;
};

struct as_budget {
	/*
	 * The steps left when `limited`: a step is one look at a set or run
	 * of placed rectangles (see as_placer_find), so a limit stops the same
	 * walk on every machine. Shared by the placers of one run, on one
	 * thread.
	 */
	uint64_t left;
	bool limited;
	/* Set from another thread: stop at the next step, AS_ECANCELED. */
	const atomic_bool *cancel;
	/* Tests only: counts the looks at `cancel`; NULL elsewhere. */
	struct as_cancel_hook *hook;
	/* Set when the plan this run is a part of is left out anyway (a
	 * sibling part stopped at its limit): stop as at the limit. */
	const atomic_bool *off;
	/* Processors the walk may borrow; NULL: none. */
	struct as_procs *spare;
	/* When a sweep (as_place_sweep) gives up, AS_ELIMIT: a time on the
	 * monotonic clock (as_now_ms), 0: never. Nothing else reads it. */
	double deadline;
};

/* Every look at the cancel flag goes through here (the hook counts them). */
static inline bool as_budget_canceled(const struct as_budget *b)
{
	if (!b)
		return false;
	if (b->hook && atomic_fetch_add_explicit(&b->hook->seen, 1,
						 memory_order_relaxed) >=
			       b->hook->after)
		atomic_store(b->hook->flag, true);
	return b->cancel &&
	       atomic_load_explicit(b->cancel, memory_order_relaxed);
}

/*
 * Whether a search timed by the clock must stop: b (may be NULL) canceled,
 * or the monotonic clock (as_now_ms) past `deadline`. For the loops that
 * stop at a deadline rather than at a step limit (strip's).
 */
static inline bool as_budget_past(const struct as_budget *b, double deadline)
{
	return as_budget_canceled(b) || as_now_ms() > deadline;
}

/*
 * Whether a walk under b must stop now: canceled, called off, or no steps
 * left. as_budget_why then says which error it stops with.
 */
static inline bool as_budget_spent(const struct as_budget *b)
{
	if (!b)
		return false;
	return as_budget_canceled(b) ||
	       (b->off && atomic_load_explicit(b->off, memory_order_relaxed)) ||
	       (b->limited && b->left == 0);
}

static inline int as_budget_why(const struct as_budget *b)
{
	return as_budget_canceled(b) ? AS_ECANCELED : AS_ELIMIT;
}

/* Take steps from a limited budget, down to 0 at most. */
static inline void as_steps_take(struct as_budget *b, uint64_t steps)
{
	if (b && b->limited)
		b->left -= steps < b->left ? steps : b->left;
}

/*
 * Whether a limited walk of n buffers that started with `start` steps left
 * and has placed `done` of them should stop before its steps run out: it
 * has spent s >= start / 4 of them, and at its pace so far all n would
 * take more than start (1 + start / 4s): twice them once it has spent a
 * quarter, one and a half once it has spent half, 1.25 at the end. A
 * query's steps grow with the buffers placed before it, so a walk that far
 * behind is on its way past its limit, and stopping it there saves the
 * rest of a walk whose plan is left out anyway; a walk that ends within
 * its limit has, at its end, exactly the pace of its steps. The margins:
 * on the real traces of docs/benchmarks.md ("A walk behind its pace"),
 * every walk that ends within its limit stays below three quarters of
 * this pace once it has spent a quarter.
 */
static inline bool as_steps_behind(const struct as_budget *b, uint64_t start,
				   uint64_t done, uint64_t n)
{
	if (!b || !b->limited || b->left > start)
		return false;
	uint64_t spent = start - b->left;
	if (spent == 0 || spent < start / 4)
		return false;
	double s = (double)spent, l = (double)start;
	return s * (double)n > (l + l * l / (4.0 * s)) * (double)done;
}

#endif
