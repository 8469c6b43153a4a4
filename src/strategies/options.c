#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strategies/options.h"

static bool parse_u64_suffix(const char *s, uint64_t *out)
{
	return as_parse_size(s, out) == AS_SIZE_OK;
}

/*
 * What a config may set a costly option to (as_option_desc.costly): a
 * number at most the default, or the default or a listed value; anything
 * else reads as the default. Values that do not parse are kept, for the
 * option's reader to refuse.
 */
static const char *config_value(const struct as_option_desc *k,
				const char *v, size_t vlen, size_t *outlen)
{
	*outlen = vlen;
	if (!k || !k->costly || !k->def)
		return v;
	char buf[64];
	if (vlen >= sizeof(buf))
		return v;
	memcpy(buf, v, vlen);
	buf[vlen] = 0;
	if (!k->costly[0]) {
		uint64_t x, def;
		if (!parse_u64_suffix(buf, &x) ||
		    !parse_u64_suffix(k->def, &def) || x <= def)
			return v;
	} else {
		if (strcmp(buf, k->def) == 0)
			return v;
		for (const char *p = k->costly; *p;) {
			size_t w = strcspn(p, " ");
			if (w == vlen && memcmp(p, v, vlen) == 0)
				return v;
			p += w;
			p += strspn(p, " ");
		}
	}
	*outlen = strlen(k->def);
	return k->def;
}

static int add_pairs(struct as_opts *o, const struct as_option_desc *known,
		     const char *text, bool from_spec, struct as_diag *diag)
{
	const char *p = text;
	while (p && *p) {
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *end = p + strcspn(p, ", \t");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		/* A bracketed value is a list: "k=[256:4,>:1]" is one pair. */
		if (eq && eq[1] == '[') {
			const char *close = strchr(eq, ']');
			if (!close)
				return as_diag_set(diag, 0, AS_EINVAL,
						   "%s: option '%s' has no "
						   "closing ']'",
						   o->strategy, p);
			end = close + 1;
		}
		size_t klen = eq ? (size_t)(eq - p) : (size_t)(end - p);
		if (!eq || klen == 0)
			return as_diag_set(diag, 0, AS_EINVAL,
					   "%s: option '%.*s' is not key=value",
					   o->strategy, (int)(end - p), p);
		size_t vlen = (size_t)(end - eq - 1);
		const char *val = eq + 1;
		const struct as_option_desc *listed = NULL;
		for (const struct as_option_desc *k = known; k && k->key; k++)
			if (strlen(k->key) == klen &&
			    memcmp(k->key, p, klen) == 0)
				listed = k;
		if (listed && !from_spec)
			val = config_value(listed, val, vlen, &vlen);
		if (!listed) {
			if (from_spec)
				return as_diag_set(
					diag, 0, AS_ENOTFOUND,
					"%s: unknown option '%.*s' (see "
					"'allocscope strategies')",
					o->strategy, (int)klen, p);
			p = end;
			continue;
		}
		if (klen >= sizeof(o->kv[0].key) || vlen >= sizeof(o->kv[0].val))
			return as_diag_set(diag, 0, AS_EINVAL,
					   "%s: option '%.*s' is too long",
					   o->strategy, (int)(end - p), p);
		uint32_t i;
		for (i = 0; i < o->n; i++)
			if (strlen(o->kv[i].key) == klen &&
			    memcmp(o->kv[i].key, p, klen) == 0)
				break;
		if (i == o->n) {
			if (o->n == AS_OPTS_MAX)
				return as_diag_set(diag, 0, AS_EINVAL,
						   "%s: too many options",
						   o->strategy);
			o->n++;
		}
		memcpy(o->kv[i].key, p, klen);
		o->kv[i].key[klen] = 0;
		memcpy(o->kv[i].val, val, vlen);
		o->kv[i].val[vlen] = 0;
		o->kv[i].from_spec = from_spec;
		p = end;
	}
	return AS_OK;
}

int as_opts_parse(struct as_opts *o, const char *strategy,
		  const struct as_option_desc *known, const char *case_opts,
		  const char *spec_opts, struct as_diag *diag)
{
	memset(o, 0, sizeof(*o));
	o->strategy = strategy;
	int err = add_pairs(o, known, case_opts, false, diag);
	if (err == AS_OK)
		err = add_pairs(o, known, spec_opts, true, diag);
	return err;
}

const char *as_opts_get(const struct as_opts *o, const char *key)
{
	for (uint32_t i = 0; i < o->n; i++)
		if (strcmp(o->kv[i].key, key) == 0)
			return o->kv[i].val;
	return NULL;
}

int as_opts_u64(const struct as_opts *o, const char *key, uint64_t def,
		uint64_t min, uint64_t max, uint64_t *out,
		struct as_diag *diag)
{
	const char *v = as_opts_get(o, key);
	uint64_t x = def;
	enum as_size_why why = v ? as_parse_size(v, &x) : AS_SIZE_OK;
	if (why == AS_SIZE_BAD_UNIT)
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%s: unknown unit '%c' (K, M, "
				   "G, T, P or E: 2^10 ... 2^60)",
				   o->strategy, key, v, v[strlen(v) - 1]);
	if (why == AS_SIZE_TOO_LARGE)
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%s: too large for 64 bits "
				   "(at most 18446744073709551615, or "
				   "17179869183G)",
				   o->strategy, key, v);
	if (why != AS_SIZE_OK)
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%s: not a non-negative integer",
				   o->strategy, key, v);
	if (x < min || x > max)
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%s: out of range [%llu, %llu]",
				   o->strategy, key, v ? v : "(default)",
				   (unsigned long long)min,
				   (unsigned long long)max);
	*out = x;
	return AS_OK;
}

int as_opts_pow2(const struct as_opts *o, const char *key, uint64_t def,
		 uint64_t min, uint64_t max, uint64_t *out,
		 struct as_diag *diag)
{
	uint64_t x;
	int err = as_opts_u64(o, key, def, min, max, &x, diag);
	if (err)
		return err;
	if (x & (x - 1))
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%llu: not a power of two",
				   o->strategy, key, (unsigned long long)x);
	*out = x;
	return AS_OK;
}

int as_opts_double(const struct as_opts *o, const char *key, double def,
		   double min, double max, double *out, struct as_diag *diag)
{
	const char *v = as_opts_get(o, key);
	double x = def;
	if (v) {
		char *end;
		errno = 0;
		x = strtod(v, &end);
		if (end == v || *end || errno || !isfinite(x))
			return as_diag_set(diag, 0, AS_EINVAL,
					   "%s: option %s=%s: not a number",
					   o->strategy, key, v);
	}
	if (!(x >= min && x <= max))
		return as_diag_set(diag, 0, AS_EINVAL,
				   "%s: option %s=%s: out of range [%g, %g]",
				   o->strategy, key, v ? v : "(default)", min,
				   max);
	*out = x;
	return AS_OK;
}

int as_opts_choice(const struct as_opts *o, const char *key,
		   const char *const *choices, int def, int *out,
		   struct as_diag *diag)
{
	const char *v = as_opts_get(o, key);
	if (!v) {
		*out = def;
		return AS_OK;
	}
	char list[256] = "";
	for (int i = 0; choices[i]; i++) {
		if (strcmp(choices[i], v) == 0) {
			*out = i;
			return AS_OK;
		}
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "%s%s", i ? "|" : "",
			 choices[i]);
	}
	return as_diag_set(diag, 0, AS_EINVAL,
			   "%s: option %s=%s: expected one of %s", o->strategy,
			   key, v, list);
}
