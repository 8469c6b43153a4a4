/*
 * Shared by the JSON readers: the reading context (struct as_jctx), a path
 * locator (cJSON keeps no positions, so a small scanner finds the line of
 * the offending value by its path in the original text, or in the piece of
 * it a streamed reader holds, only when an error is reported), the error
 * helper and the readers of a member's value (integers, strings, the keys an
 * object may have). How a text becomes a cJSON tree is parse.c's.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "formats/json/json.h"

#define MAX_DEPTH 64

/* ---- Locating a value by path in the text ---- */

struct scan {
	const char *p, *end;
};

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
				 *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool skip_string(struct scan *s, const char **start, size_t *len)
{
	if (s->p >= s->end || *s->p != '"')
		return false;
	const char *a = ++s->p;
	while (s->p < s->end && *s->p != '"')
		s->p += (*s->p == '\\') ? 2 : 1;
	if (s->p >= s->end)
		return false;
	if (start) {
		*start = a;
		*len = (size_t)(s->p - a);
	}
	s->p++;
	return true;
}

static bool skip_value(struct scan *s, int depth)
{
	ws(s);
	if (s->p >= s->end || depth > MAX_DEPTH)
		return false;
	char c = *s->p;
	if (c == '"')
		return skip_string(s, NULL, NULL);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		s->p++;
		ws(s);
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return true;
		}
		for (;;) {
			if (c == '{') {
				ws(s);
				if (!skip_string(s, NULL, NULL))
					return false;
				ws(s);
				if (s->p >= s->end || *s->p++ != ':')
					return false;
			}
			if (!skip_value(s, depth + 1))
				return false;
			ws(s);
			if (s->p >= s->end)
				return false;
			if (*s->p == close) {
				s->p++;
				return true;
			}
			if (*s->p++ != ',')
				return false;
		}
	}
	while (s->p < s->end && !strchr(",}] \t\r\n", *s->p))
		s->p++;
	return true;
}

/* Move to the value at `seg` inside the value at s->p. */
static bool step(struct scan *s, const struct as_jseg *seg)
{
	ws(s);
	if (s->p >= s->end)
		return false;
	if (seg->key) {
		if (*s->p++ != '{')
			return false;
		for (;;) {
			const char *k;
			size_t kl;
			ws(s);
			if (!skip_string(s, &k, &kl))
				return false;
			ws(s);
			if (s->p >= s->end || *s->p++ != ':')
				return false;
			ws(s);
			if (kl == strlen(seg->key) &&
			    memcmp(k, seg->key, kl) == 0)
				return true;
			if (!skip_value(s, 1))
				return false;
			ws(s);
			if (s->p >= s->end || *s->p++ != ',')
				return false;
		}
	}
	if (*s->p++ != '[')
		return false;
	for (int i = 0; i < seg->index; i++) {
		if (!skip_value(s, 1))
			return false;
		ws(s);
		if (s->p >= s->end || *s->p++ != ',')
			return false;
	}
	ws(s);
	return true;
}

static bool seg_eq(const struct as_jseg *a, const struct as_jseg *b)
{
	if (!a->key || !b->key)
		return !a->key && !b->key && a->index == b->index;
	return strcmp(a->key, b->key) == 0;
}

/*
 * The text that holds the value at path[0..n): the whole document, the
 * streamed value at path[0..base), or a root member's copy. Sets *s to it
 * (empty when no text holds it) and *line to its first line; returns how
 * many steps of path it already covers.
 */
static int locate(const struct as_jctx *c, const struct as_jseg *path, int n,
		  struct scan *s, uint64_t *line)
{
	*s = (struct scan){NULL, NULL};
	*line = 1;
	if (c->text && c->base > 0 && n >= c->base) {
		int i = 0;
		while (i < c->base && seg_eq(&path[i], &c->path[i]))
			i++;
		if (i == c->base) {
			*s = (struct scan){c->text, c->text + c->len};
			*line = c->line0;
			return c->base;
		}
	}
	if (!c->members) {
		*s = (struct scan){c->text, c->text + c->len};
		return 0;
	}
	if (n < 1 || !path[0].key)
		return n;
	for (size_t m = 0; m < c->nmembers; m++) {
		const struct as_jmember *mb = &c->members[m];
		if (strcmp(mb->key, path[0].key) != 0)
			continue;
		*line = mb->line;
		if (!mb->text)
			return n;
		*s = (struct scan){mb->text, mb->text + mb->len};
		return 1;
	}
	return n;
}

/* Step s along path[from..n); the line it stops on, from `line`. */
static uint64_t walk_lines(struct scan *s, const struct as_jseg *path,
			   int from, int n, uint64_t line)
{
	const char *start = s->p;
	if (!start)
		return line;
	for (int i = from; i < n; i++)
		if (!step(s, &path[i]))
			break;
	for (const char *q = start; q < s->p; q++)
		line += *q == '\n';
	return line;
}

