/*
 * The object `replay --json` writes for one trace: the trace's figures, one
 * result per strategy and the strategies left out at the step limit. The
 * results reader (formats/json/results.c) reads it back as result rows.
 */
#include <stdio.h>
#include <stdlib.h>

#include "allocscope/compare.h"
#include "core/internal.h"

/*
 * Per space: name, peak (from `peak`, else from p's offsets), capacity, and
 * the space's own lower bound.
 */
static void write_spaces(FILE *f, const struct as_trace *t,
			 const struct as_plan *p, const uint64_t *peak)
{
	/* One pass for every space's bound (4096-core traces). */
	uint64_t *lb = malloc(((size_t)t->nspaces + 1) * sizeof(*lb));
	if (lb && as_trace_lower_bound_spaces(t, lb) != AS_OK) {
		free(lb);
		lb = NULL;
	}
	fputs(",\n   \"spaces\": [", f);
	for (uint16_t s = 0; s < p->nspaces; s++) {
		uint64_t cap = p->space_capacity ? p->space_capacity[s]
			     : s < t->nspaces	 ? t->spaces[s].capacity
						 : 0;
		fputs(s ? ", {\"name\": " : "{\"name\": ", f);
		as_json_string(f, as_plan_space_name(p, t, s));
		fprintf(f, ", \"peak\": %llu, \"capacity\": %llu",
			(unsigned long long)(peak ? peak[s]
						  : as_plan_peak(p, t, s)),
			(unsigned long long)cap);
		/* The trace's bound of a space holds when spaces are the
		 * trace's own (not levels the strategy chose). */
		if (s < t->nspaces && p->nspaces == t->nspaces)
			fprintf(f, ", \"lower_bound\": %llu",
				(unsigned long long)(
					lb ? lb[s]
					   : as_trace_lower_bound_space(t, s)));
		fputs("}", f);
	}
	fputs("]", f);
	free(lb);
}

/*
 * Inputs that record the allocator (PyTorch snapshots: segments, OOMs or a
 * clock): inside "trace", the OOMs and per space its buffers, lower bound
 * and, with segments, the peak of reserved memory.
 */
static void write_recorded_state(FILE *f, const struct as_trace *t)
{
	uint32_t nooms = 0;
	for (uint32_t i = 0; i < t->nmarks; i++)
		nooms += t->marks[i].kind == AS_MARK_OOM;
	if (!nooms && !t->nsegments && !t->clock)
		return;
	fputs(", \"ooms\": [", f);
	for (uint32_t i = 0, k = 0; i < t->nmarks; i++) {
		const struct as_mark *m = &t->marks[i];
		if (m->kind != AS_MARK_OOM)
			continue;
		fprintf(f, "%s{\"time\": %llu, ", k++ ? ", " : "",
			(unsigned long long)m->time);
		if (t->clock && m->time <= t->end_time)
			fprintf(f, "\"time_us\": %llu, ",
				(unsigned long long)t->clock[m->time]);
		fputs("\"device\": ", f);
		as_json_string(f, m->space < t->nspaces
					  ? t->spaces[m->space].name
					  : "");
		fprintf(f, ", \"size\": %llu, \"device_free\": %llu}",
			(unsigned long long)m->size,
			(unsigned long long)m->device_free);
	}
	fputs("]", f);
	uint64_t *peak = malloc(((size_t)t->nspaces + 1) * sizeof(*peak));
	uint32_t *count = calloc((size_t)t->nspaces + 1, sizeof(*count));
	uint64_t *lb = malloc(((size_t)t->nspaces + 1) * sizeof(*lb));
	bool reserved = peak && t->nsegments &&
			as_trace_reserved_peaks(t, peak) == AS_OK;
	if (lb && as_trace_lower_bound_spaces(t, lb) != AS_OK) {
		free(lb);
		lb = NULL;
	}
	for (uint32_t i = 0; count && i < t->nbuffers; i++)
		if (t->buffers[i].space < t->nspaces)
			count[t->buffers[i].space]++;
	fputs(", \"devices\": [", f);
	for (uint16_t s = 0; count && s < t->nspaces; s++) {
		fputs(s ? ", {\"device\": " : "{\"device\": ", f);
		as_json_string(f, t->spaces[s].name);
		fprintf(f, ", \"buffers\": %u, \"lower_bound\": %llu", count[s],
			(unsigned long long)(lb ? lb[s]
					     : as_trace_lower_bound_space(t, s)));
		if (reserved)
			fprintf(f, ", \"reserved_peak\": %llu",
				(unsigned long long)peak[s]);
		fputs("}", f);
	}
	fputs("]", f);
	free(peak);
	free(count);
	free(lb);
}

/* `, "key": TIME`, or null when there is no such moment (time NULL). */
static void write_moment(FILE *f, const char *key, const uint64_t *time)
{
	if (time)
		fprintf(f, ", \"%s\": %llu", key, (unsigned long long)*time);
	else
		fprintf(f, ", \"%s\": null", key);
}

/*
 * A certifying planner's bounds, per space: the load, the certified bound,
 * the plan's peak there and its gap to the bound, and the sub-problem that
 * proves the bound (null when the bound is the load).
 */
