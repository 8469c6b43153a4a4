/*
 * allocscope tune SNAPSHOT...: the cuda-caching model run under a grid of
 * PYTORCH_CUDA_ALLOC_CONF settings, side by side through the runner, one
 * table per device sorted by reserved peak, and the setting to use (or why
 * none helps). The figures are the plans' statistics, the same `replay -s
 * SPEC --json` gives. docs/strategies-cuda-caching.md says what a what-if
 * assumes.
 *
 * Exit status: 0; 1 when a plan is invalid (the tables are still
 * written); 2 on a usage or input error.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "allocscope/io.h"
#include "shared.h"
#include "tune.h"

#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define MAX_KEYS 8
#define MAX_VALUES 8
#define MAX_ROWS 256
#define MAX_SPACES 8 /* the devices the model's stats name one by one */

static const char tune_usage[] =
	"usage: allocscope tune SNAPSHOT... [-f FMT] [--max-input-bytes N|none]\n"
	"                       [--set KEY=V1,V2,...]...\n"
	"                       [--capacity SIZE] [--json FILE|-]\n"
	"                       [--markdown FILE] [-j N] [--no-progress]\n"
	"\n"
	"Runs cuda-caching under a grid of PYTORCH_CUDA_ALLOC_CONF settings\n"
	"(default: expandable_segments False,True; max_split_size_mb\n"
	"none,128,512; roundup_power2_divisions none,4;\n"
	"garbage_collection_threshold none,0.8) beside the recorded settings,\n"
	"and prints per device one table sorted by reserved peak (rows that\n"
	"run out of memory last) and the setting to use.\n"
	"--set KEY=V1,V2: the values of one setting (none: PyTorch's default;\n"
	"a list value in brackets, [256:4,>:1], stays one value).\n"
	"--capacity SIZE: the device's memory (80G style) for every run: would\n"
	"it fit on a smaller GPU.\n";

static int usage_error(const char *fmt, const char *arg)
{
	return cli_usage_error("allocscope tune", tune_usage, fmt, arg);
}

/* One setting of the grid: its values, "" for PyTorch's default. */
struct axis {
	char key[48];
	char val[MAX_VALUES][64];
	size_t n;
};

/* The keys the grid may vary, each with the value that means "none". */
static const struct {
	const char *key, *none;
} known[] = {
	{"expandable_segments", "0"},
	{"max_split_size_mb", "0"},
	{"roundup_power2_divisions", "0"},
	{"garbage_collection_threshold", "0"},
	{"max_non_split_rounding_mb", "20"},
	{"large_segment_size_mb", "20"},
};

/* The figures of one run on one device. */
struct figures {
	double peak, made, inherited, after, frag, ooms, capacity, over;
	bool released, present;
};

/* Room for MAX_KEYS keys (47 bytes) with values (63), a fraction and a
 * capacity (20 digits): a grid row is never cut. */
struct row {
	char setting[1024]; /* PYTORCH_CUDA_ALLOC_CONF */
	char spec[1100];
	bool recorded;
	size_t order;      /* settings not PyTorch's default, grid index */
	struct figures f;
};

struct space_rows {
	char name[64];
	char oom[2][900];  /* the recorded run's first OOMs here, explained */
	size_t noom;
	struct row *rows;
	size_t n;
	size_t best;       /* index into rows (sorted), or SIZE_MAX */
	char advice[600];
};

struct tuned {
	const char *path;
	struct space_rows sp[MAX_SPACES];
	size_t nsp;
};

/* The value an option takes in a spec for `v` of `key` ("none": the
 * default, spelled out so a recording's own settings do not apply). */
static const char *spec_value(const char *key, const char *v)
{
	if (*v)
		return v;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].key, key) == 0)
			return known[i].none;
	return "0";
}

/* Whether v (for key) is PyTorch's default. */
static bool is_default(const char *key, const char *v)
{
	if (!*v)
		return true;
	if (strcmp(key, "expandable_segments") == 0)
		return strcmp(v, "0") == 0 || strcmp(v, "False") == 0 ||
		       strcmp(v, "false") == 0;
	return strcmp(v, spec_value(key, "")) == 0;
}

