/* A compiler team's tool in miniature: plan a trace with the installed
 * library and prove the plan valid. Built against the installed copy. */
#include <stdio.h>

#include <allocscope/allocscope.h>

int main(int argc, char **argv)
{
	struct as_trace *t = NULL;
	struct as_plan *p = NULL;
	struct as_diag d;
	struct as_report r;
	if (argc != 2 || as_trace_load(argv[1], NULL, &t, &d) != AS_OK ||
	    as_strategy_run("bestfit", t, NULL, &p, &d) != AS_OK ||
	    as_validate(t, p, &r) != AS_OK || !r.valid) {
		fprintf(stderr, "tiny: %s:%llu: %s\n", d.file,
			(unsigned long long)d.line, d.msg);
		return 1;
	}
	printf("valid plan for %u buffers\n", (unsigned)t->nbuffers);
	as_plan_destroy(p);
	as_trace_destroy(t);
	return 0;
}
