/*
 * The pickle reader and PyTorch memory snapshots: plain-data opcodes,
 * hostile pickles (imports, calls, deep nesting, truncation, huge lengths,
 * integers beyond 64 bits) and the mapping of the snapshot schema onto the
 * trace model, on pickles written here opcode by opcode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/build.h"
#include "formats/pickle.h"
#include "tap.h"

/* ---- A small pickle writer (protocol 4 opcodes) ---- */

struct pw {
	unsigned char *p;
	size_t n, cap;
};

static void pw_bytes(struct pw *w, const void *s, size_t n)
{
	if (w->n + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->n + n)
			cap *= 2;
		unsigned char *q = realloc(w->p, cap);
		if (!q)
			abort();
		w->p = q;
		w->cap = cap;
	}
	memcpy(w->p + w->n, s, n);
	w->n += n;
}

static void pw_op(struct pw *w, unsigned op)
{
	unsigned char c = (unsigned char)op;
	pw_bytes(w, &c, 1);
}

static void pw_le(struct pw *w, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		pw_op(w, (unsigned)(v >> (8 * i)) & 0xff);
}

static void pw_start(struct pw *w)
{
	pw_op(w, 0x80);
	pw_op(w, 4);
}

static void pw_str(struct pw *w, const char *s)
{
	size_t n = strlen(s);
	if (n < 256) {
		pw_op(w, 0x8c);
		pw_op(w, (unsigned)n);
	} else {
		pw_op(w, 'X');
		pw_le(w, n, 4);
	}
	pw_bytes(w, s, n);
}

/* Python's choice: BININT1/BININT2/BININT, else LONG1 (two's complement). */
static void pw_int(struct pw *w, int64_t v)
{
	if (v >= 0 && v < 256) {
		pw_op(w, 'K');
		pw_op(w, (unsigned)v);
	} else if (v >= 0 && v < 65536) {
		pw_op(w, 'M');
		pw_le(w, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		pw_op(w, 'J');
		pw_le(w, (uint64_t)v, 4);
	} else {
		int n = 1;
		while (n < 8 && !(v >= -((int64_t)1 << (8 * n - 1)) &&
				  v < ((int64_t)1 << (8 * n - 1))))
			n++;
		pw_op(w, 0x8a);
		pw_op(w, (unsigned)n);
		pw_le(w, (uint64_t)v, n);
	}
}

static void pw_u64(struct pw *w, uint64_t v)
{
	if (v <= INT64_MAX) {
		pw_int(w, (int64_t)v);
		return;
	}
	pw_op(w, 0x8a);
	pw_op(w, 9);
	pw_le(w, v, 8);
	pw_op(w, 0);
}

/* Dicts and lists: open, then items, then close (MARK ... SETITEMS). */
static void pw_dict(struct pw *w)
{
	pw_op(w, '}');
	pw_op(w, '(');
}

static void pw_list(struct pw *w)
{
	pw_op(w, ']');
	pw_op(w, '(');
}

static void pw_end_dict(struct pw *w)
{
	pw_op(w, 'u');
}

static void pw_end_list(struct pw *w)
{
	pw_op(w, 'e');
}

static void pw_stop(struct pw *w)
{
	pw_op(w, '.');
}

/* A trace entry; `frames_memo` >= 0 puts a BINGET of that memo index. */
static void pw_entry(struct pw *w, const char *action, uint64_t addr,
		     uint64_t size, uint64_t time_us)
{
	pw_dict(w);
	pw_str(w, "action");
	pw_str(w, action);
	pw_str(w, "addr");
	pw_u64(w, addr);
	pw_str(w, "size");
	pw_u64(w, size);
	pw_str(w, "stream");
	pw_int(w, 0);
	pw_str(w, "time_us");
	pw_u64(w, time_us);
	pw_end_dict(w);
}

static int parse(struct pw *w, struct as_pickle **out, struct as_diag *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->file, sizeof(d->file), "t.pickle");
	return as_pickle_parse((const char *)w->p, w->n, out, d);
}

static int load(struct pw *w, struct as_trace **t, struct as_diag *d)
{
	return as_trace_parse("t.pickle", (const char *)w->p, w->n, NULL, t,
			      d);
}

static const char *diag_text(const struct as_diag *d)
{
	static char buf[1024];
	return as_diag_text(d, buf, sizeof(buf));
}

