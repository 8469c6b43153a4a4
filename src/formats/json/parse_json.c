/*
 * The JSON trace format (docs/trace-format.md). This is the only file that
 * uses cJSON. cJSON keeps no positions, so for errors inside a well-formed
 * document a small scanner finds the line of the offending value by its
 * path (events[3].size) in the original text.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"

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

/* "events[3].size": a path in words for messages. */
static void path_text(const struct seg *path, int n, char *where, size_t len)
{
	size_t used = 0;
	where[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		int w = path[i].key ? snprintf(where + used, len - used, "%s%s",
					       i ? "." : "", path[i].key)
				    : snprintf(where + used, len - used,
					       "[%d]", path[i].index);
		if (w < 0)
			break;
		used += (size_t)w;
	}
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
	char where[96];
	path_text(at.path, at.depth, where, sizeof(where));
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
		if ((err = as_builder_frames(c->b, idx, text)))
			return err;
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

/* ==== Graph traces ("graph") ===========================================
 *
 * A computation graph instead of an event list (docs/graph-traces.md):
 *
 *   "graph": {"align": 64,
 *             "tensors": [{"name", "shape": [dims], "dtype", "align"?}],
 *             "inputs": [names], "outputs": [names],
 *             "ops": [{"name"?, "kind", "axis"?, "inputs", "outputs"}]}
 *
 * Operators run in array order, one time step each. A tensor's size is the
 * product of its dims times its element size; it lives from the operator
 * that produces it (graph inputs: from time 0) to one step after the last
 * operator that consumes it (graph outputs: to the end of the graph).
 * Tensors become buffers (graph inputs first, then outputs in execution
 * order); operators go to t->ops and shapes to t->shapes.
 *
 * Invariants checked here, so strategies may rely on them:
 *  - every tensor is produced by exactly one operator or is a graph input,
 *    never both, and is read only after it is produced;
 *  - reshape keeps the byte size; concat and split agree with their shapes
 *    (same rank and element size, equal dims off the axis, axis extents
 *    adding up); the axis is normalised into [0, rank).
 * ====================================================================== */

#define GRAPH_DEFAULT_ALIGN 64
#define GRAPH_MAX_RANK 32

struct gtensor {
	const char *name;
	uint64_t size, align;
	uint64_t *dims;         /* owned by the trace */
	uint32_t rank, elem;
	int64_t producer;       /* op index, -1: none */
	int64_t last_use;       /* op index, -1: never read */
	uint8_t flags;          /* AS_BUF_GRAPH_INPUT/OUTPUT */
	uint32_t buf;           /* buffer index once added */
};

struct graph {
	struct gtensor *t;
	uint32_t n;
	uint32_t *slots;        /* name hash: tensor index or AS_NONE */
	uint32_t mask;
};

static const struct {
	const char *name;
	uint32_t size;
} dtypes[] = {
	{"float64", 8}, {"float32", 4}, {"float16", 2}, {"bfloat16", 2},
	{"float8", 1},  {"int64", 8},   {"int32", 4},   {"int16", 2},
	{"int8", 1},    {"uint64", 8},  {"uint32", 4},  {"uint16", 2},
	{"uint8", 1},   {"bool", 1},
};

/* The slot of `name`: its tensor, or the empty slot where it would go. */
static uint32_t graph_slot(const struct graph *g, const char *name)
{
	uint32_t h = (uint32_t)(as_hash_str(name) & g->mask);
	while (g->slots[h] != AS_NONE &&
	       strcmp(g->t[g->slots[h]].name, name) != 0)
		h = (h + 1) & g->mask;
	return h;
}

static int64_t graph_find(const struct graph *g, const char *name)
{
	uint32_t s = graph_slot(g, name);
	return g->slots[s] == AS_NONE ? -1 : (int64_t)g->slots[s];
}

static int graph_dtype(const struct ctx *c, const char *dtype, uint32_t *out)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (strcmp(dtypes[i].name, dtype) == 0) {
			*out = dtypes[i].size;
			return AS_OK;
		}
	return fail(c, "dtype", "unknown dtype '%s' (float64, float32, "
				"float16, bfloat16, float8, int64, int32, int16, "
				"int8, uint64, uint32, uint16, uint8, bool)",
		    dtype);
}

/* One tensor: name, shape, dtype and size (product of dims x element). */
static int graph_tensor(struct ctx *c, struct graph *g, const cJSON *to,
			uint64_t def_align)
{
	struct gtensor *gt = &g->t[g->n];
	const char *name, *dtype;
	int err;
	if (!cJSON_IsObject(to))
		return fail(c, NULL, "expected an object%s", "");
	if ((err = get_string(c, to, "name", true, &name)) ||
	    (err = get_string(c, to, "dtype", true, &dtype)) ||
	    (err = get_u64(c, to, "align", false, def_align, &gt->align)))
		return err;
	if (!*name)
		return fail(c, "name", "empty tensor name%s", "");
	if (gt->align == 0 || (gt->align & (gt->align - 1)))
		return fail(c, "align", "the alignment of tensor '%s' is not a "
					"power of two",
			    name);
	uint32_t slot = graph_slot(g, name);
	if (g->slots[slot] != AS_NONE)
		return fail(c, "name", "tensor '%s' is declared twice", name);
	if ((err = graph_dtype(c, dtype, &gt->elem)))
		return err;
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(to, "shape");
	if (!shape)
		return fail(c, NULL, "missing field '%s'", "shape");
	if (!cJSON_IsArray(shape))
		return fail(c, "shape", "expected an array of dims%s", "");
	int rank = cJSON_GetArraySize(shape);
	if (rank > GRAPH_MAX_RANK)
		return fail(c, "shape", "more than %s dims", "32");
	gt->dims = malloc(((size_t)rank + 1) * sizeof(*gt->dims));
	if (!gt->dims || as_builder_own(c->b, gt->dims) != AS_OK)
		return AS_ENOMEM;
	gt->rank = (uint32_t)rank;
	uint64_t size = 1;
	bool overflow = false;
	const cJSON *d;
	int k = 0;
	cJSON_ArrayForEach(d, shape)
	{
		double v = cJSON_IsNumber(d) ? d->valuedouble : -1;
		if (!isfinite(v) || v < 0 || v != floor(v) ||
		    v > 9007199254740992.0)
			return fail(c, "shape", "dims must be non-negative "
						"integers (tensor '%s')",
				    name);
		uint64_t dim = (uint64_t)v;
		gt->dims[k++] = dim;
		if (dim && size > UINT64_MAX / dim)
			overflow = true;
		else
			size *= dim;
	}
	if (overflow || size > UINT64_MAX / gt->elem)
		return fail(c, "shape", "the size of tensor '%s' overflows 64 "
					"bits",
			    name);
	if (!(gt->name = as_builder_intern(c->b, name)))
		return AS_ENOMEM;
	gt->size = size * gt->elem;
	gt->producer = gt->last_use = -1;
	gt->buf = AS_NONE;
	g->slots[slot] = g->n++;
	return AS_OK;
}

