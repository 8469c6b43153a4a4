/*
 * allocscope explain: what makes the peak of each trace (and, with -s, of
 * strategies' plans), as text, JSON and Markdown; and diff --by, two
 * recordings compared group by group. The work is the library's
 * (allocscope/explain.h); this file parses arguments, loads, runs and
 * writes. docs/explain.md describes both commands.
 *
 * Exit status of explain: 0, or 2 on a usage or input error. Of diff --by:
 * 0 no group regressed, 1 some did, 2 usage or input error.
 */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "allocscope/build.h"
#include "allocscope/compare.h"
#include "allocscope/explain.h"
#include "allocscope/io.h"
#include "explain.h"
#include "shared.h"

#define EXIT_REGRESSED 1
#define EXIT_USAGE 2
#define MAX_SPECS 64

static const char explain_usage[] =
	"usage: allocscope explain TRACE... [-f FMT] [-s SPEC]...\n"
	"                          [--by stack|frame|category|line FILE|annotation|\n"
	"                                context|prefix|size|buffer]\n"
	"                          [--user-code REGEX] [--skip-frames REGEX]\n"
	"                          [--rule NAME=REGEX]... [--top N] [--frames N]\n"
	"                          [--json FILE|-] [--markdown FILE] [-j N]\n"
	"                          [--max-input-bytes N|none]\n"
	"       allocscope diff --by stack|frame|category|line FILE|... BASE_TRACE\n"
	"                       NEW_TRACE [-f FMT] [--max-regress PCT]\n"
	"                       [--markdown FILE] [--all]\n"
	"\n"
	"explain: for each trace's peak (per space; with -s, each strategy's\n"
	"peak too) what is live, grouped, largest first, with each group's top\n"
	"user frames; bytes per annotation stage, the largest temporaries, what\n"
	"is never freed, and for online allocators the fragmentation at the\n"
	"peak. Several traces (ranks) end with a table and their imbalance.\n"
	"--top N: groups per list (default 10; 0: all). --frames N: frames per\n"
	"group (default 5). --json - writes JSON instead of the text.\n"
	"--by frame groups by the first frame of the user's code (not generated,\n"
	"not a library's, not the allocator's); --user-code REGEX says which\n"
	"frames are, --skip-frames REGEX which are not. --by category: parameters,\n"
	"activations, gradients, optimizer, temporaries, unknown, after the\n"
	"--rule NAME=REGEX given (first match wins). docs/explain.md.\n"
	"--max-input-bytes N|none: the most bytes a trace may hold\n"
	"decompressed (default 64G; also ALLOCSCOPE_MAX_INPUT). A TRACE of -\n"
	"is standard input.\n"
	"\n"
	"diff --by: the groups of two recordings of one program at their peaks,\n"
	"matched by text (hex addresses ignored), largest change first; exit 1\n"
	"when one grew by more than --max-regress percent (default 0).\n";

static int usage_error(const char *fmt, const char *arg)
{
	return cli_usage_error("allocscope explain", explain_usage, fmt, arg);
}

