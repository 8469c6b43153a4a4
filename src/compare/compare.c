/*
 * Comparing two result sets: match rows by trace and strategy, classify
 * every pair by the chosen metric, and put the rows in report order; and
 * which buffers moved between two plans of one trace.
 *
 * Matching is a stable sort of both sides by key (trace, strategy) and a
 * merge; the rows left over go through the same by file name. O(n log n).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/compare.h"
#include "core/internal.h"

static const char *const metric_names[] = {
	[AS_METRIC_PEAK] = "peak",
	[AS_METRIC_PEAK_VS_LB] = "peak_vs_lb",
	[AS_METRIC_FAILED] = "failed",
	[AS_METRIC_PLAN_MS] = "plan_ms",
};

#define NMETRICS (sizeof(metric_names) / sizeof(metric_names[0]))
#define DEFAULT_TIMING_PCT 10.0
#define DEFAULT_NOISE_MS 2.0

int as_metric_from_name(const char *name, enum as_metric *out)
{
	for (size_t i = 0; i < NMETRICS; i++)
		if (strcmp(name, metric_names[i]) == 0) {
			*out = (enum as_metric)i;
			return AS_OK;
		}
	return AS_ENOTFOUND;
}

const char *as_metric_name(enum as_metric m)
{
	return (size_t)m < NMETRICS ? metric_names[m] : "?";
}

bool as_metric_is_timing(enum as_metric m)
{
	return m == AS_METRIC_PLAN_MS;
}

const char *as_metric_format(enum as_metric m, double v, char *buf,
			     size_t len)
{
	switch (m) {
	case AS_METRIC_PEAK:
	case AS_METRIC_FAILED:
		snprintf(buf, len, "%.0f", v);
		break;
	case AS_METRIC_PEAK_VS_LB:
		snprintf(buf, len, "%.4f", v);
		break;
	case AS_METRIC_PLAN_MS:
		snprintf(buf, len, "%.2f", v);
		break;
	}
	return buf;
}

static const char *const change_names[] = {
	[AS_CH_SAME] = "same",
	[AS_CH_BETTER] = "better",
	[AS_CH_WORSE] = "worse",
	[AS_CH_REGRESSED] = "regressed",
	[AS_CH_MORE_FAILED] = "more failed",
	[AS_CH_INVALID] = "invalid",
	[AS_CH_FIXED] = "fixed",
	[AS_CH_TRACE_CHANGED] = "trace changed",
	[AS_CH_ONLY_BASE] = "only in base",
	[AS_CH_LEFT_OUT_NEW] = "left out in new",
	[AS_CH_LEFT_OUT_BASE] = "left out in base",
	[AS_CH_ONLY_NEW] = "only in new",
};

const char *as_change_name(enum as_change c)
{
	return (size_t)c <= AS_CH_ONLY_NEW ? change_names[c] : "?";
}

bool as_change_fails(enum as_change c)
{
	return c == AS_CH_REGRESSED || c == AS_CH_MORE_FAILED ||
	       c == AS_CH_INVALID;
}

bool as_compare_row_fails(const struct as_comparison *c,
			  const struct as_compare_row *r)
{
	bool missing = r->status == AS_CH_ONLY_BASE ||
		       (r->status == AS_CH_LEFT_OUT_NEW && r->base &&
			!r->base->left_out);
	return as_change_fails(r->status) || (c->opts.missing_fails && missing);
}

const char *as_comparison_counts(const struct as_comparison *c, char *buf,
				 size_t len)
{
	int n = snprintf(
		buf, len,
		"%zu rows: %zu regressed, %zu invalid, %zu with more failed "
		"allocations, %zu worse within the threshold, %zu better, %zu "
		"fixed, %zu unchanged, %zu only in base, %zu only in new",
		c->nrows, c->count[AS_CH_REGRESSED], c->count[AS_CH_INVALID],
		c->count[AS_CH_MORE_FAILED], c->count[AS_CH_WORSE],
		c->count[AS_CH_BETTER], c->count[AS_CH_FIXED],
		c->count[AS_CH_SAME], c->count[AS_CH_ONLY_BASE],
		c->count[AS_CH_ONLY_NEW]);
	size_t left_out = c->count[AS_CH_LEFT_OUT_NEW] +
			  c->count[AS_CH_LEFT_OUT_BASE];
	if (left_out && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n,
			 ", %zu left out at the default set's step limit (not "
			 "compared)",
			 left_out);
	return buf;
}

const char *as_compare_value(const struct as_comparison *c,
			     const struct as_compare_row *r, bool new_side,
			     char *buf, size_t len)
{
	const struct as_result_row *x = new_side ? r->new_ : r->base;
	if (!x)
		return NULL;
	if (x->left_out)
		return "left out";
	return as_metric_format(c->opts.metric,
				new_side ? r->new_value : r->base_value, buf,
				len);
}

void as_compare_defaults(struct as_compare_options *o)
{
	*o = (struct as_compare_options){
		.metric = AS_METRIC_PEAK,
		.max_regress_pct = -1,
		.noise_ms = -1,
	};
}

static double metric_value(enum as_metric m, const struct as_result_row *r)
{
	switch (m) {
	case AS_METRIC_PEAK:
		return (double)r->peak;
	case AS_METRIC_PEAK_VS_LB:
		/* From the integers, not the rounded double in the file. */
		return r->lower_bound
			       ? (double)r->peak / (double)r->lower_bound
			       : 0.0;
	case AS_METRIC_FAILED:
		return (double)r->failed;
	case AS_METRIC_PLAN_MS:
		return r->plan_ms;
	}
	return 0.0;
}

