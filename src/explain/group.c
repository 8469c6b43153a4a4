/*
 * Grouping buffers: by stack (its number, each number's text read once and
 * equal texts merged), by the first user frame (frames.c), by the line of
 * one source file, by category (category.c), or by the text of
 * as_trace_group (annotation stage, context, name prefix, size class, the
 * buffer). Keys are hashed into an as_strmap; a group keeps its bytes,
 * count and largest buffer (by category: bytes per rule, its evidence).
 * Sorting the groups is O(g log g).
 *
 * A group's representative stack is its top frames without the
 * allocator's (frames.c's machinery); by frame and by line it starts at
 * the group's frame, and the frames above that (what it called) are kept
 * apart. Buffers without frames are grouped by why they have none.
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

/* By category: the buffers one rule put in a group. */
struct evacc {
	uint64_t bytes, count, largest;
	const char *at;         /* the largest one's frame or stage */
	size_t len;
	bool any;
};

struct acc {
	const char *key;        /* not NUL-terminated: key_len bytes */
	size_t key_len;
	uint64_t bytes, count, largest;
	uint32_t buffer;
	struct evacc *ev;       /* by category: AS_X_WHY_COUNT */
};

/* Why buffers have no frames. */
enum { NF_BEFORE, NF_NO_STACK, NF_RECORDED, NF_FORMAT, NF_COUNT };

struct grouper {
	const struct as_trace *t;
	struct as_explain_options o;
	struct as_strmap map;   /* key -> group */
	struct as_arena texts;  /* keys made here */
	uint32_t *stack_gid;    /* by stack number: its group, or AS_NONE */
	uint32_t nstacks;
	uint32_t none_gid[NF_COUNT]; /* buffers without frames */
	uint32_t *cat_gid;      /* by category: its group, or AS_NONE */
	struct as_x_frames fr;
	struct as_x_categorizer *cat;
	bool snapshot;
	struct acc *g;
	uint32_t ng, cap;
	char *scratch;
	size_t capscratch;
};

/* The end of the balanced group opening at s[i] (open, close), or n. */
static size_t group_end(const char *s, size_t n, size_t i, char open,
			char close)
{
	int depth = 0;
	for (size_t j = i; j < n; j++) {
		depth += s[j] == open ? 1 : s[j] == close ? -1 : 0;
		if (depth == 0)
			return j;
	}
	return n;
}

size_t as_x_strip_params(const char *s, size_t n, char *out, size_t cap)
{
	static const char anon[] = "(anonymous namespace)";
	size_t m = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n && m + 3 < cap;) {
		char c = s[i];
		bool op = i >= 8 && memcmp(s + i - 8, "operator", 8) == 0;
		/* A parameter list follows a name (or a template's '>'):
		 * "(no frames)", "(anonymous namespace)" and mtrace's
		 * "prog:(fn+0x10)" stay. */
		char p = i > 0 ? s[i - 1] : ' ';
		bool after_name = (p >= 'a' && p <= 'z') || (p >= 'A' && p <= 'Z') ||
				  (p >= '0' && p <= '9') || p == '_' || p == '>' ||
				  p == ']';
		if (c == '(' && !op && after_name &&
		    !(n - i >= sizeof(anon) - 1 &&
		      memcmp(s + i, anon, sizeof(anon) - 1) == 0)) {
			size_t j = group_end(s, n, i, '(', ')');
			if (j < n) { /* "()" for the whole list */
				memcpy(out + m, "()", 2);
				m += 2;
				i = j + 1;
				continue;
			}
		}
		if (c == '<' && !op) {
			size_t j = group_end(s, n, i, '<', '>');
			if (j < n && j - i > 24) { /* long: "<...>" */
				memcpy(out + m, "<...>", m + 6 < cap ? 5 : 0);
				m += m + 6 < cap ? 5 : 0;
				i = j + 1;
				continue;
			}
		}
		out[m++] = s[i++];
	}
	out[m] = 0;
	return m;
}

