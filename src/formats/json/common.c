/*
 * Shared by the JSON readers: a path locator (cJSON keeps no positions, so
 * a small scanner finds the line of the offending value by its path in
 * the original text, or in the piece of it a streamed reader holds, only
 * when an error is reported), the error helper, the integer reader, the
 * window a streamed text is read through, the checks made before cJSON
 * (over a whole text or a streamed one) and the parse step.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "formats/formats.h"
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
	char key[40]; /* objects: the current member's key, raw, cut */
	size_t klen;  /* its whole length */
	bool has_key;
	uint32_t index; /* arrays: the current element */
	bool obj;
};

#define PRE_PATH 32
#define PRE_KEY 40

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
		if (st[i].obj && st[i].has_key)
			w = snprintf(where + used, sizeof(where) - used,
				     "%s%.*s", used ? "." : "",
				     (int)(st[i].klen > PRE_KEY ? PRE_KEY
								: st[i].klen),
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

/* The first window; tests build with a tiny one to cross every boundary. */
#ifndef AS_JSON_WINDOW
#define AS_JSON_WINDOW (256u << 10)
#endif

int as_jwin_more(struct as_jwin *w, uint64_t line, struct as_diag *diag)
{
	if (w->eof)
		return AS_OK;
	if (!w->src) {
		w->eof = true;
		return AS_OK;
	}
	size_t keep = w->mark < w->pos ? w->mark : w->pos;
	if (keep > 0) {
		memmove(w->own, w->own + keep, w->have - keep);
		w->have -= keep;
		w->pos -= keep;
		if (w->mark != SIZE_MAX)
			w->mark -= keep;
		w->off += keep;
	}
	if (w->have == w->cap) { /* one value fills the window */
		if (w->cap >= w->limit)
			return as_diag_set(diag, line, AS_EPARSE,
					   "a JSON value longer than %zu MiB "
					   "(decompressed)",
					   w->limit >> 20);
		size_t cap = w->cap ? w->cap : AS_JSON_WINDOW;
		cap = w->cap && cap <= w->limit / 2 ? cap * 2
			: w->cap		    ? w->limit
						    : cap;
		char *n = realloc(w->own, cap);
		if (!n)
			return as_diag_set(diag, line, AS_ENOMEM,
					   "out of memory");
		w->own = n;
		w->cap = cap;
	}
	size_t got;
	int err = as_source_read(w->src, w->own + w->have, w->cap - w->have,
				 &got, diag);
	if (err)
		return err;
	w->buf = w->own;
	w->have += got;
	w->eof = got == 0;
	return AS_OK;
}

/*
 * cJSON's grammar, followed token by token beside the checks, to tell
 * whether the whole text parses (a streamed reader then reports syntax
 * faults before anything else, as a whole parse does). `bad` sticks.
 */
enum { G_VALUE, G_FIRST_VALUE, G_FIRST_KEY, G_KEY, G_COLON, G_NEXT, G_END };

struct gram {
	unsigned char open[AS_JSON_MAX_NEST + 1];
	int depth, state;
	bool bad;
};

static void g_value(struct gram *g)
{
	if (g->state == G_VALUE || g->state == G_FIRST_VALUE)
		g->state = g->depth ? G_NEXT : G_END;
	else
		g->bad = true;
}

static void g_string(struct gram *g)
{
	if (g->state == G_FIRST_KEY || g->state == G_KEY)
		g->state = G_COLON;
	else
		g_value(g);
}

static void g_open(struct gram *g, unsigned char c)
{
	if ((g->state != G_VALUE && g->state != G_FIRST_VALUE) ||
	    g->depth > AS_JSON_MAX_NEST) {
		g->bad = true;
		return;
	}
	g->open[g->depth++] = c;
	g->state = c == '{' ? G_FIRST_KEY : G_FIRST_VALUE;
}

static void g_close(struct gram *g, unsigned char c)
{
	unsigned char o = c == '}' ? '{' : '[';
	if (g->depth == 0 || g->open[g->depth - 1] != o ||
	    (g->state != G_NEXT &&
	     g->state != (c == '}' ? G_FIRST_KEY : G_FIRST_VALUE))) {
		g->bad = true;
		return;
	}
	g->depth--;
	g->state = g->depth ? G_NEXT : G_END;
}

static void g_sep(struct gram *g, unsigned char c)
{
	if (c == ',' && g->state == G_NEXT)
		g->state = g->open[g->depth - 1] == '{' ? G_KEY : G_VALUE;
	else if (c == ':' && g->state == G_COLON)
		g->state = G_VALUE;
	else
		g->bad = true;
}

/* Whether the escape at s (a backslash, n bytes on) is one cJSON takes
 * for sure: surrogates count as unsure. */
static bool escape_ok(const unsigned char *s, size_t n)
{
	if (n >= 2 && strchr("bfnrt\"\\/", s[1]) && s[1])
		return true;
	if (n < 6 || s[1] != 'u')
		return false;
	unsigned code = 0;
	for (int k = 2; k < 6; k++) {
		unsigned char h = s[k];
		unsigned d = h >= '0' && h <= '9'   ? h - '0'
			     : h >= 'a' && h <= 'f' ? h - 'a' + 10
			     : h >= 'A' && h <= 'F' ? h - 'A' + 10
						    : 16;
		if (d == 16)
			return false;
		code = code * 16 + d;
	}
	return code < 0xd800 || code > 0xdfff;
}

/* A number as cJSON reads it (strtod over at most 63 bytes of
 * 0-9+-.eE): the state after byte d, -1 when it cannot be one. */
static int num_step(int st, unsigned char d)
{
	bool digit = d >= '0' && d <= '9';
	switch (st) {
	case 0: /* after the sign */
		return digit ? 1 : d == '.' ? 2 : -1;
	case 1: /* integer digits */
		return digit ? 1 : d == '.' ? 3 : d == 'e' || d == 'E' ? 4 : -1;
	case 2: /* a point before any digit */
		return digit ? 3 : -1;
	case 3: /* fraction digits */
		return digit ? 3 : d == 'e' || d == 'E' ? 4 : -1;
	case 4: /* e */
		return digit ? 6 : d == '+' || d == '-' ? 5 : -1;
	case 5: /* its sign */
	case 6: /* exponent digits */
		return digit ? 6 : -1;
	}
	return -1;
}

static bool blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == 0;
}