/* --set KEY=V1,V2 into an axis; false with *status set when it is bad. */
static bool parse_set(const char *arg, struct axis *ax, int *status)
{
	const char *eq = strchr(arg, '=');
	size_t kl = eq ? (size_t)(eq - arg) : 0;
	bool ok = false;
	for (size_t i = 0; eq && i < sizeof(known) / sizeof(known[0]); i++)
		ok |= strlen(known[i].key) == kl &&
		      memcmp(known[i].key, arg, kl) == 0;
	if (!ok) {
		*status = usage_error("--set wants KEY=V1,V2 with KEY one of "
				      "expandable_segments, max_split_size_mb, "
				      "roundup_power2_divisions, "
				      "garbage_collection_threshold, "
				      "max_non_split_rounding_mb, "
				      "large_segment_size_mb; not '%s'",
				      arg);
		return false;
	}
	memcpy(ax->key, arg, kl);
	ax->key[kl] = 0;
	ax->n = 0;
	const char *p = eq + 1;
	while (*p) {
		size_t len = 0;
		int depth = 0;
		while (p[len] && (p[len] != ',' || depth)) {
			depth += p[len] == '[';
			depth -= p[len] == ']';
			len++;
		}
		if (!len || len >= sizeof(ax->val[0]) || ax->n == MAX_VALUES ||
		    memchr(p, '=', len) ||
		    (p[0] != '[' && memchr(p, ':', len))) {
			*status = usage_error("--set: bad or too many values "
					      "(at most 8) in '%s'",
					      arg);
			return false;
		}
		memcpy(ax->val[ax->n], p, len);
		ax->val[ax->n][len] = 0;
		if (strcmp(ax->val[ax->n], "none") == 0)
			ax->val[ax->n][0] = 0;
		ax->n++;
		p += len + (p[len] == ',');
	}
	if (!ax->n) {
		*status = usage_error("--set: no value in '%s'", arg);
		return false;
	}
	return true;
}

static void default_grid(struct axis *ax, size_t *n)
{
	static const char *const vals[4][4] = {
		{"", "True"}, {"", "128", "512"}, {"", "4"}, {"", "0.8"}};
	static const size_t counts[4] = {2, 3, 2, 2};
	for (size_t k = 0; k < 4; k++) {
		snprintf(ax[k].key, sizeof(ax[k].key), "%s", known[k].key);
		ax[k].n = counts[k];
		for (size_t v = 0; v < counts[k]; v++)
			snprintf(ax[k].val[v], sizeof(ax[k].val[v]), "%s",
				 vals[k][v]);
	}
	*n = 4;
}

/*
 * Row `idx` of the grid (mixed radix over the axes): its spec and its
 * PYTORCH_CUDA_ALLOC_CONF. A garbage-collection threshold acts only with
 * set_per_process_memory_fraction: such a row runs with fraction=1.
 */
static void grid_row(const struct axis *ax, size_t nax, size_t idx,
		     const char *capacity, struct row *r)
{
	size_t sl = 0, cl = 0;
	bool gc = false;
	memset(r, 0, sizeof(*r));
	sl += (size_t)snprintf(r->spec, sizeof(r->spec), "cuda-caching");
	size_t rest = idx;
	const char *pick[MAX_KEYS];
	for (size_t k = nax; k-- > 0;) {
		pick[k] = ax[k].val[rest % ax[k].n];
		rest /= ax[k].n;
	}
	for (size_t k = 0; k < nax && sl < sizeof(r->spec); k++) {
		const char *v = spec_value(ax[k].key, pick[k]);
		bool ex = strcmp(ax[k].key, "expandable_segments") == 0;
		const char *sv = ex ? (is_default(ax[k].key, v) ? "0" : "1")
				    : v;
		sl += (size_t)snprintf(r->spec + sl, sizeof(r->spec) - sl,
				       "%s%s=%s", k ? "," : ":", ax[k].key, sv);
		if (strcmp(ax[k].key, "garbage_collection_threshold") == 0 &&
		    !is_default(ax[k].key, v))
			gc = true;
		if (is_default(ax[k].key, v) || cl >= sizeof(r->setting))
			continue;
		cl += (size_t)snprintf(r->setting + cl,
				       sizeof(r->setting) - cl, "%s%s:%s",
				       cl ? "," : "", ax[k].key,
				       ex ? "True" : v);
	}
	if (gc && sl < sizeof(r->spec))
		sl += (size_t)snprintf(r->spec + sl, sizeof(r->spec) - sl,
				       ",fraction=1");
	if (capacity && sl < sizeof(r->spec))
		snprintf(r->spec + sl, sizeof(r->spec) - sl, ",capacity=%s",
			 capacity);
	if (!cl)
		snprintf(r->setting, sizeof(r->setting), "(PyTorch defaults)");
	/* among equal figures, fewer settings first */
	size_t nset = 0;
	for (size_t k = 0; k < nax; k++)
		nset += !is_default(ax[k].key, spec_value(ax[k].key, pick[k]));
	r->order = nset * MAX_ROWS + idx;
}

/* ---- running ---- */