static int64_t find(const struct as_trace *t, const char *name)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(t->buffers[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- Pickle ---- */

static void pickle_reads_every_plain_data_opcode(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_op(&w, 0x95); /* FRAME */
	pw_le(&w, 3, 8);
	pw_op(&w, '(');
	pw_op(&w, 'N');
	pw_op(&w, 0x88); /* NEWTRUE */
	pw_op(&w, 0x89);
	pw_int(&w, -5);
	pw_int(&w, 200);
	pw_int(&w, 40000);
	pw_int(&w, (int64_t)1 << 40);
	pw_int(&w, -((int64_t)1 << 40));
	pw_u64(&w, UINT64_MAX);
	pw_op(&w, 0x8b); /* LONG4 of 2 bytes: 0x0102 */
	pw_le(&w, 2, 4);
	pw_op(&w, 0x02);
	pw_op(&w, 0x01);
	pw_op(&w, 'G'); /* BINFLOAT 1.5 */
	pw_bytes(&w, "\x3f\xf8\0\0\0\0\0\0", 8);
	pw_str(&w, "snap");
	pw_op(&w, 0x94); /* MEMOIZE: memo 0 = "snap" */
	pw_op(&w, 'h');  /* BINGET 0 */
	pw_op(&w, 0);
	pw_op(&w, 'C'); /* SHORT_BINBYTES */
	pw_op(&w, 2);
	pw_bytes(&w, "\0\1", 2);
	pw_op(&w, ')'); /* EMPTY_TUPLE */
	pw_int(&w, 1);
	pw_int(&w, 2);
	pw_op(&w, 0x86); /* TUPLE2 */
	pw_op(&w, '(');
	pw_int(&w, 7);
	pw_op(&w, 'l'); /* LIST from mark */
	pw_op(&w, ']');
	pw_int(&w, 9);
	pw_op(&w, 'a'); /* APPEND */
	pw_op(&w, '}');
	pw_str(&w, "k");
	pw_int(&w, 1);
	pw_op(&w, 's'); /* SETITEM */
	pw_int(&w, 3);
	pw_op(&w, '2'); /* DUP */
	pw_op(&w, '0'); /* POP */
	pw_op(&w, 't'); /* TUPLE from the first mark */
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_OK);
	if (!p) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	const struct as_pk *r = as_pickle_root(p);
	CHECK_EQ_U64(as_pk_len(r), 20);
	uint64_t u;
	int64_t i;
	CHECK(as_pk_item(r, 0)->type == AS_PK_NONE);
	CHECK(as_pk_truthy(as_pk_item(r, 1)) && !as_pk_truthy(as_pk_item(r, 2)));
	CHECK(as_pk_i64(as_pk_item(r, 3), &i) && i == -5);
	CHECK(!as_pk_u64(as_pk_item(r, 3), &u));
	CHECK(as_pk_u64(as_pk_item(r, 4), &u) && u == 200);
	CHECK(as_pk_u64(as_pk_item(r, 5), &u) && u == 40000);
	CHECK(as_pk_u64(as_pk_item(r, 6), &u) && u == (uint64_t)1 << 40);
	CHECK(as_pk_i64(as_pk_item(r, 7), &i) && i == -((int64_t)1 << 40));
	CHECK(as_pk_u64(as_pk_item(r, 8), &u) && u == UINT64_MAX);
	CHECK(as_pk_u64(as_pk_item(r, 9), &u) && u == 0x0102);
	CHECK(as_pk_item(r, 10)->type == AS_PK_FLOAT &&
	      as_pk_item(r, 10)->v.f == 1.5);
	CHECK_STR(as_pk_str(as_pk_item(r, 11)), "snap");
	CHECK(as_pk_item(r, 12) == as_pk_item(r, 11)); /* memo shares */
	CHECK(as_pk_item(r, 13)->type == AS_PK_BYTES &&
	      as_pk_item(r, 13)->n == 2);
	CHECK(as_pk_item(r, 14)->type == AS_PK_TUPLE &&
	      as_pk_len(as_pk_item(r, 14)) == 0);
	CHECK(as_pk_u64(as_pk_item(as_pk_item(r, 15), 1), &u) && u == 2);
	CHECK(as_pk_u64(as_pk_item(as_pk_item(r, 16), 0), &u) && u == 7);
	CHECK(as_pk_u64(as_pk_item(as_pk_item(r, 17), 0), &u) && u == 9);
	CHECK(as_pk_u64(as_pk_get(as_pk_item(r, 18), "k"), &u) && u == 1);
	CHECK(as_pk_get(as_pk_item(r, 18), "missing") == NULL);
	CHECK(as_pk_u64(as_pk_item(r, 19), &u) && u == 3);
	as_pickle_destroy(p);
	free(w.p);
}

static void pickle_finds_keys_of_big_dicts_the_last_one_winning(void)
{
	struct pw w = {0};
	char key[16];
	pw_start(&w);
	pw_dict(&w);
	for (int k = 0; k < 100; k++) {
		snprintf(key, sizeof(key), "k%d", k % 50);
		pw_str(&w, key);
		pw_int(&w, k);
	}
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_OK);
	uint64_t u = 0;
	for (int k = 0; p && k < 50; k++) {
		snprintf(key, sizeof(key), "k%d", k);
		CHECK(as_pk_u64(as_pk_get(as_pickle_root(p), key), &u) &&
		      u == (uint64_t)k + 50);
	}
	CHECK(p && !as_pk_get(as_pickle_root(p), "k50"));
	CHECK(p && !as_pk_get(as_pickle_root(p), "a"));
	as_pickle_destroy(p);
	free(w.p);
}

static void pickle_refuses_every_opcode_that_imports_or_calls(void)
{
	static const struct {
		unsigned char op;
		const char *name;
	} refused[] = {
		{'c', "GLOBAL"},     {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"},
		{'b', "BUILD"},      {'i', "INST"},          {'o', "OBJ"},
		{0x81, "NEWOBJ"},    {0x92, "NEWOBJ_EX"},    {0x82, "EXT1"},
		{0x83, "EXT2"},      {0x84, "EXT4"},         {'P', "PERSID"},
		{'Q', "BINPERSID"},
	};
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		struct pw w = {0};
		pw_start(&w);
		pw_op(&w, 'N');
		pw_op(&w, refused[k].op);
		pw_bytes(&w, "os\nsystem\n", 10);
		pw_stop(&w);
		struct as_pickle *p = NULL;
		struct as_diag d;
		char want[200];
		CHECK(parse(&w, &p, &d) == AS_EPARSE);
		CHECK(p == NULL);
		snprintf(want, sizeof(want),
			 "t.pickle: refusing pickle opcode %s at byte 3 "
			 "(snapshots hold plain data only)",
			 refused[k].name);
		CHECK_STR(diag_text(&d), want);
		free(w.p);
	}
}