int as_json_prescan(struct as_jwin *w, bool exact_big, struct as_jtotals *tot,
		    struct as_diag *diag)
{
	struct pre_level st[PRE_PATH];
	int depth = 0, err;
	bool want_key = false, trace_events = false, format_key = false;
	uint64_t line = 1, last = 0;
	uint32_t root_keys = 0;
	struct gram g = {.state = G_VALUE};
	if ((err = as_jwin_need(w, 3, line, diag)))
		return err;
	/*
	 * formats.c took the one byte order mark a file may start with;
	 * cJSON would skip a second, which the other formats refuse.
	 */
	if (w->have - w->pos >= 3 &&
	    memcmp(w->buf + w->pos, "\xef\xbb\xbf", 3) == 0)
		return pre_fail(st, 0, line, diag,
				"a second byte order mark (U+FEFF) at the "
				"start: a file may start with one");
	for (;;) {
		if ((err = as_jwin_need(w, 8, line, diag)))
			return err;
		if (w->pos >= w->have)
			break;
		const unsigned char *s = (const unsigned char *)w->buf;
		size_t i = w->pos;
		unsigned char c = s[i];
		struct pre_level *top =
			depth > 0 && depth <= PRE_PATH ? &st[depth - 1] : NULL;
		if (c == '\n') {
			line++;
			w->pos++;
		} else if (c == '"') {
			bool key = want_key && top && top->obj;
			char kbuf[PRE_KEY];
			size_t klen = 0;
			w->pos++;
			for (;;) {
				if ((err = as_jwin_need(w, 6, line, diag)))
					return err;
				s = (const unsigned char *)w->buf;
				size_t j = w->pos, len = w->have;
				if (j >= len || s[j] == '"')
					break;
				if (s[j] < 0x20)
					return pre_fail(st, depth, line, diag,
							"raw control byte 0x%02x "
							"in a string (write it "
							"as \\u%04x)",
							s[j], s[j]);
				size_t n;
				if (s[j] == '\\') {
					g.bad |= !escape_ok(s + j, len - j);
					if (j + 5 < len && s[j + 1] == 'u' &&
					    memcmp(s + j + 2, "0000", 4) == 0)
						return pre_fail(
							st, depth, line, diag,
							"\\u0000 (NUL) in a "
							"string");
					n = j + 1 < len && s[j + 1] >= 0x20 ? 2
									     : 1;
				} else if ((n = utf8_len(s + j, len - j)) == 0) {
					return pre_fail(st, depth, line, diag,
							"invalid UTF-8 in a "
							"string");
				}
				for (size_t k = 0; key && k < n; k++)
					if (klen + k < PRE_KEY)
						kbuf[klen + k] = (char)s[j + k];
				klen += n;
				w->pos = j + n;
			}
			if (w->pos < w->have)
				g_string(&g);
			else
				g.bad = true; /* no closing quote */
			if (key) {
				memcpy(top->key, kbuf,
				       klen < PRE_KEY ? klen : PRE_KEY);
				top->klen = klen;
				top->has_key = true;
				want_key = false;
				root_keys += depth == 1;
				if (depth == 1 && klen == 11 &&
				    memcmp(kbuf, "traceEvents", 11) == 0)
					trace_events = true;
				if (depth == 1 && klen == 6 &&
				    memcmp(kbuf, "format", 6) == 0)
					format_key = true;
			}
			if (w->pos < w->have)
				w->pos++;
			last = w->off + w->pos;
		} else if (c == '{' || c == '[') {
			if (++depth > AS_JSON_MAX_NEST)
				return pre_fail(st, PRE_PATH, line, diag,
						"nesting deeper than %d",
						AS_JSON_MAX_NEST);
			if (depth <= PRE_PATH)
				st[depth - 1] = (struct pre_level){
					.obj = c == '{'};
			want_key = c == '{';
			g_open(&g, c);
			last = w->off + ++w->pos;
		} else if (c == '}' || c == ']') {
			if (depth > 0)
				depth--;
			want_key = false;
			g_close(&g, c);
			last = w->off + ++w->pos;
		} else if (c == ',') {
			if (top && !top->obj)
				top->index++;
			want_key = top && top->obj;
			g_sep(&g, c);
			last = w->off + ++w->pos;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			/* the first bytes of the number, for messages */
			char tok[25];
			size_t tn = 0, digits = 0, lead = c == '-';
			uint64_t v = 0;
			bool big = false, integer = true, in_digits = true;
			int num = 0;
			if (lead)
				tok[tn++] = '-', w->pos++;
			for (;;) {
				if ((err = as_jwin_need(w, 1, line, diag)))
					return err;
				if (w->pos >= w->have)
					break;
				unsigned char d = (unsigned char)w->buf[w->pos];
				if (in_digits && d >= '0' && d <= '9') {
					digits++;
					if (v > (UINT64_MAX - (d - '0')) / 10)
						big = true;
					v = v * 10 + (d - '0');
				} else if (in_digits) {
					in_digits = false;
					integer = !strchr(".eE", d);
					if (!strchr("0123456789+-.eE", d))
						break;
				} else if (!strchr("0123456789+-.eE", d)) {
					break;
				}
				if (tn < sizeof(tok))
					tok[tn] = (char)d;
				tn++;
				if (num >= 0)
					num = num_step(num, d);
				w->pos++;
				if (d)
					last = w->off + w->pos;
			}
			if (num == 1 || num == 3 || num == 6) /* and the sign */
				g_value(&g);
			g.bad |= !(num == 1 || num == 3 || num == 6) || tn > 63;
			size_t shown = tn < sizeof(tok) ? tn : sizeof(tok);
			if (digits > 1 && tok[lead] == '0')
				return pre_fail(st, depth, line, diag,
						"%.*s has a leading zero, which "
						"JSON numbers do not allow",
						(int)(shown > 24 ? 24 : shown),
						tok);
			if (!exact_big && integer && digits > 0 &&
			    (big || v > ((uint64_t)1 << 53)))
				return pre_fail(st, depth, line, diag,
						"%.*s is past 2^53, where JSON "
						"numbers lose digits: write it "
						"as a decimal string",
						(int)(digits > 24 ? 24 : digits),
						tok + lead);
		} else if (c == 0) {
			return pre_fail(st, depth, line, diag,
					"NUL byte outside a string");
		} else if (c == ':') {
			g_sep(&g, c);
			last = w->off + ++w->pos;
		} else if (c <= ' ') { /* blanks to cJSON; after the root, the
					 * trailing data check allows fewer */
			g.bad |= g.state == G_END && !strchr(" \t\r", c);
			w->pos++;
			if (!blank(c))
				last = w->off + w->pos;
		} else {
			/* a literal, or not JSON */
			static const char *const lits[] = {"true", "false",
							   "null"};
			size_t n = 1;
			int k = c == 't' ? 0 : c == 'f' ? 1 : c == 'n' ? 2 : -1;
			size_t l = k < 0 ? 0 : strlen(lits[k]);
			if (k >= 0 && w->have - i >= l &&
			    memcmp(s + i, lits[k], l) == 0) {
				g_value(&g);
				n = l;
			} else {
				g.bad = true;
			}
			w->pos += n;
			last = w->off + w->pos;
		}
	}
	if (tot)
		*tot = (struct as_jtotals){line, last, root_keys,
					   trace_events, format_key,
					   !g.bad && g.state == G_END};
	return AS_OK;
}