static uint64_t line_of(const struct as_jctx *c, const struct as_jseg *path,
			int n)
{
	struct scan s;
	uint64_t line;
	int from = locate(c, path, n, &s, &line);
	return walk_lines(&s, path, from, n, line);
}

/* "events[3].size": a path in words for messages. */
static void path_text(const struct as_jseg *path, int n, char *where, size_t len)
{
	size_t used = 0;
	where[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		int w = path[i].key ? snprintf(where + used, len - used, "%s%s",
					       i ? "." : "", path[i].key)
				    : snprintf(where + used, len - used,
					       "[%d]", path[i].index);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* ---- The context ---- */

void as_json_push(struct as_jctx *c, const char *key, int index)
{
	if (c->depth < AS_JPATH_MAX)
		c->path[c->depth] = (struct as_jseg){key, index};
	c->depth++;
}

/* The path, plus `field`, into path[] (AS_JPATH_MAX + 1); its length. */
static int full_path(const struct as_jctx *c, const char *field,
		     struct as_jseg *path)
{
	int n = c->depth < AS_JPATH_MAX ? c->depth : AS_JPATH_MAX;
	memcpy(path, c->path, (size_t)n * sizeof(*path));
	if (field)
		path[n++] = (struct as_jseg){field, 0};
	return n;
}

uint64_t as_json_line(const struct as_jctx *c, const char *field)
{
	struct as_jseg path[AS_JPATH_MAX + 1];
	int n = full_path(c, field, path);
	return line_of(c, path, n);
}

static bool same_parent(const struct as_jctx *c, int n)
{
	for (int i = 0; i < n - 1; i++)
		if (c->walk.parent[i].key != c->path[i].key ||
		    c->walk.parent[i].index != c->path[i].index)
			return false;
	return c->walk.depth == n;
}

uint64_t as_json_elem_line(struct as_jctx *c)
{
	int n = c->depth;
	if (n < 1 || n > AS_JPATH_MAX || c->path[n - 1].key)
		return as_json_line(c, NULL);
	struct scan t;
	uint64_t line0;
	int from = locate(c, c->path, n, &t, &line0);
	if (from >= n || !t.p)
		return line0; /* a streamed element: its own text */
	int idx = c->path[n - 1].index;
	struct scan s = {c->walk.p, t.end};
	if (c->walk.p && c->walk.text == t.p && idx > c->walk.index &&
	    same_parent(c, n)) {
		/* a later element: step over those before it and their commas */
		while (c->walk.index < idx && skip_value(&s, 1)) {
			ws(&s);
			if (s.p >= s.end || *s.p != ',')
				break;
			s.p++;
			ws(&s);
			for (const char *q = c->walk.p; q < s.p; q++)
				c->walk.line += *q == '\n';
			c->walk.p = s.p;
			c->walk.index++;
		}
		if (c->walk.index == idx)
			return c->walk.line;
	}
	/* anywhere else: from the start of its text, once */
	s = t;
	for (int i = from; i < n; i++) {
		if (!step(&s, &c->path[i])) {
			c->walk.p = NULL;
			return as_json_line(c, NULL);
		}
	}
	c->walk.line = line0;
	for (const char *q = t.p; q < s.p; q++)
		c->walk.line += *q == '\n';
	c->walk.text = t.p;
	c->walk.p = s.p;
	c->walk.index = idx;
	c->walk.depth = n;
	memcpy(c->walk.parent, c->path, (size_t)(n - 1) * sizeof(*c->path));
	return c->walk.line;
}

int as_json_fail(const struct as_jctx *c, const char *field,
		 const char *fmt, ...)
{
	struct as_jseg path[AS_JPATH_MAX + 1];
	int n = full_path(c, field, path);
	char where[160];
	path_text(path, n, where, sizeof(where));
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return as_diag_set(c->diag, line_of(c, path, n),
			   AS_EPARSE, "%s%s%s", where, *where ? ": " : "",
			   msg);
}

/* ---- Values ---- */

/* The decimal digits of the number at path.field in the text, exactly. */
static bool raw_u64(const struct as_jctx *c, const char *field,
		    uint64_t *out)
{
	struct as_jseg path[AS_JPATH_MAX + 1];
	int n = full_path(c, field, path);
	struct scan sc;
	uint64_t line;
	int from = locate(c, path, n, &sc, &line);
	if (!sc.p)
		return false;
	for (int i = from; i < n; i++)
		if (!step(&sc, &path[i]))
			return false;
	ws(&sc);
	size_t k = 0;
	while (sc.p + k < sc.end && sc.p[k] >= '0' && sc.p[k] <= '9')
		k++;
	if (sc.p + k < sc.end && strchr(".eE", sc.p[k]))
		return false;
	return as_parse_u64(sc.p, k, out);
}

int as_json_u64(const struct as_jctx *c, const cJSON *v, const char *field,
		uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t u;
	if (cJSON_IsString(v)) {
		if (!as_parse_u64(v->valuestring, strlen(v->valuestring), &u))
			return as_json_fail(c, field, "'%s' is not a "
						      "non-negative integer "
						      "(or overflows 64 bits)",
					    v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (c->exact_big && (!isfinite(d) || d >= 9007199254740992.0)) {
			/* Past 2^53 the double has lost digits. */
			if (!raw_u64(c, field, &u))
				return as_json_fail(c, field,
						    "expected a non-negative "
						    "integer (up to 2^64 - 1)");
		} else if (!isfinite(d) || d < 0 || d != floor(d)) {
			return as_json_fail(c, field, "expected a non-negative "
						      "integer");
		} else if (d > 9007199254740992.0) {
			return as_json_fail(c, field, "value too large for a "
						      "JSON number: write it "
						      "as a decimal string");
		} else {
			u = (uint64_t)d;
		}
	} else {
		return as_json_fail(c, field, "expected a number");
	}
	if (u < min || u > max)
		return as_json_fail(c, field, "%llu is out of range [%llu, "
					      "%llu]",
				    (unsigned long long)u,
				    (unsigned long long)min,
				    (unsigned long long)max);
	*out = u;
	return AS_OK;
}

/* obj.field into *v, NULL when absent; the failure when it is required. */
static int member(const struct as_jctx *c, const cJSON *obj,
		  const char *field, bool required, const cJSON **v)
{
	*v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!*v && required)
		return as_json_fail(c, NULL, "missing field '%s'", field);
	return AS_OK;
}

int as_json_get_range(const struct as_jctx *c, const cJSON *obj,
		      const char *field, bool required, uint64_t def,
		      uint64_t min, uint64_t max, uint64_t *out)
{
	const cJSON *v;
	int err = member(c, obj, field, required, &v);
	if (err || !v) {
		if (!err)
			*out = def;
		return err;
	}
	return as_json_u64(c, v, field, min, max, out);
}

int as_json_get_u64(const struct as_jctx *c, const cJSON *obj,
		    const char *field, bool required, uint64_t def,
		    uint64_t *out)
{
	return as_json_get_range(c, obj, field, required, def, 0, UINT64_MAX,
				 out);
}

int as_json_get_string(const struct as_jctx *c, const cJSON *obj,
		       const char *field, bool required, const char **out)
{
	const cJSON *v;
	*out = NULL;
	int err = member(c, obj, field, required, &v);
	if (err || !v)
		return err;
	if (!cJSON_IsString(v))
		return as_json_fail(c, field, "expected a string");
	*out = v->valuestring;
	return AS_OK;
}

int as_json_keys(const struct as_jctx *c, const cJSON *obj,
		 const char *const *allowed)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		size_t k = 0;
		while (allowed[k] && strcmp(allowed[k], it->string) != 0)
			k++;
		if (allowed[k])
			continue;
		char list[240];
		size_t used = 0;
		list[0] = 0;
		for (k = 0; allowed[k] && used < sizeof(list); k++) {
			int w = snprintf(list + used, sizeof(list) - used,
					 "%s%s", k ? ", " : "", allowed[k]);
			if (w < 0)
				break;
			used += (size_t)w;
		}
		return as_json_fail(c, it->string, "unknown key '%s' (expected "
						   "%s)",
				    it->string, list);
	}
	return AS_OK;
}