static void pickle_refuses_marks_nested_deeper_than_its_limit(void)
{
	struct pw w = {0};
	pw_start(&w);
	for (int k = 0; k < 100000; k++)
		pw_op(&w, '(');
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_EPARSE);
	CHECK(strstr(diag_text(&d), "nested deeper than") != NULL);
	free(w.p);
}

/*
 * A memo index far past the stores so far (no pickler writes one) goes to
 * a table, not an array of that size: 300 million as the index of the
 * first store costs a slot, and is found again.
 */
static void pickle_memo_index_far_ahead_costs_a_slot(void)
{
	struct pw w = {0};
	pw_start(&w);
	/* 300 MB of padding so the index is below the file's length would
	 * be the real case; the check only needs idx < len, so pad less and
	 * use an index just below it. */
	size_t pad = 5u << 20;
	pw_op(&w, 0x8e); /* BINBYTES8 */
	pw_le(&w, pad, 8);
	for (size_t i = 0; i < pad; i++)
		pw_op(&w, 0);
	pw_op(&w, '0'); /* POP */
	pw_op(&w, 0x88); /* NEWTRUE */
	pw_op(&w, 'r'); /* LONG_BINPUT */
	pw_le(&w, pad - 7, 4);
	pw_op(&w, '0');
	pw_op(&w, 'j'); /* LONG_BINGET */
	pw_le(&w, pad - 7, 4);
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_OK);
	if (p) {
		uint64_t v = 0;
		CHECK(as_pk_u64(as_pickle_root(p), &v) && v == 1);
	}
	as_pickle_destroy(p);
	free(w.p);
}

/* Values cost at most 12 times the pickle's bytes plus 16 MiB: 2 MB of
 * EMPTY_LIST/POP pairs (a value each, 40 times the bytes) is refused. */
static void pickle_values_past_their_budget_are_refused(void)
{
	struct pw w = {0};
	pw_start(&w);
	for (int k = 0; k < (1 << 20); k++) {
		pw_op(&w, ']');
		pw_op(&w, '0');
	}
	pw_op(&w, 'N');
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_EPARSE);
	CHECK(strstr(diag_text(&d), "pickle values need more than") != NULL);
	as_pickle_destroy(p);
	free(w.p);
}

static void deep_lists_are_built_without_recursion_and_bounded_when_walked(void)
{
	struct pw w = {0};
	pw_start(&w);
	for (int k = 0; k < 100000; k++)
		pw_op(&w, ']');
	for (int k = 1; k < 100000; k++)
		pw_op(&w, 'a');
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	CHECK(parse(&w, &p, &d) == AS_OK);
	char *json = NULL;
	CHECK(p && as_pk_json(as_pickle_root(p), 1 << 20, 32, &json) ==
			   AS_EINVAL);
	as_pickle_destroy(p);
	/* As a snapshot it is refused, not walked. */
	struct as_trace *t = NULL;
	CHECK(load(&w, &t, &d) == AS_EPARSE);
	CHECK(strstr(diag_text(&d), "not a PyTorch memory snapshot") != NULL);
	free(w.p);
}

static void a_pickled_string_becomes_json_any_parser_reads(void)
{
	/* A lone surrogate (Python pickles str with surrogatepass), a stray
	 * byte, a newline and a quote: the JSON text has each as JSON writes
	 * it everywhere (as_json_string). */
	struct pw w = {0};
	pw_start(&w);
	pw_list(&w);
	pw_str(&w, "a\xed\xa0\x80" "b\xff" "c\n\"\xc3\xa9");
	pw_end_list(&w);
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	char *json = NULL;
	CHECK(parse(&w, &p, &d) == AS_OK);
	CHECK(p && as_pk_json(as_pickle_root(p), 1 << 20, 32, &json) == AS_OK);
	CHECK(json && strcmp(json, "[\"a\\\\xed\\\\xa0\\\\x80b\\\\xffc\\n\\\"\xc3\xa9\"]") ==
			      0);
	free(json);
	as_pickle_destroy(p);
	free(w.p);
}

static void a_list_holding_itself_does_not_loop(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_op(&w, ']');
	pw_op(&w, 0x94); /* memo 0 = the list */
	pw_op(&w, 'h');
	pw_op(&w, 0);
	pw_op(&w, 'a'); /* the list appended to itself */
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	char *json = NULL;
	CHECK(parse(&w, &p, &d) == AS_OK);
	CHECK(p && as_pk_item(as_pickle_root(p), 0) == as_pickle_root(p));
	CHECK(p && as_pk_json(as_pickle_root(p), 1 << 20, 32, &json) ==
			   AS_EINVAL);
	as_pickle_destroy(p);
	free(w.p);
}