int as_x_grouper_create(const struct as_trace *t,
			const struct as_explain_options *o,
			const struct as_order *order, struct grouper **out)
{
	struct grouper *g = calloc(1, sizeof(*g));
	if (!g)
		return AS_ENOMEM;
	g->t = t;
	g->o = *o;
	g->snapshot = t->format && strcmp(t->format, "pickle") == 0;
	for (int k = 0; k < NF_COUNT; k++)
		g->none_gid[k] = AS_NONE;
	uint32_t n = 0;
	for (uint32_t k = 0; as_trace_stack_text(t, k); k++)
		n = k + 1;
	g->nstacks = n;
	int err = as_x_frames_init(&g->fr, o->user_code, o->skip_frames);
	if (err) {
		free(g);
		return err;
	}
	g->fr.python_program = g->snapshot;
	if (!err && o->by == AS_GROUP_CATEGORY) {
		err = as_x_cat_create(t, o, order, &g->cat);
		size_t nc = (size_t)AS_X_CAT_COUNT + o->nrules;
		if (!err && !(g->cat_gid = malloc(sizeof(*g->cat_gid) * nc)))
			err = AS_ENOMEM;
		for (size_t k = 0; !err && k < nc; k++)
			g->cat_gid[k] = AS_NONE;
	}
	if (!err && (o->by == AS_GROUP_STACK || o->by == AS_GROUP_FRAME ||
		     o->by == AS_GROUP_LINE)) {
		g->stack_gid = malloc(sizeof(*g->stack_gid) * ((size_t)n + 1));
		if (!g->stack_gid)
			err = AS_ENOMEM;
		for (uint32_t k = 0; !err && k < n; k++)
			g->stack_gid[k] = AS_NONE;
	}
	if (err) {
		as_x_grouper_destroy(g);
		return err;
	}
	*out = g;
	return AS_OK;
}

void as_x_grouper_destroy(struct grouper *g)
{
	if (!g)
		return;
	as_strmap_finish(&g->map);
	as_arena_finish(&g->texts);
	as_x_frames_finish(&g->fr);
	as_x_cat_destroy(g->cat);
	for (uint32_t k = 0; g->g && k < g->ng; k++)
		free(g->g[k].ev);
	free(g->cat_gid);
	free(g->stack_gid);
	free(g->g);
	free(g->scratch);
	free(g);
}

static bool hex_digit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* Key text with every hexadecimal number ("0x1f") made "0x?". */
static const char *normalized(struct grouper *g, const char *s, size_t n,
			      size_t *out_len)
{
	if (g->capscratch < n + 1) {
		char *p = realloc(g->scratch, n + 1);
		if (!p)
			return NULL;
		g->scratch = p;
		g->capscratch = n + 1;
	}
	size_t m = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] == '0' && i + 2 < n && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
		    hex_digit(s[i + 2])) {
			memcpy(g->scratch + m, "0x?", 3);
			m += 3;
			for (i += 2; i < n && hex_digit(s[i]); i++)
				;
			continue;
		}
		g->scratch[m++] = s[i++];
	}
	*out_len = m;
	return g->scratch;
}

/* The group of key [s, s + n), added when new (`stable`: s outlives the
 * grouper, else it is copied). AS_NONE when memory runs out. */
static uint32_t group_of(struct grouper *g, const char *s, size_t n,
			 bool stable)
{
	if (g->o.normalize) {
		s = normalized(g, s, n, &n);
		if (!s)
			return AS_NONE;
		stable = false;
	}
	uint32_t k = as_strmap_get(&g->map, 0, s, n);
	if (k != AS_NONE)
		return k;
	if (!stable && !(s = as_arena_dup(&g->texts, s, n)))
		return AS_NONE;
	if (g->ng == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 64;
		struct acc *p = realloc(g->g, sizeof(*p) * cap);
		if (!p)
			return AS_NONE;
		g->g = p;
		g->cap = cap;
	}
	if (as_strmap_put(&g->map, 0, s, n, g->ng, true))
		return AS_NONE;
	g->g[g->ng] = (struct acc){.key = s, .key_len = n, .buffer = AS_NONE};
	if (g->o.by == AS_GROUP_CATEGORY &&
	    !(g->g[g->ng].ev = calloc(AS_X_WHY_COUNT, sizeof(struct evacc))))
		return AS_NONE;
	return g->ng++;
}

static bool formats_stacks(const char *format)
{
	static const char *const with[] = {"pickle", "heaptrack", "mtrace",
					   "json"};
	for (size_t k = 0; format && k < sizeof(with) / sizeof(with[0]); k++)
		if (strcmp(format, with[k]) == 0)
			return true;
	return false;
}

/* The key of buffer i without frames: why it has none. */
static uint32_t no_frames_group(struct grouper *g, uint32_t i)
{
	static const char *const keys[NF_COUNT] = {
		[NF_BEFORE] = "(no frames: allocated before the recording)",
		[NF_NO_STACK] = "(no frames: recorded without a stack)",
		[NF_RECORDED] = "(no frames: recorded without stacks)",
		[NF_FORMAT] = "(no frames: this format has no stacks)",
	};
	int why = g->snapshot && g->t->buffers[i].start == 0 ? NF_BEFORE
		  : g->nstacks				    ? NF_NO_STACK
		  : formats_stacks(g->t->format)	    ? NF_RECORDED
							    : NF_FORMAT;
	if (g->none_gid[why] == AS_NONE)
		g->none_gid[why] =
			group_of(g, keys[why], strlen(keys[why]), true);
	return g->none_gid[why];
}

