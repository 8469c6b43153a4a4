/*
 * The runner: the one place that runs strategies. It owns what the runs of
 * one trace share: the plans kept for reuse (strip starts from greedy-size's
 * plan, made once), the processors its threads may lend, and the cancel
 * flag. Each run gets a struct as_run (strategy.h) with its budget and a
 * way back to the kept plans (as_run_reuse); nothing is looked up.
 *
 * Walks (as_strategy_walk_at, as_strategy_blocks_at) are runs too: a run
 * of a runner, so its cancel flag stops them.
 *
 * Control flow of as_runner_run_many: threads take the specs in turn
 * (many_worker), each run_spec finds the strategy (registry.c), takes a kept
 * plan or makes it (as_strategy_plan), times it and keeps it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "strategies/place/place.h"
#include "strategies/strategy.h"

/*
 * A plan kept for a later run of the same spec. plan NULL: being made by
 * some thread (others wait on `done`), or, with stopped, a run that stopped
 * at its step limit: a later run stops at once instead of walking to the
 * same step again (the limit is the runner's, the same every time).
 */
struct kept {
	char *spec;
	struct as_plan *plan;
	bool stopped;
};

struct as_runner {
	const struct as_trace *t;
	struct as_runner_options o;
	/* The flag its runs look at: the caller's (o.cancel), else own. */
	atomic_bool *cancel;
	atomic_bool own;
	/* Tests only (as_runner_cancel_after); hook.flag NULL: none. */
	struct as_cancel_hook hook;
	/* Processors at work in as_runner_run_many: threads with runs to
	 * make, less those waiting for another's plan, and those lent to a
	 * walk (as_procs_claim); max is 0 outside it, so nothing is lent. */
	struct as_procs procs;
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct kept *kept;
	uint32_t nkept;
};

/* The most threads -j asks for. */
#define JOBS_MAX 64

int as_runner_create(const struct as_trace *t,
		     const struct as_runner_options *o, struct as_runner **out)
{
	struct as_runner *r = calloc(1, sizeof(*r));
	if (!r)
		return AS_ENOMEM;
	r->t = t;
	if (o)
		r->o = *o;
	if (r->o.jobs > JOBS_MAX)
		r->o.jobs = JOBS_MAX;
	r->cancel = r->o.cancel ? r->o.cancel : &r->own;
	if (pthread_mutex_init(&r->lock, NULL) != 0) {
		free(r);
		return AS_ENOMEM;
	}
	if (pthread_cond_init(&r->done, NULL) != 0) {
		pthread_mutex_destroy(&r->lock);
		free(r);
		return AS_ENOMEM;
	}
	*out = r;
	return AS_OK;
}

void as_runner_destroy(struct as_runner *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->nkept; i++) {
		free(r->kept[i].spec);
		as_plan_destroy(r->kept[i].plan);
	}
	free(r->kept);
	pthread_cond_destroy(&r->done);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void as_runner_cancel(struct as_runner *r)
{
	if (r)
		atomic_store(r->cancel, true);
}

void as_runner_cancel_after(struct as_runner *r, uint64_t checks)
{
	r->hook.after = checks;
	r->hook.flag = r->cancel;
}

/* A fresh run of r: its budget's flags, the caller's sink (emit). */
static struct as_run run_of(struct as_runner *r, bool emit)
{
	return (struct as_run){
		.runner = r,
		.emit = emit ? r->o.emit : NULL,
		.ctx = emit ? r->o.ctx : NULL,
		.budget = {
			.left = 1,
			.cancel = r->cancel,
			.hook = r->hook.flag ? &r->hook : NULL,
		},
	};
}

/* ---- Kept plans ---- */

static struct kept *kept_find(struct as_runner *r, const char *spec)
{
	for (uint32_t i = 0; i < r->nkept; i++)
		if (strcmp(r->kept[i].spec, spec) == 0)
			return &r->kept[i];
	return NULL;
}

/* A new entry for spec, being made; NULL: no memory (nothing is kept). */
static struct kept *kept_add(struct as_runner *r, const char *spec)
{
	struct kept *k = realloc(r->kept, (r->nkept + 1) * sizeof(*k));
	if (!k)
		return NULL;
	r->kept = k;
	char *key = strdup(spec);
	if (!key)
		return NULL;
	k[r->nkept] = (struct kept){key, NULL, false};
	return &k[r->nkept++];
}