/* The index of the tensor an array item of `key` names. */
static int graph_name_at(struct ctx *c, struct graph *g, const char *key,
			 const cJSON *it, int64_t *ti)
{
	if (!cJSON_IsString(it))
		return fail(c, key, "expected an array of tensor names%s", "");
	*ti = graph_find(g, it->valuestring);
	if (*ti < 0)
		return fail(c, key, "unknown tensor '%s'", it->valuestring);
	return AS_OK;
}

/* Mark the tensors named in graph.inputs or graph.outputs. */
static int graph_marks(struct ctx *c, struct graph *g, const cJSON *graph,
		       const char *key, uint8_t flag)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(graph, key);
	const cJSON *it;
	if (!list)
		return AS_OK;
	if (!cJSON_IsArray(list))
		return fail(c, key, "expected an array of tensor names%s", "");
	cJSON_ArrayForEach(it, list)
	{
		int64_t ti;
		int err = graph_name_at(c, g, key, it, &ti);
		if (err)
			return err;
		g->t[ti].flags |= flag;
	}
	return AS_OK;
}

/* Tensor names of op.inputs / op.outputs as tensor indices (owned). */
static int graph_names(struct ctx *c, struct graph *g, const cJSON *op,
		       const char *key, uint32_t **out, uint32_t *n)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(op, key);
	const cJSON *it;
	if (!list)
		return fail(c, NULL, "missing field '%s'", key);
	if (!cJSON_IsArray(list))
		return fail(c, key, "expected an array of tensor names%s", "");
	int cnt = cJSON_GetArraySize(list);
	uint32_t *v = malloc(((size_t)cnt + 1) * sizeof(*v));
	if (!v || as_builder_own(c->b, v) != AS_OK)
		return AS_ENOMEM;
	uint32_t k = 0;
	cJSON_ArrayForEach(it, list)
	{
		int64_t ti;
		int err = graph_name_at(c, g, key, it, &ti);
		if (err)
			return err;
		v[k++] = (uint32_t)ti;
	}
	*out = v;
	*n = k;
	return AS_OK;
}

/* Concat inputs (or split outputs) against the whole tensor along axis. */
static int graph_check_axis(const struct ctx *c, const struct graph *g,
			    const struct as_op *op, bool concat)
{
	const struct gtensor *whole = &g->t[concat ? op->outputs[0]
						   : op->inputs[0]];
	const uint32_t *parts = concat ? op->inputs : op->outputs;
	uint32_t nparts = concat ? op->ninputs : op->noutputs;
	if (op->axis < -(int32_t)whole->rank || op->axis >= (int32_t)whole->rank)
		return fail(c, "axis", "axis out of range for tensor '%s'",
			    whole->name);
	int32_t signed_axis = op->axis < 0 ? op->axis + (int32_t)whole->rank
					   : op->axis;
	uint32_t axis = (uint32_t)signed_axis;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < nparts; i++) {
		const struct gtensor *p = &g->t[parts[i]];
		if (p->rank != whole->rank || p->elem != whole->elem)
			return fail(c, NULL, "'%s' does not match the rank "
					     "and element size of the whole",
				    p->name);
		for (uint32_t d = 0; d < whole->rank; d++)
			if (d != axis && p->dims[d] != whole->dims[d])
				return fail(c, NULL, "'%s' differs from the "
						     "whole off the axis",
					    p->name);
		sum += p->dims[axis]; /* dims <= 2^53, parts <= 2^31 */
	}
	if (sum != whole->dims[axis])
		return fail(c, "axis", "the parts' extents along the axis do "
				       "not add up to '%s'",
			    whole->name);
	((struct as_op *)op)->axis = (int32_t)axis;
	return AS_OK;
}

static int graph_op(struct ctx *c, struct graph *g, const cJSON *oo,
		    struct as_op *op, uint32_t index)
{
	const char *name, *kind;
	int err;
	if (!cJSON_IsObject(oo))
		return fail(c, NULL, "expected an object%s", "");
	if ((err = get_string(c, oo, "name", false, &name)) ||
	    (err = get_string(c, oo, "kind", true, &kind)))
		return err;
	char autoname[32];
	if (!name) {
		snprintf(autoname, sizeof(autoname), "op%u", index);
		name = autoname;
	}
	if (!(op->name = as_builder_intern(c->b, name)) ||
	    !(op->kind = as_builder_intern(c->b, kind)))
		return AS_ENOMEM;
	op->axis = -1;
	if ((err = graph_names(c, g, oo, "inputs", &op->inputs,
			       &op->ninputs)) ||
	    (err = graph_names(c, g, oo, "outputs", &op->outputs,
			       &op->noutputs)))
		return err;
	for (uint32_t i = 0; i < op->ninputs; i++) {
		struct gtensor *in = &g->t[op->inputs[i]];
		if (in->producer < 0 && !(in->flags & AS_BUF_GRAPH_INPUT))
			return fail(c, "inputs", "'%s' is read before any op "
						 "produces it (and is not a "
						 "graph input)",
				    in->name);
		in->last_use = index;
	}
	for (uint32_t i = 0; i < op->noutputs; i++) {
		struct gtensor *out = &g->t[op->outputs[i]];
		if (out->flags & AS_BUF_GRAPH_INPUT)
			return fail(c, "outputs", "'%s' is a graph input, no "
						  "op may produce it",
				    out->name);
		if (out->producer >= 0)
			return fail(c, "outputs", "'%s' is produced twice",
				    out->name);
		out->producer = index;
	}
	bool concat = strcmp(kind, "concat") == 0;
	bool split = strcmp(kind, "split") == 0;
	if (strcmp(kind, "reshape") == 0) {
		if (op->ninputs != 1 || op->noutputs != 1)
			return fail(c, NULL, "reshape '%s' needs one input and "
					     "one output",
				    name);
		if (g->t[op->inputs[0]].size != g->t[op->outputs[0]].size)
			return fail(c, NULL, "reshape '%s' changes the byte "
					     "size",
				    name);
	} else if (concat || split) {
		const cJSON *axis = cJSON_GetObjectItemCaseSensitive(oo, "axis");
		if (!axis)
			return fail(c, NULL, "%s needs an \"axis\"", kind);
		double v = cJSON_IsNumber(axis) ? axis->valuedouble : 1e300;
		if (!isfinite(v) || v != floor(v) || v < -64 || v > 64)
			return fail(c, "axis", "expected a small integer%s",
				    "");
		op->axis = (int32_t)v;
		if (concat ? op->noutputs != 1 || op->ninputs == 0
			   : op->ninputs != 1 || op->noutputs == 0)
			return fail(c, NULL, concat ? "concat '%s' needs inputs "
						      "and one output"
						    : "split '%s' needs one "
						      "input and outputs",
				    name);
		if ((err = graph_check_axis(c, g, op, concat)))
			return err;
	}
	return AS_OK;
}

static int graph_list(struct ctx *c, const cJSON *graph, const char *key,
		      const cJSON **out, int *n)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(graph, key);
	*out = list;
	*n = 0;
	if (!list)
		return fail(c, NULL, "missing field '%s'", key);
	if (!cJSON_IsArray(list))
		return fail(c, key, "expected an array%s", "");
	*n = cJSON_GetArraySize(list);
	return AS_OK;
}

