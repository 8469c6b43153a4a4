/*
 * Writing explains: a terminal's text, JSON (format "allocscope-explain",
 * version 2) and Markdown; docs/explain.md shows all three and is the
 * schema's reference. Numbers are written from integers; shares with two
 * digits. Text and Markdown shorten frames to their file's last part; JSON
 * keeps every text whole.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

/* ---- Shared ---- */

void as_x_short_frame(const char *frame, char *buf, size_t len)
{
	char stripped[1024];
	/* No file ("??:0:", ":0:"): the name alone. */
	if (strncmp(frame, "??:0:", 5) == 0)
		frame += 5;
	else if (strncmp(frame, ":0:", 3) == 0)
		frame += 3;
	as_x_strip_params(frame, strlen(frame), stripped, sizeof(stripped));
	frame = stripped;
	/* The file is the token before ":LINE"; its directories go. */
	const char *colon = NULL;
	for (const char *p = frame; *p; p++)
		if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
			colon = p;
			break;
		}
	const char *tok = frame, *cut = NULL;
	for (const char *p = frame; colon && p < colon; p++) {
		if (*p == ' ')
			tok = p + 1, cut = NULL;
		else if (*p == '/' || *p == '\\')
			cut = p + 1;
	}
	if (!cut)
		snprintf(buf, len, "%.160s", frame);
	else
		snprintf(buf, len, "%.*s%.160s", (int)(tok - frame), frame, cut);
}

void as_explain_frame_text(const char *frame, char *buf, size_t len)
{
	char fr[512];
	as_x_short_frame(frame, fr, sizeof(fr));
	as_escape(buf, len, fr, AS_ESCAPE_TEXT);
}

const char *as_x_tx(const char *s, char *buf, size_t len)
{
	as_escape(buf, len, s ? s : "", AS_ESCAPE_TEXT);
	return buf;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part * 100.0 / (double)whole : 0.0;
}

/* "t 4567 (12.345 s)" or "t 4567". */
static void fmt_time(const struct as_explain *e, uint64_t time, char *buf,
		     size_t len)
{
	uint64_t us;
	if (as_x_clock(e, time, &us))
		snprintf(buf, len, "t %" PRIu64 " (%.3f s)", time,
			 (double)us / 1e6);
	else
		snprintf(buf, len, "t %" PRIu64, time);
}

static const char *hb(uint64_t n, char *buf, size_t len)
{
	return as_human_bytes(n, buf, len);
}

/* The stages of x to show: the `top` with the highest peaks, in start
 * order; all of them with top 0. Returns how many (indices into out). */
static uint32_t stages_shown(const struct as_explain_space *x, uint32_t top,
			     uint32_t *out)
{
	uint32_t n = x->nstages;
	for (uint32_t k = 0; k < n; k++)
		out[k] = k;
	if (!top || n <= top)
		return n;
	/* Partial selection by peak (ties: earlier), then start order. */
	for (uint32_t a = 0; a < top; a++) {
		uint32_t b = a;
		for (uint32_t k = a + 1; k < n; k++)
			if (x->stages[out[k]].peak > x->stages[out[b]].peak ||
			    (x->stages[out[k]].peak == x->stages[out[b]].peak &&
			     out[k] < out[b]))
				b = k;
		uint32_t tmp = out[a];
		out[a] = out[b];
		out[b] = tmp;
	}
	for (uint32_t a = 1; a < top; a++)
		for (uint32_t k = a; k > 0 && out[k] < out[k - 1]; k--) {
			uint32_t tmp = out[k];
			out[k] = out[k - 1];
			out[k - 1] = tmp;
		}
	return top;
}

/* ---- Text ---- */

/* By category: a rule's line, "BYTES  RULE: EXAMPLE". */
static void text_evidence(FILE *f, const struct as_explain_evidence *d,
			  int indent)
{
	char a[32], fr[512];
	fprintf(f, "%*s  %9s  %s", indent, "", hb(d->bytes, a, sizeof(a)),
		d->rule);
	if (d->example) {
		as_explain_frame_text(d->example, fr, sizeof(fr));
		fprintf(f, ": %s", fr);
	}
	fputc('\n', f);
}

