/*
 * PyTorch profiler traces (docs/trace-format.md, section 7): the Chrome
 * trace JSON that torch.profiler (Kineto) writes with profile_memory=True,
 * read in pieces by trace.c's streamed reader ("traceEvents" element by
 * element), then made into a trace the way PyTorch snapshots are
 * (as_snap_emit, formats/snapshot_build.c):
 *
 *  - `[memory]` instant events (ph "i"): args Addr, Bytes (negative: a free
 *    of that address), Total Allocated, Total Reserved, Device Type, Device
 *    Id. In timestamp order (ties in file order; files are not in order),
 *    each is one time step from 1; the clock is ts since the first one.
 *  - Each device is an address space: "cpu", "cuda:1", ... (CPU first,
 *    then by type and id). A buffer lives from an allocation to the free of
 *    its address on its device, named as snapshots' (b<hex address>_<n>).
 *  - A free of an address the trace never allocated is a block from before
 *    profiling: a buffer from step 0, as a snapshot's free_completed with no
 *    alloc. An allocation at an address still live, a free of an address
 *    already freed and a free of another size than the allocation are
 *    refused: the totals could not agree after them.
 *  - Live bytes plus one constant per device (the bytes allocated before
 *    profiling and not freed during it) equal Total Allocated at every
 *    event; the constants and any event that disagrees are counted in the
 *    trace's input stats.
 *  - Complete events (ph "X": name, ts, dur) on the thread (pid, tid) of an
 *    allocation and around its time are its frames: the enclosing
 *    operators, innermost first ("aten::empty\naten::zeros\n..."), at most
 *    MAX_FRAMES. They are taken to nest, as a thread's complete events do.
 *
 * Memory events without Addr (older profilers) are refused. Time and memory
 * are O(n log n) and O(n) in the events: sorts, hash maps, and one stack
 * text made per operator that is innermost to an allocation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/heap.h"
#include "formats/json/json.h"
#include "formats/snapshot.h"

#define MAX_FRAMES 32     /* enclosing operators kept, innermost first */
#define MAX_OP_NAME 255   /* bytes of an operator's name kept */
#define MAX_ID_TEXT 120   /* bytes of a pid or tid that tell threads apart */
#define BIG 9007199254740992.0 /* 2^53: JSON numbers stay exact below */

/* A [memory] event. */
struct mev {
	double ts;
	uint64_t addr, total, line;
	int64_t bytes;
	const char *stack; /* allocations: the enclosing operators */
	uint32_t index;    /* in traceEvents */
	uint32_t thread;   /* AS_NONE: no pid or tid */
	uint32_t dev;      /* in devs[] */
	bool has_total;
};

/* A complete event: an operator, on a thread, over [ts, end]. */
struct op {
	double ts, end;
	uint32_t name, thread;
	uint32_t parent;  /* the operator it ran inside, or AS_NONE */
	const char *text; /* its stack's text, once made */
};

/* A device, and the Total Allocated check on it. */
struct dev {
	int64_t type, id;
	uint32_t space;
	uint64_t run;       /* the sum of its Bytes so far, modulo 2^64 */
	uint64_t base;      /* Total Allocated minus run, at its first event */
	uint64_t pre_bytes; /* of the blocks from before profiling */
	uint64_t reserved;  /* the most Total Reserved */
	uint64_t mismatches;
	bool based, has_reserved;
};

struct prof {
	struct mev *m;
	size_t nm, capm;
	struct op *ops;
	size_t nops, capops;
	struct dev *devs;
	size_t ndevs, capdevs;
	struct map dev_ids;    /* (type, id) -> index in devs */
	/* Operator names (namespace 0) and threads (1): keys in `names`. */
	struct as_strmap strs;
	struct as_arena names;
	const char **name_of;
	size_t nnames, capnames;
	uint32_t nthreads;
	uint64_t other, zero;  /* events read past; memory events of 0 bytes */
};

static bool grow(void *p, size_t *cap, size_t need, size_t elem)
{
	return as_snap_grow_array((void **)p, cap, need, elem);
}

/* ---- Reading the events ---- */