struct runs {
	const struct as_trace *t;
	struct as_plan **plans;
	bool *invalid;     /* per plan: the validator refused it */
	size_t n;
	pthread_mutex_t lock;
	struct cli_progress *progress;
	const char *path;
};

static void run_done(void *ctx, size_t i, int err, struct as_plan *plan,
		     const struct as_diag *diag)
{
	struct runs *r = ctx;
	(void)err;
	(void)diag;
	r->plans[i] = plan;
	struct as_report rep;
	if (plan && (as_validate(r->t, plan, &rep) != AS_OK || !rep.valid))
		r->invalid[i] = true;
	if (plan)
		as_plan_drop_buffers(plan); /* the stats are what tune reads */

	pthread_mutex_lock(&r->lock);
	cli_progress_step(r->progress, r->path);
	pthread_mutex_unlock(&r->lock);
}

static bool stat_of(const struct as_plan *p, const char *key, double *v)
{
	for (uint32_t k = 0; p && k < p->nstats; k++)
		if (strcmp(p->stats[k].key, key) == 0) {
			*v = p->stats[k].value;
			return true;
		}
	return false;
}

static double stat_space(const struct as_plan *p, const char *key,
			 unsigned s, bool *found)
{
	char k[96];
	double v = 0;
	snprintf(k, sizeof(k), "%s.space%u", key, s);
	bool f = stat_of(p, k, &v);
	if (found)
		*found = f;
	return f ? v : 0;
}

static struct figures figures_of(const struct as_plan *p, unsigned s)
{
	struct figures f = {0};
	f.peak = stat_space(p, "reserved_bytes.peak", s, &f.present);
	f.made = stat_space(p, "reserved_made", s, NULL);
	f.inherited = stat_space(p, "reserved_inherited", s, NULL);
	f.after = stat_space(p, "reserved_peak_after_release", s, &f.released);
	f.frag = stat_space(p, "fragmentation_at_peak", s, NULL);
	f.ooms = stat_space(p, "num_ooms", s, NULL) +
		 stat_space(p, "oom_requests_failing", s, NULL);
	f.capacity = stat_space(p, "capacity", s, NULL);
	/* the state at the start alone does not fit: one out of memory */
	f.over = stat_space(p, "inherited_over_capacity", s, NULL);
	f.ooms += f.over > 0;
	return f;
}

/* Sort order: by how often a row runs out of memory, then reserved peak,
 * the peak after the inherited memory went back, what the model made,
 * fragmentation; the recorded row first among equals. */
static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double kx[5] = {x->f.ooms, x->f.peak,
			x->f.released ? x->f.after : x->f.peak, x->f.made,
			x->f.frag};
	double ky[5] = {y->f.ooms, y->f.peak,
			y->f.released ? y->f.after : y->f.peak, y->f.made,
			y->f.frag};
	for (int k = 0; k < 5; k++)
		if (kx[k] != ky[k])
			return kx[k] < ky[k] ? -1 : 1;
	if (x->recorded != y->recorded)
		return (int)y->recorded - (int)x->recorded;
	return (x->order > y->order) - (x->order < y->order);
}

/* The figure a setting can change: the peak after the program gave the
 * inherited memory back, else the reserved peak. */
static double changeable(const struct figures *f)
{
	return f->released ? f->after : f->peak;
}

static void advise_rows(struct space_rows *sp);

/* The recommended row and the advice line of one device; on a recording
 * that ran out of memory, whether any setting avoids it. */
static void advise(struct space_rows *sp)
{
	advise_rows(sp);
	const struct row *rec = NULL;
	size_t avoid = 0;
	for (size_t i = 0; i < sp->n; i++) {
		if (sp->rows[i].recorded)
			rec = &sp->rows[i];
		else
			avoid += sp->rows[i].f.ooms == 0;
	}
	size_t len = strlen(sp->advice);
	if (!rec || rec->f.ooms == 0 || len >= sizeof(sp->advice) ||
	    strstr(sp->advice, "runs out of memory"))
		return;
	if (avoid)
		snprintf(sp->advice + len, sizeof(sp->advice) - len,
			 "; %zu of %zu settings avoid the recorded settings' "
			 "out of memory",
			 avoid, sp->n - 1);
	else
		snprintf(sp->advice + len, sizeof(sp->advice) - len,
			 "; no setting avoids the out of memory");
}