static void kept_remove(struct as_runner *r, struct kept *k)
{
	free(k->spec);
	*k = r->kept[--r->nkept];
}

/*
 * The kept plan of spec; or NULL, and the caller now makes it and ends
 * with keep(). A plan another thread is making is waited for. *stopped:
 * an earlier run stopped at the step limit.
 */
static const struct as_plan *take(struct as_runner *r, const char *spec,
				  bool *stopped)
{
	pthread_mutex_lock(&r->lock);
	struct kept *k;
	while ((k = kept_find(r, spec)) && !k->plan && !k->stopped)
		pthread_cond_wait(&r->done, &r->lock);
	*stopped = k && k->stopped;
	if (!k)
		kept_add(r, spec);
	const struct as_plan *p = k ? k->plan : NULL;
	pthread_mutex_unlock(&r->lock);
	return p;
}

/* The end of a take() that returned NULL: p made (a copy is kept; none
 * when memory runs out), or err. */
static void keep(struct as_runner *r, const char *spec,
		 const struct as_plan *p, int err)
{
	pthread_mutex_lock(&r->lock);
	struct kept *k = kept_find(r, spec);
	if (k && !k->plan && p && !(k->plan = as_plan_copy(p)))
		kept_remove(r, k);
	else if (k && !k->plan && err == AS_ELIMIT)
		k->stopped = true;
	else if (k && !k->plan)
		kept_remove(r, k);
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
}

/* ---- One run ---- */

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

/*
 * What a run inherits: the flag that calls it off, processors to borrow,
 * and a deadline on the monotonic clock (0: none; only for runs without an
 * off flag) when the run is called off.
 */
struct inherit {
	const atomic_bool *off;
	struct as_procs *spare;
	double deadline;
};

/*
 * A thread that sets `fired` at a deadline, for a run whose walks look
 * only at flags (struct as_budget.off), never at the clock.
 */
struct timer {
	pthread_t th;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done, started;
	double deadline;
	atomic_bool fired;
};

