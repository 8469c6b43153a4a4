/*
 * allocscope: the command-line front end. It parses arguments, calls the
 * library and talks to the user; all the work is in the library.
 *
 * Exit status: 0 all plans valid, 1 some plan invalid, 2 usage or input
 * error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope.h"
#include "allocscope_render.h"

#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define MAX_SPECS 64

static const char usage_text[] =
	"usage: allocscope replay TRACE [-f FMT] [-s SPEC]... [--json FILE|-]\n"
	"                         [--plan-out FILE] [--dump]\n"
	"                         [--png FILE] [--svg FILE] [--size WxH]\n"
	"                         [--color-by buffer|size|pool|lifetime]\n"
	"       allocscope check TRACE [-f FMT] [--plan PLAN.csv]\n"
	"       allocscope strategies\n"
	"\n"
	"FMT is ops, json or csv (default: by extension, then content).\n"
	"SPEC is NAME[:key=value[,key=value]...]; without -s every strategy\n"
	"that applies to the trace runs.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("allocscope: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n", stderr);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}

static int report_diag(const struct as_diag *d)
{
	char buf[1024];
	fprintf(stderr, "%s\n", as_diag_text(d, buf, sizeof(buf)));
	return EXIT_USAGE;
}

struct result {
	char spec[256];
	struct as_plan *plan;
	struct as_report report;
	uint64_t peak;
	uint32_t failed;
};

static double gap_pct(uint64_t peak, uint64_t lb)
{
	return lb ? ((double)peak - (double)lb) * 100.0 / (double)lb : 0.0;
}

static uint64_t count_ops(const struct as_trace *t)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < t->nevents; i++)
		n += t->events[i].kind == AS_EV_ALLOC ||
		     t->events[i].kind == AS_EV_FREE;
	return n;
}

/* Per space: name, peak, capacity, and the space's own lower bound. */
static void write_spaces(FILE *f, const struct as_trace *t,
			 const struct as_plan *p)
{
	fputs(",\n   \"spaces\": [", f);
	for (uint16_t s = 0; s < p->nspaces; s++) {
		uint64_t cap = p->space_capacity ? p->space_capacity[s]
			     : s < t->nspaces	 ? t->spaces[s].capacity
						 : 0;
		fputs(s ? ", {\"name\": " : "{\"name\": ", f);
		as_json_string(f, as_plan_space_name(p, t, s));
		fprintf(f, ", \"peak\": %llu, \"capacity\": %llu",
			(unsigned long long)as_plan_peak(p, t, s),
			(unsigned long long)cap);
		/* The trace's bound of a space holds when spaces are the
		 * trace's own (not levels the strategy chose). */
		if (s < t->nspaces && p->nspaces == t->nspaces)
			fprintf(f, ", \"lower_bound\": %llu",
				(unsigned long long)as_trace_lower_bound_space(
					t, s));
		fputs("}", f);
	}
	fputs("]", f);
}