/* Add a tensor as a buffer with its lifetime over `nops` steps. */
static int graph_add(struct ctx *c, struct graph *g, uint32_t ti,
		     uint32_t nops)
{
	struct gtensor *gt = &g->t[ti];
	uint64_t start = gt->producer < 0 ? 0 : (uint64_t)gt->producer;
	uint64_t end = gt->last_use < 0 ? start + 1 : (uint64_t)gt->last_use + 1;
	if ((gt->flags & AS_BUF_GRAPH_OUTPUT) && end < nops)
		end = nops;
	if (end <= start)
		end = start + 1;
	int64_t idx = as_builder_add_timed(c->b, gt->name, gt->size, gt->align,
					   start, end, 0, c->diag);
	if (idx < 0) { /* the line of the tensor, found only when needed */
		struct ctx at = *c;
		at.path[1] = (struct seg){"tensors", 0};
		at.path[2] = (struct seg){NULL, (int)ti};
		at.depth = 3;
		if (c->diag && idx != AS_ENOMEM)
			c->diag->line = here(&at);
		return (int)idx;
	}
	gt->buf = (uint32_t)idx;
	as_builder_buffer(c->b, gt->buf)->flags |= gt->flags;
	return AS_OK;
}

static int parse_graph(struct ctx *c, const cJSON *graph)
{
	struct graph g = {0};
	struct as_trace *t = as_builder_trace(c->b);
	const cJSON *tensors, *ops, *it;
	int ntensors, nops, err;
	uint64_t def_align;
	c->path[c->depth++] = (struct seg){"graph", 0};
	if (!cJSON_IsObject(graph))
		return fail(c, NULL, "expected an object%s", "");
	if ((err = get_u64(c, graph, "align", false, GRAPH_DEFAULT_ALIGN,
			   &def_align)) ||
	    (err = graph_list(c, graph, "tensors", &tensors, &ntensors)) ||
	    (err = graph_list(c, graph, "ops", &ops, &nops)))
		return err;
	uint32_t cap = 16;
	while (cap < (uint32_t)ntensors * 2u)
		cap *= 2;
	g.t = calloc((size_t)ntensors + 1, sizeof(*g.t));
	g.slots = malloc((size_t)cap * sizeof(*g.slots));
	if (!g.t || !g.slots) {
		err = AS_ENOMEM;
		goto out;
	}
	memset(g.slots, 0xff, (size_t)cap * sizeof(*g.slots));
	g.mask = cap - 1;
	c->path[c->depth++] = (struct seg){"tensors", 0};
	int i = 0;
	cJSON_ArrayForEach(it, tensors)
	{
		c->path[c->depth++] = (struct seg){NULL, i++};
		if ((err = graph_tensor(c, &g, it, def_align)))
			goto out;
		c->depth--;
	}
	c->depth--;
	if ((err = graph_marks(c, &g, graph, "inputs", AS_BUF_GRAPH_INPUT)) ||
	    (err = graph_marks(c, &g, graph, "outputs", AS_BUF_GRAPH_OUTPUT)))
		goto out;
	/* t->ops is freed with the trace; at least one element. */
	t->ops = calloc((size_t)nops + 1, sizeof(*t->ops));
	if (!t->ops) {
		err = AS_ENOMEM;
		goto out;
	}
	t->nops = (uint32_t)nops;
	c->path[c->depth++] = (struct seg){"ops", 0};
	i = 0;
	cJSON_ArrayForEach(it, ops)
	{
		c->path[c->depth++] = (struct seg){NULL, i};
		if ((err = graph_op(c, &g, it, &t->ops[i], (uint32_t)i)))
			goto out;
		i++;
		c->depth--;
	}
	c->depth--;
	for (uint32_t k = 0; k < g.n; k++)
		if (g.t[k].producer < 0 && !(g.t[k].flags & AS_BUF_GRAPH_INPUT)) {
			c->path[c->depth++] = (struct seg){"tensors", 0};
			c->path[c->depth++] = (struct seg){NULL, (int)k};
			err = fail(c, NULL, "tensor '%s' is neither a graph "
					    "input nor produced by an op",
				   g.t[k].name);
			goto out;
		}
	/* Buffers in time order: graph inputs, then outputs of each op. */
	for (uint32_t k = 0; k < g.n; k++)
		if (g.t[k].producer < 0 &&
		    (err = graph_add(c, &g, k, (uint32_t)nops)))
			goto out;
	for (uint32_t o = 0; o < (uint32_t)nops; o++)
		for (uint32_t k = 0; k < t->ops[o].noutputs; k++)
			if ((err = graph_add(c, &g, t->ops[o].outputs[k],
					     (uint32_t)nops)))
				goto out;
	for (uint32_t o = 0; o < (uint32_t)nops; o++) {
		struct as_op *op = &t->ops[o];
		for (uint32_t k = 0; k < op->ninputs; k++)
			op->inputs[k] = g.t[op->inputs[k]].buf;
		for (uint32_t k = 0; k < op->noutputs; k++)
			op->outputs[k] = g.t[op->outputs[k]].buf;
	}
	t = as_builder_trace(c->b);
	t->shapes = calloc((size_t)t->nbuffers + 1, sizeof(*t->shapes));
	if (!t->shapes) {
		err = AS_ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < g.n; k++)
		t->shapes[g.t[k].buf] = (struct as_tensor_shape){
			g.t[k].rank, g.t[k].dims, g.t[k].elem};
	err = AS_OK;
	c->depth--;
out:
	free(g.t);
	free(g.slots);
	return err;
}

/* ==== End of graph traces ============================================ */

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

static int parse_numa(struct ctx *c, const cJSON *root);

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
	if (cJSON_HasObjectItem(root, "numa")) /* the numa section, below */
		return parse_numa(c, root);
	bool has_events = cJSON_HasObjectItem(root, "events");
	bool has_buffers = cJSON_HasObjectItem(root, "buffers");
	bool has_graph = cJSON_HasObjectItem(root, "graph");
	if (has_events + has_buffers + has_graph > 1)
		return fail(c, NULL, "a trace has one of \"events\", "
				     "\"buffers\" or \"graph\"%s",
			    "");
	if (!has_events && !has_buffers && !has_graph)
		return fail(c, NULL, "a trace needs \"events\", \"buffers\" "
				     "or \"graph\"%s",
			    "");
	if (has_graph)
		return parse_graph(c, cJSON_GetObjectItemCaseSensitive(root,
								       "graph"));
	if ((err = parse_list(c, root, "events", parse_event)))
		return err;
	return parse_list(c, root, "buffers", parse_buffer);
}

static int json_whole(struct as_builder *b, const char *data, size_t len,
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
		if (truncated)
			return as_diag_set(diag, line, AS_EPARSE,
					   "truncated JSON (unexpected end of "
					   "input)");
		char near[24];
		size_t k = 0;
		for (const char *q = stop; q < data + len && k < 20; q++)
			near[k++] = (*q >= ' ' && *q < 127) ? *q : ' ';
		near[k] = 0;
		return as_diag_set(diag, line, AS_EPARSE,
				   "malformed JSON near '%s'", near);
	}
	struct ctx c = {.b = b, .text = data, .len = len, .diag = diag};
	int err = parse_root(&c, root);
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

