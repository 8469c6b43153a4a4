/*
 * The JSON trace format (docs/trace-format.md). This is the only file that
 * uses cJSON. cJSON keeps no positions, so for errors inside a well-formed
 * document a small scanner finds the line of the offending value by its
 * path (events[3].size) in the original text.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "options.h"
#include "trace_private.h"

#define FORMAT_NAME "allocscope-trace"
#define FORMAT_VERSION 1
#define MAX_DEPTH 64

/* ---- Locating a value by path in the text ---- */

struct seg {
	const char *key;   /* object member, or NULL */
	int index;         /* array element when key is NULL */
};

struct scan {
	const char *p, *end;
};

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
				 *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool skip_string(struct scan *s, const char **start, size_t *len)
{
	if (s->p >= s->end || *s->p != '"')
		return false;
	const char *a = ++s->p;
	while (s->p < s->end && *s->p != '"')
		s->p += (*s->p == '\\') ? 2 : 1;
	if (s->p >= s->end)
		return false;
	if (start) {
		*start = a;
		*len = (size_t)(s->p - a);
	}
	s->p++;
	return true;
}

static bool skip_value(struct scan *s, int depth)
{
	ws(s);
	if (s->p >= s->end || depth > MAX_DEPTH)
		return false;
	char c = *s->p;
	if (c == '"')
		return skip_string(s, NULL, NULL);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		s->p++;
		ws(s);
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return true;
		}
		for (;;) {
			if (c == '{') {
				ws(s);
				if (!skip_string(s, NULL, NULL))
					return false;
				ws(s);
				if (s->p >= s->end || *s->p++ != ':')
					return false;
			}
			if (!skip_value(s, depth + 1))
				return false;
			ws(s);
			if (s->p >= s->end)
				return false;
			if (*s->p == close) {
				s->p++;
				return true;
			}
			if (*s->p++ != ',')
				return false;
		}
	}
	while (s->p < s->end && !strchr(",}] \t\r\n", *s->p))
		s->p++;
	return true;
}

/* Move to the value at `seg` inside the value at s->p. */
static bool step(struct scan *s, const struct seg *seg)
{
	ws(s);
	if (s->p >= s->end)
		return false;
	if (seg->key) {
		if (*s->p++ != '{')
			return false;
		for (;;) {
			const char *k;
			size_t kl;
			ws(s);
			if (!skip_string(s, &k, &kl))
				return false;
			ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return false;
			ws(s);
			if (kl == strlen(seg->key) &&
			    memcmp(k, seg->key, kl) == 0)
				return true;
			if (!skip_value(s, 1))
				return false;
			ws(s);
			if (s->p >= s->end || *s->p++ != ',')
				return false;
		}
	}
	if (*s->p++ != '[')
		return false;
	for (int i = 0; i < seg->index; i++) {
		if (!skip_value(s, 1))
			return false;
		ws(s);
		if (s->p >= s->end || *s->p++ != ',')
			return false;
	}
	ws(s);
	return true;
}

static uint64_t line_of(const char *text, size_t len, const struct seg *path,
			int n)
{
	struct scan s = {text, text + len};
	for (int i = 0; i < n; i++)
		if (!step(&s, &path[i]))
			break;
	uint64_t line = 1;
	for (const char *q = text; q < s.p; q++)
		line += *q == '\n';
	return line;
}

/* ---- Reading values ---- */

struct ctx {
	struct as_builder *b;
	const char *text;
	size_t len;
	struct as_diag *diag;
	struct seg path[4];
	int depth;
};

static uint64_t here(const struct ctx *c)
{
	return line_of(c->text, c->len, c->path, c->depth);
}

