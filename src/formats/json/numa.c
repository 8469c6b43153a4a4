/*
 * The "numa" form of the JSON trace format (docs/numa.md). A "numa" object
 * describes cores with private memories and a graph split into parent
 * tasks and data-parallel sub-tasks. This file reads it; the schedule and
 * the expansion into one buffer per sub-task edge ("block") in its core's
 * space are the model's (src/core/numa.c). The bundle structure is kept
 * in trace->numa.
 */
#include <stdlib.h>
#include <string.h>

#include "allocscope/numa.h"
#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/json/json.h"

#define NUMA_MAX_CORES 4096
#define NUMA_MAX_SUBTASKS (1u << 20)
#define NUMA_MAX_OPS (1u << 16)
#define NUMA_MAX_EDGES 4096 /* per parent; names are checked pairwise */
/*
 * Sub-tasks x edges over all parents: each block is a buffer (about 100
 * bytes with its name), so this bounds the memory a small hostile file can
 * ask for (< 1 GB); nalloc checks it before anything is allocated.
 */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
/* Fuzz builds (-Dfuzz=true): 2^23 blocks take ~10 s there, over the
 * fuzzer's 1 s per input; the limit's own check is the same code. */
#define NUMA_MAX_BLOCKS (1u << 16)
#else
#define NUMA_MAX_BLOCKS (1u << 23)
#endif
/*
 * And a multiple of the file's bytes: NUMA_FREE_BLOCKS, then
 * NUMA_BLOCKS_PER_BYTE a byte (numa_gen writes 4 bytes a block; a 500-byte
 * file of 4096 cores asking 2^23 blocks took 15 s and 1.4 GB to replay).
 */
#define NUMA_FREE_BLOCKS (1u << 20)
#define NUMA_BLOCKS_PER_BYTE 64u

/*
 * Names are found through one hash map (O(1) each, so a trace reads in
 * O(n)), namespaces apart: parents, and per parent its edges and its
 * operators.
 */
#define NS_PARENTS UINT32_MAX
#define NS_EDGES(pi) (2 * (pi))
#define NS_OPS(pi) (2 * (pi) + 1)

/* An operator by name (in parent pi's `ops`, the first of that name) or by
 * position; AS_NONE when absent. */
static int nop_ref(const struct as_jctx *x, const cJSON *edge, const char *field,
		   const struct as_strmap *names, uint32_t pi, uint32_t nops,
		   uint32_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(edge, field);
	*out = AS_NONE;
	if (!v || cJSON_IsNull(v))
		return AS_OK;
	if (cJSON_IsString(v)) {
		*out = as_strmap_get(names, NS_OPS(pi), v->valuestring,
				     strlen(v->valuestring));
		if (*out != AS_NONE)
			return AS_OK;
		return as_json_fail(x, field, "unknown operator '%s'",
			     v->valuestring);
	}
	uint64_t pos;
	int err = as_json_u64(x, v, field, 0, nops ? nops - 1 : 0, &pos);
	if (err == AS_OK && nops == 0)
		return as_json_fail(x, field, "the parent has no operators");
	*out = (uint32_t)pos;
	return err;
}