/* ================================================================== */
/* ---- The numa section (docs/numa.md) ----                          */
/*                                                                    */
/* A "numa" object describes cores with private memories and a graph  */
/* split into parent tasks and data-parallel sub-tasks. It expands    */
/* into one buffer per sub-task edge ("block") in its core's space,   */
/* and keeps the bundle structure in trace->numa.                     */
/* ================================================================== */

#include <stdarg.h>
#include <stdlib.h>

#include "allocscope/numa.h"

#define NUMA_MAX_CORES 4096
#define NUMA_MAX_SUBTASKS (1u << 20)
#define NUMA_MAX_OPS (1u << 16)
#define NUMA_MAX_EDGES 4096 /* per parent; names are checked pairwise */
#define NUMA_MAX_BLOCKS (1u << 30) /* sub-tasks x edges, all parents */

/* A deeper path than struct ctx keeps: numa.parents[i].edges[j].volume. */
struct nx {
	struct ctx *c;
	struct seg path[8];
	int depth;
};

static int nfail(const struct nx *x, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int nfail(const struct nx *x, const char *field, const char *fmt, ...)
{
	struct seg path[9];
	int n = x->depth < 8 ? x->depth : 8;
	memcpy(path, x->path, sizeof(x->path));
	if (field)
		path[n++] = (struct seg){field, 0};
	char where[160];
	path_text(path, n, where, sizeof(where));
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return as_diag_set(x->c->diag, line_of(x->c->text, x->c->len, path, n),
			   AS_EPARSE, "%s: %s", where, msg);
}

static void npush(struct nx *x, const char *key, int index)
{
	if (x->depth < 8)
		x->path[x->depth] = (struct seg){key, index};
	x->depth++;
}

/* A JSON value as a non-negative integer in [min, max] (cf. get_u64). */
static int nvalue(const struct nx *x, const cJSON *v, const char *field,
		  uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t u;
	if (cJSON_IsString(v)) {
		if (!as_parse_u64(v->valuestring, strlen(v->valuestring), &u))
			return nfail(x, field, "'%s' is not a non-negative "
					       "integer (or overflows 64 bits)",
				     v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (!isfinite(d) || d < 0 || d != floor(d))
			return nfail(x, field,
				     "expected a non-negative integer");
		if (d > 9007199254740992.0)
			return nfail(x, field, "value too large for a JSON "
					       "number: write it as a decimal "
					       "string");
		u = (uint64_t)d;
	} else {
		return nfail(x, field, "expected a number");
	}
	if (u < min || u > max)
		return nfail(x, field, "%llu is out of range [%llu, %llu]",
			     (unsigned long long)u, (unsigned long long)min,
			     (unsigned long long)max);
	*out = u;
	return AS_OK;
}

static int nfield(const struct nx *x, const cJSON *obj, const char *field,
		  bool required, uint64_t def, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		if (required)
			return nfail(x, NULL, "missing field '%s'", field);
		*out = def;
		return AS_OK;
	}
	return nvalue(x, v, field, min, max, out);
}

/* An optional string field; NULL when absent. */
static int nstring(const struct nx *x, const cJSON *obj, const char *field,
		   const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	*out = NULL;
	if (!v)
		return AS_OK;
	if (!cJSON_IsString(v))
		return nfail(x, field, "expected a string");
	*out = v->valuestring;
	return AS_OK;
}

/* An operator by name (in `ops`) or by position; AS_NONE when absent. */
static int nop_ref(const struct nx *x, const cJSON *edge, const char *field,
		   const cJSON *ops, uint32_t nops, uint32_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(edge, field);
	*out = AS_NONE;
	if (!v || cJSON_IsNull(v))
		return AS_OK;
	if (cJSON_IsString(v)) {
		uint32_t i = 0;
		const cJSON *o;
		if (cJSON_IsArray(ops))
			cJSON_ArrayForEach(o, ops)
			{
				if (cJSON_IsString(o) &&
				    strcmp(o->valuestring, v->valuestring) == 0) {
					*out = i;
					return AS_OK;
				}
				i++;
			}
		return nfail(x, field, "unknown operator '%s'",
			     v->valuestring);
	}
	uint64_t pos;
	int err = nvalue(x, v, field, 0, nops ? nops - 1 : 0, &pos);
	if (err == AS_OK && nops == 0)
		return nfail(x, field, "the parent has no operators");
	*out = (uint32_t)pos;
	return err;
}

/* "source": "PARENT/EDGE" or [parent, edge], an earlier parent's output. */
static int nsource(const struct nx *x, const cJSON *v,
		   const struct as_numa *nm, uint32_t cur, uint32_t *sp,
		   uint32_t *se)
{
	uint64_t pi = AS_NONE, ei = AS_NONE;
	int err;
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2) {
		if (cur == 0)
			return nfail(x, "source", "the first parent has no "
						  "earlier parent to read");
		if ((err = nvalue(x, cJSON_GetArrayItem(v, 0), "source", 0,
				  cur - 1, &pi)))
			return err;
		if ((err = nvalue(x, cJSON_GetArrayItem(v, 1), "source", 0,
				  nm->parents[pi].nedges - 1, &ei)))
			return err;
	} else if (cJSON_IsString(v)) {
		const char *s = v->valuestring, *slash = strrchr(s, '/');
		if (!slash)
			return nfail(x, "source", "'%s' is not PARENT/EDGE", s);
		size_t plen = (size_t)(slash - s);
		for (uint32_t p = cur; p-- > 0 && pi == AS_NONE;)
			if (strlen(nm->parents[p].name) == plen &&
			    memcmp(nm->parents[p].name, s, plen) == 0)
				pi = p;
		if (pi == AS_NONE)
			return nfail(x, "source", "no earlier parent named "
						  "'%.*s'",
				     (int)plen, s);
		const struct as_numa_parent *pp = &nm->parents[pi];
		for (uint32_t e = 0; e < pp->nedges && ei == AS_NONE; e++)
			if (strcmp(nm->edges[pp->first_edge + e].name,
				   slash + 1) == 0)
				ei = e;
		if (ei == AS_NONE)
			return nfail(x, "source", "parent '%s' has no edge '%s'",
				     pp->name, slash + 1);
	} else {
		return nfail(x, "source", "expected \"PARENT/EDGE\" or "
					  "[parent, edge]");
	}
	const struct as_numa_edge *src =
		&nm->edges[nm->parents[pi].first_edge + ei];
	if (src->to != AS_NONE || src->from == AS_NONE)
		return nfail(x, "source", "edge '%s' of parent '%s' is not an "
					  "output edge (it needs \"from\" and "
					  "no \"to\")",
			     src->name, nm->parents[pi].name);
	*sp = (uint32_t)pi;
	*se = (uint32_t)ei;
	return AS_OK;
}

