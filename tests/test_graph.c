/*
 * Graph traces: tensors become buffers whose size follows from shape and
 * dtype and whose lifetime runs from producer to last consumer; operators
 * keep their kind, axis and buffers; malformed graphs are refused by name.
 */
#include "allocscope/build.h"
#include "tap.h"

#define HEAD "{\"format\": \"allocscope-trace\", \"version\": 1, "

static struct as_trace *parse(const char *text, struct as_diag *d)
{
	struct as_trace *t = NULL;
	if (as_trace_parse("g.json", text, strlen(text), NULL, &t, d) !=
	    AS_OK) {
		printf("#   parse: %s:%llu: %s\n", d->file,
		       (unsigned long long)d->line, d->msg);
		return NULL;
	}
	return t;
}

static int64_t find(const struct as_trace *t, const char *name)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (strcmp(t->buffers[i].name, name) == 0)
			return i;
	return -1;
}

/* a (input) -> conv -> b -> reshape -> c -> relu -> d (output) */
static const char *chain =
	HEAD "\"graph\": {\"tensors\": ["
	"{\"name\": \"a\", \"shape\": [512, 32, 32], \"dtype\": \"float32\"},"
	"{\"name\": \"b\", \"shape\": [1, 512, 32, 32], \"dtype\": \"float16\"},"
	"{\"name\": \"c\", \"shape\": [512, 1024], \"dtype\": \"float16\"},"
	"{\"name\": \"d\", \"shape\": [512, 1024], \"dtype\": \"int8\"}],\n"
	"\"inputs\": [\"a\"], \"outputs\": [\"d\"], \"ops\": [\n"
	"{\"name\": \"conv\", \"kind\": \"conv\", \"inputs\": [\"a\"], "
	"\"outputs\": [\"b\"]},\n"
	"{\"kind\": \"reshape\", \"inputs\": [\"b\"], \"outputs\": [\"c\"]},\n"
	"{\"kind\": \"relu\", \"inputs\": [\"c\"], \"outputs\": [\"d\"]}]}}";

static void a_tensor_size_is_the_product_of_dims_times_element_size(void)
{
	struct as_diag d;
	struct as_trace *t = parse(chain, &d);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_EQ_U64(t->buffers[find(t, "a")].size, 2u << 20); /* 2 MiB */
	CHECK_EQ_U64(t->buffers[find(t, "b")].size, 1u << 20);
	CHECK_EQ_U64(t->buffers[find(t, "d")].size, 512u << 10);
	CHECK_EQ_U64(as_buffer_align(&t->buffers[0]), 64);
	CHECK_STR(t->format, "json");
	as_trace_destroy(t);
}

static void a_tensor_lives_from_its_producer_to_its_last_consumer(void)
{
	struct as_diag d;
	struct as_trace *t = parse(chain, &d);
	if (!t) {
		CHECK(t != NULL);
		return;
	}
	const struct as_buffer *a = &t->buffers[find(t, "a")];
	const struct as_buffer *b = &t->buffers[find(t, "b")];
	const struct as_buffer *c = &t->buffers[find(t, "c")];
	CHECK_EQ_U64(a->start, 0); /* graph input: from the start */
	CHECK_EQ_U64(a->end, 1);   /* read by op 0 */
	CHECK_EQ_U64(b->start, 0); /* produced by op 0 */
	CHECK_EQ_U64(b->end, 2);   /* last read by op 1 */
	CHECK_EQ_U64(c->start, 1);
	CHECK_EQ_U64(c->end, 3);
	CHECK_EQ_U64(as_trace_lower_bound(t), (2u << 20) + (1u << 20));
	as_trace_destroy(t);
}

