/*
 * Two recordings of one program compared group by group (diff --by): each
 * group at the peak of each space becomes a result row (trace: the space,
 * strategy: the group's key, peak: its bytes), a group only one side has
 * gets a row of 0 bytes on the other, and compare.c judges the rows as it
 * judges plans: the same statuses, --max-regress and exit status.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

static int add_row(struct as_results *r, const char *space, const char *key,
		   uint64_t bytes)
{
	struct as_result_row row = {
		.trace = space,
		.strategy = key,
		.peak = bytes,
		.valid = true,
	};
	return as_results_add(r, &row);
}

const struct as_explain_group *as_explain_find(const struct as_explain *e,
					       const char *space_name,
					       const char *key)
{
	for (uint16_t s = 0; e && s < e->nspaces; s++) {
		const struct as_explain_space *x = &e->spaces[s];
		if (strcmp(x->name, space_name) != 0)
			continue;
		for (uint32_t j = 0; j < x->live.ngroups; j++)
			if (strcmp(x->live.groups[j].key, key) == 0)
				return &x->live.groups[j];
	}
	return NULL;
}

/* The live groups of e by space and key (namespace: the space). */
static int index_groups(const struct as_explain *e, struct as_strmap *m)
{
	for (uint16_t s = 0; s < e->nspaces; s++) {
		const struct as_explain_space *x = &e->spaces[s];
		for (uint32_t j = 0; j < x->live.ngroups; j++) {
			const char *k = x->live.groups[j].key;
			if (as_strmap_put(m, s, k, strlen(k), j, true))
				return AS_ENOMEM;
		}
	}
	return AS_OK;
}

/* Space `name` of e, or -1. */
static int space_named(const struct as_explain *e, const char *name)
{
	for (uint16_t s = 0; s < e->nspaces; s++)
		if (strcmp(e->spaces[s].name, name) == 0)
			return s;
	return -1;
}

/* The groups of `from` (its rows into `own`), with a 0-byte row into
 * `other` for each group `to` (indexed by `to_index`) lacks. */
static int rows_of(const struct as_explain *from, const struct as_explain *to,
		   const struct as_strmap *to_index, struct as_results *own,
		   struct as_results *other)
{
	for (uint16_t s = 0; s < from->nspaces; s++) {
		const struct as_explain_space *x = &from->spaces[s];
		int ts = space_named(to, x->name);
		for (uint32_t j = 0; j < x->live.ngroups; j++) {
			const struct as_explain_group *g = &x->live.groups[j];
			int err = add_row(own, x->name, g->key, g->bytes);
			if (!err && (ts < 0 || as_strmap_get(to_index, (uint32_t)ts,
							     g->key, strlen(g->key)) ==
						       AS_NONE))
				err = add_row(other, x->name, g->key, 0);
			if (err)
				return err;
		}
	}
	return AS_OK;
}

int as_explain_results(const struct as_explain *a, const struct as_explain *b,
		       struct as_results *base, struct as_results *new_)
{
	if (!a || !b || !base || !new_)
		return AS_EINVAL;
	struct as_strmap ia = {0}, ib = {0};
	int err = index_groups(a, &ia);
	if (!err)
		err = index_groups(b, &ib);
	if (!err)
		err = rows_of(a, b, &ib, base, new_);
	if (!err) /* b's own groups, each once: a's zero rows are in base */
		err = rows_of(b, a, &ia, new_, base);
	as_strmap_finish(&ia);
	as_strmap_finish(&ib);
	return err;
}

struct order_ctx {
	const struct as_comparison *c;
	const uint32_t *group;  /* per row: its status group's rank */
};

static bool by_group_then_change(uint32_t a, uint32_t b, const void *ctx)
{
	const struct order_ctx *o = ctx;
	if (o->group[a] != o->group[b])
		return o->group[a] < o->group[b];
	double x = fabs(o->c->rows[a].change), y = fabs(o->c->rows[b].change);
	return x > y;
}

