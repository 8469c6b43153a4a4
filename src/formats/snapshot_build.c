/* PyTorch snapshots: the reading handed to the builder (address map,
 * buffers, segments, marks, devices, metadata) and the format row. */
#include "formats/snapshot.h"

/* ---- To the builder ---- */

static bool seg_by_start(uint32_t a, uint32_t b, const void *ctx)
{
	const struct seg *s = ctx;
	return s[a].start < s[b].start;
}

/*
 * The address map: per device, the segments' and blocks' address ranges,
 * the empty ranges between them shrunk to SEG_GAP (device addresses lie
 * terabytes up; the recorded peak then reads as memory). With expandable
 * segments the holes shrink to EXP_GAP instead, keeping offsets aligned to
 * the pages PyTorch maps. PyTorch reserves a virtual range per stream and
 * pool, far apart; shrunk, the ranges lie close in offsets, and
 * cuda-caching tells them apart by their real addresses (as_trace_address_of).
 */
static int addr_map(struct ctx *c)
{
	size_t n = c->ndone + c->nbufs;
	uint64_t gap = SEG_GAP;
	if (!n)
		return AS_OK;
	struct as_addr_range *v = malloc(n * sizeof(*v));
	if (!v)
		return as_snap_nomem(c);
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
	return err ? as_snap_nomem(c) : AS_OK;
}

/* The recorded offset of a device address (every one is in the map). */
static uint64_t offset_of(struct ctx *c, uint32_t dev, uint64_t addr)
{
	uint64_t off = addr;
	as_builder_offset_of(c->b, (uint16_t)dev, addr, &off);
	return off;
}

int as_snap_emit(struct ctx *c, uint64_t end_step)
{
	struct as_builder *b = c->b;
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
						   end, s->line, c->diag);
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
				return as_snap_nomem(c);
			in->requested = s->requested;
		}
		if (s->free_req != UINT64_MAX) {
			struct as_buffer_info *in =
				as_builder_info(b, (uint32_t)idx);
			if (!in)
				return as_snap_nomem(c);
			in->free_requested = s->free_req;
		}
		const char *text = s->stack;
		if (s->frames && (err = as_snap_frames_text(c, s->frames, &text)))
			return err;
		/* shared, interned once */
		if (text && (err = as_builder_frames_interned(b, (uint32_t)idx,
							      text)))
			return as_snap_nomem(c);
		if ((err = as_snap_context(c, (uint32_t)idx, s)))
			return err;
	}
	/* Segments in start order. */
	if (c->ndone) {
		uint32_t *ord = malloc(c->ndone * sizeof(*ord));
		if (!ord)
			return as_snap_nomem(c);
		for (size_t i = 0; i < c->ndone; i++)
			ord[i] = (uint32_t)i;
		if (as_sort_u32(ord, c->ndone, seg_by_start, c->done) != AS_OK) {
			free(ord);
			return as_snap_nomem(c);
		}
		for (size_t i = 0; i < c->ndone; i++) {
			const struct seg *s = &c->done[ord[i]];
			struct as_segment out = {offset_of(c, s->dev, s->addr),
						 s->size, s->start,
						 s->end, (uint16_t)s->dev,
						 s->stream, s->flags};
			if ((err = as_builder_segment(b, &out))) {
				free(ord);
				return as_snap_nomem(c);
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
			return as_snap_nomem(c);
	}
	if (as_builder_set_time(b, end_step) != AS_OK)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot time steps go back");
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
				return as_snap_nomem(c);
			continue;
		}
		int r = as_builder_space(c->b, name, 0);
		if (r < 0)
			return as_snap_nomem(c);
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
		return as_snap_nomem(c);
	size_t n = strlen(json) + 32;
	char *text = malloc(n);
	if (!text) {
		free(json);
		return as_snap_nomem(c);
	}
	snprintf(text, n, "{\"allocator_settings\": %s}", json);
	free(json);
	as_builder_trace(c->b)->metadata = as_builder_intern(c->b, text);
	free(text);
	return as_builder_trace(c->b)->metadata ? AS_OK : as_snap_nomem(c);
}