/* A small but complete snapshot, for cutting and corrupting. */
static void small_snapshot(struct pw *w)
{
	pw_start(w);
	pw_dict(w);
	pw_str(w, "segments");
	pw_list(w);
	pw_end_list(w);
	pw_str(w, "device_traces");
	pw_list(w);
	pw_list(w);
	pw_entry(w, "alloc", 0x7f0000000000, 512, 1000);
	pw_entry(w, "free_completed", 0x7f0000000000, 512, 1010);
	pw_end_list(w);
	pw_end_list(w);
	pw_end_dict(w);
	pw_stop(w);
}

static void every_truncation_of_a_snapshot_is_refused(void)
{
	struct pw w = {0};
	small_snapshot(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	as_trace_destroy(t);
	size_t full = w.n;
	int bad = 0;
	for (size_t n = 0; n < full; n++) {
		t = NULL;
		w.n = n;
		if (as_trace_parse("t.pickle", (const char *)w.p, n, "pickle",
				   &t, &d) != AS_EPARSE || t)
			bad++;
		as_trace_destroy(t);
	}
	CHECK_EQ_U64(bad, 0);
	free(w.p);
}

static void lengths_past_the_end_are_refused_before_any_allocation(void)
{
	static const unsigned char cases[][16] = {
		/* BINUNICODE8 of 2^62 bytes */
		{0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x40, '.'},
		/* BINUNICODE of 4 GiB - 1 */
		{0x80, 4, 'X', 0xff, 0xff, 0xff, 0xff, '.'},
		/* LONG4 of 2^31 - 1 bytes */
		{0x80, 4, 0x8b, 0xff, 0xff, 0xff, 0x7f, '.'},
		/* BINBYTES8 of 2^64 - 1 */
		{0x80, 4, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		 '.'},
		/* FRAME longer than the file */
		{0x80, 4, 0x95, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 'N', '.'},
		/* LONG_BINGET of an index never stored */
		{0x80, 4, 'j', 0xff, 0xff, 0xff, 0x7f, '.'},
		/* LONG_BINPUT far past the file */
		{0x80, 4, 'N', 'r', 0xff, 0xff, 0xff, 0x7f, '.'},
	};
	static const size_t lens[] = {12, 8, 8, 12, 13, 8, 9};
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		struct as_pickle *p = NULL;
		struct as_diag d = {0};
		CHECK(as_pickle_parse((const char *)cases[k], lens[k], &p, &d) ==
		      AS_EPARSE);
		CHECK(p == NULL);
		CHECK(strstr(d.msg, "byte") != NULL);
	}
}

static void integers_beyond_64_bits_are_refused_where_a_snapshot_needs_them(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_op(&w, 0x8a); /* LONG1 of 9 bytes: 2^64 */
	pw_op(&w, 9);
	pw_bytes(&w, "\0\0\0\0\0\0\0\0\1", 9);
	pw_stop(&w);
	struct as_pickle *p = NULL;
	struct as_diag d;
	uint64_t u;
	CHECK(parse(&w, &p, &d) == AS_OK);
	CHECK(p && as_pickle_root(p)->type == AS_PK_BIGINT);
	CHECK(p && !as_pk_u64(as_pickle_root(p), &u));
	as_pickle_destroy(p);
	free(w.p);

	struct pw s = {0};
	pw_start(&s);
	pw_dict(&s);
	pw_str(&s, "device_traces");
	pw_list(&s);
	pw_list(&s);
	pw_dict(&s);
	pw_str(&s, "action");
	pw_str(&s, "alloc");
	pw_str(&s, "addr");
	size_t at = s.n;
	pw_op(&s, 0x8a);
	pw_op(&s, 10);
	pw_bytes(&s, "\0\0\0\0\0\0\0\0\0\1", 10);
	pw_str(&s, "size");
	pw_int(&s, 512);
	pw_end_dict(&s);
	pw_end_list(&s);
	pw_end_list(&s);
	pw_end_dict(&s);
	pw_stop(&s);
	struct as_trace *t = NULL;
	char want[160];
	CHECK(load(&s, &t, &d) == AS_EPARSE);
	snprintf(want, sizeof(want),
		 "t.pickle: snapshot 'addr' at byte %zu does not fit in 64 "
		 "bits",
		 at);
	CHECK_STR(diag_text(&d), want);
	free(s.p);
}

/* ---- Snapshots ---- */

/* The real address of a recorded offset, UINT64_MAX when unmapped. */
static uint64_t real(const struct as_trace *t, uint16_t space, uint64_t off)
{
	uint64_t a = UINT64_MAX;
	return as_trace_address_of(t, space, off, &a) ? a : UINT64_MAX;
}

#define A 0x7f0000000000ull
#define B 0x7f0000100000ull

