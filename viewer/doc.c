/*
 * A trace and its plans: loading the trace, then planning every strategy
 * on a thread of its own, so the window opens as soon as the trace is
 * read; that thread plans up to one strategy per processor at once
 * (as_runner_run_many, whose hooks start and hand over each slot). SDL
 * is used here for that thread, its mutex and condition variable (and,
 * when asked, to post a wake-up event); no output here, errors come back
 * in a struct as_diag.
 *
 * Who owns what. The trace, the slots (struct strat) and the planning
 * order live in a job shared by the doc (the UI thread) and the planning
 * thread, counted by `refs`; whichever lets go last frees it. So a reload
 * or a quit never waits for a planner: the doc cancels the job's runner
 * (as_runner_cancel: the strategies running stop within a second) and lets
 * go, and the thread frees the job once they stopped. The library is not
 * thread-safe in general; what makes this safe:
 *  - before the thread starts, the UI thread makes every lazily made part
 *    of the trace (the names of malloc traces, as_trace_buffer_name) and
 *    its lower bound; afterwards the trace is only read. In src/ the only
 *    other write into a finished trace is namer/named (struct
 *    as_trace_private); stack frames, spaces and the address map are made
 *    at load;
 *  - only the thread and the library's threads it starts run strategies,
 *    through the job's runner, which keeps the plans strip reuses under
 *    its own lock; the thread that planned slot i validates it and writes
 *    its fields (slot_done), then, under the lock, counts it done;
 *  - the UI reads a slot only after doc_poll saw it done under the lock
 *    (and set `ready`), and never writes it.
 */
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

struct doc_job {
	SDL_mutex *lock;
	SDL_cond *changed;         /* a slot done, the thread gone, allow */
	SDL_Thread *thread;
	/* Under the lock. */
	int refs;                  /* the doc and the thread */
	bool cancel, exited;
	size_t done;               /* slots planned */
	size_t started;            /* slots started */
	size_t allow;              /* strategies the thread may start */
	Uint64 *since;             /* per slot: planning since (performance
				    * counter), 0: not planning */
	bool *over;                /* per slot: planned */
	uint32_t wake;             /* event type pushed per plan, 0: none */
	/* Written before the thread starts, then as described above. */
	struct as_trace *t;
	struct strat *s;
	size_t ns;
	size_t *order;
	struct as_runner_options run; /* the default set's step limit, if so */
	struct as_runner *runner;  /* made before the thread starts */
};

/* Jobs not yet freed: tests wait for a cancelled one to go. */
static SDL_atomic_t live_jobs;

int doc_live_jobs(void)
{
	return SDL_AtomicGet(&live_jobs);
}

static void job_free(struct doc_job *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->ns; i++)
		as_plan_destroy(j->s[i].plan);
	free(j->s);
	free(j->order);
	free(j->since);
	free(j->over);
	as_runner_destroy(j->runner);
	as_trace_destroy(j->t);
	if (j->changed)
		SDL_DestroyCond(j->changed);
	if (j->lock)
		SDL_DestroyMutex(j->lock);
	free(j);
	SDL_AtomicAdd(&live_jobs, -1);
}

double doc_ms_since(Uint64 c0)
{
	return (double)(SDL_GetPerformanceCounter() - c0) * 1000.0 /
	       (double)SDL_GetPerformanceFrequency();
}

/* May the strategy in the k-th place of the order start (mh->start)? */
static bool start_slot(void *ctx, size_t k)
{
	struct doc_job *j = ctx;
	SDL_LockMutex(j->lock);
	while (!j->cancel && j->started >= j->allow)
		SDL_CondWait(j->changed, j->lock);
	bool go = !j->cancel;
	if (go) {
		j->started++;
		j->since[j->order[k]] = SDL_GetPerformanceCounter();
	}
	SDL_UnlockMutex(j->lock);
	return go;
}

/*
 * The strategy in the k-th place is planned (mh->done, on the thread that
 * planned it): validate and measure its slot, then count it done.
 */
