/*
 * allocscope: the command-line front end. It parses arguments, calls the
 * library and talks to the user; all the work is in the library.
 *
 * Exit status: 0 all plans valid, 1 some plan invalid, 2 usage or input
 * error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocscope/allocscope.h"
#include "allocscope/compare.h"
#include "allocscope/explain.h"
#include "allocscope/io.h"
#include "allocscope/render.h"
#include "certificate.h"
#include "diff.h"
#include "divergence.h"
#include "explain.h"
#include "shared.h"
#include "tune.h"

#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define MAX_SPECS 64

static const char usage_text[] =
	"usage: allocscope replay TRACE|DIR... [-f FMT] [-s SPEC]...\n"
	"                         [--json FILE|-] [--plan-out FILE] [--dump]\n"
	"                         [-j N] [--no-progress] [--step-limit N]\n"
	"                         [--png FILE] [--svg FILE]\n"
	"                         [--size WxH] [--color-by buffer|size|pool|lifetime|prefix|frame]\n"
	"                         [--time clock|events] [--bands category]\n"
	"                         [--rule NAME=REGEX]...\n"
	"       allocscope check TRACE [-f FMT] [--plan PLAN.csv | -s SPEC]\n"
	"       allocscope check --certificate REPLAY.json [TRACE]\n"
	"       allocscope strategies\n"
	"       allocscope diff BASE.json NEW.json [--metric M] [--max-regress PCT]\n"
	"                       [--markdown FILE] [--svg DIR] [--all]\n"
	"       allocscope diff -s SPEC_A -s SPEC_B TRACE|DIR... [options]\n"
	"       allocscope diff --by stack BASE_TRACE NEW_TRACE [options]\n"
	"       allocscope explain TRACE... [-s SPEC]... [--by stack|frame|...]\n"
	"                          [--top N] [--json FILE|-] [--markdown FILE]\n"
	"       allocscope tune SNAPSHOT... [--set KEY=V1,V2]... [--capacity SIZE]\n"
	"       allocscope view TRACE [viewer options]  (runs allocscope-view)\n"
	"       allocscope --help | --version\n"
	"\n"
	"FMT is ops, json, csv, pickle (a PyTorch memory snapshot), mtrace or\n"
	"heaptrack (default: by extension, then content; .gz and .zst files are\n"
	"decompressed first). A TRACE of - is standard input.\n"
	"--max-input-bytes N|none (every command that reads traces; also\n"
	"ALLOCSCOPE_MAX_INPUT): the most bytes a trace may hold decompressed\n"
	"(default 64G).\n"
	"SPEC is NAME[:key=value[,key=value]...]; without -s the default set\n"
	"runs: every strategy that applies to the trace, the exact baselines\n"
	"only up to a size (see `allocscope strategies`).\n"
	"-j N runs up to N strategies at once (default: one per processor, one\n"
	"at a time above 4,000,000 buffers); the plans are the same.\n"
	"--step-limit N: exact baselines that would take more than N steps are\n"
	"left out (default: the default set's limit without -s, none with -s;\n"
	"0: none, -s runs them to the end). docs/strategies.md says more.\n"
	"check -s SPEC on a recording (cuda-caching on a PyTorch snapshot):\n"
	"where the model's blocks leave the recorded ones (exit 1 when they\n"
	"do).\n";

static int usage_error(const char *fmt, const char *arg)
{
	return cli_usage_error("allocscope", usage_text, fmt, arg);
}

struct result {
	char spec[256];
	struct as_plan *plan;
	struct as_report report;
	uint64_t peak;
	uint32_t failed;
	int check_err;          /* as_validate's */
	/* For the JSON, taken while the offsets are there: the peak moment
	 * (moment_rc: plan_moment's) and each space's peak (plans of several
	 * spaces; NULL: none, or no memory for them). */
	struct as_moment moment;
	int moment_rc;
	uint64_t *space_peak;
};

static double gap_pct(uint64_t peak, uint64_t lb)
{
	return lb ? ((double)peak - (double)lb) * 100.0 / (double)lb : 0.0;
}

