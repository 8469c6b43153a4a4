/*
 * The JSON trace format (docs/trace-format.md): the root, pools, config and
 * the "events" and "buffers" forms, read in pieces through the format
 * layer's window (below: "Reading in pieces"). The "graph" form is read by
 * graph.c and the "numa" form by numa.c; common.c locates values and
 * reports errors, parse.c holds the window and the checks made before
 * cJSON. The reader in pieces serves other forms of document too (struct
 * as_jform): the PyTorch profiler's Chrome traces (profiler.c), chosen here
 * by content.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/json/json.h"

#define FORMAT_NAME "allocscope-trace"
#define FORMAT_VERSION 1

/* Options as an object {"k": v} or a string "k=v,k=v", into buf. */
static int options_text(const struct as_jctx *c, const cJSON *v, char *buf,
			size_t len)
{
	buf[0] = 0;
	if (!v)
		return AS_OK;
	if (cJSON_IsString(v)) {
		snprintf(buf, len, "%s", v->valuestring);
		return AS_OK;
	}
	if (!cJSON_IsObject(v))
		return as_json_fail(c, NULL, "%s: expected an object of options",
			    v->string ? v->string : "options");
	size_t used = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, v)
	{
		char val[64];
		if (cJSON_IsString(o))
			snprintf(val, sizeof(val), "%s", o->valuestring);
		else if (cJSON_IsNumber(o))
			snprintf(val, sizeof(val), "%.17g", o->valuedouble);
		else if (cJSON_IsBool(o))
			snprintf(val, sizeof(val), "%d", cJSON_IsTrue(o));
		else
			return as_json_fail(c, NULL, "option '%s' must be a string, "
					     "number or boolean",
				    o->string);
		int w = snprintf(buf + used, len - used, "%s%s=%s",
				 used ? "," : "", o->string, val);
		if (w < 0 || (size_t)w >= len - used)
			return as_json_fail(c, NULL, "%s: too many options",
				    "config");
		used += (size_t)w;
	}
	return AS_OK;
}

static int pool_index(const struct as_jctx *c, const cJSON *obj, uint16_t *out)
{
	const char *pool;
	int err = as_json_get_string(c, obj, "pool", false, &pool);
	if (err || !pool) {
		*out = 0;
		return err;
	}
	int sp = as_builder_space_find(c->b, pool);
	if (sp >= 0) {
		*out = (uint16_t)sp;
		return AS_OK;
	}
	return as_json_fail(c, "pool", "unknown pool '%s' (declare it in \"pools\")",
		    pool);
}

/* Fields an allocation may carry besides name/size/align. */
static int buffer_extras(const struct as_jctx *c, const cJSON *obj, uint32_t idx)
{
	struct as_buffer *buf = as_builder_buffer(c->b, idx);
	uint64_t v;
	uint16_t pool = 0;
	int err = pool_index(c, obj, &pool);
	if (err)
		return err;
	buf->space = pool;
	/* AS_NO_OFFSET (2^64 - 1) is "none": given, it is an overflow. */
	if ((err = as_json_get_range(c, obj, "offset", false, AS_NO_OFFSET, 0,
				     UINT64_MAX - 1, &v)))
		return err;
	if (v != AS_NO_OFFSET && v > UINT64_MAX - buf->size)
		return as_json_fail(c, "offset", "offset + size overflows 64 bits%s",
			    "");
	buf->recorded = v;
	if ((err = as_json_get_u64(c, obj, "stream", false, 0, &v)))
		return err;
	if (v > UINT16_MAX)
		return as_json_fail(c, "stream", "stream out of range%s", "");
	buf->stream = (uint16_t)v;
	const char *s;
	if ((err = as_json_get_string(c, obj, "symbol", false, &s)))
		return err;
	if (s) {
		int64_t sym = as_builder_symbol(c->b, s);
		if (sym < 0)
			return (int)sym;
		buf->symbol = (uint32_t)sym;
	}
	const cJSON *frames = cJSON_GetObjectItemCaseSensitive(obj, "frames");
	if (frames) {
		char text[4096];
		size_t used = 0;
		const cJSON *fr;
		if (!cJSON_IsArray(frames))
			return as_json_fail(c, "frames", "expected an array of "
						 "strings%s",
				    "");
		text[0] = 0;
		cJSON_ArrayForEach(fr, frames)
		{
			if (!cJSON_IsString(fr))
				return as_json_fail(c, "frames", "expected an array "
							 "of strings%s",
					    "");
			int w = snprintf(text + used, sizeof(text) - used,
					 "%s%s", used ? "\n" : "",
					 fr->valuestring);
			if (w > 0)
				used += (size_t)w;
			if (used >= sizeof(text))
				break;
		}
		if ((err = as_builder_frames(c->b, idx, text)))
			return err;
	}
	if ((err = as_json_get_string(c, obj, "alias_of", false, &s)))
		return err;
	if (s) {
		int64_t parent = as_builder_lookup(c->b, s);
		if (parent < 0 || (uint32_t)parent == idx)
			return as_json_fail(c, "alias_of", "unknown buffer '%s'", s);
		buf->alias_of = (uint32_t)parent;
		if ((err = as_json_get_u64(c, obj, "alias_offset", false, 0,
				   &buf->alias_offset)))
			return err;
	}
	return AS_OK;
}

