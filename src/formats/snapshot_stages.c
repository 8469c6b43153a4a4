/*
 * PyTorch snapshots: what the program said about its phases and its
 * allocations, beyond the blocks.
 *
 *  - `external_annotations`: a list of {stage: "START" | "END", name,
 *    device, time_us}, the record_function / NVTX ranges the program ran
 *    (newer writers). A START and the next END of the same name on the same
 *    device (innermost first, as ranges nest) make a stage of that device's
 *    space. Its times become steps through the clock: a stage starts at the
 *    first step whose entry came at or after its START (so the entries
 *    within its microseconds are inside it) and ends at the first step at
 *    or after its END; past the last entry, at the end. An END without a
 *    START starts at 0, a START without an END lasts to the end (flagged).
 *    Without a clock (no time_us in the entries) they cannot be placed and
 *    are counted instead.
 *  - each alloc entry's `compile_context` (torch.compile's graph) and
 *    `user_metadata`, strings kept per buffer (other values as JSON).
 */
#include "formats/snapshot.h"

/* The text of a context value: a str, else its JSON (short), else NULL. */
static const char *value_text(const struct as_pk *v, char **json)
{
	*json = NULL;
	if (!v || v->type == AS_PK_NONE)
		return NULL;
	const char *s = as_pk_str(v);
	if (s)
		return s;
	if (as_pk_json(v, 1024, 8, json) != AS_OK)
		return NULL;
	return *json;
}

int as_snap_context(struct ctx *c, uint32_t idx, const struct sbuf *s)
{
	if (!s->context && !s->metadata)
		return AS_OK;
	char *j1, *j2;
	const char *cx = value_text(s->context, &j1);
	const char *md = value_text(s->metadata, &j2);
	int err = as_builder_context(c->b, idx, cx, md);
	free(j1);
	free(j2);
	return err ? as_snap_nomem(c) : AS_OK;
}

/* The first step whose clock reading is at or after `us` (relative to the
 * first entry), or end_step. */
static uint64_t step_at(const struct ctx *c, uint64_t us, uint64_t end_step)
{
	size_t lo = 0, hi = c->nrd;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->rd[mid].us < us)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nrd ? c->rd[lo].step : end_step;
}

struct open_stage {
	struct as_stage s;
	uint32_t prev;  /* the START of this name and device opened before */
};

int as_snap_stages(struct ctx *c, const struct as_pk *root, uint32_t ndev,
		   uint64_t end_step)
{
	const struct as_pk *list = as_pk_get(root, "external_annotations");
	uint32_t n = as_pk_len(list);
	if (n == 0)
		return AS_OK;
	if (!c->has_time)
		return as_builder_count(c->b, "snapshot_annotations_unplaced",
					n);
	struct open_stage *st = malloc(sizeof(*st) * n);
	struct as_strmap open = {0}; /* name, device -> last open START */
	uint32_t ns = 0;
	uint64_t skipped = 0;
	int err = AS_OK;
	if (!st) {
		err = as_snap_nomem(c);
		goto out;
	}
	for (uint32_t i = 0; i < n && !err; i++) {
		const struct as_pk *a = as_pk_item(list, i);
		const char *stage = as_pk_str(as_pk_get(a, "stage"));
		const char *name = as_pk_str(as_pk_get(a, "name"));
		uint64_t dev = 0, us = 0;
		bool start = stage && strcmp(stage, "START") == 0;
		if (!name || !stage || (!start && strcmp(stage, "END") != 0) ||
		    as_snap_get_u64(c, a, "device", false, &dev) < 0 ||
		    as_snap_get_u64(c, a, "time_us", true, &us) != 1 ||
		    dev >= ndev) {
			skipped++;
			continue;
		}
		uint64_t rel = us > c->t0 ? us - c->t0 : 0;
		uint64_t step = step_at(c, rel, end_step);
		size_t len = strlen(name);
		uint32_t k = as_strmap_get(&open, (uint32_t)dev, name, len);
		if (start) {
			st[ns] = (struct open_stage){
				.s = {.name = name, .start = step,
				      .end = end_step, .space = (uint16_t)dev,
				      .flags = AS_STAGE_NO_END},
				.prev = k,
			};
			err = as_strmap_put(&open, (uint32_t)dev, name, len, ns++,
					    false);
		} else if (k == AS_NONE) {
			st[ns++] = (struct open_stage){
				.s = {.name = name, .start = 0, .end = step,
				      .space = (uint16_t)dev,
				      .flags = AS_STAGE_NO_START},
				.prev = AS_NONE,
			};
		} else {
			st[k].s.end = step > st[k].s.start ? step : st[k].s.start;
			st[k].s.flags &= (uint8_t)~AS_STAGE_NO_END;
			err = as_strmap_put(&open, (uint32_t)dev, name, len,
					    st[k].prev, false);
		}
		if (err)
			err = as_snap_nomem(c);
	}
	for (uint32_t i = 0; i < ns && !err; i++)
		if (as_builder_stage(c->b, &st[i].s))
			err = as_snap_nomem(c);
	if (!err && skipped)
		err = as_builder_count(c->b, "snapshot_annotations_skipped",
				       skipped);
out:
	as_strmap_finish(&open);
	free(st);
	return err;
}