static void *timer_main(void *arg)
{
	struct timer *tm = arg;
	pthread_mutex_lock(&tm->m);
	while (!tm->done) {
		double left = tm->deadline - as_now_ms();
		if (left <= 0) {
			atomic_store(&tm->fired, true);
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double ns = (double)ts.tv_nsec + left * 1e6;
		ts.tv_sec += (time_t)(ns / 1e9);
		ts.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
		pthread_cond_timedwait(&tm->c, &tm->m, &ts);
	}
	pthread_mutex_unlock(&tm->m);
	return NULL;
}

/* Start tm; false when no thread could be had (then nothing fires). */
static bool timer_start(struct timer *tm, double deadline)
{
	pthread_condattr_t ca;
	memset(tm, 0, sizeof(*tm));
	tm->deadline = deadline;
	if (pthread_condattr_init(&ca) != 0)
		return false;
	bool ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
		  pthread_cond_init(&tm->c, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!ok)
		return false;
	if (pthread_mutex_init(&tm->m, NULL) != 0) {
		pthread_cond_destroy(&tm->c);
		return false;
	}
	tm->started = pthread_create(&tm->th, NULL, timer_main, tm) == 0;
	if (!tm->started) {
		pthread_mutex_destroy(&tm->m);
		pthread_cond_destroy(&tm->c);
	}
	return tm->started;
}

static void timer_stop(struct timer *tm)
{
	if (!tm->started)
		return;
	pthread_mutex_lock(&tm->m);
	tm->done = true;
	pthread_cond_signal(&tm->c);
	pthread_mutex_unlock(&tm->m);
	pthread_join(tm->th, NULL);
	pthread_mutex_destroy(&tm->m);
	pthread_cond_destroy(&tm->c);
}

static int stopped(struct as_diag *diag, const char *name, uint64_t limit)
{
	return as_diag_set(diag, 0, AS_ELIMIT,
			   "%s stopped at its step limit of %llu steps, or "
			   "on pace to pass it (without a limit it runs to "
			   "the end)",
			   name, (unsigned long long)limit);
}

static int canceled(struct as_diag *diag, const char *name)
{
	return as_diag_set(diag, 0, AS_ECANCELED, "%s: canceled", name);
}

/*
 * Make the plan of s under a fresh as_run and time it. *cut: the run was
 * called off at in->deadline (AS_ELIMIT).
 */
static int make(struct as_runner *r, const struct as_strategy_impl *s,
		const char *spec, const char *spec_opts,
		const struct inherit *in, struct as_plan **out, bool *cut,
		struct as_diag *diag)
{
	uint64_t limit = r->o.step_limit / parts_sharing(s, spec);
	struct as_run run = run_of(r, true);
	run.budget.left = limit ? limit : 1; /* a limit stays one */
	run.budget.limited = r->o.step_limit != 0;
	run.budget.off = in->off;
	run.budget.spare = in->spare;
	double t0 = as_now_ms();
	struct timer tm;
	bool timed = in->deadline > 0 && !in->off &&
		     timer_start(&tm, in->deadline);
	if (timed)
		run.budget.off = &tm.fired;
	int err = as_strategy_plan(s, r->t, spec_opts, &r->o, &run, out,
				   diag);
	if (timed)
		timer_stop(&tm);
	*cut = timed && atomic_load(&tm.fired) && err == AS_ELIMIT;
	if (err == AS_ELIMIT && as_budget_canceled(&run.budget))
		err = AS_ECANCELED;
	if (*cut && err == AS_ELIMIT)
		return as_diag_set(diag, 0, AS_ELIMIT,
				   "%s: cut short at its deadline",
				   s->info.name);
	if (err == AS_ELIMIT)
		return stopped(diag, s->info.name, limit ? limit : 1);
	if (err == AS_ECANCELED)
		return canceled(diag, s->info.name);
	if (err == AS_ENOMEM)
		return as_diag_set(diag, 0, err, "%s: out of memory",
				   s->info.name);
	if (err)
		return err;
	/* A plan made of parts counts their time, wherever they were made,
	 * instead of what it spent getting them. */
	double ms = as_now_ms() - t0 - run.waited_ms;
	for (uint32_t k = 0; k < (*out)->nrounds; k++) {
		double at = (*out)->rounds[k].ms - t0 - run.waited_ms;
		(*out)->rounds[k].ms = at > 0 ? at : 0;
	}
	if (s->parts)
		ms += run.parts_ms - run.made_ms;
	(*out)->plan_ms += ms;
	return AS_OK;
}

/* The strategy spec names on the runner's trace (as_strategy_find_spec),
 * or the "canceled" diagnostic once the runner is canceled. */
static int find_spec(struct as_runner *r, const char *spec,
		     const struct as_strategy_impl **s, const char **spec_opts,
		     struct as_diag *diag)
{
	int err = as_strategy_find_spec(spec, r->t, s, spec_opts, diag);
	if (err)
		return err;
	if (atomic_load(r->cancel))
		return canceled(diag, (*s)->info.name);
	return AS_OK;
}

/*
 * Run spec: a kept plan when there is one, else make it (and keep it).
 * *waited gets the time spent waiting for another thread's plan.
 */
static int run_spec(struct as_runner *r, const char *spec,
		    const struct inherit *in, struct as_plan **out,
		    double *waited, struct as_diag *diag)
{
	const struct as_strategy_impl *s = NULL;
	const char *spec_opts;
	*waited = 0;
	int err = find_spec(r, spec, &s, &spec_opts, diag);
	if (err)
		return err;
	bool cut = false;
	if (!s->memo)
		return make(r, s, spec, spec_opts, in, out, &cut, diag);
	/* Waiting for another thread's plan, this processor is idle. */
	double t0 = as_now_ms();
	if (in->spare)
		atomic_fetch_sub(&in->spare->busy, 1);
	bool stop;
	const struct as_plan *kept = take(r, spec, &stop);
	if (in->spare)
		atomic_fetch_add(&in->spare->busy, 1);
	*waited = as_now_ms() - t0;
	if (stop)
		return stopped(diag, s->info.name,
			       r->o.step_limit / parts_sharing(s, spec));
	if (kept) {
		if (!(*out = as_plan_copy(kept)))
			return as_diag_set(diag, 0, AS_ENOMEM,
					   "%s: out of memory", s->info.name);
		return AS_OK;
	}
	err = make(r, s, spec, spec_opts, in, out, &cut, diag);
	/* A run cut at its caller's deadline is not kept as stopped: a later
	 * run without one makes it again. */
	keep(r, spec, err ? NULL : *out, cut ? AS_OK : err);
	return err;
}

int as_runner_run(struct as_runner *r, const char *spec, struct as_plan **out,
		  struct as_diag *diag)
{
	double waited;
	struct inherit none = {NULL, NULL, 0};
	return run_spec(r, spec, &none, out, &waited, diag);
}

bool as_run_kept(struct as_run *run, const char *spec)
{
	struct as_runner *r = run->runner;
	pthread_mutex_lock(&r->lock);
	struct kept *k = kept_find(r, spec);
	bool yes = k && (k->plan || !k->stopped);
	pthread_mutex_unlock(&r->lock);
	return yes;
}

int as_run_reuse(struct as_run *run, const char *spec, struct as_plan **out,
		 struct as_diag *diag)
{
	return as_run_reuse_until(run, spec, 0, out, diag);
}

int as_run_reuse_until(struct as_run *run, const char *spec,
		       double deadline, struct as_plan **out,
		       struct as_diag *diag)
{
	struct inherit in = {run->budget.off, run->budget.spare, deadline};
	double t0 = as_now_ms(), waited;
	int err = run_spec(run->runner, spec, &in, out, &waited, diag);
	run->waited_ms += waited;
	run->made_ms += as_now_ms() - t0 - waited;
	if (err == AS_OK)
		run->parts_ms += (*out)->plan_ms;
	return err;
}

int as_strategy_run(const char *spec, const struct as_trace *t,
		    const struct as_runner_options *o, struct as_plan **out,
		    struct as_diag *diag)
{
	struct as_runner *r;
	if (as_runner_create(t, o, &r))
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	int err = as_runner_run(r, spec, out, diag);
	as_runner_destroy(r);
	return err;
}

/* ---- Walks ---- */

int as_runner_walk_at(struct as_runner *r, const char *spec, uint64_t time,
		      as_block_fn visit, void *ctx, struct as_diag *diag)
{
	const struct as_strategy_impl *s = NULL;
	const char *spec_opts;
	int err = find_spec(r, spec, &s, &spec_opts, diag);
	if (err)
		return err;
	struct as_run run = run_of(r, false);
	err = as_online_walk_at(s, r->t, spec_opts, &run, time, visit, ctx,
				diag);
	if (err == AS_ECANCELED)
		return canceled(diag, s->info.name);
	if (err == AS_ENOMEM)
		return as_diag_set(diag, 0, err, "%s: out of memory",
				   s->info.name);
	return err;
}

int as_strategy_walk_at(const char *spec, const struct as_trace *t,
			const struct as_runner_options *o, uint64_t time,
			as_block_fn visit, void *ctx, struct as_diag *diag)
{
	struct as_runner *r;
	if (as_runner_create(t, o, &r))
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	int err = as_runner_walk_at(r, spec, time, visit, ctx, diag);
	as_runner_destroy(r);
	return err;
}

struct blocks {
	uint16_t space;
	struct as_block *b;
	size_t n, cap;
	bool nomem;
};

static bool keep_block(void *ctx, uint16_t space, const struct as_block *b)
{
	struct blocks *w = ctx;
	if (space != w->space)
		return true;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct as_block *nb = realloc(w->b, cap * sizeof(*nb));
		if (!nb) {
			w->nomem = true;
			return false;
		}
		w->b = nb;
		w->cap = cap;
	}
	w->b[w->n] = *b;
	w->b[w->n].region = NULL; /* the allocator's, gone after */
	w->b[w->n++].symbol = NULL;
	return true;
}

