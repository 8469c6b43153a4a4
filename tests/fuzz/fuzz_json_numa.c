/*
 * The JSON reader's "numa" form: the input is the value of "numa" in an
 * otherwise valid trace, so the fuzzer spends its time inside that reader.
 */
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char head[] =
		"{\"format\": \"allocscope-trace\", \"version\": 1, \"numa\": ";
	char *doc = malloc(sizeof(head) + size + 2);
	if (!doc)
		return 0;
	memcpy(doc, head, sizeof(head) - 1);
	memcpy(doc + sizeof(head) - 1, data, size);
	memcpy(doc + sizeof(head) - 1 + size, "}", 1);
	as_trace_destroy(fuzz_parse((const uint8_t *)doc,
				    sizeof(head) + size, "json"));
	free(doc);
	return 0;
}
