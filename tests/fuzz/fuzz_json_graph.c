/*
 * The JSON reader's "graph" form: the input is the value of "graph" in an
 * otherwise valid trace, so the fuzzer spends its time inside that reader.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_json_form(data, size, "graph");
	return 0;
}
