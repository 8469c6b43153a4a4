/*
 * allocscope diff: the command. It reads or produces two result sets,
 * hands them to the library's comparison (src/compare/compare.c) and reports: a
 * table on stdout, optionally Markdown for CI and (with -s) pictures of the
 * two plans through the renderer. All matching and classifying is in the
 * library; this file parses arguments and prints.
 *
 * Exit status: 0 no regression, 1 some row regressed (or became invalid, or
 * failed more allocations), 2 usage or input error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "allocscope/allocscope.h"
#include "allocscope/compare.h"
#include "allocscope/io.h"
#include "allocscope/render.h"
#include "diff.h"
#include "explain.h"
#include "shared.h"

#define EXIT_REGRESSED 1
#define EXIT_USAGE 2

static const char diff_usage[] =
	"usage: allocscope diff BASE.json NEW.json [options]\n"
	"       allocscope diff -s SPEC_A -s SPEC_B TRACE|DIR... [-f FMT] "
	"[options]\n"
	"       allocscope diff --by stack|frame|... BASE_TRACE NEW_TRACE "
	"(allocscope explain --help)\n"
	"\n"
	"BASE and NEW are files written by 'allocscope replay --json' (-:\n"
	"standard input); with two -s, both strategies run on the same traces\n"
	"(A is the base).\n"
	"\n"
	"options:\n"
	"  --metric M          peak (default), peak_vs_lb, failed or plan_ms\n"
	"  --max-regress PCT   a row regresses when the metric grows by more\n"
	"                      than PCT percent (default 0; plan_ms: 10)\n"
	"  --noise-ms MS       plan_ms only: also needs a slowdown above MS\n"
	"                      milliseconds (default 2)\n"
	"  --fail-missing      rows of BASE missing from NEW fail too\n"
	"  --markdown FILE     write a Markdown report (regressions first)\n"
	"  --svg DIR           with -s: for each trace whose peak changed,\n"
	"                      DIR/<trace>.svg with plan A above plan B\n"
	"  --all               list unchanged rows too\n"
	"  -j N                with -s: run A and B side by side when N > 1\n"
	"                      (default: one per processor, one at a time\n"
	"                      above 4,000,000 buffers)\n"
	"  --no-progress       no progress bar on stderr\n"
	"  --max-input-bytes N|none  with -s: the most bytes a trace may hold\n"
	"                      decompressed (default 64G; ALLOCSCOPE_MAX_INPUT)\n"
	"\n"
	"exit status: 0 no regression, 1 regression or invalid plan, 2 bad "
	"input\n";

static int diff_usage_error(const char *fmt, const char *arg)
{
	return cli_usage_error("allocscope diff", diff_usage, fmt, arg);
}

/* ---- The visual diff ---- */

/* The picture of trace `trace` in DIR: DIR/<its path with '/' as '_'>.svg. */
static void svg_path(const char *dir, const char *trace, char *path,
		     size_t len)
{
	char name[512];
	snprintf(name, sizeof(name), "%s", trace);
	for (char *q = name; *q; q++)
		if (*q == '/' || *q == '\\')
			*q = '_';
	snprintf(path, len, "%s/%s.svg", dir, name);
}

/*
 * The picture of one trace: plan A above plan B, drawn by the renderer
 * (which marks each plan's peak and lists the buffers live at it), the
 * buffer that reaches B's peak highlighted in both panels and the number
 * of buffers that moved in B's title. The renderer highlights one buffer,
 * so the moved ones are counted, not outlined. Written atomically to
 * DIR/<trace path with '/' as '_'>.svg. Prints its own errors.
 */
