/*
 * The registry: the one place that lists strategies, and the one place that
 * runs them (options, timing, aliases, the plans kept for reuse), one at a
 * time or side by side on threads. Adding a strategy is one file and
 * one line in `registry` below.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/trace_private.h"
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
	"walk passes max(2^31, 4 n log2(n)^2) steps (or, a quarter of them " \
	"spent, is on pace for twice them, half spent for 1.5 times)"

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
	 "estimated time fits in budget_ms"},
	{&as_strategy_bfc,
	 "O(n log n): best fit in size-ordered treaps, one per bin"},
	{&as_strategy_cuda_caching,
	 "O(n log n): pools, segments and device gaps in treaps"},
	{&as_strategy_tiered,
	 "O(n log n): free blocks in a treap by size, neighbours linked"},
	{&as_strategy_npu_list,
	 "O(n log n): the list's first fit found through a treap by address "
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

/* The strategy SPEC ("NAME[:k=v,...]") names, NULL for none; name gets
 * NAME, "" when it is empty or too long. */
static const struct as_strategy_impl *spec_impl(const char *spec,
						char name[SPEC_NAME_MAX])
{
	size_t len = strcspn(spec, ":");
	name[0] = 0;
	if (len == 0 || len >= SPEC_NAME_MAX)
		return NULL;
	memcpy(name, spec, len);
	name[len] = 0;
	return as_strategy_impl_find(name);
}

/*
 * The strategy SPEC names ("NAME[:k=v,...]"), checked against the trace;
 * *opts points at the options part of SPEC.
 */
static int find_spec(const char *spec, const struct as_trace *t,
		     const struct as_strategy_impl **out, const char **opts,
		     struct as_diag *diag)
{
	char name[SPEC_NAME_MAX];
	const struct as_strategy_impl *s = spec_impl(spec, name);
	const char *colon = strchr(spec, ':');
	*opts = colon ? colon + 1 : "";
	if (diag)
		snprintf(diag->file, sizeof(diag->file), "%s", t->path);
	if (!name[0])
		return as_diag_set(diag, 0, AS_EINVAL,
				   "bad strategy spec '%s'", spec);
	if (!s)
		return as_diag_set(diag, 0, AS_ENOTFOUND,
				   "unknown strategy '%s' (see 'allocscope "
				   "strategies')",
				   name);
	if (s->applies && !s->applies(t))
		return as_diag_set(diag, 0, AS_EUNSUPPORTED,
				   "strategy '%s' cannot plan this trace (%s)",
				   name, s->info.summary);
	*out = s;
	return AS_OK;
}

int as_strategy_walk_at(const char *spec, const struct as_trace *t,
			uint64_t time, as_block_fn visit, void *ctx,
			struct as_diag *diag)
{
	const struct as_strategy_impl *s = NULL;
	const char *spec_opts;
	int err = find_spec(spec, t, &s, &spec_opts, diag);
	if (err)
		return err;
	return as_online_walk_at(s, t, spec_opts, time, visit, ctx, diag);
}

/*
 * Time this thread spent waiting for a plan another thread was making (see
 * as_trace_memo_take): a run's plan_ms leaves it out, so strip started
 * beside the baselines shows its own time, as it does after them.
 */
static _Thread_local double waited_ms;

double as_strategy_waited_ms(void)
{
	return waited_ms;
}

/*
 * The step limit of the run on this thread (as_run_hooks.step_limit, 0:
 * none), which the runs it starts without hooks keep (strip's incumbents,
 * bestfit's orders), and the steps the innermost run has left.
 */
static _Thread_local uint64_t step_limit;
static _Thread_local uint64_t *steps_left;

uint64_t *as_strategy_steps_left(void)
{
	return steps_left;
}

/* The processors at work of the as_strategy_run_many this thread takes
 * runs of, and how many it may use (struct many). */
static _Thread_local atomic_uint *busy;
static _Thread_local unsigned procs;

bool as_strategy_claim_processor(void)
{
	if (!busy)
		return false;
	unsigned now = atomic_load(busy);
	while (now < procs)
		if (atomic_compare_exchange_weak(busy, &now, now + 1))
			return true;
	return false;
}

void as_strategy_release_processor(void)
{
	atomic_fetch_sub(busy, 1);
}

/* Set while this thread runs a part that may be called off (many_worker). */
static _Thread_local const atomic_bool *called_off;

bool as_strategy_called_off(void)
{
	return called_off &&
	       atomic_load_explicit(called_off, memory_order_relaxed);
}