static void snapshot_pairs_alloc_with_later_free_completed(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	pw_entry(&w, "alloc", A, 1024, 5000);          /* step 1 */
	pw_entry(&w, "alloc", B, 2048, 5010);          /* step 2 */
	pw_entry(&w, "free_requested", A, 1024, 5020); /* step 3 */
	pw_entry(&w, "free_completed", A, 1024, 5030); /* step 4 */
	pw_entry(&w, "alloc", A, 512, 5040);           /* step 5 */
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK_STR(t->format, "pickle");
	CHECK_EQ_U64(t->nbuffers, 3);
	CHECK_STR(t->spaces[0].name, "cuda:0");
	int64_t a0 = find(t, "b7f0000000000_0"), b0 = find(t, "b7f0000100000_0"),
		a1 = find(t, "b7f0000000000_1");
	CHECK(a0 >= 0 && b0 >= 0 && a1 >= 0);
	if (a0 >= 0 && b0 >= 0 && a1 >= 0) {
		CHECK_EQ_U64(t->buffers[a0].start, 1);
		CHECK_EQ_U64(t->buffers[a0].end, 4);
		/* Recorded offsets are the addresses with the empty range
		 * between the blocks shrunk; the map gives them back. */
		CHECK_EQ_U64(real(t, 0, t->buffers[a0].recorded), A);
		CHECK_EQ_U64(real(t, 0, t->buffers[b0].recorded), B);
		CHECK(t->buffers[a0].recorded < 4096);
		CHECK(t->buffers[b0].recorded - t->buffers[a0].recorded <
		      B - A);
		CHECK_EQ_U64(t->buffers[b0].recorded % 4096, B % 4096);
		CHECK_EQ_U64(t->buffers[b0].start, 2);
		CHECK_EQ_U64(t->buffers[b0].end, 6);
		CHECK(t->buffers[b0].flags & AS_BUF_NEVER_FREED);
		CHECK_EQ_U64(t->buffers[a1].start, 5);
		CHECK_EQ_U64(t->buffers[a1].size, 512);
		CHECK(t->info != NULL);
		if (t->info)
			CHECK_EQ_U64(t->info[a0].free_requested, 3);
	}
	CHECK_EQ_U64(t->end_time, 6);
	CHECK(t->clock != NULL);
	if (t->clock) {
		CHECK_EQ_U64(t->clock[0], 0);
		CHECK_EQ_U64(t->clock[1], 0);
		CHECK_EQ_U64(t->clock[4], 30);
		CHECK_EQ_U64(t->clock[5], 40);
	}
	CHECK_EQ_U64(as_trace_lower_bound(t), 3072);
	as_trace_destroy(t);
	free(w.p);
}

/* A final segment at `addr` with blocks (size, state) laid end to end. */
static void pw_segment(struct pw *w, int dev, uint64_t addr, uint64_t total,
		       bool expandable, const uint64_t *sizes,
		       const char *const *states, int nblocks)
{
	pw_dict(w);
	pw_str(w, "device");
	pw_int(w, dev);
	pw_str(w, "address");
	pw_u64(w, addr);
	pw_str(w, "total_size");
	pw_u64(w, total);
	pw_str(w, "stream");
	pw_int(w, 0);
	pw_str(w, "is_expandable");
	pw_op(w, expandable ? 0x88 : 0x89);
	pw_str(w, "blocks");
	pw_list(w);
	for (int k = 0; k < nblocks; k++) {
		pw_dict(w);
		pw_str(w, "address");
		pw_u64(w, addr);
		pw_str(w, "size");
		pw_u64(w, sizes[k]);
		pw_str(w, "requested_size");
		pw_u64(w, sizes[k] - 100);
		pw_str(w, "state");
		pw_str(w, states[k]);
		pw_end_dict(w);
		addr += sizes[k];
	}
	pw_end_list(w);
	pw_end_dict(w);
}

static void snapshot_blocks_from_before_the_trace_and_ghosts_live_from_the_start(void)
{
	static const uint64_t sizes[] = {4096, 4096, 4096, 4096};
	static const char *const states[] = {"active_allocated", "inactive",
					     "active_allocated",
					     "active_allocated"};
	const uint64_t S = 0x7f1000000000ull;
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "segments");
	pw_list(&w);
	pw_segment(&w, 0, S, 4 * 4096, false, sizes, states, 4);
	pw_end_list(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	pw_entry(&w, "free_completed", A, 256, 100); /* before the trace */
	pw_entry(&w, "alloc", S + 2 * 4096, 4096, 110);
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	/* Two ghosts (S, S + 3 blocks), the early block, the traced one. */
	CHECK_EQ_U64(t->nbuffers, 4);
	int64_t pre = find(t, "b7f0000000000_0");
	int64_t g0 = find(t, "b7f1000000000_0");
	int64_t g3 = find(t, "b7f1000003000_0");
	int64_t tr = find(t, "b7f1000002000_0");
	CHECK(pre >= 0 && g0 >= 0 && g3 >= 0 && tr >= 0);
	if (pre >= 0 && g0 >= 0 && g3 >= 0 && tr >= 0) {
		CHECK_EQ_U64(t->buffers[pre].start, 0);
		CHECK_EQ_U64(t->buffers[pre].end, 1);
		CHECK_EQ_U64(t->buffers[g0].start, 0);
		CHECK_EQ_U64(t->buffers[g0].end, t->end_time);
		CHECK_EQ_U64(t->buffers[g3].start, 0);
		CHECK_EQ_U64(t->info[g0].requested, 4096 - 100);
		CHECK_EQ_U64(t->buffers[tr].start, 2);
	}
	/* The one segment existed all along. */
	CHECK_EQ_U64(t->nsegments, 1);
	if (t->nsegments) {
		CHECK_EQ_U64(real(t, 0, t->segments[0].addr), S);
		CHECK_EQ_U64(t->segments[0].size, 4 * 4096);
		CHECK_EQ_U64(t->segments[0].start, 0);
		CHECK_EQ_U64(t->segments[0].end, t->end_time);
	}
	as_trace_destroy(t);
	free(w.p);
}

