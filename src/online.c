/*
 * The driver of online allocators: events in trace order, a fresh allocator
 * per case with that case's options (the spec's options win), failures
 * recorded as AS_NO_OFFSET, aliases left to the caller (they take no memory
 * of their own).
 */
#include <stdlib.h>
#include <string.h>

#include "strategy.h"

/* End the running case (its stats go to the plan) and start case c. */
static int start_case(const struct as_strategy_impl *impl,
		      const struct as_trace *t, uint32_t c,
		      const char *spec_opts, as_emit_fn emit, void *ctx,
		      struct as_plan *p, void **st, struct as_diag *diag)
{
	const struct as_online_impl *on = impl->online;
	struct as_opts o;
	if (*st) {
		if (on->stats)
			on->stats(*st, p);
		on->destroy(*st);
		*st = NULL;
	}
	int err = as_opts_parse(&o, impl->info.name, impl->info.options,
				t->cases[c].options, spec_opts, diag);
	return err ? err : on->create(&o, emit, ctx, st, diag);
}

int as_online_replay(const struct as_strategy_impl *impl,
		     const struct as_trace *t, const char *spec_opts,
		     const struct as_run_hooks *hooks, struct as_plan *p,
		     struct as_diag *diag)
{
	const struct as_online_impl *on = impl->online;
	as_emit_fn emit = hooks ? hooks->emit : NULL;
	void *ctx = hooks ? hooks->ctx : NULL;
	bool checks = hooks && hooks->check_every_event && on->check;
#ifdef AS_EXPENSIVE_CHECKS
	checks = on->check != NULL;
#endif
	void *st = NULL;
	uint8_t *placed = calloc((size_t)t->nbuffers + 1, 1);
	if (!placed || as_plan_want_chunks(p) != AS_OK) {
		free(placed);
		return AS_ENOMEM;
	}
	int err = start_case(impl, t, 0, spec_opts, emit, ctx, p, &st, diag);
	for (uint32_t e = 0; e < t->nevents && err == AS_OK; e++) {
		const struct as_event *ev = &t->events[e];
		uint32_t i = ev->arg;
		switch (ev->kind) {
		case AS_EV_CASE:
			err = start_case(impl, t, i, spec_opts, emit, ctx, p,
					 &st, diag);
			continue;
		case AS_EV_QUERY:
			if (on->query)
				on->query(st, (enum as_query)i);
			continue;
		case AS_EV_ALLOC: {
			if (t->buffers[i].alias_of != AS_NONE)
				continue;
			uint64_t off = AS_NO_OFFSET, chunk = 0;
			err = on->alloc(st, t, i, &off, &chunk);
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
			if (placed[i]) {
				on->free(st, t, i);
				placed[i] = 0;
			}
			break;
		}
		if (checks && err == AS_OK) {
			char msg[256] = "";
			uint64_t broken = on->check(st, msg, sizeof(msg));
			if (broken)
				err = as_diag_set(diag, 0, AS_EINVAL,
						  "%s: %llu broken invariants "
						  "after event %u: %s",
						  impl->info.name,
						  (unsigned long long)broken, e,
						  msg);
		}
	}
	if (st) {
		if (err == AS_OK && hooks && hooks->dump_at_end && on->query)
			on->query(st, AS_Q_DUMP);
		if (err == AS_OK && on->stats)
			on->stats(st, p);
		on->destroy(st);
	}
	free(placed);
	return err;
}