static void advise_rows(struct space_rows *sp)
{
	const struct row *rec = NULL;
	for (size_t i = 0; i < sp->n; i++)
		if (sp->rows[i].recorded)
			rec = &sp->rows[i];
	sp->best = SIZE_MAX;
	if (!rec)
		return;
	char h1[32], h2[32], h3[32], h4[32];
	size_t avoid = 0;
	for (size_t i = 0; i < sp->n; i++)
		avoid += sp->rows[i].f.ooms == 0;
	for (size_t i = 0; i < sp->n && sp->best == SIZE_MAX; i++) {
		const struct row *r = &sp->rows[i];
		if (r->recorded || r->f.ooms > rec->f.ooms)
			continue;
		if (r->f.ooms < rec->f.ooms || r->f.peak < rec->f.peak ||
		    (r->f.peak == rec->f.peak &&
		     changeable(&r->f) < changeable(&rec->f)))
			sp->best = i;
	}
	if (sp->best != SIZE_MAX) {
		const struct row *b = &sp->rows[sp->best];
		int n = snprintf(sp->advice, sizeof(sp->advice),
				 "recommended: PYTORCH_CUDA_ALLOC_CONF=%s", b->setting);
		if (n < 0 || (size_t)n >= sizeof(sp->advice))
			return;
		if (b->f.ooms < rec->f.ooms)
			snprintf(sp->advice + n, sizeof(sp->advice) - (size_t)n,
				 b->f.ooms > 0 ? ": cuts the recorded setting's "
						 "OOMs from %.0f to %.0f, "
						 "reserved peak %s"
					       : ": avoids the recorded setting's "
						 "out of memory (%.0f OOMs to "
						 "%.0f), reserved peak %s",
				 rec->f.ooms, b->f.ooms,
				 as_human_bytes((uint64_t)b->f.peak, h1,
						sizeof(h1)));
		else if (b->f.peak < rec->f.peak)
			snprintf(sp->advice + n, sizeof(sp->advice) - (size_t)n,
				 ": saves %s of the reserved peak (%s to %s, "
				 "%.1f%%)",
				 as_human_bytes((uint64_t)(rec->f.peak -
							   b->f.peak),
						h1, sizeof(h1)),
				 as_human_bytes((uint64_t)rec->f.peak, h2,
						sizeof(h2)),
				 as_human_bytes((uint64_t)b->f.peak, h3,
						sizeof(h3)),
				 100.0 * (rec->f.peak - b->f.peak) /
					 rec->f.peak);
		else
			snprintf(sp->advice + n, sizeof(sp->advice) - (size_t)n,
				 ": saves %s of the reserved peak after the "
				 "program's empty_cache() gave back the memory "
				 "reserved before the recording (%s to %s); "
				 "the reserved peak itself (%s) is that memory",
				 as_human_bytes((uint64_t)(changeable(&rec->f) -
							   changeable(&b->f)),
						h1, sizeof(h1)),
				 as_human_bytes((uint64_t)changeable(&rec->f),
						h2, sizeof(h2)),
				 as_human_bytes((uint64_t)changeable(&b->f),
						h3, sizeof(h3)),
				 as_human_bytes((uint64_t)rec->f.peak, h4,
						sizeof(h4)));
		return;
	}
	if (rec->f.over > 0)
		snprintf(sp->advice, sizeof(sp->advice),
			 "no setting helps: the memory reserved before the "
			 "recording (%s) alone is %s more than the capacity",
			 as_human_bytes((uint64_t)rec->f.inherited, h1,
					sizeof(h1)),
			 as_human_bytes((uint64_t)rec->f.over, h2, sizeof(h2)));
	else if (rec->f.ooms > 0 && !avoid)
		snprintf(sp->advice, sizeof(sp->advice),
			 "no setting helps: every setting runs out of memory "
			 "at %s, the recorded one too",
			 rec->f.capacity > 0
				 ? as_human_bytes((uint64_t)rec->f.capacity,
						  h1, sizeof(h1))
				 : "this capacity");
	else if (rec->f.inherited >= rec->f.peak && !rec->f.released)
		snprintf(sp->advice, sizeof(sp->advice),
			 "no setting helps: the reserved peak (%s) is memory "
			 "reserved before the recording started, which no "
			 "setting changes and the program never gave back; "
			 "record from the start of the process to compare",
			 as_human_bytes((uint64_t)rec->f.peak, h1, sizeof(h1)));
	else
		snprintf(sp->advice, sizeof(sp->advice),
			 "no setting helps: none reserves less than the "
			 "recorded one (%s; %s of it cached but unused at the "
			 "peak)",
			 as_human_bytes((uint64_t)rec->f.peak, h1, sizeof(h1)),
			 as_human_bytes((uint64_t)rec->f.frag, h2, sizeof(h2)));
}