/* A group's lines after its first: frames (and its key unless by stack). */
static void text_group_lines(FILE *f, const struct as_explain *e,
			     const struct as_explain_group *g, int indent)
{
	char fr[512], kb[512];
	bool first = true, anchored = e->opts.by == AS_GROUP_FRAME ||
				      e->opts.by == AS_GROUP_LINE;
	if (e->opts.by != AS_GROUP_STACK) {
		as_explain_frame_text(g->key, fr, sizeof(fr));
		fprintf(f, "%s\n", anchored ? fr : as_x_tx(g->key, kb, sizeof(kb)));
		first = false;
	}
	if (e->opts.by == AS_GROUP_CATEGORY) {
		for (uint32_t k = 0; k < g->nevidence && k < 4; k++)
			text_evidence(f, &g->evidence[k], indent);
		return;
	}
	if (g->nabove) {
		as_explain_frame_text(g->above[g->nabove - 1], fr, sizeof(fr));
		fprintf(f, "%*s  above: %s", indent, "", fr);
		if (g->nabove > 1)
			fprintf(f, " (+%u)", g->nabove - 1);
		fputc('\n', f);
	}
	for (uint32_t k = 0; k < g->nframes; k++) {
		if (anchored && k == 0 && strcmp(g->frames[0], g->key) == 0)
			continue;
		as_explain_frame_text(g->frames[k], fr, sizeof(fr));
		if (first)
			fprintf(f, "%s\n", fr);
		else
			fprintf(f, "%*s%s%s\n", indent, "",
				e->opts.by == AS_GROUP_STACK ? "" : "  ", fr);
		first = false;
	}
	if (first)
		fprintf(f, "%s\n", as_x_tx(g->key, kb, sizeof(kb)));
}

static void text_list(FILE *f, const struct as_explain *e,
		      const struct as_explain_list *l, uint64_t whole,
		      bool largest)
{
	char a[32], b[32];
	if (largest)
		fprintf(f, "    %10s %11s %6s  %s\n", "largest", "bytes", "count",
			"top frames");
	else
		fprintf(f, "    %11s %7s %6s  %s\n", "bytes", "share", "count",
			"top frames");
	for (uint32_t j = 0; j < l->ngroups; j++) {
		const struct as_explain_group *g = &l->groups[j];
		if (largest)
			fprintf(f, "    %10s %11s %6" PRIu64 "  ",
				hb(g->largest, a, sizeof(a)),
				hb(g->bytes, b, sizeof(b)), g->count);
		else
			fprintf(f, "    %11s %6.1f%% %6" PRIu64 "  ",
				hb(g->bytes, a, sizeof(a)),
				share(g->bytes, whole), g->count);
		text_group_lines(f, e, g,
				 largest ? 4 + 10 + 1 + 11 + 1 + 6 + 2
					 : 4 + 11 + 1 + 7 + 1 + 6 + 2);
	}
	if (l->total_groups > l->ngroups)
		fprintf(f, "    %11s %7s %6" PRIu64 "  %" PRIu64
			   " more groups\n",
			hb(l->other_bytes, a, sizeof(a)), "", l->other_count,
			l->total_groups - l->ngroups);
}

static void text_stages(FILE *f, const struct as_explain *e,
			const struct as_explain_space *x)
{
	const struct as_trace *t = e->trace;
	uint32_t *shown = malloc(sizeof(*shown) * ((size_t)x->nstages + 1));
	if (!shown)
		return;
	uint32_t n = stages_shown(x, e->opts.top, shown);
	fprintf(f, "  annotation stages (%u), bytes live at START and END and "
		   "the most inside:\n",
		x->nstages);
	fprintf(f, "    %10s %10s %11s %11s %11s %10s  %s\n", "start", "end",
		"at START", "at END", "peak", "peak at", "stage");
	char a[32], b[32], c[32], nm[256];
	for (uint32_t k = 0; k < n; k++) {
		const struct as_explain_stage *s = &x->stages[shown[k]];
		const struct as_stage *st = &t->stages[s->stage];
		fprintf(f, "    %10" PRIu64 " %10" PRIu64 " %11s %11s %11s %10" PRIu64
			   "  %*s%s%s\n",
			st->start, st->end, hb(s->at_start, a, sizeof(a)),
			hb(s->at_end, b, sizeof(b)), hb(s->peak, c, sizeof(c)),
			s->peak_time, 2 * (st->lane < 8 ? st->lane : 8), "",
			as_x_tx(st->name, nm, sizeof(nm)),
			st->flags & AS_STAGE_NO_END     ? " (no END)"
			: st->flags & AS_STAGE_NO_START ? " (no START)"
							: "");
	}
	if (n < x->nstages)
		fprintf(f, "    (%u more stages with lower peaks: --top 0 or "
			   "--json lists all)\n",
			x->nstages - n);
	free(shown);
}