/* One parent's edges; volumes go to vol[e * nsub + k]. */
static int nedges(struct nx *x, const cJSON *po, struct as_numa *nm,
		  uint32_t pi, uint64_t *vol)
{
	struct as_numa_parent *p = &nm->parents[pi];
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(po, "ops");
	const cJSON *edges = cJSON_GetObjectItemCaseSensitive(po, "edges");
	uint32_t e = 0;
	const cJSON *eo;
	int err;
	npush(x, "edges", 0);
	cJSON_ArrayForEach(eo, edges)
	{
		struct as_numa_edge *ed = &nm->edges[p->first_edge + e];
		npush(x, NULL, (int)e);
		if (!cJSON_IsObject(eo))
			return nfail(x, NULL, "expected an object");
		const char *name;
		if ((err = nstring(x, eo, "name", &name)))
			return err;
		char auto_name[32];
		if (!name) {
			snprintf(auto_name, sizeof(auto_name), "e%u", e);
			name = auto_name;
		}
		if (strchr(name, '/'))
			return nfail(x, "name", "edge names cannot contain '/'");
		for (uint32_t j = 0; j < e; j++)
			if (strcmp(nm->edges[p->first_edge + j].name, name) == 0)
				return nfail(x, "name", "duplicate edge '%s'",
					     name);
		ed->name = as_builder_intern(x->c->b, name);
		if (!ed->name)
			return AS_ENOMEM;
		if ((err = nop_ref(x, eo, "from", ops, p->nops, &ed->from)) ||
		    (err = nop_ref(x, eo, "to", ops, p->nops, &ed->to)))
			return err;
		ed->src_parent = ed->src_edge = AS_NONE;
		const cJSON *src = cJSON_GetObjectItemCaseSensitive(eo, "source");
		if (src) {
			if (ed->from != AS_NONE)
				return nfail(x, "source", "an edge has \"from\" "
							  "or \"source\", not "
							  "both");
			if ((err = nsource(x, src, nm, pi, &ed->src_parent,
					   &ed->src_edge)))
				return err;
		}
		if (ed->from == AS_NONE && ed->to == AS_NONE)
			return nfail(x, NULL, "an edge needs \"from\" or "
					      "\"to\"");
		if (ed->from != AS_NONE && ed->to != AS_NONE &&
		    ed->from >= ed->to)
			return nfail(x, "to", "operator %u does not come after "
					      "operator %u: list operators in "
					      "topological order",
				     ed->to, ed->from);
		/* Loaded just before its consumer; stored at the sub-task end. */
		ed->life_start = ed->from != AS_NONE ? ed->from : ed->to;
		ed->life_end = ed->to != AS_NONE ? ed->to + 1 : p->nops;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(eo, "volume");
		if (!v)
			return nfail(x, NULL, "missing field 'volume'");
		if (cJSON_IsArray(v)) {
			int n = cJSON_GetArraySize(v);
			if ((uint32_t)n != p->nsubtasks)
				return nfail(x, "volume", "%d volumes for %u "
							  "sub-tasks",
					     n, p->nsubtasks);
			uint32_t k = 0;
			const cJSON *vk;
			npush(x, "volume", 0);
			cJSON_ArrayForEach(vk, v)
			{
				npush(x, NULL, (int)k);
				if ((err = nvalue(x, vk, NULL, 0,
						  UINT64_MAX / 2,
						  &vol[(size_t)e * p->nsubtasks +
						       k])))
					return err;
				x->depth--;
				k++;
			}
			x->depth--;
		} else {
			uint64_t one;
			if ((err = nvalue(x, v, "volume", 0, UINT64_MAX / 2,
					  &one)))
				return err;
			for (uint32_t k = 0; k < p->nsubtasks; k++)
				vol[(size_t)e * p->nsubtasks + k] = one;
		}
		x->depth--;
		e++;
	}
	x->depth--;
	return AS_OK;
}

enum { SCHED_ROUND_ROBIN, SCHED_LEAST_LOADED };

/* Sub-task -> core: given per parent, else the trace's rule. */
static int nschedule(struct nx *x, const cJSON *po, struct as_numa *nm,
		     uint32_t pi, int rule, const uint64_t *vol,
		     uint64_t *load, uint32_t *count)
{
	struct as_numa_parent *p = &nm->parents[pi];
	uint16_t *core = nm->core + p->first_sub;
	const cJSON *given = cJSON_GetObjectItemCaseSensitive(po, "cores");
	int err;
	if (given) {
		if (!cJSON_IsArray(given) ||
		    (uint32_t)cJSON_GetArraySize(given) != p->nsubtasks)
			return nfail(x, "cores", "expected an array of %u core "
						 "indices, one per sub-task",
				     p->nsubtasks);
		uint32_t k = 0;
		const cJSON *ck;
		cJSON_ArrayForEach(ck, given)
		{
			uint64_t c;
			if ((err = nvalue(x, ck, "cores", 0, nm->ncores - 1,
					  &c)))
				return err;
			core[k++] = (uint16_t)c;
		}
	} else if (rule == SCHED_ROUND_ROBIN) {
		for (uint32_t k = 0; k < p->nsubtasks; k++)
			core[k] = (uint16_t)(k % nm->ncores);
	} else {
		/* Each sub-task, in index order, to the core with the fewest
		 * bytes so far over all parents (ties: the lowest core). */
		for (uint32_t k = 0; k < p->nsubtasks; k++) {
			uint64_t bytes = 0;
			for (uint32_t e = 0; e < p->nedges; e++)
				bytes += vol[(size_t)e * p->nsubtasks + k];
			uint16_t best = 0;
			for (uint16_t c = 1; c < nm->ncores; c++)
				if (load[c] < load[best])
					best = c;
			core[k] = best;
			load[best] += bytes;
		}
	}
	uint32_t most = 0;
	for (uint32_t k = 0; k < p->nsubtasks; k++) {
		nm->slot[p->first_sub + k] = count[core[k]]++;
		if (count[core[k]] > most)
			most = count[core[k]];
	}
	for (uint32_t k = 0; k < p->nsubtasks; k++)
		count[core[k]] = 0;
	p->duration = (uint64_t)most * p->nops;
	return AS_OK;
}

/* Append the parent's blocks: sub-task major, edge minor. */
static int nblocks(struct nx *x, struct as_numa *nm, uint32_t pi,
		   uint64_t align, const uint64_t *vol)
{
	struct as_numa_parent *p = &nm->parents[pi];
	p->first_block = as_builder_trace(x->c->b)->nbuffers;
	for (uint32_t k = 0; k < p->nsubtasks; k++) {
		uint16_t core = nm->core[p->first_sub + k];
		uint64_t base = p->start +
				(uint64_t)nm->slot[p->first_sub + k] * p->nops;
		for (uint32_t e = 0; e < p->nedges; e++) {
			const struct as_numa_edge *ed =
				&nm->edges[p->first_edge + e];
			char name[256];
			snprintf(name, sizeof(name), "%s/%s/%u", p->name,
				 ed->name, k);
			int64_t idx = as_builder_add_timed(
				x->c->b, name,
				vol[(size_t)e * p->nsubtasks + k], align,
				base + ed->life_start, base + ed->life_end,
				0, x->c->diag);
			if (idx < 0) { /* the line only now: it costs a scan */
				x->c->diag->line = line_of(x->c->text,
							   x->c->len, x->path,
							   x->depth);
				return (int)idx;
			}
			as_builder_buffer(x->c->b, (uint32_t)idx)->space =
				(uint16_t)(nm->first_space + core);
		}
	}
	return AS_OK;
}