/* The members an event and its args may have that are read. */
enum { EV_PH, EV_NAME, EV_TS, EV_DUR, EV_PID, EV_TID, EV_ARGS, NEV };
static const char *const ev_keys[NEV] = {"ph",	"name", "ts",  "dur",
					 "pid", "tid",	"args"};
enum { ARG_ADDR, ARG_BYTES, ARG_TYPE, ARG_ID, ARG_TOTAL, ARG_RESERVED, NARG };
static const char *const arg_keys[NARG] = {
	"Addr",	     "Bytes",		"Device Type",
	"Device Id", "Total Allocated", "Total Reserved"};

/*
 * The members of obj named keys[0..n) into v[] (NULL: absent), in one pass
 * over obj: an event's keys are found once each, not looked up by name
 * each time (its keys are unique: as_json_dup_keys ran).
 */
static void members(const cJSON *obj, const char *const *keys, size_t n,
		    const cJSON **v)
{
	for (size_t k = 0; k < n; k++)
		v[k] = NULL;
	for (const cJSON *it = obj->child; it; it = it->next)
		for (size_t k = 0; k < n; k++)
			if (it->string[0] == keys[k][0] &&
			    strcmp(it->string, keys[k]) == 0) {
				v[k] = it;
				break;
			}
}

/* Member `field` (v, NULL when absent): an integer in [min, max]
 * (within 2^53), required. */
static int get_int(const struct as_jctx *c, const cJSON *v,
		   const char *field, int64_t min, int64_t max, int64_t *out)
{
	if (!v)
		return as_json_fail(c, NULL, "missing field '%s'", field);
	double d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d))
		return as_json_fail(c, field, "expected an integer");
	if (d < (double)min || d > (double)max) {
		char num[32]; /* digits as written, while they are few */
		snprintf(num, sizeof(num), fabs(d) < 1e18 ? "%.0f" : "%g", d);
		return as_json_fail(c, field, "%s is out of range [%lld, %lld]",
				    num, (long long)min, (long long)max);
	}
	*out = (int64_t)d;
	return AS_OK;
}

/* Member `field` (v): microseconds, a number from 0 to 2^53, required. */
static int get_time(const struct as_jctx *c, const cJSON *v,
		    const char *field, double *out)
{
	if (!v)
		return as_json_fail(c, NULL, "missing field '%s'", field);
	double d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || d < 0 || d > BIG)
		return as_json_fail(c, field, "expected microseconds (a number "
					      "from 0 to 2^53)");
	*out = d;
	return AS_OK;
}

/*
 * The id of the string s[0..len) in namespace ns; when new, `next`, and
 * *copy (may be NULL) its copy, else *copy is NULL.
 */
static int intern(struct prof *p, uint32_t ns, const char *s, size_t len,
		  uint32_t next, uint32_t *out, const char **copy)
{
	uint32_t v = as_strmap_get(&p->strs, ns, s, len);
	const char *k = NULL;
	if (v == AS_NONE) {
		k = as_arena_dup(&p->names, s, len);
		if (!k || as_strmap_put(&p->strs, ns, k, len, next, true))
			return AS_ENOMEM;
		v = next;
	}
	*out = v;
	if (copy)
		*copy = k;
	return AS_OK;
}