/* The peak moment of a plan; of its highest space when it has several. */
static int plan_moment(const struct as_trace *t, const struct as_plan *p,
		       struct as_moment *m)
{
	int space = AS_RENDER_ALL_SPACES;
	uint64_t best = 0;
	uint64_t *each = p->nspaces > 1 ? malloc(p->nspaces * sizeof(*each))
					 : NULL;
	if (each)
		as_plan_peaks(p, t, each);
	for (uint16_t s = 0; p->nspaces > 1 && s < p->nspaces; s++) {
		uint64_t x = each ? each[s] : as_plan_peak(p, t, s);
		if (space < 0 || x > best) {
			best = x;
			space = s;
		}
	}
	free(each);
	return as_plan_peak_moment(t, p, space, m);
}

/* The strategies of a run that stopped at its step limit (left out). */
struct left_out {
	const char *spec[MAX_SPECS];
	size_t n;
	uint64_t step_limit;
};

/*
 * The JSON object of one trace (as_replay_write_json) from the results the
 * checks kept; n is at most MAX_SPECS, one result per -s. A write error
 * shows when the output is committed.
 */
static void write_json(FILE *f, const struct as_trace *t, uint64_t lb,
		       const struct result *r, size_t n,
		       const struct left_out *out)
{
	struct as_replay_result x[MAX_SPECS];
	struct as_moment m;
	bool bound = as_trace_peak_moment(t, AS_RENDER_ALL_SPACES, &m) ==
		     AS_OK;
	for (size_t i = 0; i < n; i++)
		x[i] = (struct as_replay_result){
			r[i].spec, r[i].plan, &r[i].report, r[i].peak,
			r[i].failed,
			r[i].moment_rc == AS_OK ? &r[i].moment.time : NULL,
			r[i].space_peak};
	struct as_replay_run run = {t, lb, bound ? &m.time : NULL, x, n,
				    out->spec, out->n, out->step_limit};
	(void)as_replay_write_json(&run, f);
}

static void print_table(const struct as_trace *t, uint64_t lb,
			const struct result *r, size_t n)
{
	char hb[32];
	printf("trace %s (%s): %u buffers, %llu events, lower bound %llu (%s)\n\n",
	       cli_esc(t->path), t->format, t->nbuffers,
	       (unsigned long long)as_trace_alloc_free_events(t),
	       (unsigned long long)lb, as_human_bytes(lb, hb, sizeof(hb)));
	/* What the reader met and set aside (frees of unknown addresses...). */
	for (uint32_t i = 0; i < t->ninput_stats; i++)
		printf("%s%.0f %s%s", i ? "; " : "input: ",
		       t->input_stats[i].value, t->input_stats[i].key,
		       i + 1 == t->ninput_stats ? "\n\n" : "");
	printf("%-28s %14s %10s %9s %6s %7s %10s\n", "strategy", "peak",
	       "", "vs LB", "valid", "failed", "plan ms");
	for (size_t i = 0; i < n; i++) {
		printf("%-28s %14llu %10s %8.2f%% %6s %7u %10.2f\n",
		       cli_esc(r[i].spec), (unsigned long long)r[i].peak,
		       as_human_bytes(r[i].peak, hb, sizeof(hb)),
		       gap_pct(r[i].peak, lb),
		       r[i].report.valid ? "yes" : "NO", r[i].failed,
		       r[i].plan->plan_ms);
	}
	/* Allocators that model a device's reserved memory (cuda-caching). */
	bool header = false;
	for (size_t i = 0; i < n; i++) {
		const struct as_plan *p = r[i].plan;
		double res = -1, frag = 0, ooms = 0, made = 0, inh = 0,
		       after = -1;
		for (uint32_t k = 0; k < p->nstats; k++) {
			if (strcmp(p->stats[k].key, "reserved_bytes.peak") == 0)
				res = p->stats[k].value;
			else if (strcmp(p->stats[k].key, "reserved_made") == 0)
				made = p->stats[k].value;
			else if (strcmp(p->stats[k].key,
					"reserved_inherited") == 0)
				inh = p->stats[k].value;
			else if (strcmp(p->stats[k].key,
					"reserved_peak_after_release") == 0)
				after = p->stats[k].value;
			else if (strcmp(p->stats[k].key,
					"inherited_released") == 0 &&
				 p->stats[k].value == 0)
				after = -2;
			else if (strcmp(p->stats[k].key,
					"fragmentation_at_peak") == 0)
				frag = p->stats[k].value;
			else if (strcmp(p->stats[k].key, "num_ooms") == 0)
				ooms = p->stats[k].value;
		}
		if (res < 0)
			continue;
		if (!header)
			printf("\n%-28s %14s %10s %14s %10s %6s %10s %10s "
			       "%13s\n",
			       "strategy", "reserved peak", "",
			       "fragmentation", "", "ooms", "made",
			       "inherited", "after release");
		header = true;
		/* made: the peak of what the model reserved itself;
		 * inherited: reserved at the first event; after release: the
		 * reserved peak from the program's empty_cache() that gave
		 * inherited memory back */
		char hf[32], hm[32], hi[32], ha[32] = "-";
		if (after >= 0)
			as_human_bytes((uint64_t)after, ha, sizeof(ha));
		printf("%-28s %14.0f %10s %14.0f %10s %6.0f %10s %10s %13s\n",
		       cli_esc(r[i].spec), res,
		       as_human_bytes((uint64_t)res, hb, sizeof(hb)), frag,
		       as_human_bytes((uint64_t)frag, hf, sizeof(hf)), ooms,
		       as_human_bytes((uint64_t)made, hm, sizeof(hm)),
		       as_human_bytes((uint64_t)inh, hi, sizeof(hi)), ha);
	}
	if (header)
		printf("(reserved: whole segments, as PyTorch's allocator takes "
		       "them: 2 MiB for requests up to 1 MiB, 20 MiB under 10 "
		       "MiB; on small tensors the peak is mostly segment size)\n");
	/* The memory limits runs used, and where they came from. */
	const size_t np = strlen(AS_NOTE_CAPACITY);
	header = false;
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < r[i].plan->nnotes; k++)
			if (strncmp(r[i].plan->notes[k], AS_NOTE_CAPACITY,
				    np) == 0) {
				printf("%s%-28s %s\n", header ? "" : "\n",
				       r[i].spec, r[i].plan->notes[k]);
				header = true;
			}
	/* Certified bounds: how far above the optimum a plan is at most. */
	header = false;
	for (size_t i = 0; i < n; i++)
		header |= cli_print_certificates(t, r[i].spec, r[i].plan,
						  r[i].space_peak, r[i].peak,
						  header);
}

