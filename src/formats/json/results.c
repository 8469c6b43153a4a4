/*
 * Results: reading what `replay --json` wrote (allocscope diff), with the
 * path locator, error helper and integer reader of common.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/compare.h"
#include "core/internal.h"
#include "formats/json/json.h"

#define RESULTS_FORMAT "allocscope-results"
#define RESULTS_VERSION 1

static int rget_ms(const struct as_jctx *c, const cJSON *obj, const char *field,
		   double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		*out = 0.0;
		return AS_OK;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0)
		return as_json_fail(c, field, "expected a non-negative number");
	*out = v->valuedouble;
	return AS_OK;
}

static int rget_bool(const struct as_jctx *c, const cJSON *obj,
		     const char *field, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		return as_json_fail(c, NULL, "missing field '%s'", field);
	}
	if (!cJSON_IsBool(v))
		return as_json_fail(c, field, "expected true or false");
	*out = cJSON_IsTrue(v);
	return AS_OK;
}

/* What a run says of its trace: name, lower bound, size of the trace. */
struct rtrace {
	const char *name;
	uint64_t lower_bound, events, buffers;
};

static int read_result(struct as_jctx *c, const cJSON *o,
		       const struct rtrace *tr)
{
	if (!cJSON_IsObject(o))
		return as_json_fail(c, NULL, "expected an object");
	uint64_t trace_lb = tr->lower_bound;
	struct as_result_row row = {.trace = tr->name, .events = tr->events,
				    .buffers = tr->buffers};
	int err;
	if ((err = as_json_get_string(c, o, "strategy", true, &row.strategy)) ||
	    (err = as_json_get_u64(c, o, "peak", true, 0, &row.peak)) ||
	    (err = as_json_get_u64(c, o, "lower_bound", false, trace_lb,
			    &row.lower_bound)) ||
	    (err = rget_bool(c, o, "valid", &row.valid)) ||
	    (err = as_json_get_u64(c, o, "overlaps", false, 0, &row.overlaps)) ||
	    (err = as_json_get_u64(c, o, "violations", false, row.overlaps,
			    &row.violations)) ||
	    (err = as_json_get_u64(c, o, "failed", false, 0, &row.failed)) ||
	    (err = rget_ms(c, o, "plan_ms", &row.plan_ms)))
		return err;
	row.peak_vs_lb = row.lower_bound
				 ? (double)row.peak / (double)row.lower_bound
				 : 0.0;
	if (as_results_add(c->out, &row) != AS_OK)
		return as_diag_set(c->diag, 0, AS_ENOMEM, "out of memory");
	return AS_OK;
}

/*
 * A run's "left_out": {"step_limit": N, "strategies": ["bestfit", ...]}, the
 * strategies replay left out at the default set's step limit: a row each,
 * with no plan (the limit itself is not compared).
 */