/* ---- Matching ---- */

static const char *file_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* How rows are keyed: by trace (or its file name), then by strategy. */
struct key_ctx {
	const struct as_results *r;
	bool trace_only;    /* ignore the strategy */
	bool by_name;       /* the trace's file name, not its whole path */
	bool then_trace;    /* ties broken by the whole trace path */
};

static int row_cmp(const struct key_ctx *k, const struct as_result_row *a,
		   const struct as_result_row *b)
{
	int c = k->by_name ? strcmp(file_name(a->trace), file_name(b->trace))
			   : strcmp(a->trace, b->trace);
	if (c == 0 && k->then_trace)
		c = strcmp(a->trace, b->trace);
	if (c == 0 && !k->trace_only)
		c = strcmp(a->strategy, b->strategy);
	return c;
}

/* By key; as_sort_u32 is stable, so equal keys keep their file order. */
static bool key_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct key_ctx *k = ctx;
	return row_cmp(k, &k->r->rows[a], &k->r->rows[b]) < 0;
}

/* The rows of r not matched yet, as an index list (NULL: no memory). */
static uint32_t *unmatched(const struct as_results *r, const size_t *match,
			   size_t *n)
{
	uint32_t *v = malloc((r->nrows + 1) * sizeof(*v));
	*n = 0;
	for (size_t i = 0; v && i < r->nrows; i++)
		if (match[i] == SIZE_MAX)
			v[(*n)++] = (uint32_t)i;
	return v;
}

/* Pair the rows of two sorted index lists with equal keys, in order. */
static void merge(struct key_ctx kb, const uint32_t *vb, size_t nb,
		  struct key_ctx kn, const uint32_t *vn, size_t nn,
		  size_t *match_b, size_t *match_n)
{
	size_t i = 0, j = 0;
	while (i < nb && j < nn) {
		int c = row_cmp(&kb, &kb.r->rows[vb[i]], &kn.r->rows[vn[j]]);
		if (c < 0) {
			i++;
		} else if (c > 0) {
			j++;
		} else {
			match_b[vb[i]] = vn[j];
			match_n[vn[j]] = vb[i];
			i++;
			j++;
		}
	}
}

/*
 * Keep in v only the rows whose file name stands for one trace among the
 * rows of v: sort by (file name, trace), drop groups with several traces,
 * then sort what is left by (file name, strategy) for the merge.
 */