/* Dump lines quote buffer names: escaped. Runs with emit go one at a
 * time (as_runner_options.emit), so cli_esc's slots are not shared. */
static void emit_line(void *ctx, const char *line)
{
	fprintf((FILE *)ctx, "%s\n", cli_esc(line));
}

/* --png/--svg (paths[0], paths[1]): one picture of every result; bands:
 * --bands category's options (its --rule's), NULL without it. */
static int write_images(const char *const *paths, size_t npaths,
			const struct as_trace *t, const struct result *res,
			size_t nres, const struct as_render_opts *ro,
			const struct as_explain_options *bands)
{
	struct as_render_panel *pn = calloc(nres + 1, sizeof(*pn));
	int status = pn ? 0 : EXIT_USAGE;
	/* --bands category: the bytes live per explain category. */
	struct as_render_opts bo = *ro;
	const struct as_render_opts *o = &bo;
	uint8_t *group = bands ? malloc((size_t)t->nbuffers + 1) : NULL;
	const char *names[64];
	if (bands && group &&
	    as_explain_buffer_categories(t, bands, group, names, 64,
					 &bo.ngroups) == AS_OK) {
		bo.buffer_group = group;
		bo.group_names = names;
	} else if (bands) {
		pn = (free(pn), NULL); /* nothing drawn */
		status = EXIT_USAGE;
	}
	if (!pn)
		fputs("allocscope: out of memory\n", stderr);
	for (size_t i = 0; pn && i < nres; i++)
		pn[i] = (struct as_render_panel){res[i].spec, t, res[i].plan,
						 &res[i].report,
						 AS_RENDER_ALL_SPACES};
	for (size_t i = 0; pn && i < npaths; i++) {
		struct as_diag d = {0};
		if (paths[i] && as_render_file(paths[i], i ? AS_IMAGE_SVG
							   : AS_IMAGE_PNG,
					       pn, nres, o, &d))
			status = cli_report_diag(&d, AS_EIO);
	}
	free(pn);
	free(group);
	return status;
}

/* The options of one replay run, the same for every trace. */
struct replay_opts {
	const struct as_load_options *load;
	const char **specs;
	size_t nspecs;          /* 0: every strategy that applies */
	const char *plan_out;
	bool step_limit_set;    /* --step-limit, else the default set's */
	uint64_t step_limit;
	const char *images[2];  /* --png, --svg (one trace only) */
	struct as_render_opts ropts;
	bool bands;             /* --bands category */
	struct as_explain_options categories; /* its --rule's */
	struct as_explain_rule rules[CLI_MAX_RULES];
	struct as_runner_options run; /* -j, --dump; the step limit per trace */
	FILE *json;             /* NULL: print tables */
	FILE *plan_f;           /* --plan-out, opened before any work */
	bool first;             /* no run written yet */
	struct cli_progress progress;
};