static int write_visual_diff(const char *dir, const struct as_trace *t,
			     const char *spec_a, const struct as_plan *pa,
			     const char *spec_b, const struct as_plan *pb)
{
	struct as_plan_delta delta;
	int err = as_plan_delta(t, pa, pb, NULL, &delta);
	if (err != AS_OK) {
		fprintf(stderr, "%s: visual diff: %s\n", cli_esc(t->path),
			as_strerror(err));
		return err;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "%s: cannot create: %s\n", cli_esc(dir),
			strerror(errno));
		return AS_EIO;
	}
	char path[1024], ta[320], tb[480];
	svg_path(dir, t->path, path, sizeof(path));
	snprintf(ta, sizeof(ta), "base: %s", spec_a);
	const char *peak_name = delta.peak_buffer == AS_NONE
					? "none"
					: as_trace_buffer_name(t, delta.peak_buffer);
	snprintf(tb, sizeof(tb), "new: %s, %u buffers moved, peak reached by %s",
		 spec_b, delta.moved, peak_name ? peak_name : "?");
	struct as_render_panel pn[2] = {
		{ta, t, pa, NULL, AS_RENDER_ALL_SPACES},
		{tb, t, pb, NULL, AS_RENDER_ALL_SPACES},
	};
	struct as_render_opts o;
	as_render_opts_init(&o);
	o.highlight = delta.peak_buffer;
	struct as_diag d = {0};
	err = as_render_file(path, AS_IMAGE_SVG, pn, 2, &o, &d);
	if (err != AS_OK) {
		cli_report_diag(&d, err);
		return err;
	}
	fprintf(stderr, "visual diff: %s\n", cli_esc(path));
	return AS_OK;
}

/* ---- Running two strategies on traces (diff -s A -s B) ---- */

/* Validate SPEC's plan p of t, append the row; then p is *out's. */
static int add_one(struct as_results *r, const struct as_trace *t,
		   const char *spec, struct as_plan *p, struct as_plan **out,
		   struct as_diag *d)
{
	struct as_report rep;
	int err = as_validate(t, p, &rep);
	if (err == AS_OK)
		err = as_results_add_plan(r, t, spec, p, &rep);
	if (err != AS_OK) {
		snprintf(d->msg, sizeof(d->msg), "%s: %s", spec,
			 as_strerror(err));
		d->line = 0;
		return err;
	}
	*out = p;
	return AS_OK;
}

/*
 * Before any work: the Markdown report and every picture --svg DIR could
 * write (one a trace) against the traces. 0 or 2 (said on stderr).
 */