uint64_t as_strategy_step_limit(const struct as_trace *t)
{
	uint64_t n = t->nbuffers, log2n = 1;
	while (log2n < 63 && (1ull << log2n) < n)
		log2n++;
	/* n < 2^32: no overflow */
	uint64_t steps = AS_STEP_LIMIT_PER * n * log2n * log2n;
	return steps > AS_STEP_LIMIT_MIN ? steps : AS_STEP_LIMIT_MIN;
}

/*
 * How many parts share the step limit of the strategy spec is a part of
 * (bestfit's two orders, so bestfit takes no more steps than another): 1
 * for a spec that is no part.
 */
static uint64_t parts_sharing(const struct as_strategy_impl *s,
			      const char *spec)
{
	uint64_t n = 0;
	bool part = false;
	for (const char *const *q = s->parts; q && *q; q++, n++)
		part |= strcmp(*q, spec) == 0;
	return part ? n : 1;
}

static int stopped(struct as_diag *diag, const char *name)
{
	return as_diag_set(diag, 0, AS_ELIMIT,
			   "%s stopped at its step limit of %llu steps, or "
			   "on pace to pass it (without a limit it runs to "
			   "the end)",
			   name, (unsigned long long)step_limit);
}

/* as_strategy_run past the memo: the plan made, aliases resolved. */
static int run(const struct as_strategy_impl *s, const char *spec_opts,
	       const struct as_trace *t, const struct as_run_hooks *hooks,
	       struct as_plan **out, struct as_diag *diag)
{
	const char *name = s->info.name;
	struct as_plan *p = as_plan_create(t);
	if (!p)
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	double t0 = as_now_ms(), outer_wait = waited_ms;
	uint64_t left = step_limit, *outer_left = steps_left;
	int err;
	waited_ms = 0;
	steps_left = step_limit ? &left : NULL;
	if (s->online) {
		err = as_online_replay(s, t, spec_opts, hooks, p, diag);
	} else {
		struct as_opts o;
		err = as_opts_parse(&o, name, s->info.options,
				    t->cases[0].options, spec_opts, diag);
		if (err && err != AS_ENOMEM && diag) /* its line, if any */
			diag->line = t->cases[0].line;
		if (err == AS_OK)
			err = s->plan(t, &o, p, diag);
		if (err == AS_STRATEGY_PAST_2_64)
			err = fail_past_2_64(t, p, true);
		for (uint32_t i = 0; err == AS_OK && i < t->nbuffers; i++)
			if (t->buffers[i].size == 0 &&
			    p->offset[i] == AS_NO_OFFSET)
				p->offset[i] = 0;
	}
	/* (+=: a plan made of others' plans counts their time too, see
	 * bestfit.c) */
	p->plan_ms += as_now_ms() - t0 - waited_ms;
	waited_ms += outer_wait;
	steps_left = outer_left;
	if (err) {
		if (err == AS_ENOMEM)
			as_diag_set(diag, 0, err, "%s: out of memory", name);
		else if (err == AS_ELIMIT)
			stopped(diag, name);
		as_plan_destroy(p);
		return err;
	}
	if ((err = fail_past_2_64(t, p, false))) {
		as_plan_destroy(p);
		return as_diag_set(diag, 0, err, "%s: out of memory", name);
	}
	resolve_aliases(t, p);
	*out = p;
	return AS_OK;
}

int as_strategy_run(const char *spec, const struct as_trace *t,
		    const struct as_run_hooks *hooks, struct as_plan **out,
		    struct as_diag *diag)
{
	const struct as_strategy_impl *s = NULL;
	const char *spec_opts;
	int err = find_spec(spec, t, &s, &spec_opts, diag);
	if (err)
		return err;
	uint64_t outer_limit = step_limit;
	if (hooks)
		step_limit = hooks->step_limit;
	uint64_t part = step_limit / parts_sharing(s, spec);
	if (step_limit)
		step_limit = part ? part : 1; /* a limit stays one */
	double t0 = as_now_ms();
	bool stop = false;
	const struct as_plan *kept = NULL;
	if (s->memo) {
		/* Waiting for another thread's plan, its processor is not at
		 * work. */
		if (busy)
			atomic_fetch_sub(busy, 1);
		kept = as_trace_memo_take(t, spec, step_limit, &stop);
		if (busy)
			atomic_fetch_add(busy, 1);
	}
	waited_ms += as_now_ms() - t0;
	if (stop) {
		err = stopped(diag, s->info.name);
	} else if (kept) {
		if (!(*out = as_plan_copy(kept)))
			err = as_diag_set(diag, 0, AS_ENOMEM,
					  "%s: out of memory", s->info.name);
	} else {
		err = run(s, spec_opts, t, hooks, out, diag);
		if (s->memo && err)
			as_trace_memo_drop(t, spec, err, step_limit);
		else if (s->memo)
			as_trace_memo_put(t, spec, *out);
	}
	step_limit = outer_limit;
	return err;
}