/*
 * The default set for t into specs (MAX_SPECS), returning its size. The
 * strategies it leaves out at this trace's size are named on stderr.
 */
static size_t default_set(const struct as_trace *t, const char *path,
			  const char **specs, struct cli_progress *progress)
{
	char out[256] = "";
	size_t n = 0, len = 0;
	for (size_t i = 0; i < as_strategy_count() && n < MAX_SPECS; i++) {
		const char *name = as_strategy_at(i)->name;
		if (as_strategy_by_default(name, t))
			specs[n++] = name;
		else if (as_strategy_applies(name, t) && len < sizeof(out))
			len += (size_t)snprintf(out + len, sizeof(out) - len,
						"%s%s", len ? ", " : "", name);
	}
	if (len) {
		cli_progress_end(progress);
		fprintf(stderr,
			"%s: not in the default set at this size: %s (see "
			"`allocscope strategies`; -s NAME runs it)\n",
			cli_esc(path), out);
	}
	return n;
}

/*
 * Each plan is checked on the thread that made it, as soon as it is made
 * (as_many_hooks.done), beside the runs still going: res[i] is spec i's.
 */
struct checks {
	const struct as_trace *t;
	struct result *res;
	bool json;              /* the JSON is written (struct result) */
	bool summaries;         /* no output needs a plan's offsets */
};

static void check_plan(void *ctx, size_t i, int err, struct as_plan *plan,
		       const struct as_diag *diag)
{
	struct checks *c = ctx;
	struct result *r = &c->res[i];
	(void)err;
	(void)diag;
	r->plan = plan;
	if (!plan)
		return;
	r->check_err = as_validate(c->t, plan, &r->report);
	r->peak = as_plan_peak(plan, c->t, -1);
	r->failed = as_plan_failed(plan, c->t);
	if (c->json)
		r->moment_rc = plan_moment(c->t, plan, &r->moment);
	/* Each space's peak: the JSON's, and the table's certified bounds. */
	if ((c->json || plan->ncerts) && plan->nspaces > 1 &&
	    (r->space_peak = malloc(plan->nspaces * sizeof(uint64_t))))
		as_plan_peaks(plan, c->t, r->space_peak);
	/* Of a valid plan the table and the JSON need only that: its offsets
	 * go now, not after the last run (10^7 buffers: 8-32 bytes each a
	 * plan). */
	if (c->summaries && r->check_err == AS_OK && r->report.valid &&
	    (!c->json || plan->nspaces <= 1 || r->space_peak))
		as_plan_drop_buffers(plan);
}