/* A pid or tid as text: numbers and strings apart, anything else "?". */
static size_t id_text(const cJSON *v, char *buf, size_t cap)
{
	int n;
	double d = v ? v->valuedouble : 0;
	if (cJSON_IsNumber(v) && d == floor(d) && fabs(d) < BIG)
		n = snprintf(buf, cap, "n%lld", (long long)d); /* the most */
	else if (cJSON_IsNumber(v))
		n = snprintf(buf, cap, "n%.17g", d);
	else if (cJSON_IsString(v))
		n = snprintf(buf, cap, "s%s", v->valuestring);
	else
		n = snprintf(buf, cap, "%s", v ? "?" : "");
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* The thread (pid, tid) of an event, numbered by first appearance. */
static int thread_of(struct prof *p, const cJSON *pid, const cJSON *tid,
		     uint32_t *out)
{
	char key[2 * MAX_ID_TEXT + 2];
	*out = AS_NONE;
	if (!pid && !tid)
		return AS_OK;
	size_t n = id_text(pid, key, MAX_ID_TEXT);
	key[n++] = '/';
	n += id_text(tid, key + n, MAX_ID_TEXT);
	int err = intern(p, 1, key, n, p->nthreads, out, NULL);
	if (!err && *out == p->nthreads)
		p->nthreads++;
	return err;
}

static int read_op(struct as_jctx *c, struct prof *p, const cJSON **v)
{
	struct op o = {.parent = AS_NONE};
	double dur = 0;
	int err;
	if (!v[EV_NAME])
		return as_json_fail(c, NULL, "missing field 'name'");
	if (!cJSON_IsString(v[EV_NAME]))
		return as_json_fail(c, "name", "expected a string");
	if ((err = get_time(c, v[EV_TS], "ts", &o.ts)) ||
	    (err = get_time(c, v[EV_DUR], "dur", &dur)))
		return err;
	const char *name = v[EV_NAME]->valuestring;
	o.end = o.ts + dur;
	size_t len = strlen(name);
	if (len > MAX_OP_NAME) { /* cut between UTF-8 sequences */
		len = MAX_OP_NAME;
		while (len && ((unsigned char)name[len] & 0xc0) == 0x80)
			len--;
	}
	const char *copy;
	if ((err = thread_of(p, v[EV_PID], v[EV_TID], &o.thread)) ||
	    (err = intern(p, 0, name, len, (uint32_t)p->nnames, &o.name,
			  &copy)))
		return err;
	if (copy) {
		if (!grow(&p->name_of, &p->capnames, p->nnames + 1,
			  sizeof(*p->name_of)))
			return AS_ENOMEM;
		p->name_of[p->nnames++] = copy;
	}
	if (p->nops >= UINT32_MAX - 1)
		return as_json_fail(c, NULL, "too many operators%s", "");
	if (!grow(&p->ops, &p->capops, p->nops + 1, sizeof(*p->ops)))
		return AS_ENOMEM;
	p->ops[p->nops++] = o;
	return AS_OK;
}

/* The device (type, id), numbered by first appearance. */
static int device(struct as_jctx *c, struct prof *p, int64_t type, int64_t id,
		  uint32_t *out)
{
	struct mslot *s = as_snap_map_get(&p->dev_ids, (uint64_t)type,
					  (uint64_t)id, UINT64_MAX);
	if (!s)
		return AS_ENOMEM;
	if (s->val == UINT64_MAX) {
		if (p->ndevs >= MAX_DEVICES)
			return as_json_fail(c, "Device Id", "more than %d "
							    "devices",
					    MAX_DEVICES);
		if (!grow(&p->devs, &p->capdevs, p->ndevs + 1,
			  sizeof(*p->devs)))
			return AS_ENOMEM;
		p->devs[p->ndevs] = (struct dev){.type = type, .id = id};
		s->val = p->ndevs++;
	}
	*out = (uint32_t)s->val;
	return AS_OK;
}

static int read_args(struct as_jctx *c, struct prof *p, const cJSON *args,
		     struct mev *e)
{
	const cJSON *v[NARG];
	int64_t type, id;
	uint64_t reserved = 0;
	int err;
	members(args, arg_keys, NARG, v);
	if (!v[ARG_ADDR])
		return as_json_fail(c, NULL, "a memory event without 'Addr' "
					     "(older profilers wrote none): "
					     "allocations cannot be paired "
					     "with their frees");
	if ((err = as_json_u64(c, v[ARG_ADDR], "Addr", 1, UINT64_MAX,
			       &e->addr)) ||
	    (err = get_int(c, v[ARG_BYTES], "Bytes", -(int64_t)BIG,
			   (int64_t)BIG, &e->bytes)) ||
	    (err = get_int(c, v[ARG_TYPE], "Device Type", 0, 255, &type)) ||
	    (err = get_int(c, v[ARG_ID], "Device Id", -1, MAX_DEVICES - 1,
			   &id)) ||
	    (v[ARG_TOTAL] && (err = as_json_u64(c, v[ARG_TOTAL],
						"Total Allocated", 0,
						UINT64_MAX, &e->total))) ||
	    (v[ARG_RESERVED] && (err = as_json_u64(c, v[ARG_RESERVED],
						   "Total Reserved", 0,
						   UINT64_MAX, &reserved))))
		return err;
	uint64_t size = e->bytes < 0 ? (uint64_t)-e->bytes : (uint64_t)e->bytes;
	if (e->addr > UINT64_MAX - size)
		return as_json_fail(c, "Addr", "Addr + Bytes overflows 64 bits");
	e->has_total = v[ARG_TOTAL] != NULL;
	if ((err = device(c, p, type, id, &e->dev)))
		return err;
	struct dev *d = &p->devs[e->dev];
	if (v[ARG_RESERVED] && (!d->has_reserved || reserved > d->reserved)) {
		d->reserved = reserved;
		d->has_reserved = true;
	}
	return AS_OK;
}

static int read_memory(struct as_jctx *c, struct prof *p, const cJSON **v)
{
	struct mev e = {.index = (uint32_t)c->path[1].index};
	const cJSON *args = v[EV_ARGS];
	int err;
	if (!args)
		return as_json_fail(c, NULL, "missing field 'args'");
	if (!cJSON_IsObject(args))
		return as_json_fail(c, "args", "expected an object");
	if ((err = get_time(c, v[EV_TS], "ts", &e.ts)))
		return err;
	as_json_push(c, "args", 0);
	err = read_args(c, p, args, &e);
	c->depth--;
	if (err || (err = thread_of(p, v[EV_PID], v[EV_TID], &e.thread)))
		return err;
	if (e.bytes == 0) { /* neither an allocation nor a free */
		p->zero++;
		return AS_OK;
	}
	if (p->nm >= AS_MAX_BUFFERS)
		return as_json_fail(c, NULL, "more than %u memory events",
				    AS_MAX_BUFFERS);
	if (!grow(&p->m, &p->capm, p->nm + 1, sizeof(*p->m)))
		return AS_ENOMEM;
	e.line = as_json_elem_line(c);
	p->m[p->nm++] = e;
	return AS_OK;
}

/* One element of "traceEvents". */
static int prof_event(struct as_jctx *c, const cJSON *ev)
{
	struct prof *p = c->state;
	const cJSON *v[NEV];
	if (!cJSON_IsObject(ev))
		return as_json_fail(c, NULL, "expected an object");
	members(ev, ev_keys, NEV, v);
	const cJSON *ph = v[EV_PH], *name = v[EV_NAME];
	if (ph && !cJSON_IsString(ph))
		return as_json_fail(c, "ph", "expected a string");
	const char *kind = ph ? ph->valuestring : "";
	if (strcmp(kind, "X") == 0)
		return read_op(c, p, v);
	if ((strcmp(kind, "i") == 0 || strcmp(kind, "I") == 0) &&
	    cJSON_IsString(name) && strcmp(name->valuestring, "[memory]") == 0)
		return read_memory(c, p, v);
	p->other++;
	return AS_OK;
}

/* The root but "traceEvents": device properties and the run's ranks are
 * kept as the trace's metadata. */
static int prof_header(struct as_jctx *c, const cJSON *root, bool *lists)
{
	int err = as_json_dup_keys(c, root);
	c->depth = 0;
	if (err)
		return err;
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root,
							     "traceEvents");
	if (!list)
		return as_json_fail(c, NULL, "missing field 'traceEvents' (not "
					     "a profiler trace)");
	if (!cJSON_IsArray(list))
		return as_json_fail(c, "traceEvents", "expected an array");
	static const char *const kept[] = {"deviceProperties",
					   "distributedInfo"};
	cJSON *meta = NULL; /* references to the root's members */
	for (size_t i = 0; !err && i < 2; i++) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(root, kept[i]);
		if (v && !meta && !(meta = cJSON_CreateObject()))
			err = AS_ENOMEM;
		if (v && !err &&
		    !cJSON_AddItemReferenceToObject(meta, kept[i], v))
			err = AS_ENOMEM;
	}
	if (meta && !err) {
		char *text = cJSON_PrintUnformatted(meta);
		struct as_trace *t = as_builder_trace(c->b);
		if (text)
			t->metadata = as_builder_intern(c->b, text);
		cJSON_free(text);
		err = t->metadata ? AS_OK : AS_ENOMEM;
	}
	cJSON_Delete(meta);
	*lists = !err;
	return err;
}

