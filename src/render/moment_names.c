/*
 * The renderer's names for the moments core computes (core/moments.c): the
 * peak moment of a plan and the trace's peak moment, the lower bound's.
 */
#include "render/render_private.h"

int as_render_peak_moment(const struct as_trace *t, const struct as_plan *p,
			  int space, struct as_moment *out)
{
	return as_plan_peak_moment(t, p, space, out);
}

int as_render_bound_moment(const struct as_trace *t, int space,
			   struct as_moment *out)
{
	return as_trace_peak_moment(t, space, out);
}
