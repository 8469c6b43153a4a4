/*
 * Shared by the JSON readers: a path locator (cJSON keeps no positions, so
 * a small scanner finds the line of the offending value by its path in
 * the original text, only when an error is reported), the error helper,
 * the integer reader and the parse step.
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

static uint64_t line_of(const char *text, size_t len, const struct as_jseg *path,
			int n)
{
	struct scan s = {text, text + len};
	for (int i = 0; i < n; i++)
		if (!step(&s, &path[i]))
			break;
	uint64_t line = 1;
	for (const char *q = text; q < s.p; q++)
		line += *q == '\n';
	return line;
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
	return line_of(c->text, c->len, path, n);
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
	int idx = c->path[n - 1].index;
	struct scan s = {c->walk.p, c->text + c->len};
	if (c->walk.p && idx > c->walk.index && same_parent(c, n)) {
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
	/* anywhere else: from the start, once */
	s = (struct scan){c->text, c->text + c->len};
	for (int i = 0; i < n; i++) {
		if (!step(&s, &c->path[i])) {
			c->walk.p = NULL;
			return as_json_line(c, NULL);
		}
	}
	c->walk.line = 1;
	for (const char *q = c->text; q < s.p; q++)
		c->walk.line += *q == '\n';
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
	return as_diag_set(c->diag, line_of(c->text, c->len, path, n),
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
	struct scan sc = {c->text, c->text + c->len};
	for (int i = 0; i < n; i++)
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

int as_json_get_range(const struct as_jctx *c, const cJSON *obj,
		      const char *field, bool required, uint64_t def,
		      uint64_t min, uint64_t max, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!v) {
		if (required)
			return as_json_fail(c, NULL, "missing field '%s'",
					    field);
		*out = def;
		return AS_OK;
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
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	*out = NULL;
	if (!v) {
		if (required)
			return as_json_fail(c, NULL, "missing field '%s'",
					    field);
		return AS_OK;
	}
	if (!cJSON_IsString(v))
		return as_json_fail(c, field, "expected a string");
	*out = v->valuestring;
	return AS_OK;
}

/* ---- Parsing ---- */

/*
 * One pass over the raw text before cJSON sees it, for what cJSON accepts
 * silently or reports badly: raw control bytes (a NUL cuts a name) and
 * \u0000 in strings, invalid UTF-8, nesting past AS_JSON_MAX_NEST,
 * numbers with leading zeros (00, -01: not JSON), and integers past 2^53
 * that a double would round. It keeps the path (raw
 * keys and indices) for its messages. Linear; tolerant of malformed JSON,
 * which cJSON then reports.
 */
struct pre_level {
	const char *key; /* objects: the current member's key, raw */
	size_t klen;
	uint32_t index;  /* arrays: the current element */
	bool obj;
};

#define PRE_PATH 32

static int pre_fail(const struct pre_level *st, int depth, uint64_t line,
		    struct as_diag *diag, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int pre_fail(const struct pre_level *st, int depth, uint64_t line,
		    struct as_diag *diag, const char *fmt, ...)
{
	char where[160];
	size_t used = 0;
	where[0] = 0;
	for (int i = 0; i < depth && i < PRE_PATH && used < sizeof(where);
	     i++) {
		int w;
		if (st[i].obj && st[i].key)
			w = snprintf(where + used, sizeof(where) - used,
				     "%s%.*s", used ? "." : "",
				     (int)(st[i].klen > 40 ? 40 : st[i].klen),
				     st[i].key);
		else if (!st[i].obj)
			w = snprintf(where + used, sizeof(where) - used,
				     "[%u]", st[i].index);
		else
			w = 0;
		if (w < 0)
			break;
		used += (size_t)w;
	}
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return as_diag_set(diag, line, AS_EPARSE, "%s%s%s", where,
			   *where ? ": " : "", msg);
}

/* Length of the UTF-8 sequence at s (1..4), or 0 when it is invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int prescan(const char *text, size_t len, bool exact_big,
		   struct as_diag *diag)
{
	const unsigned char *s = (const unsigned char *)text;
	struct pre_level st[PRE_PATH];
	int depth = 0;
	bool want_key = false;
	uint64_t line = 1;
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		struct pre_level *top =
			depth > 0 && depth <= PRE_PATH ? &st[depth - 1] : NULL;
		if (c == '\n') {
			line++;
			i++;
		} else if (c == '"') {
			size_t j = i + 1;
			while (j < len && s[j] != '"') {
				if (s[j] < 0x20)
					return pre_fail(st, depth, line, diag,
							"raw control byte 0x%02x "
							"in a string (write it "
							"as \\u%04x)",
							s[j], s[j]);
				if (s[j] == '\\') {
					if (j + 5 < len && s[j + 1] == 'u' &&
					    memcmp(s + j + 2, "0000", 4) == 0)
						return pre_fail(
							st, depth, line, diag,
							"\\u0000 (NUL) in a "
							"string");
					j += j + 1 < len && s[j + 1] >= 0x20
						     ? 2
						     : 1;
					continue;
				}
				size_t n = utf8_len(s + j, len - j);
				if (n == 0)
					return pre_fail(st, depth, line, diag,
							"invalid UTF-8 in a "
							"string");
				j += n;
			}
			if (want_key && top && top->obj) {
				top->key = text + i + 1;
				top->klen = j - i - 1;
				want_key = false;
			}
			i = j + 1;
		} else if (c == '{' || c == '[') {
			if (++depth > AS_JSON_MAX_NEST)
				return pre_fail(st, PRE_PATH, line, diag,
						"nesting deeper than %d",
						AS_JSON_MAX_NEST);
			if (depth <= PRE_PATH)
				st[depth - 1] = (struct pre_level){
					.obj = c == '{'};
			want_key = c == '{';
			i++;
		} else if (c == '}' || c == ']') {
			if (depth > 0)
				depth--;
			want_key = false;
			i++;
		} else if (c == ',') {
			if (top && !top->obj)
				top->index++;
			want_key = top && top->obj;
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t j = i + (c == '-'), d0 = j;
			while (j < len && s[j] >= '0' && s[j] <= '9')
				j++;
			size_t digits = j - d0;
			bool integer = j >= len || !strchr(".eE", s[j]);
			while (j < len && strchr("0123456789+-.eE", s[j]))
				j++;
			if (digits > 1 && s[d0] == '0')
				return pre_fail(st, depth, line, diag,
						"%.*s has a leading zero, which "
						"JSON numbers do not allow",
						(int)(j - i > 24 ? 24 : j - i),
						text + i);
			uint64_t v;
			if (!exact_big && integer && digits > 0 &&
			    (!as_parse_u64(text + d0, digits, &v) ||
			     v > ((uint64_t)1 << 53)))
				return pre_fail(st, depth, line, diag,
						"%.*s is past 2^53, where JSON "
						"numbers lose digits: write it "
						"as a decimal string",
						(int)(digits > 24 ? 24 : digits),
						text + d0);
			i = j;
		} else if (c == 0) {
			return pre_fail(st, depth, line, diag,
					"NUL byte outside a string");
		} else {
			i++;
		}
	}
	return AS_OK;
}

/* Duplicate keys anywhere in the tree, each object checked once. */
static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int dup_keys(struct as_jctx *c, const cJSON *v)
{
	const cJSON *it;
	int err, n = 0;
	if (cJSON_IsObject(v)) {
		cJSON_ArrayForEach(it, v) n++;
		const char *dup = NULL;
		if (n <= 16) {
			for (const cJSON *a = v->child; a && !dup; a = a->next)
				for (const cJSON *b = a->next; b; b = b->next)
					if (strcmp(a->string, b->string) == 0) {
						dup = a->string;
						break;
					}
		} else {
			const char **keys = malloc((size_t)n * sizeof(*keys));
			if (!keys)
				return AS_ENOMEM;
			int k = 0;
			cJSON_ArrayForEach(it, v) keys[k++] = it->string;
			qsort(keys, (size_t)n, sizeof(*keys), by_str);
			for (k = 1; k < n && !dup; k++)
				if (strcmp(keys[k - 1], keys[k]) == 0)
					dup = keys[k];
			free(keys);
		}
		if (dup)
			return as_json_fail(c, dup, "duplicate key '%s'", dup);
		cJSON_ArrayForEach(it, v)
		{
			as_json_push(c, it->string, 0);
			if ((err = dup_keys(c, it)))
				return err;
			c->depth--;
		}
	} else if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(it, v)
		{
			as_json_push(c, NULL, n++);
			if ((err = dup_keys(c, it)))
				return err;
			c->depth--;
		}
	}
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

int as_json_parse(struct as_jctx *c, cJSON **out)
{
	const char *data = c->text;
	size_t len = c->len;
	struct as_diag *diag = c->diag;
	int err = prescan(data, len, c->exact_big, diag);
	if (err)
		return err;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
	if (root) {
		const char *q = end && end >= data && end <= data + len
					? end
					: data + len;
		uint64_t line = 1;
		while (q < data + len && strchr(" \t\r\n", *q))
			q++;
		if (q < data + len) {
			for (const char *k = data; k < q; k++)
				line += *k == '\n';
			cJSON_Delete(root);
			return as_diag_set(diag, line, AS_EPARSE,
					   "trailing data after the JSON "
					   "value");
		}
		err = dup_keys(c, root);
		c->depth = 0;
		if (err) {
			if (err == AS_ENOMEM)
				as_diag_set(diag, 0, err, "out of memory");
			cJSON_Delete(root);
			return err;
		}
		*out = root;
		return AS_OK;
	}
	const char *stop = end && end >= data && end <= data + len
				   ? end
				   : data + len;
	/* Stopped on the last character that is not space: cut short. */
	const char *last = data + len;
	while (last > data && strchr(" \t\r\n", last[-1]))
		last--;
	bool truncated = stop + 1 >= last;
	if (truncated)
		stop = data + len;
	uint64_t line = 1;
	for (const char *q = data; q < stop; q++)
		line += *q == '\n';
	if (truncated) {
		return as_diag_set(diag, line, AS_EPARSE,
				   "truncated JSON (unexpected end of input)");
	}
	/* data need not be NUL-terminated: copy what is quoted. */
	char near[24];
	size_t k = 0;
	for (const char *q = stop; q < data + len && k < 20; q++)
		near[k++] = (*q >= ' ' && *q < 127) ? *q : ' ';
	near[k] = 0;
	return as_diag_set(diag, line, AS_EPARSE, "malformed JSON near '%s'",
			   near);
}