static void slot_done(void *ctx, size_t k, int err, struct as_plan *plan,
		      const struct as_diag *diag)
{
	struct doc_job *j = ctx;
	size_t i = j->order[k];
	struct strat *s = &j->s[i];
	s->err = err;
	s->plan = plan;
	s->diag = *diag;
	if (s->err == AS_OK) {
		s->err = as_validate(j->t, s->plan, &s->report);
		if (s->err != AS_OK) {
			as_plan_destroy(s->plan);
			s->plan = NULL;
			snprintf(s->diag.msg, sizeof(s->diag.msg),
				 "%s: out of memory", s->spec);
		}
	}
	if (s->err == AS_OK) {
		s->peak = as_plan_peak(s->plan, j->t, -1);
		s->failed = as_plan_failed(s->plan, j->t);
	}
	SDL_LockMutex(j->lock);
	s->ms = doc_ms_since(j->since[i]);
	j->since[i] = 0;
	j->over[i] = true;
	j->done++;
	SDL_CondBroadcast(j->changed);
	/* Under the lock: once doc_finish set cancel, no event is posted
	 * (SDL may be shutting down). */
	if (j->wake && !j->cancel) {
		SDL_Event e = {0};
		e.type = j->wake;
		SDL_PushEvent(&e);
	}
	SDL_UnlockMutex(j->lock);
}

/* The planning thread: every slot, in order, one per processor at once
 * (as_runner_run_many's default). */
static int worker(void *arg)
{
	struct doc_job *j = arg;
	const char *specs[MAX_SPECS];
	struct as_plan *out[MAX_SPECS];
	struct as_diag diags[MAX_SPECS];
	for (size_t k = 0; k < j->ns; k++)
		specs[k] = j->s[j->order[k]].spec;
	struct as_many_hooks mh = {start_slot, slot_done, j};
	as_runner_run_many(j->runner, specs, j->ns, &mh, out, diags);
	SDL_LockMutex(j->lock);
	j->exited = true;
	SDL_CondBroadcast(j->changed);
	bool last = --j->refs == 0;
	SDL_UnlockMutex(j->lock);
	if (last)
		job_free(j);
	return 0;
}

/*
 * The order strategies are planned in: the cheap ones first (recorded,
 * unknown names that fail at once, online allocators), then the offline
 * planners in spec order (the runner starts those that reuse others' plans,
 * strip, after them).
 */
static int rank(const char *spec)
{
	const struct as_strategy_info *info = as_strategy_find_by_spec(spec);
	if (!info || strcmp(info->name, "recorded") == 0)
		return 0;
	return info->online ? 1 : 2;
}

void doc_finish(struct doc *d)
{
	struct doc_job *j = d->job;
	if (j) {
		SDL_LockMutex(j->lock);
		j->cancel = true;
		as_runner_cancel(j->runner);
		SDL_CondBroadcast(j->changed);
		bool exited = j->exited;
		bool last = --j->refs == 0;
		SDL_Thread *th = j->thread;
		SDL_UnlockMutex(j->lock);
		/* The thread's handle: reaped when it is done, else let go
		 * of (it frees the job itself once its strategies stopped; at
		 * a quit the process exit ends it). */
		if (exited)
			SDL_WaitThread(th, NULL);
		else
			SDL_DetachThread(th);
		if (last)
			job_free(j);
	}
	memset(d, 0, sizeof(*d));
}