static void graph_inputs_and_outputs_are_marked_and_outputs_live_to_the_end(void)
{
	const char *text =
		HEAD "\"graph\": {\"tensors\": ["
		"{\"name\": \"x\", \"shape\": [4], \"dtype\": \"float32\"},"
		"{\"name\": \"y\", \"shape\": [4], \"dtype\": \"float32\"},"
		"{\"name\": \"z\", \"shape\": [4], \"dtype\": \"float32\"}],"
		"\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"ops\": ["
		"{\"kind\": \"add\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]},"
		"{\"kind\": \"add\", \"inputs\": [\"x\"], \"outputs\": [\"z\"]},"
		"{\"kind\": \"nop\", \"inputs\": [], \"outputs\": []}]}}";
	struct as_diag d;
	struct as_trace *t = parse(text, &d);
	if (!t) {
		CHECK(t != NULL);
		return;
	}
	const struct as_buffer *x = &t->buffers[find(t, "x")];
	const struct as_buffer *y = &t->buffers[find(t, "y")];
	const struct as_buffer *z = &t->buffers[find(t, "z")];
	CHECK(x->flags & AS_BUF_GRAPH_INPUT);
	CHECK(!(x->flags & AS_BUF_GRAPH_OUTPUT));
	CHECK(y->flags & AS_BUF_GRAPH_OUTPUT);
	CHECK(!(z->flags & (AS_BUF_GRAPH_INPUT | AS_BUF_GRAPH_OUTPUT)));
	CHECK_EQ_U64(y->end, 3);  /* graph output: to the end of the graph */
	CHECK_EQ_U64(z->start, 1);
	CHECK_EQ_U64(z->end, 2);  /* never read: one step */
	CHECK_EQ_U64(x->end, 2);
	as_trace_destroy(t);
}

static void operators_keep_their_kind_axis_buffers_and_shapes(void)
{
	const char *text =
		HEAD "\"graph\": {\"align\": 16, \"tensors\": ["
		"{\"name\": \"in\", \"shape\": [1, 6, 2], \"dtype\": \"int8\","
		" \"align\": 4},"
		"{\"name\": \"p\", \"shape\": [1, 2, 2], \"dtype\": \"int8\"},"
		"{\"name\": \"q\", \"shape\": [1, 4, 2], \"dtype\": \"int8\"},"
		"{\"name\": \"out\", \"shape\": [1, 6, 2], \"dtype\": \"int8\"}],"
		"\"inputs\": [\"in\"], \"outputs\": [\"out\"], \"ops\": ["
		"{\"name\": \"s\", \"kind\": \"split\", \"axis\": -2,"
		" \"inputs\": [\"in\"], \"outputs\": [\"p\", \"q\"]},"
		"{\"name\": \"c\", \"kind\": \"concat\", \"axis\": 1,"
		" \"inputs\": [\"q\", \"p\"], \"outputs\": [\"out\"]}]}}";
	struct as_diag d;
	struct as_trace *t = parse(text, &d);
	if (!t) {
		CHECK(t != NULL);
		return;
	}
	CHECK_EQ_U64(t->nops, 2);
	CHECK_STR(t->ops[0].name, "s");
	CHECK_STR(t->ops[0].kind, "split");
	CHECK_EQ_U64(t->ops[0].axis, 1); /* -2 of rank 3 */
	CHECK_EQ_U64(t->ops[0].ninputs, 1);
	CHECK_EQ_U64(t->ops[0].noutputs, 2);
	CHECK_EQ_U64(t->ops[0].inputs[0], find(t, "in"));
	CHECK_EQ_U64(t->ops[0].outputs[1], find(t, "q"));
	CHECK_EQ_U64(t->ops[1].inputs[0], find(t, "q"));
	CHECK_EQ_U64(t->ops[1].outputs[0], find(t, "out"));
	CHECK(t->shapes != NULL);
	const struct as_tensor_shape *s = &t->shapes[find(t, "q")];
	CHECK_EQ_U64(s->rank, 3);
	CHECK_EQ_U64(s->dims[1], 4);
	CHECK_EQ_U64(s->elem_size, 1);
	CHECK_EQ_U64(as_buffer_align(&t->buffers[find(t, "in")]), 4);
	CHECK_EQ_U64(as_buffer_align(&t->buffers[find(t, "p")]), 16);
	as_trace_destroy(t);
}

static void event_traces_have_no_operators(void)
{
	const char *text = "alloc a 8\nfree a\n";
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("e.ops", text, strlen(text), NULL, &t,
			     &d) == AS_OK);
	if (t) {
		CHECK(t->ops == NULL);
		CHECK(t->shapes == NULL);
	}
	as_trace_destroy(t);
}

