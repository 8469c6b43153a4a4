/*
 * The JSON trace format (docs/trace-format.md): the root, pools, config and
 * the "events" and "buffers" forms. The "graph" form is read by graph.c and
 * the "numa" form by numa.c; common.c locates values and reports errors.
 */
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
	return err;
}

static int parse_root(struct as_jctx *c, const cJSON *root)
{
	const char *fmt;
	uint64_t version;
	int err;
	if (!cJSON_IsObject(root))
		return as_json_fail(c, NULL, "expected a JSON object at the top%s",
			    "");
	if ((err = as_json_get_string(c, root, "format", true, &fmt)))
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
	if ((err = parse_list(c, root, "events", parse_event)))
		return err;
	if ((err = parse_list(c, root, "buffers", parse_buffer)))
		return err;
	return has_buffers ? live_names_unique(c) : AS_OK;
}

static int json_whole(struct as_builder *b, const char *data, size_t len,
		      struct as_diag *diag)
{
	struct as_jctx c = {.b = b, .text = data, .len = len, .diag = diag};
	cJSON *root = NULL;
	int err = as_json_parse(&c, &root);
	if (err)
		return err;
	err = parse_root(&c, root);
	cJSON_Delete(root);
	return err;
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
	.whole = json_whole,
};