/* ---- Frames ---- */

static bool mev_by_thread(uint32_t a, uint32_t b, const void *ctx)
{
	const struct mev *m = ctx;
	if (m[a].thread != m[b].thread)
		return m[a].thread < m[b].thread;
	return m[a].ts < m[b].ts;
}

/* By thread, then start; an operator before those it encloses. */
static bool op_by_thread(uint32_t a, uint32_t b, const void *ctx)
{
	const struct op *o = ctx;
	if (o[a].thread != o[b].thread)
		return o[a].thread < o[b].thread;
	if (o[a].ts != o[b].ts)
		return o[a].ts < o[b].ts;
	return o[a].end > o[b].end;
}

/* Operator k's stack: its name and its parents', one a line, held once. */
static int stack_text(struct as_builder *b, struct prof *p,
		      struct as_heap *h, uint32_t k, char *buf)
{
	size_t len = 0;
	for (uint32_t f = k, n = 0; f != AS_NONE && n < MAX_FRAMES;
	     f = p->ops[f].parent, n++) {
		const char *s = p->name_of[p->ops[f].name];
		if (len)
			buf[len++] = '\n';
		for (; *s; s++) /* a frame is one line */
			buf[len++] = (unsigned char)*s < ' ' ? ' ' : *s;
	}
	p->ops[k].text = as_heap_intern_n(b, h, buf, len);
	return p->ops[k].text ? AS_OK : AS_ENOMEM;
}