/*
 * A builder error gets the line of the value being read only now: finding
 * a line scans the text from the start, so doing it for every event would
 * make reading quadratic.
 */
static int64_t at_line(const struct as_jctx *c, int64_t r)
{
	if (r < 0 && r != AS_ENOMEM && c->diag)
		c->diag->line = as_json_line(c, NULL);
	return r;
}

static const char *const alloc_keys[] = {
	"op",	  "name",   "size",   "align",	  "pool",	  "offset",
	"stream", "symbol", "frames", "alias_of", "alias_offset", NULL};
static const char *const buffer_keys[] = {
	"name",	  "size",   "align",  "start",	  "end",	  "pool",
	"offset", "stream", "symbol", "frames", "alias_of", "alias_offset",
	NULL};

static int parse_event(struct as_jctx *c, const cJSON *ev)
{
	const char *op, *name;
	int err;
	if (!cJSON_IsObject(ev))
		return as_json_fail(c, NULL, "expected an object%s", "");
	if ((err = as_json_get_string(c, ev, "op", true, &op)))
		return err;
	if (strcmp(op, "alloc") == 0) {
		uint64_t size, align;
		if ((err = as_json_keys(c, ev, alloc_keys)) ||
		    (err = as_json_get_string(c, ev, "name", true, &name)) ||
		    (err = as_json_get_u64(c, ev, "size", true, 0, &size)) ||
		    (err = as_json_get_u64(c, ev, "align", false, 1, &align)))
			return err;
		int64_t idx = at_line(c, as_builder_alloc(c->b, name, size,
							  align,
							  as_json_elem_line(c),
							  c->diag));
		if (idx < 0)
			return (int)idx;
		return buffer_extras(c, ev, (uint32_t)idx);
	}
	if (strcmp(op, "free") == 0) {
		static const char *const keys[] = {"op", "name", NULL};
		if ((err = as_json_keys(c, ev, keys)) ||
		    (err = as_json_get_string(c, ev, "name", true, &name)))
			return err;
		return (int)at_line(c, as_builder_free(c->b, name, 0,
						       c->diag));
	}
	if (strcmp(op, "config") == 0) {
		static const char *const keys[] = {"op", "options", NULL};
		char opts[1024];
		if ((err = as_json_keys(c, ev, keys)) ||
		    (err = options_text(
			     c, cJSON_GetObjectItemCaseSensitive(ev, "options"),
			     opts, sizeof(opts))))
			return err;
		if ((err = (int)at_line(c, as_builder_case(c->b, opts,
							   c->diag))))
			return err;
		/* Its line for option errors; finding it scans the text, so
		 * only for the first configs of a trace. */
		struct as_trace *t = as_builder_trace(c->b);
		if (t->ncases <= 64)
			t->cases[t->ncases - 1].line = as_json_line(c, NULL);
		return AS_OK;
	}
	static const char *const queries[] = {"dump", "stats", "render",
					      "curr"};
	static const char *const query_keys[] = {"op", NULL};
	for (int q = 0; q < 4; q++)
		if (strcmp(op, queries[q]) == 0)
			return (err = as_json_keys(c, ev, query_keys))
				       ? err
				       : as_builder_query(c->b,
							  (enum as_query)q);
	return as_json_fail(c, "op", "unknown op '%s' (expected alloc, free, config, "
			     "dump, stats, render or curr)",
		    op);
}