int as_explain_diff_order(const struct as_comparison *c, size_t *order)
{
	if (as_comparison_order(c, order))
		return AS_ENOMEM;
	uint32_t *group = malloc(sizeof(*group) * (c->nrows + 1));
	uint32_t *idx = malloc(sizeof(*idx) * (c->nrows + 1));
	int err = group && idx ? AS_OK : AS_ENOMEM;
	/* Groups as as_comparison_order leaves them: runs of one status. */
	for (size_t k = 0, rank = 0; !err && k < c->nrows; k++) {
		if (k && c->rows[order[k]].status != c->rows[order[k - 1]].status)
			rank++;
		group[order[k]] = (uint32_t)rank;
		idx[k] = (uint32_t)order[k];
	}
	struct order_ctx o = {c, group};
	if (!err && (err = as_sort_u32(idx, c->nrows, by_group_then_change, &o)) ==
			    AS_OK)
		for (size_t k = 0; k < c->nrows; k++)
			order[k] = idx[k];
	free(group);
	free(idx);
	return err;
}

/* The frames of a row's group, from whichever side has it. */
static const struct as_explain_group *group_of_row(const struct as_compare_row *r,
						   const struct as_explain *a,
						   const struct as_explain *b)
{
	const struct as_result_row *x = r->new_ ? r->new_ : r->base;
	const struct as_explain_group *g = as_explain_find(b, x->trace, x->strategy);
	return g && g->bytes ? g : as_explain_find(a, x->trace, x->strategy);
}

int as_explain_write_diff_markdown(const struct as_comparison *c,
				   const struct as_explain *a,
				   const struct as_explain *b, FILE *f,
				   bool all_rows)
{
	size_t *order = malloc(sizeof(*order) * (c->nrows + 1));
	if (!order || as_explain_diff_order(c, order)) {
		free(order);
		return AS_ENOMEM;
	}
	bool failed = as_comparison_failed(c);
	fprintf(f, "### allocscope diff by %s: %s\n\n",
		as_group_by_name(a->opts.by),
		failed ? "❌ regression" : "✅ no regression");
	fputs("Base ", f);
	as_escape_write(f, a->trace->path, AS_ESCAPE_MARKDOWN);
	fputs(", new ", f);
	as_escape_write(f, b->trace->path, AS_ESCAPE_MARKDOWN);
	fprintf(f, ". A group regresses when its bytes at the peak grow by more "
		   "than %.2f%%.\n\n",
		c->opts.max_regress_pct);
	static const char *const head[] = {"status", "space",	 "base",
					   "new",    "change", "change %",
					   "top frames"};
	as_md_table_head(f, head, "llrrrrl");
	size_t same = 0;
	for (size_t k = 0; k < c->nrows; k++) {
		const struct as_compare_row *r = &c->rows[order[k]];
		if (r->status == AS_CH_SAME && !all_rows) {
			same++;
			continue;
		}
		bool fails = as_compare_row_fails(c, r);
		char hb1[32], hb2[32], hb3[32];
		fprintf(f, "| %s%s%s | ", fails ? "**" : "",
			as_change_name(r->status), fails ? "**" : "");
		as_escape_write(f, (r->base ? r->base : r->new_)->trace, AS_ESCAPE_MARKDOWN);
		fprintf(f, " | %s | %s | %s%s | ",
			as_human_bytes((uint64_t)r->base_value, hb1, sizeof(hb1)),
			as_human_bytes((uint64_t)r->new_value, hb2, sizeof(hb2)),
			r->change > 0 ? "+" : r->change < 0 ? "-" : "",
			as_human_bytes((uint64_t)(r->change < 0 ? -r->change
								: r->change),
				       hb3, sizeof(hb3)));
		if (r->pct_infinite)
			fputs("new | ", f);
		else
			fprintf(f, "%+.2f%% | ", r->change_pct);
		const struct as_explain_group *g = group_of_row(r, a, b);
		for (uint32_t j = 0; g && j < g->nframes && j < 3; j++) {
			char fr[512];
			as_x_short_frame(g->frames[j], fr, sizeof(fr));
			if (j)
				fputs("<br>", f);
			as_escape_write(f, fr, AS_ESCAPE_MARKDOWN);
		}
		if (g && !g->nframes)
			as_escape_write(f, g->key, AS_ESCAPE_MARKDOWN);
		fputs(" |\n", f);
	}
	if (same)
		fprintf(f, "\n%zu groups unchanged.\n", same);
	free(order);
	return ferror(f) ? AS_EIO : AS_OK;
}