/* Replay one trace; returns 0, EXIT_INVALID or EXIT_USAGE. */
static int replay_trace(const char *trace_path, struct replay_opts *o)
{
	struct as_diag d;
	struct as_trace *t;
	const char *specs[MAX_SPECS];
	size_t nspecs = o->nspecs;
	struct as_runner_options ro = o->run;
	struct as_runner *runner = NULL;
	struct left_out out = {.n = 0};
	int lerr = as_trace_load_opts(trace_path, o->load, &t, &d);
	if (lerr != AS_OK) {
		cli_progress_end(&o->progress);
		return cli_report_diag(&d, lerr);
	}
	if (nspecs) {
		memcpy(specs, o->specs, nspecs * sizeof(*specs));
	} else {
		nspecs = default_set(t, trace_path, specs, &o->progress);
		ro.step_limit = as_strategy_step_limit(t);
	}
	if (o->step_limit_set)
		ro.step_limit = o->step_limit;
	out.step_limit = ro.step_limit;

	struct result *res = calloc(nspecs + 1, sizeof(*res));
	struct as_diag *diags = calloc(nspecs + 1, sizeof(*diags));
	struct checks c = {t, res, o->json != NULL,
			   !o->images[0] && !o->images[1] && !o->plan_f};
	struct as_many_hooks mh = {.done = check_plan, .ctx = &c};
	struct as_plan **plans = calloc(nspecs + 1, sizeof(*plans));
	int status = res && diags && plans &&
				     as_runner_create(t, &ro, &runner) == AS_OK
			     ? 0
			     : EXIT_USAGE;
	size_t nres = 0;
	if (status)
		fputs("allocscope: out of memory\n", stderr);
	else
		as_runner_run_many(runner, specs, nspecs, &mh, plans, diags);
	as_runner_destroy(runner);
	/* In order, up to the first that failed; those that stopped at the
	 * step limit are left out, and the plans made move to the front of
	 * res[], in order. An invalid plan is named and shown with the rest:
	 * the trace's own offsets overlapping is when the others matter. */
	for (size_t i = 0; status != EXIT_USAGE && i < nspecs; i++) {
		struct result r = res[i];
		res[i].plan = NULL;
		res[i].space_peak = NULL;
		if (!r.plan && diags[i].err == AS_ELIMIT) {
			out.spec[out.n++] = specs[i];
			continue;
		}
		if (!r.plan) {
			cli_progress_end(&o->progress);
			status = cli_report_diag(&diags[i], diags[i].err);
			break;
		}
		snprintf(r.spec, sizeof(r.spec), "%s", specs[i]);
		res[nres++] = r;
		if (r.check_err != AS_OK) {
			fputs("allocscope: out of memory\n", stderr);
			status = EXIT_USAGE;
			break;
		}
		if (!r.report.valid) {
			char buf[1024];
			cli_progress_end(&o->progress);
			fprintf(stderr, "%s: %s: invalid plan: %s\n",
				cli_esc(trace_path), cli_esc(specs[i]),
				cli_esc(as_violation_text(t, r.plan,
							  &r.report.first[0],
							  buf, sizeof(buf))));
			status = EXIT_INVALID;
		}
	}
	for (size_t i = nres; res && i < nspecs; i++) {
		as_plan_destroy(res[i].plan);
		free(res[i].space_peak);
	}
	free(plans);
	free(diags);
	if (out.n && status != EXIT_USAGE) {
		cli_progress_end(&o->progress);
		fprintf(stderr, "%s: left out at the step limit of %llu steps:",
			cli_esc(trace_path),
			(unsigned long long)out.step_limit);
		for (size_t i = 0; i < out.n; i++)
			fprintf(stderr, "%s %s", i ? "," : "",
				cli_esc(out.spec[i]));
		fputs(" (-s NAME without --step-limit runs it to the end)\n",
		      stderr);
	}
	cli_progress_step(&o->progress, trace_path);
	uint64_t lb = as_trace_lower_bound(t);
	if (status != EXIT_USAGE) {
		if (o->json) {
			if (!o->first)
				fputs(",\n", o->json);
			write_json(o->json, t, lb, res, nres, &out);
		} else {
			if (!o->first)
				putchar('\n');
			print_table(t, lb, res, nres);
		}
		o->first = false;
	}
	if ((o->images[0] || o->images[1]) && status != EXIT_USAGE &&
	    write_images(o->images, 2, t, res, nres, &o->ropts,
			 o->bands ? &o->categories : NULL) != 0)
		status = EXIT_USAGE;
	int werr;
	if (o->plan_f && status != EXIT_USAGE && nres == 1 &&
	    (werr = as_plan_write_csv(res[0].plan, t, o->plan_f)) != AS_OK) {
		fprintf(stderr, "%s: cannot write the plan: %s\n",
			cli_esc(o->plan_out), as_strerror(werr));
		status = EXIT_USAGE;
	}
	for (size_t i = 0; i < nres; i++) {
		as_plan_destroy(res[i].plan);
		free(res[i].space_peak);
	}
	free(res);
	as_trace_destroy(t);
	return status;
}

/*
 * replay TRACE... : with one trace file, the JSON is one object
 * {"trace", "results"} as it always was; with several traces or a
 * directory it is {"format": "allocscope-results", "version": 1,
 * "runs": [{"trace", "results"}, ...]} (docs/diff.md).
 */
