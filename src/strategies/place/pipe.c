/*
 * Puts recorded on a spare processor (placer.h, as_pipe_*).
 *
 * A put costs about what a find costs (it writes the union of every
 * ancestor of its cover), and a find depends only on the puts of the
 * rectangles sharing time with it. Of what a put writes, a find reads
 * the unions and counts of nodes inside its range, the runs of nodes over
 * one of its leaves, and the snapshots inside it; a put writes the runs of
 * nodes inside its own range, the unions and counts of nodes over one of
 * its leaves, and the snapshots inside it. So a node both write and read
 * lies over a leaf of both ranges, and a put of a rectangle sharing no
 * time with the find touches nothing the find reads. While a processor
 * would otherwise sit idle (as_procs_claim), a walk queues
 * its puts for a thread that records them in order and goes on to its next
 * find at once, waiting only for the queued puts sharing time with it. Each
 * find reads what it would with every put recorded: the same offsets and
 * steps. Besides the queue the threads share the clock (atomic) and the
 * memory allocator. A pop, a reset or the end of the placer drains the
 * queue and stops the thread; walks with an undo log use none.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "strategies/place/placer.h"

#define AS_PIPE 64         /* puts queued at most */

struct queued {
	uint32_t i, l, h;  /* rectangle, its leaves [l, h) */
	uint64_t off, hi;
};

struct pipe {
	struct as_placer *pl;
	struct marks mk;
	struct queued q[AS_PIPE];
	/* Puts queued and recorded since the start: the queue holds
	 * [done, queued). Only the walk writes queued, only the thread
	 * writes done. */
	atomic_uint_fast64_t queued, done;
	atomic_bool nomem, quit;
	struct as_procs *claimed; /* of a processor it claimed; NULL: none */
	uint32_t finds, waited; /* finds, and those that waited (see
				 * AS_PIPE_LOOK) */
	double wall0, wait_ms;  /* the walk's clock when these finds began,
				 * and its time spent waiting since (ms) */
	/* A side that waited too long sleeps on wake (see pipe_sleep). */
	atomic_bool walk_asleep, thread_asleep;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t th;
};

/*
 * Turns a side waits for the other one with a pause before it sleeps: about
 * what a put or a find takes. A side that slept is woken by the other's next
 * store (each stores, then looks whether the other sleeps; each sleeping
 * side says so, then looks again: one of the two sees the other).
 */
#define AS_PIPE_SPIN 2048

static void pipe_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Sleep on pp->wake, saying so in *asleep, until *at reaches `until` (or,
 * with quit, until the walk says to quit). */
static void pipe_sleep(struct pipe *pp, atomic_bool *asleep,
		       atomic_uint_fast64_t *at, uint64_t until, bool quit)
{
	pthread_mutex_lock(&pp->lock);
	atomic_store(asleep, true);
	while (atomic_load(at) < until && !(quit && atomic_load(&pp->quit)))
		pthread_cond_wait(&pp->wake, &pp->lock);
	atomic_store(asleep, false);
	pthread_mutex_unlock(&pp->lock);
}

static void pipe_wake(struct pipe *pp, atomic_bool *asleep)
{
	if (atomic_load(asleep)) {
		pthread_mutex_lock(&pp->lock);
		pthread_cond_broadcast(&pp->wake);
		pthread_mutex_unlock(&pp->lock);
	}
}

static void *pipe_main(void *arg)
{
	struct pipe *pp = arg;
	for (uint64_t done = 0;; done++) {
		for (unsigned t = 0; atomic_load(&pp->queued) == done; t++) {
			if (atomic_load(&pp->quit))
				return NULL;
			if (t < AS_PIPE_SPIN)
				pipe_pause();
			else
				pipe_sleep(pp, &pp->thread_asleep,
					   &pp->queued, done + 1, true);
		}
		const struct queued *q = &pp->q[done % AS_PIPE];
		if (!as_placer_record(pp->pl, &pp->mk, q->i, q->off, q->hi))
			atomic_store(&pp->nomem, true);
		atomic_store(&pp->done, done + 1);
		pipe_wake(pp, &pp->walk_asleep);
	}
}

/* Wait until the puts queued before `upto` are recorded; the walk's
 * waits are timed (walk_waits). */
static void pipe_wait(struct pipe *pp, uint64_t upto, bool walk)
{
	if (atomic_load(&pp->done) >= upto)
		return;
	double t0 = walk ? as_now_ms() : 0;
	for (unsigned t = 0; atomic_load(&pp->done) < upto; t++) {
		if (t < AS_PIPE_SPIN)
			pipe_pause();
		else
			pipe_sleep(pp, &pp->walk_asleep, &pp->done, upto,
				   false);
	}
	if (walk)
		pp->wait_ms += as_now_ms() - t0;
}

