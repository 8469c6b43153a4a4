/*
 * The text ops format: one operation a line, '#' comments, blank lines.
 *
 *   alloc NAME SIZE [ALIGN] [pool=P] [offset=N] [symbol=S] [stream=N]
 *   free NAME
 *   config key=value ...        (options; after operations: a new case)
 *   dump | stats | render | curr
 */
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"

#define MAX_TOKENS 16
#define DEFAULT_ALIGN 64 /* TensorFlow kernels' alignment, as the vectors */

struct tok {
	const char *s;
	size_t len;
};

static bool tok_is(const struct tok *t, const char *word)
{
	return t->len == strlen(word) && memcmp(t->s, word, t->len) == 0;
}

static int split(const char *s, size_t len, struct tok *out)
{
	int n = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len || s[i] == '#')
			break;
		size_t j = i;
		while (j < len && s[j] != ' ' && s[j] != '\t' && s[j] != '#')
			j++;
		if (n == MAX_TOKENS)
			return -1;
		out[n++] = (struct tok){s + i, j - i};
		i = j;
	}
	return n;
}

static int number(const struct tok *t, const char *what, uint64_t line,
		  uint64_t *out, struct as_diag *diag)
{
	if (as_parse_u64(t->s, t->len, out))
		return AS_OK;
	bool digits = t->len > 0;
	for (size_t i = 0; i < t->len; i++)
		if (t->s[i] < '0' || t->s[i] > '9')
			digits = false;
	if (digits)
		return as_diag_set(diag, line, AS_EPARSE,
				   "%s %.*s overflows 64 bits", what,
				   (int)t->len, t->s);
	return as_diag_set(diag, line, AS_EPARSE,
			   "%s '%.*s' is not a non-negative integer", what,
			   (int)t->len, t->s);
}

/* A buffer's NAME token into name (AS_NAME_MAX + 1 bytes), NUL-ended. */
static int name_of(const struct tok *t, char *name, uint64_t line,
		   struct as_diag *diag)
{
	if (t->len > AS_NAME_MAX)
		return as_diag_set(diag, line, AS_EPARSE,
				   "name is too long (%zu bytes; at most %d)",
				   t->len, AS_NAME_MAX);
	memcpy(name, t->s, t->len);
	name[t->len] = 0;
	return AS_OK;
}

static int alloc_extra(struct as_builder *b, uint32_t idx,
		       const struct tok *t, uint64_t line,
		       struct as_diag *diag)
{
	const char *eq = memchr(t->s, '=', t->len);
	if (!eq)
		return as_diag_set(diag, line, AS_EPARSE,
				   "unexpected '%.*s' after alloc",
				   (int)t->len, t->s);
	size_t klen = (size_t)(eq - t->s);
	struct tok val = {eq + 1, t->len - klen - 1};
	char text[256];
	if (val.len == 0 || val.len >= sizeof(text))
		return as_diag_set(diag, line, AS_EPARSE,
				   "bad value in '%.*s'", (int)t->len, t->s);
	memcpy(text, val.s, val.len);
	text[val.len] = 0;
	struct as_buffer *buf = as_builder_buffer(b, idx);
	uint64_t v;
	if (klen == 6 && memcmp(t->s, "offset", 6) == 0) {
		int err = number(&val, "offset", line, &v, diag);
		if (err)
			return err;
		if (v > UINT64_MAX - buf->size)
			return as_diag_set(diag, line, AS_EPARSE,
					   "offset + size overflows 64 bits");
		buf->recorded = v;
	} else if (klen == 6 && memcmp(t->s, "stream", 6) == 0) {
		int err = number(&val, "stream", line, &v, diag);
		if (err)
			return err;
		if (v > UINT16_MAX)
			return as_diag_set(diag, line, AS_EPARSE,
					   "stream %llu is out of range",
					   (unsigned long long)v);
		buf->stream = (uint16_t)v;
	} else if (klen == 4 && memcmp(t->s, "pool", 4) == 0) {
		int sp = as_builder_space(b, text, 0);
		if (sp == AS_EINVAL)
			return as_diag_set(diag, line, AS_EPARSE,
					   "pool '%s' is one more than a trace "
					   "may have (%u address spaces)",
					   text, AS_MAX_SPACES);
		if (sp < 0)
			return sp;
		as_builder_buffer(b, idx)->space = (uint16_t)sp;
	} else if (klen == 6 && memcmp(t->s, "symbol", 6) == 0) {
		int64_t sym = as_builder_symbol(b, text);
		if (sym < 0)
			return (int)sym;
		buf->symbol = (uint32_t)sym;
	} else {
		return as_diag_set(diag, line, AS_EPARSE,
				   "unknown alloc attribute '%.*s' (expected "
				   "pool=, offset=, symbol= or stream=)",
				   (int)klen, t->s);
	}
	return AS_OK;
}