static int only_unique_names(const struct as_results *r, uint32_t *v,
			     size_t *n, bool trace_only)
{
	struct key_ctx k = {r, true, true, true};
	int err = as_sort_u32(v, *n, key_less, &k);
	if (err != AS_OK)
		return err;
	size_t out = 0;
	for (size_t i = 0; i < *n;) {
		const char *name = file_name(r->rows[v[i]].trace);
		const char *trace = r->rows[v[i]].trace;
		size_t j = i;
		bool one = true;
		while (j < *n &&
		       strcmp(file_name(r->rows[v[j]].trace), name) == 0) {
			one = one && strcmp(r->rows[v[j]].trace, trace) == 0;
			j++;
		}
		for (; one && i < j; i++)
			v[out++] = v[i];
		i = j;
	}
	*n = out;
	k = (struct key_ctx){r, trace_only, true, false};
	return as_sort_u32(v, *n, key_less, &k);
}

/* match_b[i]: the NEW row matched to BASE row i, SIZE_MAX when none. */
static int match_rows(const struct as_results *base,
		      const struct as_results *new_, bool trace_only,
		      size_t *match_b, size_t *match_n)
{
	for (size_t i = 0; i < base->nrows; i++)
		match_b[i] = SIZE_MAX;
	for (size_t i = 0; i < new_->nrows; i++)
		match_n[i] = SIZE_MAX;
	size_t nb, nn;
	uint32_t *vb = unmatched(base, match_b, &nb);
	uint32_t *vn = unmatched(new_, match_n, &nn);
	struct key_ctx kb = {base, trace_only, false, false};
	struct key_ctx kn = {new_, trace_only, false, false};
	int err = AS_ENOMEM;
	if (!vb || !vn || as_sort_u32(vb, nb, key_less, &kb) != AS_OK ||
	    as_sort_u32(vn, nn, key_less, &kn) != AS_OK)
		goto out;
	merge(kb, vb, nb, kn, vn, nn, match_b, match_n);
	free(vb);
	free(vn);

	/* Fallback: the same file name, when it names one trace per side. */
	vb = unmatched(base, match_b, &nb);
	vn = unmatched(new_, match_n, &nn);
	if (!vb || !vn ||
	    only_unique_names(base, vb, &nb, trace_only) != AS_OK ||
	    only_unique_names(new_, vn, &nn, trace_only) != AS_OK)
		goto out;
	kb = (struct key_ctx){base, trace_only, true, false};
	kn = (struct key_ctx){new_, trace_only, true, false};
	merge(kb, vb, nb, kn, vn, nn, match_b, match_n);
	err = AS_OK;
out:
	free(vb);
	free(vn);
	return err;
}

/* ---- Classifying ---- */

static void classify(const struct as_compare_options *o,
		     struct as_compare_row *r)
{
	r->base_value = metric_value(o->metric, r->base);
	r->new_value = metric_value(o->metric, r->new_);
	r->change = r->new_value - r->base_value;
	if (o->metric == AS_METRIC_PEAK || o->metric == AS_METRIC_FAILED) {
		/* The difference of the integers, exact where it is small. */
		uint64_t b = o->metric == AS_METRIC_PEAK ? r->base->peak
							 : r->base->failed;
		uint64_t n = o->metric == AS_METRIC_PEAK ? r->new_->peak
							 : r->new_->failed;
		r->change = n >= b ? (double)(n - b) : -(double)(b - n);
	}
	if (r->base_value != 0.0)
		r->change_pct = r->change * 100.0 / fabs(r->base_value);
	else
		r->pct_infinite = r->change > 0.0;
	if (!r->new_->valid) {
		r->status = AS_CH_INVALID;
		return;
	}
	/*
	 * An edited trace (same name, other content) says nothing about the
	 * strategy: report it, and let the baseline be regenerated.
	 */
	if (r->base->lower_bound != r->new_->lower_bound ||
	    (r->base->buffers && r->new_->buffers &&
	     (r->base->buffers != r->new_->buffers ||
	      r->base->events != r->new_->events))) {
		r->status = AS_CH_TRACE_CHANGED;
		return;
	}
	if (!r->base->valid) {
		r->status = AS_CH_FIXED;
		return;
	}
	double allowance = as_metric_is_timing(o->metric) ? o->noise_ms : 0.0;
	/*
	 * Counts decide by their integers: doubles lose single bytes above
	 * 2^53, and a byte is a regression too.
	 */
	int dir = 0;
	if (o->metric == AS_METRIC_PEAK)
		dir = (r->new_->peak > r->base->peak) -
		      (r->new_->peak < r->base->peak);
	else if (o->metric == AS_METRIC_FAILED)
		dir = (r->new_->failed > r->base->failed) -
		      (r->new_->failed < r->base->failed);
	else
		dir = (r->change > allowance) - (r->change < -allowance);
	if (dir > 0)
		r->status = r->pct_infinite || r->change_pct > o->max_regress_pct
				    ? AS_CH_REGRESSED
				    : AS_CH_WORSE;
	else if (dir < 0)
		r->status = AS_CH_BETTER;
	else
		r->status = AS_CH_SAME;
	/*
	 * A smaller peak bought by failing allocations is no improvement: size
	 * metrics only mean the same thing when the same buffers were placed.
	 */
	if ((o->metric == AS_METRIC_PEAK || o->metric == AS_METRIC_PEAK_VS_LB) &&
	    r->new_->failed > r->base->failed && r->status != AS_CH_REGRESSED)
		r->status = AS_CH_MORE_FAILED;
}

