/*
 * PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot(), a
 * pickle of plain data) as a trace. The pickle is read by pickle.c, which
 * refuses anything that would import or call; this file maps its schema:
 *
 *  - `device_traces[d]`: entries {action, addr, size, stream, time_us,
 *    frames} of device d, which becomes space `cuda:d`. The devices' entries
 *    are merged by time (each device's order kept). Every alloc,
 *    free_requested and free_completed takes one time step, from 1; step 0
 *    is "before the trace". The clock is time_us since the first entry.
 *  - A buffer lives from an `alloc` to the next `free_completed` (or the
 *    older `free`) at the same address of the same device; its
 *    `free_requested` step goes to the buffer's info; never freed: to the
 *    end. It is named as memory_viz names it, `b<hex address>_<n>`, n the
 *    number of free_completed at that address before it.
 *  - A `free_completed` with no alloc before it (the block was allocated
 *    before recording started) gives a buffer from step 0; an active block
 *    of the final `segments` that the trace leaves unallocated at its end (a
 *    "ghost", e.g. model weights) lives the whole time. Both come first.
 *  - `segment_alloc/free/map/unmap` and the final `segments` give the
 *    reserved memory over time: the segments existing when recording began
 *    are the final ones minus what the trace allocated, plus what it freed
 *    (memory_viz's Allocator State History undoes the trace the same way).
 *  - `oom` entries become AS_MARK_OOM marks; `allocator_settings` becomes
 *    the trace's metadata: {"allocator_settings": {...}} as JSON.
 *
 * Recorded offsets are device addresses with the empty ranges between the
 * segments and blocks of a device shrunk (the trace's address map turns them
 * back); segments' addresses are offsets the same way. Names keep the real
 * addresses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"
#include "formats/pickle.h"

#define MAX_DEVICES 1024
/* Frames text of one stack, and of all stacks (beyond: dropped, counted). */
#define MAX_STACK_TEXT (64u << 10)
#define MAX_FRAMES_TEXT ((size_t)256 << 20)
/* Empty device address ranges shrink to this (and their remainder). */
#define SEG_GAP ((uint64_t)4096)
/* The same with expandable segments (at least any device's memory). */
#define EXP_GAP ((uint64_t)1 << 40)

enum act {
	A_ALLOC,
	A_FREE_REQ,
	A_FREE_DONE,
	A_SEG_ALLOC,
	A_SEG_FREE,
	A_SEG_MAP,
	A_SEG_UNMAP,
	A_OOM,
	A_OTHER,
};

static const struct {
	const char *name;
	uint8_t act;
} actions[] = {
	{"alloc", A_ALLOC},
	{"free_requested", A_FREE_REQ},
	{"free_completed", A_FREE_DONE},
	{"free", A_FREE_DONE}, /* older writers: one free event */
	{"segment_alloc", A_SEG_ALLOC},
	{"segment_free", A_SEG_FREE},
	{"segment_map", A_SEG_MAP},
	{"segment_unmap", A_SEG_UNMAP},
	{"oom", A_OOM},
};

struct entry {
	uint64_t addr, size, key_us, device_free, requested;
	const struct as_pk *frames;
	uint32_t dev, version;
	uint16_t stream;
	uint8_t act;
	bool pre;               /* free of a block allocated before the trace */
};

/* A buffer before it goes to the builder. */
struct sbuf {
	uint64_t addr, size, requested, start, end, free_req;
	const struct as_pk *frames;
	uint32_t dev, version;
	uint16_t stream;
	bool never_freed;
};

/* A reserved range, open (end unknown) while in `open`. */
struct seg {
	uint64_t addr, size, start, end;
	uint32_t dev;
	uint16_t stream;
	uint8_t flags;
};

/*
 * A hash map from a pair of 64-bit keys to a 64-bit value: open addressing,
 * linear probing, load at most 1/2.
 */
struct map {
	struct mslot {
		uint64_t a, b, val;
		bool used;
	} *s;
	size_t mask, n;
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t s = a ^ (b * 0x9e3779b97f4a7c15ULL);
	return as_splitmix64(&s);
}

static void map_free(struct map *m)
{
	free(m->s);
	m->s = NULL;
}

static struct mslot *map_find(const struct map *m, uint64_t a, uint64_t b)
{
	if (!m->s)
		return NULL;
	for (size_t h = mix(a, b) & m->mask;; h = (h + 1) & m->mask) {
		if (!m->s[h].used)
			return NULL;
		if (m->s[h].a == a && m->s[h].b == b)
			return &m->s[h];
	}
}

/* The slot of (a, b), added with value `def` when new; NULL: no memory. */
static struct mslot *map_get(struct map *m, uint64_t a, uint64_t b,
			     uint64_t def)
{
	if (!m->s || (m->n + 1) * 2 > m->mask + 1) {
		size_t cap = m->s ? (m->mask + 1) * 2 : 256;
		struct mslot *ns = calloc(cap, sizeof(*ns));
		if (!ns)
			return NULL;
		for (size_t i = 0; m->s && i <= m->mask; i++) {
			if (!m->s[i].used)
				continue;
			size_t h = mix(m->s[i].a, m->s[i].b) & (cap - 1);
			while (ns[h].used)
				h = (h + 1) & (cap - 1);
			ns[h] = m->s[i];
		}
		free(m->s);
		m->s = ns;
		m->mask = cap - 1;
	}
	size_t h = mix(a, b) & m->mask;
	while (m->s[h].used) {
		if (m->s[h].a == a && m->s[h].b == b)
			return &m->s[h];
		h = (h + 1) & m->mask;
	}
	m->s[h] = (struct mslot){a, b, def, true};
	m->n++;
	return &m->s[h];
}

/* Growable arrays. */
static bool grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem)
		return false;
	void *q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

struct reading {
	uint64_t step, us;
	int64_t mark;           /* index in marks[], or -1: a clock reading */
};

