/*
 * The JSON reader's "numa" form: the input is the value of "numa" in an
 * otherwise valid trace, so the fuzzer spends its time inside that reader.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_json_form(data, size, "numa");
	return 0;
}