/* A row with a plan on one side at most: missing, or left out. */
static void unpaired(const struct as_compare_options *o,
		     struct as_compare_row *r)
{
	if (r->base) /* 0 for a row left out */
		r->base_value = metric_value(o->metric, r->base);
	if (r->new_)
		r->new_value = metric_value(o->metric, r->new_);
	if (r->new_ && r->new_->left_out)
		r->status = AS_CH_LEFT_OUT_NEW;
	else if (r->base && r->base->left_out)
		r->status = AS_CH_LEFT_OUT_BASE;
	else
		r->status = r->new_ ? AS_CH_ONLY_NEW : AS_CH_ONLY_BASE;
}

int as_compare(const struct as_results *base, const struct as_results *new_,
	       const struct as_compare_options *opts,
	       struct as_comparison **out)
{
	struct as_compare_options o;
	if (opts)
		o = *opts;
	else
		as_compare_defaults(&o);
	if ((size_t)o.metric >= NMETRICS || base->nrows >= UINT32_MAX ||
	    new_->nrows >= UINT32_MAX)
		return AS_EINVAL;
	if (o.max_regress_pct < 0)
		o.max_regress_pct =
			as_metric_is_timing(o.metric) ? DEFAULT_TIMING_PCT : 0.0;
	if (o.noise_ms < 0)
		o.noise_ms = DEFAULT_NOISE_MS;

	struct as_comparison *c = calloc(1, sizeof(*c));
	size_t *mb = malloc((base->nrows + 1) * sizeof(*mb));
	size_t *mn = malloc((new_->nrows + 1) * sizeof(*mn));
	int err = AS_ENOMEM;
	if (!c || !mb || !mn)
		goto fail;
	c->opts = o;
	c->rows = calloc(base->nrows + new_->nrows + 1, sizeof(*c->rows));
	if (!c->rows)
		goto fail;
	if ((err = match_rows(base, new_, o.by_trace_only, mb, mn)) != AS_OK)
		goto fail;
	for (size_t i = 0; i < base->nrows; i++) {
		struct as_compare_row *r = &c->rows[c->nrows++];
		r->base = &base->rows[i];
		r->new_ = mb[i] == SIZE_MAX ? NULL : &new_->rows[mb[i]];
		if (as_compare_row_paired(r))
			classify(&o, r);
		else
			unpaired(&o, r);
	}
	for (size_t i = 0; i < new_->nrows; i++) {
		if (mn[i] != SIZE_MAX)
			continue;
		struct as_compare_row *r = &c->rows[c->nrows++];
		r->new_ = &new_->rows[i];
		unpaired(&o, r);
	}
	for (size_t i = 0; i < c->nrows; i++) {
		c->count[c->rows[i].status]++;
		c->nfailing += as_compare_row_fails(c, &c->rows[i]);
	}
	free(mb);
	free(mn);
	*out = c;
	return AS_OK;
fail:
	free(mb);
	free(mn);
	as_comparison_destroy(c);
	return err;
}

