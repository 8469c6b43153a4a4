/*
 * check TRACE -s SPEC: the report of where a model leaves the recording
 * it replays.
 */
#ifndef AS_CLI_DIVERGENCE_H
#define AS_CLI_DIVERGENCE_H

#include "allocscope/allocscope.h"

/*
 * Print p's divergence from the recording in t (SPEC's plan) on stdout:
 * the blocks that agree, the first allocation that differs with both
 * sides and a likely cause. Returns 0 when every allocation agrees, 1 when
 * one differs, 2 (a message on stderr) when the plan compared itself with
 * no recording.
 */
int cli_divergence_report(const struct as_trace *t, const char *spec,
			  const struct as_plan *p);

#endif