int as_json_syntax(struct as_jwin *w, size_t at, uint64_t line,
		   const struct as_jtotals *tot, struct as_diag *diag)
{
	if (w->off + at + 1 >= tot->last)
		return as_diag_set(diag, tot->lines, AS_EPARSE,
				   "truncated JSON (unexpected end of input)");
	char near[24];
	size_t k = 0;
	w->mark = at;
	int err = AS_OK;
	while (!err && w->have - w->mark < 20 && !w->eof)
		err = as_jwin_more(w, line, diag);
	if (err)
		return err;
	for (size_t q = w->mark; q < w->have && k < 20; q++)
		near[k++] = (w->buf[q] >= ' ' && w->buf[q] < 127) ? w->buf[q]
								  : ' ';
	near[k] = 0;
	return as_diag_set(diag, line, AS_EPARSE, "malformed JSON near '%s'",
			   near);
}

/* Duplicate keys anywhere in the tree, each object checked once. */
static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int as_json_dup_keys(struct as_jctx *c, const cJSON *v)
{
	const cJSON *it;
	int err, n = 0;
	if (cJSON_IsObject(v)) {
		cJSON_ArrayForEach(it, v) n++;
		const char *dup = NULL;
		if (n <= 16) {
			for (const cJSON *a = v->child; a && !dup; a = a->next)
				for (const cJSON *b = a->next; b; b = b->next)
					if (a->string[0] == b->string[0] &&
					    strcmp(a->string, b->string) == 0) {
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
			if ((err = as_json_dup_keys(c, it)))
				return err;
			c->depth--;
		}
	} else if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(it, v)
		{
			as_json_push(c, NULL, n++);
			if ((err = as_json_dup_keys(c, it)))
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
	struct as_jwin w = {.buf = data, .have = len, .mark = SIZE_MAX,
			    .eof = true};
	int err = as_json_prescan(&w, c->exact_big, NULL, diag);
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
		err = as_json_dup_keys(c, root);
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