/* One frame dict, seen once: its text "file:line:name" and its kind. */
struct finfo {
	const char *text;       /* in ctx.ftext; NULL when omitted */
	size_t len;
	bool python;
};

struct ctx {
	struct as_builder *b;
	struct as_diag *diag;
	struct entry *e;
	size_t ne, cape;
	struct sbuf *bufs;
	size_t nbufs, capbufs;
	struct tnode {
		struct seg s;
		uint64_t prio;
		uint32_t l, r;
	} *tn;                  /* the open ranges' treap (seg_open) */
	size_t ntn, captn;
	uint32_t root;
	uint64_t seed;
	uint32_t *walk;         /* nodes of one range, in order */
	size_t nwalk, capwalk;
	struct seg *done;
	size_t ndone, capdone;
	struct as_mark *marks;
	size_t nmarks, capmarks;
	struct reading *rd;
	size_t nrd, caprd;
	struct map addrs;       /* (addr, dev) -> frees so far, live buffer */
	struct map streams;     /* stream -> small id */
	uint16_t nstreams;
	bool has_time;
	uint64_t t0;
	/*
	 * Frames: frame dict -> its text (fi[]); a stack's frame dicts ->
	 * its text (interned[], with reps[] the first list seen); the hash
	 * of a text -> the same text.
	 */
	struct map frame_dicts, frame_seqs, frame_texts;
	struct finfo *fi;
	size_t nfi, capfi;
	struct as_arena ftext;
	char *scratch, *fscratch; /* a stack's text, a frame's text */
	size_t capscratch, capfscratch, frames_text;
	const char **interned;
	const struct as_pk **reps;
	size_t ninterned, capinterned, capreps;
};

/* (addr, dev) slot: `val` packs frees (high 32 bits), live buffer (low). */
#define NO_BUF 0xffffffffu

static uint32_t slot_frees(const struct mslot *s)
{
	return (uint32_t)(s->val >> 32);
}

static uint32_t slot_live(const struct mslot *s)
{
	return (uint32_t)s->val;
}

static void slot_set(struct mslot *s, uint32_t frees, uint32_t live)
{
	s->val = (uint64_t)frees << 32 | live;
}

static int nomem(struct ctx *c)
{
	return as_diag_set(c->diag, 0, AS_ENOMEM, "out of memory");
}

/*
 * Integer `key` of dict d: 1 and *out when there, 0 when absent and not
 * required, else an error naming the byte where the value (or dict) is.
 */
static int get_u64(struct ctx *c, const struct as_pk *d, const char *key,
		   bool required, uint64_t *out)
{
	const struct as_pk *v = as_pk_get(d, key);
	if (!v || v->type == AS_PK_NONE) {
		if (!required)
			return 0;
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot entry at byte %llu has no '%s'",
				   (unsigned long long)d->pos, key);
	}
	if (v->type == AS_PK_FLOAT && v->v.f >= 0 && v->v.f < 18446744073709551616.0) {
		*out = (uint64_t)v->v.f;
		return 1;
	}
	if (v->type == AS_PK_BIGINT)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot '%s' at byte %llu does not fit "
				   "in 64 bits",
				   key, (unsigned long long)v->pos);
	if (!as_pk_u64(v, out))
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot '%s' at byte %llu is %s, not a "
				   "size or address",
				   key, (unsigned long long)v->pos,
				   v->type == AS_PK_INT ? "negative"
							: "not an integer");
	return 1;
}

/* A small id per stream (0 stays 0), in order of first appearance. */
static int stream_id(struct ctx *c, const struct as_pk *d, uint16_t *out)
{
	const struct as_pk *v = as_pk_get(d, "stream");
	*out = 0;
	if (!v || v->type != AS_PK_INT || (v->v.u == 0 && !v->neg))
		return AS_OK;
	struct mslot *s = map_get(&c->streams, v->v.u, v->neg, UINT64_MAX);
	if (!s)
		return nomem(c);
	if (s->val == UINT64_MAX)
		s->val = c->nstreams < UINT16_MAX ? ++c->nstreams : UINT16_MAX;
	*out = (uint16_t)s->val;
	return AS_OK;
}

static int read_entry(struct ctx *c, const struct as_pk *d, uint32_t dev,
		      uint64_t *last_us)
{
	if (!d || d->type != AS_PK_DICT)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot trace entry at byte %llu is not "
				   "a dict",
				   (unsigned long long)(d ? d->pos : 0));
	const char *a = as_pk_str(as_pk_get(d, "action"));
	if (!a)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot trace entry at byte %llu has no "
				   "'action'",
				   (unsigned long long)d->pos);
	struct entry e = {.dev = dev, .act = A_OTHER, .requested = UINT64_MAX};
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (strcmp(a, actions[i].name) == 0)
			e.act = actions[i].act;
	int r;
	if (e.act == A_OTHER)
		return as_builder_count(c->b, "snapshot_other_entries", 1);
	if (e.act == A_OOM) {
		if ((r = get_u64(c, d, "size", false, &e.size)) < 0 ||
		    (r = get_u64(c, d, "device_free", false, &e.device_free)) < 0)
			return r;
	} else {
		if ((r = get_u64(c, d, "addr", true, &e.addr)) < 0 ||
		    (r = get_u64(c, d, "size",
				 e.act == A_ALLOC || e.act == A_SEG_ALLOC ||
					 e.act == A_SEG_MAP,
				 &e.size)) < 0 ||
		    (r = get_u64(c, d, "requested_size", false,
				 &e.requested)) < 0)
			return r;
		if (e.addr > UINT64_MAX - e.size)
			return as_diag_set(c->diag, 0, AS_EPARSE,
					   "snapshot entry at byte %llu: addr "
					   "+ size overflows 64 bits",
					   (unsigned long long)d->pos);
	}
	uint64_t us;
	if ((r = get_u64(c, d, "time_us", false, &us)) < 0)
		return r;
	if (r == 1) {
		c->has_time = true;
		if (us > *last_us)
			*last_us = us;
	}
	e.key_us = *last_us; /* nondecreasing within the device */
	if ((r = stream_id(c, d, &e.stream)))
		return r;
	e.frames = as_pk_get(d, "frames");
	if (!grow_array((void **)&c->e, &c->cape, c->ne + 1, sizeof(*c->e)))
		return nomem(c);
	if (c->ne >= AS_MAX_BUFFERS)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot has too many entries (at most "
				   "%u)",
				   AS_MAX_BUFFERS);
	c->e[c->ne++] = e;
	return AS_OK;
}