/* "source": "PARENT/EDGE" or [parent, edge], an earlier parent's output. */
static int nsource(const struct as_jctx *x, const cJSON *v,
		   const struct as_numa *nm, const struct as_strmap *names,
		   uint32_t cur, uint32_t *sp, uint32_t *se)
{
	uint64_t pi = AS_NONE, ei = AS_NONE;
	int err;
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2) {
		if (cur == 0)
			return as_json_fail(x, "source", "the first parent has no "
						  "earlier parent to read");
		if ((err = as_json_u64(x, cJSON_GetArrayItem(v, 0), "source", 0,
				  cur - 1, &pi)))
			return err;
		if ((err = as_json_u64(x, cJSON_GetArrayItem(v, 1), "source", 0,
				  nm->parents[pi].nedges - 1, &ei)))
			return err;
	} else if (cJSON_IsString(v)) {
		const char *s = v->valuestring, *slash = strrchr(s, '/');
		if (!slash)
			return as_json_fail(x, "source", "'%s' is not PARENT/EDGE", s);
		size_t plen = (size_t)(slash - s);
		/* the latest earlier parent of that name */
		uint32_t found = as_strmap_get(names, NS_PARENTS, s, plen);
		if (found != AS_NONE && found < cur)
			pi = found;
		if (pi == AS_NONE)
			return as_json_fail(x, "source", "no earlier parent named "
						  "'%.*s'",
				     (int)plen, s);
		const struct as_numa_parent *pp = &nm->parents[pi];
		uint32_t e = as_strmap_get(names, NS_EDGES((uint32_t)pi),
					   slash + 1, strlen(slash + 1));
		if (e != AS_NONE)
			ei = e;
		if (ei == AS_NONE)
			return as_json_fail(x, "source", "parent '%s' has no edge '%s'",
				     pp->name, slash + 1);
	} else {
		return as_json_fail(x, "source", "expected \"PARENT/EDGE\" or "
					  "[parent, edge]");
	}
	const struct as_numa_edge *src =
		&nm->edges[nm->parents[pi].first_edge + ei];
	if (src->to != AS_NONE || src->from == AS_NONE)
		return as_json_fail(x, "source", "edge '%s' of parent '%s' is not an "
					  "output edge (it needs \"from\" and "
					  "no \"to\")",
			     src->name, nm->parents[pi].name);
	*sp = (uint32_t)pi;
	*se = (uint32_t)ei;
	return AS_OK;
}

static bool by_edge_name(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_numa_edge *e = ctx;
	int k = strcmp(e[a].name, e[b].name);
	return k < 0 || (k == 0 && a < b);
}

/* A parent's edge names are unique (sources name them): O(e log e). */
static int edges_unique(struct as_jctx *x, const struct as_numa *nm,
			const struct as_numa_parent *p)
{
	const struct as_numa_edge *ed = nm->edges + p->first_edge;
	uint32_t *order = malloc(((size_t)p->nedges + 1) * sizeof(*order));
	if (!order)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < p->nedges; i++)
		order[i] = i;
	int err = as_sort_u32(order, p->nedges, by_edge_name, ed);
	for (uint32_t k = 1; err == AS_OK && k < p->nedges; k++)
		if (strcmp(ed[order[k - 1]].name, ed[order[k]].name) == 0) {
			as_json_push(x, NULL, (int)order[k]);
			err = as_json_fail(x, "name", "duplicate edge '%s'",
					   ed[order[k]].name);
			x->depth--;
		}
	free(order);
	return err;
}