static bool parse_count(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (!cli_parse_u64(s, &v) || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* One trace loaded and explained, with its plans' explains. */
struct loaded {
	struct as_trace *t;
	struct as_explain *e;
	struct as_explain *plans[MAX_SPECS];
	size_t nplans;
};

static void loaded_free(struct loaded *l)
{
	for (size_t p = 0; p < l->nplans; p++)
		as_explain_destroy(l->plans[p]);
	as_explain_destroy(l->e);
	as_trace_destroy(l->t);
}

/*
 * Load `path` into l->t and explain it: a heaptrack or mtrace recording in
 * one pass, its blocks never kept; any other file whole. Prints its errors.
 */
static int load_explained(const char *path,
			  const struct as_load_options *lo,
			  const struct as_explain_options *o, struct loaded *l)
{
	struct as_live_sink sink;
	struct as_explain_stream *s = NULL;
	struct as_diag d = {0};
	int err = as_explain_stream_create(o, &s, &sink);
	if (err == AS_OK) {
		err = as_trace_load_live(path, lo, &sink, &l->t, &d);
		if (err == AS_OK)
			err = as_explain_stream_finish(s, l->t, &l->e);
		as_explain_stream_destroy(s);
		if (err != AS_EUNSUPPORTED && err && d.msg[0])
			return cli_report_diag(&d, err);
	} else if (err == AS_EUNSUPPORTED) {
		int lerr = as_trace_load_opts(path, lo, &l->t, &d);
		if (lerr)
			return cli_report_diag(&d, lerr);
	}
	if (err == AS_EUNSUPPORTED) /* the whole trace is loaded */
		err = as_explain_trace(l->t, o, &l->e);
	if (err) {
		fprintf(stderr, "%s: explain: %s\n", cli_esc(path),
			as_strerror(err));
		return EXIT_USAGE;
	}
	return 0;
}

/* Load `path` and explain it (and the specs' plans); prints its errors. */
static int explain_one(const char *path, const struct as_load_options *lo,
		       const struct as_explain_options *o,
		       const char *const *specs, size_t nspecs, unsigned jobs,
		       struct loaded *l)
{
	struct as_diag d = {0};
	memset(l, 0, sizeof(*l));
	/* Plans need the whole trace (and so does a comparison of both
	 * paths: ALLOCSCOPE_EXPLAIN_WHOLE, for tests and benchmarks). */
	if (!nspecs && !getenv("ALLOCSCOPE_EXPLAIN_WHOLE"))
		return load_explained(path, lo, o, l);
	int err = as_trace_load_opts(path, lo, &l->t, &d);
	if (err != AS_OK)
		return cli_report_diag(&d, err);
	err = as_explain_trace(l->t, o, &l->e);
	if (err) {
		fprintf(stderr, "%s: explain: %s\n", cli_esc(path),
			as_strerror(err));
		return EXIT_USAGE;
	}
	if (!nspecs)
		return 0;
	struct as_plan *plans[MAX_SPECS] = {0};
	struct as_diag diags[MAX_SPECS];
	memset(diags, 0, sizeof(diags));
	struct as_runner_options ro = {.jobs = jobs};
	struct as_runner *r = NULL;
	int status = 0;
	if ((err = as_runner_create(l->t, &ro, &r)) == AS_OK)
		as_runner_run_many(r, specs, nspecs, NULL, plans, diags);
	as_runner_destroy(r);
	for (size_t i = 0; i < nspecs; i++) {
		if (!plans[i]) {
			if (!status) {
				if (!diags[i].msg[0])
					snprintf(diags[i].msg, sizeof(diags[i].msg),
						 "%s: %s", specs[i],
						 as_strerror(err ? err : AS_ENOMEM));
				status = cli_report_diag(&diags[i], AS_ENOMEM);
			}
			continue;
		}
		if (!status) {
			err = as_explain_plan(l->t, specs[i], plans[i], o,
					      &l->plans[l->nplans], &d);
			if (err) {
				fprintf(stderr, "%s: explain %s: %s\n",
					cli_esc(path), cli_esc(specs[i]),
					as_strerror(err));
				status = EXIT_USAGE;
			} else {
				l->nplans++;
			}
		}
		as_plan_destroy(plans[i]);
	}
	return status;
}

/* The explains of a command line, and which writer. */
struct report {
	const struct as_explain_entry *entries;
	size_t n;
	int (*fn)(const struct as_explain_entry *entries, size_t n, FILE *f);
};

static int write_report(void *ctx, FILE *f)
{
	const struct report *r = ctx;
	return r->fn(r->entries, r->n, f);
}

/* Whether REGEX compiles (POSIX extended); else a usage error of `who`. */
static bool regex_ok_for(const char *who, const char *usage, const char *opt,
			 const char *re, int *status)
{
	regex_t r;
	int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);
	if (rc == 0) {
		regfree(&r);
		return true;
	}
	char why[160], msg[256];
	regerror(rc, &r, why, sizeof(why));
	snprintf(msg, sizeof(msg), "%s: '%%s' is not a regular expression (%s)",
		 opt, why);
	*status = cli_usage_error(who, usage, msg, re);
	return false;
}

static bool regex_ok(const char *opt, const char *re, int *status)
{
	return regex_ok_for("allocscope explain", explain_usage, opt, re,
			    status);
}

int cli_category_rule(const char *who, const char *usage, char *arg,
		      struct as_explain_options *o,
		      struct as_explain_rule *rules)
{
	char *eq = strchr(arg, '=');
	int status = 0;
	if (!eq || eq == arg || !eq[1])
		status = cli_usage_error(who, usage,
					 "--rule wants NAME=REGEX, not '%s'",
					 arg);
	else if (o->nrules == CLI_MAX_RULES)
		status = cli_usage_error(who, usage, "too many --rule (%s)",
					 "64");
	else if (regex_ok_for(who, usage, "--rule", eq + 1, &status)) {
		*eq = 0; /* argv is ours to cut */
		rules[o->nrules++] = (struct as_explain_rule){arg, eq + 1};
		o->rules = rules;
	}
	return status;
}

/* Options both commands read; 1: taken (with its value), 0: not ours, or
 * an exit status through *status. rules[CLI_MAX_RULES] holds --rule's. */
static int common_option(int argc, char **argv, int *i,
			 struct as_explain_options *o,
			 struct as_load_options *lo, const char **markdown,
			 struct as_explain_rule *rules, int *status)
{
	const char *a = argv[*i];
	bool more = *i + 1 < argc;
	if (strcmp(a, "--by") == 0 && more) {
		if (as_group_by_from_name(argv[++*i], &o->by) != AS_OK)
			*status = usage_error("--by wants stack, frame, category, "
					      "line FILE, annotation, context, "
					      "prefix, size or buffer, not '%s'",
					      argv[*i]);
		else if (o->by == AS_GROUP_LINE && *i + 1 >= argc)
			*status = usage_error("--by line wants a source FILE%s",
					      "");
		else if (o->by == AS_GROUP_LINE)
			o->line_file = argv[++*i];
	} else if ((strcmp(a, "--user-code") == 0 ||
		    strcmp(a, "--skip-frames") == 0) && more) {
		if (regex_ok(a, argv[++*i], status)) {
			if (a[2] == 'u')
				o->user_code = argv[*i];
			else
				o->skip_frames = argv[*i];
		}
	} else if (strcmp(a, "--rule") == 0 && more) {
		*status = cli_category_rule("allocscope explain", explain_usage,
					    argv[++*i], o, rules);
	} else if (strcmp(a, "-f") == 0 && more) {
		if (!as_format_known(lo->format = argv[++*i]))
			*status = usage_error("unknown format '%s'", argv[*i]);
	} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
		*status = cli_max_input(argv[++*i], lo);
	} else if (strcmp(a, "--frames") == 0 && more) {
		if (!parse_count(argv[++*i], 64, &o->frames))
			*status = usage_error("--frames wants 0 to 64, not '%s'",
					      argv[*i]);
	} else if (strcmp(a, "--markdown") == 0 && more) {
		*markdown = argv[++*i];
	} else {
		return 0;
	}
	return 1;
}

