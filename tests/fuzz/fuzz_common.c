#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void fuzz_json_form(const uint8_t *data, size_t size, const char *key)
{
	char head[96];
	int n = snprintf(head, sizeof(head),
			 "{\"format\": \"allocscope-trace\", \"version\": 1, "
			 "\"%s\": ",
			 key);
	if (n < 0 || (size_t)n >= sizeof(head))
		return;
	char *doc = malloc((size_t)n + size + 1);
	if (!doc)
		return;
	memcpy(doc, head, (size_t)n);
	memcpy(doc + n, data, size);
	doc[n + size] = '}';
	as_trace_destroy(fuzz_parse((const uint8_t *)doc, (size_t)n + size + 1,
				    "json"));
	free(doc);
}