int doc_load(struct doc *d, const char *path, const char *const *specs,
	     size_t nspecs, const struct doc_opts *o, struct as_diag *diag)
{
	struct doc n = {0};
	snprintf(n.path, sizeof(n.path), "%s", path);
	struct doc_job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(diag->msg, sizeof(diag->msg), "out of memory");
		return AS_ENOMEM;
	}
	SDL_AtomicAdd(&live_jobs, 1);
	struct as_load_options lo = {.max_input_bytes = o ? o->max_input : 0,
				     .spool_dir = getenv("TMPDIR")};
	int err = as_trace_load_opts(path, &lo, &j->t, diag);
	if (err) {
		job_free(j);
		return err;
	}
	const char *all[MAX_SPECS];
	if (nspecs > MAX_SPECS) {
		snprintf(diag->msg, sizeof(diag->msg),
			 "more than %d strategies", MAX_SPECS);
		job_free(j);
		return AS_EINVAL;
	}
	if (nspecs == 0) {
		for (size_t i = 0; i < as_strategy_count() && i < MAX_SPECS; i++)
			if (as_strategy_by_default(as_strategy_at(i)->name,
						   j->t))
				all[nspecs++] = as_strategy_at(i)->name;
		specs = all;
		j->run.step_limit = as_strategy_step_limit(j->t);
	}
	if (o && o->limit_set)
		j->run.step_limit = o->step_limit;
	if (nspecs == 0) {
		snprintf(diag->file, sizeof(diag->file), "%s", path);
		diag->line = 0;
		snprintf(diag->msg, sizeof(diag->msg),
			 "no strategy applies to this trace");
		job_free(j);
		return AS_EUNSUPPORTED;
	}
	j->s = calloc(nspecs, sizeof(*j->s));
	j->order = calloc(nspecs, sizeof(*j->order));
	j->since = calloc(nspecs, sizeof(*j->since));
	j->over = calloc(nspecs, sizeof(*j->over));
	j->lock = SDL_CreateMutex();
	j->changed = SDL_CreateCond();
	/* The lazily made names, now, on this thread (see the top). */
	bool named = j->t->nbuffers == 0 || as_trace_buffer_name(j->t, 0);
	if (!j->s || !j->order || !j->since || !j->over || !j->lock ||
	    !j->changed || !named ||
	    as_runner_create(j->t, &j->run, &j->runner) != AS_OK) {
		snprintf(diag->msg, sizeof(diag->msg), "out of memory");
		job_free(j);
		return AS_ENOMEM;
	}
	j->ns = nspecs;
	for (size_t i = 0; i < nspecs; i++)
		snprintf(j->s[i].spec, sizeof(j->s[i].spec), "%s", specs[i]);
	size_t k = 0;
	for (int r = 0; r < 3; r++)
		for (size_t i = 0; i < nspecs; i++)
			if (rank(specs[i]) == r)
				j->order[k++] = i;
	j->allow = o && o->hold ? 0 : SIZE_MAX;
	j->wake = o ? o->wake : 0;
	j->refs = 2;
	n.lb = as_trace_lower_bound(j->t);
	j->thread = SDL_CreateThread(worker, "allocscope-plan", j);
	if (!j->thread) {
		snprintf(diag->msg, sizeof(diag->msg),
			 "cannot start the planning thread: %s",
			 SDL_GetError());
		job_free(j);
		return AS_ENOMEM;
	}
	n.job = j;
	n.t = j->t;
	n.s = j->s;
	n.ns = j->ns;
	*d = n;
	return AS_OK;
}

size_t doc_poll(struct doc *d)
{
	struct doc_job *j = d->job;
	if (!j)
		return 0;
	size_t fresh = 0;
	SDL_LockMutex(j->lock);
	for (size_t i = 0; i < d->ns; i++)
		if (j->over[i] && !d->s[i].ready) {
			d->s[i].ready = true;
			d->nready++;
			fresh++;
		}
	SDL_UnlockMutex(j->lock);
	return fresh;
}

void doc_allow(struct doc *d, size_t n)
{
	struct doc_job *j = d->job;
	if (!j)
		return;
	SDL_LockMutex(j->lock);
	j->allow = n;
	SDL_CondBroadcast(j->changed);
	SDL_UnlockMutex(j->lock);
}

void doc_wait(struct doc *d, size_t n)
{
	struct doc_job *j = d->job;
	if (!j)
		return;
	SDL_LockMutex(j->lock);
	while (j->done < n && j->done < j->ns && !j->exited)
		SDL_CondWait(j->changed, j->lock);
	SDL_UnlockMutex(j->lock);
	doc_poll(d);
}

bool doc_planning(const struct doc *d, size_t *slot, double *ms)
{
	struct doc_job *j = d->job;
	if (!j)
		return false;
	/* The one planned longest. */
	bool busy = false;
	SDL_LockMutex(j->lock);
	for (size_t i = 0; i < j->ns; i++)
		if (j->since[i] && (!busy || j->since[i] < j->since[*slot])) {
			*slot = i;
			busy = true;
		}
	if (busy)
		*ms = doc_ms_since(j->since[*slot]);
	SDL_UnlockMutex(j->lock);
	return busy;
}

void doc_wake(struct doc *d, uint32_t type)
{
	struct doc_job *j = d->job;
	if (!j)
		return;
	SDL_LockMutex(j->lock);
	j->wake = type;
	SDL_UnlockMutex(j->lock);
}

const struct strat *doc_first_error(const struct doc *d)
{
	for (size_t i = 0; i < d->ns; i++)
		if (d->s[i].ready && d->s[i].err && !doc_left_out(&d->s[i]))
			return &d->s[i];
	return NULL;
}

bool doc_left_out(const struct strat *s)
{
	return s->ready && s->err == AS_ELIMIT;
}