/* ---- Frames ---- */

static bool omitted(const char *name, const char *file)
{
	static const char *const funcs[] = {
		"unwind::unwind", "CapturedTraceback::gather",
		"gather_with_cpp", "_start", "__libc_start_main", "PyEval_",
		"PyObject_", "PyFunction_",
	};
	static const char *const files[] = {
		"core/boxing",	 "/Register",	    "/Redispatch",
		"pythonrun.c",	 "Modules/main.c", "Objects/call.c",
		"Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
		"cpython/abstract.h",
	};
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (strstr(name, funcs[i]))
			return true;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (strstr(file, files[i]))
			return true;
	return false;
}

static bool is_python(const char *file)
{
	size_t n = strlen(file);
	return n >= 3 && strcmp(file + n - 3, ".py") == 0;
}

static int frame_info(struct ctx *c, const struct as_pk *f, size_t *out)
{
	struct mslot *s = map_get(&c->frame_dicts, (uintptr_t)f, 1, UINT64_MAX);
	if (!s)
		return nomem(c);
	if (s->val != UINT64_MAX) {
		*out = s->val;
		return AS_OK;
	}
	if (!grow_array((void **)&c->fi, &c->capfi, c->nfi + 1,
			sizeof(*c->fi)))
		return nomem(c);
	const char *name = as_pk_str(as_pk_get(f, "name"));
	const char *file = as_pk_str(as_pk_get(f, "filename"));
	int64_t line = 0;
	struct finfo fi = {0};
	if (!name)
		name = "??";
	if (!file)
		file = "??";
	as_pk_i64(as_pk_get(f, "line"), &line);
	size_t need = strlen(file) + strlen(name) + 32;
	if (!omitted(name, file) && need <= MAX_STACK_TEXT) {
		if (!grow_array((void **)&c->fscratch, &c->capfscratch, need,
				1))
			return nomem(c);
		fi.len = (size_t)snprintf(c->fscratch, need, "%s:%lld:%s", file,
					  (long long)line, name);
		fi.text = as_arena_dup(&c->ftext, c->fscratch, fi.len);
		if (!fi.text)
			return nomem(c);
		fi.python = is_python(file);
	}
	c->fi[c->nfi] = fi;
	*out = s->val = c->nfi++;
	return AS_OK;
}

/* Join the frames of one kind (Python or not) into the scratch. */
static int join_frames(struct ctx *c, const struct as_pk *list, bool python,
		       size_t *len)
{
	for (uint32_t i = 0; i < as_pk_len(list); i++) {
		size_t k = 0;
		int err = frame_info(c, as_pk_item(list, i), &k);
		if (err)
			return err;
		const struct finfo *fi = &c->fi[k];
		if (!fi->text || fi->python != python)
			continue;
		if (*len + fi->len + 2 > MAX_STACK_TEXT)
			return AS_OK; /* the rest is dropped */
		if (!grow_array((void **)&c->scratch, &c->capscratch,
				*len + fi->len + 2, 1))
			return nomem(c);
		if (*len)
			c->scratch[(*len)++] = '\n';
		memcpy(c->scratch + *len, fi->text, fi->len);
		*len += fi->len;
		c->scratch[*len] = 0;
	}
	return AS_OK;
}

static bool same_items(const struct as_pk *a, const struct as_pk *b)
{
	if (as_pk_len(a) != as_pk_len(b))
		return false;
	for (uint32_t i = 0; i < as_pk_len(a); i++)
		if (as_pk_item(a, i) != as_pk_item(b, i))
			return false;
	return true;
}

/*
 * The interned text of a frames list, or NULL (none, or over budget).
 * Stacks are recognised by their frame dicts (the pickle's memo shares
 * them), so each distinct stack is joined once; equal texts share one copy.
 */
static int frames_text(struct ctx *c, const struct as_pk *list,
		       const char **out)
{
	*out = NULL;
	uint32_t n = as_pk_len(list);
	if (!n)
		return AS_OK;
	uint64_t h = 0;
	for (uint32_t i = 0; i < n; i++)
		h = mix(h, (uintptr_t)as_pk_item(list, i));
	struct mslot *s = map_get(&c->frame_seqs, h, n, UINT64_MAX);
	if (!s)
		return nomem(c);
	if (s->val != UINT64_MAX && same_items(c->reps[s->val], list)) {
		*out = c->interned[s->val];
		return AS_OK;
	}
	size_t len = 0;
	int err;
	if ((err = join_frames(c, list, true, &len)) ||
	    (err = join_frames(c, list, false, &len)))
		return err;
	const char *str = NULL;
	if (len) {
		struct mslot *t = map_get(&c->frame_texts,
					  as_hash_str(c->scratch), len,
					  UINT64_MAX);
		if (!t)
			return nomem(c);
		if (t->val != UINT64_MAX &&
		    strcmp(c->interned[t->val], c->scratch) == 0) {
			str = c->interned[t->val];
		} else if (c->frames_text + len > MAX_FRAMES_TEXT) {
			if ((err = as_builder_count(c->b,
						    "snapshot_frames_dropped",
						    1)))
				return err;
		} else {
			if (!(str = as_builder_intern(c->b, c->scratch)))
				return nomem(c);
			c->frames_text += len;
			if (t->val == UINT64_MAX)
				t->val = c->ninterned;
		}
	}
	if (!grow_array((void **)&c->interned, &c->capinterned,
			c->ninterned + 1, sizeof(*c->interned)) ||
	    !grow_array((void **)&c->reps, &c->capreps, c->ninterned + 1,
			sizeof(*c->reps)))
		return nomem(c);
	c->interned[c->ninterned] = str;
	c->reps[c->ninterned] = list;
	if (s->val == UINT64_MAX)
		s->val = c->ninterned;
	c->ninterned++;
	*out = str;
	return AS_OK;
}

