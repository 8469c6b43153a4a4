/*
 * cuda-caching: options and settings. The strategy's options (with
 * PYTORCH_CUDA_ALLOC_CONF's names), a recording's allocator settings and
 * PYTORCH_CUDA_ALLOC_CONF string (options given on the command line win),
 * and create/destroy.
 */
#include "strategies/cuda_caching/cuda_caching.h"

const struct as_option_desc as_cuda_options[] = {
	{"max_split_size_mb", "0", "blocks this large (MiB, >= 20) are never split; 0: no limit"},
	{"roundup_power2_divisions", "0", "N or [256:4,>:1]: round requests to N divisions of their power of two"},
	{"expandable_segments", "0", "1 (True): one growing virtual range per stream and pool, 2/20 MiB pages"},
	{"garbage_collection_threshold", "0", "0 < t < 1: free old cached segments above t * fraction * capacity"},
	{"fraction", "0", "set_per_process_memory_fraction: the allocator may reserve fraction * capacity (0: unset)"},
	{"max_non_split_rounding_mb", "20", "an oversize request takes a cached block less than this much larger"},
	{"large_segment_size_mb", "20", "segment size for requests of 1-10 MiB (newest PyTorch)"},
	{"capacity", "trace", "device memory (80G style); not given: the space's capacity, else what the recording tells (an OOM, a release and retry), else unlimited; 0: unlimited"},
	{NULL, NULL, NULL},
};

/*
 * "4" or "[256:4,>:1]" into the 16 interval divisions (interval i holds
 * sizes in [2^i, 2^(i+1)) MiB). As PyTorch documents it, "k:v" gives v to
 * the sizes under k MiB down to the previous key, and ">:v" to the sizes
 * from the last key on.
 */
bool as_cuda_parse_divisions(const char *v, uint32_t *div)
{
	uint64_t x;
	if (*v != '[') {
		if (!as_parse_u64(v, strlen(v), &x) || x > 1024 ||
		    (x & (x - 1)))
			return false;
		for (int i = 0; i < NDIV; i++)
			div[i] = (uint32_t)x;
		return true;
	}
	size_t len = strlen(v);
	if (len < 2 || v[len - 1] != ']')
		return false;
	const char *p = v + 1, *end = v + len - 1;
	int last = -1;
	bool first = true;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		const char *colon = memchr(p, ':', (size_t)(e - p));
		uint64_t val;
		if (!colon || !as_parse_u64(colon + 1, (size_t)(e - colon - 1),
					    &val) ||
		    val > 1024 || (val & (val - 1)))
			return false;
		if (colon - p == 1 && *p == '>') {
			for (int i = last > 0 ? last : 0; i < NDIV; i++)
				div[i] = (uint32_t)val;
		} else {
			if (!as_parse_u64(p, (size_t)(colon - p), &x) || !x ||
			    (x & (x - 1)) || as_cuda_floor_log2(x) >= NDIV)
				return false;
			int idx = as_cuda_floor_log2(x);
			if (first)
				for (int i = 0; i < idx; i++)
					div[i] = (uint32_t)val;
			else
				for (int i = last > 0 ? last : 0; i < idx; i++)
					div[i] = (uint32_t)val;
			first = false;
			div[idx] = (uint32_t)val;
			last = idx;
		}
		p = comma ? comma + 1 : end;
	}
	return true;
}

/* Whether option `key` was given (o NULL: none was). */
static bool given(const struct as_opts *o, const char *key)
{
	for (uint32_t i = 0; o && i < o->n; i++)
		if (strcmp(o->kv[i].key, key) == 0)
			return true;
	return false;
}

/* The value text after "key": in the metadata, or NULL. */
static const char *meta_value(const char *m, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = m; (p = strstr(p, key)); p += kl) {
		if (p == m || p[-1] != '"' || p[kl] != '"')
			continue;
		const char *q = p + kl + 1;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		if (*q != ':')
			continue;
		q++;
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		return q;
	}
	return NULL;
}

static bool meta_number(const char *m, const char *key, double *out)
{
	const char *v = meta_value(m, key);
	if (!v)
		return false;
	char *end;
	double x = strtod(v, &end);
	if (end == v)
		return false;
	*out = x;
	return true;
}

/*
 * A snapshot's allocator_settings are the defaults: each applies unless the
 * option was given (command line or config line).
 */
/*
 * The PYTORCH_CUDA_ALLOC_CONF string itself ("key:value,..."): the settings
 * the structured keys do not carry (max_non_split_rounding_mb,
 * large_segment_size_mb), and all of them for writers without those keys.
 */
