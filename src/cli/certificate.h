/*
 * allocscope check --certificate: re-verify the certified lower bounds a
 * `replay --json` file holds.
 */
#ifndef AS_CLI_CERTIFICATE_H
#define AS_CLI_CERTIFICATE_H

#include <stdbool.h>
#include <stdint.h>

#include "allocscope/allocscope.h"

/*
 * replay's table: a line per certified bound of plan p (of spec) whose
 * space's peak (space_peak[space], or `peak` when NULL) is above the load,
 * "optimal" or "<= X% above optimal"; a blank line first unless `header`.
 * Returns whether it printed any.
 */
bool cli_print_certificates(const struct as_trace *t, const char *spec,
			    const struct as_plan *p,
			    const uint64_t *space_peak, uint64_t peak,
			    bool header);

/*
 * Re-solve every certificate of cert_path (a `replay --json` file) from its
 * sub-problem alone; with trace_path (may be NULL; read with the load
 * options lo), first check that each sub-problem is a relaxation of that
 * trace. Prints a line per certificate. Returns the exit status: 0 every
 * bound holds, 1 one does not (or was not re-proved within limit_ms), 2 bad
 * input.
 */
int cli_check_certificate(const char *cert_path, const char *trace_path,
			  const struct as_load_options *lo,
			  double limit_ms);

#endif