/*
 * Each allocation's enclosing operators: allocations and operators by
 * thread and time, swept together with a stack of the operators open.
 */
static int frames(struct as_builder *b, struct prof *p)
{
	size_t na = 0;
	for (size_t i = 0; i < p->nm; i++)
		na += p->m[i].bytes > 0 && p->m[i].thread != AS_NONE;
	if (!na || !p->nops)
		return AS_OK;
	uint32_t *a = malloc(na * sizeof(*a));
	uint32_t *o = malloc(p->nops * sizeof(*o));
	uint32_t *open = malloc(p->nops * sizeof(*open));
	char *buf = malloc(MAX_FRAMES * (MAX_OP_NAME + 1));
	struct as_heap *h = as_heap_create();
	int err = a && o && open && buf && h ? AS_OK : AS_ENOMEM;
	for (size_t i = 0, k = 0; !err && i < p->nm; i++)
		if (p->m[i].bytes > 0 && p->m[i].thread != AS_NONE)
			a[k++] = (uint32_t)i;
	for (size_t i = 0; !err && i < p->nops; i++)
		o[i] = (uint32_t)i;
	if (!err && ((err = as_sort_u32(a, na, mev_by_thread, p->m)) ||
		     (err = as_sort_u32(o, p->nops, op_by_thread, p->ops))))
		err = AS_ENOMEM;
	size_t j = 0, depth = 0;
	uint32_t thread = AS_NONE;
	for (size_t i = 0; !err && i < na; i++) {
		struct mev *e = &p->m[a[i]];
		if (e->thread != thread) {
			thread = e->thread;
			depth = 0;
			while (j < p->nops && p->ops[o[j]].thread < thread)
				j++;
		}
		for (; j < p->nops && p->ops[o[j]].thread == thread &&
		       p->ops[o[j]].ts <= e->ts;
		     j++) {
			struct op *op = &p->ops[o[j]];
			while (depth && p->ops[open[depth - 1]].end < op->ts)
				depth--;
			op->parent = depth ? open[depth - 1] : AS_NONE;
			open[depth++] = o[j];
		}
		while (depth && p->ops[open[depth - 1]].end < e->ts)
			depth--;
		if (!depth)
			continue;
		uint32_t top = open[depth - 1];
		if (!p->ops[top].text && (err = stack_text(b, p, h, top, buf)))
			break;
		e->stack = p->ops[top].text;
	}
	as_heap_destroy(h);
	free(buf);
	free(open);
	free(o);
	free(a);
	return err;
}

/* ---- To the trace ---- */