/*
 * Whether the walk spent more than half the time of its last AS_PIPE_LOOK
 * finds waiting for the thread's puts (spinning or asleep). Then the
 * thread is not getting a processor of its own, whatever as_procs_claim
 * counted (other programs hold them), and each side spins while the other
 * waits for its turn: greedy-size on a 1.6M-buffer git recording under a
 * load of 7 on 2 processors took 43.6 s of processor time with the thread,
 * 12.6 without (docs/benchmarks.md).
 */
static bool walk_waits(const struct pipe *pp)
{
	double wall = as_now_ms() - pp->wall0;
	return wall > 0 && pp->wait_ms > wall / 2;
}

/* Wait for the queued puts of rectangles sharing leaves with [l, h). */
void as_pipe_wait_for(struct as_placer *pl, uint32_t l, uint32_t h)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	uint64_t queued = atomic_load_explicit(&pp->queued,
					       memory_order_relaxed);
	uint64_t k0 = atomic_load(&pp->done), upto = 0;
	for (uint64_t k = k0; k < queued; k++) {
		const struct queued *q = &pp->q[k % AS_PIPE];
		if (q->l < h && l < q->h)
			upto = k + 1;
	}
	/* (one waiting for the put just before) */
	pp->waited += upto == queued && upto > k0;
	pipe_wait(pp, upto, true);
	if (atomic_load(&pp->nomem))
		pl->nomem = true;
	if (++pp->finds == AS_PIPE_LOOK) {
		if (walk_waits(pp)) {
			as_pipe_stop(pl);
			pl->look = 16 * AS_PIPE_LOOK;
			return;
		}
		if (pp->waited > AS_PIPE_LOOK / 4 * 3) {
			as_pipe_stop(pl);
			if (pl->look < 16 * AS_PIPE_LOOK)
				pl->look *= 2;
			return;
		}
		pp->finds = pp->waited = 0;
		pp->wall0 = as_now_ms();
		pp->wait_ms = 0;
		pl->look = AS_PIPE_LOOK;
	}
}

/* Queue the put of rectangle i at [off, hi), once the queue has room. */
void as_pipe_put(struct as_placer *pl, uint32_t i, uint64_t off, uint64_t hi)
{
	struct pipe *pp = pl->pipe;
	uint64_t k = atomic_load_explicit(&pp->queued, memory_order_relaxed);
	pipe_wait(pp, k + 1 > AS_PIPE ? k + 1 - AS_PIPE : 0, true);
	const struct as_rect *r = &pl->pb->r[i];
	pp->q[k % AS_PIPE] = (struct queued){i, pl->map[r->t0],
					     pl->map[r->t1], off, hi};
	atomic_store(&pp->queued, k + 1);
	pipe_wake(pp, &pp->thread_asleep);
}

/* A thread for the puts, if a processor is spare (or pl->threaded). */
void as_pipe_start(struct as_placer *pl)
{
	struct as_procs *spare = pl->threaded || !pl->budget
					 ? NULL : pl->budget->spare;
	if (!pl->threaded && !as_procs_claim(spare))
		return;
	struct pipe *pp = calloc(1, sizeof(*pp));
	uint16_t *vis = calloc(2 * (size_t)pl->size, sizeof(uint16_t));
	if (pp && vis && pthread_mutex_init(&pp->lock, NULL) == 0) {
		if (pthread_cond_init(&pp->wake, NULL) == 0) {
			pp->pl = pl;
			pp->mk.vis = vis;
			pp->claimed = spare;
			pp->wall0 = as_now_ms();
			if (pthread_create(&pp->th, NULL, pipe_main, pp) == 0) {
				pl->pipe = pp;
				return;
			}
			pthread_cond_destroy(&pp->wake);
		}
		pthread_mutex_destroy(&pp->lock);
	}
	free(vis);
	free(pp);
	as_procs_release(spare);
}

/* Every queued put recorded. */
void as_pipe_drain(struct as_placer *pl)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	pipe_wait(pp, atomic_load_explicit(&pp->queued,
					   memory_order_relaxed), false);
	if (atomic_load(&pp->nomem))
		pl->nomem = true;
}

/* The queue drained and the thread gone: puts are recorded here again. */
void as_pipe_stop(struct as_placer *pl)
{
	struct pipe *pp = pl->pipe;
	if (!pp)
		return;
	as_pipe_drain(pl);
	pthread_mutex_lock(&pp->lock);
	atomic_store(&pp->quit, true);
	pthread_cond_broadcast(&pp->wake);
	pthread_mutex_unlock(&pp->lock);
	pthread_join(pp->th, NULL);
	pthread_cond_destroy(&pp->wake);
	pthread_mutex_destroy(&pp->lock);
	struct as_procs *claimed = pp->claimed;
	free(pp->mk.vis);
	free(pp);
	pl->pipe = NULL;
	as_procs_release(claimed);
}
