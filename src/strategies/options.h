/*
 * Private: strategy options, "key=value" pairs from a case's config line and
 * from the command-line spec (which wins). Values are read with range checks;
 * every reader fills diag with "strategy: option key=value: why" on error.
 */
#ifndef AS_OPTIONS_H
#define AS_OPTIONS_H

#include "core/internal.h"

/* More than any strategy has (n counts only keys the strategy knows): an
 * online allocator copies its options per space. */
#define AS_OPTS_MAX 16

struct as_opts {
	const char *strategy;
	uint32_t n;
	struct {
		char key[32];
		char val[64];
		bool from_spec;
	} kv[AS_OPTS_MAX];
};

/*
 * Fill `o` from the case options and then the spec options (both may be
 * NULL or ""; separators ',' or ' '). Spec keys must be listed in `known`
 * (NULL key terminated): an unknown key is an error. Unknown config keys are
 * ignored: a config line speaks to every strategy. A config may lower the
 * options that cost time, not raise them (as_option_desc.costly): a value
 * past the default reads as the default.
 */
int as_opts_parse(struct as_opts *o, const char *strategy,
		  const struct as_option_desc *known, const char *case_opts,
		  const char *spec_opts, struct as_diag *diag);

/* The value of key, or NULL. */
const char *as_opts_get(const struct as_opts *o, const char *key);

int as_opts_u64(const struct as_opts *o, const char *key, uint64_t def,
		uint64_t min, uint64_t max, uint64_t *out,
		struct as_diag *diag);
/* as_opts_u64 for a value that must also be a power of two (a granule). */
int as_opts_pow2(const struct as_opts *o, const char *key, uint64_t def,
		 uint64_t min, uint64_t max, uint64_t *out,
		 struct as_diag *diag);
int as_opts_double(const struct as_opts *o, const char *key, double def,
		   double min, double max, double *out, struct as_diag *diag);
/* One of `choices` (NULL terminated); *out is its index. */
int as_opts_choice(const struct as_opts *o, const char *key,
		   const char *const *choices, int def, int *out,
		   struct as_diag *diag);

#endif