/* Runs shared by the threads of as_strategy_run_many. */
struct many {
	const struct as_trace *t;
	const char **specs;     /* the caller's, then the parts they need */
	size_t *order;          /* the run order: indices into specs */
	size_t n, nspecs;       /* order[] entries; the caller's specs */
	const struct as_run_hooks *hooks;
	const struct as_many_hooks *mh;
	struct as_plan **out;
	struct as_diag *diags;
	int *errs;
	size_t *owner;          /* a part's: the caller's spec it is for */
	uint8_t *asked;         /* per caller's spec: 0, or mh->start said
				 * 1 yes, 2 no (under lock) */
	atomic_bool *off;       /* per caller's spec: a part of it stopped at
				 * its step limit, so the others are called
				 * off (as_strategy_called_off) */
	pthread_mutex_t lock;
	atomic_size_t next;     /* the next slot of order[] to take */
	atomic_bool stop;       /* mh->start said no: start nothing more */
	/* Processors at work: threads with runs to make, less those
	 * waiting for another's plan, and those claimed
	 * (as_strategy_claim_processor); at most procs. */
	atomic_uint busy;
	unsigned procs;
};

/* Whether the caller's spec i (or a part of it) may start: mh->start,
 * asked once per spec. */
static bool may_start(struct many *m, size_t i)
{
	const struct as_many_hooks *mh = m->mh;
	if (!mh || !mh->start)
		return true;
	pthread_mutex_lock(&m->lock);
	if (!m->asked[i])
		m->asked[i] = mh->start(mh->ctx, i) ? 1 : 2;
	bool go = m->asked[i] == 1;
	pthread_mutex_unlock(&m->lock);
	return go;
}

static bool named_by_caller(const struct many *m, const char *spec)
{
	for (size_t i = 0; i < m->nspecs; i++)
		if (strcmp(m->specs[i], spec) == 0)
			return true;
	return false;
}

/*
 * Take the runs of m->order in turn. When a part stops at its step limit,
 * its spec is left out, so the spec's other parts still walking stop at
 * their next find: kept as stopped in the trace's memo, they end the
 * spec's own run at once too.
 */
static void *many_worker(void *arg)
{
	struct many *m = arg;
	const struct as_many_hooks *mh = m->mh;
	size_t k;
	/* At work from here until no run is left to start. */
	atomic_fetch_add(&m->busy, 1);
	busy = &m->busy;
	procs = m->procs;
	while (!atomic_load(&m->stop) &&
	       (k = atomic_fetch_add(&m->next, 1)) < m->n) {
		size_t i = m->order[k];
		bool mine = i < m->nspecs; /* the caller's, not a part */
		if (!may_start(m, mine ? i : m->owner[i])) {
			atomic_store(&m->stop, true);
			break;
		}
		/* A part the caller also named itself is never called off:
		 * its plan is asked for, not only its spec's. */
		if (!mine && !named_by_caller(m, m->specs[i]))
			called_off = &m->off[m->owner[i]];
		m->errs[i] = as_strategy_run(m->specs[i], m->t, m->hooks,
					     &m->out[i], &m->diags[i]);
		called_off = NULL;
		if (!mine && m->errs[i] == AS_ELIMIT)
			atomic_store(&m->off[m->owner[i]], true);
		if (mine && mh && mh->done) {
			mh->done(mh->ctx, i, m->errs[i], m->out[i],
				 &m->diags[i]);
			m->out[i] = NULL; /* done's now */
		}
	}
	busy = NULL;
	atomic_fetch_sub(&m->busy, 1);
	return NULL;
}

/*
 * The run order into m->order: the caller's, except that a spec made of
 * parts (see struct as_strategy_impl) gives its place to its parts when
 * they can run side by side (`parts`; appended to m->specs, room for
 * MANY_PARTS more) and itself comes after the rest, as it waits for them,
 * and that the specs that reuse the others' plans (strip) come last. So no
 * processor sits waiting while a run is left to start, and the caller's
 * order holds otherwise: replay lists the exact baselines first, the
 * longest runs on a large trace; the viewer the online allocators, whose
 * plans show within a second.
 */
#define MANY_PARTS 16

