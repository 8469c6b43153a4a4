/*
 * A comparison as Markdown, for CI comments and job summaries: a verdict
 * line, the counts, then one table row per change, regressions first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/compare.h"
#include "core/internal.h"

/*
 * A trace's name: a code span, or text when it holds a backtick (which no
 * code span can). Names are escaped (as_escape): control bytes as \xNN,
 * and nothing in them becomes HTML, a link, emphasis or a new column.
 */
static void md_trace(FILE *f, const char *s)
{
	if (strchr(s, '`')) {
		as_escape_write(f, s, AS_ESCAPE_MARKDOWN);
		return;
	}
	putc('`', f);
	as_escape_write(f, s, AS_ESCAPE_MARKDOWN_CODE);
	putc('`', f);
}

static void md_strategy(FILE *f, const struct as_compare_row *r)
{
	const char *b = r->base ? r->base->strategy : NULL;
	const char *n = r->new_ ? r->new_->strategy : NULL;
	as_escape_write(f, b ? b : n, AS_ESCAPE_MARKDOWN);
	if (b && n && strcmp(b, n) != 0) {
		fputs(" → ", f);
		as_escape_write(f, n, AS_ESCAPE_MARKDOWN);
	}
}

/* One row. */
static void md_row(FILE *f, const struct as_comparison *c,
		   const struct as_compare_row *r)
{
	enum as_metric m = c->opts.metric;
	char buf[64];
	bool fails = as_compare_row_fails(c, r);
	fprintf(f, "| %s%s%s | ", fails ? "**" : "",
		as_change_name(r->status), fails ? "**" : "");
	md_trace(f, r->base ? r->base->trace : r->new_->trace);
	fputs(" | ", f);
	md_strategy(f, r);
	fputs(" | ", f);
	const char *v = as_compare_value(c, r, false, buf, sizeof(buf));
	fputs(v ? v : "—", f);
	fputs(" | ", f);
	v = as_compare_value(c, r, true, buf, sizeof(buf));
	fputs(v ? v : "—", f);
	fputs(" | ", f);
	if (as_compare_row_paired(r)) {
		as_metric_format(m, fabs(r->change), buf, sizeof(buf));
		fprintf(f, "%s%s | ",
			r->change > 0 ? "+" : r->change < 0 ? "-" : "", buf);
		if (r->pct_infinite)
			fputs("new |", f);
		else
			fprintf(f, "%+.2f%% |", r->change_pct);
	} else {
		fputs("— | — |", f);
	}
	const char *sep = " ";
	if (as_compare_row_paired(r) && r->new_->failed != r->base->failed) {
		fprintf(f, "%sfailed %llu → %llu", sep,
			(unsigned long long)r->base->failed,
			(unsigned long long)r->new_->failed);
		sep = "; ";
	} else if (r->new_ && r->new_->failed) {
		fprintf(f, "%sfailed %llu", sep,
			(unsigned long long)r->new_->failed);
		sep = "; ";
	}
	if (r->new_ && !r->new_->valid)
		fprintf(f, "%sinvalid plan: %llu violations", sep,
			(unsigned long long)r->new_->violations);
	else if (r->status == AS_CH_FIXED)
		fprintf(f, "%sbase plan was invalid", sep);
	fputs(" |\n", f);
}

int as_comparison_write_markdown(const struct as_comparison *c, FILE *f,
				 bool all_rows)
{
	size_t *order = malloc((c->nrows + 1) * sizeof(*order));
	if (!order || as_comparison_order(c, order) != AS_OK) {
		free(order);
		return AS_ENOMEM;
	}
	enum as_metric m = c->opts.metric;

	fprintf(f, "### allocscope diff (%s): %s\n\n", as_metric_name(m),
		as_comparison_failed(c) ? "❌ regression" : "✅ no regression");
	char counts[640];
	fputs(as_comparison_counts(c, counts, sizeof(counts)), f);
	fputs(".\n\n", f);
	if (c->count[AS_CH_TRACE_CHANGED])
		fprintf(f, "%zu rows are of traces whose content changed "
			   "(lower bound, buffers or events): not compared; "
			   "regenerate the base.\n\n",
			c->count[AS_CH_TRACE_CHANGED]);
	if (as_metric_is_timing(m))
		fprintf(f, "A row regresses when `%s` grows by more than "
			   "%.2f%% and by more than %.2f ms (noise allowance)."
			   "\n\n",
			as_metric_name(m), c->opts.max_regress_pct,
			c->opts.noise_ms);
	else
		fprintf(f, "A row regresses when `%s` grows by more than "
			   "%.2f%%, when more allocations fail, or when its "
			   "plan is invalid.\n\n",
			as_metric_name(m), c->opts.max_regress_pct);

	size_t shown = 0;
	for (size_t k = 0; k < c->nrows; k++)
		shown += all_rows || c->rows[order[k]].status != AS_CH_SAME;
	if (shown) {
		static const char *const head[] = {
			"status", "trace",  "strategy", "base",
			"new",	  "change", "change %", "notes"};
		as_md_table_head(f, head, "lllrrrrl");
		for (size_t k = 0; k < c->nrows; k++) {
			const struct as_compare_row *r = &c->rows[order[k]];
			if (all_rows || r->status != AS_CH_SAME)
				md_row(f, c, r);
		}
		fputs("\n", f);
	}
	if (!all_rows && c->count[AS_CH_SAME])
		fprintf(f, "%zu unchanged rows not shown.\n",
			c->count[AS_CH_SAME]);
	free(order);
	return ferror(f) ? AS_EIO : AS_OK;
}