/* Whether frame [at, at + len) is in the options' line_file: its file
 * ends with it at a directory boundary. */
static bool in_line_file(const struct grouper *g, const char *at, size_t len)
{
	const char *want = g->o.line_file;
	if (!want || !*want)
		return false;
	struct as_x_span file, fn;
	as_x_frame_parts(at, len, &file, &fn);
	size_t n = strlen(want);
	if (file.n < n || memcmp(file.s + file.n - n, want, n) != 0)
		return false;
	return file.n == n || want[0] == '/' || file.s[file.n - n - 1] == '/' ||
	       file.s[file.n - n - 1] == '\\';
}

/*
 * The frame a stack is grouped by (by frame: its first user frame; by
 * line: its first frame in the file), as an index; false when by line and
 * no frame is in the file.
 */
static bool anchor(const struct grouper *g, const char *text, uint32_t *k)
{
	if (g->o.by == AS_GROUP_LINE) {
		const char *at;
		size_t len;
		for (uint32_t j = 0; as_x_frame_at(text, j, &at, &len); j++)
			if (in_line_file(g, at, len)) {
				*k = j;
				return true;
			}
		return false;
	}
	as_x_user_frame(&g->fr, text, k);
	return true;
}

static uint32_t stack_group(struct grouper *g, uint32_t i)
{
	uint32_t k = as_trace_buffer_stack(g->t, i);
	if (k == AS_NONE || k >= g->nstacks)
		return no_frames_group(g, i);
	if (g->stack_gid[k] != AS_NONE)
		return g->stack_gid[k];
	const char *text = as_trace_stack_text(g->t, k);
	size_t n = strlen(text);
	if (g->o.by == AS_GROUP_FRAME || g->o.by == AS_GROUP_LINE) {
		const char *at;
		size_t len;
		uint32_t j;
		if (!anchor(g, text, &j)) {
			static const char other[] = "(no frame in the file)";
			return g->stack_gid[k] =
				       group_of(g, other, sizeof(other) - 1, true);
		}
		if (as_x_frame_at(text, j, &at, &len)) {
			text = at;
			n = len;
		}
	}
	return g->stack_gid[k] = group_of(g, text, n, true);
}

static uint32_t category_group(struct grouper *g, uint32_t i,
			       struct as_x_verdict *v)
{
	as_x_cat_of(g->cat, i, v);
	if (g->cat_gid[v->cat] == AS_NONE) {
		const char *name = as_x_cat_name(g->cat, v->cat);
		g->cat_gid[v->cat] = group_of(g, name, strlen(name), true);
	}
	return g->cat_gid[v->cat];
}

static void add_bytes(uint64_t *to, uint64_t n)
{
	*to = n > UINT64_MAX - *to ? UINT64_MAX : *to + n;
}

int as_x_grouper_add(struct grouper *g, uint32_t i)
{
	uint64_t sz = g->t->buffers[i].size;
	return as_x_grouper_add_n(g, i, sz, 1, sz);
}

int as_x_grouper_add_n(struct grouper *g, uint32_t i, uint64_t bytes,
		       uint64_t count, uint64_t largest)
{
	uint32_t gid;
	struct as_x_verdict v = {0};
	if (g->o.by == AS_GROUP_STACK || g->o.by == AS_GROUP_FRAME ||
	    g->o.by == AS_GROUP_LINE) {
		gid = stack_group(g, i);
	} else if (g->o.by == AS_GROUP_CATEGORY) {
		gid = category_group(g, i, &v);
	} else {
		char key[512];
		as_trace_group(g->t, i, g->o.by, key, sizeof(key));
		gid = group_of(g, key, strlen(key), false);
	}
	if (gid == AS_NONE)
		return AS_ENOMEM;
	struct acc *a = &g->g[gid];
	add_bytes(&a->bytes, bytes);
	a->count += count;
	if (a->buffer == AS_NONE || largest > a->largest) {
		a->largest = largest;
		a->buffer = i;
	}
	if (a->ev) {
		struct evacc *e = &a->ev[v.why];
		add_bytes(&e->bytes, bytes);
		e->count += count;
		if (!e->any || largest > e->largest) {
			e->any = true;
			e->largest = largest;
			e->at = v.at;
			e->len = v.len;
		}
	}
	return AS_OK;
}