/* ---- Segments ---- */

/*
 * The open ranges: a treap ordered by (device, address), split and merged
 * (no parent pointers). The ranges of a device are disjoint, so ordering by
 * start also orders by end, and the ranges meeting [addr, end) are one
 * run: split it out, look at it, put back what remains. Expected O(log n)
 * per operation plus the ranges touched, whatever order the trace uses.
 */
#define NIL UINT32_MAX

static uint32_t t_merge(struct ctx *c, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (c->tn[a].prio > c->tn[b].prio) {
		c->tn[a].r = t_merge(c, c->tn[a].r, b);
		return a;
	}
	c->tn[b].l = t_merge(c, a, c->tn[b].l);
	return b;
}

/* Split t into the nodes for which `left` holds and the rest. */
static void t_split(struct ctx *c, uint32_t t, uint32_t dev, uint64_t x,
		    bool by_end, uint32_t *l, uint32_t *r)
{
	if (t == NIL) {
		*l = *r = NIL;
		return;
	}
	const struct seg *s = &c->tn[t].s;
	bool left = s->dev < dev ||
		    (s->dev == dev && (by_end ? s->addr + s->size <= x
					      : s->addr < x));
	if (left) {
		t_split(c, c->tn[t].r, dev, x, by_end, &c->tn[t].r, r);
		*l = t;
	} else {
		t_split(c, c->tn[t].l, dev, x, by_end, l, &c->tn[t].l);
		*r = t;
	}
}

/* The open ranges of `dev` meeting [addr, end) in *m; before in *l. */
static void t_range(struct ctx *c, uint32_t dev, uint64_t addr, uint64_t end,
		    uint32_t *l, uint32_t *m, uint32_t *r)
{
	uint32_t rest;
	t_split(c, c->root, dev, addr, true, l, &rest);
	t_split(c, rest, dev, end, false, m, r);
}

/* Append the nodes of t in order to walk[]. */
static int t_walk(struct ctx *c, uint32_t t)
{
	if (t == NIL)
		return AS_OK;
	int err = t_walk(c, c->tn[t].l);
	if (err)
		return err;
	if (!grow_array((void **)&c->walk, &c->capwalk, c->nwalk + 1,
			sizeof(*c->walk)))
		return nomem(c);
	c->walk[c->nwalk++] = t;
	return t_walk(c, c->tn[t].r);
}

static int t_node(struct ctx *c, const struct seg *s, uint32_t *out)
{
	if (c->ntn >= NIL - 1 ||
	    !grow_array((void **)&c->tn, &c->captn, c->ntn + 1, sizeof(*c->tn)))
		return nomem(c);
	c->tn[c->ntn] = (struct tnode){*s, as_splitmix64(&c->seed), NIL, NIL};
	*out = (uint32_t)c->ntn++;
	return AS_OK;
}

static int seg_done(struct ctx *c, const struct seg *s)
{
	if (s->size == 0 || s->end <= s->start)
		return AS_OK;
	if (!grow_array((void **)&c->done, &c->capdone, c->ndone + 1,
			sizeof(*c->done)))
		return nomem(c);
	c->done[c->ndone++] = *s;
	return AS_OK;
}

/*
 * Close [addr, addr + size) of `dev` at `now`: open ranges inside it end
 * (split where they stick out); parts no open range covers existed before
 * the trace and get [0, now).
 */
static int seg_close(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t now, uint16_t stream,
		     uint8_t flags)
{
	uint32_t l, m, r, keep[2];
	int nkeep = 0, err;
	if (size == 0 && addr < UINT64_MAX) {
		/* A free without its size: the open range starting there. */
		t_range(c, dev, addr, addr + 1, &l, &m, &r);
		if (m != NIL && c->tn[m].s.addr == addr)
			size = c->tn[m].s.size;
		c->root = t_merge(c, t_merge(c, l, m), r);
	}
	uint64_t end = addr + size, cur = addr;
	t_range(c, dev, addr, end, &l, &m, &r);
	c->nwalk = 0;
	if ((err = t_walk(c, m)))
		goto out;
	for (size_t j = 0; j < c->nwalk; j++) {
		struct seg o = c->tn[c->walk[j]].s;
		uint64_t oe = o.addr + o.size;
		if (o.addr > cur) {
			struct seg before = {cur, o.addr - cur, 0, now, dev,
					     stream, flags};
			if ((err = seg_done(c, &before)))
				goto out;
		}
		uint64_t lo = o.addr > addr ? o.addr : addr;
		uint64_t hi = oe < end ? oe : end;
		struct seg piece = o;
		piece.addr = lo;
		piece.size = hi - lo;
		piece.end = now;
		if ((err = seg_done(c, &piece)))
			goto out;
		/* Only the first can start before, the last end after. */
		if (o.addr < addr) {
			struct seg k = o;
			k.size = addr - o.addr;
			if ((err = t_node(c, &k, &keep[nkeep++])))
				goto out;
		}
		if (oe > end) {
			struct seg k = o;
			k.addr = end;
			k.size = oe - end;
			if ((err = t_node(c, &k, &keep[nkeep++])))
				goto out;
		}
		cur = hi;
	}
	if (cur < end) {
		struct seg before = {cur, end - cur, 0, now, dev, stream, flags};
		if ((err = seg_done(c, &before)))
			goto out;
	}
	m = NIL; /* closed; the remainders take its place */
	for (int k = 0; k < nkeep; k++)
		m = t_merge(c, m, keep[k]);
out:
	c->root = t_merge(c, t_merge(c, l, m), r);
	return err;
}