/* Cores, their spaces and capacities. */
static int ncores(struct nx *x, const cJSON *no, struct as_numa *nm)
{
	uint64_t n, cap = 0;
	int err;
	if ((err = nfield(x, no, "cores", true, 0, 1, NUMA_MAX_CORES, &n)))
		return err;
	nm->ncores = (uint16_t)n;
	nm->first_space = 0;
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(no, "capacity");
	if (cJSON_IsArray(caps) && (uint64_t)cJSON_GetArraySize(caps) != n)
		return nfail(x, "capacity", "%d capacities for %llu cores",
			     cJSON_GetArraySize(caps), (unsigned long long)n);
	if (caps && !cJSON_IsArray(caps) &&
	    (err = nvalue(x, caps, "capacity", 0, UINT64_MAX / 2, &cap)))
		return err;
	struct as_trace *t = as_builder_trace(x->c->b);
	for (uint32_t c = 0; c < n; c++) {
		uint64_t cc = cap;
		if (cJSON_IsArray(caps)) {
			npush(x, "capacity", 0);
			npush(x, NULL, (int)c);
			err = nvalue(x, cJSON_GetArrayItem(caps, (int)c), NULL,
				     0, UINT64_MAX / 2, &cc);
			x->depth -= 2;
			if (err)
				return err;
		}
		char name[32];
		snprintf(name, sizeof(name), "core%u", c);
		if (c == 0) {
			t->spaces[0].name = as_builder_intern(x->c->b, name);
			if (!t->spaces[0].name)
				return AS_ENOMEM;
			t->spaces[0].capacity = cc;
			continue;
		}
		int sp = as_builder_space(x->c->b, name, cc);
		if (sp < 0)
			return sp;
		t = as_builder_trace(x->c->b);
	}
	return AS_OK;
}

/* Sizes of the arrays, then the arrays, owned by the trace. */
static int nalloc(struct nx *x, const cJSON *parents, struct as_numa **out)
{
	uint64_t nedge = 0, nsub = 0, nblock = 0;
	uint32_t np = 0;
	const cJSON *po;
	int err;
	npush(x, "parents", 0);
	cJSON_ArrayForEach(po, parents)
	{
		npush(x, NULL, (int)np);
		if (!cJSON_IsObject(po))
			return nfail(x, NULL, "expected an object");
		uint64_t s;
		if ((err = nfield(x, po, "subtasks", true, 0, 1,
				  NUMA_MAX_SUBTASKS, &s)))
			return err;
		const cJSON *edges = cJSON_GetObjectItemCaseSensitive(po, "edges");
		if (!cJSON_IsArray(edges) || cJSON_GetArraySize(edges) == 0)
			return nfail(x, "edges", "expected a non-empty array "
						 "of edges");
		uint64_t ne = (uint64_t)cJSON_GetArraySize(edges);
		if (ne > NUMA_MAX_EDGES)
			return nfail(x, "edges", "more than %u edges",
				     NUMA_MAX_EDGES);
		nedge += ne;
		nsub += s;
		nblock += s * ne;
		if (nblock > NUMA_MAX_BLOCKS)
			return nfail(x, NULL, "the trace expands to more than "
					      "%u blocks",
				     NUMA_MAX_BLOCKS);
		np++;
		x->depth--;
	}
	x->depth--;
	if (np == 0)
		return nfail(x, "parents", "expected at least one parent");
	struct as_numa *nm = calloc(1, sizeof(*nm));
	if (!nm || as_builder_own(x->c->b, nm))
		return AS_ENOMEM;
	nm->nparents = np;
	nm->nedges = (uint32_t)nedge;
	nm->nsubtasks = (uint32_t)nsub;
	nm->parents = calloc(np, sizeof(*nm->parents));
	if (!nm->parents || as_builder_own(x->c->b, nm->parents))
		return AS_ENOMEM;
	nm->edges = calloc(nedge, sizeof(*nm->edges));
	if (!nm->edges || as_builder_own(x->c->b, nm->edges))
		return AS_ENOMEM;
	nm->core = calloc(nsub, sizeof(*nm->core));
	if (!nm->core || as_builder_own(x->c->b, nm->core))
		return AS_ENOMEM;
	nm->slot = calloc(nsub, sizeof(*nm->slot));
	if (!nm->slot || as_builder_own(x->c->b, nm->slot))
		return AS_ENOMEM;
	*out = nm;
	return AS_OK;
}

static int nparent(struct nx *x, const cJSON *po, struct as_numa *nm,
		   uint32_t pi, uint64_t **vol, size_t *volcap)
{
	struct as_numa_parent *p = &nm->parents[pi];
	const char *name;
	uint64_t v;
	int err;
	if ((err = nstring(x, po, "name", &name)))
		return err;
	char auto_name[32];
	if (!name) {
		snprintf(auto_name, sizeof(auto_name), "p%u", pi);
		name = auto_name;
	}
	if (strchr(name, '/'))
		return nfail(x, "name", "parent names cannot contain '/'");
	if (!(p->name = as_builder_intern(x->c->b, name)))
		return AS_ENOMEM;
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(po, "ops");
	if (cJSON_IsArray(ops)) {
		const cJSON *o;
		cJSON_ArrayForEach(o, ops)
		{
			if (!cJSON_IsString(o))
				return nfail(x, "ops", "expected an array of "
						       "operator names");
		}
		v = (uint64_t)cJSON_GetArraySize(ops);
		if (v == 0 || v > NUMA_MAX_OPS)
			return nfail(x, "ops", "expected 1 to %u operators",
				     NUMA_MAX_OPS);
	} else if ((err = nfield(x, po, "ops", true, 0, 1, NUMA_MAX_OPS,
				 &v))) {
		return err;
	}
	p->nops = (uint32_t)v;
	if ((err = nfield(x, po, "subtasks", true, 0, 1, NUMA_MAX_SUBTASKS,
			  &v)))
		return err;
	p->nsubtasks = (uint32_t)v;
	p->nedges = (uint32_t)cJSON_GetArraySize(
		cJSON_GetObjectItemCaseSensitive(po, "edges"));
	size_t need = (size_t)p->nedges * p->nsubtasks;
	if (need > *volcap) {
		uint64_t *n = realloc(*vol, need * sizeof(*n));
		if (!n)
			return AS_ENOMEM;
		*vol = n;
		*volcap = need;
	}
	return nedges(x, po, nm, pi, *vol);
}