static void snapshot_devices_are_spaces_merged_by_time(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	for (int dev = 0; dev < 3; dev++) {
		pw_list(&w);
		/* The same address on every device: names repeat, spaces
		 * tell them apart. */
		pw_entry(&w, "alloc", A, 1000u * (unsigned)(dev + 1),
			 100 + (uint64_t)dev);
		pw_entry(&w, "free_completed", A, 1000u * (unsigned)(dev + 1),
			 200 + (uint64_t)dev);
		pw_end_list(&w);
	}
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK_EQ_U64(t->nspaces, 3);
	CHECK_EQ_U64(t->nbuffers, 3);
	for (uint16_t s = 0; s < 3 && t->nspaces == 3; s++) {
		char name[16];
		snprintf(name, sizeof(name), "cuda:%u", s);
		CHECK_STR(t->spaces[s].name, name);
		CHECK_EQ_U64(as_trace_lower_bound_space(t, s), 1000u * (s + 1u));
	}
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		CHECK_STR(b->name, "b7f0000000000_0");
		/* Allocs at steps 1..3 by time, frees at 4..6. */
		CHECK_EQ_U64(b->start, 1u + b->space);
		CHECK_EQ_U64(b->end, 4u + b->space);
	}
	as_trace_destroy(t);
	free(w.p);
}

static void snapshot_segments_give_reserved_memory_over_time(void)
{
	static const uint64_t one[] = {1 << 20};
	static const char *const inactive[] = {"inactive"};
	const uint64_t S0 = 0x7f2000000000ull, S1 = 0x7f3000000000ull,
		       S2 = 0x7f4000000000ull, X = 0x7f5000000000ull;
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "segments");
	pw_list(&w);
	pw_segment(&w, 0, S1, 1 << 20, false, one, inactive, 1);
	pw_segment(&w, 0, S2, 1 << 20, false, one, inactive, 1);
	pw_segment(&w, 0, X, 1 << 20, true, one, inactive, 1);
	pw_end_list(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	pw_entry(&w, "segment_alloc", S1, 1 << 20, 10);
	pw_entry(&w, "alloc", S1, 512, 11);                 /* step 1 */
	pw_entry(&w, "segment_free", S0, 1 << 21, 12);      /* at step 2 */
	pw_entry(&w, "segment_map", X, 4 << 20, 13);
	pw_entry(&w, "alloc", X, 512, 14);                  /* step 2 */
	pw_entry(&w, "segment_unmap", X + (1 << 20), 3 << 20, 15);
	pw_entry(&w, "free_completed", X, 512, 16);         /* step 3 */
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK_EQ_U64(t->end_time, 4);
	/* In start order: S0 [0, 2), S2 [0, 4), S1 [1, 4), X's unmapped
	 * part [2, 3), X's kept part [2, 4). */
	struct {
		uint64_t addr, size, start, end;
		uint8_t flags;
	} want[] = {
		{S0, 2 << 20, 0, 2, 0},
		{S2, 1 << 20, 0, 4, 0},
		{S1, 1 << 20, 1, 4, 0},
		{X + (1 << 20), 3 << 20, 2, 3, AS_SEG_EXPANDABLE},
		{X, 1 << 20, 2, 4, AS_SEG_EXPANDABLE},
	};
	CHECK_EQ_U64(t->nsegments, 5);
	for (uint32_t k = 0; k < 5 && t->nsegments == 5; k++) {
		bool found = false;
		for (uint32_t i = 0; i < t->nsegments; i++) {
			const struct as_segment *s = &t->segments[i];
			found |= real(t, s->space, s->addr) == want[k].addr &&
				 s->size == want[k].size &&
				 s->start == want[k].start &&
				 s->end == want[k].end &&
				 s->flags == want[k].flags;
		}
		if (!found)
			printf("#   segment %u not found\n", k);
		CHECK(found);
	}
	for (uint32_t i = 1; i < t->nsegments; i++)
		CHECK(t->segments[i - 1].start <= t->segments[i].start);
	as_trace_destroy(t);
	free(w.p);
}

static void reserved_peaks_sweep_each_space_ends_first(void)
{
	struct as_builder *b = as_builder_create("mem", "json");
	CHECK(b != NULL);
	if (!b)
		return;
	int s1 = as_builder_space(b, "cuda:1", 0);
	CHECK(s1 == 1);
	/* space 0: 10 over [0, 4), 5 over [4, 6) (ends first: not 15),
	 * 7 over [2, 3); space 1: 3 over [1, 2), nothing empty counted. */
	const struct as_segment segs[] = {
		{0, 10, 0, 4, 0, 0, 0}, {100, 7, 2, 3, 0, 0, 0},
		{0, 5, 4, 6, 0, 0, 0},  {0, 3, 1, 2, 1, 0, 0},
		{50, 99, 3, 3, 1, 0, 0},
	};
	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		CHECK(as_builder_segment(b, &segs[i]) == AS_OK);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_builder_finish(b, &t, &d) == AS_OK);
	if (!t) {
		as_builder_destroy(b);
		return;
	}
	uint64_t peak[2] = {1, 1};
	CHECK(as_trace_reserved_peaks(t, peak) == AS_OK);
	CHECK_EQ_U64(peak[0], 17);
	CHECK_EQ_U64(peak[1], 3);
	as_trace_destroy(t);
}

/* An entry with only action and addr (older writers may leave out size). */
static void pw_bare(struct pw *w, const char *action, uint64_t addr)
{
	pw_dict(w);
	pw_str(w, "action");
	pw_str(w, action);
	pw_str(w, "addr");
	pw_u64(w, addr);
	pw_end_dict(w);
}

