/*
 * Grouping buffers: by stack (its number, each number's text read once and
 * equal texts merged), by the top user frame, or by the text of
 * as_trace_group (annotation stage, context, name prefix, size class, the
 * buffer). Keys are hashed into an as_strmap; a group keeps its bytes,
 * count and largest buffer. Sorting the groups is O(g log g).
 *
 * A group's representative stack is its top user frames: the stack's
 * frames, innermost first, without the allocator's (malloc and its
 * family, operator new, the CUDA caching allocator, ATen's empty tensors,
 * CPython's allocators and its frame evaluation, heaptrack's own) and
 * without torch.nn.Module's call wrappers, which every module call has.
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_private.h"

struct acc {
	const char *key;        /* not NUL-terminated: key_len bytes */
	size_t key_len;
	uint64_t bytes, count, largest;
	uint32_t buffer;
};

struct grouper {
	const struct as_trace *t;
	struct as_explain_options o;
	struct as_strmap map;   /* key -> group */
	struct as_arena texts;  /* keys made here */
	uint32_t *stack_gid;    /* by stack number: its group, or AS_NONE */
	uint32_t nstacks;
	uint32_t none_gid;      /* buffers without frames (by stack/frame) */
	struct acc *g;
	uint32_t ng, cap;
	char *scratch;
	size_t capscratch;
};

/*
 * Frames the representative stack leaves out, matched in the frame's text
 * without its parameter lists (so that a parameter of type c10::Allocator
 * does not make a user's function the allocator's).
 */
static const char *const machinery[] = {
	"malloc", "calloc", "realloc", "memalign", "valloc", "aligned_alloc",
	"operator new", "CachingAllocator", "at::detail::", "at::empty",
	"at::native::empty", "at::_ops::empty", "_empty_generic",
	"_empty_strided", "empty_cuda", "wrapper_CUDA_memory_format_empty",
	"wrapper_CUDA_empty", "create_out", "set_output_raw_strided",
	"set_output_strided", "allocate_or_resize_outputs", "c10::impl::",
	"c10::Dispatcher", "c10::BoxedKernel", "c10::KernelFunction",
	"::redispatch", "PyMem_", "PyObject_Malloc",
	"PyObject_Calloc", "PyObject_Realloc", "_PyObject_GC_",
	"PyType_GenericAlloc", "_PyEval_EvalFrame", "heaptrack",
	"std::allocator", "new_allocator", "_M_allocate", "_M_create",
	"/torch/nn/modules/module.py", "\\torch\\nn\\modules\\module.py",
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

static bool is_machinery(const char *s, size_t n)
{
	char buf[1024];
	n = as_x_strip_params(s, n, buf, sizeof(buf));
	for (size_t k = 0; k < sizeof(machinery) / sizeof(machinery[0]); k++)
		if (strstr(buf, machinery[k]))
			return true;
	return false;
}

uint32_t as_x_user_frames(const char *text, uint32_t max, const char **at,
			  size_t *len)
{
	uint32_t n = 0;
	if (!text)
		return 0;
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		for (const char *p = text; *p && n < max;) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			if (l && (pass || !is_machinery(p, l))) {
				at[n] = p;
				len[n++] = l;
			}
			p += l + (nl != NULL);
		}
	}
	return n;
}

int as_x_grouper_create(const struct as_trace *t,
			const struct as_explain_options *o,
			struct grouper **out)
{
	struct grouper *g = calloc(1, sizeof(*g));
	if (!g)
		return AS_ENOMEM;
	g->t = t;
	g->o = *o;
	g->none_gid = AS_NONE;
	if (o->by == AS_GROUP_STACK || o->by == AS_GROUP_FRAME) {
		uint32_t n = 0;
		for (uint32_t k = 0; as_trace_stack_text(t, k); k++)
			n = k + 1;
		g->nstacks = n;
		g->stack_gid = malloc(sizeof(*g->stack_gid) * ((size_t)n + 1));
		if (!g->stack_gid) {
			free(g);
			return AS_ENOMEM;
		}
		for (uint32_t k = 0; k < n; k++)
			g->stack_gid[k] = AS_NONE;
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
	return g->ng++;
}

static uint32_t stack_group(struct grouper *g, uint32_t i)
{
	uint32_t k = as_trace_buffer_stack(g->t, i);
	if (k == AS_NONE || k >= g->nstacks) {
		if (g->none_gid == AS_NONE)
			g->none_gid = group_of(g, "(no frames)", 11, true);
		return g->none_gid;
	}
	if (g->stack_gid[k] != AS_NONE)
		return g->stack_gid[k];
	const char *text = as_trace_stack_text(g->t, k);
	size_t n = strlen(text);
	if (g->o.by == AS_GROUP_FRAME) {
		const char *at;
		size_t len;
		if (as_x_user_frames(text, 1, &at, &len) == 1) {
			text = at;
			n = len;
		}
	}
	return g->stack_gid[k] = group_of(g, text, n, true);
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
	if (g->o.by == AS_GROUP_STACK || g->o.by == AS_GROUP_FRAME) {
		gid = stack_group(g, i);
	} else {
		char key[512];
		as_trace_group(g->t, i, g->o.by, key, sizeof(key));
		gid = group_of(g, key, strlen(key), false);
	}
	if (gid == AS_NONE)
		return AS_ENOMEM;
	struct acc *a = &g->g[gid];
	a->bytes = bytes > UINT64_MAX - a->bytes ? UINT64_MAX : a->bytes + bytes;
	a->count += count;
	if (a->buffer == AS_NONE || largest > a->largest) {
		a->largest = largest;
		a->buffer = i;
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

int as_x_grouper_list(struct grouper *g, struct as_explain *e, bool largest,
		      struct as_explain_list *out)
{
	memset(out, 0, sizeof(*out));
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
	uint32_t nf = g->o.frames;
	for (uint32_t j = 0; j < top && !err; j++) {
		const struct acc *a = &g->g[ord[j]];
		struct as_explain_group *x = &out->groups[j];
		x->bytes = a->bytes;
		x->count = a->count;
		x->largest = a->largest;
		x->buffer = a->buffer;
		x->key = as_arena_dup(&e->priv->arena, a->key, a->key_len);
		const char *text = as_trace_buffer_frames(e->trace, a->buffer);
		const char *at[64];
		size_t len[64];
		uint32_t n = as_x_user_frames(text, nf < 64 ? nf : 64, at, len);
		x->frames = calloc((size_t)n + 1, sizeof(*x->frames));
		if (!x->key || !x->frames) {
			err = AS_ENOMEM;
			break;
		}
		for (uint32_t f = 0; f < n && !err; f++)
			if (!(x->frames[x->nframes++] =
				      as_arena_dup(&e->priv->arena, at[f], len[f])))
				err = AS_ENOMEM;
		out->ngroups++;
	}
	for (uint32_t j = top; j < g->ng; j++) {
		out->other_bytes += g->g[ord[j]].bytes;
		out->other_count += g->g[ord[j]].count;
	}
	free(ord);
	return err;
}