int as_runner_blocks_at(struct as_runner *r, const char *spec, uint64_t time,
			uint16_t space, struct as_block **blocks, size_t *n,
			struct as_diag *diag)
{
	struct blocks w = {.space = space};
	/* Just after the events at `time`: those before time + 1. */
	uint64_t after = time < UINT64_MAX ? time + 1 : time;
	int err = as_runner_walk_at(r, spec, after, keep_block, &w, diag);
	if (err == AS_OK && w.nomem)
		err = as_diag_set(diag, 0, AS_ENOMEM, "%s: out of memory",
				  spec);
	if (err) {
		free(w.b);
		return err;
	}
	*blocks = w.b;
	*n = w.n;
	return AS_OK;
}

int as_strategy_blocks_at(const char *spec, const struct as_trace *t,
			  const struct as_runner_options *o, uint64_t time,
			  uint16_t space, struct as_block **blocks, size_t *n,
			  struct as_diag *diag)
{
	struct as_runner *r;
	if (as_runner_create(t, o, &r))
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	int err = as_runner_blocks_at(r, spec, time, space, blocks, n, diag);
	as_runner_destroy(r);
	return err;
}

/* ---- Many runs on threads ---- */

/* The runs shared by the threads of as_runner_run_many. */
struct many {
	struct as_runner *r;
	const char **specs;     /* the caller's, then the parts they need */
	size_t *order;          /* the run order: indices into specs */
	size_t n, nspecs;       /* order[] entries; the caller's specs */
	const struct as_many_hooks *mh;
	struct as_plan **out;
	struct as_diag *diags;
	int *errs;
	size_t *owner;          /* a part's: the caller's spec it is for */
	uint8_t *asked;         /* per caller's spec: 0, or mh->start said
				 * 1 yes, 2 no (under lock) */
	atomic_bool *off;       /* per caller's spec: a part of it stopped at
				 * its step limit, so the others are called
				 * off */
	pthread_mutex_t lock;
	atomic_size_t next;     /* the next slot of order[] to take */
	atomic_bool stop;       /* mh->start said no: start nothing more */
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
 * their next find: kept as stopped, they end the spec's own run at once
 * too.
 */
static void *many_worker(void *arg)
{
	struct many *m = arg;
	struct as_runner *r = m->r;
	const struct as_many_hooks *mh = m->mh;
	size_t k;
	/* At work from here until no run is left to start. */
	atomic_fetch_add(&r->procs.busy, 1);
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
		struct inherit in = {NULL, &r->procs, 0};
		if (!mine && !named_by_caller(m, m->specs[i]))
			in.off = &m->off[m->owner[i]];
		double waited;
		m->errs[i] = run_spec(r, m->specs[i], &in, &m->out[i],
				      &waited, &m->diags[i]);
		if (!mine && m->errs[i] == AS_ELIMIT)
			atomic_store(&m->off[m->owner[i]], true);
		if (mine && mh && mh->done) {
			mh->done(mh->ctx, i, m->errs[i], m->out[i],
				 &m->diags[i]);
			m->out[i] = NULL; /* done's now */
		}
	}
	atomic_fetch_sub(&r->procs.busy, 1);
	return NULL;
}