static void snapshot_frees_without_a_size_end_what_is_there(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	pw_entry(&w, "segment_alloc", A, 1 << 20, 1);
	pw_entry(&w, "alloc", A, 4096, 2);      /* step 1 */
	pw_bare(&w, "free", A);                 /* step 2 */
	pw_bare(&w, "segment_free", A);         /* at step 3 */
	pw_entry(&w, "alloc", B, 512, 3);       /* step 3 */
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK_EQ_U64(t->nbuffers, 2);
	CHECK_EQ_U64(t->buffers[0].end, 2);
	CHECK_EQ_U64(t->nsegments, 1);
	if (t->nsegments) {
		CHECK_EQ_U64(t->segments[0].size, 1 << 20);
		CHECK_EQ_U64(t->segments[0].start, 1);
		CHECK_EQ_U64(t->segments[0].end, 3);
	}
	as_trace_destroy(t);
	free(w.p);
}

static void snapshot_oom_entries_become_marks(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	pw_end_list(&w);
	pw_list(&w);
	pw_entry(&w, "alloc", A, 512, 1000);
	pw_dict(&w);
	pw_str(&w, "action");
	pw_str(&w, "oom");
	pw_str(&w, "size");
	pw_u64(&w, (uint64_t)40 << 30);
	pw_str(&w, "device_free");
	pw_u64(&w, (uint64_t)3 << 30);
	pw_str(&w, "time_us");
	pw_int(&w, 1500);
	pw_end_dict(&w);
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK_EQ_U64(t->nmarks, 1);
	if (t->nmarks) {
		CHECK_EQ_U64(t->marks[0].kind, AS_MARK_OOM);
		CHECK_EQ_U64(t->marks[0].time, 2);
		CHECK_EQ_U64(t->marks[0].size, (uint64_t)40 << 30);
		CHECK_EQ_U64(t->marks[0].device_free, (uint64_t)3 << 30);
		CHECK_EQ_U64(t->marks[0].space, 1);
		CHECK(t->clock && t->clock[2] == 500);
	}
	as_trace_destroy(t);
	free(w.p);
}

static void pw_frame(struct pw *w, const char *name, const char *file,
		     int line)
{
	pw_dict(w);
	pw_str(w, "name");
	pw_str(w, name);
	pw_str(w, "filename");
	pw_str(w, file);
	pw_str(w, "line");
	pw_int(w, line);
	pw_end_dict(w);
}

static void snapshot_frames_are_filtered_python_first_and_shared(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "device_traces");
	pw_list(&w);
	pw_list(&w);
	for (int k = 0; k < 2; k++) {
		pw_dict(&w);
		pw_str(&w, "action");
		pw_str(&w, "alloc");
		pw_str(&w, "addr");
		pw_u64(&w, A + (uint64_t)k * 4096);
		pw_str(&w, "size");
		pw_int(&w, 4096);
		pw_str(&w, "frames");
		if (k == 0) {
			pw_list(&w);
			pw_frame(&w, "torch::unwind::unwind()", "??", 0);
			pw_frame(&w, "c10::cuda::alloc", "CUDACachingAllocator.cpp",
				 12);
			pw_frame(&w, "_PyEval_EvalFrameDefault", "ceval.c", 1);
			pw_frame(&w, "forward", "model.py", 54);
			pw_frame(&w, "main", "train.py", 7);
			pw_end_list(&w);
			pw_op(&w, 0x94); /* memo 0: the frames list */
		} else {
			pw_op(&w, 'h');
			pw_op(&w, 0);
		}
		pw_end_dict(&w);
	}
	pw_end_list(&w);
	pw_end_list(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", diag_text(&d));
		free(w.p);
		return;
	}
	CHECK(as_trace_buffer_frames(t, 0) != NULL);
	if (t->nbuffers == 2) {
		CHECK_STR(as_trace_buffer_frames(t, 0),
			  "model.py:54:forward\ntrain.py:7:main\n"
			  "CUDACachingAllocator.cpp:12:c10::cuda::alloc");
		CHECK(as_trace_buffer_frames(t, 0) ==
		      as_trace_buffer_frames(t, 1));
	}
	/* No time_us anywhere: no clock. */
	CHECK(t->clock == NULL);
	as_trace_destroy(t);
	free(w.p);
}

static void snapshot_allocator_settings_become_metadata(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_dict(&w);
	pw_str(&w, "segments");
	pw_list(&w);
	pw_end_list(&w);
	pw_str(&w, "allocator_settings");
	pw_dict(&w);
	pw_str(&w, "PYTORCH_CUDA_ALLOC_CONF");
	pw_str(&w, "expandable_segments:True");
	pw_str(&w, "max_split_size");
	pw_int(&w, -1);
	pw_str(&w, "expandable_segments");
	pw_op(&w, 0x88);
	pw_str(&w, "garbage_collection_threshold");
	pw_op(&w, 'G');
	pw_bytes(&w, "\x3f\xe0\0\0\0\0\0\0", 8); /* 0.5 */
	pw_str(&w, "roundup_power2_divisions");
	pw_dict(&w);
	pw_str(&w, "1");
	pw_int(&w, 4);
	pw_end_dict(&w);
	pw_end_dict(&w);
	pw_end_dict(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_OK);
	CHECK(t && t->nbuffers == 0);
	CHECK_STR(t ? t->metadata : NULL,
		  "{\"allocator_settings\": {\"PYTORCH_CUDA_ALLOC_CONF\": "
		  "\"expandable_segments:True\", \"max_split_size\": -1, "
		  "\"expandable_segments\": true, "
		  "\"garbage_collection_threshold\": 0.5, "
		  "\"roundup_power2_divisions\": {\"1\": 4}}}");
	as_trace_destroy(t);
	free(w.p);
}