static int fail(const struct ctx *c, const char *field, const char *fmt,
		const char *arg)
{
	struct ctx at = *c;
	if (field && at.depth < 4)
		at.path[at.depth++] = (struct seg){field, 0};
	char msg[400];
	snprintf(msg, sizeof(msg), fmt, arg);
	char where[96] = "";
	size_t used = 0;
	for (int i = 0; i < at.depth && used < sizeof(where); i++) {
		if (at.path[i].key)
			used += (size_t)snprintf(where + used,
						 sizeof(where) - used, "%s%s",
						 i ? "." : "", at.path[i].key);
		else
			used += (size_t)snprintf(where + used,
						 sizeof(where) - used, "[%d]",
						 at.path[i].index);
	}
	return as_diag_set(c->diag, here(&at), AS_EPARSE, "%s%s%s", where,
			   *where ? ": " : "", msg);
}

/*
 * A non-negative integer: a JSON number that is integral and exactly
 * representable (up to 2^53), or a string of decimal digits for larger ones.
 */
static int get_u64(const struct ctx *c, const cJSON *obj, const char *field,
		   bool required, uint64_t def, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		if (required)
			return fail(c, NULL, "missing field '%s'", field);
		*out = def;
		return AS_OK;
	}
	if (cJSON_IsString(v)) {
		if (as_parse_u64(v->valuestring, strlen(v->valuestring), out))
			return AS_OK;
		return fail(c, field, "'%s' is not a non-negative integer "
				      "(or overflows 64 bits)",
			    v->valuestring);
	}
	if (!cJSON_IsNumber(v))
		return fail(c, field, "expected a number%s", "");
	double d = v->valuedouble;
	if (!isfinite(d) || d < 0 || d != floor(d))
		return fail(c, field, "expected a non-negative integer%s", "");
	if (d > 9007199254740992.0)
		return fail(c, field, "%s too large for a JSON number: write "
				      "it as a decimal string",
			    "value");
	*out = (uint64_t)d;
	return AS_OK;
}

static int get_string(const struct ctx *c, const cJSON *obj,
		      const char *field, bool required, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		if (required)
			return fail(c, NULL, "missing field '%s'", field);
		*out = NULL;
		return AS_OK;
	}
	if (!cJSON_IsString(v))
		return fail(c, field, "expected a string%s", "");
	*out = v->valuestring;
	return AS_OK;
}

/* Options as an object {"k": v} or a string "k=v,k=v", into buf. */
static int options_text(const struct ctx *c, const cJSON *v, char *buf,
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
		return fail(c, NULL, "%s: expected an object of options",
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
			return fail(c, NULL, "option '%s' must be a string, "
					     "number or boolean",
				    o->string);
		int w = snprintf(buf + used, len - used, "%s%s=%s",
				 used ? "," : "", o->string, val);
		if (w < 0 || (size_t)w >= len - used)
			return fail(c, NULL, "%s: too many options",
				    "config");
		used += (size_t)w;
	}
	return AS_OK;
}

static int pool_index(const struct ctx *c, const cJSON *obj, uint16_t *out)
{
	const char *pool;
	int err = get_string(c, obj, "pool", false, &pool);
	if (err || !pool) {
		*out = 0;
		return err;
	}
	const struct as_trace *t = as_builder_trace(c->b);
	for (uint16_t i = 0; i < t->nspaces; i++)
		if (strcmp(t->spaces[i].name, pool) == 0) {
			*out = i;
			return AS_OK;
		}
	return fail(c, "pool", "unknown pool '%s' (declare it in \"pools\")",
		    pool);
}