static void the_bundled_cnn_graph_has_a_reshape_a_concat_and_a_split(void)
{
	const char *src = getenv("AS_SOURCE_DIR");
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/cnn-graph.json",
		 src ? src : ".");
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_load(path, NULL, &t, &d) == AS_OK);
	if (!t) {
		printf("#   %s\n", d.msg);
		return;
	}
	bool seen[3] = {false, false, false};
	for (uint32_t i = 0; i < t->nops; i++) {
		seen[0] |= strcmp(t->ops[i].kind, "reshape") == 0;
		seen[1] |= strcmp(t->ops[i].kind, "concat") == 0;
		seen[2] |= strcmp(t->ops[i].kind, "split") == 0;
	}
	CHECK(seen[0] && seen[1] && seen[2]);
	CHECK_EQ_U64(t->buffers[find(t, "stem")].size, 16u * 64 * 64 * 4);
	as_trace_destroy(t);
}

/* A graph around one op line; `tensors` and `ops` are spliced in. */
static void refused(const char *tensors, const char *ops, const char *io,
		    const char *want, uint64_t line)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 HEAD "\n\"graph\": {\"tensors\": [\n"
		      "{\"name\": \"a\", \"shape\": [2, 4], \"dtype\": "
		      "\"float32\"},\n%s],\n%s\"ops\": [\n%s]}}",
		 tensors, io, ops);
	struct as_trace *t = NULL;
	struct as_diag d;
	int err = as_trace_parse("bad.json", text, strlen(text), NULL,
				 &t, &d);
	if (err != AS_EPARSE) {
		printf("#   accepted, want '%s'\n", want);
		tap_cur_failed = 1;
	} else {
		if (!strstr(d.msg, want)) {
			printf("#   got '%s', want '%s'\n", d.msg, want);
			tap_cur_failed = 1;
		}
		if (line && d.line != line) {
			printf("#   '%s' on line %llu, want %llu\n", d.msg,
			       (unsigned long long)d.line,
			       (unsigned long long)line);
			tap_cur_failed = 1;
		}
	}
	as_trace_destroy(t);
}

#define B "{\"name\": \"b\", \"shape\": [2, 4], \"dtype\": \"float32\"}"
#define IN "\"inputs\": [\"a\"], "
#define OP(kind, in, out)                                                  \
	"{\"kind\": \"" kind "\", \"inputs\": [" in "], \"outputs\": [" out \
	"]}"

