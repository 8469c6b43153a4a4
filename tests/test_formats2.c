/*
 * The malloc-trace readers (glibc mtrace, heaptrack interpreted and raw) and
 * compressed input (gzip, zstd), through the public API only.
 */
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "allocscope/build.h"
#include "tap.h"

static struct as_trace *parse(const char *name, const char *text,
			      const char *format, struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_parse(name, text, strlen(text), format, &t, d) != AS_OK)
		return NULL;
	return t;
}

static const struct as_buffer *named(const struct as_trace *t,
				     const char *name)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(as_trace_buffer_name(t, i), name) == 0)
			return &t->buffers[i];
	return NULL;
}

static double stat_of(const struct as_trace *t, const char *prefix)
{
	for (uint32_t i = 0; i < t->ninput_stats; i++)
		if (strncmp(t->input_stats[i].key, prefix, strlen(prefix)) == 0)
			return t->input_stats[i].value;
	return 0;
}

static void mtrace_realloc_frees_the_old_block_and_links_the_new_one(void)
{
	struct as_diag d;
	struct as_trace *t = parse("r.mtrace",
				   "= Start\n"
				   "@ ./p:[0x401136] + 0x1000 0x10\n"
				   "@ ./p:[0x401140] < 0x1000\n"
				   "@ ./p:[0x401140] > 0x2000 0x40\n"
				   "@ ./p:[0x401150] - 0x2000\n"
				   "= End\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_STR(t->format, "mtrace");
	CHECK_EQ_U64(t->nbuffers, 2);
	const struct as_buffer *a = named(t, "0x1000#1"),
			       *b = named(t, "0x2000#1");
	CHECK(a && b);
	if (a && b) {
		CHECK_EQ_U64(a->size, 16);
		CHECK_EQ_U64(b->size, 64);
		CHECK(a->end <= b->start);
		CHECK_EQ_U64(as_trace_realloc_of(t, 1), 0);
		CHECK_EQ_U64(as_trace_realloc_of(t, 0), AS_NONE);
		CHECK(t->info == NULL); /* links are kept apart */
		CHECK(as_trace_buffer_frames(t, 1));
		if (as_trace_buffer_frames(t, 1))
			CHECK_STR(as_trace_buffer_frames(t, 1),
				  "./p:[0x401140]");
	}
	CHECK_EQ_U64(as_trace_lower_bound(t), 64);
	as_trace_destroy(t);
}

/*
 * Raw heaptrack frames name the first listed module that holds the
 * address, found by binary search (modules overlapping, nested, listed
 * out of order, and forgotten by "m 1 -").
 */
static void heaptrack_raw_frames_name_the_first_module_listed(void)
{
	struct as_diag d;
	struct as_trace *t = parse("m.heaptrack",
				   "v 10400 3\n"
				   "x 4 prog\n"
				   "m 4 b.so 3000 0 1000\n"   /* [3000, 4000) */
				   "m 4 a.so 1000 0 4000\n"   /* [1000, 5000) */
				   "m 4 c.so 1800 0 100\n"    /* inside a.so */
				   "t 1200 0\n"
				   "t 3400 0\n"
				   "t 4800 0\n"
				   "t 9000 0\n"
				   "+ 10 1 10000\n"
				   "+ 10 2 10100\n"
				   "+ 10 3 10200\n"
				   "+ 10 4 10300\n"
				   "m 1 -\n"
				   "m 4 d.so 1000 0 100\n"
				   "t 1010 0\n"
				   "t 3010 0\n"
				   "+ 10 5 10400\n"
				   "+ 10 6 10500\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	static const char *const want[] = {
		"0x1200 a.so+0x200", "0x3400 b.so+0x400", "0x4800 a.so+0x3800",
		"0x9000", "0x1010 d.so+0x10", "0x3010",
	};
	CHECK_EQ_U64(t->nbuffers, 6);
	for (uint32_t i = 0; i < t->nbuffers && i < 6; i++) {
		const char *f = as_trace_buffer_frames(t, i);
		CHECK(f != NULL);
		if (f)
			CHECK_STR(f, want[i]);
	}
	as_trace_destroy(t);
}

static void mtrace_failed_malloc_is_a_mark_not_a_buffer(void)
{
	struct as_diag d;
	struct as_trace *t = parse("f.mtrace",
				   "= Start\n+ 0x1000 0x10\n"
				   "@ [0x401136] + (nil) 0xffffffffff\n"
				   "! 0x1000 0x20000000000\n- 0x1000\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 1);
	CHECK_EQ_U64(t->nmarks, 2);
	if (t->nmarks == 2) {
		CHECK_EQ_U64(t->marks[0].kind, AS_MARK_FAILED);
		CHECK_EQ_U64(t->marks[0].size, 0xffffffffffull);
		CHECK_EQ_U64(t->marks[1].size, 0x20000000000ull);
	}
	CHECK_EQ_U64(stat_of(t, "failed allocations"), 1);
	CHECK_EQ_U64(stat_of(t, "failed reallocs"), 1);
	as_trace_destroy(t);
}

static void mtrace_frees_of_unknown_addresses_are_counted_not_refused(void)
{
	struct as_diag d;
	struct as_trace *t = parse("u.mtrace",
				   "= Start\n- 0x5000\n- 0x6000\n"
				   "+ 0x1000 0x10\n- 0x1000\n- 0x1000\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 1);
	CHECK_EQ_U64(stat_of(t, "frees of addresses never allocated"), 3);
	as_trace_destroy(t);
}

static void mtrace_names_number_the_blocks_at_each_address(void)
{
	struct as_diag d;
	struct as_trace *t = parse("n.mtrace",
				   "= Start\n+ 0x1000 0x10\n- 0x1000\n"
				   "+ 0x1000 0x20\n+ 0x1000 0x30\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(named(t, "0x1000#1") && named(t, "0x1000#2") &&
	      named(t, "0x1000#3"));
	/* The third came while the second was live: its free was lost. */
	CHECK_EQ_U64(stat_of(t, "allocations at a live address"), 1);
	/* No "= End": the last block lives to the end, never freed. */
	const struct as_buffer *c = named(t, "0x1000#3");
	CHECK(c && (c->flags & AS_BUF_NEVER_FREED) && c->end == t->end_time);
	CHECK_EQ_U64(stat_of(t, "blocks live at the end (no = End"), 1);
	as_trace_destroy(t);
}

static void mtrace_names_are_made_when_first_read_and_match_the_counts(void)
{
	/* A block at each end of a merged range and one mapped far away: the
	 * names come back through the address map, ranks per address. */
	struct as_diag d;
	struct as_trace *t = parse("m.mtrace",
				   "= Start\n+ 0x1000 0x10\n+ 0x1010 0x0\n"
				   "- 0x1000\n+ 0x1000 0x20\n"
				   "+ 0x7f0000000000 0x8\n= End\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 4);
	for (uint32_t i = 0; i < t->nbuffers; i++)
		CHECK(t->buffers[i].name == NULL); /* none held by the load */
	static const char *const want[] = {"0x1000#1", "0x1010#1", "0x1000#2",
					   "0x7f0000000000#1"};
	for (uint32_t i = 0; i < 4 && i < t->nbuffers; i++)
		CHECK_STR(as_trace_buffer_name(t, i), want[i]);
	CHECK(t->buffers[0].name != NULL); /* all made at the first read */
	CHECK(as_trace_buffer_name(t, 4) == NULL);
	as_trace_destroy(t);
}

static void mtrace_incomplete_last_line_is_ignored_and_counted(void)
{
	/* An exec or a kill cuts the trace mid-line: "0x3" may be "0x30". */
	struct as_diag d;
	struct as_trace *t = parse("c.mtrace",
				   "= Start\n+ 0x1000 0x10\n+ 0x2000 0x3", NULL,
				   &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->nbuffers, 1);
	CHECK_EQ_U64(stat_of(t, "incomplete last line ignored"), 1);
	as_trace_destroy(t);
}

static void mtrace_callers_are_interned_once(void)
{
	char text[4096] = "= Start\n";
	for (int i = 0; i < 40; i++) {
		char line[96];
		snprintf(line, sizeof(line),
			 "@ /lib/libc.so.6:(f+1a)[0x%x] + 0x%x 0x10\n",
			 0x100 + i % 2, 0x1000 + 0x20 * i);
		strcat(text, line);
	}
	struct as_diag d;
	struct as_trace *t = parse("i.mtrace", text, NULL, &d);
	CHECK(t && as_trace_buffer_frames(t, 0));
	if (!t || !as_trace_buffer_frames(t, 0)) {
		as_trace_destroy(t);
		return;
	}
	CHECK_STR(as_trace_buffer_frames(t, 0),
		  "/lib/libc.so.6:(f+1a)[0x100]");
	for (uint32_t i = 2; i < t->nbuffers; i++)
		CHECK(as_trace_buffer_frames(t, i) ==
		      as_trace_buffer_frames(t, i % 2));
	CHECK(as_trace_buffer_frames(t, 0) !=
	      as_trace_buffer_frames(t, 1));
	as_trace_destroy(t);
}

static void mtrace_recorded_offsets_shrink_gaps_and_keep_alignment(void)
{
	struct as_diag d;
	/* A heap block, a second one 32 bytes on, and an mmap'ed block
	 * terabytes above. */
	struct as_trace *t = parse("g.mtrace",
				   "= Start\n+ 0x55d0c0a012a0 0x10\n"
				   "+ 0x55d0c0a012d0 0x10\n"
				   "+ 0x7f0000000010 0x40000\n",
				   NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	const struct as_buffer *a = &t->buffers[0], *b = &t->buffers[1],
			       *c = &t->buffers[2];
	CHECK_EQ_U64(a->recorded, 0x2a0);     /* its offset in the page */
	CHECK_EQ_U64(b->recorded - a->recorded, 0x30); /* kept as is */
	CHECK(c->recorded > b->recorded + b->size);
	CHECK(c->recorded - (b->recorded + b->size) <= 2 * 4096);
	CHECK_EQ_U64(c->recorded % 4096, 0x10); /* alignment kept */
	as_trace_destroy(t);
}

/* Lines run a few lines after they are parsed: the error told is still the
 * first one in the file, a bad line or a bad operation. */
static void mtrace_errors_name_the_first_bad_line_though_lines_run_late(void)
{
	struct as_diag d;
	CHECK(parse("e.mtrace", "= Start\n+ 0x1000 0x10\n< 0x1000\n"
				"> (nil) 0x20\n+ 0x2000 zz\n", "mtrace",
		    &d) == NULL);
	CHECK_EQ_U64(d.line, 4);
	CHECK(strstr(d.msg, "(nil)") != NULL);
	CHECK(parse("e.mtrace", "= Start\n+ 0x1000 0x10\n- 0x1000\n"
				"+ 0x2000 zz\n> (nil) 0x20\n", "mtrace",
		    &d) == NULL);
	CHECK_EQ_U64(d.line, 4);
	CHECK(strstr(d.msg, "zz") != NULL);
	/* 40 good lines, then the bad operation: past the queue. */
	char text[2048] = "= Start\n";
	for (int i = 0; i < 20; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "+ 0x%x 0x10\n- 0x%x\n", 0x1000 + 16 * i,
			 0x1000 + 16 * i);
	strcat(text, "< 0x1000\n> (nil) 0x20\n");
	CHECK(parse("e.mtrace", text, "mtrace", &d) == NULL);
	CHECK_EQ_U64(d.line, 43);
}

static void mtrace_is_detected_by_content(void)
{
	struct as_diag d;
	struct as_trace *t =
		parse("trace", "@ ./p:[0x401136] + 0x1000 0x10\n", NULL, &d);
	CHECK(t && strcmp(t->format, "mtrace") == 0);
	as_trace_destroy(t);
	t = parse("trace", "= Start\n+ 0x1000 0x10\n", NULL, &d);
	CHECK(t && strcmp(t->format, "mtrace") == 0);
	as_trace_destroy(t);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A random mtrace file against a plain count of live bytes. */
static void mtrace_random_traces_peak_as_a_plain_count(void)
{
	uint64_t seed = 12345;
	printf("# seed %" PRIu64 "\n", seed);
	size_t cap = 1 << 20, len = 0;
	char *text = malloc(cap);
	uint64_t addrs[64] = {0}, sizes[64] = {0};
	uint64_t live = 0, peak = 0, blocks = 0;
	len += (size_t)snprintf(text + len, cap - len, "= Start\n");
	for (int i = 0; i < 5000 && text; i++) {
		uint64_t r = splitmix64(&seed);
		int k = (int)(r % 64);
		uint64_t size = (r >> 8) % 5000;
		uint64_t addr = 0x10000 + (uint64_t)k * 0x2000;
		int op = (int)((r >> 40) % 4);
		if (addrs[k] && op == 0) {
			len += (size_t)snprintf(text + len, cap - len,
						"- 0x%" PRIx64 "\n", addr);
			live -= sizes[k];
			addrs[k] = 0;
		} else if (addrs[k] && op == 1) { /* realloc in place */
			len += (size_t)snprintf(
				text + len, cap - len,
				"@ [0x40] < 0x%" PRIx64 "\n@ [0x40] > 0x%" PRIx64
				" 0x%" PRIx64 "\n",
				addr, addr, size);
			live = live - sizes[k] + size;
			sizes[k] = size;
			blocks++;
		} else if (!addrs[k]) {
			len += (size_t)snprintf(text + len, cap - len,
						"@ [0x%x] + 0x%" PRIx64
						" 0x%" PRIx64 "\n",
						k % 7, addr, size);
			addrs[k] = addr;
			sizes[k] = size;
			live += size;
			blocks++;
		} else { /* a free of an address never allocated */
			len += (size_t)snprintf(text + len, cap - len,
						"- 0x%" PRIx64 "\n",
						addr + 0x1000);
		}
		if (live > peak)
			peak = live;
	}
	struct as_diag d;
	struct as_trace *t = text ? parse("rand.mtrace", text, NULL, &d)
				  : NULL;
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ_U64(t->nbuffers, blocks);
		CHECK_EQ_U64(as_trace_lower_bound(t), peak);
	}
	as_trace_destroy(t);
	free(text);
}

static const char heaptrack_text[] =
	"v 10400 3\n"
	"X prog --flag\n"
	"I 1000 5e2919\n"
	"s 9 /bin/prog\n"        /* 1 */
	"s 4 main\n"             /* 2 */
	"s 6 prog.c\n"           /* 3 */
	"s 6 helper\n"           /* 4 */
	"i 401000 1 2 3 a\n"     /* 1: main prog.c:10 */
	"i 401100 1 4 3 14\n"    /* 2: helper prog.c:20 */
	"i 401200 1\n"           /* 3: no symbol */
	"t 1 0\n"                /* 1: main */
	"t 2 1\n"                /* 2: helper <- main */
	"t 3 2\n"                /* 3: ? <- helper <- main */
	"a 100 2\n"              /* 0: 256 bytes from helper */
	"a 40 3\n"               /* 1: 64 bytes */
	"c 2\n"
	"+ 0\n"
	"+ 0\n"
	"c 5\n"
	"+ 1\n"
	"- 0\n"
	"- 1\n"
	"R 61a\n"
	"c 9\n";

static void heaptrack_interpreted_frees_the_latest_block_of_its_info(void)
{
	struct as_diag d;
	struct as_trace *t = parse("heaptrack.prog.1", heaptrack_text, NULL,
				   &d);
	CHECK(t != NULL);
	if (!t) {
		printf("#   %s:%" PRIu64 ": %s\n", d.file, d.line, d.msg);
		return;
	}
	CHECK_STR(t->format, "heaptrack");
	CHECK_EQ_U64(t->nbuffers, 3);
	const struct as_buffer *a1 = named(t, "a0#1"), *a2 = named(t, "a0#2"),
			       *b1 = named(t, "a1#1");
	CHECK(a1 && a2 && b1);
	if (a1 && a2 && b1) {
		CHECK_EQ_U64(a2->end, 3); /* the latest went first */
		CHECK(a1->flags & AS_BUF_NEVER_FREED);
		CHECK_EQ_U64(b1->size, 64);
	}
	CHECK_EQ_U64(as_trace_lower_bound(t), 256 + 256 + 64);
	CHECK_EQ_U64(stat_of(t, "blocks live at the end"), 1);
	as_trace_destroy(t);
}

static void heaptrack_stacks_come_from_the_trace_tree_innermost_first(void)
{
	struct as_diag d;
	struct as_trace *t = parse("h", heaptrack_text, NULL, &d);
	CHECK(t && as_trace_buffer_frames(t, 0));
	if (!t || !as_trace_buffer_frames(t, 0)) {
		as_trace_destroy(t);
		return;
	}
	CHECK_STR(as_trace_buffer_frames(t, 0),
		  "helper prog.c:20\nmain prog.c:10");
	CHECK_STR(as_trace_buffer_frames(t, 2),
		  "0x401200 prog\nhelper prog.c:20\nmain prog.c:10");
	CHECK(as_trace_buffer_frames(t, 0) ==
	      as_trace_buffer_frames(t, 1)); /* interned */
	as_trace_destroy(t);
}

static void heaptrack_timestamps_are_milliseconds(void)
{
	struct as_diag d;
	struct as_trace *t = parse("h", heaptrack_text, NULL, &d);
	CHECK(t && t->clock);
	if (t && t->clock) {
		CHECK_EQ_U64(t->clock[0], 2000);
		CHECK_EQ_U64(t->clock[2], 5000);
		CHECK_EQ_U64(t->clock[t->end_time], 9000);
	}
	as_trace_destroy(t);
}

static void heaptrack_raw_blocks_are_named_and_placed_by_address(void)
{
	struct as_diag d;
	struct as_trace *t = parse(
		"h.raw",
		"v 10400 3\nx d /usr/bin/prog\nX prog\n"
		"m 1 x 56546d144000 0 1dd08\n"
		"t 56546d145000 0\nt 56546d146000 1\n"
		"+ 20 2 56549c014530\n+ 10 1 56549c014560\n"
		"- 56549c014530\n- 7f0000000000\n",
		NULL, &d);
	CHECK(t != NULL);
	if (!t) {
		printf("#   %s:%" PRIu64 ": %s\n", d.file, d.line, d.msg);
		return;
	}
	CHECK_EQ_U64(t->nbuffers, 2);
	const struct as_buffer *a = named(t, "0x56549c014530#1");
	CHECK(a && a->size == 32 && a->end == 2);
	CHECK_EQ_U64(t->buffers[1].recorded - t->buffers[0].recorded, 0x30);
	CHECK(as_trace_buffer_frames(t, 0));
	if (as_trace_buffer_frames(t, 0)) /* the executable's module "x" */
		CHECK_STR(as_trace_buffer_frames(t, 0), "0x56546d146000 prog+0x2000\n"
					"0x56546d145000 prog+0x1000");
	CHECK_EQ_U64(stat_of(t, "frees of addresses never allocated"), 1);
	as_trace_destroy(t);
}

/* ---- compressed input ---- */

static const char plain_mtrace[] = "= Start\n+ 0x1000 0x10\n+ 0x2000 0x20\n"
				   "- 0x1000\n< 0x2000\n> 0x3000 0x30\n";

static bool write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

/* Two gzip members, as `cat a.gz b.gz` makes. */
static size_t gzip_two_members(const char *text, unsigned char *out,
			       size_t cap)
{
	size_t half = strlen(text) / 2, used = 0;
	while (text[half] != '\n')
		half++;
	half++;
	const char *parts[2] = {text, text + half};
	size_t lens[2] = {half, strlen(text) - half};
	for (int i = 0; i < 2; i++) {
		z_stream z = {0};
		if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return 0;
		z.next_in = (Bytef *)parts[i];
		z.avail_in = (uInt)lens[i];
		z.next_out = out + used;
		z.avail_out = (uInt)(cap - used);
		int rc = deflate(&z, Z_FINISH);
		used = cap - z.avail_out;
		deflateEnd(&z);
		if (rc != Z_STREAM_END)
			return 0;
	}
	return used;
}

/* Two zstd frames, as `cat a.zst b.zst` makes. */
static size_t zstd_two_frames(const char *text, unsigned char *out,
			      size_t cap)
{
	size_t n = strlen(text), half = n / 2;
	size_t a = ZSTD_compress(out, cap, text, half, 3);
	if (ZSTD_isError(a))
		return 0;
	size_t b = ZSTD_compress(out + a, cap - a, text + half, n - half, 3);
	return ZSTD_isError(b) ? 0 : a + b;
}

static struct as_trace *load(const char *path, struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_load(path, NULL, &t, d) != AS_OK)
		return NULL;
	return t;
}

static void compressed_files_read_as_the_plain_one(void)
{
	char dir[] = "/tmp/as_formats2_XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	unsigned char buf[4096];
	char path[4][256];
	snprintf(path[0], sizeof(path[0]), "%s/t.mtrace", dir);
	snprintf(path[1], sizeof(path[1]), "%s/t.mtrace.gz", dir);
	snprintf(path[2], sizeof(path[2]), "%s/t.mtrace.zst", dir);
	snprintf(path[3], sizeof(path[3]), "%s/no-extension", dir);
	size_t gz = gzip_two_members(plain_mtrace, buf, sizeof(buf));
	CHECK(gz > 0 && write_file(path[1], buf, gz));
	size_t zs = zstd_two_frames(plain_mtrace, buf, sizeof(buf));
	CHECK(zs > 0 && write_file(path[2], buf, zs));
	CHECK(write_file(path[3], buf, zs)); /* zstd, known by its magic */
	CHECK(write_file(path[0], plain_mtrace, strlen(plain_mtrace)));
	struct as_diag d;
	struct as_trace *ref = load(path[0], &d);
	CHECK(ref != NULL);
	for (int i = 1; i < 4 && ref; i++) {
		struct as_trace *t = load(path[i], &d);
		CHECK(t != NULL);
		if (!t) {
			printf("#   %s: %s\n", path[i], d.msg);
			continue;
		}
		CHECK_STR(t->format, "mtrace");
		CHECK_EQ_U64(t->nbuffers, ref->nbuffers);
		CHECK_EQ_U64(t->nevents, ref->nevents);
		CHECK_EQ_U64(as_trace_lower_bound(t),
			     as_trace_lower_bound(ref));
		as_trace_destroy(t);
	}
	as_trace_destroy(ref);
	/* Cut short: an error, never a shorter trace. */
	CHECK(write_file(path[1], buf, zs - 3));
	CHECK(load(path[1], &d) == NULL);
	CHECK(strstr(d.msg, "gzip") != NULL); /* named .gz: not gzip */
	CHECK(write_file(path[2], buf, zs - 3));
	CHECK(load(path[2], &d) == NULL);
	CHECK(strstr(d.msg, "truncated zstd") != NULL);
	for (int i = 0; i < 4; i++)
		unlink(path[i]);
	rmdir(dir);
}

static void the_input_limit_counts_decompressed_bytes_exactly(void)
{
	char dir[] = "/tmp/as_formats2_XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	unsigned char buf[4096];
	char plain[256], zst[256];
	snprintf(plain, sizeof(plain), "%s/t.mtrace", dir);
	snprintf(zst, sizeof(zst), "%s/t.mtrace.zst", dir);
	uint64_t n = strlen(plain_mtrace);
	size_t zs = zstd_two_frames(plain_mtrace, buf, sizeof(buf));
	CHECK(zs > 0 && write_file(zst, buf, zs));
	CHECK(write_file(plain, plain_mtrace, n));
	const char *paths[2] = {plain, zst};
	for (int i = 0; i < 2; i++) {
		struct as_diag d;
		struct as_trace *t = NULL;
		struct as_load_options o = {.max_input_bytes = n};
		CHECK(as_trace_load_opts(paths[i], &o, &t, &d) == AS_OK);
		as_trace_destroy(t);
		t = NULL;
		o.max_input_bytes = UINT64_MAX;
		CHECK(as_trace_load_opts(paths[i], &o, &t, &d) == AS_OK);
		as_trace_destroy(t);
		t = NULL;
		o.max_input_bytes = n - 1;
		CHECK(as_trace_load_opts(paths[i], &o, &t, &d) == AS_EPARSE);
		CHECK(t == NULL);
		CHECK(strstr(d.msg, "--max-input-bytes") != NULL);
		CHECK((strstr(d.msg, "after decompression") != NULL) == (i == 1));
		CHECK_STR(d.file, paths[i]);
	}
	unlink(plain);
	unlink(zst);
	rmdir(dir);
}

/*
 * Random text: allocations, comments, lines of spaces, lone CRs and runs of
 * blank lines ("\n", "\r\n", up to 40,000 in a row) over several of the
 * loader's 256 KiB windows, then one bad line. Its number must be the one
 * counting every line gives, read whole or from a file.
 */
static void blank_line_runs_keep_line_numbers_across_windows(void)
{
	char dir[] = "/tmp/as_formats2_XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/runs.ops", dir);
	size_t cap = 4u << 20;
	char *text = malloc(cap);
	CHECK(text != NULL);
	for (uint64_t seed = 1; text && seed <= 12; seed++) {
		uint64_t r = seed * 7919;
		printf("# seed %" PRIu64 "\n", r);
		size_t len = 0;
		uint64_t lines = 0;
		while (len < (1u << 20) + (seed << 16)) {
			uint64_t x = splitmix64(&r);
			unsigned kind = (unsigned)(x % 6);
			size_t n = kind < 2 ? (size_t)((x >> 8) % 40000) : 1;
			for (size_t i = 0; i < n && len + 64 < cap; i++) {
				const char *u = kind == 0   ? "\n"
						: kind == 1 ? "\r\n"
						: kind == 2 ? "alloc a 8\nfree a\n"
						: kind == 3 ? "# note\n"
						: kind == 4 ? "  \t\n"
							    : "\n\n\r\n";
				size_t ul = strlen(u);
				memcpy(text + len, u, ul);
				len += ul;
				for (size_t k = 0; k < ul; k++)
					lines += u[k] == '\n';
			}
		}
		memcpy(text + len, "bogus\n", 6);
		len += 6;
		struct as_diag d;
		struct as_trace *t = NULL;
		CHECK(as_trace_parse("runs.ops", text, len, "ops", &t, &d) ==
		      AS_EPARSE);
		CHECK_EQ_U64(d.line, lines + 1);
		CHECK(strstr(d.msg, "'bogus'") != NULL);
		CHECK(write_file(path, text, len));
		CHECK(as_trace_load(path, "ops", &t, &d) == AS_EPARSE);
		CHECK_EQ_U64(d.line, lines + 1);
		CHECK(strstr(d.msg, "'bogus'") != NULL);
	}
	free(text);
	/* A lone CR is a line's text, not a blank line: it ends a run. */
	static const char cr[] = "alloc a 8\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
				 "\n\n\n\n\n\r\r\n\n\n";
	struct as_diag d;
	struct as_trace *t = NULL;
	CHECK(as_trace_parse("cr.ops", cr, strlen(cr), "ops", &t, &d) ==
	      AS_EPARSE);
	CHECK_EQ_U64(d.line, 21);
	unlink(path);
	rmdir(dir);
}

static void max_input_texts_take_units_and_none(void)
{
	uint64_t v = 0;
	CHECK(as_parse_max_input("64G", &v) == AS_OK);
	CHECK_EQ_U64(v, (uint64_t)64 << 30);
	CHECK(as_parse_max_input("1", &v) == AS_OK);
	CHECK_EQ_U64(v, 1);
	CHECK(as_parse_max_input("15E", &v) == AS_OK);
	CHECK_EQ_U64(v, (uint64_t)15 << 60);
	CHECK(as_parse_max_input("none", &v) == AS_OK);
	CHECK_EQ_U64(v, UINT64_MAX);
	static const char *const bad[] = {"", "0", "0K", "G", "1X", "-1",
					  "1.5G", "16E", "17179869184G",
					  "18446744073709551616", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK(as_parse_max_input(bad[i], &v) == AS_EINVAL);
}

int main(void)
{
	TEST_RUN(mtrace_realloc_frees_the_old_block_and_links_the_new_one);
	TEST_RUN(mtrace_failed_malloc_is_a_mark_not_a_buffer);
	TEST_RUN(heaptrack_raw_frames_name_the_first_module_listed);
	TEST_RUN(mtrace_frees_of_unknown_addresses_are_counted_not_refused);
	TEST_RUN(mtrace_names_number_the_blocks_at_each_address);
	TEST_RUN(mtrace_names_are_made_when_first_read_and_match_the_counts);
	TEST_RUN(mtrace_incomplete_last_line_is_ignored_and_counted);
	TEST_RUN(mtrace_callers_are_interned_once);
	TEST_RUN(mtrace_recorded_offsets_shrink_gaps_and_keep_alignment);
	TEST_RUN(mtrace_errors_name_the_first_bad_line_though_lines_run_late);
	TEST_RUN(mtrace_is_detected_by_content);
	TEST_RUN(mtrace_random_traces_peak_as_a_plain_count);
	TEST_RUN(heaptrack_interpreted_frees_the_latest_block_of_its_info);
	TEST_RUN(heaptrack_stacks_come_from_the_trace_tree_innermost_first);
	TEST_RUN(heaptrack_timestamps_are_milliseconds);
	TEST_RUN(heaptrack_raw_blocks_are_named_and_placed_by_address);
	TEST_RUN(compressed_files_read_as_the_plain_one);
	TEST_RUN(the_input_limit_counts_decompressed_bytes_exactly);
	TEST_RUN(max_input_texts_take_units_and_none);
	TEST_RUN(blank_line_runs_keep_line_numbers_across_windows);
	return tap_done();
}
