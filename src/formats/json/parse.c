/*
 * A JSON text to a cJSON tree, for every reader: the window a streamed
 * text is read through, the checks made before cJSON (over a whole text or
 * a streamed one), cJSON's refusal in the words of a whole parse, duplicate
 * keys, and the parse of a whole document.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "formats/formats.h"
#include "formats/json/json.h"

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
				} else if ((n = as_utf8_len(s + j, len - j)) == 0) {
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