static void write_certificates(FILE *f, const struct as_trace *t,
			       const struct as_replay_result *x)
{
	const struct as_plan *p = x->plan;
	if (p->ncerts == 1 && t->nspaces <= 1)
		fprintf(f, ", \"certified_bound\": %llu",
			(unsigned long long)p->certs[0].bound);
	fputs(",\n   \"certificates\": [", f);
	for (uint16_t k = 0; k < p->ncerts; k++) {
		const struct as_certificate *c = &p->certs[k];
		/* The offsets may be gone (as_plan_drop_buffers). */
		uint64_t peak = x->space_peak && c->space < p->nspaces
					? x->space_peak[c->space]
					: x->peak;
		fputs(k ? ",\n    {\"space\": " : "{\"space\": ", f);
		as_json_string(f, as_plan_space_name(p, t, c->space));
		fprintf(f,
			", \"space_index\": %u, \"lower_bound\": %llu, "
			"\"certified_bound\": %llu, \"peak\": %llu, "
			"\"peak_vs_certified\": %.6f, \"certificate\": ",
			(unsigned)c->space, (unsigned long long)c->load,
			(unsigned long long)c->bound, (unsigned long long)peak,
			c->bound ? (double)peak / (double)c->bound : 0.0);
		if (!c->nbuffers) {
			fputs("null}", f);
			continue;
		}
		fprintf(f, "{\"height\": %llu, \"nodes\": %llu, \"buffers\": [",
			(unsigned long long)c->bound,
			(unsigned long long)c->nodes);
		for (uint32_t i = 0; i < c->nbuffers; i++) {
			const struct as_cert_buffer *b = &c->buffers[i];
			fprintf(f,
				"%s{\"id\": %u, \"size\": %llu, \"start\": "
				"%llu, \"end\": %llu, \"align\": %llu}",
				i ? ",\n      " : "\n      ", b->id,
				(unsigned long long)b->size,
				(unsigned long long)b->start,
				(unsigned long long)b->end,
				(unsigned long long)1 << b->align_log2);
		}
		fputs("]}}", f);
	}
	fputs("]", f);
}

/* One element of "results". */
static void write_result(FILE *f, const struct as_trace *t, uint64_t lb,
			 const struct as_replay_result *x)
{
	fputs("\"strategy\": ", f);
	as_json_string(f, x->spec);
	fprintf(f, ", \"peak\": %llu", (unsigned long long)x->peak);
	write_moment(f, "peak_time", x->peak_time);
	fprintf(f,
		", \"lower_bound\": %llu, "
		"\"peak_vs_lb\": %.6f, \"valid\": %s, \"overlaps\": "
		"%llu, \"violations\": %llu, \"failed\": %u, "
		"\"plan_ms\": %.3f,\n   \"stats\": {",
		(unsigned long long)lb,
		lb ? (double)x->peak / (double)lb : 0.0,
		x->report->valid ? "true" : "false",
		(unsigned long long)x->report->overlaps,
		(unsigned long long)x->report->violations, x->failed,
		x->plan->plan_ms);
	for (uint32_t s = 0; s < x->plan->nstats; s++) {
		const struct as_stat *st = &x->plan->stats[s];
		fprintf(f, "%s\"%s\": ", s ? ", " : "", st->key);
		if (st->integer)
			fprintf(f, "%.0f", st->value);
		else
			fprintf(f, "%.6g", st->value);
	}
	fputs("}", f);
	if (x->plan->nnotes) {
		fputs(",\n   \"notes\": [", f);
		for (uint32_t k = 0; k < x->plan->nnotes; k++) {
			fputs(k ? ", " : "", f);
			as_json_string(f, x->plan->notes[k]);
		}
		fputs("]", f);
	}
	if (x->plan->nspaces > 1)
		write_spaces(f, t, x->plan, x->space_peak);
	if (x->plan->ncerts)
		write_certificates(f, t, x);
	if (x->plan->nrounds) {
		fputs(",\n   \"rounds\": [", f);
		for (uint32_t k = 0; k < x->plan->nrounds; k++) {
			fputs(k ? ", {\"label\": " : "{\"label\": ", f);
			as_json_string(f, x->plan->rounds[k].label);
			fprintf(f, ", \"peak\": %llu, \"ms\": %.1f}",
				(unsigned long long)x->plan->rounds[k].peak,
				x->plan->rounds[k].ms);
		}
		fputs("]", f);
	}
	if (!x->report->valid) {
		fputs(",\n   \"first_violations\": [", f);
		for (uint32_t k = 0; k < x->report->nfirst; k++) {
			char buf[512];
			fputs(k ? ", " : "", f);
			as_json_string(f, as_violation_text(t, x->plan,
							    &x->report->first[k],
							    buf, sizeof(buf)));
		}
		fputs("]", f);
	}
}

int as_replay_write_json(const struct as_replay_run *run, FILE *f)
{
	const struct as_trace *t = run->trace;
	fputs("{\"trace\": {\"name\": ", f);
	as_json_string(f, t->path);
	fputs(", \"format\": ", f);
	as_json_string(f, t->format);
	fprintf(f, ", \"events\": %llu, \"buffers\": %u, \"lower_bound\": %llu",
		(unsigned long long)as_trace_alloc_free_events(t), t->nbuffers,
		(unsigned long long)run->lower_bound);
	write_recorded_state(f, t);
	write_moment(f, "lower_bound_time", run->lower_bound_time);
	fputs("},\n", f);
	fputs(" \"results\": [", f);
	for (size_t i = 0; i < run->nresults; i++) {
		fputs(i ? ",\n  {" : "\n  {", f);
		write_result(f, t, run->lower_bound, &run->results[i]);
		fputs("}", f);
	}
	fputs("\n ]", f);
	if (run->nleft_out) {
		fprintf(f, ",\n \"left_out\": {\"step_limit\": %llu, "
			   "\"strategies\": [",
			(unsigned long long)run->step_limit);
		for (size_t i = 0; i < run->nleft_out; i++) {
			fputs(i ? ", " : "", f);
			as_json_string(f, run->left_out[i]);
		}
		fputs("]}", f);
	}
	fputs("}\n", f);
	return ferror(f) ? AS_EIO : AS_OK;
}