static void text_space(FILE *f, const struct as_explain *e,
		       const struct as_explain_space *x)
{
	const struct as_trace *t = e->trace;
	char a[32], b[32], tm[64], nm[256];
	const char *by = as_group_by_name(e->opts.by);
	const char *name = as_x_tx(x->name, nm, sizeof(nm));
	if (!x->has_peak) {
		fprintf(f, "%s: nothing live\n", name);
		return;
	}
	fmt_time(e, x->peak_time, tm, sizeof(tm));
	if (e->spec)
		fprintf(f, "%s: peak %s (%" PRIu64 " bytes) at %s; live then "
			   "%s in %" PRIu64 " buffers\n",
			name, hb(x->peak_bytes, a, sizeof(a)), x->peak_bytes, tm,
			hb(x->live_bytes, b, sizeof(b)), x->live_count);
	else
		fprintf(f, "%s: peak %s (%" PRIu64 " bytes) live at %s in %" PRIu64
			   " buffers",
			name, hb(x->peak_bytes, a, sizeof(a)), x->peak_bytes, tm,
			x->live_count);
	if (!e->spec && x->reserved_peak)
		fprintf(f, "; reserved peak %s", hb(x->reserved_peak, b, sizeof(b)));
	if (!e->spec)
		fputc('\n', f);
	if (x->npeak_stages) {
		fputs("  during: ", f);
		for (uint32_t k = 0; k < x->npeak_stages; k++)
			fprintf(f, "%s%s", k ? " > " : "",
				as_x_tx(t->stages[x->peak_stages[k]].name, nm,
				   sizeof(nm)));
		fputc('\n', f);
	}
	if (x->frag.known) {
		char c[32], d[32];
		fprintf(f, "  the allocator at its peak: reserved %s, live %s, "
			   "free %s; largest free block %s (%" PRIu64
			   " free of %" PRIu64 " blocks)\n",
			hb(x->frag.reserved, a, sizeof(a)),
			hb(x->frag.live, b, sizeof(b)),
			hb(x->frag.free_bytes, c, sizeof(c)),
			hb(x->frag.largest_free, d, sizeof(d)),
			x->frag.free_blocks, x->frag.blocks);
	}
	if (e->nothing_to_group) {
		fprintf(f, "  by %s: nothing to group by: %s\n", by,
			e->nothing_to_group);
		if (e->spec)
			return;
	} else {
		fprintf(f, "  live at the peak by %s%s%s, %u of %" PRIu64
			   " groups:\n",
			by, e->opts.by == AS_GROUP_LINE ? " of " : "",
			e->opts.by == AS_GROUP_LINE ? as_x_tx(e->opts.line_file, nm, sizeof(nm))
						    : "",
			x->live.ngroups, x->live.total_groups);
		text_list(f, e, &x->live, e->spec ? x->live_bytes : x->peak_bytes,
			  false);
	}
	if (e->spec)
		return;
	if (x->nstages)
		text_stages(f, e, x);
	if (e->nothing_to_group) {
		if (x->temporaries.count)
			fprintf(f, "  temporaries (freed before the next "
				   "allocation): %" PRIu64 " blocks, %s\n",
				x->temporaries.count,
				hb(x->temporaries.bytes, a, sizeof(a)));
		if (x->never_freed.count)
			fprintf(f, "  never freed: %" PRIu64 " blocks, %s\n",
				x->never_freed.count,
				hb(x->never_freed.bytes, a, sizeof(a)));
		return;
	}
	if (x->temporaries.total_groups) {
		fprintf(f, "  largest temporaries (freed before the next "
			   "allocation): %" PRIu64 " blocks, %s, by %s:\n",
			x->temporaries.count, hb(x->temporaries.bytes, a, sizeof(a)),
			by);
		text_list(f, e, &x->temporaries, 0, true);
	}
	if (x->never_freed.total_groups) {
		fprintf(f, "  never freed: %" PRIu64 " blocks, %s, by %s:\n",
			x->never_freed.count, hb(x->never_freed.bytes, a, sizeof(a)),
			by);
		text_list(f, e, &x->never_freed, x->never_freed.bytes, false);
	}
}

/* The space with the highest peak, or NULL. */
static const struct as_explain_space *top_space(const struct as_explain *e)
{
	const struct as_explain_space *best = NULL;
	for (uint16_t s = 0; s < e->nspaces; s++)
		if (e->spaces[s].has_peak &&
		    (!best || e->spaces[s].peak_bytes > best->peak_bytes))
			best = &e->spaces[s];
	return best;
}

static uint64_t reserved_total(const struct as_explain *e)
{
	uint64_t r = 0;
	for (uint16_t s = 0; s < e->nspaces; s++)
		r += e->spaces[s].reserved_peak;
	return r;
}

/* Whether space s of e is worth a section: it has buffers or stages. */
static bool shown_space(const struct as_explain *e, uint16_t s)
{
	const struct as_explain_space *x = &e->spaces[s];
	return x->has_peak || x->nstages || x->temporaries.total_groups ||
	       x->never_freed.total_groups || e->nspaces == 1;
}