void as_comparison_destroy(struct as_comparison *c)
{
	if (!c)
		return;
	free(c->rows);
	free(c);
}

/* ---- Report order ---- */

static int group_of(const struct as_comparison *c,
		    const struct as_compare_row *r)
{
	if (as_compare_row_fails(c, r))
		return 0;
	switch (r->status) {
	case AS_CH_INVALID:
	case AS_CH_REGRESSED:
	case AS_CH_MORE_FAILED:
		return 0;
	case AS_CH_WORSE:
		return 1;
	case AS_CH_ONLY_BASE:
	case AS_CH_LEFT_OUT_NEW:
		return 2;
	case AS_CH_TRACE_CHANGED:
		return 3;
	case AS_CH_ONLY_NEW:
	case AS_CH_LEFT_OUT_BASE:
		return 4;
	case AS_CH_BETTER:
		return 5;
	case AS_CH_FIXED:
		return 6;
	case AS_CH_SAME:
		return 7;
	}
	return 8;
}

static double sort_weight(const struct as_compare_row *r)
{
	if (r->pct_infinite)
		return INFINITY;
	return fabs(r->change_pct);
}

/* Group, then the largest change first; stable, so ties keep row order. */
static bool order_less(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_comparison *c = ctx;
	const struct as_compare_row *ra = &c->rows[a], *rb = &c->rows[b];
	int ga = group_of(c, ra), gb = group_of(c, rb);
	if (ga != gb)
		return ga < gb;
	return sort_weight(ra) > sort_weight(rb);
}

int as_comparison_order(const struct as_comparison *c, size_t *order)
{
	uint32_t *v = malloc((c->nrows + 1) * sizeof(*v));
	if (!v)
		return AS_ENOMEM;
	for (size_t i = 0; i < c->nrows; i++)
		v[i] = (uint32_t)i;
	int err = as_sort_u32(v, c->nrows, order_less, c);
	for (size_t i = 0; err == AS_OK && i < c->nrows; i++)
		order[i] = v[i];
	free(v);
	return err;
}

/* ---- Two plans of one trace ---- */

int as_plan_delta(const struct as_trace *t, const struct as_plan *a,
		  const struct as_plan *b, uint8_t *marks,
		  struct as_plan_delta *out)
{
	if (a->nbuffers != t->nbuffers || b->nbuffers != t->nbuffers)
		return AS_EINVAL;
	struct as_plan_delta d = {
		.peak_a = as_plan_peak(a, t, -1),
		.peak_b = as_plan_peak(b, t, -1),
		.peak_buffer = AS_NONE,
	};
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		uint64_t ob = b->offset[i];
		bool moved = a->offset[i] != ob ||
			     as_plan_space_of(a, t, i) !=
				     as_plan_space_of(b, t, i);
		d.moved += moved;
		if (marks)
			marks[i] = moved ? AS_MARK_MOVED : 0;
		uint64_t size = t->buffers[i].size;
		if (ob != AS_NO_OFFSET && d.peak_buffer == AS_NONE &&
		    ob <= UINT64_MAX - size && ob + size == d.peak_b &&
		    d.peak_b > 0)
			d.peak_buffer = i;
	}
	if (d.peak_buffer != AS_NONE) {
		const struct as_buffer *pb = &t->buffers[d.peak_buffer];
		uint16_t space = as_plan_space_of(b, t, d.peak_buffer);
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			const struct as_buffer *x = &t->buffers[i];
			if (b->offset[i] == AS_NO_OFFSET ||
			    as_plan_space_of(b, t, i) != space ||
			    x->start > pb->start || x->end <= pb->start)
				continue;
			d.at_peak++;
			if (marks)
				marks[i] |= AS_MARK_AT_PEAK;
		}
	}
	*out = d;
	return AS_OK;
}