static void malformed_graphs_are_refused_with_the_reason_and_line(void)
{
	refused("{\"name\": \"b\", \"shape\": [2], \"dtype\": \"float128\"}",
		"", IN, "unknown dtype 'float128'", 4);
	refused("{\"name\": \"b\", \"shape\": [4294967296, 4294967296], "
		"\"dtype\": \"int8\"}",
		"", IN, "size of tensor 'b' overflows 64 bits", 4);
	refused("{\"name\": \"b\", \"shape\": [2, 4294967296, 4294967296], "
		"\"dtype\": \"int8\"}",
		"", IN, "overflows 64 bits", 0);
	/* 3 x 5 x 17 x 257 x 641 x 65537 x 6700417 = 2^64 - 1 */
	refused("{\"name\": \"b\", \"shape\": [3, 5, 17, 257, 641, 65537, "
		"6700417], \"dtype\": \"int8\"}",
		"", "\"inputs\": [\"a\", \"b\"], ",
		"is too large (at most", 4);
	refused("{\"name\": \"b\", \"shape\": [1.5], \"dtype\": \"int8\"}", "",
		IN, "dims must be non-negative integers", 4);
	refused("{\"name\": \"b\", \"shape\": [-1], \"dtype\": \"int8\"}", "",
		IN, "dims must be non-negative integers", 0);
	refused("{\"name\": \"b\", \"dtype\": \"int8\"}", "", IN,
		"missing field 'shape'", 4);
	refused("{\"name\": \"b\", \"shape\": [1], \"dtype\": \"int8\", "
		"\"align\": 48}",
		"", IN, "the alignment of tensor 'b' is not a power of two", 4);
	refused("{\"name\": \"a\", \"shape\": [1], \"dtype\": \"int8\"}", "",
		IN, "tensor 'a' is declared twice", 4);
	refused(B, OP("add", "\"a\"", "\"nope\""), IN,
		"unknown tensor 'nope'", 0);
	refused(B, OP("add", "\"b\"", "\"a\""), IN,
		"'b' is read before any op produces it", 0);
	refused(B, OP("add", "\"a\"", "\"a\""), IN,
		"'a' is a graph input, no op may produce it", 0);
	refused(B, OP("add", "\"a\"", "\"b\"") ",\n" OP("add", "\"a\"", "\"b\""),
		IN, "'b' is produced twice", 7);
	refused(B, "", IN, "tensor 'b' is neither a graph input nor produced",
		4);
	refused(B ",{\"name\": \"c\", \"shape\": [3], \"dtype\": \"int8\"}",
		OP("add", "\"a\"", "\"b\"") ",\n" OP("reshape", "\"b\"", "\"c\""),
		IN, "reshape 'op1' changes the byte size", 7);
	refused(B, OP("reshape", "\"a\"", ""), IN,
		"needs one input and one output", 0);
	refused(B, OP("concat", "\"a\"", "\"b\""), IN,
		"concat needs an \"axis\"", 0);
	refused(B,
		"{\"kind\": \"concat\", \"axis\": 2, \"inputs\": [\"a\"], "
		"\"outputs\": [\"b\"]}",
		IN, "axis out of range", 0);
	refused(B,
		"{\"kind\": \"split\", \"axis\": \"x\", \"inputs\": [\"a\"], "
		"\"outputs\": [\"b\"]}",
		IN, "expected a small integer", 0);
	refused("{\"name\": \"b\", \"shape\": [2, 2], \"dtype\": \"float32\"},"
		"{\"name\": \"c\", \"shape\": [2, 3], \"dtype\": \"float32\"}",
		"{\"kind\": \"split\", \"axis\": 1, \"inputs\": [\"a\"], "
		"\"outputs\": [\"b\", \"c\"]}",
		IN, "do not add up to 'a'", 0);
	refused("{\"name\": \"b\", \"shape\": [1, 4], \"dtype\": \"float32\"},"
		"{\"name\": \"c\", \"shape\": [1, 4], \"dtype\": \"int8\"}",
		"{\"kind\": \"split\", \"axis\": 0, \"inputs\": [\"a\"], "
		"\"outputs\": [\"b\", \"c\"]}",
		IN, "'c' does not match the rank and element size", 0);
	refused("{\"name\": \"b\", \"shape\": [1, 4], \"dtype\": \"float32\"},"
		"{\"name\": \"c\", \"shape\": [1, 3], \"dtype\": \"float32\"}",
		"{\"kind\": \"split\", \"axis\": 0, \"inputs\": [\"a\"], "
		"\"outputs\": [\"b\", \"c\"]}",
		IN, "'c' differs from the whole off the axis", 0);
	refused(B, OP("add", "\"a\"", "\"b\""), "\"inputs\": [\"zz\"], ",
		"inputs: unknown tensor 'zz'", 0);
	refused(B, OP("add", "\"a\"", "\"b\""), "\"inputs\": \"a\", ",
		"expected an array of tensor names", 0);
	refused(B, "{\"inputs\": [\"a\"], \"outputs\": [\"b\"]}", IN,
		"missing field 'kind'", 0);
}

static void a_trace_is_a_graph_or_events_not_both(void)
{
	const char *both = HEAD "\"events\": [], \"graph\": {}}";
	const char *none = HEAD "\"metadata\": {}}";
	struct as_trace *t = NULL;
	struct as_diag d;
	CHECK(as_trace_parse("x.json", both, strlen(both), NULL, &t,
			     &d) == AS_EPARSE);
	CHECK(strstr(d.msg, "one of \"events\", \"buffers\" or \"graph\""));
	CHECK(as_trace_parse("x.json", none, strlen(none), NULL, &t,
			     &d) == AS_EPARSE);
	CHECK(strstr(d.msg, "\"graph\"") != NULL);
	const char *notobj = HEAD "\"graph\": []}";
	CHECK(as_trace_parse("x.json", notobj, strlen(notobj), NULL,
			     &t, &d) == AS_EPARSE);
	CHECK(strstr(d.msg, "graph: expected an object") != NULL);
}

int main(void)
{
	TEST_RUN(a_tensor_size_is_the_product_of_dims_times_element_size);
	TEST_RUN(a_tensor_lives_from_its_producer_to_its_last_consumer);
	TEST_RUN(graph_inputs_and_outputs_are_marked_and_outputs_live_to_the_end);
	TEST_RUN(operators_keep_their_kind_axis_buffers_and_shapes);
	TEST_RUN(event_traces_have_no_operators);
	TEST_RUN(the_bundled_cnn_graph_has_a_reshape_a_concat_and_a_split);
	TEST_RUN(malformed_graphs_are_refused_with_the_reason_and_line);
	TEST_RUN(a_trace_is_a_graph_or_events_not_both);
	return tap_done();
}