static int cmd_replay(int argc, char **argv)
{
	const char *json = NULL;
	const char *specs[MAX_SPECS];
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	size_t nspecs = 0, nargs = 0;
	struct as_load_options lo;
	bool dump = false, progress = true;
	struct replay_opts o = {.first = true, .load = &lo};
	if (!args) {
		fputs("allocscope: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	if (cli_load_init(&lo)) {
		free(args);
		return EXIT_USAGE;
	}
	as_render_opts_init(&o.ropts);
	as_explain_options_init(&o.categories);
	o.ropts.min_plot_height = 110; /* unless --size: taller, not cramped */
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		int bad = 0;
		if (strcmp(a, "-f") == 0 && more) {
			if (!as_format_known(lo.format = argv[++i]))
				bad = usage_error("unknown format '%s'",
						  argv[i]);
		} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
			bad = cli_max_input(argv[++i], &lo);
		} else if (strcmp(a, "-s") == 0 && more) {
			if (nspecs == MAX_SPECS)
				bad = usage_error("too many -s (%s)", "64");
			else
				specs[nspecs++] = argv[++i];
		} else if (strcmp(a, "--json") == 0 && more) {
			json = argv[++i];
		} else if (strcmp(a, "--plan-out") == 0 && more) {
			o.plan_out = argv[++i];
		} else if (strcmp(a, "--dump") == 0) {
			dump = true;
		} else if (strcmp(a, "--step-limit") == 0 && more) {
			if (!cli_parse_u64(argv[++i], &o.step_limit))
				bad = usage_error("--step-limit wants a number "
						  "of steps, not '%s'", argv[i]);
			o.step_limit_set = true;
		} else if (strcmp(a, "--no-progress") == 0) {
			progress = false;
		} else if ((strcmp(a, "-j") == 0 ||
			    strcmp(a, "--jobs") == 0) && more) {
			if (!cli_parse_jobs(argv[++i], &o.run.jobs))
				bad = usage_error("-j wants 1 to 64 strategies "
						  "at once, not '%s'", argv[i]);
		} else if ((strcmp(a, "--png") == 0 ||
			    strcmp(a, "--svg") == 0) && more) {
			o.images[a[2] == 's'] = argv[++i];
		} else if (strcmp(a, "--size") == 0 && more) {
			if (as_render_parse_size(argv[++i], &o.ropts.width,
						 &o.ropts.height) != AS_OK)
				bad = usage_error("--size wants WxH, each 200 "
						  "to 16384, not '%s'", argv[i]);
			o.ropts.min_plot_height = 0;
		} else if (strcmp(a, "--color-by") == 0 && more) {
			if (as_color_by_from_name(argv[++i], &o.ropts.color_by))
				bad = usage_error("--color-by wants buffer, prefix, frame, "
						  "size, pool or lifetime, not "
						  "'%s'", argv[i]);
		} else if (strcmp(a, "--bands") == 0 && more) {
			o.bands = strcmp(argv[++i], "category") == 0;
			if (!o.bands)
				bad = usage_error("--bands wants category, not "
						  "'%s'", argv[i]);
		} else if (strcmp(a, "--rule") == 0 && more) {
			bad = cli_category_rule("allocscope", usage_text,
						argv[++i], &o.categories,
						o.rules);
		} else if (strcmp(a, "--time") == 0 && more) {
			const char *v = argv[++i];
			if (strcmp(v, "events") == 0 || strcmp(v, "clock") == 0)
				o.ropts.time_events = v[0] == 'e';
			else
				bad = usage_error("--time wants clock or events, "
						  "not '%s'", v);
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			free(args);
			fputs(usage_text, stdout);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			bad = usage_error("unknown option, or one missing its "
					  "value: '%s'",
					  a);
		} else {
			args[nargs++] = argv[i];
		}
		if (bad) {
			free(args);
			return bad;
		}
	}
	if (!nargs) {
		free(args);
		return usage_error("replay needs a TRACE%s", "");
	}
	/* One destination, one output. */
	const char *outs[] = {json, o.plan_out, o.images[0], o.images[1]};
	for (int x = 0; x < 4; x++)
		for (int y = x + 1; y < 4; y++)
			if (outs[x] && outs[y] && strcmp(outs[x], outs[y]) == 0) {
				free(args);
				return usage_error("two outputs go to '%s'",
						   outs[x]);
			}
	if (o.categories.nrules && !o.bands) {
		free(args);
		return usage_error("--rule names a category of --bands "
				   "category%s", "");
	}
	bool multi = nargs > 1 || cli_is_dir(args[0]);
	if ((o.images[0] || o.images[1]) && multi) {
		free(args);
		return usage_error("--png and --svg draw one TRACE%s", "");
	}
	if (o.plan_out && (nspecs != 1 || multi)) {
		free(args);
		return usage_error("--plan-out needs exactly one -s and one "
				   "TRACE%s",
				   "");
	}
	char **paths = NULL;
	size_t npaths = 0;
	struct as_diag d;
	int err = cli_expand_traces(args, nargs, lo.format != NULL, &paths,
				    &npaths, &d);
	free(args);
	if (err != AS_OK)
		return cli_report_diag(&d, err);
	if (cli_check_outputs(outs, 4, (const char *const *)paths, npaths)) {
		cli_paths_free(paths, npaths);
		return EXIT_USAGE;
	}

	o.specs = specs;
	o.nspecs = nspecs;
	o.run = (struct as_runner_options){
		.jobs = o.run.jobs,
		.emit = dump ? emit_line : NULL,
		.ctx = json && strcmp(json, "-") == 0 ? stderr : stdout,
		.dump_at_end = dump,
	};
	/* Outputs are opened before any work, so a bad path costs nothing. */
	struct as_atomic *a = NULL, *pa = NULL;
	int status = 0;
	if ((json && as_atomic_open(json, &a, &o.json) != AS_OK) ||
	    (o.plan_out && as_atomic_open(o.plan_out, &pa, &o.plan_f) != AS_OK)) {
		fprintf(stderr, "%s: cannot write: %s\n",
			cli_esc(a || !json ? o.plan_out : json),
			strerror(errno));
		as_atomic_abort(a);
		cli_paths_free(paths, npaths);
		return EXIT_USAGE;
	}
	if (o.json && multi)
		fputs("{\"format\": \"allocscope-results\", \"version\": 1, "
		      "\"runs\": [\n",
		      o.json);
	cli_progress_start(&o.progress, npaths, progress);
	for (size_t i = 0; i < npaths && status != EXIT_USAGE; i++) {
		int s = replay_trace(paths[i], &o);
		if (s > status)
			status = s;
	}
	cli_progress_end(&o.progress);
	if (o.json && multi)
		fputs("]}\n", o.json);
	if (a && status == EXIT_USAGE) {
		as_atomic_abort(a);
	} else if (a && as_atomic_commit(a) != AS_OK) {
		fprintf(stderr, "%s: write failed: %s\n", cli_esc(json),
			strerror(errno));
		status = EXIT_USAGE;
	}
	if (pa && status == EXIT_USAGE) {
		as_atomic_abort(pa);
	} else if (pa && as_atomic_commit(pa) != AS_OK) {
		fprintf(stderr, "%s: write failed: %s\n",
			cli_esc(o.plan_out), strerror(errno));
		status = EXIT_USAGE;
	}
	cli_paths_free(paths, npaths);
	return status;
}