static void apply_conf_string(struct cc_settings *st,
			      const struct as_opts *o, const char *m)
{
	const char *v = meta_value(m, "PYTORCH_CUDA_ALLOC_CONF");
	if (!v || *v != '"')
		return;
	char conf[512];
	size_t n = 0;
	for (v++; *v && *v != '"' && n + 1 < sizeof(conf); v++)
		conf[n++] = *v;
	conf[n] = 0;
	char *p = conf;
	while (*p) {
		char *key = p;
		char *colon = strchr(p, ':');
		if (!colon)
			break;
		*colon = 0;
		char *val = colon + 1;
		char *end = val;
		if (*val == '[') {
			end = strchr(val, ']');
			end = end ? end + 1 : val + strlen(val);
		}
		end += strcspn(end, ",");
		p = *end ? end + 1 : end;
		*end = 0;
		while (*key == ' ')
			key++;
		uint64_t x;
		bool num = as_parse_u64(val, strlen(val), &x);
		if (strcmp(key, "max_split_size_mb") == 0 && num && x >= 20 &&
		    x < (MAX_BYTES >> 20) && !given(o, key))
			st->max_split = x << 20;
		else if (strcmp(key, "max_non_split_rounding_mb") == 0 && num &&
			 x < (MAX_BYTES >> 20) && !given(o, key))
			st->max_non_split = x << 20;
		else if (strcmp(key, "large_segment_size_mb") == 0 && num &&
			 x >= 2 && x % 2 == 0 && x < (1ull << 20) &&
			 !given(o, key))
			st->large_seg = x << 20;
		else if (strcmp(key, "expandable_segments") == 0 &&
			 !given(o, key))
			st->expandable = strcmp(val, "True") == 0 ||
					strcmp(val, "true") == 0 ||
					strcmp(val, "1") == 0;
		else if (strcmp(key, "roundup_power2_divisions") == 0 &&
			 !given(o, key)) {
			uint32_t div[NDIV] = {0};
			if (as_cuda_parse_divisions(val, div))
				memcpy(st->div, div, sizeof(div));
		} else if (strcmp(key, "garbage_collection_threshold") == 0 &&
			   !given(o, key)) {
			char *e;
			double d = strtod(val, &e);
			if (e != val && d > 0.0 && d < 1.0)
				st->gc_threshold = d;
		}
	}
}

void as_cuda_apply_settings(struct cc_settings *st, const struct as_opts *o,
			    const char *m)
{
	double x;
	const char *v;
	apply_conf_string(st, o, m);
	if (!given(o, "max_split_size_mb") &&
	    meta_number(m, "max_split_size", &x) && x >= (double)LARGE_BUFFER &&
	    x < (double)MAX_BYTES)
		st->max_split = (uint64_t)x;
	if (!given(o, "garbage_collection_threshold") &&
	    meta_number(m, "garbage_collection_threshold", &x) && x > 0.0 &&
	    x < 1.0)
		st->gc_threshold = x;
	if (!given(o, "expandable_segments") &&
	    (v = meta_value(m, "expandable_segments")))
		st->expandable = strncmp(v, "true", 4) == 0 ||
				strncmp(v, "True", 4) == 0 || *v == '1';
	if (!given(o, "max_non_split_rounding_mb") &&
	    meta_number(m, "max_non_split_rounding_size", &x) && x > 0.0 &&
	    x < (double)MAX_BYTES)
		st->max_non_split = (uint64_t)x;
	if (!given(o, "roundup_power2_divisions") &&
	    (v = meta_value(m, "roundup_power2_divisions")) && *v == '{') {
		/* {"1": 0, "2": 0, ...}: interval start in MiB -> divisions */
		const char *end = strchr(v, '}');
		const char *p = v + 1;
		while (end && p < end) {
			const char *q1 = strchr(p, '"');
			if (!q1 || q1 > end)
				break;
			char *e1;
			unsigned long long mb = strtoull(q1 + 1, &e1, 10);
			const char *c = strchr(e1, ':');
			if (!c || c > end)
				break;
			char *e2;
			unsigned long long d = strtoull(c + 1, &e2, 10);
			if (mb && !(mb & (mb - 1)) &&
			    as_cuda_floor_log2(mb) < NDIV && d <= 1024 &&
			    !(d & (d - 1)))
				st->div[as_cuda_floor_log2(mb)] = (uint32_t)d;
			p = e2;
		}
	}
}

/* PyTorch's defaults: no split limit, no rounding divisions, 20 MiB. */
void as_cuda_settings_default(struct cc_settings *x)
{
	*x = (struct cc_settings){.max_split = NO_LIMIT,
				  .max_non_split = LARGE_BUFFER,
				  .large_seg = LARGE_BUFFER};
}

/*
 * The names of the settings in which a and b differ, comma separated, into
 * out (len bytes); returns how many differ.
 */
