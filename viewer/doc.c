/*
 * A trace and its plans: loading, running strategies, validating. No SDL
 * and no output here; errors come back in a struct as_diag.
 */
#include <stdlib.h>
#include <string.h>

#include "viewer.h"

void doc_finish(struct doc *d)
{
	for (size_t i = 0; i < d->ns; i++)
		as_plan_destroy(d->s[i].plan);
	free(d->s);
	as_trace_destroy(d->t);
	memset(d, 0, sizeof(*d));
}

int doc_load(struct doc *d, const char *path, const char *const *specs,
	     size_t nspecs, struct as_diag *diag)
{
	struct doc n = {0};
	snprintf(n.path, sizeof(n.path), "%s", path);
	int err = as_trace_load(path, NULL, &n.t, diag);
	if (err)
		return err;
	const char *all[MAX_SPECS];
	if (nspecs == 0) {
		for (size_t i = 0; i < as_strategy_count() && i < MAX_SPECS; i++)
			if (as_strategy_applies(as_strategy_at(i)->name, n.t))
				all[nspecs++] = as_strategy_at(i)->name;
		specs = all;
	}
	if (nspecs == 0) {
		snprintf(diag->file, sizeof(diag->file), "%s", path);
		diag->line = 0;
		snprintf(diag->msg, sizeof(diag->msg),
			 "no strategy applies to this trace");
		err = AS_EUNSUPPORTED;
		goto fail;
	}
	n.s = calloc(nspecs, sizeof(*n.s));
	if (!n.s) {
		err = AS_ENOMEM;
		snprintf(diag->msg, sizeof(diag->msg), "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < nspecs; i++) {
		struct strat *s = &n.s[i];
		err = as_strategy_run(specs[i], n.t, NULL, &s->plan, diag);
		if (err)
			goto fail;
		n.ns++;
		snprintf(s->spec, sizeof(s->spec), "%s", specs[i]);
		err = as_validate(n.t, s->plan, &s->report);
		if (err) {
			snprintf(diag->msg, sizeof(diag->msg), "out of memory");
			goto fail;
		}
		s->peak = as_plan_peak(s->plan, n.t, -1);
		s->failed = as_plan_failed(s->plan, n.t);
	}
	n.lb = as_trace_lower_bound(n.t);
	*d = n;
	return AS_OK;
fail:
	doc_finish(&n);
	return err;
}