static int cmd_check(int argc, char **argv)
{
	const char *trace_path = NULL, *plan_path = NULL, *spec = NULL;
	const char *cert_path = NULL;
	struct as_load_options lo;
	if (cli_load_init(&lo))
		return EXIT_USAGE;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "-f") == 0 && more) {
			if (!as_format_known(lo.format = argv[++i]))
				return usage_error("unknown format '%s'",
						   argv[i]);
		} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
			if (cli_max_input(argv[++i], &lo))
				return EXIT_USAGE;
		} else if (strcmp(a, "--plan") == 0 && more) {
			plan_path = argv[++i];
		} else if (strcmp(a, "-s") == 0 && more) {
			spec = argv[++i];
		} else if (strcmp(a, "--certificate") == 0 && more) {
			cert_path = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown or incomplete option '%s'",
					   a);
		} else if (!trace_path) {
			trace_path = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (cert_path && (spec || plan_path))
		return usage_error("check takes --certificate alone, or with "
				   "its TRACE%s", "");
	if (cert_path)
		return cli_check_certificate(cert_path, trace_path, &lo,
					     60000);
	if (!trace_path)
		return usage_error("check needs a TRACE%s", "");
	if (spec && plan_path)
		return usage_error("check takes --plan or -s, not both%s", "");
	struct as_diag d;
	struct as_trace *t;
	struct as_plan *p = NULL;
	/* The plan is checked first: a FIFO or /dev/zero costs nothing. */
	int err = plan_path ? cli_check_input(plan_path, false, &d) : AS_OK;
	if (err != AS_OK)
		return cli_report_diag(&d, err);
	if ((err = as_trace_load_opts(trace_path, &lo, &t, &d)) != AS_OK)
		return cli_report_diag(&d, err);
	int status = 0;
	if (spec) {
		/* where the model leaves the recording */
		if ((err = as_strategy_run(spec, t, NULL, &p, &d)) != AS_OK)
			status = cli_report_diag(&d, err);
		else
			status = cli_divergence_report(t, spec, p);
		as_plan_destroy(p);
		as_trace_destroy(t);
		return status;
	}
	if (plan_path) {
		if ((err = as_plan_read_csv(t, plan_path, &p, &d)) != AS_OK)
			status = cli_report_diag(&d, err);
	} else if (!as_strategy_applies("recorded", t)) {
		fprintf(stderr, "%s: the trace has no offsets of its own; "
				"give a plan with --plan\n",
			cli_esc(trace_path));
		status = EXIT_USAGE;
	} else if ((err = as_strategy_run("recorded", t, NULL, &p, &d)) !=
		   AS_OK) {
		status = cli_report_diag(&d, err);
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
			       cli_esc(as_violation_text(t, p, &r.first[0],
							 buf, sizeof(buf))));
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
		printf("    time: %s\n", as_strategy_time(i));
		for (const struct as_option_desc *o = s->options; o && o->key;
		     o++)
			printf("    %s=%s\t%s\n", o->key, o->def, o->help);
	}
	return 0;
}

