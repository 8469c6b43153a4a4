/*
 * PyTorch profiler traces (Chrome trace JSON with [memory] events): the
 * mapping onto the trace model on hand-made traces (devices as spaces,
 * timestamp order, blocks from before profiling, enclosing operators as
 * frames), detection by name and by content, refusals, and the real sample
 * in ../shared/profiler: the trace's live bytes plus one constant per
 * device equal Total Allocated at every one of its 28,010 memory events,
 * read here from the file by a scanner of its own.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "allocscope/allocscope.h"
#include "helpers.h"

/* A memory event: ts, Addr, Bytes, Total Allocated, Device Type and Id,
 * tid. */
#define MEM(ts, addr, bytes, total, type, id, tid)                          \
	"{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 7, \"tid\": " #tid \
	", \"ts\": " #ts ", \"args\": {\"Addr\": " #addr ", \"Bytes\": "      \
	#bytes ", \"Total Allocated\": " #total ", \"Total Reserved\": "     \
	"4096, \"Device Type\": " #type ", \"Device Id\": " #id "}}"

/* An operator on thread tid over [ts, ts + dur]. */
#define OP(name, ts, dur, tid)                                              \
	"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" name "\", "     \
	"\"pid\": 7, \"tid\": " #tid ", \"ts\": " #ts ", \"dur\": " #dur "}"

static double stat_of(const struct as_trace *t, const char *key)
{
	for (uint32_t i = 0; i < t->ninput_stats; i++)
		if (strcmp(t->input_stats[i].key, key) == 0)
			return t->input_stats[i].value;
	return -1;
}

/* Out of order in the file; one block was allocated before profiling. */
static const char *const two_devices =
	"{\"schemaVersion\": 1, \"traceEvents\": [\n"
	MEM(30, 4096, -64, 68, 1, 0, 1) ",\n"
	MEM(10, 4096, 64, 164, 1, 0, 1) ",\n"
	MEM(20, 36864, 8, 8, 0, -1, 1) ",\n"
	MEM(20, 8192, -32, 132, 1, 0, 1) "\n"
	"], \"traceName\": \"t\"}\n";

static void memory_events_become_buffers_per_device_in_timestamp_order(void)
{
	struct as_diag d;
	struct as_trace *t = test_parse("two.json", two_devices, NULL, &d);
	CHECK(t != NULL);
	if (!t) {
		printf("#   %s\n", d.msg);
		return;
	}
	CHECK_STR(t->format, "profiler");
	CHECK_EQ_U64(t->nspaces, 2);
	CHECK_STR(t->spaces[0].name, "cpu");
	CHECK_STR(t->spaces[1].name, "cuda:0");
	CHECK_EQ_U64(t->nbuffers, 3);
	CHECK_EQ_U64(t->end_time, 5);
	/* Steps by ts, ties in file order: alloc 0x1000, the CPU alloc,
	 * the free of 0x2000 (allocated before), the free of 0x1000. */
	int64_t pre = test_buffer(t, "b2000_0"), a = test_buffer(t, "b1000_0"),
		cpu = test_buffer(t, "b9000_0");
	CHECK(pre == 0); /* blocks from before profiling come first */
	CHECK(a >= 0 && cpu >= 0);
	if (pre < 0 || a < 0 || cpu < 0) {
		as_trace_destroy(t);
		return;
	}
	const struct as_buffer *b = t->buffers;
	CHECK_EQ_U64(b[pre].start, 0);
	CHECK_EQ_U64(b[pre].end, 3);
	CHECK_EQ_U64(b[pre].size, 32);
	CHECK_EQ_U64(b[pre].space, 1);
	CHECK_EQ_U64(b[a].start, 1);
	CHECK_EQ_U64(b[a].end, 4);
	CHECK_EQ_U64(b[a].space, 1);
	CHECK_EQ_U64(b[cpu].start, 2);
	CHECK_EQ_U64(b[cpu].end, 5);
	CHECK_EQ_U64(b[cpu].space, 0);
	CHECK(b[cpu].flags & AS_BUF_NEVER_FREED);
	uint64_t addr = 0;
	CHECK(as_trace_address_of(t, 1, b[a].recorded, &addr) && addr == 4096);
	/* The clock: ts since the first memory event. */
	CHECK(t->clock != NULL);
	if (t->clock) {
		CHECK_EQ_U64(t->clock[1], 0);
		CHECK_EQ_U64(t->clock[3], 10);
		CHECK_EQ_U64(t->clock[4], 20);
	}
	/* 164 - 96 live (64 and the 32 from before): 68 at every event. */
	CHECK(stat_of(t, "profiler_before_trace_bytes_cuda:0") == 68);
	CHECK(stat_of(t, "profiler_before_trace_bytes_cpu") == 0);
	CHECK(stat_of(t, "profiler_allocated_before_trace") == 1);
	CHECK(stat_of(t, "profiler_memory_events") == 4);
	CHECK(stat_of(t, "profiler_total_allocated_mismatches") == -1);
	CHECK_EQ_U64(as_trace_lower_bound_space(t, 1), 96);
	as_trace_destroy(t);
}

