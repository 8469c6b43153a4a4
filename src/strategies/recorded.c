/*
 * `recorded`: the placement the input gives (a CSV offset column, offsets
 * in JSON or text, addresses recorded from a real program).
 */
#include "strategies/strategy.h"

static bool applies(const struct as_trace *t)
{
	/* No buffers: the empty placement is the recorded one (an empty
	 * snapshot replays with -s recorded like any other). */
	if (t->nbuffers == 0)
		return true;
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (t->buffers[i].recorded != AS_NO_OFFSET)
			return true;
	return false;
}

static int plan(const struct as_trace *t, const struct as_opts *o,
		struct as_run *run, struct as_plan *p, struct as_diag *diag)
{
	for (uint32_t i = 0; i < t->nbuffers; i++)
		p->offset[i] = t->buffers[i].recorded;
	return AS_OK;
}

static const struct as_option_desc options[] = {{NULL, NULL, NULL}};

const struct as_strategy_impl as_strategy_recorded = {
	.info = {
		.name = "recorded",
		.summary = "the placement given by the input (needs offsets)",
		.online = false,
		.options = options,
	},
	.applies = applies,
	.plan = plan,
};