/* Fields an allocation may carry besides name/size/align. */
static int buffer_extras(const struct ctx *c, const cJSON *obj, uint32_t idx)
{
	struct as_buffer *buf = as_builder_buffer(c->b, idx);
	uint64_t v;
	uint16_t pool = 0;
	int err = pool_index(c, obj, &pool);
	if (err)
		return err;
	buf->space = pool;
	if ((err = get_u64(c, obj, "offset", false, AS_NO_OFFSET, &v)))
		return err;
	if (v != AS_NO_OFFSET && v > UINT64_MAX - buf->size)
		return fail(c, "offset", "offset + size overflows 64 bits%s",
			    "");
	buf->recorded = v;
	if ((err = get_u64(c, obj, "stream", false, 0, &v)))
		return err;
	if (v > UINT16_MAX)
		return fail(c, "stream", "stream out of range%s", "");
	buf->stream = (uint16_t)v;
	const char *s;
	if ((err = get_string(c, obj, "symbol", false, &s)))
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
			return fail(c, "frames", "expected an array of "
						 "strings%s",
				    "");
		text[0] = 0;
		cJSON_ArrayForEach(fr, frames)
		{
			if (!cJSON_IsString(fr))
				return fail(c, "frames", "expected an array "
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
		int64_t fi = as_builder_frames(c->b, text);
		if (fi < 0)
			return (int)fi;
		buf->frames = (uint32_t)fi;
	}
	if ((err = get_string(c, obj, "alias_of", false, &s)))
		return err;
	if (s) {
		int64_t parent = as_builder_lookup(c->b, s);
		if (parent < 0 || (uint32_t)parent == idx)
			return fail(c, "alias_of", "unknown buffer '%s'", s);
		buf->alias_of = (uint32_t)parent;
		if ((err = get_u64(c, obj, "alias_offset", false, 0,
				   &buf->alias_offset)))
			return err;
	}
	return AS_OK;
}

static int parse_event(struct ctx *c, const cJSON *ev)
{
	const char *op, *name;
	int err;
	if (!cJSON_IsObject(ev))
		return fail(c, NULL, "expected an object%s", "");
	if ((err = get_string(c, ev, "op", true, &op)))
		return err;
	uint64_t line = here(c);
	if (strcmp(op, "alloc") == 0) {
		uint64_t size, align;
		if ((err = get_string(c, ev, "name", true, &name)) ||
		    (err = get_u64(c, ev, "size", true, 0, &size)) ||
		    (err = get_u64(c, ev, "align", false, 1, &align)))
			return err;
		int64_t idx = as_builder_alloc(c->b, name, size, align, line,
					       c->diag);
		if (idx < 0)
			return (int)idx;
		return buffer_extras(c, ev, (uint32_t)idx);
	}
	if (strcmp(op, "free") == 0) {
		if ((err = get_string(c, ev, "name", true, &name)))
			return err;
		return as_builder_free(c->b, name, line, c->diag);
	}
	if (strcmp(op, "config") == 0) {
		char opts[1024];
		if ((err = options_text(
			     c, cJSON_GetObjectItemCaseSensitive(ev, "options"),
			     opts, sizeof(opts))))
			return err;
		return as_builder_case(c->b, opts, c->diag);
	}
	static const char *const queries[] = {"dump", "stats", "render",
					      "curr"};
	for (int q = 0; q < 4; q++)
		if (strcmp(op, queries[q]) == 0)
			return as_builder_query(c->b, (enum as_query)q);
	return fail(c, "op", "unknown op '%s' (expected alloc, free, config, "
			     "dump, stats, render or curr)",
		    op);
}

static int parse_buffer(struct ctx *c, const cJSON *bo)
{
	const char *name;
	uint64_t size, align, start, end;
	int err;
	if (!cJSON_IsObject(bo))
		return fail(c, NULL, "expected an object%s", "");
	if ((err = get_string(c, bo, "name", true, &name)) ||
	    (err = get_u64(c, bo, "size", true, 0, &size)) ||
	    (err = get_u64(c, bo, "align", false, 1, &align)) ||
	    (err = get_u64(c, bo, "start", true, 0, &start)) ||
	    (err = get_u64(c, bo, "end", true, 0, &end)))
		return err;
	int64_t idx = as_builder_add_timed(c->b, name, size, align, start,
					   end, here(c), c->diag);
	if (idx < 0)
		return (int)idx;
	return buffer_extras(c, bo, (uint32_t)idx);
}

static int parse_pools(struct ctx *c, const cJSON *pools)
{
	if (!pools)
		return AS_OK;
	if (!cJSON_IsArray(pools))
		return fail(c, NULL, "pools: expected an array%s", "");
	int i = 0;
	const cJSON *po;
	c->path[c->depth++] = (struct seg){"pools", 0};
	cJSON_ArrayForEach(po, pools)
	{
		const char *name;
		uint64_t cap;
		int err;
		c->path[c->depth] = (struct seg){NULL, i++};
		c->depth++;
		if (!cJSON_IsObject(po))
			return fail(c, NULL, "expected an object%s", "");
		if ((err = get_string(c, po, "name", true, &name)) ||
		    (err = get_u64(c, po, "capacity", false, 0, &cap)))
			return err;
		if (i == 1)
			as_builder_trace(c->b)->spaces[0].name =
				as_builder_intern(c->b, name);
		int sp = i == 1 ? 0 : as_builder_space(c->b, name, cap);
		if (sp < 0)
			return sp;
		as_builder_trace(c->b)->spaces[sp].capacity = cap;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

static int parse_list(struct ctx *c, const cJSON *root, const char *key,
		      int (*each)(struct ctx *, const cJSON *))
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!list)
		return AS_OK;
	if (!cJSON_IsArray(list))
		return fail(c, key, "expected an array%s", "");
	c->path[c->depth++] = (struct seg){key, 0};
	int i = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, list)
	{
		c->path[c->depth++] = (struct seg){NULL, i++};
		int err = each(c, item);
		if (err)
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

static int parse_root(struct ctx *c, const cJSON *root)
{
	const char *fmt;
	uint64_t version;
	int err;
	if (!cJSON_IsObject(root))
		return fail(c, NULL, "expected a JSON object at the top%s",
			    "");
	if ((err = get_string(c, root, "format", true, &fmt)))
		return err;
	if (strcmp(fmt, FORMAT_NAME) != 0)
		return fail(c, "format", "'%s' is not "
					 "'" FORMAT_NAME "'",
			    fmt);
	if ((err = get_u64(c, root, "version", true, 0, &version)))
		return err;
	if (version != FORMAT_VERSION)
		return fail(c, "version", "unsupported version (this build "
					  "reads version %s)",
			    "1");
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
	if (opts[0] && (err = as_builder_case(c->b, opts, c->diag)))
		return err;
	bool has_events = cJSON_HasObjectItem(root, "events");
	bool has_buffers = cJSON_HasObjectItem(root, "buffers");
	if (has_events && has_buffers)
		return fail(c, NULL, "a trace has \"events\" or \"buffers\", "
				     "not both%s",
			    "");
	if (!has_events && !has_buffers)
		return fail(c, NULL, "a trace needs \"events\" or "
				     "\"buffers\"%s",
			    "");
	if ((err = parse_list(c, root, "events", parse_event)))
		return err;
	return parse_list(c, root, "buffers", parse_buffer);
}

int as_parse_json(struct as_builder *b, const char *data, size_t len,
		  struct as_diag *diag)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!root) {
		const char *stop = end && end >= data && end <= data + len
					   ? end
					   : data + len;
		/* Stopped on the last character that is not space: cut short. */
		const char *last = data + len;
		while (last > data && strchr(" \t\r\n", last[-1]))
			last--;
		bool truncated = stop + 1 >= last;
		if (truncated)
			stop = data + len;
		uint64_t line = 1;
		for (const char *q = data; q < stop; q++)
			line += *q == '\n';
		return as_diag_set(diag, line, AS_EPARSE,
				   truncated ? "truncated JSON (unexpected end "
					       "of input)%.0s"
					     : "malformed JSON near '%.20s'",
				   stop);
	}
	struct ctx c = {.b = b, .text = data, .len = len, .diag = diag};
	int err = parse_root(&c, root);
	cJSON_Delete(root);
	return err;
}