static void write_json(FILE *f, const struct as_trace *t, uint64_t lb,
		       const struct result *r, size_t n)
{
	fputs("{\"trace\": {\"name\": ", f);
	as_json_string(f, t->path);
	fputs(", \"format\": ", f);
	as_json_string(f, t->format);
	fprintf(f, ", \"events\": %llu, \"buffers\": %u, \"lower_bound\": %llu},\n",
		(unsigned long long)count_ops(t), t->nbuffers,
		(unsigned long long)lb);
	fputs(" \"results\": [", f);
	for (size_t i = 0; i < n; i++) {
		const struct result *x = &r[i];
		fputs(i ? ",\n  {" : "\n  {", f);
		fputs("\"strategy\": ", f);
		as_json_string(f, x->spec);
		fprintf(f,
			", \"peak\": %llu, \"lower_bound\": %llu, "
			"\"peak_vs_lb\": %.6f, \"valid\": %s, \"overlaps\": "
			"%llu, \"violations\": %llu, \"failed\": %u, "
			"\"plan_ms\": %.3f,\n   \"stats\": {",
			(unsigned long long)x->peak, (unsigned long long)lb,
			lb ? (double)x->peak / (double)lb : 0.0,
			x->report.valid ? "true" : "false",
			(unsigned long long)x->report.overlaps,
			(unsigned long long)x->report.violations, x->failed,
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
		if (x->plan->nspaces > 1)
			write_spaces(f, t, x->plan);
		if (x->plan->nrounds) {
			fputs(",\n   \"rounds\": [", f);
			for (uint32_t k = 0; k < x->plan->nrounds; k++) {
				fputs(k ? ", {\"label\": " : "{\"label\": ", f);
				as_json_string(f, x->plan->rounds[k].label);
				fprintf(f, ", \"peak\": %llu}",
					(unsigned long long)x->plan->rounds[k]
						.peak);
			}
			fputs("]", f);
		}
		if (!x->report.valid) {
			fputs(",\n   \"first_violations\": [", f);
			for (uint32_t k = 0; k < x->report.nfirst; k++) {
				char buf[512];
				fputs(k ? ", " : "", f);
				as_json_string(f, as_violation_text(
							  t, x->plan,
							  &x->report.first[k],
							  buf, sizeof(buf)));
			}
			fputs("]", f);
		}
		fputs("}", f);
	}
	fputs("\n ]}\n", f);
}

static void print_table(const struct as_trace *t, uint64_t lb,
			const struct result *r, size_t n)
{
	char hb[32];
	printf("trace %s (%s): %u buffers, %llu events, lower bound %llu (%s)\n\n",
	       t->path, t->format, t->nbuffers,
	       (unsigned long long)count_ops(t), (unsigned long long)lb,
	       as_human_bytes(lb, hb, sizeof(hb)));
	printf("%-28s %14s %10s %9s %6s %7s %10s\n", "strategy", "peak",
	       "", "vs LB", "valid", "failed", "plan ms");
	for (size_t i = 0; i < n; i++) {
		printf("%-28s %14llu %10s %8.2f%% %6s %7u %10.2f\n",
		       r[i].spec, (unsigned long long)r[i].peak,
		       as_human_bytes(r[i].peak, hb, sizeof(hb)),
		       gap_pct(r[i].peak, lb),
		       r[i].report.valid ? "yes" : "NO", r[i].failed,
		       r[i].plan->plan_ms);
	}
}

static void emit_line(void *ctx, const char *line)
{
	fprintf((FILE *)ctx, "%s\n", line);
}

/* --png/--svg (paths[0], paths[1]): one picture of every result. */
static int write_images(const char *const *paths, size_t npaths,
			const struct as_trace *t, const struct result *res,
			size_t nres, const struct as_render_opts *o)
{
	struct as_render_panel *pn = calloc(nres + 1, sizeof(*pn));
	int status = pn ? 0 : EXIT_USAGE;
	for (size_t i = 0; pn && i < nres; i++)
		pn[i] = (struct as_render_panel){res[i].spec, t, res[i].plan,
						 &res[i].report,
						 AS_RENDER_ALL_SPACES};
	for (size_t i = 0; pn && i < npaths; i++) {
		struct as_diag d = {0};
		if (paths[i] && as_render_file(paths[i], i ? AS_IMAGE_SVG
							   : AS_IMAGE_PNG,
					       pn, nres, o, &d))
			status = report_diag(&d);
	}
	free(pn);
	return status;
}

static int cmd_replay(int argc, char **argv)
{
	const char *images[2] = {NULL, NULL};
	struct as_render_opts ropts;
	as_render_opts_init(&ropts);
	ropts.min_plot_height = 110; /* unless --size: taller, not cramped */
	const char *trace_path = NULL, *json = NULL, *plan_out = NULL;
	const char *specs[MAX_SPECS];
	size_t nspecs = 0;
	enum as_format fmt = AS_FMT_AUTO;
	bool dump = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "-f") == 0 && more) {
			if (as_format_from_name(argv[++i], &fmt) != AS_OK)
				return usage_error("unknown format '%s'",
						   argv[i]);
		} else if (strcmp(a, "-s") == 0 && more) {
			if (nspecs == MAX_SPECS)
				return usage_error("too many -s (%s)", "64");
			specs[nspecs++] = argv[++i];
		} else if (strcmp(a, "--json") == 0 && more) {
			json = argv[++i];
		} else if (strcmp(a, "--plan-out") == 0 && more) {
			plan_out = argv[++i];
		} else if (strcmp(a, "--dump") == 0) {
			dump = true;
		} else if ((strcmp(a, "--png") == 0 ||
			    strcmp(a, "--svg") == 0) && more) {
			images[a[2] == 's'] = argv[++i];
		} else if (strcmp(a, "--size") == 0 && more) {
			if (as_render_parse_size(argv[++i], &ropts.width,
						 &ropts.height) != AS_OK)
				return usage_error("--size wants WxH, each 200 "
						   "to 16384, not '%s'", argv[i]);
			ropts.min_plot_height = 0;
		} else if (strcmp(a, "--color-by") == 0 && more) {
			if (as_color_by_from_name(argv[++i], &ropts.color_by))
				return usage_error("--color-by wants buffer, "
						   "size, pool or lifetime, not "
						   "'%s'", argv[i]);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown or incomplete option '%s'",
					   a);
		} else if (!trace_path) {
			trace_path = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (!trace_path)
		return usage_error("replay needs a TRACE%s", "");
	if (plan_out && nspecs != 1)
		return usage_error("--plan-out needs exactly one -s%s", "");

	struct as_diag d;
	struct as_trace *t;
	if (as_trace_load(trace_path, fmt, &t, &d) != AS_OK)
		return report_diag(&d);
	if (nspecs == 0)
		for (size_t i = 0; i < as_strategy_count(); i++)
			if (as_strategy_applies(as_strategy_at(i)->name, t))
				specs[nspecs++] = as_strategy_at(i)->name;

	struct result *res = calloc(nspecs + 1, sizeof(*res));
	int status = res ? 0 : EXIT_USAGE;
	size_t nres = 0;
	FILE *dump_to = json && strcmp(json, "-") == 0 ? stderr : stdout;
	struct as_run_hooks hooks = {
		.emit = dump ? emit_line : NULL,
		.ctx = dump_to,
		.dump_at_end = dump,
	};
	for (size_t i = 0; res && i < nspecs; i++) {
		struct result *r = &res[nres];
		memset(&d, 0, sizeof(d));
		if (as_strategy_run(specs[i], t, &hooks, &r->plan, &d) != AS_OK) {
			status = report_diag(&d);
			break;
		}
		nres++;
		snprintf(r->spec, sizeof(r->spec), "%s", specs[i]);
		if (as_validate(t, r->plan, &r->report) != AS_OK) {
			fputs("allocscope: out of memory\n", stderr);
			status = EXIT_USAGE;
			break;
		}
		r->peak = as_plan_peak(r->plan, t, -1);
		r->failed = as_plan_failed(r->plan, t);
		if (!r->report.valid) {
			char buf[1024];
			fprintf(stderr, "%s: %s: invalid plan: %s\n",
				trace_path, specs[i],
				as_violation_text(t, r->plan,
						  &r->report.first[0], buf,
						  sizeof(buf)));
			status = EXIT_INVALID;
		}
	}
	uint64_t lb = as_trace_lower_bound(t);
	if (status != EXIT_USAGE) {
		struct as_atomic *a;
		FILE *f;
		if (json) {
			if (as_atomic_open(json, &a, &f) != AS_OK) {
				fprintf(stderr, "%s: cannot write: %s\n", json,
					strerror(errno));
				status = EXIT_USAGE;
			} else {
				write_json(f, t, lb, res, nres);
				if (as_atomic_commit(a) != AS_OK) {
					fprintf(stderr, "%s: write failed\n",
						json);
					status = EXIT_USAGE;
				}
			}
		} else {
			print_table(t, lb, res, nres);
		}
		if ((images[0] || images[1]) && status != EXIT_USAGE &&
		    write_images(images, 2, t, res, nres, &ropts) != 0)
			status = EXIT_USAGE;
		if (plan_out && status != EXIT_USAGE) {
			if (as_atomic_open(plan_out, &a, &f) != AS_OK) {
				fprintf(stderr, "%s: cannot write\n", plan_out);
				status = EXIT_USAGE;
			} else if (as_plan_write_csv(res[0].plan, t, f) != AS_OK) {
				as_atomic_abort(a);
				status = EXIT_USAGE;
			} else if (as_atomic_commit(a) != AS_OK) {
				fprintf(stderr, "%s: write failed\n", plan_out);
				status = EXIT_USAGE;
			}
		}
	}
	for (size_t i = 0; i < nres; i++)
		as_plan_destroy(res[i].plan);
	free(res);
	as_trace_destroy(t);
	return status;
}

