/*
 * The JSON trace reader reads in pieces: root members in any order, traces
 * larger than its window (plain, gzip'ed, on one line), refusals far into
 * a large trace at their line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "tap.h"

static struct as_trace *parse(const char *text, struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_parse("x.json", text, strlen(text), NULL, &t, d) != AS_OK)
		return NULL;
	return t;
}

static const struct as_buffer *named(const struct as_trace *t,
				     const char *name)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(t->buffers[i].name, name) == 0)
			return &t->buffers[i];
	return NULL;
}

static void root_members_after_the_array_are_read_before_it(void)
{
	static const char *const events =
		"\"events\": [{\"op\": \"alloc\", \"name\": \"a\", \"size\": 8,"
		" \"pool\": \"sram\"}, {\"op\": \"free\", \"name\": \"a\"}]";
	static const char *const rest =
		"\"pools\": [{\"name\": \"hbm\"}, {\"name\": \"sram\", "
		"\"capacity\": 64}], \"config\": {\"total\": 32}, "
		"\"metadata\": {\"m\": 1}, \"version\": 1, "
		"\"format\": \"allocscope-trace\"";
	char first[1024], last[1024];
	snprintf(first, sizeof(first), "{%s,\n %s}", rest, events);
	snprintf(last, sizeof(last), "{%s,\n %s}", events, rest);
	struct as_diag d;
	struct as_trace *a = parse(first, &d), *b = parse(last, &d);
	CHECK(a && b);
	if (a && b) {
		CHECK_EQ_U64(b->nbuffers, 1);
		CHECK_EQ_U64(b->buffers[0].space, a->buffers[0].space);
		CHECK_EQ_U64(b->buffers[0].space, 1);
		CHECK_EQ_U64(b->spaces[1].capacity, 64);
		CHECK_STR(b->cases[0].options, a->cases[0].options);
		CHECK_STR(b->metadata, "{\"m\":1}");
	}
	as_trace_destroy(a);
	as_trace_destroy(b);
}

/* A trace of one buffer whose name is `name` as as_json_string writes it. */
static struct as_trace *one_named(const char *name, struct as_diag *d)
{
	char *lit = NULL, text[512];
	size_t n = 0;
	FILE *f = open_memstream(&lit, &n);
	if (!f)
		return NULL;
	as_json_string(f, name);
	fclose(f);
	snprintf(text, sizeof(text),
		 "{\"format\": \"allocscope-trace\", \"version\": 1, "
		 "\"events\": [{\"op\": \"alloc\", \"name\": %s, \"size\": 8}]}",
		 lit);
	free(lit);
	return parse(text, d);
}

static void invalid_utf8_is_rejected_by_json_and_escaped_for_the_terminal(void)
{
	/* A stray byte, a cut sequence, an overlong '/', a surrogate and a
	 * code point past U+10FFFF: the reader refuses each raw... */
	static const char *const bad[] = {"\xff", "\xe2\x82", "\xc0\xaf",
					  "\xed\xa0\x80", "\xf4\x90\x80\x80"};
	static const char *const shown[] = {"\\xff", "\\xe2\\x82", "\\xc0\\xaf",
					    "\\xed\\xa0\\x80",
					    "\\xf4\\x90\\x80\\x80"};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		char text[128], esc[64];
		snprintf(text, sizeof(text),
			 "{\"format\": \"allocscope-trace\", \"version\": 1, "
			 "\"events\": [{\"op\": \"alloc\", \"name\": \"a%sb\", "
			 "\"size\": 8}]}",
			 bad[k]);
		struct as_diag d = {0};
		CHECK(parse(text, &d) == NULL);
		CHECK(strstr(d.msg, "invalid UTF-8 in a string") != NULL);
		/* ... a terminal sees each byte as \xNN ... */
		as_escape(esc, sizeof(esc), bad[k], AS_ESCAPE_TEXT);
		CHECK_STR(esc, shown[k]);
		/* ... and what as_json_string writes of it reads back as that
		 * text: JSON without a byte a parser refuses. */
		struct as_trace *t = one_named(bad[k], &d);
		CHECK(t != NULL);
		if (t)
			CHECK_STR(t->buffers[0].name, shown[k]);
		as_trace_destroy(t);
	}
	/* The largest code points and the bytes JSON must escape survive. */
	const char *good = "q\"\\\n\t\r\x01\x7f \xc3\xa9\xef\xbf\xbf\xf4\x8f\xbf\xbf";
	struct as_diag d = {0};
	struct as_trace *t = one_named(good, &d);
	CHECK(t != NULL);
	if (t)
		CHECK_STR(t->buffers[0].name, good);
	as_trace_destroy(t);
}

/* A buffers trace of n elements, each over two lines (line 3 + 2i), one
 * line when `flat`; `tail` replaces the closing "]}\n". */