static bool by_type_id(uint32_t a, uint32_t b, const void *ctx)
{
	const struct dev *d = ctx;
	if (d[a].type != d[b].type)
		return d[a].type < d[b].type;
	return d[a].id < d[b].id;
}

/* c10's DeviceType names, by number. */
static const char *const type_names[] = {
	"cpu",	  "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
	"fpga",	  "maia", "xla",    "vulkan", "metal",  "xpu",	 "mps",
	"meta",	  "hpu",  "ve",	    "lazy",   "ipu",	"mtia",	 "privateuseone",
};

static void device_name(const struct dev *d, char *buf, size_t len)
{
	size_t nt = sizeof(type_names) / sizeof(type_names[0]);
	char type[24];
	if ((uint64_t)d->type < nt)
		snprintf(type, sizeof(type), "%s", type_names[d->type]);
	else
		snprintf(type, sizeof(type), "device%lld", (long long)d->type);
	if (d->id < 0)
		snprintf(buf, len, "%s", type);
	else
		snprintf(buf, len, "%s:%lld", type, (long long)d->id);
}

/* Spaces: one per device, CPU first, then by type and id. */
static int spaces(struct as_builder *b, struct prof *p)
{
	uint32_t *ord = malloc(p->ndevs * sizeof(*ord));
	if (!ord)
		return AS_ENOMEM;
	for (size_t i = 0; i < p->ndevs; i++)
		ord[i] = (uint32_t)i;
	int err = as_sort_u32(ord, p->ndevs, by_type_id, p->devs);
	for (size_t i = 0; !err && i < p->ndevs; i++) {
		char name[48];
		struct dev *d = &p->devs[ord[i]];
		d->space = (uint32_t)i;
		device_name(d, name, sizeof(name));
		if (i == 0) {
			struct as_trace *t = as_builder_trace(b);
			t->spaces[0].name = as_builder_intern(b, name);
			err = t->spaces[0].name ? AS_OK : AS_ENOMEM;
		} else if (as_builder_space(b, name, 0) < 0) {
			err = AS_ENOMEM;
		}
	}
	free(ord);
	return err;
}

static bool mev_by_time(uint32_t a, uint32_t b, const void *ctx)
{
	const struct mev *m = ctx;
	return m[a].ts < m[b].ts;
}

/*
 * "traceEvents[i].args.FIELD: 0x... on cuda:1 WHAT (allocated with N bytes
 * on line L)" on the event's line; `was`, the live block, may be NULL.
 */
static int refuse(struct as_jctx *c, const struct prof *p,
		  const struct mev *e, const char *field, const char *what,
		  const struct sbuf *was)
{
	char dev[48], before[80] = "";
	device_name(&p->devs[e->dev], dev, sizeof(dev));
	if (was)
		snprintf(before, sizeof(before), " (allocated with %llu bytes "
						 "on line %llu)",
			 (unsigned long long)was->size,
			 (unsigned long long)was->line);
	return as_diag_set(c->diag, e->line, AS_EPARSE,
			   "traceEvents[%u].args.%s: 0x%llx on %s %s%s",
			   e->index, field, (unsigned long long)e->addr, dev,
			   what, before);
}

/*
 * The events in time order to buffers (blocks from before profiling apart,
 * first), clock readings and the Total Allocated check.
 */