/* path read whole into *out (NUL-terminated, the caller's) and *n bytes. */
static int read_file(const char *path, char **out, size_t *n,
		     struct as_diag *diag)
{
	/* "-" is standard input; a file never blocks (a FIFO) and is
	 * refused unless regular (a directory, /dev/zero). */
	FILE *f = stdin;
	if (strcmp(path, "-") != 0) {
		int oerr = as_open_input(path, &f, diag);
		if (oerr)
			return oerr;
	}
	size_t len = 0, cap = 1 << 16;
	char *data = malloc(cap);
	while (data) {
		len += fread(data + len, 1, cap - len - 1, f);
		if (len < cap - 1)
			break;
		char *grown = realloc(data, cap * 2);
		if (!grown) {
			free(data);
			data = NULL;
			break;
		}
		data = grown;
		cap *= 2;
	}
	bool bad = ferror(f);
	if (f != stdin)
		fclose(f);
	if (!data)
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	if (bad) {
		free(data);
		return as_diag_set(diag, 0, AS_EIO, "read error");
	}
	data[len] = 0;
	*out = data;
	*n = len;
	return AS_OK;
}

int as_json_load(const char *path, as_json_text_fn parse, void *ctx,
		 struct as_diag *diag)
{
	struct as_diag local;
	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", path);
	char *data = NULL;
	size_t len = 0;
	int err = read_file(path, &data, &len, diag);
	if (err)
		return err;
	err = parse(ctx, data, len, diag);
	free(data);
	return err;
}