static void a_total_allocated_that_disagrees_is_counted(void)
{
	/* The second event says 100 bytes more than the first and its own. */
	static const char *const text =
		"{\"traceEvents\": [\n"
		MEM(1, 4096, 64, 64, 1, 0, 1) ",\n"
		MEM(2, 8192, 64, 228, 1, 0, 1) ",\n"
		"{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": 3, "
		"\"args\": {\"Addr\": 12288, \"Bytes\": 8, "
		"\"Device Type\": 0, \"Device Id\": -1}}\n"
		"]}";
	struct as_diag d;
	struct as_trace *t = test_parse("mismatch.json", text, NULL, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(stat_of(t, "profiler_total_allocated_mismatches") == 1);
	CHECK(stat_of(t, "profiler_before_trace_bytes_cuda:0") == -1);
	/* no Total Allocated on the CPU: nothing to check there */
	CHECK(stat_of(t, "profiler_before_trace_bytes_cpu") == -1);
	CHECK_EQ_U64(t->nbuffers, 3);
	as_trace_destroy(t);
}

static void enclosing_operators_are_the_frames_innermost_first(void)
{
	static const char *const text =
		"{\"traceEvents\": [\n"
		OP("outer", 0, 100, 1) ",\n"
		OP("aten::empty", 6, 2, 1) ",\n"
		OP("aten::linear", 5, 10, 1) ",\n"
		OP("other thread", 0, 1000, 2) ",\n"
		MEM(7, 4096, 16, 16, 1, 0, 1) ",\n"
		MEM(12, 8192, 16, 32, 1, 0, 1) ",\n"
		MEM(13, 12288, 16, 48, 1, 0, 1) ",\n"
		MEM(50, 16384, 16, 64, 1, 0, 2) ",\n"
		MEM(200, 20480, 16, 80, 1, 0, 1) "\n"
		"]}";
	struct as_diag d;
	struct as_trace *t = test_parse("ops.json", text, NULL, &d);
	CHECK(t != NULL);
	if (!t) {
		printf("#   %s\n", d.msg);
		return;
	}
	CHECK_EQ_U64(t->nbuffers, 5);
	CHECK_STR(as_trace_buffer_frames(t, 0),
		  "aten::empty\naten::linear\nouter");
	CHECK_STR(as_trace_buffer_frames(t, 1), "aten::linear\nouter");
	/* one stack, one string */
	CHECK(as_trace_buffer_frames(t, 1) == as_trace_buffer_frames(t, 2));
	CHECK_STR(as_trace_buffer_frames(t, 3), "other thread");
	CHECK(as_trace_buffer_frames(t, 4) == NULL);
	CHECK(stat_of(t, "profiler_operators") == 4);
	as_trace_destroy(t);
}

static void profiler_traces_are_told_by_name_and_by_content(void)
{
	struct as_diag d;
	static const char *const names[] = {"a.json", "a.pt.trace.json",
					    "no-extension", "a.trace"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct as_trace *t = test_parse(names[i], two_devices, NULL, &d);
		CHECK(t != NULL);
		if (t)
			CHECK_STR(t->format, "profiler");
		as_trace_destroy(t);
	}
	/* "traceEvents" past the first bytes: the JSON reader tells. */
	size_t pad = 70000;
	char *big = malloc(pad + strlen(two_devices) + 64);
	if (big) {
		strcpy(big, "{\"deviceProperties\": \"");
		size_t n = strlen(big);
		memset(big + n, 'x', pad);
		strcpy(big + n + pad, "\", ");
		strcat(big, two_devices + 1);
		struct as_trace *t = test_parse("far", big, NULL, &d);
		CHECK(t != NULL);
		if (t)
			CHECK_STR(t->format, "profiler");
		as_trace_destroy(t);
		free(big);
	}
	/* allocscope's own JSON traces are not profiler traces */
	static const char *const own =
		"{\"format\": \"allocscope-trace\", \"version\": 1, "
		"\"events\": [{\"op\": \"alloc\", \"name\": \"a\", "
		"\"size\": 8}]}";
	struct as_trace *t = test_parse("own.json", own, NULL, &d);
	CHECK(t != NULL);
	if (t)
		CHECK_STR(t->format, "json");
	as_trace_destroy(t);
	CHECK(test_parse("own.pt.trace.json", own, NULL, &d) == NULL);
	CHECK_STR(d.msg, "missing field 'traceEvents' (not a profiler trace)");
	CHECK(test_parse("own.json", own, "profiler", &d) == NULL);
}

/* The first line of the refusal of a trace made of `events`. */
static void refused(const char *events, uint64_t line, const char *msg)
{
	char text[2048];
	snprintf(text, sizeof(text), "{\"traceEvents\": [\n%s\n]}", events);
	struct as_diag d;
	struct as_trace *t = test_parse("bad.json", text, NULL, &d);
	CHECK(t == NULL);
	as_trace_destroy(t);
	if (d.line != line || strcmp(d.msg, msg) != 0) {
		printf("#   got %llu: %s\n#   want %llu: %s\n",
		       (unsigned long long)d.line, d.msg,
		       (unsigned long long)line, msg);
		tap_cur_failed = 1;
	}
}

static void inconsistent_memory_events_are_refused_on_their_line(void)
{
	refused(MEM(1, 4096, 64, 64, 1, 0, 1) ",\n"
		MEM(2, 4096, 32, 96, 1, 0, 1),
		3, "traceEvents[1].args.Addr: 0x1000 on cuda:0 is allocated "
		   "again without a free (allocated with 64 bytes on line 2)");
	refused(MEM(1, 4096, 64, 64, 1, 0, 1) ",\n"
		MEM(2, 4096, -32, 32, 1, 0, 1),
		3, "traceEvents[1].args.Bytes: 0x1000 on cuda:0 frees 32 bytes "
		   "(allocated with 64 bytes on line 2)");
	refused(MEM(1, 4096, 64, 64, 0, -1, 1) ",\n"
		MEM(2, 4096, -64, 0, 0, -1, 1) ",\n"
		MEM(3, 4096, -64, 0, 0, -1, 1),
		4, "traceEvents[2].args.Addr: 0x1000 on cpu is freed again "
		   "(its block was freed before)");
	refused("{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": 1, \"args\": "
		"{\"Bytes\": 64, \"Device Type\": 0, \"Device Id\": -1}}",
		2, "traceEvents[0].args: a memory event without 'Addr' (older "
		   "profilers wrote none): allocations cannot be paired with "
		   "their frees");
	refused(OP("a", 1, 2, 1), 1,
		"traceEvents: no memory events (record with "
		"torch.profiler.profile(profile_memory=True))");
	refused(MEM(1, 4096, 1.5, 64, 1, 0, 1), 2,
		"traceEvents[0].args.Bytes: expected an integer");
	refused(MEM(1, 4096, 64, -64, 1, 0, 1), 2,
		"traceEvents[0].args.Total Allocated: expected a non-negative "
		"integer");
}

/* ---- The real sample ---- */

/* The decompressed text of a gzip file; NULL when it cannot be read. */
static char *gunzip(const char *path, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	size_t cap = 1 << 20, n = 0;
	char *s = malloc(cap);
	int got;
	if (!g || !s) {
		free(s);
		if (g)
			gzclose(g);
		return NULL;
	}
	while ((got = gzread(g, s + n, (unsigned)(cap - n - 1))) > 0) {
		n += (size_t)got;
		if (cap - n - 1 == 0) {
			char *q = realloc(s, cap *= 2);
			if (!q) {
				free(s);
				gzclose(g);
				return NULL;
			}
			s = q;
		}
	}
	gzclose(g);
	s[n] = 0;
	*len = n;
	return s;
}

struct sev {
	double ts;
	long long bytes, total;
	int type, id;
	uint32_t index;
};

/* The first `needle` in [p, end), or NULL (not strstr: a sanitizer's
 * measures the whole rest of the text at each call). */
static const char *find_text(const char *p, const char *end,
			     const char *needle)
{
	size_t k = strlen(needle);
	for (; p + k <= end; p++)
		if (*p == *needle && memcmp(p, needle, k) == 0)
			return p;
	return NULL;
}

/* The number after `"key":` in [p, end), into *out; false when absent. */
static bool number_after(const char *p, const char *end, const char *key,
			 double *out)
{
	size_t k = strlen(key);
	char *q;
	if (!(p = find_text(p, end, key)) || p + k >= end)
		return false;
	*out = strtod(p + k, &q);
	return q != p + k;
}

static int by_ts(const void *x, const void *y)
{
	const struct sev *a = x, *b = y;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

/*
 * The sample's memory events found by a plain scan (each from its
 * "[memory]" to the next "ph"), sorted by ts with ties in file order; the
 * trace's live bytes per space at each step from its buffers; then
 * Total Allocated minus live bytes is one constant per device.
 */
static void sample_live_bytes_match_total_allocated_at_every_event(void)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/profiler/hta_resolver.pt.trace.json.gz",
		 tap_shared_dir());
	CHECK_STR(as_trace_sniff(path), "profiler");
	size_t len = 0;
	char *text = gunzip(path, &len);
	CHECK(text != NULL);
	struct as_trace *t = NULL;
	struct as_diag d;
	int err = as_trace_load(path, NULL, &t, &d);
	CHECK_EQ_U64(err, AS_OK);
	if (!text || err) {
		printf("#   %s\n", d.msg);
		free(text);
		return;
	}
	size_t n = 0, cap = 1024;
	struct sev *ev = malloc(cap * sizeof(*ev));
	const char *end = text + len;
	for (const char *p = find_text(text, end, "\"[memory]\""); p && ev;
	     p = find_text(p + 1, end, "\"[memory]\"")) {
		const char *next = find_text(p, end, "\"ph\"");
		const char *stop = next ? next : end;
		/* the sample writes ph, cat, s, name, pid, tid, ts, args */
		double ts, b, tot, ty, id;
		bool ok = number_after(p, stop, "\"ts\":", &ts) &&
			  number_after(p, stop, "\"Bytes\":", &b) &&
			  number_after(p, stop, "\"Total Allocated\":", &tot) &&
			  number_after(p, stop, "\"Device Type\":", &ty) &&
			  number_after(p, stop, "\"Device Id\":", &id);
		CHECK(ok);
		if (!ok)
			break;
		if (n == cap) {
			struct sev *q = realloc(ev, (cap *= 2) * sizeof(*ev));
			if (!q)
				break;
			ev = q;
		}
		ev[n] = (struct sev){ts, (long long)b, (long long)tot, (int)ty,
				     (int)id, (uint32_t)n};
		n++;
	}
	CHECK_EQ_U64(n, 28010);
	CHECK_EQ_U64(t->end_time, n + 1);
	qsort(ev, n, sizeof(*ev), by_ts);
	/* live[s][k]: the trace's bytes live in space s at step k */
	uint16_t ns = t->nspaces;
	long long *delta = calloc((size_t)ns * (n + 2), sizeof(*delta));
	for (uint32_t i = 0; delta && i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		delta[(size_t)b->space * (n + 2) + b->start] += (long long)b->size;
		delta[(size_t)b->space * (n + 2) + b->end] -= (long long)b->size;
	}
	long long base[8];
	bool based[8] = {false};
	long long *live = calloc(ns, sizeof(*live));
	size_t checked = 0, wrong = 0;
	for (size_t s = 0; delta && live && s < ns; s++)
		live[s] = delta[s * (n + 2)];
	for (size_t k = 0; delta && live && ev && k < n; k++) {
		char name[32];
		if (ev[k].type == 0)
			snprintf(name, sizeof(name), "cpu");
		else
			snprintf(name, sizeof(name), "cuda:%d", ev[k].id);
		for (uint16_t s = 0; s < ns; s++)
			live[s] += delta[(size_t)s * (n + 2) + k + 1];
		uint16_t s = 0;
		while (s < ns && strcmp(t->spaces[s].name, name) != 0)
			s++;
		if (s == ns || s >= 8) {
			wrong++;
			continue;
		}
		long long c = ev[k].total - live[s];
		if (!based[s]) {
			base[s] = c;
			based[s] = true;
		}
		wrong += c != base[s];
		checked++;
	}
	CHECK_EQ_U64(checked, 28010);
	CHECK_EQ_U64(wrong, 0);
	for (uint16_t s = 0; s < ns && s < 8; s++) {
		printf("# %s: Total Allocated = live bytes + %lld at every "
		       "event\n",
		       t->spaces[s].name, based[s] ? base[s] : 0);
		char key[96];
		snprintf(key, sizeof(key), "profiler_before_trace_bytes_%s",
			 t->spaces[s].name);
		CHECK(based[s] && stat_of(t, key) == (double)base[s]);
	}
	CHECK_EQ_U64(ns, 2);
	CHECK(ns == 2 && based[1] && base[1] == 4096614400LL);
	CHECK(based[0] && base[0] == 0);
	free(live);
	free(delta);
	free(ev);
	free(text);
	as_trace_destroy(t);
}

int main(void)
{
	TEST_RUN(memory_events_become_buffers_per_device_in_timestamp_order);
	TEST_RUN(a_total_allocated_that_disagrees_is_counted);
	TEST_RUN(enclosing_operators_are_the_frames_innermost_first);
	TEST_RUN(profiler_traces_are_told_by_name_and_by_content);
	TEST_RUN(inconsistent_memory_events_are_refused_on_their_line);
	if (tap_shared_dir())
		TEST_RUN(sample_live_bytes_match_total_allocated_at_every_event);
	else
		TEST_SKIP(sample_live_bytes_match_total_allocated_at_every_event,
			  "../shared is absent (AS_SHARED_DIR)");
	return tap_done();
}