/*
 * The run order into m->order: the caller's, except that a spec made of
 * parts (see struct as_strategy_impl) gives its place to its parts when
 * they can run side by side (appended to m->specs, room for MANY_PARTS
 * more) and itself comes after the rest, as it waits for them, and that
 * the specs that reuse the others' plans (strip) come last. So no
 * processor sits waiting while a run is left to start, and the caller's
 * order holds otherwise: replay lists the exact baselines first, the
 * longest runs on a large trace; the viewer the online allocators, whose
 * plans show within a second.
 */
#define MANY_PARTS 16

/* The parts of spec i, if it is a bare NAME made of parts, into the order. */
static void add_parts(struct many *m, size_t i, size_t *total)
{
	const struct as_strategy_impl *s = as_strategy_spec_impl(m->specs[i]);
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
	if (s && s->reuses)
		return 2;
	return s && s->parts ? 1 : 0;
}

static void run_order(struct many *m, bool parts)
{
	size_t total = m->nspecs;
	m->n = 0;
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < m->nspecs; i++) {
			int when = run_pass(as_strategy_spec_impl(m->specs[i]));
			if (pass == 0 && when == 1 && parts)
				add_parts(m, i, &total);
			if (when == pass)
				m->order[m->n++] = i;
		}
}

static unsigned processors(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 1 ? (unsigned)cpus : 1;
}

/*
 * One per processor, but one at a time above the size where the exact
 * baselines leave the default set: there, memory is what limits a run (the
 * default set of 10^7 buffers side by side took 240 bytes a buffer, one at
 * a time 175).
 */
unsigned as_runner_jobs_default(const struct as_trace *t)
{
	unsigned cpus = processors();
	if (t->nbuffers > AS_PLACE_BASELINE_MAX)
		return 1;
	return cpus > JOBS_MAX ? JOBS_MAX : cpus;
}

int as_runner_run_many(struct as_runner *r, const char *const *specs,
		       size_t n, const struct as_many_hooks *mh,
		       struct as_plan **out, struct as_diag *diags)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (n == 0)
		return AS_OK;
	size_t cap = n + MANY_PARTS;
	struct many m = {.r = r, .nspecs = n, .mh = mh};
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
	/* Processors to lend: the caller's jobs, else every one (a walk
	 * borrows one only while it would sit idle). */
	unsigned jobs = r->o.jobs;
	r->procs.max = jobs ? jobs : processors();
	if (jobs == 0)
		jobs = as_runner_jobs_default(r->t);
	if (r->o.emit)
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
	r->procs.max = 0;
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