size_t as_cuda_settings_differ(const struct cc_settings *a,
			       const struct cc_settings *b, char *out,
			       size_t len)
{
	const char *names[7];
	size_t n = 0, at = 0;
	if (a->max_split != b->max_split)
		names[n++] = "max_split_size_mb";
	if (a->max_non_split != b->max_non_split)
		names[n++] = "max_non_split_rounding_mb";
	if (a->large_seg != b->large_seg)
		names[n++] = "large_segment_size_mb";
	if (memcmp(a->div, b->div, sizeof(a->div)) != 0)
		names[n++] = "roundup_power2_divisions";
	if (a->gc_threshold != b->gc_threshold)
		names[n++] = "garbage_collection_threshold";
	if (a->fraction != b->fraction)
		names[n++] = "fraction";
	if (a->expandable != b->expandable)
		names[n++] = "expandable_segments";
	if (len)
		out[0] = 0;
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s",
				       i ? ", " : "", names[i]);
	return n;
}

void as_cuda_destroy(void *state)
{
	struct cc *s = state;
	if (!s)
		return;
	free(s->tp.n);
	free(s->b);
	free(s->s);
	free(s->blk_of);
	free(s->seg_of);
	free(s->seg_size);
	free(s->seg_off);
	free(s->initial);
	free(s->seg_key);
	free(s->rec_taken);
	free(s->release_at);
	free(s->maybe_at);
	free(s);
}

int as_cuda_create(const struct as_opts *o, const struct as_run *run,
		   void **state, struct as_diag *diag)
{
	static const char *const bools[] = {"0",     "1",    "False", "True",
					   "false", "true", NULL};
	uint64_t msplit, nonsplit, lseg;
	int err, exp;
	struct cc *s = calloc(1, sizeof(*s));
	if (!s)
		return AS_ENOMEM;
	if ((err = as_opts_u64(o, "max_split_size_mb", 0, 0, 1ull << 40,
			       &msplit, diag)) ||
	    (err = as_opts_u64(o, "max_non_split_rounding_mb", 20, 0,
			       1ull << 40, &nonsplit, diag)) ||
	    (err = as_opts_u64(o, "large_segment_size_mb", 20, 2, 1ull << 20,
			       &lseg, diag)) ||
	    (err = as_opts_choice(o, "expandable_segments", bools, 0, &exp,
				  diag)) ||
	    (err = as_opts_u64(o, "capacity", 0, 0, MAX_BYTES, &s->capacity,
			       diag)) ||
	    (err = as_opts_double(o, "garbage_collection_threshold", 0.0, 0.0,
				  0.999999, &s->set.gc_threshold, diag)) ||
	    (err = as_opts_double(o, "fraction", 0.0, 0.0, 1.0, &s->set.fraction,
				  diag))) {
		free(s);
		return err;
	}
	if (msplit && msplit < 20) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option max_split_size_mb=%llu:"
				   " must be 0 or >= 20",
				   (unsigned long long)msplit);
	}
	if (lseg % 2) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option large_segment_size_mb"
				   "=%llu: must be a multiple of 2",
				   (unsigned long long)lseg);
	}
	const char *dv = as_opts_get(o, "roundup_power2_divisions");
	if (dv && !as_cuda_parse_divisions(dv, s->set.div)) {
		free(s);
		return as_diag_set(diag, 0, AS_EINVAL,
				   "cuda-caching: option roundup_power2_divisions"
				   "=%s: expected a power of 2 or a list like "
				   "[256:4,>:1]",
				   dv);
	}
	s->opts = *o;
	s->set.max_split = msplit ? msplit << 20 : NO_LIMIT;
	s->set.max_non_split = nonsplit << 20;
	s->set.large_seg = lseg << 20;
	s->set.expandable = exp % 2 == 1;
	/* capacity=0 given: unlimited, whatever the trace says */
	s->opt_capacity = as_opts_get(o, "capacity") != NULL;
	s->emit = run->emit;
	s->ctx = run->ctx;
	s->sb = run->space_bufs;
	as_cuda_t_init(&s->tp);
	s->freeb = NIL;
	s->gaps = NIL;
	s->keys = NIL;
	for (int p = 0; p < 2; p++)
		s->pools[p].blocks = s->pools[p].unmapped = NIL;
	s->frees = NIL;
	s->va_next = VA_BASE;
	s->addr_bound = NO_LIMIT;
	if (as_cuda_t_insert(&s->tp, &s->gaps, 0, 0, 0, VA_BASE, NIL) !=
	    AS_OK) {
		as_cuda_destroy(s);
		return AS_ENOMEM;
	}
	*state = s;
	return AS_OK;
}