static int seg_open(struct ctx *c, const struct entry *e, uint64_t now,
		    uint8_t flags)
{
	uint32_t l, m, r, n;
	int err;
	t_range(c, e->dev, e->addr, e->addr + e->size, &l, &m, &r);
	c->root = t_merge(c, t_merge(c, l, m), r);
	if (m != NIL) {
		/* Overlaps a range still open: the trace lost its free. */
		if ((err = seg_close(c, e->dev, e->addr, e->size, now,
				     e->stream, flags)) ||
		    (err = as_builder_count(c->b, "snapshot_segment_overlaps",
					    1)))
			return err;
	}
	struct seg s = {e->addr, e->size, now, 0, e->dev, e->stream, flags};
	if ((err = t_node(c, &s, &n)))
		return err;
	t_split(c, c->root, e->dev, e->addr, false, &l, &r);
	c->root = t_merge(c, t_merge(c, l, n), r);
	return AS_OK;
}

/* A final segment: the parts no open range covers lived the whole time. */
static int seg_final(struct ctx *c, uint32_t dev, uint64_t addr,
		     uint64_t size, uint64_t end_step, uint16_t stream,
		     uint8_t flags)
{
	uint64_t end = addr + size, cur = addr;
	uint32_t l, m, r;
	int err;
	t_range(c, dev, addr, end, &l, &m, &r);
	c->nwalk = 0;
	err = t_walk(c, m);
	c->root = t_merge(c, t_merge(c, l, m), r);
	for (size_t j = 0; err == AS_OK && j < c->nwalk; j++) {
		const struct seg *o = &c->tn[c->walk[j]].s;
		if (o->addr > cur) {
			struct seg s = {cur, o->addr - cur, 0, end_step, dev,
					stream, flags};
			err = seg_done(c, &s);
		}
		if (o->addr + o->size > cur)
			cur = o->addr + o->size;
	}
	if (err == AS_OK && cur < end) {
		struct seg s = {cur, end - cur, 0, end_step, dev, stream, flags};
		err = seg_done(c, &s);
	}
	return err;
}

/* ---- Buffers ---- */

static int new_buf(struct ctx *c, uint32_t dev, uint64_t addr, uint64_t size,
		   uint64_t requested, uint64_t start, uint32_t version,
		   uint16_t stream, const struct as_pk *frames, uint32_t *idx)
{
	if (c->nbufs >= AS_MAX_BUFFERS)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot has too many blocks (at most %u)",
				   AS_MAX_BUFFERS);
	if (!grow_array((void **)&c->bufs, &c->capbufs, c->nbufs + 1,
			sizeof(*c->bufs)))
		return nomem(c);
	c->bufs[c->nbufs] = (struct sbuf){
		.addr = addr,
		.size = size,
		.requested = requested <= size ? requested : size,
		.start = start,
		.end = UINT64_MAX,
		.free_req = UINT64_MAX,
		.frames = frames,
		.dev = dev,
		.version = version,
		.stream = stream,
	};
	*idx = (uint32_t)c->nbufs++;
	return AS_OK;
}

static int add_reading(struct ctx *c, uint64_t step, uint64_t key_us,
		       int64_t mark)
{
	if (!c->has_time && mark < 0)
		return AS_OK;
	if (!grow_array((void **)&c->rd, &c->caprd, c->nrd + 1, sizeof(*c->rd)))
		return nomem(c);
	c->rd[c->nrd++] = (struct reading){step, key_us - c->t0, mark};
	return AS_OK;
}

/* Version of each entry and which frees found no alloc (per device). */
static int prepass(struct ctx *c)
{
	for (size_t i = 0; i < c->ne; i++) {
		struct entry *e = &c->e[i];
		if (e->act != A_ALLOC && e->act != A_FREE_REQ &&
		    e->act != A_FREE_DONE)
			continue;
		struct mslot *s = map_get(&c->addrs, e->addr, e->dev,
					  (uint64_t)0 << 32 | NO_BUF);
		if (!s)
			return nomem(c);
		uint32_t frees = slot_frees(s), live = slot_live(s);
		e->version = frees;
		if (e->act == A_ALLOC) {
			live = 1;
		} else if (e->act == A_FREE_DONE) {
			e->pre = live == NO_BUF;
			live = NO_BUF;
			if (frees < UINT32_MAX)
				frees++;
		}
		slot_set(s, frees, live);
	}
	return AS_OK;
}

static bool by_key(uint32_t a, uint32_t b, const void *ctx)
{
	const struct entry *e = ctx;
	if (e[a].key_us != e[b].key_us)
		return e[a].key_us < e[b].key_us;
	return a < b;
}

static bool seg_by_start(uint32_t a, uint32_t b, const void *ctx)
{
	const struct seg *s = ctx;
	return s[a].start < s[b].start;
}