/* The parts of spec i, if it is a bare NAME made of parts, into the order. */
static void add_parts(struct many *m, size_t i, size_t *total)
{
	char name[SPEC_NAME_MAX];
	const struct as_strategy_impl *s = spec_impl(m->specs[i], name);
	const char *const *q = NULL;
	if (s && s->parts && !strchr(m->specs[i], ':'))
		q = s->parts;
	for (; q && *q && *total < m->nspecs + MANY_PARTS; q++) {
		size_t j = m->nspecs;
		while (j < *total && strcmp(m->specs[j], *q) != 0)
			j++;
		if (j == *total) {
			m->specs[*total] = *q;
			m->owner[*total] = i;
			m->order[m->n++] = (*total)++;
		}
	}
}

/* A spec's pass in run_order: 0 in the caller's order, 1 after those (a
 * spec made of parts), 2 last (one that reuses the others' plans). */
static int run_pass(const struct as_strategy_impl *s)
{
	if (s && s->info.reuses)
		return 2;
	return s && s->parts ? 1 : 0;
}

static void run_order(struct many *m, bool parts)
{
	char name[SPEC_NAME_MAX];
	size_t total = m->nspecs;
	m->n = 0;
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < m->nspecs; i++) {
			int when = run_pass(spec_impl(m->specs[i], name));
			if (pass == 0 && when == 1 && parts)
				add_parts(m, i, &total);
			if (when == pass)
				m->order[m->n++] = i;
		}
}

/*
 * One per processor, but one at a time above the size where the exact
 * baselines leave the default set: there, memory is what limits a run (the
 * default set of 10^7 buffers side by side took 240 bytes a buffer, one at
 * a time 175).
 */
unsigned as_strategy_jobs_default(const struct as_trace *t)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1 || t->nbuffers > AS_PLACE_BASELINE_MAX)
		return 1;
	return cpus > AS_STRATEGY_JOBS_MAX ? AS_STRATEGY_JOBS_MAX
					   : (unsigned)cpus;
}

int as_strategy_run_many(const struct as_trace *t, const char *const *specs,
			 size_t n, const struct as_run_hooks *hooks,
			 const struct as_many_hooks *mh, unsigned jobs,
			 struct as_plan **out, struct as_diag *diags)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (n == 0)
		return AS_OK;
	size_t cap = n + MANY_PARTS;
	struct many m = {.t = t, .nspecs = n, .hooks = hooks, .mh = mh};
	m.specs = malloc(cap * sizeof(*m.specs));
	m.order = malloc(cap * sizeof(*m.order));
	m.out = calloc(cap, sizeof(*m.out));
	m.diags = calloc(cap, sizeof(*m.diags));
	m.errs = calloc(cap, sizeof(*m.errs));
	m.owner = calloc(cap, sizeof(*m.owner));
	m.asked = calloc(n, 1);
	m.off = calloc(n, sizeof(*m.off));
	pthread_t *th = NULL;
	int err = AS_OK;
	bool locked = false;
	if (!m.specs || !m.order || !m.out || !m.diags || !m.errs ||
	    !m.owner || !m.asked || !m.off ||
	    !(locked = pthread_mutex_init(&m.lock, NULL) == 0)) {
		err = as_diag_set(&diags[0], 0, AS_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(m.specs, specs, n * sizeof(*specs));
	/* Processors to claim: the caller's jobs, else every one (a run
	 * claims one only while it would sit idle). */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	m.procs = jobs ? jobs : cpus > 1 ? (unsigned)cpus : 1;
	if (jobs == 0)
		jobs = as_strategy_jobs_default(t);
	if (hooks && hooks->emit)
		jobs = 1; /* one allocator's text at a time, in order */
	/* Parts only pay side by side: alone, the spec plans them itself. */
	run_order(&m, jobs > 1);
	if (jobs > m.n)
		jobs = (unsigned)m.n;
	if (jobs > 1)
		th = malloc((jobs - 1) * sizeof(*th));
	unsigned started = 0;
	while (th && started < jobs - 1 &&
	       pthread_create(&th[started], NULL, many_worker, &m) == 0)
		started++;
	many_worker(&m); /* this thread works too, and alone without threads */
	for (unsigned j = 0; j < started; j++)
		pthread_join(th[j], NULL);
	/* A part that failed fails the spec it is part of, which says so. */
	for (size_t i = 0; i < n; i++) {
		out[i] = m.out[i];
		diags[i] = m.diags[i];
		if (m.errs[i] != AS_OK && err == AS_OK)
			err = m.errs[i];
	}
	for (size_t i = n; i < m.n; i++)
		as_plan_destroy(m.out[i]);
out:
	if (locked)
		pthread_mutex_destroy(&m.lock);
	free(th);
	free(m.owner);
	free(m.asked);
	free(m.off);
	free(m.specs);
	free(m.order);
	free(m.out);
	free(m.diags);
	free(m.errs);
	return err;
}