/*
 * view ARGS...: the viewer, allocscope-view, with the same arguments. It is
 * looked for beside this program (and in viewer/ beside it, as in the build
 * tree), then on PATH.
 */
static int cmd_view(char **argv)
{
	char self[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	argv[0] = "allocscope-view";
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			const char *rel[] = {"allocscope-view",
					     "viewer/allocscope-view"};
			for (int i = 0; i < 2; i++) {
				snprintf(path, sizeof(path), "%s/%s", self,
					 rel[i]);
				if (access(path, X_OK) == 0)
					execv(path, argv);
			}
		}
	}
	execvp("allocscope-view", argv);
	fprintf(stderr, "allocscope: cannot run allocscope-view (beside "
			"allocscope or on PATH): %s\n",
		strerror(errno));
	return EXIT_USAGE;
}

/*
 * The signals whose default action ends the process and that a handler can
 * catch. SIGINT and SIGTERM are caught even when the process starts with
 * them ignored, as this program always did (a shell ignores SIGINT in a
 * script's background jobs, and `kill -INT $!` is how a script stops one);
 * the others keep an ignore they inherit (nohup's SIGHUP, a shell's
 * SIGQUIT, a SIGPIPE a caller set aside).
 */
static const struct {
	int sig;
	bool always;
} caught[] = {
	{SIGINT, true},	 {SIGTERM, true}, {SIGHUP, false},   {SIGQUIT, false},
	{SIGUSR1, false}, {SIGUSR2, false}, {SIGALRM, false},  {SIGXCPU, false},
	{SIGXFSZ, false}, {SIGPIPE, false}, {SIGVTALRM, false}, {SIGPROF, false},
};

/*
 * A terminating signal: no temporary file is left behind, then the signal
 * is raised again with its default action, so the process ends as the
 * signal would have ended it (a shell sees 128 + N; SIGQUIT, SIGXCPU and
 * SIGXFSZ dump core where cores are on). Async-signal-safe throughout.
 */
static void on_signal(int sig)
{
	as_atomic_remove_pending();
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* delivered here */
	_exit(128 + sig); /* not reached */
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	/* One handler at a time: a second signal waits for the first. */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaddset(&sa.sa_mask, caught[i].sig);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++) {
		struct sigaction old;
		if (!caught[i].always &&
		    sigaction(caught[i].sig, NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(caught[i].sig, &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	catch_signals();
	cli_close_std_at_exit();
	if (argc < 2)
		return usage_error("missing command%s", "");
	const char *cmd = argv[1];
	if (strcmp(cmd, "replay") == 0)
		return cmd_replay(argc - 2, argv + 2);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (strcmp(cmd, "strategies") == 0)
		return cmd_strategies();
	if (strcmp(cmd, "diff") == 0)
		return cli_diff(argc - 2, argv + 2);
	if (strcmp(cmd, "explain") == 0)
		return cli_explain(argc - 2, argv + 2);
	if (strcmp(cmd, "tune") == 0)
		return cli_tune(argc - 2, argv + 2);
	if (strcmp(cmd, "view") == 0)
		return cmd_view(argv + 1);
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("allocscope %s\n", AS_VERSION);
		return 0;
	}
	return usage_error("unknown command '%s'", cmd);
}