static int parse_buffer(struct as_jctx *c, const cJSON *bo)
{
	const char *name;
	uint64_t size, align, start, end;
	int err;
	if (!cJSON_IsObject(bo))
		return as_json_fail(c, NULL, "expected an object%s", "");
	if ((err = as_json_keys(c, bo, buffer_keys)) ||
	    (err = as_json_get_string(c, bo, "name", true, &name)) ||
	    (err = as_json_get_u64(c, bo, "size", true, 0, &size)) ||
	    (err = as_json_get_u64(c, bo, "align", false, 1, &align)) ||
	    (err = as_json_get_u64(c, bo, "start", true, 0, &start)) ||
	    (err = as_json_get_u64(c, bo, "end", true, 0, &end)))
		return err;
	int64_t idx = at_line(c, as_builder_add_timed(c->b, name, size, align,
						      start, end,
						      as_json_elem_line(c),
						      c->diag));
	if (idx < 0)
		return (int)idx;
	return buffer_extras(c, bo, (uint32_t)idx);
}

static int parse_pools(struct as_jctx *c, const cJSON *pools)
{
	if (!pools)
		return AS_OK;
	if (!cJSON_IsArray(pools))
		return as_json_fail(c, NULL, "pools: expected an array%s", "");
	if (cJSON_GetArraySize(pools) > (int)AS_MAX_SPACES)
		return as_json_fail(c, "pools", "%d pools: a trace has at most "
						"%u",
				    cJSON_GetArraySize(pools), AS_MAX_SPACES);
	static const char *const keys[] = {"name", "capacity", NULL};
	int i = 0;
	const cJSON *po;
	as_json_push(c, "pools", 0);
	cJSON_ArrayForEach(po, pools)
	{
		const char *name;
		uint64_t cap;
		int err;
		as_json_push(c, NULL, i++);
		if (!cJSON_IsObject(po))
			return as_json_fail(c, NULL, "expected an object%s", "");
		if ((err = as_json_keys(c, po, keys)) ||
		    (err = as_json_get_string(c, po, "name", true, &name)) ||
		    (err = as_json_get_u64(c, po, "capacity", false, 0, &cap)))
			return err;
		if (i == 1 && !(as_builder_trace(c->b)->spaces[0].name =
					as_builder_intern(c->b, name)))
			return AS_ENOMEM;
		int before = as_builder_trace(c->b)->nspaces;
		int sp = i == 1 ? 0 : as_builder_space(c->b, name, cap);
		if (sp == AS_EINVAL)
			return as_json_fail(c, "name",
					    "pool '%s' is one more than a trace "
					    "may have (%u address spaces)",
					    name, AS_MAX_SPACES);
		if (sp < 0)
			return sp;
		if (i > 1 && sp < before)
			return as_json_fail(c, "name", "duplicate pool '%s'",
					    name);
		as_builder_trace(c->b)->spaces[sp].capacity = cap;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

static int parse_list(struct as_jctx *c, const cJSON *root, const char *key,
		      int (*each)(struct as_jctx *, const cJSON *))
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!list)
		return AS_OK;
	if (!cJSON_IsArray(list))
		return as_json_fail(c, key, "expected an array%s", "");
	as_json_push(c, key, 0);
	int i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, list)
	{
		as_json_push(c, NULL, i++);
		int err = each(c, item);
		if (err)
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

/*
 * In the "buffers" form a name may come back once its buffer is dead, as
 * in an event list, but two buffers of one name may not be live at once
 * (frees, aliases and plan files find buffers by name).
 */
static int live_names_unique(struct as_jctx *c)
{
	uint32_t first, second;
	int err = as_builder_live_twice(c->b, &first, &second);
	if (err != 1)
		return err;
	as_json_push(c, "buffers", 0);
	as_json_push(c, NULL, (int)second);
	err = as_json_fail(c, "name", "'%s' is live twice: two buffers of one "
				      "name overlap in time",
			   as_builder_trace(c->b)->buffers[second].name);
	c->depth -= 2;
	/* The element was read and let go: the line it started on. */
	uint64_t line = as_builder_line_of(c->b, second);
	if (line && c->diag)
		c->diag->line = line;
	return err;
}

/*
 * The root but its "events" and "buffers" (read after, in pieces): *lists
 * is set when they are to be read, not when a graph or numa form took the
 * trace. Duplicate keys in root are refused first.
 */
static int parse_root(struct as_jctx *c, const cJSON *root, bool *lists)
{
	*lists = false;
	const char *fmt;
	uint64_t version;
	int err;
	if ((err = as_json_dup_keys(c, root)) ||
	    (err = as_json_get_string(c, root, "format", true, &fmt)))
		return err;
	if (strcmp(fmt, FORMAT_NAME) != 0)
		return as_json_fail(c, "format", "'%s' is not "
					 "'" FORMAT_NAME "'",
			    fmt);
	if ((err = as_json_get_u64(c, root, "version", true, 0, &version)))
		return err;
	if (version != FORMAT_VERSION)
		return as_json_fail(c, "version", "unsupported version (this build "
					  "reads version %s)",
			    "1");
	static const char *const root_keys[] = {
		"format", "version", "metadata", "pools", "config",
		"events", "buffers", "graph",	 "numa",  NULL};
	if ((err = as_json_keys(c, root, root_keys)))
		return err;
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	if (meta) {
		char *text = cJSON_PrintUnformatted(meta);
		if (!text)
			return AS_ENOMEM;
		as_builder_trace(c->b)->metadata = as_builder_intern(c->b, text);
		cJSON_free(text);
	}
	if ((err = parse_pools(c, cJSON_GetObjectItemCaseSensitive(root,
								   "pools"))))
		return err;
	char opts[1024];
	if ((err = options_text(c,
				cJSON_GetObjectItemCaseSensitive(root, "config"),
				opts, sizeof(opts))))
		return err;
	if (opts[0] && (err = as_builder_case(c->b, opts, c->diag))) {
		if (err != AS_ENOMEM)
			c->diag->line = as_json_line(c, "config");
		return err;
	}
	if (opts[0])
		as_builder_trace(c->b)->cases[0].line =
			as_json_line(c, "config");
	if (cJSON_HasObjectItem(root, "numa")) /* the numa section, below */
		return as_json_numa(c, root);
	bool has_events = cJSON_HasObjectItem(root, "events");
	bool has_buffers = cJSON_HasObjectItem(root, "buffers");
	bool has_graph = cJSON_HasObjectItem(root, "graph");
	if (has_events + has_buffers + has_graph > 1)
		return as_json_fail(c, NULL, "a trace has one of \"events\", "
				     "\"buffers\" or \"graph\"%s",
			    "");
	if (!has_events && !has_buffers && !has_graph)
		return as_json_fail(c, NULL, "a trace needs \"events\", \"buffers\" "
				     "or \"graph\"%s",
			    "");
	if (has_graph)
		return as_json_graph(c, cJSON_GetObjectItemCaseSensitive(root,
								       "graph"));
	*lists = true;
	return AS_OK;
}

/* ---- Reading in pieces ---- */

/*
 * A trace file is read in pieces, so that a 10^7-event trace never sits in
 * memory as text or as one cJSON tree. First pass: as_json_prescan over
 * all of it (the checks made before cJSON, and the totals a syntax error
 * needs). Second pass, the root object: each member's value is cut from
 * the window (brackets counted, strings skipped) and parsed with cJSON,
 * except the form's array ("events" or "buffers"; a profiler trace's
 * "traceEvents"), whose elements are cut, parsed and read one at a time.
 * The root's other members are read before the array, whatever their
 * order (header_first): when some come after it, the second pass only
 * parses the array and a third reads it. When the first pass saw
 * that the text does not parse, a pass that only parses comes before, so
 * that the syntax fault is reported first. Refusals are those of a
 * whole-document parse, at the same line; only duplicate keys, reported
 * where they are met, may come after a fault that a whole parse named
 * second.
 */
struct reader {
	struct as_jctx c;
	struct as_jwin w;
	struct as_jtotals tot;
	uint64_t line;    /* of w.buf[w.pos] */
	cJSON *root;      /* the members read; the streamed array as [] */
	struct as_jmember *m;
	size_t nm, cap_m;
	const struct as_jform *form;
	const char *list; /* the streamed array's key */
	int (*each)(struct as_jctx *, const cJSON *); /* its elements' reader */
	uint64_t list_off, list_line;
	bool deferred, lists;
	bool check_only; /* a pass that only parses, to find a syntax fault */
};

/* Skip what cJSON skips (bytes up to ' '); the next byte, -1 at the end. */
static int next(struct reader *r, int *ch)
{
	struct as_jwin *w = &r->w;
	for (;;) {
		if (w->pos == w->have) {
			if (w->eof) {
				*ch = -1;
				return AS_OK;
			}
			int err = as_jwin_more(w, r->line, r->c.diag);
			if (err)
				return err;
			continue;
		}
		unsigned char c = (unsigned char)w->buf[w->pos];
		if (c > ' ') {
			*ch = c;
			return AS_OK;
		}
		r->line += c == '\n';
		w->pos++;
	}
}

static int syntax(struct reader *r, size_t at)
{
	return as_json_syntax(&r->w, at, r->line, &r->tot, r->c.diag);
}

/*
 * Cut the value at pos: an object or array to its closing bracket, a
 * string to its closing quote, anything else to the next , ] } or blank
 * (cJSON judges it); the end of the text cuts it short. It starts at
 * w.mark, which keeps it in the window until the next cut; pos goes past.
 */
static int cut(struct reader *r, size_t *len)
{
	struct as_jwin *w = &r->w;
	size_t n = 0;
	int depth = 0;
	bool str = false, esc = false, scalar = false, done = false;
	w->mark = w->pos;
	while (!done) {
		if (w->mark + n == w->have) {
			if (w->eof)
				break;
			int err = as_jwin_more(w, r->line, r->c.diag);
			if (err)
				return err;
			continue;
		}
		const char *p = w->buf + w->mark + n, *end = w->buf + w->have;
		if (n == 0)
			scalar = *p != '{' && *p != '[' && *p != '"';
		for (; p < end; p++) {
			unsigned char ch = (unsigned char)*p;
			if (scalar) {
				if (ch <= ' ' || ch == ',' || ch == ']' ||
				    ch == '}') {
					done = true;
					break;
				}
			} else if (str) {
				if (esc)
					esc = false;
				else if (ch == '\\')
					esc = true;
				else if (ch == '"' && (str = false, depth == 0))
					done = true;
			} else if (ch == '"') {
				str = true;
			} else if (ch == '{' || ch == '[') {
				depth++;
			} else if (ch == '}' || ch == ']') {
				done = --depth == 0;
			} else if (ch == '\n') {
				r->line++;
			}
			if (done) {
				p++;
				break;
			}
		}
		n = (size_t)(p - (w->buf + w->mark));
	}
	*len = n;
	w->pos = w->mark + n;
	return AS_OK;
}

/*
 * cJSON on the value just cut, starting on line0; refusals as the whole
 * text's. cJSON is shown the byte after it too: where it refuses a string
 * it points past the string's first byte, and at its own text's end it
 * would point one byte short.
 */
static int parse_piece(struct reader *r, size_t len, uint64_t line0,
		       cJSON **out)
{
	struct as_jwin *w = &r->w;
	int err = as_jwin_need(w, 1, r->line, r->c.diag);
	if (err)
		return err;
	const char *p = w->buf + w->mark, *end = p;
	size_t shown = len + (w->pos < w->have);
	cJSON *v = NULL;
	/* cJSON would skip a BOM at the start of its text: here it is not. */
	if (len == 0 || (unsigned char)p[0] != 0xef)
		v = cJSON_ParseWithLengthOpts(p, shown, &end, false);
	if (!end || end < p || end > p + shown)
		end = v ? p + len : p;
	if (v && end == p + len) {
		*out = v;
		return AS_OK;
	}
	cJSON_Delete(v);
	for (const char *q = p; q < end; q++)
		line0 += *q == '\n';
	return as_json_syntax(&r->w, (size_t)(end - r->w.buf), line0, &r->tot,
			      r->c.diag);
}

/* Blanks then the end: what may follow the root. */
static int trailing(struct reader *r)
{
	struct as_jwin *w = &r->w;
	for (;;) {
		int err = as_jwin_need(w, 1, r->line, r->c.diag);
		if (err)
			return err;
		if (w->pos == w->have)
			return AS_OK;
		char c = w->buf[w->pos];
		if (!strchr(" \t\r\n", c))
			return as_diag_set(r->c.diag, r->line, AS_EPARSE,
					   "trailing data after the JSON "
					   "value");
		r->line += c == '\n';
		w->pos++;
	}
}

/* Back to byte `off`, on `line`, for another pass. */
static int restart(struct reader *r, uint64_t off, uint64_t line)
{
	struct as_jwin *w = &r->w;
	int err = as_source_rewind(w->src, r->c.diag);
	w->have = w->pos = 0;
	w->off = 0;
	w->mark = SIZE_MAX;
	w->eof = false;
	while (!err && w->off + w->have < off && !w->eof) {
		w->pos = w->have;
		err = as_jwin_more(w, line, r->c.diag);
	}
	if (!err && w->off + w->have < off)
		err = as_diag_set(r->c.diag, line, AS_EIO, "the file changed "
							   "while being read");
	if (!err)
		w->pos = (size_t)(off - w->off);
	r->line = line;
	return err;
}

/* The root but the array, once all of it is known. */
static int header(struct reader *r)
{
	r->c.text = NULL;
	r->c.base = 0;
	r->c.depth = 0;
	r->c.input_bytes = r->tot.last;
	return r->form->header(&r->c, r->root, &r->lists);
}

/* The array at pos, each element read when `read` (else only parsed). */
static int read_list(struct reader *r, bool read)
{
	struct as_jctx *c = &r->c;
	struct as_jwin *w = &r->w;
	int ch, err;
	w->pos++; /* [ */
	w->mark = SIZE_MAX; /* what came before goes: blanks need not stay */
	if ((err = next(r, &ch)))
		return err;
	if (ch == ']') {
		w->pos++;
		return AS_OK;
	}
	for (int i = 0;; i++) {
		size_t len;
		uint64_t line0;
		cJSON *v;
		if ((err = next(r, &ch)))
			return err;
		if (i == INT_MAX) /* paths count elements in an int */
			return as_diag_set(c->diag, r->line, AS_EPARSE,
					   "more than %d elements in \"%s\"",
					   INT_MAX, r->list);
		line0 = r->line;
		if ((err = cut(r, &len)) ||
		    (err = parse_piece(r, len, line0, &v)))
			return err;
		/* What follows first: a whole-text parse refuses it before
		 * reading anything. The window keeps the element (mark). */
		if ((err = next(r, &ch)) || (ch != ',' && ch != ']')) {
			cJSON_Delete(v);
			return err ? err : syntax(r, w->pos);
		}
		if (read) {
			c->depth = 0;
			as_json_push(c, r->list, 0);
			as_json_push(c, NULL, i);
			c->text = w->buf + w->mark;
			c->len = len;
			c->base = 2;
			c->line0 = line0;
			err = as_json_dup_keys(c, v);
			if (!err)
				err = r->each(c, v);
			c->text = NULL;
			c->base = 0;
			c->depth = 0;
		}
		cJSON_Delete(v);
		if (err)
			return err;
		w->mark = SIZE_MAX; /* read: the window may let it go */
		w->pos++;
		if (ch == ']')
			return AS_OK;
	}
}

/* Member `key` (taken) of the root, its value at pos (first byte ch). */
static int member(struct reader *r, char *key, int ch, uint32_t ord)
{
	struct as_jctx *c = &r->c;
	if (r->nm == r->cap_m) {
		size_t cap = r->cap_m * 2;
		struct as_jmember *m = realloc(r->m, cap * sizeof(*m));
		if (!m) {
			free(key);
			return AS_ENOMEM;
		}
		r->m = m;
		r->cap_m = cap;
	}
	struct as_jmember *mb = &r->m[r->nm++];
	*mb = (struct as_jmember){.key = key, .line = r->line};
	c->members = r->m;
	c->nmembers = r->nm;
	const struct as_jlist *l = r->form->lists;
	while (l->key && strcmp(l->key, key) != 0)
		l++;
	if (!r->list && ch == '[' && l->key) {
		cJSON *none = cJSON_CreateArray();
		if (!none || !cJSON_AddItemToObject(r->root, key, none)) {
			cJSON_Delete(none);
			return AS_ENOMEM;
		}
		r->list = key;
		r->each = l->each;
		r->list_off = r->w.off + r->w.pos;
		r->list_line = r->line;
		bool first = r->form->header_first;
		r->deferred = first && r->tot.root_keys > ord + 1;
		if (r->check_only)
			return read_list(r, false);
		int err = r->deferred || !first ? AS_OK : header(r);
		return err ? err
			   : read_list(r, !r->deferred && (r->lists || !first));
	}
	size_t len;
	cJSON *v;
	int err;
	if ((err = cut(r, &len)) ||
	    (err = parse_piece(r, len, mb->line, &v)))
		return err;
	/* Its duplicate keys are refused with the root's (parse_root). */
	if (!(mb->text = malloc(len ? len : 1)))
		err = AS_ENOMEM;
	if (!err) {
		memcpy(mb->text, r->w.buf + r->w.mark, len);
		mb->len = len;
		r->w.mark = SIZE_MAX; /* copied: the window may let it go */
		if (!cJSON_AddItemToObject(r->root, key, v))
			err = AS_ENOMEM;
		else
			v = NULL;
	}
	cJSON_Delete(v);
	return err;
}

static int read_root(struct reader *r)
{
	struct as_jwin *w = &r->w;
	int ch, err;
	size_t len;
	cJSON *v;
	r->line = 1;
	/* A second BOM was refused by the prescan (formats.c took one). */
	if ((err = next(r, &ch)))
		return err;
	if (ch != '{') { /* cJSON's verdict on the value, then ours */
		if ((err = cut(r, &len)) ||
		    (err = parse_piece(r, len, r->line, &v)))
			return err;
		cJSON_Delete(v);
		return (err = trailing(r))
			       ? err
			       : as_json_fail(&r->c, NULL,
					      "expected a JSON object at the "
					      "top%s",
					      "");
	}
	w->pos++;
	if ((err = next(r, &ch)))
		return err;
	bool end = ch == '}';
	w->pos += end;
	for (uint32_t ord = 0; !end; ord++) {
		if ((err = next(r, &ch)))
			return err;
		if (ch != '"') /* where cJSON's string reader stops */
			return syntax(r, w->pos + (ch >= 0));
		if ((err = cut(r, &len)) ||
		    (err = parse_piece(r, len, r->line, &v)))
			return err;
		char *key = strdup(v->valuestring);
		cJSON_Delete(v);
		w->mark = SIZE_MAX;
		if (!key)
			return AS_ENOMEM;
		if ((err = next(r, &ch))) {
			free(key);
			return err;
		}
		if (ch != ':') {
			free(key);
			return syntax(r, w->pos);
		}
		w->pos++;
		if ((err = next(r, &ch)) || (err = member(r, key, ch, ord)) ||
		    (err = next(r, &ch)))
			return err;
		if (ch != ',' && ch != '}')
			return syntax(r, w->pos);
		w->pos++;
		end = ch == '}';
	}
	if ((err = trailing(r)) || r->check_only)
		return err;
	if (!r->list || r->deferred || !r->form->header_first) {
		if ((err = header(r)))
			return err;
		if (r->list && r->lists && r->deferred &&
		    ((err = restart(r, r->list_off, r->list_line)) ||
		     (err = read_list(r, true))))
			return err;
	}
	if (!r->lists || !r->form->end)
		return AS_OK;
	r->c.depth = 0;
	return r->form->end(&r->c, r->root);
}

/* Drop what a pass read of the root. */
static void forget(struct reader *r)
{
	for (size_t i = 0; i < r->nm; i++) {
		free(r->m[i].key);
		free(r->m[i].text);
	}
	r->nm = 0;
	cJSON_Delete(r->root);
	r->root = NULL;
}

/* One pass over the root, from the start. */
static int pass(struct reader *r, bool check_only)
{
	forget(r);
	r->c = (struct as_jctx){.b = r->c.b, .diag = r->c.diag,
				.state = r->c.state, .members = r->m};
	r->list = NULL;
	r->deferred = r->lists = false;
	r->check_only = check_only;
	if (!(r->root = cJSON_CreateObject()))
		return AS_ENOMEM;
	int err = restart(r, 0, 1);
	return err ? err : read_root(r);
}

/* A list given but not an array is refused here (after the header). */
static int trace_end(struct as_jctx *c, const cJSON *root)
{
	int err;
	if ((err = parse_list(c, root, "events", parse_event)) ||
	    (err = parse_list(c, root, "buffers", parse_buffer)))
		return err;
	return cJSON_HasObjectItem(root, "buffers") ? live_names_unique(c)
						    : AS_OK;
}

static const struct as_jlist trace_lists[] = {
	{"events", parse_event},
	{"buffers", parse_buffer},
	{NULL, NULL},
};

static const struct as_jform trace_form = {
	.name = "json",
	.lists = trace_lists,
	.header_first = true,
	.header = parse_root,
	.end = trace_end,
};

int as_json_stream(struct as_builder *b, struct as_source *src,
		   const struct as_jform *form, struct as_diag *diag)
{
	struct reader r = {
		.c = {.b = b, .diag = diag},
		.w = {.src = src, .mark = SIZE_MAX,
		      .limit = as_source_limit(src)},
		.cap_m = 8,
	};
	r.m = malloc(r.cap_m * sizeof(*r.m));
	int err = r.m ? as_json_prescan(&r.w, false, &r.tot, diag)
		      : AS_ENOMEM;
	r.form = form ? form
		 : r.tot.trace_events && !r.tot.format_key
			 ? &as_json_profiler_form
			 : &trace_form;
	if (!err && !form && r.form != &trace_form &&
	    !(as_builder_trace(b)->format = as_builder_intern(b, r.form->name)))
		err = AS_ENOMEM;
	if (!err && r.form->state_size &&
	    !(r.c.state = calloc(1, r.form->state_size)))
		err = AS_ENOMEM;
	/* A text that does not parse: its first syntax fault, found by a
	 * pass that reads nothing, comes before any other refusal. */
	if (!err && !r.tot.parses)
		err = pass(&r, true);
	if (!err)
		err = pass(&r, false);
	if (r.c.state && r.form->state_free)
		r.form->state_free(r.c.state);
	free(r.c.state);
	forget(&r);
	free(r.m);
	free(r.w.own);
	return err;
}

static int json_stream(struct as_builder *b, struct as_source *src,
		       struct as_diag *diag)
{
	return as_json_stream(b, src, NULL, diag);
}

static bool json_sniff(const char *head, size_t len)
{
	size_t i = 0;
	while (i < len && strchr(" \t\r\n", head[i]))
		i++;
	return i < len && head[i] == '{';
}

const struct as_format_impl as_format_json = {
	.name = "json",
	.extensions = ".json",
	.sniff = json_sniff,
	.stream = json_stream,
};

