/* The results reader (allocscope diff): read or refused, never a crash. */
#include "allocscope/allocscope.h"
#include "allocscope/compare.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct as_results *r = as_results_create();
	struct as_diag d;
	if (r)
		(void)as_results_parse(r, "fuzz", (const char *)data, size, &d);
	as_results_destroy(r);
	return 0;
}
