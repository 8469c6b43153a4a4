/* PyTorch snapshots: the frames of a stack as text, filtered as memory_viz
 * filters them, each frame dict and each stack formatted once. */
#include "formats/snapshot.h"

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
	struct mslot *s = as_snap_map_get(&c->frame_dicts, (uintptr_t)f, 1, UINT64_MAX);
	if (!s)
		return as_snap_nomem(c);
	if (s->val != UINT64_MAX) {
		*out = s->val;
		return AS_OK;
	}
	if (!as_snap_grow_array((void **)&c->fi, &c->capfi, c->nfi + 1,
			sizeof(*c->fi)))
		return as_snap_nomem(c);
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
		if (!as_snap_grow_array((void **)&c->fscratch, &c->capfscratch, need,
				1))
			return as_snap_nomem(c);
		fi.len = (size_t)snprintf(c->fscratch, need, "%s:%lld:%s", file,
					  (long long)line, name);
		fi.text = as_arena_dup(&c->ftext, c->fscratch, fi.len);
		if (!fi.text)
			return as_snap_nomem(c);
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
		if (!as_snap_grow_array((void **)&c->scratch, &c->capscratch,
				*len + fi->len + 2, 1))
			return as_snap_nomem(c);
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
 * A list met before is found by its address in O(1): 20,000 buffers that
 * share one list of 2,000,000 frames (the memo shares it) cost one look
 * each, not a pass over the list. Lists of the same frame dicts are the
 * same stack, so each distinct stack is joined once; equal texts share
 * one copy.
 */
int as_snap_frames_text(struct ctx *c, const struct as_pk *list,
		       const char **out)
{
	*out = NULL;
	uint32_t n = as_pk_len(list);
	if (!n)
		return AS_OK;
	struct mslot *same = as_snap_map_get(&c->frame_lists, (uintptr_t)list,
					     0, UINT64_MAX);
	if (!same)
		return as_snap_nomem(c);
	if (same->val != UINT64_MAX) {
		*out = c->interned[same->val];
		return AS_OK;
	}
	uint64_t h = 0;
	for (uint32_t i = 0; i < n; i++)
		h = as_hash_pair(h, (uintptr_t)as_pk_item(list, i));
	struct mslot *s = as_snap_map_get(&c->frame_seqs, h, n, UINT64_MAX);
	if (!s)
		return as_snap_nomem(c);
	if (s->val != UINT64_MAX && same_items(c->reps[s->val], list)) {
		same->val = s->val;
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
		struct mslot *t = as_snap_map_get(&c->frame_texts,
					  as_hash_str(c->scratch), len,
					  UINT64_MAX);
		if (!t)
			return as_snap_nomem(c);
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
				return as_snap_nomem(c);
			c->frames_text += len;
			if (t->val == UINT64_MAX)
				t->val = c->ninterned;
		}
	}
	if (!as_snap_grow_array((void **)&c->interned, &c->capinterned,
			c->ninterned + 1, sizeof(*c->interned)) ||
	    !as_snap_grow_array((void **)&c->reps, &c->capreps, c->ninterned + 1,
			sizeof(*c->reps)))
		return as_snap_nomem(c);
	c->interned[c->ninterned] = str;
	c->reps[c->ninterned] = list;
	if (s->val == UINT64_MAX)
		s->val = c->ninterned;
	same->val = c->ninterned;
	c->ninterned++;
	*out = str;
	return AS_OK;
}
