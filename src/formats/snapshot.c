/*
 * PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot(), a
 * pickle of plain data) as a trace. The pickle is read by pickle.c, which
 * refuses anything that would import or call; this file maps its schema:
 *
 *  - `device_traces[d]`: entries {action, addr, size, stream, time_us,
 *    frames} of device d, which becomes space `cuda:d`. The devices' entries
 *    are merged by time (each device's order kept). Every alloc,
 *    free_requested and free_completed takes one time step, from 1; step 0
 *    is "before the trace". Segment entries share the step of the next
 *    block entry, except a segment_free/unmap after a segment_alloc/map
 *    of the same step, which takes a new step: so a segment reserved and
 *    given back between two block entries still lasts a step, and the
 *    moment two segments were reserved at once is kept (reserved peaks).
 *    The clock is time_us since the first entry.
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
#include "formats/snapshot.h"


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





void as_snap_map_free(struct map *m)
{
	free(m->s);
	m->s = NULL;
}

static struct mslot *map_find(const struct map *m, uint64_t a, uint64_t b)
{
	if (!m->s)
		return NULL;
	for (size_t h = as_hash_pair(a, b) & m->mask;; h = (h + 1) & m->mask) {
		if (!m->s[h].used)
			return NULL;
		if (m->s[h].a == a && m->s[h].b == b)
			return &m->s[h];
	}
}

/* The slot of (a, b), added with value `def` when new; NULL: no memory. */
struct mslot *as_snap_map_get(struct map *m, uint64_t a, uint64_t b,
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
			size_t h = as_hash_pair(m->s[i].a, m->s[i].b) & (cap - 1);
			while (ns[h].used)
				h = (h + 1) & (cap - 1);
			ns[h] = m->s[i];
		}
		free(m->s);
		m->s = ns;
		m->mask = cap - 1;
	}
	size_t h = as_hash_pair(a, b) & m->mask;
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
bool as_snap_grow_array(void **p, size_t *cap, size_t need, size_t elem)
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





int as_snap_nomem(struct ctx *c)
{
	return as_diag_set(c->diag, 0, AS_ENOMEM, "out of memory");
}

/*
 * Integer `key` of dict d: 1 and *out when there, 0 when absent and not
 * required, else an error naming the byte where the value (or dict) is.
 */
int as_snap_get_u64(struct ctx *c, const struct as_pk *d, const char *key,
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
	if (!as_pk_u64(v, out)) {
		/* What the key holds, for the message. */
		const char *what = strcmp(key, "time_us") == 0 ? "time"
				   : strcmp(key, "device") == 0 ? "device number"
								: "size or address";
		bool neg = (v->type == AS_PK_INT && v->neg) ||
			   (v->type == AS_PK_FLOAT && v->v.f < 0);
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   neg ? "snapshot '%s' at byte %llu is a "
					 "negative %s"
				       : "snapshot '%s' at byte %llu is not an "
					 "integer, so not a %s",
				   key, (unsigned long long)v->pos, what);
	}
	return 1;
}

/* A small id per stream (0 stays 0), in order of first appearance. */
static int stream_id(struct ctx *c, const struct as_pk *d, uint16_t *out)
{
	const struct as_pk *v = as_pk_get(d, "stream");
	*out = 0;
	if (!v || v->type != AS_PK_INT || (v->v.u == 0 && !v->neg))
		return AS_OK;
	struct mslot *s = as_snap_map_get(&c->streams, v->v.u, v->neg, UINT64_MAX);
	if (!s)
		return as_snap_nomem(c);
	if (s->val == UINT64_MAX)
		s->val = c->nstreams < UINT16_MAX ? ++c->nstreams : UINT16_MAX;
	*out = (uint16_t)s->val;
	return AS_OK;
}

int as_snap_read_entry(struct ctx *c, const struct as_pk *d, uint32_t dev,
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
		if ((r = as_snap_get_u64(c, d, "size", false, &e.size)) < 0 ||
		    (r = as_snap_get_u64(c, d, "device_free", false, &e.device_free)) < 0)
			return r;
	} else {
		if ((r = as_snap_get_u64(c, d, "addr", true, &e.addr)) < 0 ||
		    (r = as_snap_get_u64(c, d, "size",
				 e.act == A_ALLOC || e.act == A_SEG_ALLOC ||
					 e.act == A_SEG_MAP,
				 &e.size)) < 0 ||
		    (r = as_snap_get_u64(c, d, "requested_size", false,
				 &e.requested)) < 0)
			return r;
		if (e.addr > UINT64_MAX - e.size)
			return as_diag_set(c->diag, 0, AS_EPARSE,
					   "snapshot entry at byte %llu: addr "
					   "+ size overflows 64 bits",
					   (unsigned long long)d->pos);
	}
	uint64_t us;
	if ((r = as_snap_get_u64(c, d, "time_us", false, &us)) < 0)
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
	e.context = as_pk_get(d, "compile_context");
	e.metadata = as_pk_get(d, "user_metadata");
	if (!as_snap_grow_array((void **)&c->e, &c->cape, c->ne + 1, sizeof(*c->e)))
		return as_snap_nomem(c);
	if (c->ne >= AS_MAX_BUFFERS)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot has too many entries (at most "
				   "%u)",
				   AS_MAX_BUFFERS);
	c->e[c->ne++] = e;
	return AS_OK;
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
	if (!as_snap_grow_array((void **)&c->bufs, &c->capbufs, c->nbufs + 1,
			sizeof(*c->bufs)))
		return as_snap_nomem(c);
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
	if (!as_snap_grow_array((void **)&c->rd, &c->caprd, c->nrd + 1, sizeof(*c->rd)))
		return as_snap_nomem(c);
	c->rd[c->nrd++] = (struct reading){step, key_us - c->t0, mark};
	return AS_OK;
}