static int cmd_check(int argc, char **argv)
{
	const char *trace_path = NULL, *plan_path = NULL;
	enum as_format fmt = AS_FMT_AUTO;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "-f") == 0 && more) {
			if (as_format_from_name(argv[++i], &fmt) != AS_OK)
				return usage_error("unknown format '%s'",
						   argv[i]);
		} else if (strcmp(a, "--plan") == 0 && more) {
			plan_path = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown or incomplete option '%s'",
					   a);
		} else if (!trace_path) {
			trace_path = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (!trace_path)
		return usage_error("check needs a TRACE%s", "");
	struct as_diag d;
	struct as_trace *t;
	struct as_plan *p = NULL;
	if (as_trace_load(trace_path, fmt, &t, &d) != AS_OK)
		return report_diag(&d);
	int status = 0;
	if (plan_path) {
		if (as_plan_read_csv(t, plan_path, &p, &d) != AS_OK)
			status = report_diag(&d);
	} else if (!as_strategy_applies("recorded", t)) {
		fprintf(stderr, "%s: the trace has no offsets of its own; "
				"give a plan with --plan\n",
			trace_path);
		status = EXIT_USAGE;
	} else if (as_strategy_run("recorded", t, NULL, &p, &d) != AS_OK) {
		status = report_diag(&d);
	}
	if (p) {
		struct as_report r;
		if (as_validate(t, p, &r) != AS_OK) {
			fputs("allocscope: out of memory\n", stderr);
			status = EXIT_USAGE;
		} else if (!r.valid) {
			char buf[1024];
			printf("invalid: %llu violations (%llu overlaps); first: "
			       "%s\n",
			       (unsigned long long)r.violations,
			       (unsigned long long)r.overlaps,
			       as_violation_text(t, p, &r.first[0], buf,
						 sizeof(buf)));
			status = EXIT_INVALID;
		} else {
			char hb[32];
			uint64_t peak = as_plan_peak(p, t, -1);
			printf("valid: %u buffers, peak %llu (%s), lower bound "
			       "%llu, %u failed\n",
			       t->nbuffers, (unsigned long long)peak,
			       as_human_bytes(peak, hb, sizeof(hb)),
			       (unsigned long long)as_trace_lower_bound(t),
			       as_plan_failed(p, t));
		}
	}
	as_plan_destroy(p);
	as_trace_destroy(t);
	return status;
}

static int cmd_strategies(void)
{
	for (size_t i = 0; i < as_strategy_count(); i++) {
		const struct as_strategy_info *s = as_strategy_at(i);
		printf("%-16s %-8s %s\n", s->name,
		       s->online ? "online" : "offline", s->summary);
		for (const struct as_option_desc *o = s->options; o && o->key;
		     o++)
			printf("    %s=%s\t%s\n", o->key, o->def, o->help);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("missing command%s", "");
	const char *cmd = argv[1];
	if (strcmp(cmd, "replay") == 0)
		return cmd_replay(argc - 2, argv + 2);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (strcmp(cmd, "strategies") == 0)
		return cmd_strategies();
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	return usage_error("unknown command '%s'", cmd);
}