/* The device count: trace lists and final segments' devices. */
static int count_devices(struct ctx *c, const struct as_pk *traces,
			 const struct as_pk *segs, uint32_t *out)
{
	uint64_t n = as_pk_len(traces);
	for (uint32_t i = 0; i < as_pk_len(segs); i++) {
		uint64_t dev = 0;
		int r = as_snap_get_u64(c, as_pk_item(segs, i), "device", false, &dev);
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

static const char *type_name(const struct as_pk *v)
{
	static const char *const names[] = {
		[AS_PK_NONE] = "None",	  [AS_PK_BOOL] = "a bool",
		[AS_PK_INT] = "an int",	  [AS_PK_BIGINT] = "an int",
		[AS_PK_FLOAT] = "a float", [AS_PK_STR] = "a str",
		[AS_PK_BYTES] = "bytes",  [AS_PK_LIST] = "a list",
		[AS_PK_TUPLE] = "a tuple", [AS_PK_DICT] = "a dict",
	};
	return v->type < sizeof(names) / sizeof(names[0]) ? names[v->type]
							   : "?";
}

/* A list (or tuple), or absent: anything else is refused by name. */
static int want_list(struct ctx *c, const struct as_pk *v, const char *what)
{
	if (!v || v->type == AS_PK_LIST || v->type == AS_PK_TUPLE)
		return AS_OK;
	return as_diag_set(c->diag, 0, AS_EPARSE,
			   "snapshot %s at byte %llu is %s, not a list", what,
			   (unsigned long long)v->pos, type_name(v));
}

/*
 * The shape, and what reading it costs: every entry of every device, every
 * segment and every block, counted once per reference, may not outnumber
 * the pickle's bytes. A pickler writes each entry once (a byte or more a
 * reference), so only a list of lists shared many times (1,024 references
 * to one list of 40,000 references to one dict: 41M entries from 40 KB) can
 * pass it; that is refused here, before anything is read.
 */
static int check_shape(struct ctx *c, const struct as_pk *traces,
		       const struct as_pk *segs, size_t len)
{
	int err;
	uint64_t seen = 0;
	/* None at the top is as good as absent; a str or dict is not. */
	if ((traces && traces->type != AS_PK_NONE &&
	     (err = want_list(c, traces, "'device_traces'"))) ||
	    (segs && segs->type != AS_PK_NONE &&
	     (err = want_list(c, segs, "'segments'"))))
		return err;
	for (uint32_t d = 0; d < as_pk_len(traces) && seen <= len; d++) {
		const struct as_pk *list = as_pk_item(traces, d);
		if ((err = want_list(c, list, "device trace")))
			return err;
		seen += as_pk_len(list);
	}
	for (uint32_t i = 0; i < as_pk_len(segs) && seen <= len; i++) {
		const struct as_pk *blocks = as_pk_get(as_pk_item(segs, i),
						       "blocks");
		if ((err = want_list(c, blocks, "segment 'blocks'")))
			return err;
		seen += 1 + (uint64_t)as_pk_len(blocks);
	}
	if (seen > len)
		return as_diag_set(c->diag, 0, AS_EPARSE,
				   "snapshot holds at least %llu entries, "
				   "segments and blocks, counting each "
				   "reference: more than its %zu bytes (a list "
				   "shared many times; reading it would cost "
				   "far more than the file)",
				   (unsigned long long)seen, len);
	return AS_OK;
}

static int snapshot_whole(struct as_builder *b, const char *data, size_t len,
			  struct as_diag *diag)
{
	struct as_pickle *doc = NULL;
	int err = as_pickle_parse(data, len, &doc, diag);
	if (err)
		return err;
	struct ctx c = {.b = b, .diag = diag, .root = UINT32_MAX};
	as_snap_tree_init(&c);
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
	if ((err = check_shape(&c, traces, segs, len)) ||
	    (err = count_devices(&c, traces, segs, &ndev)) ||
	    (err = name_devices(&c, ndev)) || (err = metadata(&c, root)))
		goto out;
	for (uint32_t d = 0; d < as_pk_len(traces); d++) {
		const struct as_pk *list = as_pk_item(traces, d);
		uint64_t last_us = 0;
		for (uint32_t i = 0; i < as_pk_len(list); i++)
			if ((err = as_snap_read_entry(&c, as_pk_item(list, i), d,
					      &last_us)))
				goto out;
	}
	if ((err = as_builder_count(b, "snapshot_entries", c.ne)) ||
	    (err = as_snap_prepass(&c)) || (err = as_snap_replay(&c, segs, &end_step)) ||
	    (err = as_snap_emit(&c, end_step)) ||
	    (err = as_snap_stages(&c, root, ndev, end_step)))
		goto out;
out:
	as_snap_map_free(&c.addrs);
	as_snap_map_free(&c.streams);
	as_snap_map_free(&c.frame_dicts);
	as_snap_map_free(&c.frame_seqs);
	as_snap_map_free(&c.frame_texts);
	as_snap_map_free(&c.frame_lists);
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
