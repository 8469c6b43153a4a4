/*
 * explain: out of memory. For the trace, its recorded OOMs (the marks) with
 * what the recording tells: the request, the free device memory it gives,
 * the bytes live in the trace then and those of its recorded segments; and
 * from those, when it has both, whether the request failed for
 * fragmentation (the device had room for it beside the live bytes, not in
 * one piece) or for live memory. For a plan, the OOMs its model ran into
 * (as_plan_oom: cuda-caching's), with the cached free bytes by size class
 * and the largest free block. Writers for text, JSON and Markdown.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

const char *as_oom_verdict_name(enum as_oom_verdict v)
{
	switch (v) {
	case AS_OOM_FRAGMENTATION:
		return "fragmentation";
	case AS_OOM_LIVE_MEMORY:
		return "live memory";
	case AS_OOM_UNKNOWN:
		break;
	}
	return NULL;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/*
 * Bytes by (space, step): sorted keys and running sums, so that the bytes
 * of a space with keys below a step take two binary searches (a trace may
 * hold millions of OOM marks and buffers: no scan per mark).
 */
struct sums {
	struct key {
		uint64_t key;
		uint64_t size;
		uint16_t space;
	} *k;
	unsigned __int128 *sum; /* sum[i]: the first i sizes */
	size_t n;
};