static int replay(struct as_jctx *c, struct prof *p, struct ctx *sc,
		  const uint32_t *order)
{
	struct sbuf *pre = NULL;
	size_t npre = 0, cappre = 0;
	struct map addrs = {0}; /* (addr, dev) -> frees, live buffer */
	int err = AS_OK;
	double t0 = p->m[order[0]].ts;
	for (size_t k = 0; !err && k < p->nm; k++) {
		const struct mev *e = &p->m[order[k]];
		struct dev *d = &p->devs[e->dev];
		uint64_t step = k + 1, size = e->bytes < 0
							 ? (uint64_t)-e->bytes
							 : (uint64_t)e->bytes;
		struct mslot *s = as_snap_map_get(&addrs, e->addr, e->dev,
						  NO_BUF);
		if (!s || !grow(&sc->rd, &sc->caprd, k + 1, sizeof(*sc->rd)) ||
		    !grow(&sc->bufs, &sc->capbufs, sc->nbufs + 1,
			  sizeof(*sc->bufs)) ||
		    !grow(&pre, &cappre, npre + 1, sizeof(*pre))) {
			err = AS_ENOMEM;
			break;
		}
		sc->rd[sc->nrd++] = (struct reading){
			.step = step, .us = (uint64_t)(e->ts - t0), .mark = -1};
		struct sbuf nb = {.addr = e->addr, .size = size,
				  .requested = UINT64_MAX, .start = step,
				  .end = UINT64_MAX, .free_req = UINT64_MAX,
				  .line = e->line, .stack = e->stack,
				  .dev = d->space, .version = slot_frees(s)};
		uint32_t live = slot_live(s), frees = slot_frees(s);
		if (e->bytes > 0 && live != NO_BUF) {
			err = refuse(c, p, e, "Addr", "is allocated again "
						      "without a free",
				     &sc->bufs[live]);
		} else if (e->bytes > 0) {
			slot_set(s, frees, (uint32_t)sc->nbufs);
			sc->bufs[sc->nbufs++] = nb;
		} else if (live != NO_BUF && sc->bufs[live].size != size) {
			char what[48];
			snprintf(what, sizeof(what), "frees %llu bytes",
				 (unsigned long long)size);
			err = refuse(c, p, e, "Bytes", what, &sc->bufs[live]);
		} else if (live != NO_BUF) {
			sc->bufs[live].end = step;
			slot_set(s, frees + (frees < UINT32_MAX), NO_BUF);
		} else if (frees == 0) { /* allocated before profiling */
			nb.start = 0;
			nb.end = step;
			nb.stack = NULL;
			pre[npre++] = nb;
			d->pre_bytes += size;
			slot_set(s, 1, NO_BUF);
		} else {
			err = refuse(c, p, e, "Addr", "is freed again (its "
						      "block was freed before)",
				     NULL);
		}
		d->run += (uint64_t)e->bytes;
		if (err || !e->has_total)
			continue;
		if (!d->based) {
			d->base = e->total - d->run;
			d->based = true;
		}
		d->mismatches += e->total - d->run != d->base;
	}
	as_snap_map_free(&addrs);
	if (!err && npre && !grow(&sc->bufs, &sc->capbufs, sc->nbufs + npre,
				  sizeof(*sc->bufs)))
		err = AS_ENOMEM;
	if (!err && npre) { /* the blocks from before come first */
		memmove(sc->bufs + npre, sc->bufs, sc->nbufs * sizeof(*pre));
		memcpy(sc->bufs, pre, npre * sizeof(*pre));
		sc->nbufs += npre;
	}
	for (size_t i = npre; !err && i < sc->nbufs; i++)
		if (sc->bufs[i].end == UINT64_MAX) {
			sc->bufs[i].end = p->nm + 1;
			sc->bufs[i].never_freed = true;
		}
	free(pre);
	if (!err && npre)
		err = as_builder_count(c->b, "profiler_allocated_before_trace",
				       npre);
	return err;
}

/* as_builder_count with a key made here, held by the trace. */
static int count(struct as_builder *b, const char *key, uint64_t n)
{
	const char *k = as_builder_intern(b, key);
	return k ? as_builder_count(b, k, n) : AS_ENOMEM;
}