/* Blocks of the final segments that are active and not live at the end. */
static int ghosts(struct ctx *c, const struct as_pk *segs)
{
	for (uint32_t i = 0; i < as_pk_len(segs); i++) {
		const struct as_pk *sg = as_pk_item(segs, i);
		uint64_t dev = 0, addr = 0;
		int r;
		if ((r = get_u64(c, sg, "device", false, &dev)) < 0 ||
		    (r = get_u64(c, sg, "address", true, &addr)) < 0)
			return r;
		uint16_t stream;
		if ((r = stream_id(c, sg, &stream)))
			return r;
		const struct as_pk *blocks = as_pk_get(sg, "blocks");
		for (uint32_t k = 0; k < as_pk_len(blocks); k++) {
			const struct as_pk *bl = as_pk_item(blocks, k);
			uint64_t size = 0, baddr = addr, req = UINT64_MAX;
			if ((r = get_u64(c, bl, "size", true, &size)) < 0 ||
			    (r = get_u64(c, bl, "address", false, &baddr)) < 0 ||
			    (r = get_u64(c, bl, "requested_size", false,
					 &req)) < 0)
				return r;
			if (baddr > UINT64_MAX - size)
				return as_diag_set(c->diag, 0, AS_EPARSE,
						   "snapshot block at byte "
						   "%llu: address + size "
						   "overflows 64 bits",
						   (unsigned long long)bl->pos);
			addr = baddr + size; /* older files: blocks abut */
			const char *state = as_pk_str(as_pk_get(bl, "state"));
			if (!state || (strcmp(state, "active_allocated") != 0 &&
				       strcmp(state, "active_pending_free") != 0))
				continue;
			const struct mslot *s =
				map_find(&c->addrs, baddr, dev);
			if (s && slot_live(s) != NO_BUF)
				continue; /* the trace allocated it */
			uint32_t idx;
			const struct as_pk *frames = as_pk_get(bl, "frames");
			if (!frames) { /* legacy: frames in the history */
				const struct as_pk *h = as_pk_item(
					as_pk_get(bl, "history"), 0);
				frames = as_pk_get(h, "frames");
			}
			if ((r = new_buf(c, (uint32_t)dev, baddr, size, req, 0,
					 s ? slot_frees(s) : 0, stream, frames,
					 &idx)))
				return r;
			if ((r = as_builder_count(c->b, "snapshot_ghost_blocks",
						  1)))
				return r;
		}
	}
	return AS_OK;
}

/* The merged trace: buffers, segments, marks, clock readings. */
static int replay(struct ctx *c, const struct as_pk *segs, uint64_t *end_step)
{
	int err;
	uint32_t *order = malloc((c->ne + 1) * sizeof(*order));
	if (!order)
		return nomem(c);
	for (size_t i = 0; i < c->ne; i++)
		order[i] = (uint32_t)i;
	if (as_sort_u32(order, c->ne, by_key, c->e) != AS_OK) {
		free(order);
		return nomem(c);
	}
	c->t0 = c->ne ? c->e[order[0]].key_us : 0;
	/* Live blocks of the prepass are those the trace leaves allocated. */
	if ((err = ghosts(c, segs)))
		goto out;
	for (size_t i = 0; c->addrs.s && i <= c->addrs.mask; i++)
		if (c->addrs.s[i].used)
			slot_set(&c->addrs.s[i], 0, NO_BUF);
	/* Blocks allocated before the trace, live from step 0. */
	for (size_t k = 0; k < c->ne; k++) {
		const struct entry *e = &c->e[order[k]];
		if (!e->pre)
			continue;
		uint32_t idx;
		if ((err = new_buf(c, e->dev, e->addr, e->size, e->requested, 0,
				   e->version, e->stream, e->frames, &idx)) ||
		    (err = as_builder_count(c->b,
					    "snapshot_allocated_before_trace",
					    1)))
			goto out;
		struct mslot *s = map_get(&c->addrs, e->addr, e->dev, 0);
		if (!s) {
			err = nomem(c);
			goto out;
		}
		slot_set(s, 0, idx);
	}
	uint64_t now = 1;
	for (size_t k = 0; k < c->ne; k++) {
		const struct entry *e = &c->e[order[k]];
		struct mslot *s = NULL;
		uint32_t idx;
		if (e->act <= A_FREE_DONE) {
			s = map_get(&c->addrs, e->addr, e->dev, NO_BUF);
			if (!s) {
				err = nomem(c);
				goto out;
			}
			if ((err = add_reading(c, now, e->key_us, -1)))
				goto out;
		}
		switch (e->act) {
		case A_ALLOC:
			if (slot_live(s) != NO_BUF) {
				c->bufs[slot_live(s)].end = now;
				if ((err = as_builder_count(
					     c->b, "snapshot_alloc_over_live",
					     1)))
					goto out;
			}
			if ((err = new_buf(c, e->dev, e->addr, e->size,
					   e->requested, now, e->version,
					   e->stream, e->frames, &idx)))
				goto out;
			slot_set(s, 0, idx);
			now++;
			break;
		case A_FREE_REQ:
			if (slot_live(s) != NO_BUF)
				c->bufs[slot_live(s)].free_req = now;
			else if ((err = as_builder_count(
					  c->b, "snapshot_free_requested_unknown",
					  1)))
				goto out;
			now++;
			break;
		case A_FREE_DONE:
			if (slot_live(s) != NO_BUF) {
				c->bufs[slot_live(s)].end = now;
				slot_set(s, 0, NO_BUF);
			} else if ((err = as_builder_count(
					    c->b, "snapshot_free_unknown", 1))) {
				goto out;
			}
			now++;
			break;
		case A_SEG_ALLOC:
		case A_SEG_MAP:
			if ((err = add_reading(c, now, e->key_us, -1)) ||
			    (err = seg_open(c, e, now,
					    e->act == A_SEG_MAP
						    ? AS_SEG_EXPANDABLE
						    : 0)))
				goto out;
			break;
		case A_SEG_FREE:
		case A_SEG_UNMAP:
			if ((err = add_reading(c, now, e->key_us, -1)) ||
			    (err = seg_close(c, e->dev, e->addr, e->size, now,
					     e->stream,
					     e->act == A_SEG_UNMAP
						     ? AS_SEG_EXPANDABLE
						     : 0)))
				goto out;
			break;
		case A_OOM:
			if (!grow_array((void **)&c->marks, &c->capmarks,
					c->nmarks + 1, sizeof(*c->marks))) {
				err = nomem(c);
				goto out;
			}
			c->marks[c->nmarks] = (struct as_mark){
				.size = e->size,
				.device_free = e->device_free,
				.space = (uint16_t)e->dev,
				.kind = AS_MARK_OOM,
			};
			if ((err = add_reading(c, now, e->key_us,
					       (int64_t)c->nmarks++)))
				goto out;
			break;
		}
	}
	*end_step = now;
	for (size_t i = 0; i < c->nbufs; i++)
		if (c->bufs[i].end == UINT64_MAX) {
			c->bufs[i].end = now;
			c->bufs[i].never_freed = true;
		}
	/* Reserved memory: the final segments, then what is still open. */
	for (uint32_t i = 0; i < as_pk_len(segs); i++) {
		const struct as_pk *sg = as_pk_item(segs, i);
		uint64_t dev = 0, addr = 0, size = 0;
		uint16_t stream;
		if ((err = get_u64(c, sg, "device", false, &dev)) < 0 ||
		    (err = get_u64(c, sg, "address", true, &addr)) < 0 ||
		    (err = get_u64(c, sg, "total_size", true, &size)) < 0 ||
		    (err = stream_id(c, sg, &stream)))
			goto out;
		if (addr > UINT64_MAX - size) {
			err = as_diag_set(c->diag, 0, AS_EPARSE,
					  "snapshot segment at byte %llu: "
					  "address + size overflows 64 bits",
					  (unsigned long long)sg->pos);
			goto out;
		}
		if ((err = seg_final(c, (uint32_t)dev, addr, size, now, stream,
				     as_pk_truthy(as_pk_get(sg, "is_expandable"))
					     ? AS_SEG_EXPANDABLE
					     : 0)))
			goto out;
	}
	c->nwalk = 0;
	if ((err = t_walk(c, c->root)))
		goto out;
	for (size_t i = 0; i < c->nwalk; i++) {
		struct seg s = c->tn[c->walk[i]].s;
		s.end = now;
		if ((err = seg_done(c, &s)))
			goto out;
	}
	err = AS_OK;
out:
	free(order);
	return err < 0 ? err : AS_OK;
}