int cli_explain(int argc, char **argv)
{
	struct as_explain_options o;
	as_explain_options_init(&o);
	const char *specs[MAX_SPECS], *json = NULL, *markdown = NULL;
	struct as_load_options lo;
	struct as_explain_rule rules[CLI_MAX_RULES];
	size_t nspecs = 0, npaths = 0;
	unsigned jobs = 0;
	char **paths = calloc((size_t)argc + 1, sizeof(*paths));
	if (!paths)
		return EXIT_USAGE;
	int status = cli_load_init(&lo);
	for (int i = 0; i < argc && !status; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (common_option(argc, argv, &i, &o, &lo, &markdown, rules,
				  &status))
			continue;
		if (status)
			break;
		if (strcmp(a, "-s") == 0 && more) {
			if (nspecs == MAX_SPECS)
				status = usage_error("too many -s (%s)", "64");
			else
				specs[nspecs++] = argv[++i];
		} else if (strcmp(a, "--top") == 0 && more) {
			if (!parse_count(argv[++i], UINT32_MAX, &o.top))
				status = usage_error("--top wants a number, not "
						     "'%s'",
						     argv[i]);
		} else if (strcmp(a, "--json") == 0 && more) {
			json = argv[++i];
		} else if ((strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) &&
			   more) {
			if (!cli_parse_jobs(argv[++i], &jobs))
				status = usage_error("-j wants 1 to 64 "
						     "strategies at once, not "
						     "'%s'",
						     argv[i]);
		} else if ((status = cli_rest_arg(argv[i], "allocscope explain",
						  explain_usage, paths,
						  &npaths)) < 0) {
			free(paths);
			return 0;
		}
	}
	if (!status && npaths == 0)
		status = usage_error("explain needs a TRACE%s", "");
	if (!status && json && markdown && strcmp(json, markdown) == 0)
		status = usage_error("two outputs go to '%s'", json);
	const char *outs[] = {json, markdown};
	if (!status)
		status = cli_check_outputs(outs, 2, (const char *const *)paths,
					   npaths);
	struct loaded *l = calloc(npaths + 1, sizeof(*l));
	struct as_explain_entry *entries = calloc(npaths + 1, sizeof(*entries));
	if (!status && (!l || !entries))
		status = EXIT_USAGE;
	size_t n = 0;
	for (; !status && n < npaths; n++) {
		status = explain_one(paths[n], &lo, &o, specs, nspecs, jobs,
				     &l[n]);
		entries[n] = (struct as_explain_entry){
			l[n].e, (const struct as_explain *const *)l[n].plans,
			l[n].nplans};
		if (status)
			n++; /* free it too */
	}
	struct report text = {entries, npaths, as_explain_write_text},
		      js = {entries, npaths, as_explain_write_json},
		      md = {entries, npaths, as_explain_write_markdown};
	if (!status && !(json && strcmp(json, "-") == 0))
		status = cli_write_out("-", write_report, &text);
	if (!status && json)
		status = cli_write_out(json, write_report, &js);
	if (!status && markdown)
		status = cli_write_out(markdown, write_report, &md);
	for (size_t k = 0; l && k < n; k++)
		loaded_free(&l[k]);
	free(l);
	free(entries);
	free(paths);
	return status;
}