static int parse_numa(struct ctx *c, const cJSON *root)
{
	struct nx x = {.c = c};
	const cJSON *no = cJSON_GetObjectItemCaseSensitive(root, "numa");
	static const char *const other[] = {"events", "buffers", "pools"};
	for (int i = 0; i < 3; i++)
		if (cJSON_HasObjectItem(root, other[i]))
			return nfail(&x, other[i], "a numa trace has no "
						   "\"%s\": its blocks come "
						   "from \"numa\"",
				     other[i]);
	npush(&x, "numa", 0);
	if (!cJSON_IsObject(no))
		return nfail(&x, NULL, "expected an object");
	const cJSON *parents = cJSON_GetObjectItemCaseSensitive(no, "parents");
	if (!cJSON_IsArray(parents))
		return nfail(&x, "parents", "expected an array of parent "
					    "tasks");
	uint64_t align;
	const char *sched;
	int rule = SCHED_ROUND_ROBIN, err;
	struct as_numa *nm = NULL;
	if ((err = nfield(&x, no, "align", false, 1, 1, (uint64_t)1 << 40,
			  &align)))
		return err;
	if (align & (align - 1))
		return nfail(&x, "align", "%llu is not a power of two",
			     (unsigned long long)align);
	if ((err = nstring(&x, no, "schedule", &sched)))
		return err;
	if (!sched || strcmp(sched, "round-robin") == 0) {
		sched = "round-robin";
	} else if (strcmp(sched, "least-loaded") == 0) {
		sched = "least-loaded";
		rule = SCHED_LEAST_LOADED;
	} else {
		return nfail(&x, "schedule", "unknown schedule '%s' "
					     "(expected round-robin or "
					     "least-loaded)",
			     sched);
	}
	if ((err = nalloc(&x, parents, &nm)) || (err = ncores(&x, no, nm)))
		return err;
	bool given = false;
	uint64_t *vol = NULL, *load = calloc(nm->ncores, sizeof(*load));
	uint32_t *count = calloc(nm->ncores, sizeof(*count));
	size_t volcap = 0;
	uint64_t time = 0;
	uint32_t pi = 0, first_edge = 0, first_sub = 0;
	const cJSON *po;
	err = (!load || !count) ? AS_ENOMEM : AS_OK;
	npush(&x, "parents", 0);
	cJSON_ArrayForEach(po, parents)
	{
		if (err)
			break;
		struct as_numa_parent *p = &nm->parents[pi];
		npush(&x, NULL, (int)pi);
		p->first_edge = first_edge;
		p->first_sub = first_sub;
		given |= cJSON_HasObjectItem(po, "cores");
		if ((err = nparent(&x, po, nm, pi, &vol, &volcap)) ||
		    (err = nschedule(&x, po, nm, pi, rule, vol, load, count)))
			break;
		p->start = time;
		if (p->duration > UINT64_MAX / 4 - time) {
			err = nfail(&x, NULL, "the schedule is too long");
			break;
		}
		time += p->duration;
		if ((err = nblocks(&x, nm, pi, align, vol)))
			break;
		first_edge += p->nedges;
		first_sub += p->nsubtasks;
		pi++;
		x.depth--;
	}
	free(vol);
	free(load);
	free(count);
	if (err)
		return err;
	nm->schedule = given ? "given" : sched;
	as_builder_trace(c->b)->numa = nm;
	return AS_OK;
}

/* ======================================================================
 * Results: reading what `replay --json` wrote (allocscope diff).
 * Self-contained: its own context and helpers; shares only line_of().
 * ====================================================================== */

#include <errno.h>
#include <stdlib.h>

#include "allocscope/compare.h"

#define RESULTS_FORMAT "allocscope-results"
#define RESULTS_VERSION 1
#define RPATH_MAX 6

struct rctx {
	struct as_results *out;
	const char *text;
	size_t len;
	struct as_diag *diag;
	struct seg path[RPATH_MAX];
	int depth;
};

static int rfail(const struct rctx *c, const char *field, const char *msg)
{
	struct seg path[RPATH_MAX];
	int n = c->depth;
	memcpy(path, c->path, sizeof(path));
	if (field && n < RPATH_MAX)
		path[n++] = (struct seg){field, 0};
	char where[128];
	path_text(path, n, where, sizeof(where));
	return as_diag_set(c->diag, line_of(c->text, c->len, path, n),
			   AS_EPARSE, "%s%s%s", where, *where ? ": " : "",
			   msg);
}

static void rpush_key(struct rctx *c, const char *key)
{
	if (c->depth < RPATH_MAX)
		c->path[c->depth] = (struct seg){key, 0};
	c->depth++;
}

static void rpush_index(struct rctx *c, int index)
{
	if (c->depth < RPATH_MAX)
		c->path[c->depth] = (struct seg){NULL, index};
	c->depth++;
}

/* The decimal digits of the number at path.field in the text, exactly. */
static bool raw_u64(const struct rctx *c, const char *field, uint64_t *out)
{
	struct scan sc = {c->text, c->text + c->len};
	for (int i = 0; i < c->depth && i < RPATH_MAX; i++)
		if (!step(&sc, &c->path[i]))
			return false;
	struct seg last = {field, 0};
	if (!step(&sc, &last))
		return false;
	ws(&sc);
	size_t n = 0;
	while (sc.p + n < sc.end && sc.p[n] >= '0' && sc.p[n] <= '9')
		n++;
	if (sc.p + n < sc.end && strchr(".eE", sc.p[n]))
		return false;
	return as_parse_u64(sc.p, n, out);
}

/* A non-negative integer (a JSON number, or a decimal string). */
static int rget_u64(const struct rctx *c, const cJSON *obj, const char *field,
		    bool required, uint64_t def, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	char msg[160];
	if (!v) {
		if (!required) {
			*out = def;
			return AS_OK;
		}
		snprintf(msg, sizeof(msg), "missing field '%s'", field);
		return rfail(c, NULL, msg);
	}
	if (cJSON_IsString(v) &&
	    as_parse_u64(v->valuestring, strlen(v->valuestring), out))
		return AS_OK;
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
	if (!isfinite(d) || d < 0 || d != floor(d))
		return rfail(c, field, "expected a non-negative integer");
	if (d >= 9007199254740992.0) {
		/*
		 * replay writes 64-bit peaks as plain numbers; above 2^53 the
		 * double has lost digits, so read the digits of the text.
		 */
		if (raw_u64(c, field, out))
			return AS_OK;
		return rfail(c, field, "expected a non-negative integer "
				       "(up to 2^64 - 1)");
	}
	*out = (uint64_t)d;
	return AS_OK;
}

static int rget_ms(const struct rctx *c, const cJSON *obj, const char *field,
		   double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		*out = 0.0;
		return AS_OK;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0)
		return rfail(c, field, "expected a non-negative number");
	*out = v->valuedouble;
	return AS_OK;
}

static int rget_bool(const struct rctx *c, const cJSON *obj,
		     const char *field, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		char msg[160];
		snprintf(msg, sizeof(msg), "missing field '%s'", field);
		return rfail(c, NULL, msg);
	}
	if (!cJSON_IsBool(v))
		return rfail(c, field, "expected true or false");
	*out = cJSON_IsTrue(v);
	return AS_OK;
}