/* ---- To the builder ---- */

/*
 * The address map: per device, the segments' and blocks' address ranges,
 * the empty ranges between them shrunk to SEG_GAP (device addresses lie
 * terabytes up; the recorded peak then reads as memory). With expandable
 * segments only holes beyond EXP_GAP shrink, to EXP_GAP: PyTorch reserves
 * a virtual range per stream and pool, and cuda-caching tells the ranges
 * apart by their distance (more than a device).
 */
static int addr_map(struct ctx *c)
{
	size_t n = c->ndone + c->nbufs;
	uint64_t gap = SEG_GAP;
	if (!n)
		return AS_OK;
	struct as_addr_range *v = malloc(n * sizeof(*v));
	if (!v)
		return nomem(c);
	for (size_t i = 0; i < c->ndone; i++) {
		v[i] = (struct as_addr_range){.address = c->done[i].addr,
					      .length = c->done[i].size,
					      .space = (uint16_t)c->done[i].dev};
		if (c->done[i].flags & AS_SEG_EXPANDABLE)
			gap = EXP_GAP;
	}
	for (size_t i = 0; i < c->nbufs; i++)
		v[c->ndone + i] = (struct as_addr_range){
			.address = c->bufs[i].addr,
			.length = c->bufs[i].size,
			.space = (uint16_t)c->bufs[i].dev};
	int err = as_builder_addr_map(c->b, v, n, gap, gap);
	free(v);
	return err ? nomem(c) : AS_OK;
}

/* The recorded offset of a device address (every one is in the map). */
static uint64_t offset_of(struct ctx *c, uint32_t dev, uint64_t addr)
{
	uint64_t off = addr;
	as_builder_offset_of(c->b, (uint16_t)dev, addr, &off);
	return off;
}

static int emit(struct ctx *c, uint32_t ndev, uint64_t end_step)
{
	struct as_builder *b = c->b;
	struct as_trace *t = as_builder_trace(b);
	char name[48];
	int err;
	if ((err = addr_map(c)))
		return err;
	for (size_t i = 0; i < c->nbufs; i++) {
		const struct sbuf *s = &c->bufs[i];
		snprintf(name, sizeof(name), "b%llx_%u",
			 (unsigned long long)s->addr, s->version);
		uint64_t end = s->end > s->start ? s->end : s->start + 1;
		int64_t idx = as_builder_add_timed(b, name, s->size, 1, s->start,
						   end, 0, c->diag);
		if (idx < 0)
			return (int)idx;
		struct as_buffer *buf = as_builder_buffer(b, (uint32_t)idx);
		buf->recorded = offset_of(c, s->dev, s->addr);
		buf->space = (uint16_t)s->dev;
		buf->stream = s->stream;
		if (s->never_freed)
			buf->flags |= AS_BUF_NEVER_FREED;
		if (s->requested != UINT64_MAX && s->requested != s->size) {
			struct as_buffer_info *in =
				as_builder_info(b, (uint32_t)idx);
			if (!in)
				return nomem(c);
			in->requested = s->requested;
		}
		if (s->free_req != UINT64_MAX) {
			struct as_buffer_info *in =
				as_builder_info(b, (uint32_t)idx);
			if (!in)
				return nomem(c);
			in->free_requested = s->free_req;
		}
		const char *text;
		if ((err = frames_text(c, s->frames, &text)))
			return err;
		if (text) {
			if ((err = as_builder_frames(b, (uint32_t)idx, "")))
				return nomem(c);
			t->frames[idx] = text; /* shared, interned once */
		}
	}
	/* Segments in start order. */
	if (c->ndone) {
		uint32_t *ord = malloc(c->ndone * sizeof(*ord));
		if (!ord)
			return nomem(c);
		for (size_t i = 0; i < c->ndone; i++)
			ord[i] = (uint32_t)i;
		if (as_sort_u32(ord, c->ndone, seg_by_start, c->done) != AS_OK) {
			free(ord);
			return nomem(c);
		}
		for (size_t i = 0; i < c->ndone; i++) {
			const struct seg *s = &c->done[ord[i]];
			struct as_segment out = {offset_of(c, s->dev, s->addr),
						 s->size, s->start,
						 s->end, (uint16_t)s->dev,
						 s->stream, s->flags};
			if ((err = as_builder_segment(b, &out))) {
				free(ord);
				return nomem(c);
			}
		}
		free(ord);
	}
	/* Clock readings and marks, in step order. */
	for (size_t i = 0; i < c->nrd; i++) {
		const struct reading *r = &c->rd[i];
		if (as_builder_set_time(b, r->step) != AS_OK)
			return as_diag_set(c->diag, 0, AS_EPARSE,
					   "snapshot time steps go back");
		if (c->has_time &&
		    (err = as_builder_clock(b, r->us, 0, c->diag)))
			return err;
		if (r->mark >= 0 &&
		    (err = as_builder_mark(b, &c->marks[r->mark])))
			return nomem(c);
	}
	if (as_builder_set_time(b, end_step) != AS_OK)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot time steps go back");
	(void)ndev;
	return AS_OK;
}

