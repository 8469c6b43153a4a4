/*
 * The driver of online allocators: events in trace order, a fresh allocator
 * per case with that case's options (the spec's options win), failures
 * recorded as AS_NO_OFFSET, aliases left to the caller (they take no memory
 * of their own). Address spaces are separate memories, so each gets an
 * allocator of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "strategies/strategy.h"
#include <stdio.h>

struct replay {
	const struct as_strategy_impl *impl;
	const struct as_trace *t;
	const char *spec_opts;
	struct as_run *run;
	struct as_plan *p;
	void **st;              /* one allocator per space */
	uint64_t stop;          /* replay the events before this time */
	as_block_fn visit;      /* then walk the allocators, when set */
	void *visit_ctx;
};

/* End the running case: its statistics go to the plan. */
static void end_case(struct replay *r, bool keep_stats)
{
	const struct as_online_impl *on = r->impl->online;
	for (uint16_t s = 0; s < r->t->nspaces; s++) {
		if (!r->st[s])
			continue;
		if (keep_stats && on->stats)
			on->stats(r->st[s], r->p);
		on->destroy(r->st[s]);
		r->st[s] = NULL;
	}
}

static int start_case(struct replay *r, uint32_t c, struct as_diag *diag)
{
	struct as_opts o;
	end_case(r, true);
	int err = as_opts_parse(&o, r->impl->info.name, r->impl->info.options,
				r->t->cases[c].options, r->spec_opts, diag);
	for (uint16_t s = 0; err == AS_OK && s < r->t->nspaces; s++) {
		err = r->impl->online->create(&o, r->run, &r->st[s], diag);
		if (err == AS_OK && r->impl->online->start)
			err = r->impl->online->start(r->st[s], r->t, s, c,
						     diag);
	}
	if (err && err != AS_ENOMEM && diag && !diag->line) /* its line */
		diag->line = r->t->cases[c].line;
	return err;
}

static void query_all(struct replay *r, enum as_query q)
{
	for (uint16_t s = 0; s < r->t->nspaces; s++)
		if (r->st[s])
			r->impl->online->query(r->st[s], q);
}

static int check(struct replay *r, uint16_t s, uint32_t e,
		 struct as_diag *diag)
{
	char msg[256] = "";
	uint64_t broken = r->impl->online->check(r->st[s], msg, sizeof(msg));
	if (!broken)
		return AS_OK;
	return as_diag_set(diag, 0, AS_EINVAL,
			   "%s: %llu broken invariants after event %u: %s",
			   r->impl->info.name, (unsigned long long)broken, e,
			   msg);
}

/* The time an alloc or free event happens. */
static uint64_t event_time(const struct as_trace *t, const struct as_event *ev)
{
	const struct as_buffer *b = &t->buffers[ev->arg];
	return ev->kind == AS_EV_ALLOC ? b->start : b->end;
}

static int walk_all(struct replay *r, struct as_diag *diag)
{
	const struct as_online_impl *on = r->impl->online;
	for (uint16_t s = 0; s < r->t->nspaces; s++)
		if (r->st[s] && !on->walk(r->st[s], s, r->visit, r->visit_ctx))
			break;
	return AS_OK;
}

/* Events between two looks at the cancel flag. */
#define CANCEL_EVERY 4096

/* The buffers of each space (struct as_space_bufs): a counting sort. */
static int space_bufs(const struct as_trace *t, uint32_t **first,
		      uint32_t **bufs, uint32_t **rank)
{
	*first = calloc((size_t)t->nspaces + 1, sizeof(**first));
	*bufs = malloc(((size_t)t->nbuffers + 1) * sizeof(**bufs));
	*rank = malloc(((size_t)t->nbuffers + 1) * sizeof(**rank));
	uint32_t *count = calloc((size_t)t->nspaces + 1, sizeof(*count));
	if (!*first || !*bufs || !*rank || !count) {
		free(count);
		return AS_ENOMEM;
	}
	for (uint32_t i = 0; i < t->nbuffers; i++)
		(*rank)[i] = count[t->buffers[i].space]++;
	for (uint16_t s = 0; s < t->nspaces; s++)
		(*first)[s + 1] = (*first)[s] + count[s];
	for (uint32_t i = 0; i < t->nbuffers; i++)
		(*bufs)[(*first)[t->buffers[i].space] + (*rank)[i]] = i;
	free(count);
	return AS_OK;
}