int as_explain_write_text(const struct as_explain_entry *entries, size_t n,
			  FILE *f)
{
	char a[32], b[32], tm[64], path[1024];
	for (size_t r = 0; r < n; r++) {
		const struct as_explain *e = entries[r].trace;
		const struct as_trace *t = e->trace;
		if (r)
			fputc('\n', f);
		fprintf(f, "trace %s (%s): %u buffers, %" PRIu64 " events",
			as_x_tx(t->path, path, sizeof(path)), t->format, as_x_nbuffers(e),
			as_x_nevents(e));
		if (e->has_peak) {
			fmt_time(e, e->peak_time, tm, sizeof(tm));
			fprintf(f, "; peak %s (%" PRIu64 " bytes) at %s",
				hb(e->peak_bytes, a, sizeof(a)), e->peak_bytes,
				tm);
		}
		fputs("\n\n", f);
		for (uint16_t s = 0; s < e->nspaces; s++)
			if (shown_space(e, s)) {
				text_space(f, e, &e->spaces[s]);
				fputc('\n', f);
			}
		if (e->nooms) {
			as_x_oom_text(f, e, !as_x_oom_modelled(&entries[r]), "");
			fputc('\n', f);
		}
		for (size_t p = 0; p < entries[r].nplans; p++) {
			const struct as_explain *pe = entries[r].plans[p];
			fprintf(f, "strategy %s: peak %s (%" PRIu64 " bytes)\n",
				as_x_tx(pe->spec, path, sizeof(path)), hb(pe->peak_bytes, a, sizeof(a)),
				pe->peak_bytes);
			for (uint16_t s = 0; s < pe->nspaces; s++)
				if (pe->spaces[s].has_peak) {
					fputs("  ", f);
					text_space(f, pe, &pe->spaces[s]);
				}
			as_x_oom_text(f, pe, false, "  ");
			fputc('\n', f);
		}
	}
	if (n > 1) {
		uint64_t max, mean;
		as_x_ranks(entries, n, &max, &mean);
		fprintf(f, "%zu files: peak imbalance %.3f (the largest peak %s "
			   "over the mean %s)\n",
			n, as_explain_imbalance(entries, n),
			hb(max, a, sizeof(a)), hb(mean, b, sizeof(b)));
		fprintf(f, "  %11s %11s  %-40s %s\n", "peak", "reserved",
			"file", "top group");
		for (size_t r = 0; r < n; r++) {
			const struct as_explain *e = entries[r].trace;
			const struct as_explain_space *x = top_space(e);
			char fr[512] = "";
			if (x && x->live.ngroups) {
				const struct as_explain_group *g = &x->live.groups[0];
				char c[32];
				as_explain_frame_text(g->nframes ? g->frames[0]
								 : g->key,
						      tm, sizeof(tm));
				snprintf(fr, sizeof(fr), "%s %s",
					 hb(g->bytes, c, sizeof(c)), tm);
			}
			fprintf(f, "  %11s %11s  %-40s %s\n",
				hb(e->peak_bytes, a, sizeof(a)),
				reserved_total(e) ? hb(reserved_total(e), b, sizeof(b))
						  : "-",
				as_x_tx(e->trace->path, path, sizeof(path)), fr);
		}
	}
	return ferror(f) ? AS_EIO : AS_OK;
}

/* ---- JSON ---- */

static void json_u64_or_null(FILE *f, bool has, uint64_t v)
{
	if (has)
		fprintf(f, "%" PRIu64, v);
	else
		fputs("null", f);
}

static void json_clock(FILE *f, const struct as_explain *e, const char *key,
		       bool has, uint64_t time)
{
	uint64_t us;
	if (has && as_x_clock(e, time, &us))
		fprintf(f, ", \"%s\": %" PRIu64, key, us);
}

/* ", "NAME": [TEXTS]" */
static void json_strings(FILE *f, const char *name, const char *const *v,
			 uint32_t n)
{
	fprintf(f, ", \"%s\": [", name);
	for (uint32_t k = 0; k < n; k++) {
		if (k)
			fputs(", ", f);
		as_json_string(f, v[k]);
	}
	fputc(']', f);
}