/* One parent's edges; volumes go to vol[e * nsub + k]. */
static int nedges(struct as_jctx *x, const cJSON *po, struct as_numa *nm,
		  struct as_strmap *names, uint32_t pi, uint64_t *vol)
{
	struct as_numa_parent *p = &nm->parents[pi];
	const cJSON *edges = cJSON_GetObjectItemCaseSensitive(po, "edges");
	uint32_t e = 0;
	const cJSON *eo;
	int err;
	as_json_push(x, "edges", 0);
	cJSON_ArrayForEach(eo, edges)
	{
		struct as_numa_edge *ed = &nm->edges[p->first_edge + e];
		as_json_push(x, NULL, (int)e);
		static const char *const ekeys[] = {"name", "from", "to",
						    "source", "volume", NULL};
		if (!cJSON_IsObject(eo))
			return as_json_fail(x, NULL, "expected an object");
		if ((err = as_json_keys(x, eo, ekeys)))
			return err;
		const char *name;
		if ((err = as_json_get_string(x, eo, "name", false, &name)))
			return err;
		char auto_name[32];
		if (!name) {
			snprintf(auto_name, sizeof(auto_name), "e%u", e);
			name = auto_name;
		}
		if (strchr(name, '/'))
			return as_json_fail(x, "name", "edge names cannot contain '/'");
		ed->name = as_builder_intern(x->b, name);
		if (!ed->name)
			return AS_ENOMEM;
		if ((err = nop_ref(x, eo, "from", names, pi, p->nops,
				   &ed->from)) ||
		    (err = nop_ref(x, eo, "to", names, pi, p->nops, &ed->to)))
			return err;
		ed->src_parent = ed->src_edge = AS_NONE;
		const cJSON *src = cJSON_GetObjectItemCaseSensitive(eo, "source");
		if (src) {
			if (ed->from != AS_NONE)
				return as_json_fail(x, "source", "an edge has \"from\" "
							  "or \"source\", not "
							  "both");
			if ((err = nsource(x, src, nm, names, pi,
					   &ed->src_parent, &ed->src_edge)))
				return err;
		}
		if (ed->from == AS_NONE && ed->to == AS_NONE)
			return as_json_fail(x, NULL, "an edge needs \"from\" or "
					      "\"to\"");
		if (ed->from != AS_NONE && ed->to != AS_NONE &&
		    ed->from >= ed->to)
			return as_json_fail(x, "to", "operator %u does not come after "
					      "operator %u: list operators in "
					      "topological order",
				     ed->to, ed->from);
		/* Loaded just before its consumer; stored at the sub-task end. */
		ed->life_start = ed->from != AS_NONE ? ed->from : ed->to;
		ed->life_end = ed->to != AS_NONE ? ed->to + 1 : p->nops;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(eo, "volume");
		if (!v)
			return as_json_fail(x, NULL, "missing field 'volume'");
		if (cJSON_IsArray(v)) {
			int n = cJSON_GetArraySize(v);
			if ((uint32_t)n != p->nsubtasks)
				return as_json_fail(x, "volume", "%d volumes for %u "
							  "sub-tasks",
					     n, p->nsubtasks);
			uint32_t k = 0;
			const cJSON *vk;
			as_json_push(x, "volume", 0);
			cJSON_ArrayForEach(vk, v)
			{
				as_json_push(x, NULL, (int)k);
				if ((err = as_json_u64(x, vk, NULL, 0,
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
			if ((err = as_json_u64(x, v, "volume", 0, UINT64_MAX / 2,
					  &one)))
				return err;
			for (uint32_t k = 0; k < p->nsubtasks; k++)
				vol[(size_t)e * p->nsubtasks + k] = one;
		}
		x->depth--;
		e++;
	}
	err = edges_unique(x, nm, p);
	for (uint32_t k = 0; err == AS_OK && k < p->nedges; k++) {
		const char *en = nm->edges[p->first_edge + k].name;
		err = as_strmap_put(names, NS_EDGES(pi), en, strlen(en), k,
				    false);
	}
	x->depth--;
	return err;
}

/* Sub-task -> core: given per parent ("cores"), else the trace's rule. */
static int nschedule(struct as_jctx *x, const cJSON *po, struct as_numa *nm,
		     uint32_t pi, enum as_numa_rule rule, const uint64_t *vol,
		     struct as_numa_load *l)
{
	struct as_numa_parent *p = &nm->parents[pi];
	uint16_t *core = nm->core + p->first_sub;
	const cJSON *given = cJSON_GetObjectItemCaseSensitive(po, "cores");
	int err;
	if (given) {
		if (!cJSON_IsArray(given) ||
		    (uint32_t)cJSON_GetArraySize(given) != p->nsubtasks)
			return as_json_fail(x, "cores", "expected an array of "
							"%u core indices, one "
							"per sub-task",
					    p->nsubtasks);
		uint32_t k = 0;
		const cJSON *ck;
		cJSON_ArrayForEach(ck, given)
		{
			uint64_t c;
			if ((err = as_json_u64(x, ck, "cores", 0,
					       nm->ncores - 1, &c)))
				return err;
			core[k++] = (uint16_t)c;
		}
		rule = AS_NUMA_GIVEN;
	}
	as_numa_schedule(nm, pi, rule, vol, l);
	return AS_OK;
}

/* Cores, their spaces and capacities. */
static int ncores(struct as_jctx *x, const cJSON *no, struct as_numa *nm)
{
	uint64_t n, cap = 0;
	int err;
	if ((err = as_json_get_range(x, no, "cores", true, 0, 1, NUMA_MAX_CORES, &n)))
		return err;
	nm->ncores = (uint16_t)n;
	nm->first_space = 0;
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(no, "capacity");
	if (cJSON_IsArray(caps) && (uint64_t)cJSON_GetArraySize(caps) != n)
		return as_json_fail(x, "capacity", "%d capacities for %llu cores",
			     cJSON_GetArraySize(caps), (unsigned long long)n);
	if (caps && !cJSON_IsArray(caps) &&
	    (err = as_json_u64(x, caps, "capacity", 0, UINT64_MAX / 2, &cap)))
		return err;
	struct as_trace *t = as_builder_trace(x->b);
	const cJSON *ci = cJSON_IsArray(caps) ? caps->child : NULL;
	for (uint32_t c = 0; c < n; c++) {
		uint64_t cc = cap;
		if (cJSON_IsArray(caps)) { /* ci walks the list: O(1) each */
			as_json_push(x, "capacity", 0);
			as_json_push(x, NULL, (int)c);
			err = as_json_u64(x, ci, NULL, 0, UINT64_MAX / 2, &cc);
			ci = ci ? ci->next : NULL;
			x->depth -= 2;
			if (err)
				return err;
		}
		char name[32];
		snprintf(name, sizeof(name), "core%u", c);
		if (c == 0) {
			t->spaces[0].name = as_builder_intern(x->b, name);
			if (!t->spaces[0].name)
				return AS_ENOMEM;
			t->spaces[0].capacity = cc;
			continue;
		}
		int sp = as_builder_space(x->b, name, cc);
		if (sp < 0)
			return sp;
		t = as_builder_trace(x->b);
	}
	return AS_OK;
}

/* Sizes of the arrays, then the arrays, owned by the trace. */
static int nalloc(struct as_jctx *x, const cJSON *parents, struct as_numa **out)
{
	uint64_t nedge = 0, nsub = 0, nblock = 0;
	uint32_t np = 0;
	const cJSON *po;
	int err;
	as_json_push(x, "parents", 0);
	cJSON_ArrayForEach(po, parents)
	{
		static const char *const pkeys[] = {"name", "ops", "subtasks",
						    "edges", "cores", NULL};
		as_json_push(x, NULL, (int)np);
		if (!cJSON_IsObject(po))
			return as_json_fail(x, NULL, "expected an object");
		if ((err = as_json_keys(x, po, pkeys)))
			return err;
		uint64_t s;
		if ((err = as_json_get_range(x, po, "subtasks", true, 0, 1,
				  NUMA_MAX_SUBTASKS, &s)))
			return err;
		const cJSON *edges = cJSON_GetObjectItemCaseSensitive(po, "edges");
		if (!cJSON_IsArray(edges) || cJSON_GetArraySize(edges) == 0)
			return as_json_fail(x, "edges", "expected a non-empty array "
						 "of edges");
		uint64_t ne = (uint64_t)cJSON_GetArraySize(edges);
		if (ne > NUMA_MAX_EDGES)
			return as_json_fail(x, "edges", "more than %u edges",
				     NUMA_MAX_EDGES);
		nedge += ne;
		nsub += s;
		nblock += s * ne;
		if (nblock > NUMA_MAX_BLOCKS)
			return as_json_fail(x, NULL, "the trace expands to more than "
					      "%u blocks",
				     NUMA_MAX_BLOCKS);
		if (nblock > NUMA_FREE_BLOCKS &&
		    (nblock - NUMA_FREE_BLOCKS) / NUMA_BLOCKS_PER_BYTE >=
			    x->input_bytes)
			return as_json_fail(x, NULL,
					    "the trace expands to more than "
					    "%u blocks plus %u a byte of its "
					    "%llu bytes",
					    NUMA_FREE_BLOCKS,
					    NUMA_BLOCKS_PER_BYTE,
					    (unsigned long long)x->input_bytes);
		np++;
		x->depth--;
	}
	x->depth--;
	if (np == 0)
		return as_json_fail(x, "parents", "expected at least one parent");
	struct as_numa *nm = calloc(1, sizeof(*nm));
	if (!nm || as_builder_own(x->b, nm))
		return AS_ENOMEM;
	nm->nparents = np;
	nm->nedges = (uint32_t)nedge;
	nm->nsubtasks = (uint32_t)nsub;
	nm->parents = calloc(np, sizeof(*nm->parents));
	if (!nm->parents || as_builder_own(x->b, nm->parents))
		return AS_ENOMEM;
	nm->edges = calloc(nedge, sizeof(*nm->edges));
	if (!nm->edges || as_builder_own(x->b, nm->edges))
		return AS_ENOMEM;
	nm->core = calloc(nsub, sizeof(*nm->core));
	if (!nm->core || as_builder_own(x->b, nm->core))
		return AS_ENOMEM;
	nm->slot = calloc(nsub, sizeof(*nm->slot));
	if (!nm->slot || as_builder_own(x->b, nm->slot))
		return AS_ENOMEM;
	*out = nm;
	return AS_OK;
}

static int nparent(struct as_jctx *x, const cJSON *po, struct as_numa *nm,
		   struct as_strmap *names, uint32_t pi, uint64_t **vol,
		   size_t *volcap)
{
	struct as_numa_parent *p = &nm->parents[pi];
	const char *name;
	uint64_t v;
	int err;
	if ((err = as_json_get_string(x, po, "name", false, &name)))
		return err;
	char auto_name[32];
	if (!name) {
		snprintf(auto_name, sizeof(auto_name), "p%u", pi);
		name = auto_name;
	}
	if (strchr(name, '/'))
		return as_json_fail(x, "name", "parent names cannot contain '/'");
	if (!(p->name = as_builder_intern(x->b, name)))
		return AS_ENOMEM;
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(po, "ops");
	if (cJSON_IsArray(ops)) {
		const cJSON *o;
		uint32_t i = 0;
		cJSON_ArrayForEach(o, ops)
		{
			if (!cJSON_IsString(o))
				return as_json_fail(x, "ops", "expected an array of "
						       "operator names");
			if ((err = as_strmap_put(names, NS_OPS(pi),
						 o->valuestring,
						 strlen(o->valuestring), i++,
						 true)))
				return err;
		}
		v = (uint64_t)cJSON_GetArraySize(ops);
		if (v == 0 || v > NUMA_MAX_OPS)
			return as_json_fail(x, "ops", "expected 1 to %u operators",
				     NUMA_MAX_OPS);
	} else if ((err = as_json_get_range(x, po, "ops", true, 0, 1, NUMA_MAX_OPS,
				 &v))) {
		return err;
	}
	p->nops = (uint32_t)v;
	if ((err = as_json_get_range(x, po, "subtasks", true, 0, 1, NUMA_MAX_SUBTASKS,
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
	if ((err = nedges(x, po, nm, names, pi, *vol)))
		return err;
	return as_strmap_put(names, NS_PARENTS, p->name, strlen(p->name), pi,
			     false);
}

static bool by_parent_name(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_numa *nm = ctx;
	return strcmp(nm->parents[a].name, nm->parents[b].name) < 0;
}

/* Sources name parents: two of one name are refused. O(n log n). */
static int parents_unique(struct as_jctx *x, const struct as_numa *nm)
{
	uint32_t *order = malloc(((size_t)nm->nparents + 1) * sizeof(*order));
	if (!order)
		return AS_ENOMEM;
	for (uint32_t i = 0; i < nm->nparents; i++)
		order[i] = i;
	int err = as_sort_u32(order, nm->nparents, by_parent_name, nm);
	for (uint32_t k = 1; err == AS_OK && k < nm->nparents; k++) {
		uint32_t a = order[k - 1], b = order[k];
		if (strcmp(nm->parents[a].name, nm->parents[b].name) != 0)
			continue;
		x->depth = 1;
		as_json_push(x, "parents", 0);
		as_json_push(x, NULL, (int)(a > b ? a : b));
		err = as_json_fail(x, "name", "duplicate parent '%s'",
				   nm->parents[b].name);
	}
	free(order);
	return err;
}

int as_json_numa(struct as_jctx *x, const cJSON *root)
{
	int err;
	const cJSON *no = cJSON_GetObjectItemCaseSensitive(root, "numa");
	static const char *const other[] = {"events", "buffers", "pools"};
	for (int i = 0; i < 3; i++)
		if (cJSON_HasObjectItem(root, other[i]))
			return as_json_fail(x, other[i], "a numa trace has no "
						   "\"%s\": its blocks come "
						   "from \"numa\"",
				     other[i]);
	as_json_push(x, "numa", 0);
	if (!cJSON_IsObject(no))
		return as_json_fail(x, NULL, "expected an object");
	static const char *const keys[] = {"cores", "capacity", "parents",
					   "align", "schedule", NULL};
	if ((err = as_json_keys(x, no, keys)))
		return err;
	const cJSON *parents = cJSON_GetObjectItemCaseSensitive(no, "parents");
	if (!cJSON_IsArray(parents))
		return as_json_fail(x, "parents", "expected an array of parent "
					    "tasks");
	uint64_t align;
	const char *sched;
	enum as_numa_rule rule = AS_NUMA_ROUND_ROBIN;
	struct as_numa *nm = NULL;
	if ((err = as_json_get_range(x, no, "align", false, 1, 1, (uint64_t)1 << 40,
			  &align)))
		return err;
	if (align & (align - 1))
		return as_json_fail(x, "align", "%llu is not a power of two",
			     (unsigned long long)align);
	if ((err = as_json_get_string(x, no, "schedule", false, &sched)))
		return err;
	if (!sched || strcmp(sched, "round-robin") == 0) {
		sched = "round-robin";
	} else if (strcmp(sched, "least-loaded") == 0) {
		sched = "least-loaded";
		rule = AS_NUMA_LEAST_LOADED;
	} else {
		return as_json_fail(x, "schedule", "unknown schedule '%s' "
					     "(expected round-robin or "
					     "least-loaded)",
			     sched);
	}
	if ((err = nalloc(x, parents, &nm)) || (err = ncores(x, no, nm)))
		return err;
	bool given = false;
	uint64_t *vol = NULL;
	struct as_numa_load load;
	size_t volcap = 0;
	struct as_strmap names = {0};
	uint64_t time = 0;
	uint32_t pi = 0, first_edge = 0, first_sub = 0;
	const cJSON *po;
	if ((err = as_numa_load_init(&load, nm->ncores)))
		return err;
	as_json_push(x, "parents", 0);
	cJSON_ArrayForEach(po, parents)
	{
		if (err)
			break;
		struct as_numa_parent *p = &nm->parents[pi];
		as_json_push(x, NULL, (int)pi);
		p->first_edge = first_edge;
		p->first_sub = first_sub;
		given |= cJSON_HasObjectItem(po, "cores");
		if ((err = nparent(x, po, nm, &names, pi, &vol, &volcap)) ||
		    (err = nschedule(x, po, nm, pi, rule, vol, &load)))
			break;
		p->start = time;
		if (p->duration > UINT64_MAX / 4 - time) {
			err = as_json_fail(x, NULL, "the schedule is too long");
			break;
		}
		time += p->duration;
		if ((err = as_numa_expand(x->b, nm, pi, align, vol, x->diag))) {
			/* the line only now: it costs a scan */
			x->diag->line = as_json_line(x, NULL);
			break;
		}
		first_edge += p->nedges;
		first_sub += p->nsubtasks;
		pi++;
		x->depth--;
	}
	free(vol);
	as_strmap_finish(&names);
	as_numa_load_finish(&load);
	if (err || (err = parents_unique(x, nm)))
		return err;
	nm->schedule = given ? "given" : sched;
	as_builder_trace(x->b)->numa = nm;
	return AS_OK;
}