struct tune_opts {
	struct as_load_options lo;
	char capacity[24]; /* --capacity in bytes, "" for the device's */
	struct axis ax[MAX_KEYS];
	size_t nax, ngrid;
	unsigned jobs;
	struct cli_progress progress;
};

/* Load, run and tabulate one trace into *out; prints its errors. */
static int tune_one(const char *path, struct tune_opts *o, struct tuned *out)
{
	struct as_diag d = {0};
	struct as_trace *t = NULL;
	memset(out, 0, sizeof(*out));
	out->path = path;
	int err = as_trace_load_opts(path, &o->lo, &t, &d);
	if (err != AS_OK) {
		cli_progress_end(&o->progress);
		return cli_report_diag(&d, err);
	}
	size_t n = o->ngrid + 1;
	struct row *grid = calloc(n, sizeof(*grid));
	const char **specs = calloc(n, sizeof(*specs));
	struct as_plan **plans = calloc(n, sizeof(*plans));
	/* run_many's own: NULL for the plans done took */
	struct as_plan **left = calloc(n, sizeof(*left));
	struct as_diag *diags = calloc(n, sizeof(*diags));
	bool *invalid = calloc(n, sizeof(*invalid));
	struct runs rs = {t,	   plans, invalid, n, PTHREAD_MUTEX_INITIALIZER,
			  &o->progress, path};
	struct as_many_hooks mh = {.done = run_done, .ctx = &rs};
	struct as_runner_options ro = {.jobs = o->jobs};
	struct as_runner *runner = NULL;
	int status = grid && specs && plans && left && diags && invalid
			     ? 0
			     : EXIT_USAGE;
	if (status)
		fputs("allocscope: out of memory\n", stderr);
	if (!status) {
		grid[0].recorded = true;
		snprintf(grid[0].spec, sizeof(grid[0].spec), "cuda-caching%s%s",
			 *o->capacity ? ":capacity=" : "", o->capacity);
		snprintf(grid[0].setting, sizeof(grid[0].setting),
			 "(the recording's settings)");
		for (size_t i = 1; i < n; i++)
			grid_row(o->ax, o->nax, i - 1,
				 *o->capacity ? o->capacity : NULL, &grid[i]);
		for (size_t i = 0; i < n; i++)
			specs[i] = grid[i].spec;
		if (as_runner_create(t, &ro, &runner) != AS_OK)
			status = EXIT_USAGE;
		else
			as_runner_run_many(runner, specs, n, &mh, left, diags);
		as_runner_destroy(runner);
	}
	for (size_t i = 0; !status && i < n; i++)
		if (!plans[i]) {
			cli_progress_end(&o->progress);
			status = cli_report_diag(&diags[i], diags[i].err);
		}
	for (size_t i = 0; !status && i < n; i++)
		if (invalid[i]) {
			cli_progress_end(&o->progress);
			fprintf(stderr, "%s: %s: invalid plan (allocscope replay "
					"-s SPEC says where)\n",
				cli_esc(path), cli_esc(specs[i]));
			status = EXIT_INVALID;
		}
	/* A grid row with the recording's settings is the recorded row:
	 * it names the recorded setting and goes. */
	bool *same = calloc(n, sizeof(*same));
	if (status != EXIT_USAGE && !same)
		status = EXIT_USAGE;
	for (size_t i = 1; status != EXIT_USAGE && i < n; i++) {
		double differ = 1;
		stat_of(plans[i], "settings_differ", &differ);
		if (differ == 0) {
			same[i] = true;
			memcpy(grid[0].setting, grid[i].setting,
			       sizeof(grid[0].setting)); /* i > 0 */
		}
	}
	for (unsigned s = 0;
	     status != EXIT_USAGE && s < t->nspaces && s < MAX_SPACES; s++) {
		struct figures rec = figures_of(plans[0], s);
		uint32_t nb = 0;
		for (uint32_t i = 0; i < t->nbuffers; i++)
			nb += t->buffers[i].space == s;
		if (!rec.present || (!nb && rec.peak == 0))
			continue;
		struct space_rows *sp = &out->sp[out->nsp++];
		snprintf(sp->name, sizeof(sp->name), "%s",
			 t->spaces[s].name ? t->spaces[s].name : "space");
		if (!(sp->rows = calloc(n, sizeof(*sp->rows)))) {
			status = EXIT_USAGE;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (same[i])
				continue;
			sp->rows[sp->n] = grid[i];
			sp->rows[sp->n++].f = figures_of(plans[i], s);
		}
		qsort(sp->rows, sp->n, sizeof(*sp->rows), row_cmp);
		advise(sp);
		/* what the recorded run held at its first OOMs here */
		char pre[96];
		snprintf(pre, sizeof(pre), "oom: %s: ", sp->name);
		for (uint32_t k = 0; plans[0] && k < plans[0]->nnotes &&
				     sp->noom < 2;
		     k++)
			if (strncmp(plans[0]->notes[k], pre, strlen(pre)) == 0)
				snprintf(sp->oom[sp->noom++],
					 sizeof(sp->oom[0]), "%s",
					 plans[0]->notes[k]);
	}
	cli_progress_step(&o->progress, path);
	for (size_t i = 0; plans && i < n; i++)
		as_plan_destroy(plans[i]);
	free(same);
	free(invalid);
	free(left);
	free(grid);
	free(specs);
	free(plans);
	free(diags);
	as_trace_destroy(t);
	return status;
}