static void snapshot_that_is_not_a_dict_is_refused_by_name(void)
{
	struct pw w = {0};
	pw_start(&w);
	pw_list(&w);
	pw_end_list(&w);
	pw_stop(&w);
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(load(&w, &t, &d) == AS_EPARSE);
	CHECK_STR(diag_text(&d),
		  "t.pickle: not a PyTorch memory snapshot: the pickle holds "
		  "no dict with 'segments' or 'device_traces'");
	free(w.p);
}

/* The shared real snapshots load; figures are checked by snapshot_test.sh. */
static void real_snapshots_load(void)
{
	const char *dir = tap_shared_dir();
	static const char *const files[] = {
		"eor_nn.pickle",	"newest_keys.pickle",
		"segments_only.pickle", "tiny_voxelflex.pickle",
		"empty_settings_only.pickle",
		"fidelity/cs336_ctx128_forward.pickle",
		"fidelity/cs336_2.7b_forward.pickle",
		"fidelity/cs336_ctx256_fullstep.pickle",
		"fidelity/cs336_ctx128_forward_mixed.pickle",
	};
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		char path[1200];
		struct as_trace *t = NULL;
		struct as_diag d;
		snprintf(path, sizeof(path), "%s/snapshots/%s", dir, files[k]);
		CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
		if (!t)
			printf("#   %s\n", diag_text(&d));
		CHECK(t && strcmp(t->format, "pickle") == 0);
		as_trace_destroy(t);
	}
}

/*
 * eor_nn.pickle: its recorded peak is device memory (at most the 128 MiB
 * the recording allocator reserved), not the device addresses' 127 TiB,
 * and the map gives every buffer back the address in its name.
 */
static void recorded_peak_of_a_real_snapshot_reads_as_memory(void)
{
	char path[1200];
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	snprintf(path, sizeof(path), "%s/snapshots/eor_nn.pickle",
		 tap_shared_dir());
	CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
	if (!t)
		return;
	CHECK(as_strategy_run("recorded", t, NULL, &p, &d) == AS_OK);
	if (p) {
		uint64_t peak = as_plan_peak(p, t, -1);
		printf("#   recorded peak %llu\n", (unsigned long long)peak);
		CHECK(peak >= as_trace_lower_bound(t));
		CHECK(peak <= 134217728);
	}
	uint32_t named = 0;
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		char want[48];
		snprintf(want, sizeof(want), "b%llx_",
			 (unsigned long long)real(t, b->space, b->recorded));
		named += strncmp(b->name, want, strlen(want)) == 0;
	}
	CHECK_EQ_U64(named, t->nbuffers);
	as_plan_destroy(p);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(pickle_reads_every_plain_data_opcode);
	TEST_RUN(pickle_finds_keys_of_big_dicts_the_last_one_winning);
	TEST_RUN(pickle_refuses_every_opcode_that_imports_or_calls);
	TEST_RUN(pickle_refuses_marks_nested_deeper_than_its_limit);
	TEST_RUN(pickle_memo_index_far_ahead_costs_a_slot);
	TEST_RUN(pickle_values_past_their_budget_are_refused);
	TEST_RUN(deep_lists_are_built_without_recursion_and_bounded_when_walked);
	TEST_RUN(a_list_holding_itself_does_not_loop);
	TEST_RUN(a_pickled_string_becomes_json_any_parser_reads);
	TEST_RUN(every_truncation_of_a_snapshot_is_refused);
	TEST_RUN(lengths_past_the_end_are_refused_before_any_allocation);
	TEST_RUN(integers_beyond_64_bits_are_refused_where_a_snapshot_needs_them);
	TEST_RUN(snapshot_pairs_alloc_with_later_free_completed);
	TEST_RUN(snapshot_blocks_from_before_the_trace_and_ghosts_live_from_the_start);
	TEST_RUN(snapshot_devices_are_spaces_merged_by_time);
	TEST_RUN(snapshot_segments_give_reserved_memory_over_time);
	TEST_RUN(reserved_peaks_sweep_each_space_ends_first);
	TEST_RUN(snapshot_frees_without_a_size_end_what_is_there);
	TEST_RUN(snapshot_oom_entries_become_marks);
	TEST_RUN(snapshot_frames_are_filtered_python_first_and_shared);
	TEST_RUN(snapshot_allocator_settings_become_metadata);
	TEST_RUN(snapshot_that_is_not_a_dict_is_refused_by_name);
	if (tap_shared_dir())
		TEST_RUN(real_snapshots_load);
	else
		TEST_SKIP(real_snapshots_load, "../shared is absent");
	if (tap_shared_dir())
		TEST_RUN(recorded_peak_of_a_real_snapshot_reads_as_memory);
	else
		TEST_SKIP(recorded_peak_of_a_real_snapshot_reads_as_memory,
			  "../shared is absent");
	return tap_done();
}
