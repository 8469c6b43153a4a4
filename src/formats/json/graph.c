/*
 * Graph traces, the "graph" form of the JSON trace format: a computation
 * graph instead of an event list (docs/graph-traces.md):
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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/json/json.h"

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
	uint64_t line;          /* of its entry in "tensors" */
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

static int graph_dtype(const struct as_jctx *c, const char *dtype, uint32_t *out)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (strcmp(dtypes[i].name, dtype) == 0) {
			*out = dtypes[i].size;
			return AS_OK;
		}
	return as_json_fail(c, "dtype", "unknown dtype '%s' (float64, float32, "
				"float16, bfloat16, float8, int64, int32, int16, "
				"int8, uint64, uint32, uint16, uint8, bool)",
		    dtype);
}

/* One tensor: name, shape, dtype and size (product of dims x element). */
static int graph_tensor(struct as_jctx *c, struct graph *g, const cJSON *to,
			uint64_t def_align)
{
	struct gtensor *gt = &g->t[g->n];
	const char *name, *dtype;
	int err;
	static const char *const keys[] = {"name", "shape", "dtype", "align",
					   NULL};
	if (!cJSON_IsObject(to))
		return as_json_fail(c, NULL, "expected an object%s", "");
	if ((err = as_json_keys(c, to, keys)) ||
	    (err = as_json_get_string(c, to, "name", true, &name)) ||
	    (err = as_json_get_string(c, to, "dtype", true, &dtype)) ||
	    (err = as_json_get_u64(c, to, "align", false, def_align, &gt->align)))
		return err;
	if (!*name)
		return as_json_fail(c, "name", "empty tensor name%s", "");
	if (gt->align == 0 || (gt->align & (gt->align - 1)))
		return as_json_fail(c, "align", "the alignment of tensor '%s' is not a "
					"power of two",
			    name);
	uint32_t slot = graph_slot(g, name);
	if (g->slots[slot] != AS_NONE)
		return as_json_fail(c, "name", "tensor '%s' is declared twice", name);
	if ((err = graph_dtype(c, dtype, &gt->elem)))
		return err;
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(to, "shape");
	if (!shape)
		return as_json_fail(c, NULL, "missing field '%s'", "shape");
	if (!cJSON_IsArray(shape))
		return as_json_fail(c, "shape", "expected an array of dims%s", "");
	int rank = cJSON_GetArraySize(shape);
	if (rank > GRAPH_MAX_RANK)
		return as_json_fail(c, "shape", "more than %s dims", "32");
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
		    v >= 9007199254740992.0)
			return as_json_fail(c, "shape", "dims must be non-negative "
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
		return as_json_fail(c, "shape", "the size of tensor '%s' overflows 64 "
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
static int graph_name_at(struct as_jctx *c, struct graph *g, const char *key,
			 const cJSON *it, int64_t *ti)
{
	if (!cJSON_IsString(it))
		return as_json_fail(c, key, "expected an array of tensor names%s", "");
	*ti = graph_find(g, it->valuestring);
	if (*ti < 0)
		return as_json_fail(c, key, "unknown tensor '%s'", it->valuestring);
	return AS_OK;
}

/* Mark the tensors named in graph.inputs or graph.outputs. */
static int graph_marks(struct as_jctx *c, struct graph *g, const cJSON *graph,
		       const char *key, uint8_t flag)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(graph, key);
	const cJSON *it;
	if (!list)
		return AS_OK;
	if (!cJSON_IsArray(list))
		return as_json_fail(c, key, "expected an array of tensor names%s", "");
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
static int graph_names(struct as_jctx *c, struct graph *g, const cJSON *op,
		       const char *key, uint32_t **out, uint32_t *n)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(op, key);
	const cJSON *it;
	if (!list)
		return as_json_fail(c, NULL, "missing field '%s'", key);
	if (!cJSON_IsArray(list))
		return as_json_fail(c, key, "expected an array of tensor names%s", "");
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
static int graph_check_axis(const struct as_jctx *c, const struct graph *g,
			    const struct as_op *op, bool concat)
{
	const struct gtensor *whole = &g->t[concat ? op->outputs[0]
						   : op->inputs[0]];
	const uint32_t *parts = concat ? op->inputs : op->outputs;
	uint32_t nparts = concat ? op->ninputs : op->noutputs;
	if (op->axis < -(int32_t)whole->rank || op->axis >= (int32_t)whole->rank)
		return as_json_fail(c, "axis", "axis out of range for tensor '%s'",
			    whole->name);
	int32_t signed_axis = op->axis < 0 ? op->axis + (int32_t)whole->rank
					   : op->axis;
	uint32_t axis = (uint32_t)signed_axis;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < nparts; i++) {
		const struct gtensor *p = &g->t[parts[i]];
		if (p->rank != whole->rank || p->elem != whole->elem)
			return as_json_fail(c, NULL, "'%s' does not match the rank "
					     "and element size of the whole",
				    p->name);
		for (uint32_t d = 0; d < whole->rank; d++)
			if (d != axis && p->dims[d] != whole->dims[d])
				return as_json_fail(c, NULL, "'%s' differs from the "
						     "whole off the axis",
					    p->name);
		sum += p->dims[axis]; /* dims <= 2^53, parts <= 2^31 */
	}
	if (sum != whole->dims[axis])
		return as_json_fail(c, "axis", "the parts' extents along the axis do "
				       "not add up to '%s'",
			    whole->name);
	((struct as_op *)op)->axis = (int32_t)axis;
	return AS_OK;
}

static int graph_op(struct as_jctx *c, struct graph *g, const cJSON *oo,
		    struct as_op *op, uint32_t index)
{
	const char *name, *kind;
	int err;
	static const char *const keys[] = {"name", "kind", "axis", "inputs",
					   "outputs", NULL};
	if (!cJSON_IsObject(oo))
		return as_json_fail(c, NULL, "expected an object%s", "");
	if ((err = as_json_keys(c, oo, keys)) ||
	    (err = as_json_get_string(c, oo, "name", false, &name)) ||
	    (err = as_json_get_string(c, oo, "kind", true, &kind)))
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
			return as_json_fail(c, "inputs", "'%s' is read before any op "
						 "produces it (and is not a "
						 "graph input)",
				    in->name);
		in->last_use = index;
	}
	for (uint32_t i = 0; i < op->noutputs; i++) {
		struct gtensor *out = &g->t[op->outputs[i]];
		if (out->flags & AS_BUF_GRAPH_INPUT)
			return as_json_fail(c, "outputs", "'%s' is a graph input, no "
						  "op may produce it",
				    out->name);
		if (out->producer >= 0)
			return as_json_fail(c, "outputs", "'%s' is produced twice",
				    out->name);
		out->producer = index;
	}
	bool concat = strcmp(kind, "concat") == 0;
	bool split = strcmp(kind, "split") == 0;
	if (strcmp(kind, "reshape") == 0) {
		if (op->ninputs != 1 || op->noutputs != 1)
			return as_json_fail(c, NULL, "reshape '%s' needs one input and "
					     "one output",
				    name);
		if (g->t[op->inputs[0]].size != g->t[op->outputs[0]].size)
			return as_json_fail(c, NULL, "reshape '%s' changes the byte "
					     "size",
				    name);
	} else if (concat || split) {
		const cJSON *axis = cJSON_GetObjectItemCaseSensitive(oo, "axis");
		if (!axis)
			return as_json_fail(c, NULL, "%s needs an \"axis\"", kind);
		double v = cJSON_IsNumber(axis) ? axis->valuedouble : 1e300;
		if (!isfinite(v) || v != floor(v) || v < -64 || v > 64)
			return as_json_fail(c, "axis", "expected a small integer%s",
				    "");
		op->axis = (int32_t)v;
		if (concat ? op->noutputs != 1 || op->ninputs == 0
			   : op->ninputs != 1 || op->noutputs == 0)
			return as_json_fail(c, NULL, concat ? "concat '%s' needs inputs "
						      "and one output"
						    : "split '%s' needs one "
						      "input and outputs",
				    name);
		if ((err = graph_check_axis(c, g, op, concat)))
			return err;
	}
	return AS_OK;
}