static int name_devices(struct ctx *c, uint32_t ndev)
{
	struct as_trace *t = as_builder_trace(c->b);
	char name[32];
	for (uint32_t d = 0; d < ndev; d++) {
		snprintf(name, sizeof(name), "cuda:%u", d);
		if (d == 0) {
			t->spaces[0].name = as_builder_intern(c->b, name);
			if (!t->spaces[0].name)
				return nomem(c);
			continue;
		}
		int r = as_builder_space(c->b, name, 0);
		if (r < 0)
			return nomem(c);
	}
	return AS_OK;
}

static int metadata(struct ctx *c, const struct as_pk *root)
{
	const struct as_pk *settings = as_pk_get(root, "allocator_settings");
	if (!settings)
		return AS_OK;
	char *json;
	int err = as_pk_json(settings, 1u << 20, 32, &json);
	if (err == AS_EINVAL)
		return as_builder_count(c->b, "snapshot_settings_dropped", 1);
	if (err)
		return nomem(c);
	size_t n = strlen(json) + 32;
	char *text = malloc(n);
	if (!text) {
		free(json);
		return nomem(c);
	}
	snprintf(text, n, "{\"allocator_settings\": %s}", json);
	free(json);
	as_builder_trace(c->b)->metadata = as_builder_intern(c->b, text);
	free(text);
	return as_builder_trace(c->b)->metadata ? AS_OK : nomem(c);
}

/* The device count: trace lists and final segments' devices. */
static int count_devices(struct ctx *c, const struct as_pk *traces,
			 const struct as_pk *segs, uint32_t *out)
{
	uint64_t n = as_pk_len(traces);
	for (uint32_t i = 0; i < as_pk_len(segs); i++) {
		uint64_t dev = 0;
		int r = get_u64(c, as_pk_item(segs, i), "device", false, &dev);
		if (r < 0)
			return r;
		if (dev >= MAX_DEVICES)
			return as_diag_set(c->diag, 0, AS_EPARSE,
					   "snapshot segment at byte %llu is on "
					   "device %llu (at most %d devices)",
					   (unsigned long long)as_pk_item(segs, i)
						   ->pos,
					   (unsigned long long)dev,
					   MAX_DEVICES);
		if (dev + 1 > n)
			n = dev + 1;
	}
	if (n > MAX_DEVICES)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot has %llu device traces (at most "
				   "%d)",
				   (unsigned long long)n, MAX_DEVICES);
	*out = n ? (uint32_t)n : 1;
	return AS_OK;
}

static int snapshot_whole(struct as_builder *b, const char *data, size_t len,
			  struct as_diag *diag)
{
	struct as_pickle *doc = NULL;
	int err = as_pickle_parse(data, len, &doc, diag);
	if (err)
		return err;
	struct ctx c = {.b = b, .diag = diag, .root = UINT32_MAX,
			.seed = 0x5eed};
	const struct as_pk *root = as_pickle_root(doc);
	const struct as_pk *segs = as_pk_get(root, "segments");
	const struct as_pk *traces = as_pk_get(root, "device_traces");
	uint32_t ndev = 1;
	uint64_t end_step = 1;
	if (!root || root->type != AS_PK_DICT || (!segs && !traces)) {
		err = as_diag_set(diag, 0, AS_EPARSE,
				  "not a PyTorch memory snapshot: the pickle "
				  "holds no dict with 'segments' or "
				  "'device_traces'");
		goto out;
	}
	if ((err = count_devices(&c, traces, segs, &ndev)) ||
	    (err = name_devices(&c, ndev)) || (err = metadata(&c, root)))
		goto out;
	for (uint32_t d = 0; d < as_pk_len(traces); d++) {
		const struct as_pk *list = as_pk_item(traces, d);
		uint64_t last_us = 0;
		for (uint32_t i = 0; i < as_pk_len(list); i++)
			if ((err = read_entry(&c, as_pk_item(list, i), d,
					      &last_us)))
				goto out;
	}
	if ((err = as_builder_count(b, "snapshot_entries", c.ne)) ||
	    (err = prepass(&c)) || (err = replay(&c, segs, &end_step)) ||
	    (err = emit(&c, ndev, end_step)))
		goto out;
out:
	map_free(&c.addrs);
	map_free(&c.streams);
	map_free(&c.frame_dicts);
	map_free(&c.frame_seqs);
	map_free(&c.frame_texts);
	free(c.fi);
	as_arena_finish(&c.ftext);
	free(c.reps);
	free(c.e);
	free(c.bufs);
	free(c.tn);
	free(c.walk);
	free(c.done);
	free(c.marks);
	free(c.rd);
	free(c.scratch);
	free(c.fscratch);
	free(c.interned);
	as_pickle_destroy(doc);
	return err;
}

/* Pickle protocol 2 to 5: PROTO then the version. */
static bool snapshot_sniff(const char *head, size_t len)
{
	return len >= 2 && (unsigned char)head[0] == 0x80 &&
	       head[1] >= 2 && head[1] <= 5;
}

const struct as_format_impl as_format_pickle = {
	.name = "pickle",
	.extensions = ".pickle .pkl",
	.sniff = snapshot_sniff,
	.whole = snapshot_whole,
};