static int rget_string(const struct rctx *c, const cJSON *obj,
		       const char *field, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		char msg[160];
		snprintf(msg, sizeof(msg), "missing field '%s'", field);
		return rfail(c, NULL, msg);
	}
	if (!cJSON_IsString(v))
		return rfail(c, field, "expected a string");
	*out = v->valuestring;
	return AS_OK;
}

/* What a run says of its trace: name, lower bound, size of the trace. */
struct rtrace {
	const char *name;
	uint64_t lower_bound, events, buffers;
};

static int read_result(struct rctx *c, const cJSON *o,
		       const struct rtrace *tr)
{
	if (!cJSON_IsObject(o))
		return rfail(c, NULL, "expected an object");
	uint64_t trace_lb = tr->lower_bound;
	struct as_result_row row = {.trace = tr->name, .events = tr->events,
				    .buffers = tr->buffers};
	int err;
	if ((err = rget_string(c, o, "strategy", &row.strategy)) ||
	    (err = rget_u64(c, o, "peak", true, 0, &row.peak)) ||
	    (err = rget_u64(c, o, "lower_bound", false, trace_lb,
			    &row.lower_bound)) ||
	    (err = rget_bool(c, o, "valid", &row.valid)) ||
	    (err = rget_u64(c, o, "overlaps", false, 0, &row.overlaps)) ||
	    (err = rget_u64(c, o, "violations", false, row.overlaps,
			    &row.violations)) ||
	    (err = rget_u64(c, o, "failed", false, 0, &row.failed)) ||
	    (err = rget_ms(c, o, "plan_ms", &row.plan_ms)))
		return err;
	row.peak_vs_lb = row.lower_bound
				 ? (double)row.peak / (double)row.lower_bound
				 : 0.0;
	if (as_results_add(c->out, &row) != AS_OK)
		return as_diag_set(c->diag, 0, AS_ENOMEM, "out of memory");
	return AS_OK;
}

/* One {"trace": {...}, "results": [...]} object. */
static int read_run(struct rctx *c, const cJSON *run)
{
	if (!cJSON_IsObject(run))
		return rfail(c, NULL, "expected an object");
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(run, "trace");
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(run, "results");
	if (!tr)
		return rfail(c, NULL, "missing field 'trace'");
	if (!res)
		return rfail(c, NULL, "missing field 'results'");
	if (!cJSON_IsObject(tr))
		return rfail(c, "trace", "expected an object");
	if (!cJSON_IsArray(res))
		return rfail(c, "results", "expected an array");
	struct rtrace info;
	int err;
	rpush_key(c, "trace");
	if ((err = rget_string(c, tr, "name", &info.name)) ||
	    (err = rget_u64(c, tr, "lower_bound", false, 0,
			    &info.lower_bound)) ||
	    (err = rget_u64(c, tr, "events", false, 0, &info.events)) ||
	    (err = rget_u64(c, tr, "buffers", false, 0, &info.buffers)))
		return err;
	c->depth--;
	rpush_key(c, "results");
	int i = 0;
	const cJSON *o;
	cJSON_ArrayForEach(o, res) {
		rpush_index(c, i++);
		if ((err = read_result(c, o, &info)))
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

static int read_results_root(struct rctx *c, const cJSON *root)
{
	if (!cJSON_IsObject(root))
		return rfail(c, NULL, "expected a JSON object written by "
				      "'allocscope replay --json'");
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
	if (fmt && (!cJSON_IsString(fmt) ||
		    strcmp(fmt->valuestring, RESULTS_FORMAT) != 0))
		return rfail(c, "format", "not an allocscope results file "
					  "(expected \"" RESULTS_FORMAT "\")");
	uint64_t version;
	int err = rget_u64(c, root, "version", false, RESULTS_VERSION,
			   &version);
	if (err)
		return err;
	if (version != RESULTS_VERSION)
		return rfail(c, "version", "unsupported results version "
					   "(this build reads version 1)");
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
	if (!runs)
		return read_run(c, root);
	if (!cJSON_IsArray(runs))
		return rfail(c, "runs", "expected an array");
	rpush_key(c, "runs");
	int i = 0;
	const cJSON *run;
	cJSON_ArrayForEach(run, runs) {
		rpush_index(c, i++);
		if ((err = read_run(c, run)))
			return err;
		c->depth--;
	}
	c->depth--;
	return AS_OK;
}

int as_results_parse(struct as_results *r, const char *name,
		     const char *data, size_t len, struct as_diag *diag)
{
	struct as_diag local;
	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", name);
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (!root) {
		/* cJSON may stop before trailing blanks: skip them. */
		const char *stop = end && end >= data && end <= data + len
					   ? end
					   : data + len;
		const char *rest = stop;
		while (rest < data + len && strchr(" \t\r\n", *rest))
			rest++;
		if (rest >= data + len)
			stop = rest;
		uint64_t line = 1;
		for (const char *q = data; q < stop; q++)
			line += *q == '\n';
		if (stop >= data + len)
			return as_diag_set(diag, line, AS_EPARSE,
					   "truncated JSON (unexpected end of "
					   "input)");
		/* data need not be NUL-terminated: copy what is quoted. */
		char near[24];
		size_t k = 0;
		for (const char *q = stop; q < data + len && k < 20; q++)
			near[k++] = (*q >= ' ' && *q < 127) ? *q : ' ';
		near[k] = 0;
		return as_diag_set(diag, line, AS_EPARSE,
				   "malformed JSON near '%s'", near);
	}
	/* Rows are appended only when the whole file reads well. */
	struct as_results *tmp = as_results_create();
	int err = AS_ENOMEM;
	if (tmp) {
		struct rctx c = {.out = tmp, .text = data, .len = len,
				 .diag = diag};
		err = read_results_root(&c, root);
	}
	for (size_t i = 0; err == AS_OK && i < tmp->nrows; i++)
		err = as_results_add(r, &tmp->rows[i]);
	if (err == AS_ENOMEM)
		as_diag_set(diag, 0, err, "out of memory");
	as_results_destroy(tmp);
	cJSON_Delete(root);
	return err;
}

int as_results_load(struct as_results *r, const char *path,
		    struct as_diag *diag)
{
	struct as_diag local;
	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", path);
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		return as_diag_set(diag, 0, AS_EIO, "cannot open: %s",
				   strerror(errno));
	size_t len = 0, cap = 1 << 16;
	char *data = malloc(cap);
	while (data) {
		len += fread(data + len, 1, cap - len - 1, f);
		if (len < cap - 1)
			break;
		char *grown = realloc(data, cap * 2);
		if (!grown) {
			free(data);
			data = NULL;
			break;
		}
		data = grown;
		cap *= 2;
	}
	bool bad = ferror(f);
	if (f != stdin)
		fclose(f);
	if (!data)
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	if (bad) {
		free(data);
		return as_diag_set(diag, 0, AS_EIO, "read error");
	}
	data[len] = 0;
	int err = as_results_parse(r, path, data, len, diag);
	free(data);
	return err;
}
