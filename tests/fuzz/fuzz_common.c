#include "allocscope/allocscope.h"
#include "fuzz.h"

struct as_trace *fuzz_parse(const uint8_t *data, size_t size,
			    const char *format)
{
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_parse("fuzz", (const char *)data, size, format, &t,
			   &d) != AS_OK)
		return NULL;
	/* What every reader promises after a parse. */
	(void)as_trace_lower_bound(t);
	return t;
}