static int graph_list(struct as_jctx *c, const cJSON *graph, const char *key,
		      const cJSON **out, int *n)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(graph, key);
	*out = list;
	*n = 0;
	if (!list)
		return as_json_fail(c, NULL, "missing field '%s'", key);
	if (!cJSON_IsArray(list))
		return as_json_fail(c, key, "expected an array%s", "");
	*n = cJSON_GetArraySize(list);
	return AS_OK;
}

/* Add a tensor as a buffer with its lifetime over `nops` steps. */
static int graph_add(struct as_jctx *c, struct graph *g, uint32_t ti,
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
					   start, end, gt->line, c->diag);
	if (idx < 0)
		return (int)idx;
	gt->buf = (uint32_t)idx;
	as_builder_buffer(c->b, gt->buf)->flags |= gt->flags;
	return AS_OK;
}

int as_json_graph(struct as_jctx *c, const cJSON *graph)
{
	struct graph g = {0};
	struct as_trace *t = as_builder_trace(c->b);
	const cJSON *tensors, *ops, *it;
	int ntensors, nops, err;
	uint64_t def_align;
	as_json_push(c, "graph", 0);
	static const char *const keys[] = {"align", "tensors", "inputs",
					   "outputs", "ops", NULL};
	if (!cJSON_IsObject(graph))
		return as_json_fail(c, NULL, "expected an object%s", "");
	if ((err = as_json_keys(c, graph, keys)) ||
	    (err = as_json_get_u64(c, graph, "align", false, GRAPH_DEFAULT_ALIGN,
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
	as_json_push(c, "tensors", 0);
	int i = 0;
	cJSON_ArrayForEach(it, tensors)
	{
		as_json_push(c, NULL, i++);
		if ((err = graph_tensor(c, &g, it, def_align)))
			goto out;
		g.t[g.n - 1].line = as_json_elem_line(c); /* O(1) in order */
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
	as_json_push(c, "ops", 0);
	i = 0;
	cJSON_ArrayForEach(it, ops)
	{
		as_json_push(c, NULL, i);
		if ((err = graph_op(c, &g, it, &t->ops[i], (uint32_t)i)))
			goto out;
		i++;
		c->depth--;
	}
	c->depth--;
	for (uint32_t k = 0; k < g.n; k++)
		if (g.t[k].producer < 0 && !(g.t[k].flags & AS_BUF_GRAPH_INPUT)) {
			as_json_push(c, "tensors", 0);
			as_json_push(c, NULL, (int)k);
			err = as_json_fail(c, NULL, "tensor '%s' is neither a graph "
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