static char *big_trace(int n, bool flat, const char *tail, size_t *len)
{
	size_t cap = (size_t)n * 160 + 256;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	size_t used = (size_t)snprintf(s, cap, "{\"format\": \"allocscope-trace\", "
					       "\"version\": 1,%s\"buffers\": [%s",
				       flat ? " " : "\n", flat ? "" : "\n");
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(
			s + used, cap - used,
			"%s{\"name\": \"buffer-%d\", \"size\": %d,%s"
			"\"start\": %d, \"end\": %d, \"offset\": %d}",
			i ? (flat ? ", " : ",\n") : "", i, 16 + i % 4096,
			flat ? " " : "\n  ", i, i + 3, (i % 4) * 8192);
	used += (size_t)snprintf(s + used, cap - used, "%s", tail);
	*len = used;
	return s;
}

static bool write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

static void traces_larger_than_the_window_load_plain_gzipped_and_flat(void)
{
	char dir[] = "/tmp/as_test_json.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[128], gz[160], cmd[400];
	snprintf(path, sizeof(path), "%s/big.json", dir);
	snprintf(gz, sizeof(gz), "%s.gz", path);
	for (int flat = 0; flat < 2; flat++) {
		size_t len;
		char *text = big_trace(40000, flat, "]}\n", &len);
		CHECK(text && len > (1u << 20)); /* four windows and more */
		CHECK(text && write_file(path, text, len));
		struct as_trace *t = NULL;
		struct as_diag d;
		CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
		if (t) {
			CHECK_EQ_U64(t->nbuffers, 40000);
			CHECK_EQ_U64(named(t, "buffer-39999")->size,
				     16 + 39999 % 4096);
			CHECK_EQ_U64(named(t, "buffer-31234")->recorded,
				     2 * 8192);
		}
		as_trace_destroy(t);
		/* The same through gzip (the reader reads it twice). */
		snprintf(cmd, sizeof(cmd), "gzip -c '%s' > '%s' 2>/dev/null",
			 path, gz);
		if (system(cmd) == 0) {
			t = NULL;
			CHECK(as_trace_load(gz, NULL, &t, &d) == AS_OK);
			CHECK(t && t->nbuffers == 40000);
			as_trace_destroy(t);
		} else {
			printf("# no gzip: the compressed case is skipped\n");
		}
		free(text);
		unlink(gz);
	}
	unlink(path);
	rmdir(dir);
}

static void refusals_far_into_a_large_trace_name_their_line(void)
{
	static const struct {
		const char *tail, *want;
	} cases[] = {
		/* buffer i starts on line 3 + 2i and ends on the next */
		{"]} x\n", "x.json:80002: trailing data after the JSON value"},
		{",\n{\"name\": \"late\", \"size\": 1, \"start\": 9, \"end\": 2}]}",
		 "x.json:80003: lifetime [9, 2) is empty"},
		{",\n{\"name\": \"late\", \"size\": 1 \"start\": 0, \"end\": 2}]}",
		 "x.json:80003: malformed JSON near '\"start\": 0, \"end\": 2'"},
		{",\n{\"name\": \"late\", \"sise\": 1}]}",
		 "x.json:80003: buffers[40000].sise: unknown key 'sise'"},
		{",\n{\"name\": \"late\", \"size\": 1, \"start\": 0, \"end\": 2",
		 "x.json:80003: truncated JSON (unexpected end of input)"},
		{",\n{\"name\": \"buffer-39999\", \"size\": 1, \"start\": 39999,"
		 " \"end\": 40005}]}",
		 "x.json:80003: buffers[40000].name: 'buffer-39999' is live "
		 "twice"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		size_t len;
		char *text = big_trace(40000, false, cases[k].tail, &len);
		struct as_trace *t = NULL;
		struct as_diag d;
		CHECK(text && as_trace_parse("x.json", text, len, NULL, &t,
					     &d) == AS_EPARSE);
		char got[900];
		snprintf(got, sizeof(got), "%s:%llu: %s", d.file,
			 (unsigned long long)d.line, d.msg);
		if (strncmp(got, cases[k].want, strlen(cases[k].want)) != 0) {
			printf("#   got '%s'\n#   want '%s'\n", got,
			       cases[k].want);
			CHECK(!"the refusal and its line");
		}
		as_trace_destroy(t);
		free(text);
	}
}

int main(void)
{
	TEST_RUN(root_members_after_the_array_are_read_before_it);
	TEST_RUN(invalid_utf8_is_rejected_by_json_and_escaped_for_the_terminal);
	TEST_RUN(traces_larger_than_the_window_load_plain_gzipped_and_flat);
	TEST_RUN(refusals_far_into_a_large_trace_name_their_line);
	return tap_done();
}