static int drive(struct replay *r, const struct as_runner_options *ro,
		 struct as_diag *diag)
{
	const struct as_online_impl *on = r->impl->online;
	const struct as_trace *t = r->t;
	struct as_plan *p = r->p;
	bool checks = ro && ro->check_every_event && on->check;
#ifdef AS_EXPENSIVE_CHECKS
	checks = on->check != NULL;
#endif
	uint8_t *placed = calloc((size_t)t->nbuffers + 1, 1);
	uint32_t *first = NULL, *bufs = NULL, *rank = NULL;
	r->st = calloc(t->nspaces, sizeof(*r->st));
	if (!placed || !r->st || as_plan_want_chunks(p) != AS_OK ||
	    space_bufs(t, &first, &bufs, &rank) != AS_OK) {
		free(placed);
		free(r->st);
		free(first);
		free(bufs);
		free(rank);
		return AS_ENOMEM;
	}
	struct as_space_bufs sb = {first, bufs, rank};
	r->run->space_bufs = &sb;
	int err = start_case(r, 0, diag);
	for (uint32_t e = 0; e < t->nevents && err == AS_OK; e++) {
		const struct as_event *ev = &t->events[e];
		uint32_t i = ev->arg;
		uint16_t s = i < t->nbuffers ? t->buffers[i].space : 0;
		if ((ev->kind == AS_EV_ALLOC || ev->kind == AS_EV_FREE) &&
		    event_time(t, ev) >= r->stop)
			break;
		if (e % CANCEL_EVERY == 0 && as_budget_canceled(&r->run->budget)) {
			err = AS_ECANCELED;
			break;
		}
		switch (ev->kind) {
		case AS_EV_CASE:
			err = start_case(r, i, diag);
			continue;
		case AS_EV_QUERY:
			if (on->query)
				query_all(r, (enum as_query)i);
			continue;
		case AS_EV_ALLOC: {
			if (t->buffers[i].alias_of != AS_NONE)
				continue;
			uint64_t off = AS_NO_OFFSET, chunk = 0;
			err = on->alloc(r->st[s], t, i, &off, &chunk);
			if (err == 1) {
				err = AS_OK;
				off = AS_NO_OFFSET;
			} else if (err == AS_OK) {
				placed[i] = 1;
			}
			p->offset[i] = off;
			p->chunk[i] = off == AS_NO_OFFSET ? 0 : chunk;
			break;
		}
		case AS_EV_FREE:
			if (!placed[i])
				continue;
			on->free(r->st[s], t, i);
			placed[i] = 0;
			break;
		}
		if (checks && err == AS_OK)
			err = check(r, s, e, diag);
	}
	if (err == AS_OK && ro && ro->dump_at_end && on->query)
		query_all(r, AS_Q_DUMP);
	if (err == AS_OK && r->visit)
		err = walk_all(r, diag);
	end_case(r, err == AS_OK);
	r->run->space_bufs = NULL;
	free(r->st);
	free(placed);
	free(first);
	free(bufs);
	free(rank);
	return err;
}

int as_online_replay(const struct as_strategy_impl *impl,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_runner_options *o, struct as_run *run,
		     struct as_plan *p, struct as_diag *diag)
{
	struct replay r = {
		.impl = impl,
		.t = t,
		.spec_opts = spec_opts,
		.run = run,
		.p = p,
		.stop = UINT64_MAX,
	};
	return drive(&r, o, diag);
}

int as_online_walk_at(const struct as_strategy_impl *impl,
		      const struct as_trace *t, const char *spec_opts,
		      struct as_run *run, uint64_t time, as_block_fn visit,
		      void *ctx, struct as_diag *diag)
{
	if (!impl->online || !impl->online->walk)
		return as_diag_set(diag, 0, AS_EUNSUPPORTED,
				   "%s has no allocator state to walk",
				   impl->info.name);
	struct as_plan *p = as_plan_create(t);
	if (!p)
		return AS_ENOMEM;
	struct replay r = {
		.impl = impl,
		.t = t,
		.spec_opts = spec_opts,
		.run = run,
		.p = p,
		.stop = time,
		.visit = visit,
		.visit_ctx = ctx,
	};
	int err = drive(&r, NULL, diag);
	as_plan_destroy(p);
	return err;
}

/* ---- The dump printer ---- */

struct dump {
	as_emit_fn emit;
	void *ctx;
};

static bool dump_block(void *ctx, uint16_t space, const struct as_block *b)
{
	struct dump *d = ctx;
	char line[256];
	snprintf(line, sizeof(line), "  %s%s[%llu, %llu) %llu %s%s%s",
		 b->region ? b->region : "", b->region ? " " : "",
		 (unsigned long long)b->offset,
		 (unsigned long long)(b->offset + b->size),
		 (unsigned long long)b->size, b->in_use ? "used" : "free",
		 b->symbol ? " symbol=" : "", b->symbol ? b->symbol : "");
	d->emit(d->ctx, line);
	return true;
}

bool as_one_space(const struct as_trace *t)
{
	return t->nspaces == 1;
}

void as_dump_blocks(const struct as_online_impl *on, void *state,
		    as_emit_fn emit, void *ctx)
{
	struct dump d = {emit, ctx};
	if (emit && on->walk)
		on->walk(state, 0, dump_block, &d);
}