/* Version of each entry and which frees found no alloc (per device). */
int as_snap_prepass(struct ctx *c)
{
	for (size_t i = 0; i < c->ne; i++) {
		struct entry *e = &c->e[i];
		if (e->act != A_ALLOC && e->act != A_FREE_REQ &&
		    e->act != A_FREE_DONE)
			continue;
		struct mslot *s = as_snap_map_get(&c->addrs, e->addr, e->dev,
					  (uint64_t)0 << 32 | NO_BUF);
		if (!s)
			return as_snap_nomem(c);
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

/* Blocks of the final segments that are active and not live at the end. */
static int ghosts(struct ctx *c, const struct as_pk *segs)
{
	for (uint32_t i = 0; i < as_pk_len(segs); i++) {
		const struct as_pk *sg = as_pk_item(segs, i);
		uint64_t dev = 0, addr = 0;
		int r;
		if ((r = as_snap_get_u64(c, sg, "device", false, &dev)) < 0 ||
		    (r = as_snap_get_u64(c, sg, "address", true, &addr)) < 0)
			return r;
		uint16_t stream;
		if ((r = stream_id(c, sg, &stream)))
			return r;
		const struct as_pk *blocks = as_pk_get(sg, "blocks");
		for (uint32_t k = 0; k < as_pk_len(blocks); k++) {
			const struct as_pk *bl = as_pk_item(blocks, k);
			uint64_t size = 0, baddr = addr, req = UINT64_MAX;
			if ((r = as_snap_get_u64(c, bl, "size", true, &size)) < 0 ||
			    (r = as_snap_get_u64(c, bl, "address", false, &baddr)) < 0 ||
			    (r = as_snap_get_u64(c, bl, "requested_size", false,
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
int as_snap_replay(struct ctx *c, const struct as_pk *segs, uint64_t *end_step)
{
	int err;
	uint32_t *order = malloc((c->ne + 1) * sizeof(*order));
	if (!order)
		return as_snap_nomem(c);
	for (size_t i = 0; i < c->ne; i++)
		order[i] = (uint32_t)i;
	if (as_sort_u32(order, c->ne, by_key, c->e) != AS_OK) {
		free(order);
		return as_snap_nomem(c);
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
		struct mslot *s = as_snap_map_get(&c->addrs, e->addr, e->dev, 0);
		if (!s) {
			err = as_snap_nomem(c);
			goto out;
		}
		slot_set(s, 0, idx);
	}
	uint64_t now = 1, opened = 0; /* opened: a segment opened at step */
	for (size_t k = 0; k < c->ne; k++) {
		const struct entry *e = &c->e[order[k]];
		struct mslot *s = NULL;
		uint32_t idx;
		if (e->act <= A_FREE_DONE) {
			s = as_snap_map_get(&c->addrs, e->addr, e->dev, NO_BUF);
			if (!s) {
				err = as_snap_nomem(c);
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
			c->bufs[idx].context = e->context;
			c->bufs[idx].metadata = e->metadata;
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
			opened = now;
			if ((err = add_reading(c, now, e->key_us, -1)) ||
			    (err = as_snap_seg_open(c, e, now,
					    e->act == A_SEG_MAP
						    ? AS_SEG_EXPANDABLE
						    : 0)))
				goto out;
			break;
		case A_SEG_FREE:
		case A_SEG_UNMAP:
			/*
			 * After a segment opened in this step: a step of its
			 * own, or the sweep (ends first at equal times) would
			 * lose the moment both were reserved, and a segment
			 * opened and closed here would last no time at all.
			 */
			if (opened == now)
				now++;
			if ((err = add_reading(c, now, e->key_us, -1)) ||
			    (err = as_snap_seg_close(c, e->dev, e->addr, e->size, now,
					     e->stream,
					     e->act == A_SEG_UNMAP
						     ? AS_SEG_EXPANDABLE
						     : 0)))
				goto out;
			break;
		case A_OOM:
			if (!as_snap_grow_array((void **)&c->marks, &c->capmarks,
					c->nmarks + 1, sizeof(*c->marks))) {
				err = as_snap_nomem(c);
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
		if ((err = as_snap_get_u64(c, sg, "device", false, &dev)) < 0 ||
		    (err = as_snap_get_u64(c, sg, "address", true, &addr)) < 0 ||
		    (err = as_snap_get_u64(c, sg, "total_size", true, &size)) < 0 ||
		    (err = stream_id(c, sg, &stream)))
			goto out;
		if (addr > UINT64_MAX - size) {
			err = as_diag_set(c->diag, 0, AS_EPARSE,
					  "snapshot segment at byte %llu: "
					  "address + size overflows 64 bits",
					  (unsigned long long)sg->pos);
			goto out;
		}
		if ((err = as_snap_seg_final(c, (uint32_t)dev, addr, size, now, stream,
				     as_pk_truthy(as_pk_get(sg, "is_expandable"))
					     ? AS_SEG_EXPANDABLE
					     : 0)))
			goto out;
	}
	c->nwalk = 0;
	if ((err = as_snap_t_walk(c, c->root)))
		goto out;
	for (size_t i = 0; i < c->nwalk; i++) {
		struct seg s = c->tn[c->walk[i]].s;
		s.end = now;
		if ((err = as_snap_seg_done(c, &s)))
			goto out;
	}
	err = AS_OK;
out:
	free(order);
	return err < 0 ? err : AS_OK;
}