static int read_left_out(struct as_jctx *c, const cJSON *lo,
			 const struct rtrace *tr)
{
	if (!cJSON_IsObject(lo))
		return as_json_fail(c, NULL, "expected an object");
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(lo, "strategies");
	if (!cJSON_IsArray(names))
		return as_json_fail(c, "strategies", "expected an array of "
						    "strategy names");
	as_json_push(c, "strategies", 0);
	int i = 0;
	const cJSON *name;
	cJSON_ArrayForEach(name, names) {
		as_json_push(c, NULL, i++);
		if (!cJSON_IsString(name))
			return as_json_fail(c, NULL, "expected a strategy name");
		struct as_result_row row = {
			.trace = tr->name, .strategy = name->valuestring,
			.events = tr->events, .buffers = tr->buffers,
			.lower_bound = tr->lower_bound, .valid = true,
			.left_out = true};
		if (as_results_add(c->out, &row) != AS_OK)
			return as_diag_set(c->diag, 0, AS_ENOMEM,
					   "out of memory");
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

/* One {"trace": {...}, "results": [...], "left_out": {...}?} object. */
static int read_run(struct as_jctx *c, const cJSON *run)
{
	if (!cJSON_IsObject(run))
		return as_json_fail(c, NULL, "expected an object");
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(run, "trace");
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(run, "results");
	if (!tr)
		return as_json_fail(c, NULL, "missing field 'trace'");
	if (!res)
		return as_json_fail(c, NULL, "missing field 'results'");
	if (!cJSON_IsObject(tr))
		return as_json_fail(c, "trace", "expected an object");
	if (!cJSON_IsArray(res))
		return as_json_fail(c, "results", "expected an array");
	struct rtrace info;
	int err;
	as_json_push(c, "trace", 0);
	if ((err = as_json_get_string(c, tr, "name", true, &info.name)) ||
	    (err = as_json_get_u64(c, tr, "lower_bound", false, 0,
			    &info.lower_bound)) ||
	    (err = as_json_get_u64(c, tr, "events", false, 0, &info.events)) ||
	    (err = as_json_get_u64(c, tr, "buffers", false, 0, &info.buffers)))
		return err;
	c->depth--;
	as_json_push(c, "results", 0);
	int i = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, res) {
		as_json_push(c, NULL, i++);
		if ((err = read_result(c, o, &info)))
			return err;
		c->depth--;
	}
	c->depth--;
	const cJSON *lo = cJSON_GetObjectItemCaseSensitive(run, "left_out");
	if (lo) {
		as_json_push(c, "left_out", 0);
		if ((err = read_left_out(c, lo, &info)))
			return err;
		c->depth--;
	}
	return AS_OK;
}

static int read_results_root(struct as_jctx *c, const cJSON *root)
{
	if (!cJSON_IsObject(root))
		return as_json_fail(c, NULL, "expected a JSON object written by "
				      "'allocscope replay --json'");
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
	if (fmt && (!cJSON_IsString(fmt) ||
		    strcmp(fmt->valuestring, RESULTS_FORMAT) != 0))
		return as_json_fail(c, "format", "not an allocscope results file "
					  "(expected \"" RESULTS_FORMAT "\")");
	uint64_t version;
	int err = as_json_get_u64(c, root, "version", false, RESULTS_VERSION,
			   &version);
	if (err)
		return err;
	if (version != RESULTS_VERSION)
		return as_json_fail(c, "version", "unsupported results version "
					   "(this build reads version 1)");
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
	if (!runs)
		return read_run(c, root);
	if (!cJSON_IsArray(runs))
		return as_json_fail(c, "runs", "expected an array");
	as_json_push(c, "runs", 0);
	int i = 0;
	const cJSON *run;
	cJSON_ArrayForEach(run, runs) {
		as_json_push(c, NULL, i++);
		if ((err = read_run(c, run)))
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

int as_results_parse(struct as_results *r, const char *name,
		     const char *data, size_t len, struct as_diag *diag)
{
	struct as_diag local;
	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", name);
	size_t bom = as_bom_len(data, len);
	data += bom, len -= bom;
	struct as_jctx c = {.text = data, .len = len, .diag = diag,
			    .exact_big = true};
	cJSON *root = NULL;
	int err = as_json_parse(&c, &root);
	if (err)
		return err;
	/* Rows are appended only when the whole file reads well. */
	struct as_results *tmp = as_results_create();
	err = AS_ENOMEM;
	if (tmp) {
		c.out = tmp;
		err = read_results_root(&c, root);
	}
	for (size_t i = 0; err == AS_OK && i < tmp->nrows; i++)
		err = as_results_add(r, &tmp->rows[i]);
	if (err == AS_ENOMEM)
		as_diag_set(diag, 0, err, "out of memory");
	as_results_destroy(tmp);
	cJSON_Delete(root);
	return err;
}

struct load {
	struct as_results *r;
	const char *path;
};

static int parse_loaded(void *ctx, const char *text, size_t len,
			struct as_diag *diag)
{
	struct load *l = ctx;
	return as_results_parse(l->r, l->path, text, len, diag);
}

int as_results_load(struct as_results *r, const char *path,
		    struct as_diag *diag)
{
	return as_json_load(path, parse_loaded, &(struct load){r, path}, diag);
}