static void json_groups(FILE *f, enum as_group_by by,
			const struct as_explain_list *l, uint64_t whole,
			const char *indent)
{
	fputc('[', f);
	for (uint32_t j = 0; j < l->ngroups; j++) {
		const struct as_explain_group *g = &l->groups[j];
		fprintf(f, "%s\n%s{\"key\": ", j ? "," : "", indent);
		as_json_string(f, g->key);
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"count\": %" PRIu64
			   ", \"largest\": %" PRIu64,
			g->bytes, g->count, g->largest);
		if (whole)
			fprintf(f, ", \"share\": %.4f", share(g->bytes, whole) / 100);
		json_strings(f, "frames", g->frames, g->nframes);
		if (by == AS_GROUP_FRAME || by == AS_GROUP_LINE)
			json_strings(f, "above", g->above, g->nabove);
		if (by == AS_GROUP_CATEGORY) {
			fputs(", \"evidence\": [", f);
			for (uint32_t k = 0; k < g->nevidence; k++) {
				const struct as_explain_evidence *d = &g->evidence[k];
				fputs(k ? ", {\"rule\": " : "{\"rule\": ", f);
				as_json_string(f, d->rule);
				fprintf(f, ", \"bytes\": %" PRIu64 ", \"count\": %" PRIu64
					   ", \"example\": ",
					d->bytes, d->count);
				if (d->example)
					as_json_string(f, d->example);
				else
					fputs("null", f);
				fputc('}', f);
			}
			fputc(']', f);
		}
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_list(FILE *f, enum as_group_by by, const char *name,
		      const struct as_explain_list *l)
{
	fprintf(f, ",\n     \"%s\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64
		   ", \"groups_total\": %" PRIu64 ", \"groups\": ",
		name, l->count, l->bytes, l->total_groups);
	json_groups(f, by, l, 0, "       ");
	fputc('}', f);
}

static void json_space(FILE *f, const struct as_explain *e,
		       const struct as_explain_space *x, bool first)
{
	const struct as_trace *t = e->trace;
	fprintf(f, "%s\n    {\"space\": ", first ? "" : ",");
	as_json_string(f, x->name);
	fprintf(f, ", \"%s\": %" PRIu64 ", \"peak_time\": ",
		e->spec ? "peak" : "peak_bytes", x->peak_bytes);
	json_u64_or_null(f, x->has_peak, x->peak_time);
	json_clock(f, e, "peak_us", x->has_peak, x->peak_time);
	fprintf(f, ", \"live_bytes\": %" PRIu64 ", \"live_count\": %" PRIu64,
		x->live_bytes, x->live_count);
	if (!e->spec)
		fprintf(f, ", \"reserved_peak\": %" PRIu64, x->reserved_peak);
	fputs(",\n     \"stages_at_peak\": [", f);
	for (uint32_t k = 0; k < x->npeak_stages; k++) {
		if (k)
			fputs(", ", f);
		as_json_string(f, t->stages[x->peak_stages[k]].name);
	}
	fprintf(f, "], \"groups_total\": %" PRIu64 ", \"other_bytes\": %" PRIu64
		   ", \"other_count\": %" PRIu64 ",\n     \"groups\": ",
		x->live.total_groups, x->live.other_bytes, x->live.other_count);
	json_groups(f, e->opts.by, &x->live,
		    e->spec ? x->live_bytes : x->peak_bytes, "       ");
	if (e->spec) {
		fputs(",\n     \"fragmentation\": ", f);
		if (x->frag.known)
			fprintf(f, "{\"reserved\": %" PRIu64 ", \"live\": %" PRIu64
				   ", \"free\": %" PRIu64 ", \"largest_free\": %" PRIu64
				   ", \"blocks\": %" PRIu64 ", \"free_blocks\": %" PRIu64
				   "}",
				x->frag.reserved, x->frag.live, x->frag.free_bytes,
				x->frag.largest_free, x->frag.blocks,
				x->frag.free_blocks);
		else
			fputs("null", f);
		fputc('}', f);
		return;
	}
	json_list(f, e->opts.by, "temporaries", &x->temporaries);
	json_list(f, e->opts.by, "never_freed", &x->never_freed);
	fputs(",\n     \"stages\": [", f);
	for (uint32_t k = 0; k < x->nstages; k++) {
		const struct as_explain_stage *s = &x->stages[k];
		const struct as_stage *st = &t->stages[s->stage];
		fprintf(f, "%s\n       {\"name\": ", k ? "," : "");
		as_json_string(f, st->name);
		fprintf(f, ", \"start\": %" PRIu64 ", \"end\": %" PRIu64, st->start,
			st->end);
		json_clock(f, e, "start_us", true, st->start);
		json_clock(f, e, "end_us", true, st->end);
		fprintf(f, ", \"lane\": %u, \"no_start\": %s, \"no_end\": %s"
			   ", \"at_start\": %" PRIu64 ", \"at_end\": %" PRIu64
			   ", \"peak\": %" PRIu64 ", \"peak_time\": %" PRIu64 "}",
			st->lane, st->flags & AS_STAGE_NO_START ? "true" : "false",
			st->flags & AS_STAGE_NO_END ? "true" : "false",
			s->at_start, s->at_end, s->peak, s->peak_time);
	}
	fputs("]}", f);
}

int as_explain_write_json(const struct as_explain_entry *entries, size_t n,
			  FILE *f)
{
	const struct as_explain_options *o =
		n ? &entries[0].trace->opts : NULL;
	fprintf(f, "{\"format\": \"allocscope-explain\", \"version\": 2, "
		   "\"by\": \"%s\", \"top\": %u, ",
		o ? as_group_by_name(o->by) : "stack", o ? o->top : 0);
	if (o && o->by == AS_GROUP_LINE) {
		fputs("\"line_file\": ", f);
		as_json_string(f, o->line_file ? o->line_file : "");
		fputs(", ", f);
	}
	fputs("\"traces\": [", f);
	for (size_t r = 0; r < n; r++) {
		const struct as_explain *e = entries[r].trace;
		const struct as_trace *t = e->trace;
		fprintf(f, "%s\n {\"trace\": ", r ? "," : "");
		as_json_string(f, t->path);
		fputs(", \"format\": ", f);
		as_json_string(f, t->format);
		fprintf(f, ", \"buffers\": %u, \"events\": %" PRIu64
			   ", \"peak_bytes\": %" PRIu64 ", \"peak_time\": ",
			as_x_nbuffers(e), as_x_nevents(e),
			e->peak_bytes);
		json_u64_or_null(f, e->has_peak, e->peak_time);
		json_clock(f, e, "peak_us", e->has_peak, e->peak_time);
		fprintf(f, ", \"reserved_peak\": %" PRIu64 ", \"nothing_to_group\": ",
			reserved_total(e));
		if (e->nothing_to_group)
			as_json_string(f, e->nothing_to_group);
		else
			fputs("null", f);
		fputs(",\n  \"spaces\": [", f);
		bool first = true;
		for (uint16_t s = 0; s < e->nspaces; s++) {
			json_space(f, e, &e->spaces[s], first);
			first = false;
		}
		fputc(']', f);
		as_x_oom_json(f, e, "  ");
		fputs(",\n  \"strategies\": [", f);
		for (size_t p = 0; p < entries[r].nplans; p++) {
			const struct as_explain *pe = entries[r].plans[p];
			fprintf(f, "%s\n   {\"strategy\": ", p ? "," : "");
			as_json_string(f, pe->spec);
			fprintf(f, ", \"peak\": %" PRIu64 ", \"peak_time\": ",
				pe->peak_bytes);
			json_u64_or_null(f, pe->has_peak, pe->peak_time);
			fputs(", \"spaces\": [", f);
			bool fs = true;
			for (uint16_t s = 0; s < pe->nspaces; s++)
				if (pe->spaces[s].has_peak) {
					json_space(f, pe, &pe->spaces[s], fs);
					fs = false;
				}
			fputc(']', f);
			as_x_oom_json(f, pe, "   ");
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("]", f);
	if (n > 1) {
		uint64_t max, mean;
		as_x_ranks(entries, n, &max, &mean);
		fprintf(f, ",\n \"ranks\": {\"files\": %zu, \"imbalance\": %.6f, "
			   "\"max_peak\": %" PRIu64 ", \"mean_peak\": %" PRIu64
			   ", \"peaks\": [",
			n, as_explain_imbalance(entries, n), max, mean);
		for (size_t r = 0; r < n; r++) {
			const struct as_explain *e = entries[r].trace;
			const struct as_explain_space *x = top_space(e);
			fprintf(f, "%s\n  {\"trace\": ", r ? "," : "");
			as_json_string(f, e->trace->path);
			fprintf(f, ", \"peak_bytes\": %" PRIu64
				   ", \"reserved_peak\": %" PRIu64
				   ", \"top_group\": ",
				e->peak_bytes, reserved_total(e));
			if (x && x->live.ngroups) {
				const struct as_explain_group *g = &x->live.groups[0];
				fputs("{\"space\": ", f);
				as_json_string(f, x->name);
				fputs(", \"key\": ", f);
				as_json_string(f, g->key);
				fprintf(f, ", \"bytes\": %" PRIu64 ", \"count\": %" PRIu64
					   "}",
					g->bytes, g->count);
			} else {
				fputs("null", f);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("}\n", f);
	return ferror(f) ? AS_EIO : AS_OK;
}

/* ---- Markdown ---- */

static void md_group_cell(FILE *f, const struct as_explain *e,
			  const struct as_explain_group *g)
{
	char fr[512];
	bool any = false;
	if (e->opts.by != AS_GROUP_STACK) {
		fputs("**", f);
		as_escape_write(f, g->key, AS_ESCAPE_MARKDOWN);
		fputs("**", f);
		any = true;
	}
	for (uint32_t k = 0; k < g->nevidence && k < 3; k++) {
		char a[32];
		fprintf(f, "<br>%s ", hb(g->evidence[k].bytes, a, sizeof(a)));
		as_escape_write(f, g->evidence[k].rule, AS_ESCAPE_MARKDOWN);
		if (g->evidence[k].example) {
			as_x_short_frame(g->evidence[k].example, fr, sizeof(fr));
			fputs(": ", f);
			as_escape_write(f, fr, AS_ESCAPE_MARKDOWN);
		}
	}
	if (g->nabove) {
		as_x_short_frame(g->above[g->nabove - 1], fr, sizeof(fr));
		fputs("<br>above: ", f);
		as_escape_write(f, fr, AS_ESCAPE_MARKDOWN);
	}
	for (uint32_t k = 0; k < g->nframes && k < 3 && !g->nevidence; k++) {
		if ((e->opts.by == AS_GROUP_FRAME || e->opts.by == AS_GROUP_LINE) &&
		    k == 0 && strcmp(g->frames[0], g->key) == 0)
			continue;
		as_x_short_frame(g->frames[k], fr, sizeof(fr));
		if (any)
			fputs("<br>", f);
		as_escape_write(f, fr, AS_ESCAPE_MARKDOWN);
		any = true;
	}
	if (!any)
		as_escape_write(f, g->key, AS_ESCAPE_MARKDOWN);
}

static void md_list(FILE *f, const struct as_explain *e,
		    const struct as_explain_list *l, uint64_t whole,
		    bool largest)
{
	char a[32], b[32];
	static const char *const head_largest[] = {"largest", "bytes", "count",
						   "top frames"};
	static const char *const head[] = {"bytes", "share", "count",
					   "top frames"};
	as_md_table_head(f, largest ? head_largest : head, "rrrl");
	for (uint32_t j = 0; j < l->ngroups; j++) {
		const struct as_explain_group *g = &l->groups[j];
		if (largest)
			fprintf(f, "| %s | %s | %" PRIu64 " | ",
				hb(g->largest, a, sizeof(a)),
				hb(g->bytes, b, sizeof(b)), g->count);
		else
			fprintf(f, "| %s | %.1f%% | %" PRIu64 " | ",
				hb(g->bytes, a, sizeof(a)), share(g->bytes, whole),
				g->count);
		md_group_cell(f, e, g);
		fputs(" |\n", f);
	}
	if (l->total_groups > l->ngroups)
		fprintf(f, "| %s | | %" PRIu64 " | %" PRIu64 " more groups |\n",
			hb(l->other_bytes, a, sizeof(a)), l->other_count,
			l->total_groups - l->ngroups);
	fputc('\n', f);
}

static void md_space(FILE *f, const struct as_explain *e,
		     const struct as_explain_space *x)
{
	const struct as_trace *t = e->trace;
	char a[32], b[32], tm[64];
	fputs("#### ", f);
	if (e->spec) {
		as_escape_write(f, e->spec, AS_ESCAPE_MARKDOWN);
		fputs(" · ", f);
	}
	as_escape_write(f, x->name, AS_ESCAPE_MARKDOWN);
	fputs("\n\n", f);
	if (!x->has_peak) {
		fputs("Nothing live.\n\n", f);
		return;
	}
	fmt_time(e, x->peak_time, tm, sizeof(tm));
	fprintf(f, "Peak **%s** (%" PRIu64 " bytes) at %s", hb(x->peak_bytes, a, sizeof(a)),
		x->peak_bytes, tm);
	if (e->spec)
		fprintf(f, "; live then %s in %" PRIu64 " buffers", hb(x->live_bytes, b, sizeof(b)),
			x->live_count);
	else
		fprintf(f, ", %" PRIu64 " buffers live", x->live_count);
	if (!e->spec && x->reserved_peak)
		fprintf(f, "; reserved peak %s", hb(x->reserved_peak, b, sizeof(b)));
	fputs(".", f);
	if (x->npeak_stages) {
		fputs(" During ", f);
		for (uint32_t k = 0; k < x->npeak_stages; k++) {
			if (k)
				fputs(" › ", f);
			as_escape_write(f, t->stages[x->peak_stages[k]].name, AS_ESCAPE_MARKDOWN);
		}
		fputs(".", f);
	}
	if (x->frag.known) {
		char c[32], d[32];
		fprintf(f, " The allocator then: reserved %s, live %s, free %s, "
			   "largest free block %s.",
			hb(x->frag.reserved, a, sizeof(a)), hb(x->frag.live, b, sizeof(b)),
			hb(x->frag.free_bytes, c, sizeof(c)),
			hb(x->frag.largest_free, d, sizeof(d)));
	}
	fputs("\n\n", f);
	if (e->nothing_to_group) {
		fprintf(f, "By %s: nothing to group by: ", as_group_by_name(e->opts.by));
		as_escape_write(f, e->nothing_to_group, AS_ESCAPE_MARKDOWN);
		fputs(".\n\n", f);
	} else {
		fprintf(f, "Live at the peak by %s:\n\n",
			as_group_by_name(e->opts.by));
		md_list(f, e, &x->live, e->spec ? x->live_bytes : x->peak_bytes,
			false);
	}
	if (e->spec)
		return;
	if (x->nstages) {
		uint32_t *shown = malloc(sizeof(*shown) * ((size_t)x->nstages + 1));
		if (shown) {
			uint32_t n = stages_shown(x, e->opts.top, shown);
			static const char *const head[] = {
				"stage", "steps", "at START", "at END",
				"peak inside"};
			fprintf(f, "Annotation stages (%u of %u):\n\n", n,
				x->nstages);
			as_md_table_head(f, head, "lrrrr");
			for (uint32_t k = 0; k < n; k++) {
				const struct as_explain_stage *s = &x->stages[shown[k]];
				const struct as_stage *st = &t->stages[s->stage];
				char c[32];
				fputs("| ", f);
				as_escape_write(f, st->name, AS_ESCAPE_MARKDOWN);
				fprintf(f, " | %" PRIu64 "-%" PRIu64 " | %s | %s | %s at %" PRIu64
					   " |\n",
					st->start, st->end, hb(s->at_start, a, sizeof(a)),
					hb(s->at_end, b, sizeof(b)), hb(s->peak, c, sizeof(c)),
					s->peak_time);
			}
			fputc('\n', f);
			free(shown);
		}
	}
	if (x->temporaries.total_groups) {
		fprintf(f, "Largest temporaries (%" PRIu64 " blocks, %s):\n\n",
			x->temporaries.count, hb(x->temporaries.bytes, a, sizeof(a)));
		md_list(f, e, &x->temporaries, 0, true);
	}
	if (x->never_freed.total_groups) {
		fprintf(f, "Never freed (%" PRIu64 " blocks, %s):\n\n",
			x->never_freed.count, hb(x->never_freed.bytes, a, sizeof(a)));
		md_list(f, e, &x->never_freed, x->never_freed.bytes, false);
	}
}

int as_explain_write_markdown(const struct as_explain_entry *entries, size_t n,
			      FILE *f)
{
	char a[32], b[32];
	for (size_t r = 0; r < n; r++) {
		const struct as_explain *e = entries[r].trace;
		const struct as_trace *t = e->trace;
		fputs("### allocscope explain: ", f);
		as_escape_write(f, t->path, AS_ESCAPE_MARKDOWN);
		fprintf(f, "\n\n%u buffers, %" PRIu64 " events; peak %s.\n\n",
			as_x_nbuffers(e), as_x_nevents(e),
			hb(e->peak_bytes, a, sizeof(a)));
		for (uint16_t s = 0; s < e->nspaces; s++)
			if (shown_space(e, s))
				md_space(f, e, &e->spaces[s]);
		as_x_oom_markdown(f, e, !as_x_oom_modelled(&entries[r]));
		for (size_t p = 0; p < entries[r].nplans; p++) {
			const struct as_explain *pe = entries[r].plans[p];
			for (uint16_t s = 0; s < pe->nspaces; s++)
				if (pe->spaces[s].has_peak)
					md_space(f, pe, &pe->spaces[s]);
		}
		for (size_t p = 0; p < entries[r].nplans; p++)
			as_x_oom_markdown(f, entries[r].plans[p], false);
	}
	if (n > 1) {
		uint64_t max, mean;
		as_x_ranks(entries, n, &max, &mean);
		static const char *const head[] = {"file", "peak",
						   "reserved peak", "top group"};
		fprintf(f, "### Ranks: imbalance %.3f (largest peak %s, mean %s)\n\n",
			as_explain_imbalance(entries, n), hb(max, a, sizeof(a)),
			hb(mean, b, sizeof(b)));
		as_md_table_head(f, head, "lrrl");
		for (size_t r = 0; r < n; r++) {
			const struct as_explain *e = entries[r].trace;
			const struct as_explain_space *x = top_space(e);
			fputs("| ", f);
			as_escape_write(f, e->trace->path, AS_ESCAPE_MARKDOWN);
			fprintf(f, " | %s | %s | ", hb(e->peak_bytes, a, sizeof(a)),
				reserved_total(e) ? hb(reserved_total(e), b, sizeof(b)) : "—");
			if (x && x->live.ngroups) {
				fprintf(f, "%s ", hb(x->live.groups[0].bytes, a, sizeof(a)));
				md_group_cell(f, e, &x->live.groups[0]);
			}
			fputs(" |\n", f);
		}
		fputc('\n', f);
	}
	return ferror(f) ? AS_EIO : AS_OK;
}
