/* The profiler reader: any bytes are read or refused, never a crash. */
#include "allocscope/allocscope.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	as_trace_destroy(fuzz_parse(data, size, "profiler"));
	return 0;
}