/* ---- diff --by ---- */

static void print_frames(const struct as_explain_group *g, int indent)
{
	char fr[512];
	for (uint32_t k = 0; g && k < g->nframes && k < 3; k++) {
		as_explain_frame_text(g->frames[k], fr, sizeof(fr));
		printf("%*s%s\n", k ? indent : 0, "", fr);
	}
	if (!g || !g->nframes)
		printf("%s\n", g ? cli_esc(g->key) : "?");
}

static int print_group_diff(const struct as_comparison *c,
			    const struct as_explain *a,
			    const struct as_explain *b, bool all)
{
	size_t *order = malloc((c->nrows + 1) * sizeof(*order));
	if (!order || as_explain_diff_order(c, order) != AS_OK) {
		free(order);
		fputs("allocscope diff: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	char h1[32], h2[32], h3[32];
	printf("by %s: a group regresses when its bytes at the peak grow by "
	       "more than %.2f%%\n",
	       as_group_by_name(a->opts.by), c->opts.max_regress_pct);
	printf("base %s: peak %s; new %s: peak %s\n\n", cli_esc(a->trace->path),
	       as_human_bytes(a->peak_bytes, h1, sizeof(h1)),
	       cli_esc(b->trace->path),
	       as_human_bytes(b->peak_bytes, h2, sizeof(h2)));
	size_t hidden = 0;
	bool header = false;
	for (size_t k = 0; k < c->nrows; k++) {
		const struct as_compare_row *r = &c->rows[order[k]];
		if (!all && r->status == AS_CH_SAME) {
			hidden++;
			continue;
		}
		if (!header)
			printf("%-10s %-8s %11s %11s %12s %9s  %s\n", "status",
			       "space", "base", "new", "change", "change%",
			       "top frames");
		header = true;
		const struct as_result_row *x = r->new_ ? r->new_ : r->base;
		char status[32], pct[32], ch[48];
		snprintf(status, sizeof(status), "%s", as_change_name(r->status));
		if (as_compare_row_fails(c, r))
			for (char *p = status; *p; p++)
				*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		if (r->pct_infinite)
			snprintf(pct, sizeof(pct), "new");
		else
			snprintf(pct, sizeof(pct), "%+.2f%%", r->change_pct);
		snprintf(ch, sizeof(ch), "%s%s",
			 r->change > 0 ? "+" : r->change < 0 ? "-" : "",
			 as_human_bytes((uint64_t)fabs(r->change), h3,
					sizeof(h3)));
		printf("%-10s %-8s %11s %11s %12s %9s  ", status,
		       cli_esc(x->trace),
		       as_human_bytes((uint64_t)r->base_value, h1, sizeof(h1)),
		       as_human_bytes((uint64_t)r->new_value, h2, sizeof(h2)),
		       ch, pct);
		const struct as_explain_group *g =
			as_explain_find(b, x->trace, x->strategy);
		if (!g || !g->bytes)
			g = as_explain_find(a, x->trace, x->strategy);
		print_frames(g, 10 + 1 + 8 + 1 + 11 + 1 + 11 + 1 + 12 + 1 + 9 + 2);
	}
	if (hidden)
		printf("(%zu unchanged groups not listed; --all lists them)\n",
		       hidden);
	printf("\n%zu groups: %zu regressed, %zu worse within threshold, %zu "
	       "better, %zu same\n",
	       c->nrows, c->count[AS_CH_REGRESSED], c->count[AS_CH_WORSE],
	       c->count[AS_CH_BETTER], c->count[AS_CH_SAME]);
	if (as_comparison_failed(c))
		printf("FAIL: %zu group(s) regressed\n", c->nfailing);
	else
		printf("OK: no regression\n");
	free(order);
	return 0;
}

/* What diff --by writes as Markdown. */
struct group_diff {
	const struct as_comparison *c;
	const struct as_explain *a, *b;
	bool all;
};

static int write_group_diff(void *ctx, FILE *f)
{
	const struct group_diff *g = ctx;
	return as_explain_write_diff_markdown(g->c, g->a, g->b, f, g->all);
}

int cli_diff_by(int argc, char **argv)
{
	struct as_explain_options o;
	as_explain_options_init(&o);
	o.top = 0;
	o.normalize = true;
	struct as_compare_options co;
	as_compare_defaults(&co);
	struct as_explain_rule rules[CLI_MAX_RULES];
	const char *markdown = NULL, *args[2];
	struct as_load_options lo;
	size_t nargs = 0;
	bool all = false;
	int status = cli_load_init(&lo);
	for (int i = 0; i < argc && !status; i++) {
		const char *a = argv[i];
		if (common_option(argc, argv, &i, &o, &lo, &markdown, rules,
				  &status))
			continue;
		if (status)
			break;
		if (strcmp(a, "--max-regress") == 0 && i + 1 < argc) {
			const char *why = cli_parse_amount(
				argv[++i], CLI_AMOUNT_MAX, &co.max_regress_pct);
			if (why)
				status = cli_amount_error(
					"allocscope diff", explain_usage,
					"--max-regress", argv[i], why,
					"percent");
		} else if (strcmp(a, "--all") == 0) {
			all = true;
		} else if (a[0] == '-' && a[1]) {
			status = usage_error("diff --by: unknown or incomplete "
					     "option '%s'",
					     a);
		} else if (nargs == 2) {
			status = usage_error("diff --by compares two traces, "
					     "not '%s' too",
					     a);
		} else {
			args[nargs++] = a;
		}
	}
	if (!status && nargs != 2)
		status = usage_error("diff --by needs BASE and NEW traces%s", "");
	if (!status)
		status = cli_check_outputs(&markdown, 1, args, 2);
	if (status)
		return status;
	struct loaded la, lb;
	memset(&lb, 0, sizeof(lb));
	struct as_results *base = as_results_create(),
			  *new_ = as_results_create();
	struct as_comparison *c = NULL;
	status = explain_one(args[0], &lo, &o, NULL, 0, 0, &la);
	if (!status)
		status = explain_one(args[1], &lo, &o, NULL, 0, 0, &lb);
	if (!status && (!base || !new_ ||
			as_explain_results(la.e, lb.e, base, new_) ||
			as_compare(base, new_, &co, &c))) {
		fputs("allocscope diff: out of memory\n", stderr);
		status = EXIT_USAGE;
	}
	if (!status)
		status = print_group_diff(c, la.e, lb.e, all);
	struct group_diff gd = {c, la.e, lb.e, all};
	if (!status && markdown)
		status = cli_write_out(markdown, write_group_diff, &gd);
	if (!status && as_comparison_failed(c))
		status = EXIT_REGRESSED;
	as_comparison_destroy(c);
	as_results_destroy(base);
	as_results_destroy(new_);
	loaded_free(&la);
	loaded_free(&lb);
	return status;
}