static int parse_line(struct as_builder *b, struct tok *tk, int n,
		      uint64_t line, struct as_diag *diag)
{
	char name[AS_NAME_MAX + 1];
	if (tok_is(&tk[0], "alloc")) {
		if (n < 3)
			return as_diag_set(diag, line, AS_EPARSE,
					   "alloc needs NAME and SIZE");
		uint64_t size, align = DEFAULT_ALIGN;
		int err = number(&tk[2], "size", line, &size, diag);
		int first_extra = 3;
		if (!err && n > 3 && !memchr(tk[3].s, '=', tk[3].len)) {
			err = number(&tk[3], "alignment", line, &align, diag);
			first_extra = 4;
		}
		if (!err)
			err = name_of(&tk[1], name, line, diag);
		if (err)
			return err;
		int64_t idx = as_builder_alloc(b, name, size, align, line, diag);
		if (idx < 0)
			return (int)idx;
		for (int i = first_extra; i < n; i++) {
			err = alloc_extra(b, (uint32_t)idx, &tk[i], line, diag);
			if (err)
				return err;
		}
		return AS_OK;
	}
	if (tok_is(&tk[0], "free")) {
		if (n != 2)
			return as_diag_set(diag, line, AS_EPARSE,
					   "free takes exactly one NAME");
		int err = name_of(&tk[1], name, line, diag);
		return err ? err : as_builder_free(b, name, line, diag);
	}
	if (tok_is(&tk[0], "config")) {
		char opts[1024];
		size_t used = 0;
		for (int i = 1; i < n; i++) {
			if (!memchr(tk[i].s, '=', tk[i].len))
				return as_diag_set(diag, line, AS_EPARSE,
						   "config option '%.*s' is "
						   "not key=value",
						   (int)tk[i].len, tk[i].s);
			if (used + tk[i].len + 2 > sizeof(opts))
				return as_diag_set(diag, line, AS_EPARSE,
						   "config line is too long");
			if (used)
				opts[used++] = ',';
			memcpy(opts + used, tk[i].s, tk[i].len);
			used += tk[i].len;
		}
		opts[used] = 0;
		int err = as_builder_case(b, opts, diag);
		struct as_trace *t = as_builder_trace(b);
		if (err == AS_OK)
			t->cases[t->ncases - 1].line = line;
		return err;
	}
	static const char *const queries[] = {"dump", "stats", "render",
					      "curr"};
	for (int q = 0; q < 4; q++)
		if (tok_is(&tk[0], queries[q]))
			return as_builder_query(b, (enum as_query)q);
	return as_diag_set(diag, line, AS_EPARSE,
			   "unknown operation '%.*s' (expected alloc, free, "
			   "config, dump, stats, render or curr)",
			   (int)tk[0].len, tk[0].s);
}

static int ops_lines(struct as_builder *b, struct as_line_state *st,
		 const char *data, size_t len, struct as_diag *diag)
{
	const char *p = data, *end = data + len, *s;
	size_t n;
	uint64_t line = st->line;
	while ((s = as_next_line(&p, end, &n))) {
		struct tok tk[MAX_TOKENS];
		line++;
		int ntok = split(s, n, tk);
		if (ntok < 0)
			return as_diag_set(diag, line, AS_EPARSE,
					   "too many fields");
		if (ntok == 0)
			continue;
		int err = parse_line(b, tk, ntok, line, diag);
		if (err)
			return err;
	}
	st->line = line;
	return AS_OK;
}

/* Comments alone are no trace (blanks alone: formats.c says so). */
static int ops_end(struct as_builder *b, struct as_line_state *st, int err,
		   struct as_diag *diag)
{
	const struct as_trace *t = as_builder_trace(b);
	if (err == AS_OK && st->content && t->nevents == 0 &&
	    (!t->cases[0].options || !*t->cases[0].options))
		return as_diag_set(diag, 1, AS_EPARSE,
				   "no operations, only comments");
	return err;
}

/* The fallback: any text that no other format claims. */
static bool ops_sniff(const char *head, size_t len)
{
	return true;
}

const struct as_format_impl as_format_ops = {
	.name = "ops",
	.extensions = ".ops .txt",
	.sniff = ops_sniff,
	.lines = ops_lines,
	.end = ops_end,
};