/* ---- writing ---- */

struct report {
	const struct tuned *tr;
	size_t n;
	bool markdown;
};

static const struct row *recorded_row(const struct space_rows *sp)
{
	for (size_t i = 0; i < sp->n; i++)
		if (sp->rows[i].recorded)
			return &sp->rows[i];
	return NULL;
}

static int write_text(void *ctx, FILE *f)
{
	const struct report *r = ctx;
	bool md = r->markdown;
	for (size_t k = 0; k < r->n; k++) {
		const struct tuned *tr = &r->tr[k];
		char esc[4 * sizeof(((struct row *)0)->setting)];
		as_escape(esc, sizeof(esc), tr->path,
			  md ? AS_ESCAPE_MARKDOWN : AS_ESCAPE_TEXT);
		fprintf(f, md ? "%s## %s\n\n" : "%stune %s\n", k ? "\n" : "",
			esc);
		if (!tr->nsp)
			fputs("no device with memory to tune: the snapshot "
			      "has no segments and no trace\n",
			      f);
		for (size_t s = 0; s < tr->nsp; s++) {
			const struct space_rows *sp = &tr->sp[s];
			const struct row *rec = recorded_row(sp);
			char hc[32], ha[32], hb[32], hm[32], hi[32], hf[32];
			double cap = rec ? rec->f.capacity : 0;
			as_escape(esc, sizeof(esc), sp->name,
				  md ? AS_ESCAPE_MARKDOWN : AS_ESCAPE_TEXT);
			fprintf(f, md ? "\n### %s (capacity %s)\n\n"
				      : "\n%s, capacity %s:\n",
				esc,
				cap > 0 ? as_human_bytes((uint64_t)cap, hc,
							 sizeof(hc))
					: "unlimited");
			int w = 34;
			for (size_t i = 0; i < sp->n; i++) {
				int l = (int)strlen(sp->rows[i].setting) + 6;
				if (l > w)
					w = l;
			}
			if (md)
				fputs("| setting | reserved peak | made | "
				      "inherited | after release | "
				      "fragmentation | OOMs | change |\n"
				      "|---|---:|---:|---:|---:|---:|---:|---:|\n",
				      f);
			else
				fprintf(f, "%-*s %10s %10s %10s %10s %10s %5s "
					   "%8s\n",
					w, "setting (PYTORCH_CUDA_ALLOC_CONF)",
					"reserved", "made", "inherited",
					"after rel.", "frag.", "OOMs",
					"change");
			for (size_t i = 0; i < sp->n; i++) {
				const struct row *x = &sp->rows[i];
				char set[sizeof(x->setting) + 8], ch[32] = "";
				snprintf(set, sizeof(set), "%s%s%s",
					 x->recorded ? "* " : "", x->setting,
					 strstr(x->spec, "fraction=1") ? " (+)"
								      : "");
				as_escape(esc, sizeof(esc), set,
					  md ? AS_ESCAPE_MARKDOWN_CODE
					     : AS_ESCAPE_TEXT);
				if (rec && changeable(&rec->f) > 0) {
					double pct = 100.0 *
						     (changeable(&x->f) -
						      changeable(&rec->f)) /
						     changeable(&rec->f);
					/* no "-0.0%" beside "+0.0%" */
					snprintf(ch, sizeof(ch), "%+.1f%%",
						 fabs(pct) < 0.05 ? 0.0 : pct);
				}
				strcpy(ha, "-");
				if (x->f.released)
					as_human_bytes((uint64_t)x->f.after, ha,
						       sizeof(ha));
				as_human_bytes((uint64_t)x->f.peak, hb,
					       sizeof(hb));
				as_human_bytes((uint64_t)x->f.made, hm,
					       sizeof(hm));
				as_human_bytes((uint64_t)x->f.inherited, hi,
					       sizeof(hi));
				as_human_bytes((uint64_t)x->f.frag, hf,
					       sizeof(hf));
				if (md)
					fprintf(f, "| `%s` | %s | %s | %s | %s "
						   "| %s | %.0f | %s |\n",
						esc, hb, hm, hi, ha, hf,
						x->f.ooms, ch);
				else
					fprintf(f, "%-*s %10s %10s %10s %10s "
						   "%10s %5.0f %8s\n",
						w, esc, hb, hm, hi, ha, hf,
						x->f.ooms, ch);
			}
			as_escape(esc, sizeof(esc), sp->advice,
				  md ? AS_ESCAPE_MARKDOWN : AS_ESCAPE_TEXT);
			fprintf(f, md ? "\n%s\n" : "%s\n", esc);
			for (size_t q = 0; q < sp->noom; q++) {
				as_escape(esc, sizeof(esc), sp->oom[q],
					  md ? AS_ESCAPE_MARKDOWN
					     : AS_ESCAPE_TEXT);
				fprintf(f, md ? "\n%s\n" : "%s\n", esc);
			}
		}
		if (!tr->nsp)
			continue;
		fputs(md ? "\n\\* the recorded settings; (+) with "
			   "`set_per_process_memory_fraction(1.0)`, without "
			   "which the threshold does nothing. made: the peak "
			   "of what the model reserved itself; inherited: "
			   "reserved before the recording; after release: the "
			   "reserved peak from the program's `empty_cache()` "
			   "that gave inherited memory back; change: of the "
			   "reserved peak, of the one after release when there "
			   "is one.\n"
			 : "* the recorded settings; (+) with "
			   "set_per_process_memory_fraction(1.0), without "
			   "which the threshold does nothing; change: of the "
			   "reserved peak, after release when there is one\n",
		      f);
	}
	return ferror(f) ? AS_EIO : AS_OK;
}

