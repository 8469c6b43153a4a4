/*
 * Result rows: the in-memory form of `replay --json` output. Rows own copies
 * of their strings; reading them from JSON lives in parse_json.c.
 */
#include <stdlib.h>
#include <string.h>

#include "allocscope/compare.h"
#include "core/internal.h"

struct as_results *as_results_create(void)
{
	return calloc(1, sizeof(struct as_results));
}

void as_results_destroy(struct as_results *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrows; i++) {
		free((char *)r->rows[i].trace);
		free((char *)r->rows[i].strategy);
	}
	free(r->rows);
	free(r);
}

int as_results_add(struct as_results *r, const struct as_result_row *row)
{
	if (r->nrows == r->capacity) {
		size_t cap = r->capacity ? r->capacity * 2 : 16;
		struct as_result_row *rows =
			realloc(r->rows, cap * sizeof(*rows));
		if (!rows)
			return AS_ENOMEM;
		r->rows = rows;
		r->capacity = cap;
	}
	struct as_result_row copy = *row;
	copy.trace = strdup(row->trace ? row->trace : "");
	copy.strategy = strdup(row->strategy ? row->strategy : "");
	if (!copy.trace || !copy.strategy) {
		free((char *)copy.trace);
		free((char *)copy.strategy);
		return AS_ENOMEM;
	}
	r->rows[r->nrows++] = copy;
	return AS_OK;
}

int as_results_add_plan(struct as_results *r, const struct as_trace *t,
			const char *spec, const struct as_plan *p,
			const struct as_report *rep)
{
	uint64_t lb = as_trace_lower_bound(t);
	struct as_result_row row = {
		.trace = t->path,
		.strategy = spec,
		.events = as_trace_alloc_free_events(t),
		.buffers = t->nbuffers,
		.peak = as_plan_peak(p, t, -1),
		.lower_bound = lb,
		.valid = rep->valid,
		.overlaps = rep->overlaps,
		.violations = rep->violations,
		.failed = as_plan_failed(p, t),
		.plan_ms = p->plan_ms,
	};
	row.peak_vs_lb = lb ? (double)row.peak / (double)lb : 0.0;
	return as_results_add(r, &row);
}

int as_results_run(struct as_results *r, const struct as_trace *t,
		   const char *spec, const struct as_runner_options *o,
		   struct as_diag *diag)
{
	struct as_plan *p = NULL;
	int err = as_strategy_run(spec, t, o, &p, diag);
	if (err != AS_OK)
		return err;
	struct as_report rep;
	err = as_validate(t, p, &rep);
	if (err == AS_OK)
		err = as_results_add_plan(r, t, spec, p, &rep);
	as_plan_destroy(p);
	if (err != AS_OK)
		return as_diag_set(diag, 0, err, "%s: %s", spec,
				   as_strerror(err));
	return AS_OK;
}