static int cmp_key(const struct acc *x, const struct acc *y)
{
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static bool by_bytes(uint32_t a, uint32_t b, const void *ctx)
{
	const struct acc *x = (const struct acc *)ctx + a,
			 *y = (const struct acc *)ctx + b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes;
	if (x->count != y->count)
		return x->count > y->count;
	return cmp_key(x, y) < 0;
}

static bool by_largest(uint32_t a, uint32_t b, const void *ctx)
{
	const struct acc *x = (const struct acc *)ctx + a,
			 *y = (const struct acc *)ctx + b;
	if (x->largest != y->largest)
		return x->largest > y->largest;
	return by_bytes(a, b, ctx);
}

/* Frames [at, len) of n into a new array of copies in e's arena. */
static int copy_frames(struct as_explain *e, const char *const *at,
		       const size_t *len, uint32_t n, const char ***out,
		       uint32_t *nout)
{
	*out = calloc((size_t)n + 1, sizeof(**out));
	if (!*out)
		return AS_ENOMEM;
	for (uint32_t f = 0; f < n; f++) {
		if (!((*out)[f] = as_arena_dup(&e->priv->arena, at[f], len[f])))
			return AS_ENOMEM;
		*nout = f + 1;
	}
	return AS_OK;
}

/*
 * The group's representative frames, its largest buffer's: the top
 * frames without the allocator's; by frame and by line from the group's
 * frame outwards, and apart the frames above it (what it called: the
 * `frames` nearest it, innermost first).
 */
static int representative(const struct grouper *g, struct as_explain *e,
			  const struct acc *a, struct as_explain_group *x)
{
	const char *text = as_trace_buffer_frames(e->trace, a->buffer);
	uint32_t nf = g->o.frames < 64 ? g->o.frames : 64, k = 0, n = 0;
	const char *at[64], *p;
	size_t len[64], l;
	if (!text || (g->o.by != AS_GROUP_FRAME && g->o.by != AS_GROUP_LINE) ||
	    !anchor(g, text, &k)) {
		n = as_x_user_frames(text, nf, at, len);
		return copy_frames(e, at, len, n, &x->frames, &x->nframes);
	}
	/* By frame, from a user frame: its callers of the user's code. */
	bool py = as_x_python_stack(text), user_only = false;
	if (g->o.by == AS_GROUP_FRAME && as_x_frame_at(text, k, &p, &l))
		user_only = as_x_frame_kind(&g->fr, p, l, py) == AS_X_USER;
	for (uint32_t j = k; n < nf && as_x_frame_at(text, j, &p, &l); j++)
		if (l && (j == k || (user_only ? as_x_frame_kind(&g->fr, p, l, py) ==
							 AS_X_USER
					       : !as_x_is_machinery(p, l)))) {
			at[n] = p;
			len[n++] = l;
		}
	int err = copy_frames(e, at, len, n, &x->frames, &x->nframes);
	/* Above: the nf frames nearest the group's frame, innermost first. */
	n = 0;
	for (uint32_t j = k; j > 0 && n < nf; j--)
		if (as_x_frame_at(text, j - 1, &p, &l) && l &&
		    !as_x_is_machinery(p, l)) {
			at[n] = p;
			len[n++] = l;
		}
	for (uint32_t f = 0; f < n / 2; f++) {
		const char *tp = at[f];
		size_t tl = len[f];
		at[f] = at[n - 1 - f];
		len[f] = len[n - 1 - f];
		at[n - 1 - f] = tp;
		len[n - 1 - f] = tl;
	}
	if (!err)
		err = copy_frames(e, at, len, n, &x->above, &x->nabove);
	return err;
}

/* By category: its rules, most bytes first, each with its example. */
static int evidence(struct as_explain *e,
		    const struct acc *a, struct as_explain_group *x)
{
	x->evidence = calloc(AS_X_WHY_COUNT, sizeof(*x->evidence));
	if (!x->evidence)
		return AS_ENOMEM;
	for (int w = 0; w < AS_X_WHY_COUNT; w++) {
		const struct evacc *v = &a->ev[w];
		if (!v->count)
			continue;
		struct as_explain_evidence *d = &x->evidence[x->nevidence];
		*d = (struct as_explain_evidence){.bytes = v->bytes,
						  .count = v->count};
		d->rule = as_x_reason_text((enum as_x_why)w);
		if (v->at && !(d->example = as_arena_dup(&e->priv->arena, v->at,
							 v->len)))
			return AS_ENOMEM;
		/* Insert by bytes (a dozen at most). */
		for (uint32_t j = x->nevidence; j > 0 &&
		     x->evidence[j - 1].bytes < x->evidence[j].bytes; j--) {
			struct as_explain_evidence t = x->evidence[j];
			x->evidence[j] = x->evidence[j - 1];
			x->evidence[j - 1] = t;
		}
		x->nevidence++;
	}
	return AS_OK;
}

int as_x_grouper_list(struct grouper *g, struct as_explain *e, bool largest,
		      struct as_explain_list *out)
{
	memset(out, 0, sizeof(*out));
	if (!e->priv->looked) {
		e->nothing_to_group = as_x_nothing_to_group(e->trace, &e->opts);
		e->priv->looked = true;
	}
	uint32_t *ord = malloc(sizeof(*ord) * ((size_t)g->ng + 1));
	if (!ord)
		return AS_ENOMEM;
	for (uint32_t k = 0; k < g->ng; k++) {
		ord[k] = k;
		out->bytes = g->g[k].bytes > UINT64_MAX - out->bytes
				     ? UINT64_MAX
				     : out->bytes + g->g[k].bytes;
		out->count += g->g[k].count;
	}
	if (as_sort_u32(ord, g->ng, largest ? by_largest : by_bytes, g->g)) {
		free(ord);
		return AS_ENOMEM;
	}
	uint32_t top = g->o.top && g->o.top < g->ng ? g->o.top : g->ng;
	out->total_groups = g->ng;
	out->groups = calloc((size_t)top + 1, sizeof(*out->groups));
	int err = out->groups ? AS_OK : AS_ENOMEM;
	for (uint32_t j = 0; j < top && !err; j++) {
		const struct acc *a = &g->g[ord[j]];
		struct as_explain_group *x = &out->groups[j];
		x->bytes = a->bytes;
		x->count = a->count;
		x->largest = a->largest;
		x->buffer = a->buffer;
		x->key = as_arena_dup(&e->priv->arena, a->key, a->key_len);
		if (!x->key) {
			err = AS_ENOMEM;
			break;
		}
		err = representative(g, e, a, x);
		if (!err && a->ev)
			err = evidence(e, a, x);
		out->ngroups++;
	}
	for (uint32_t j = top; j < g->ng; j++) {
		out->other_bytes += g->g[ord[j]].bytes;
		out->other_count += g->g[ord[j]].count;
	}
	free(ord);
	return err;
}

/* A name that is an address: "0x7f3a#2", "7f3a", a snapshot's "b7f3a_0". */
static bool address_name(const char *s)
{
	if (!s)
		return true;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	else if (s[0] == 'b' && hex_digit(s[1]))
		s++;
	if (!hex_digit(*s))
		return false;
	while (hex_digit(*s))
		s++;
	if (*s == '#' || *s == '_')
		for (s++; *s >= '0' && *s <= '9'; s++)
			;
	return *s == 0;
}

const char *as_x_nothing_to_group(const struct as_trace *t,
				  const struct as_explain_options *o)
{
	switch (o->by) {
	case AS_GROUP_STACK:
	case AS_GROUP_FRAME:
	case AS_GROUP_LINE:
		if (!as_trace_stack_text(t, 0))
			return "this trace has no stack frames (--by prefix, "
			       "size or category group otherwise)";
		if (o->by == AS_GROUP_LINE) {
			struct grouper g = {.o = *o};
			const char *text, *at;
			size_t len;
			for (uint32_t k = 0; (text = as_trace_stack_text(t, k)); k++)
				for (uint32_t j = 0; as_x_frame_at(text, j, &at, &len);
				     j++)
					if (in_line_file(&g, at, len))
						return NULL;
			return "no frame of this trace is in that file";
		}
		return NULL;
	case AS_GROUP_STAGE:
		return t->nstages ? NULL
				  : "this trace has no annotation stages";
	case AS_GROUP_CONTEXT:
		for (uint32_t i = 0; i < t->nbuffers; i++)
			if (as_trace_buffer_context(t, i) ||
			    as_trace_buffer_metadata(t, i))
				return NULL;
		return "this trace has no compile contexts or user metadata";
	case AS_GROUP_PREFIX:
		for (uint32_t i = 0; i < t->nbuffers; i++)
			if (!address_name(as_trace_buffer_name(t, i)))
				return NULL;
		return "its buffer names are addresses, without structure";
	default:
		return NULL;
	}
}