static int check_outputs(const char *markdown, const char *svg_dir,
			 char **paths, size_t npaths)
{
	size_t n = 1 + (svg_dir ? npaths : 0);
	char **outs = calloc(n, sizeof(*outs));
	char *names = calloc(n, 1024);
	if (!outs || !names) {
		free(outs);
		free(names);
		fputs("allocscope diff: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	outs[0] = (char *)markdown;
	for (size_t i = 1; i < n; i++) {
		outs[i] = names + 1024 * i;
		svg_path(svg_dir, paths[i - 1], outs[i], 1024);
	}
	int status = cli_check_outputs((const char *const *)outs, n,
				       (const char *const *)paths, npaths);
	free(outs);
	free(names);
	return status;
}

static int run_specs(char **args, size_t nargs,
		     const struct as_load_options *lo,
		     const char *const specs[2], unsigned jobs, bool progress,
		     const char *svg_dir, const char *markdown,
		     struct as_results *a, struct as_results *b)
{
	const char *spec_a = specs[0], *spec_b = specs[1];
	char **paths;
	size_t npaths;
	struct as_diag d;
	int err = cli_expand_traces(args, nargs, lo->format != NULL, &paths,
				    &npaths, &d);
	if (err != AS_OK)
		return cli_report_diag(&d, err);
	struct cli_progress pr;
	int status = check_outputs(markdown, svg_dir, paths, npaths);
	if (status) {
		cli_paths_free(paths, npaths);
		return status;
	}
	cli_progress_start(&pr, npaths, progress);
	for (size_t i = 0; i < npaths && !status; i++) {
		struct as_trace *t;
		struct as_plan *pa = NULL, *pb = NULL;
		if ((err = as_trace_load_opts(paths[i], lo, &t, &d)) != AS_OK) {
			cli_progress_end(&pr);
			status = cli_report_diag(&d, err);
			break;
		}
		/* The two side by side; a failure is reported for the first. */
		struct as_plan *p[2] = {NULL, NULL};
		struct as_diag pd[2];
		memset(pd, 0, sizeof(pd));
		struct as_runner_options ro = {.jobs = jobs};
		struct as_runner *r = NULL;
		if (as_runner_create(t, &ro, &r) == AS_OK)
			as_runner_run_many(r, specs, 2, NULL, p, pd);
		else
			snprintf(pd[0].msg, sizeof(pd[0].msg), "%s: %s",
				 paths[i], as_strerror(AS_ENOMEM));
		as_runner_destroy(r);
		const struct as_diag *fail = !p[0] ? &pd[0] : !p[1] ? &pd[1]
								    : NULL;
		if (fail || add_one(a, t, spec_a, p[0], &pa, &d) != AS_OK ||
		    add_one(b, t, spec_b, p[1], &pb, &d) != AS_OK) {
			cli_progress_end(&pr);
			status = cli_report_diag(fail ? fail : &d,
						 fail ? fail->err : AS_ENOMEM);
			if (!pa)
				as_plan_destroy(p[0]);
			if (!pb)
				as_plan_destroy(p[1]);
		} else if (svg_dir && a->rows[a->nrows - 1].peak !=
					      b->rows[b->nrows - 1].peak) {
			cli_progress_end(&pr);
			if (write_visual_diff(svg_dir, t, spec_a, pa, spec_b,
					      pb) != AS_OK)
				status = EXIT_USAGE;
		}
		as_plan_destroy(pa);
		as_plan_destroy(pb);
		as_trace_destroy(t);
		cli_progress_step(&pr, paths[i]);
	}
	cli_progress_end(&pr);
	cli_paths_free(paths, npaths);
	return status;
}

/* ---- Printing ---- */

/* The width of name s as printed (escaped), at most cap. */
static int width_of(const char *s, int cap)
{
	size_t n = as_escape(NULL, 0, s, AS_ESCAPE_TEXT);
	return n > (size_t)cap ? cap : (int)n;
}

static void print_row(const struct as_comparison *c,
		      const struct as_compare_row *r, int stw, int tw, int sw)
{
	enum as_metric m = c->opts.metric;
	char bbuf[48], nbuf[48], ch[64] = "-", pct[48] = "-";
	char strat[1024];
	/* Names from a results file: escaped, as everything printed. */
	const char *trace = r->base ? r->base->trace : r->new_->trace;
	const char *bv = as_compare_value(c, r, false, bbuf, sizeof(bbuf));
	const char *nv = as_compare_value(c, r, true, nbuf, sizeof(nbuf));
	if (as_compare_row_paired(r)) {
		char abs[48];
		as_metric_format(m, fabs(r->change), abs, sizeof(abs));
		snprintf(ch, sizeof(ch), "%s%s",
			 r->change > 0 ? "+" : r->change < 0 ? "-" : "", abs);
		if (r->pct_infinite)
			snprintf(pct, sizeof(pct), "new");
		else
			snprintf(pct, sizeof(pct), "%+.2f%%", r->change_pct);
	}
	if (r->base && r->new_ &&
	    strcmp(r->base->strategy, r->new_->strategy) != 0)
		snprintf(strat, sizeof(strat), "%s -> %s",
			 cli_esc(r->base->strategy), cli_esc(r->new_->strategy));
	else
		snprintf(strat, sizeof(strat), "%s",
			 cli_esc(r->base ? r->base->strategy
					 : r->new_->strategy));
	char status[32];
	snprintf(status, sizeof(status), "%s", as_change_name(r->status));
	if (as_compare_row_fails(c, r))
		for (char *p = status; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
	printf("%-*s %-*s %-*s %12s %12s %12s %9s", stw, status, tw,
	       cli_esc(trace), sw, strat, bv ? bv : "-", nv ? nv : "-", ch, pct);
	if (as_compare_row_paired(r) && r->base->failed != r->new_->failed)
		printf("  failed %llu -> %llu",
		       (unsigned long long)r->base->failed,
		       (unsigned long long)r->new_->failed);
	if (r->new_ && !r->new_->valid)
		printf("  invalid plan (%llu violations)",
		       (unsigned long long)r->new_->violations);
	putchar('\n');
}

static int print_comparison(const struct as_comparison *c, bool all)
{
	size_t *order = malloc((c->nrows + 1) * sizeof(*order));
	if (!order || as_comparison_order(c, order) != AS_OK) {
		free(order);
		fputs("allocscope diff: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	int stw = 12, tw = 5, sw = 8;
	for (size_t i = 0; i < c->nrows; i++) {
		const struct as_compare_row *r = &c->rows[i];
		int st = width_of(as_change_name(r->status), 31);
		stw = st > stw ? st : stw;
		const char *t = r->base ? r->base->trace : r->new_->trace;
		const char *s = r->base ? r->base->strategy : r->new_->strategy;
		int w = width_of(t, 48), v = width_of(s, 40);
		if (r->base && r->new_ &&
		    strcmp(r->base->strategy, r->new_->strategy) != 0)
			v = width_of(r->base->strategy, 40) + 4 +
			    width_of(r->new_->strategy, 40);
		tw = w > tw ? w : tw;
		sw = v > sw ? v : sw;
	}
	enum as_metric m = c->opts.metric;
	if (as_metric_is_timing(m))
		printf("metric %s: a row regresses when slower by more than "
		       "%.2f%% and by more than %.2f ms (noise allowance)\n\n",
		       as_metric_name(m), c->opts.max_regress_pct,
		       c->opts.noise_ms);
	else
		printf("metric %s: a row regresses when it grows by more than "
		       "%.2f%%, fails more allocations or its plan is "
		       "invalid\n\n",
		       as_metric_name(m), c->opts.max_regress_pct);
	size_t hidden = all ? 0 : c->count[AS_CH_SAME];
	if (hidden < c->nrows)
		printf("%-*s %-*s %-*s %12s %12s %12s %9s\n", stw, "status", tw,
		       "trace", sw, "strategy", "base", "new", "change",
		       "change%");
	for (size_t k = 0; k < c->nrows; k++) {
		const struct as_compare_row *r = &c->rows[order[k]];
		if (all || r->status != AS_CH_SAME)
			print_row(c, r, stw, tw, sw);
	}
	if (hidden)
		printf("(%zu unchanged rows not listed; --all lists them)\n",
		       hidden);
	char counts[640];
	printf("\n%s\n", as_comparison_counts(c, counts, sizeof(counts)));
	if (c->count[AS_CH_LEFT_OUT_NEW] + c->count[AS_CH_LEFT_OUT_BASE])
		printf("(replay --step-limit 0 runs the rows left out to the "
		       "end)\n");
	if (c->count[AS_CH_TRACE_CHANGED])
		printf("%zu rows of traces whose content changed (lower bound, "
		       "buffers or events): not compared; regenerate the base\n",
		       c->count[AS_CH_TRACE_CHANGED]);
	if (as_comparison_failed(c)) {
		printf("FAIL: %zu row(s): %zu regressed, %zu invalid, %zu failed "
		       "more allocations",
		       c->nfailing, c->count[AS_CH_REGRESSED],
		       c->count[AS_CH_INVALID], c->count[AS_CH_MORE_FAILED]);
		if (c->opts.missing_fails)
			printf(", %zu missing from NEW",
			       c->nfailing - c->count[AS_CH_REGRESSED] -
				       c->count[AS_CH_INVALID] -
				       c->count[AS_CH_MORE_FAILED]);
		putchar('\n');
	}
	else
		printf("OK: no regression\n");
	free(order);
	return 0;
}

/* The markdown report of a comparison, for cli_write_out. */
struct markdown {
	const struct as_comparison *c;
	bool all;
};

static int write_markdown(void *ctx, FILE *f)
{
	const struct markdown *m = ctx;
	return as_comparison_write_markdown(m->c, f, m->all);
}

int cli_diff(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) /* two recordings by group */
		if (strcmp(argv[i], "--by") == 0)
			return cli_diff_by(argc, argv);
	struct as_compare_options opts;
	as_compare_defaults(&opts);
	const char *specs[2], *markdown = NULL, *svg = NULL;
	size_t nspecs = 0, nargs = 0;
	bool all = false, progress = true;
	unsigned jobs = 0; /* the default (as_runner_options.jobs) */
	struct as_load_options lo;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args) {
		fputs("allocscope diff: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	int status = cli_load_init(&lo);
	for (int i = 0; i < argc && !status; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--metric") == 0 && more) {
			if (as_metric_from_name(argv[++i], &opts.metric) !=
			    AS_OK)
				status = diff_usage_error(
					"unknown metric '%s' (peak, "
					"peak_vs_lb, failed, plan_ms)",
					argv[i]);
		} else if (strcmp(a, "--max-regress") == 0 && more) {
			const char *why = cli_parse_amount(
				argv[++i], CLI_AMOUNT_MAX, &opts.max_regress_pct);
			if (why)
				status = cli_amount_error(
					"allocscope diff", diff_usage,
					"--max-regress", argv[i], why,
					"percent");
		} else if (strcmp(a, "--noise-ms") == 0 && more) {
			const char *why = cli_parse_amount(
				argv[++i], CLI_AMOUNT_MAX, &opts.noise_ms);
			if (why)
				status = cli_amount_error(
					"allocscope diff", diff_usage,
					"--noise-ms", argv[i], why,
					"milliseconds");
		} else if (strcmp(a, "-s") == 0 && more) {
			if (nspecs == 2)
				status = diff_usage_error(
					"diff takes exactly two -s%s", "");
			else
				specs[nspecs++] = argv[++i];
		} else if (strcmp(a, "-f") == 0 && more) {
			if (!as_format_known(lo.format = argv[++i]))
				status = diff_usage_error(
					"unknown format '%s'", argv[i]);
		} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
			status = cli_max_input(argv[++i], &lo);
		} else if (strcmp(a, "--markdown") == 0 && more) {
			markdown = argv[++i];
		} else if (strcmp(a, "--svg") == 0 && more) {
			svg = argv[++i];
		} else if (strcmp(a, "--all") == 0) {
			all = true;
		} else if (strcmp(a, "--fail-missing") == 0) {
			opts.missing_fails = true;
		} else if (strcmp(a, "--no-progress") == 0) {
			progress = false;
		} else if ((strcmp(a, "-j") == 0 ||
			    strcmp(a, "--jobs") == 0) && more) {
			if (!cli_parse_jobs(argv[++i], &jobs))
				status = diff_usage_error(
					"-j wants 1 to 64 strategies at "
					"once, not '%s'",
					argv[i]);
		} else if ((status = cli_rest_arg(argv[i], "allocscope diff",
						  diff_usage, args,
						  &nargs)) < 0) {
			free(args);
			return 0;
		}
	}
	if (!status && nspecs == 1)
		status = diff_usage_error("give two -s (base and new), not "
					  "one%s",
					  "");
	else if (!status && nspecs == 2 && nargs == 0)
		status = diff_usage_error("diff -s A -s B needs TRACE or DIR "
					  "arguments%s",
					  "");
	else if (!status && nspecs == 0 && nargs != 2)
		status = diff_usage_error("diff needs BASE.json and NEW.json "
					  "(got %s)",
					  nargs < 2 ? "fewer" : "more");
	else if (!status && nspecs == 0 && lo.format != NULL)
		status = diff_usage_error("-f applies to traces (with -s)%s",
					  "");
	if (!status && svg && nspecs == 0)
		status = diff_usage_error("--svg needs -s A -s B: result files "
					  "hold numbers, not plans%s",
					  "");
	if (status) {
		free(args);
		return status;
	}

	struct as_results *base = as_results_create();
	struct as_results *new_ = as_results_create();
	struct as_comparison *c = NULL;
	struct as_diag d;
	if (!base || !new_) {
		fputs("allocscope diff: out of memory\n", stderr);
		status = EXIT_USAGE;
	} else if (nspecs == 2) {
		opts.by_trace_only = true;
		status = run_specs(args, nargs, &lo, specs, jobs, progress, svg,
				   markdown, base, new_);
	} else if ((status = cli_check_outputs(&markdown, 1,
					       (const char *const *)args,
					       2)) == 0) {
		/* Both files are checked before either is read: a FIFO or
		 * /dev/zero given as either costs nothing. */
		int err = AS_OK;
		for (int k = 0; k < 2 && err == AS_OK; k++)
			err = cli_check_input(args[k], true, &d);
		if (err == AS_OK &&
		    (err = as_results_load(base, args[0], &d)) == AS_OK)
			err = as_results_load(new_, args[1], &d);
		if (err != AS_OK)
			status = cli_report_diag(&d, err);
	}
	if (!status && as_compare(base, new_, &opts, &c) != AS_OK) {
		fputs("allocscope diff: out of memory\n", stderr);
		status = EXIT_USAGE;
	}
	if (!status) {
		status = print_comparison(c, all);
		if (!status && markdown)
			status = cli_write_out(markdown, write_markdown,
					       &(struct markdown){c, all});
		if (!status && as_comparison_failed(c))
			status = EXIT_REGRESSED;
	}
	as_comparison_destroy(c);
	as_results_destroy(base);
	as_results_destroy(new_);
	free(args);
	return status;
}