/* What the reader met, and per device the Total Allocated check. */
static int stats(struct as_builder *b, const struct prof *p)
{
	uint64_t mismatches = 0;
	int err;
	if ((err = as_builder_count(b, "profiler_memory_events",
				    p->nm + p->zero)) ||
	    (err = as_builder_count(b, "profiler_operators", p->nops)) ||
	    (p->other &&
	     (err = as_builder_count(b, "profiler_other_events", p->other))) ||
	    (p->zero &&
	     (err = as_builder_count(b, "profiler_zero_byte_events", p->zero))))
		return err;
	uint32_t *by_space = malloc(p->ndevs * sizeof(*by_space));
	if (!by_space)
		return AS_ENOMEM;
	for (size_t i = 0; i < p->ndevs; i++)
		by_space[p->devs[i].space] = (uint32_t)i;
	for (size_t i = 0; !err && i < p->ndevs; i++) {
		const struct dev *d = &p->devs[by_space[i]];
		char dev[48], key[96];
		device_name(d, dev, sizeof(dev));
		mismatches += d->mismatches;
		/* Live bytes plus this equal Total Allocated at every event. */
		uint64_t before = d->base - d->pre_bytes;
		snprintf(key, sizeof(key), "profiler_before_trace_bytes_%s", dev);
		if (d->based && !d->mismatches && before < (uint64_t)BIG)
			err = count(b, key, before);
		snprintf(key, sizeof(key), "profiler_reserved_peak_bytes_%s",
			 dev);
		if (!err && d->has_reserved && d->reserved)
			err = count(b, key, d->reserved);
	}
	free(by_space);
	if (!err && mismatches)
		err = as_builder_count(b, "profiler_total_allocated_mismatches",
				       mismatches);
	return err;
}

static int prof_end(struct as_jctx *c, const cJSON *root)
{
	struct prof *p = c->state;
	(void)root;
	if (!p->nm) {
		as_json_push(c, "traceEvents", 0);
		int err = as_json_fail(c, NULL, "no memory events (record with "
						"torch.profiler.profile("
						"profile_memory=True))");
		c->depth--;
		return err;
	}
	struct ctx sc = {.b = c->b, .diag = c->diag, .has_time = true};
	uint32_t *order = malloc(p->nm * sizeof(*order));
	int err = order ? AS_OK : AS_ENOMEM;
	for (size_t i = 0; !err && i < p->nm; i++)
		order[i] = (uint32_t)i;
	if (!err)
		err = as_sort_u32(order, p->nm, mev_by_time, p->m);
	if (!err && !(err = spaces(c->b, p)) && !(err = frames(c->b, p)) &&
	    !(err = replay(c, p, &sc, order)) && !(err = stats(c->b, p)))
		err = as_snap_emit(&sc, p->nm + 1);
	free(order);
	free(sc.bufs);
	free(sc.rd);
	return err;
}

static void prof_free(void *state)
{
	struct prof *p = state;
	free(p->m);
	free(p->ops);
	free(p->devs);
	free(p->name_of);
	as_snap_map_free(&p->dev_ids);
	as_strmap_finish(&p->strs);
	as_arena_finish(&p->names);
}

static const struct as_jlist prof_lists[] = {
	{"traceEvents", prof_event},
	{NULL, NULL},
};

const struct as_jform as_json_profiler_form = {
	.name = "profiler",
	.lists = prof_lists,
	.header_first = false,
	.header = prof_header,
	.end = prof_end,
	.state_size = sizeof(struct prof),
	.state_free = prof_free,
};

static int profiler_stream(struct as_builder *b, struct as_source *src,
			   struct as_diag *diag)
{
	return as_json_stream(b, src, &as_json_profiler_form, diag);
}

/*
 * A JSON object with a root member "traceEvents" within the first bytes:
 * strings skipped, only keys of the root count.
 */
static bool profiler_sniff(const char *head, size_t len)
{
	size_t i = 0;
	int depth = 0;
	while (i < len && strchr(" \t\r\n", head[i]))
		i++;
	if (i == len || head[i] != '{')
		return false;
	for (; i < len; i++) {
		char ch = head[i];
		if (ch == '{' || ch == '[') {
			depth++;
		} else if (ch == '}' || ch == ']') {
			if (--depth <= 0)
				return false;
		} else if (ch == '"') {
			size_t s = ++i;
			while (i < len && head[i] != '"')
				i += head[i] == '\\' ? 2 : 1;
			if (i >= len)
				return false;
			size_t j = i + 1;
			while (j < len && strchr(" \t\r\n", head[j]))
				j++;
			if (depth == 1 && i - s == 11 &&
			    memcmp(head + s, "traceEvents", 11) == 0 && j < len &&
			    head[j] == ':')
				return true;
		}
	}
	return false;
}

const struct as_format_impl as_format_profiler = {
	.name = "profiler",
	.extensions = ".pt.trace.json",
	.sniff = profiler_sniff,
	.stream = profiler_stream,
};