static int key_cmp(const void *pa, const void *pb)
{
	const struct key *a = pa, *b = pb;
	if (a->space != b->space)
		return a->space < b->space ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

static int sums_make(struct sums *s)
{
	qsort(s->k, s->n, sizeof(*s->k), key_cmp);
	if (!(s->sum = malloc((s->n + 1) * sizeof(*s->sum))))
		return AS_ENOMEM;
	s->sum[0] = 0;
	for (size_t i = 0; i < s->n; i++)
		s->sum[i + 1] = s->sum[i] + s->k[i].size;
	return AS_OK;
}

/* The number of keys before (space, key). */
static size_t sums_rank(const struct sums *s, uint16_t space, uint64_t key)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct key *k = &s->k[mid];
		if (k->space < space || (k->space == space && k->key < key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Bytes of `space` with keys below `key`. */
static unsigned __int128 sums_below(const struct sums *s, uint16_t space,
				    uint64_t key)
{
	return s->sum[sums_rank(s, space, key)] - s->sum[sums_rank(s, space, 0)];
}

static void sums_free(struct sums *s)
{
	free(s->k);
	free(s->sum);
}

static uint64_t clamp(unsigned __int128 v)
{
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/*
 * What the recording tells at its OOM marks. A mark comes before the
 * operation of its step: a buffer made before it and freed at it or later
 * is live (start < T <= end), a segment from its step to before its end
 * (start <= T < end).
 */
static int recorded_figures(const struct as_trace *t, struct as_explain *e)
{
	struct sums bs = {0}, be = {0}, ss = {0}, se = {0};
	int err = AS_ENOMEM;
	size_t nb = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		nb += t->buffers[i].alias_of == AS_NONE;
	if (!(bs.k = malloc((nb + 1) * sizeof(*bs.k))) ||
	    !(be.k = malloc((nb + 1) * sizeof(*be.k))) ||
	    !(ss.k = malloc(((size_t)t->nsegments + 1) * sizeof(*ss.k))) ||
	    !(se.k = malloc(((size_t)t->nsegments + 1) * sizeof(*se.k))))
		goto out;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		if (b->alias_of != AS_NONE)
			continue;
		bs.k[bs.n++] = (struct key){b->start, b->size, b->space};
		be.k[be.n++] = (struct key){b->end, b->size, b->space};
	}
	for (uint32_t i = 0; i < t->nsegments; i++) {
		const struct as_segment *g = &t->segments[i];
		ss.k[ss.n++] = (struct key){g->start, g->size, g->space};
		se.k[se.n++] = (struct key){g->end, g->size, g->space};
	}
	if (sums_make(&bs) || sums_make(&be) || sums_make(&ss) ||
	    sums_make(&se))
		goto out;
	for (uint32_t i = 0; i < e->nooms; i++) {
		struct as_explain_oom *o = &e->ooms[i];
		uint64_t at = o->time, after = at == UINT64_MAX ? at : at + 1;
		o->live = clamp(sums_below(&bs, o->space, at) -
				sums_below(&be, o->space, at));
		o->reserved = clamp(sums_below(&ss, o->space, after) -
				    sums_below(&se, o->space, after));
		o->has_reserved = t->nsegments > 0;
		if (!o->has_reserved || !o->device_free)
			continue;
		o->device_total = add_sat(o->reserved, o->device_free);
		o->verdict = o->live <= o->device_total &&
					     o->request <= o->device_total - o->live
				     ? AS_OOM_FRAGMENTATION
				     : AS_OOM_LIVE_MEMORY;
	}
	err = AS_OK;
out:
	sums_free(&bs);
	sums_free(&be);
	sums_free(&ss);
	sums_free(&se);
	return err;
}

int as_x_oom_trace(struct as_explain *e, const struct as_trace *t)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nmarks; i++)
		n += t->marks[i].kind == AS_MARK_OOM && t->marks[i].space <
							      t->nspaces;
	if (!n)
		return AS_OK;
	if (!(e->ooms = calloc(n, sizeof(*e->ooms))))
		return AS_ENOMEM;
	for (uint32_t i = 0; i < t->nmarks; i++) {
		const struct as_mark *m = &t->marks[i];
		if (m->kind != AS_MARK_OOM || m->space >= t->nspaces)
			continue;
		struct as_explain_oom *o = &e->ooms[e->nooms++];
		o->space = m->space;
		o->space_name = t->spaces[m->space].name;
		o->time = m->time;
		o->request = m->size;
		o->recorded = true;
		o->device_free = m->device_free;
	}
	return recorded_figures(t, e);
}

int as_x_oom_plan(struct as_explain *e, const struct as_trace *t,
		  const struct as_plan *p)
{
	if (!p->nooms)
		return AS_OK;
	if (!(e->ooms = calloc(p->nooms, sizeof(*e->ooms))))
		return AS_ENOMEM;
	for (uint32_t i = 0; i < p->nooms; i++) {
		const struct as_plan_oom *q = &p->ooms[i];
		struct as_explain_oom *o = &e->ooms[i];
		*o = (struct as_explain_oom){
			.space = q->space,
			.space_name = as_plan_space_name(p, t, q->space),
			.time = q->time, .request = q->request,
			.recorded = q->recorded, .modelled = true,
			.live = q->live, .reserved = q->reserved,
			.has_reserved = true, .device_total = q->capacity,
			.block_size = q->size, .device_request = q->alloc_size,
			.largest_free = q->largest,
			.verdict = q->fragmentation ? AS_OOM_FRAGMENTATION
						    : AS_OOM_LIVE_MEMORY,
		};
		memcpy(o->cached, q->cached, sizeof(o->cached));
	}
	/* spaces are modelled one after another: time order */
	for (uint32_t i = 1; i < p->nooms; i++)
		for (uint32_t j = i; j > 0 &&
				     e->ooms[j].time < e->ooms[j - 1].time;
		     j--) {
			struct as_explain_oom x = e->ooms[j];
			e->ooms[j] = e->ooms[j - 1];
			e->ooms[j - 1] = x;
		}
	e->nooms = p->nooms;
	return AS_OK;
}

static uint64_t cached_total(const struct as_explain_oom *o)
{
	uint64_t n = 0;
	for (int k = 0; k < AS_OOM_CLASSES; k++)
		n = add_sat(n, o->cached[k]);
	return n;
}

/* Reserved minus live (what a recording tells of the cache). */
static uint64_t unused(const struct as_explain_oom *o)
{
	return o->reserved > o->live ? o->reserved - o->live : 0;
}

static const char *hb(uint64_t n, char *buf, size_t len)
{
	return as_human_bytes(n, buf, len);
}

static const char *verdict_text(const struct as_explain_oom *o)
{
	if (o->verdict == AS_OOM_FRAGMENTATION)
		return "fragmentation: the device had room for it beside the "
		       "live bytes, not in one piece";
	if (o->verdict == AS_OOM_LIVE_MEMORY)
		return "live memory: the live bytes and the request exceed "
		       "the device";
	return NULL;
}

bool as_x_oom_modelled(const struct as_explain_entry *entry)
{
	for (size_t p = 0; p < entry->nplans; p++) {
		const struct as_strategy_info *si =
			as_strategy_find_by_spec(entry->plans[p]->spec);
		if (si && strcmp(si->name, "cuda-caching") == 0)
			return true;
	}
	return false;
}

void as_x_oom_text(FILE *f, const struct as_explain *e, bool suggest,
		   const char *indent)
{
	char a[32], b[32], c[32], nm[256];
	for (uint32_t i = 0; i < e->nooms; i++) {
		const struct as_explain_oom *o = &e->ooms[i];
		as_x_tx(o->space_name, nm, sizeof(nm));
		fprintf(f, "%sout of memory (%s): %s: step %" PRIu64
			   ": request %s (%" PRIu64 " bytes)",
			indent,
			o->modelled ? (o->recorded ? "recorded, modelled"
						   : "modelled")
				    : "recorded",
			nm, o->time, hb(o->request, a, sizeof(a)), o->request);
		if (o->modelled)
			fprintf(f, ", %s as a block, %s from the device",
				hb(o->block_size, a, sizeof(a)),
				hb(o->device_request, b, sizeof(b)));
		fputc('\n', f);
		fprintf(f, "%s  live %s", indent, hb(o->live, a, sizeof(a)));
		if (o->has_reserved)
			fprintf(f, ", reserved %s", hb(o->reserved, a, sizeof(a)));
		if (o->modelled)
			fprintf(f, " of %s",
				o->device_total ? hb(o->device_total, b, sizeof(b))
						: "unlimited");
		else if (o->device_free)
			fprintf(f, ", device free %s",
				hb(o->device_free, b, sizeof(b)));
		if (!o->modelled && o->has_reserved)
			fprintf(f, "; reserved and not live %s",
				hb(unused(o), c, sizeof(c)));
		fputc('\n', f);
		if (o->modelled) {
			fprintf(f, "%s  cached free %s:", indent,
				hb(cached_total(o), a, sizeof(a)));
			for (unsigned k = 0; k < AS_OOM_CLASSES; k++)
				fprintf(f, " %s %s%s", as_oom_class_name(k),
					hb(o->cached[k], a, sizeof(a)),
					k + 1 < AS_OOM_CLASSES ? "," : "");
			fprintf(f, "; largest free block %s\n",
				hb(o->largest_free, a, sizeof(a)));
		}
		if (verdict_text(o))
			fprintf(f, "%s  failed for %s\n", indent, verdict_text(o));
		if (suggest && !o->modelled)
			fprintf(f, "%s  the allocator's cached blocks by size "
				   "and its largest free block: explain -s "
				   "cuda-caching\n",
				indent);
	}
}

void as_x_oom_json(FILE *f, const struct as_explain *e, const char *indent)
{
	fputs(",\n", f);
	fprintf(f, "%s\"ooms\": [", indent);
	for (uint32_t i = 0; i < e->nooms; i++) {
		const struct as_explain_oom *o = &e->ooms[i];
		fprintf(f, "%s\n%s {\"space\": ", i ? "," : "", indent);
		as_json_string(f, o->space_name ? o->space_name : "");
		fprintf(f, ", \"time\": %" PRIu64, o->time);
		uint64_t us;
		if (as_x_clock(e, o->time, &us))
			fprintf(f, ", \"time_us\": %" PRIu64, us);
		fprintf(f, ", \"request\": %" PRIu64
			   ", \"recorded\": %s, \"modelled\": %s"
			   ", \"live\": %" PRIu64 ", \"reserved\": ",
			o->request, o->recorded ? "true" : "false",
			o->modelled ? "true" : "false", o->live);
		if (o->has_reserved)
			fprintf(f, "%" PRIu64, o->reserved);
		else
			fputs("null", f);
		fputs(", \"device_free\": ", f);
		if (!o->modelled && o->device_free)
			fprintf(f, "%" PRIu64, o->device_free);
		else
			fputs("null", f);
		fputs(", \"device_total\": ", f);
		if (o->device_total)
			fprintf(f, "%" PRIu64, o->device_total);
		else
			fputs("null", f);
		if (o->modelled) {
			fprintf(f, ", \"block_size\": %" PRIu64
				   ", \"device_request\": %" PRIu64
				   ", \"cached_free\": %" PRIu64
				   ", \"cached_by_class\": {",
				o->block_size, o->device_request,
				cached_total(o));
			for (unsigned k = 0; k < AS_OOM_CLASSES; k++)
				fprintf(f, "%s\"%s\": %" PRIu64, k ? ", " : "",
					as_oom_class_name(k), o->cached[k]);
			fprintf(f, "}, \"largest_free\": %" PRIu64,
				o->largest_free);
		} else {
			fputs(", \"block_size\": null, \"device_request\": null"
			      ", \"cached_free\": null, \"cached_by_class\": "
			      "null, \"largest_free\": null",
			      f);
		}
		fputs(", \"verdict\": ", f);
		if (as_oom_verdict_name(o->verdict))
			as_json_string(f, as_oom_verdict_name(o->verdict));
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputc(']', f);
}

void as_x_oom_markdown(FILE *f, const struct as_explain *e, bool suggest)
{
	char a[32], b[32], c[32];
	if (!e->nooms)
		return;
	fputs("#### Out of memory", f);
	if (e->spec) {
		fputs(" · ", f);
		as_escape_write(f, e->spec, AS_ESCAPE_MARKDOWN);
	}
	static const char *const head[] = {
		"space",    "step",	   "request",
		"live",	    "reserved",	   "device",
		"cached free", "largest free block", "failed for"};
	fputs("\n\n", f);
	as_md_table_head(f, head, "lrrrrrlrl");
	bool recorded_only = false;
	for (uint32_t i = 0; i < e->nooms; i++) {
		const struct as_explain_oom *o = &e->ooms[i];
		recorded_only |= !o->modelled;
		fputs("| ", f);
		as_escape_write(f, o->space_name ? o->space_name : "", AS_ESCAPE_MARKDOWN);
		fprintf(f, " | %" PRIu64 " | %s | %s | %s | ", o->time,
			hb(o->request, a, sizeof(a)), hb(o->live, b, sizeof(b)),
			o->has_reserved ? hb(o->reserved, c, sizeof(c)) : "—");
		if (o->device_total)
			fprintf(f, "%s", hb(o->device_total, a, sizeof(a)));
		else
			fputs(o->modelled ? "unlimited" : "—", f);
		if (!o->modelled && o->device_free)
			fprintf(f, " (%s free)", hb(o->device_free, a, sizeof(a)));
		fputs(" | ", f);
		if (o->modelled) {
			fprintf(f, "%s:", hb(cached_total(o), a, sizeof(a)));
			for (unsigned k = 0; k < AS_OOM_CLASSES; k++)
				if (o->cached[k]) {
					fputs(" ", f);
					as_escape_write(f, as_oom_class_name(k), AS_ESCAPE_MARKDOWN);
					fprintf(f, " %s",
						hb(o->cached[k], a, sizeof(a)));
				}
			fprintf(f, " | %s", hb(o->largest_free, a, sizeof(a)));
		} else {
			if (o->has_reserved)
				fprintf(f, "%s not live",
					hb(unused(o), a, sizeof(a)));
			else
				fputs("—", f);
			fputs(" | —", f);
		}
		fprintf(f, " | %s |\n",
			as_oom_verdict_name(o->verdict)
				? as_oom_verdict_name(o->verdict)
				: "not recorded");
	}
	fputc('\n', f);
	if (suggest && recorded_only)
		fputs("The recording does not hold the allocator's cached blocks: "
		      "`allocscope explain -s cuda-caching` gives them by size "
		      "class and the largest free block at each OOM.\n\n",
		      f);
}