static void json_figure(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": %.0f", key, v);
}

static int write_json(void *ctx, FILE *f)
{
	const struct report *r = ctx;
	fputs("{\"format\": \"allocscope-tune\", \"version\": 1, "
	      "\"traces\": [",
	      f);
	for (size_t k = 0; k < r->n; k++) {
		const struct tuned *tr = &r->tr[k];
		fputs(k ? ",\n {\"trace\": " : "\n {\"trace\": ", f);
		as_json_string(f, tr->path);
		fputs(", \"spaces\": [", f);
		for (size_t s = 0; s < tr->nsp; s++) {
			const struct space_rows *sp = &tr->sp[s];
			const struct row *rec = recorded_row(sp);
			fputs(s ? ",\n  {\"space\": " : "\n  {\"space\": ", f);
			as_json_string(f, sp->name);
			if (rec && rec->f.capacity > 0)
				fprintf(f, ", \"capacity\": %.0f",
					rec->f.capacity);
			else
				fputs(", \"capacity\": null", f);
			fputs(", \"rows\": [", f);
			for (size_t i = 0; i < sp->n; i++) {
				const struct row *x = &sp->rows[i];
				fputs(i ? ",\n   {\"setting\": "
					: "\n   {\"setting\": ",
				      f);
				as_json_string(f, x->setting);
				fputs(", \"spec\": ", f);
				as_json_string(f, x->spec);
				fprintf(f, ", \"recorded\": %s",
					x->recorded ? "true" : "false");
				json_figure(f, "reserved_peak", x->f.peak);
				json_figure(f, "reserved_made", x->f.made);
				json_figure(f, "reserved_inherited",
					    x->f.inherited);
				if (x->f.released)
					json_figure(f,
						    "reserved_peak_after_release",
						    x->f.after);
				json_figure(f, "fragmentation", x->f.frag);
				json_figure(f, "ooms", x->f.ooms);
				if (rec)
					json_figure(f, "change",
						    changeable(&x->f) -
							    changeable(&rec->f));
				fputc('}', f);
			}
			fputs("],\n   \"best\": ", f);
			if (sp->best != SIZE_MAX)
				as_json_string(f, sp->rows[sp->best].setting);
			else
				fputs("null", f);
			fputs(", \"advice\": ", f);
			as_json_string(f, sp->advice);
			fputs(", \"recorded_ooms\": [", f);
			for (size_t q = 0; q < sp->noom; q++) {
				if (q)
					fputs(", ", f);
				as_json_string(f, sp->oom[q]);
			}
			fputc(']', f);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
	return ferror(f) ? AS_EIO : AS_OK;
}

int cli_tune(int argc, char **argv)
{
	struct tune_opts o;
	memset(&o, 0, sizeof(o));
	if (cli_load_init(&o.lo))
		return EXIT_USAGE;
	const char *json = NULL, *markdown = NULL;
	bool progress = true;
	char **paths = calloc((size_t)argc + 1, sizeof(*paths));
	size_t npaths = 0;
	int status = paths ? 0 : EXIT_USAGE;
	struct axis set[MAX_KEYS];
	size_t nset = 0;
	for (int i = 0; i < argc && !status; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "-f") == 0 && more) {
			if (!as_format_known(o.lo.format = argv[++i]))
				status = usage_error("unknown format '%s'",
						     argv[i]);
		} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
			status = cli_max_input(argv[++i], &o.lo);
		} else if (strcmp(a, "--set") == 0 && more) {
			if (nset == MAX_KEYS)
				status = usage_error("too many --set (%s)",
						     "8");
			else if (parse_set(argv[++i], &set[nset], &status))
				nset++;
		} else if (strcmp(a, "--capacity") == 0 && more) {
			uint64_t cap;
			/* the limit syntax: digits and K..E, "none" refused */
			if (as_parse_max_input(argv[++i], &cap) != AS_OK ||
			    cap == UINT64_MAX)
				status = usage_error("--capacity wants a byte "
						     "count like 24G (K, M, G, "
						     "T: powers of 1024), not "
						     "'%s'",
						     argv[i]);
			else
				snprintf(o.capacity, sizeof(o.capacity),
					 "%" PRIu64, cap);
		} else if (strcmp(a, "--json") == 0 && more) {
			json = argv[++i];
		} else if (strcmp(a, "--markdown") == 0 && more) {
			markdown = argv[++i];
		} else if (strcmp(a, "--no-progress") == 0) {
			progress = false;
		} else if ((strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) &&
			   more) {
			if (!cli_parse_jobs(argv[++i], &o.jobs))
				status = usage_error("-j wants 1 to 64 runs at "
						     "once, not '%s'",
						     argv[i]);
		} else if ((status = cli_rest_arg(argv[i], "allocscope tune",
						  tune_usage, paths,
						  &npaths)) < 0) {
			free(paths);
			return 0;
		}
	}
	if (!status && !npaths)
		status = usage_error("tune needs a SNAPSHOT%s", "");
	if (!status && json && markdown && strcmp(json, markdown) == 0)
		status = usage_error("two outputs go to '%s'", json);
	/* the default grid, each --set replacing or adding its key */
	default_grid(o.ax, &o.nax);
	for (size_t k = 0; !status && k < nset; k++) {
		size_t j = 0;
		while (j < o.nax && strcmp(o.ax[j].key, set[k].key) != 0)
			j++;
		if (j == o.nax && o.nax == MAX_KEYS)
			status = usage_error("too many settings (%s)", "8");
		else if (j == o.nax)
			o.nax++;
		if (!status)
			o.ax[j] = set[k];
	}
	o.ngrid = 1;
	for (size_t k = 0; !status && k < o.nax; k++)
		if ((o.ngrid *= o.ax[k].n) > MAX_ROWS)
			status = usage_error("the grid has more than %s "
					     "settings",
					     "256");
	char **files = NULL;
	size_t nfiles = 0;
	struct as_diag d;
	if (!status && cli_expand_traces(paths, npaths, o.lo.format != NULL, &files,
					 &nfiles, &d) != AS_OK)
		status = cli_report_diag(&d, AS_EINVAL);
	struct tuned *tr = status ? NULL : calloc(nfiles + 1, sizeof(*tr));
	if (!status && !tr)
		status = EXIT_USAGE;
	size_t n = 0;
	cli_progress_start(&o.progress, nfiles * (o.ngrid + 2), progress);
	int invalid = 0;
	for (; !status && n < nfiles; n++) {
		status = tune_one(files[n], &o, &tr[n]);
		if (status == EXIT_INVALID) {
			invalid = status;
			status = 0;
		} else if (status) {
			n++; /* free it too */
		}
	}
	cli_progress_end(&o.progress);
	struct report text = {tr, n, false}, js = {tr, n, false},
		      md = {tr, n, true};
	if (!status && !(json && strcmp(json, "-") == 0))
		status = cli_write_out("-", write_text, &text);
	if (!status && json)
		status = cli_write_out(json, write_json, &js);
	if (!status && markdown)
		status = cli_write_out(markdown, write_text, &md);
	if (!status)
		status = invalid;
	for (size_t k = 0; tr && k < n; k++)
		for (size_t s = 0; s < tr[k].nsp; s++)
			free(tr[k].sp[s].rows);
	free(tr);
	cli_paths_free(files, nfiles);
	free(paths);
	return status;
}
