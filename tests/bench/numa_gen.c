/*
 * numa_gen: realistic numa traces for tests and benchmarks, and a side by
 * side comparison of the numa strategies on one trace.
 *
 *   numa_gen [--cores C] [--blocks N] [--seed S] [--per-core LO:HI]
 *            [--ragged P] [--capacity BYTES] [-o FILE]
 *   numa_gen compare TRACE [--quiet]
 *
 * The model: a network split into stages of 2 to 6 parent tasks that share
 * a data-parallel split (the same sub-task count and per-sub-task scale);
 * each parent is a chain of 2 to 6 operators with weights, intermediate
 * edges of varied sizes, sometimes a skip edge, and an output that the next
 * parent of the stage reads ("source"). Sub-task counts are cores * U[LO, HI]
 * plus a remainder, so task bundles are uneven; the last sub-task of a split
 * is a partial tile, and a fraction P of the stages is ragged (every
 * sub-task's volume varies by up to +-40%, like variable sequence lengths).
 * Parents are added until the trace holds N blocks. Randomness is seeded
 * (splitmix64) and the seed is written into the metadata.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocscope/build.h"
#include "allocscope/numa.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t urange(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

static double unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

#define ALIGN 64

static uint64_t round_align(double v)
{
	uint64_t u = (uint64_t)v;
	u = (u + ALIGN - 1) / ALIGN * ALIGN;
	return u ? u : ALIGN;
}

struct params {
	uint32_t cores;
	uint64_t blocks;
	uint64_t seed;
	uint32_t per_lo, per_hi;
	double ragged;
	uint64_t capacity;
	const char *out;
};

struct edge {
	int from, to;          /* -1: none */
	int source;            /* reads the previous parent's output */
	double factor;         /* activation edges: times the tile */
	uint64_t weight;       /* weights: same for every sub-task */
	char name[16];
};

/*
 * Volumes of one parent, vol[i * n + k] for edge i and sub-task k. An input
 * read from the previous parent copies that parent's output volumes.
 */
static void make_volumes(const struct edge *e, int ne, uint32_t n,
			 uint64_t tile, const double *scale, bool ragged,
			 const uint64_t *prev_y, uint64_t *vol)
{
	for (int i = 0; i < ne; i++)
		for (uint32_t k = 0; k < n; k++) {
			uint64_t *v = &vol[(size_t)i * n + k];
			if (e[i].weight)
				*v = e[i].weight;
			else if (e[i].source && prev_y)
				*v = prev_y[k];
			else
				*v = round_align(
					(double)tile * e[i].factor * scale[k] *
					(ragged ? 0.75 + 0.5 * unit() : 1.0));
		}
}

static void write_volumes(FILE *f, const struct edge *e, const uint64_t *v,
			  uint32_t n)
{
	if (e->weight) {
		fprintf(f, "%" PRIu64, e->weight);
		return;
	}
	fputc('[', f);
	for (uint32_t k = 0; k < n; k++)
		fprintf(f, "%s%" PRIu64, k ? "," : "", v[k]);
	fputc(']', f);
}

static int generate(const struct params *pr, FILE *f)
{
	uint32_t C = pr->cores;
	uint64_t blocks = 0, cap_need = 0;
	uint32_t parent = 0;
	double *scale = NULL;
	uint64_t *vol = NULL, *prev_y = NULL;
	int rc = 1;
	/* Two passes with the same seed: the first only sizes capacity. */
	for (int pass = 0; pass < 2; pass++) {
		rng_state = pr->seed;
		blocks = 0;
		parent = 0;
		if (pass == 1) {
			uint64_t cap = pr->capacity;
			if (!cap) {
				cap = 1024;
				while (cap < cap_need * 2)
					cap *= 2;
			}
			fprintf(f, "{\n\"format\": \"allocscope-trace\", "
				   "\"version\": 1,\n\"metadata\": "
				   "{\"generator\": \"numa_gen\", \"seed\": "
				   "%" PRIu64 ", \"cores\": %u, \"blocks\": "
				   "%" PRIu64 "},\n\"numa\": {\"cores\": %u, "
				   "\"capacity\": %" PRIu64 ", \"align\": %d, "
				   "\"schedule\": \"round-robin\",\n"
				   "\"parents\": [\n",
				pr->seed, C, pr->blocks, C, cap, ALIGN);
		}
		while (blocks < pr->blocks) {
			uint32_t stage = (uint32_t)urange(2, 6);
			uint32_t n = C * (uint32_t)urange(pr->per_lo,
							  pr->per_hi) +
				     (uint32_t)urange(0, C - 1);
			uint64_t tile = urange(1, 16) * 1024;
			bool ragged = unit() < pr->ragged;
			double *s = realloc(scale, n * sizeof(*s));
			uint64_t *v = realloc(vol, (size_t)32 * n * sizeof(*v));
			if (s)
				scale = s;
			if (v)
				vol = v;
			free(prev_y);
			prev_y = malloc(n * sizeof(*prev_y));
			if (!s || !v || !prev_y)
				goto out;
			for (uint32_t k = 0; k < n; k++)
				scale[k] = ragged ? 0.6 + 0.8 * unit() : 1.0;
			scale[n - 1] *= 0.1 + 0.9 * unit(); /* partial tile */
			for (uint32_t j = 0; j < stage && blocks < pr->blocks;
			     j++) {
				struct edge e[32];
				int ne = 0, ops = (int)urange(2, 6);
				e[ne++] = (struct edge){-1, 0, j > 0, 1.0, 0,
							"x"};
				for (int i = 0; i < ops; i++) {
					if (unit() < 0.6)
						e[ne++] = (struct edge){
							-1, i, 0, 0,
							round_align(
								(double)urange(
									1, 16) *
								512),
							""};
					if (i + 1 < ops)
						e[ne++] = (struct edge){
							i, i + 1, 0,
							(double)(1u << urange(
									 0, 3)) /
								2,
							0, ""};
					if (i + 2 < ops && unit() < 0.3)
						e[ne++] = (struct edge){
							i, i + 2, 0, 1.0, 0,
							""};
				}
				e[ne++] = (struct edge){ops - 1, -1, 0, 1.0, 0,
							"y"};
				for (int i = 0; i < ne; i++)
					if (!e[i].name[0])
						snprintf(e[i].name,
							 sizeof(e[i].name),
							 "%c%d",
							 e[i].weight ? 'w'
								     : 'h',
							 i);
				make_volumes(e, ne, n, tile, scale, ragged,
					     j > 0 ? prev_y : NULL, vol);
				uint64_t need = 0;
				for (int i = 0; i < ne; i++) {
					uint64_t mx = 0;
					for (uint32_t k = 0; k < n; k++)
						if (vol[(size_t)i * n + k] > mx)
							mx = vol[(size_t)i * n +
								 k];
					need += mx;
				}
				memcpy(prev_y, vol + (size_t)(ne - 1) * n,
				       n * sizeof(*prev_y));
				if (need > cap_need)
					cap_need = need;
				blocks += (uint64_t)n * (uint64_t)ne;
				if (pass == 0) {
					parent++;
					continue;
				}
				fprintf(f, "%s{\"name\": \"p%u\", "
					   "\"subtasks\": %u, \"ops\": %d, "
					   "\"edges\": [\n",
					parent ? ",\n" : "", parent, n, ops);
				for (int i = 0; i < ne; i++) {
					fprintf(f, " {\"name\": \"%s\"",
						e[i].name);
					if (e[i].source)
						fprintf(f, ", \"source\": "
							   "\"p%u/y\"",
							parent - 1);
					if (e[i].from >= 0)
						fprintf(f, ", \"from\": %d",
							e[i].from);
					if (e[i].to >= 0)
						fprintf(f, ", \"to\": %d",
							e[i].to);
					fputs(", \"volume\": ", f);
					write_volumes(f, &e[i],
						      vol + (size_t)i * n, n);
					fprintf(f, "}%s\n",
						i + 1 < ne ? "," : "");
				}
				fputs("]}", f);
				parent++;
			}
		}
	}
	fputs("\n]}}\n", f);
	rc = ferror(f) ? 1 : 0;
out:
	free(scale);
	free(vol);
	free(prev_y);
	return rc;
}

/* ---- compare ---- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double stat_of(const struct as_plan *p, const char *key)
{
	for (uint32_t i = 0; i < p->nstats; i++)
		if (strcmp(p->stats[i].key, key) == 0)
			return p->stats[i].value;
	return -1;
}

#define NSPEC 3
static const char *const specs[NSPEC] = {"numa-flat", "numa-bundle:keep=0",
					 "numa-bundle"};

static int compare(const char *path, bool quiet)
{
	struct as_trace *t = NULL;
	struct as_diag d = {0};
	char msg[1024];
	double t0 = now_ms();
	if (as_trace_load(path, NULL, &t, &d)) {
		fprintf(stderr, "%s\n", as_diag_text(&d, msg, sizeof(msg)));
		return 2;
	}
	double load_ms = now_ms() - t0;
	if (!t->numa) {
		fprintf(stderr, "%s: not a numa trace\n", path);
		as_trace_destroy(t);
		return 2;
	}
	const struct as_numa *nm = t->numa;
	uint32_t nc = nm->ncores;
	uint64_t *peak = calloc((size_t)NSPEC * nc, sizeof(*peak));
	uint64_t *lb = calloc(nc, sizeof(*lb)), *live = calloc(nc, sizeof(*live));
	struct as_plan *plans[NSPEC] = {0};
	bool valid[NSPEC];
	int rc = 0;
	if (!peak || !lb || !live) {
		rc = 2;
		goto out;
	}
	/* Per-core lower bound: one sweep with a live sum per core. */
	for (uint32_t e = 0; e < t->nevents; e++) {
		const struct as_event *ev = &t->events[e];
		if (ev->kind != AS_EV_ALLOC && ev->kind != AS_EV_FREE)
			continue;
		const struct as_buffer *b = &t->buffers[ev->arg];
		uint32_t c = b->space - nm->first_space;
		if (ev->kind == AS_EV_ALLOC) {
			live[c] += b->size;
			lb[c] = live[c] > lb[c] ? live[c] : lb[c];
		} else {
			live[c] -= b->size;
		}
	}
	for (int s = 0; s < NSPEC; s++) {
		/* Three runs; the fastest counts (timing noise only adds). */
		for (int rep = 0; rep < 3; rep++) {
			struct as_plan *pl = NULL;
			if (as_strategy_run(specs[s], t, NULL, &pl, &d)) {
				fprintf(stderr, "%s\n",
					as_diag_text(&d, msg, sizeof(msg)));
				rc = 2;
				goto out;
			}
			if (plans[s] && plans[s]->plan_ms < pl->plan_ms)
				pl->plan_ms = plans[s]->plan_ms;
			as_plan_destroy(plans[s]);
			plans[s] = pl;
		}
		struct as_report r;
		if (as_validate(t, plans[s], &r)) {
			rc = 2;
			goto out;
		}
		valid[s] = r.valid;
		if (!r.valid) {
			fprintf(stderr, "%s: INVALID: %s\n", specs[s],
				as_violation_text(t, plans[s], &r.first[0],
						  msg, sizeof(msg)));
			rc = 1;
		}
		for (uint32_t i = 0; i < t->nbuffers; i++) {
			uint64_t off = plans[s]->offset[i];
			uint32_t c = as_plan_space_of(plans[s], t, i) -
				     nm->first_space;
			if (off != AS_NO_OFFSET && c < nc &&
			    off + t->buffers[i].size > peak[s * nc + c])
				peak[s * nc + c] = off + t->buffers[i].size;
		}
	}
	printf("trace %s: %u cores, %u parents, %u sub-tasks, %u blocks "
	       "(load %.0f ms)\n",
	       path, nc, nm->nparents, nm->nsubtasks, t->nbuffers, load_ms);
	printf("round trips through global memory without keeping: %.0f\n",
	       stat_of(plans[0], "round_trips"));
	printf("%-20s %10s %10s %6s %14s %12s %10s %10s\n", "strategy",
	       "objects", "plan ms", "valid", "max core peak", "padding B",
	       "kept", "kept B");
	for (int s = 0; s < NSPEC; s++)
		printf("%-20s %10.0f %10.2f %6s %14.0f %12.0f %10.0f %10.0f\n",
		       specs[s], stat_of(plans[s], "objects_analysed"),
		       plans[s]->plan_ms, valid[s] ? "yes" : "NO",
		       stat_of(plans[s], "core_peak_max"),
		       s ? stat_of(plans[s], "padding_bytes") : 0.0,
		       stat_of(plans[s], "round_trips_avoided"),
		       s == 2 ? stat_of(plans[s], "bytes_kept_on_chip") : 0.0);
	printf("objects: %.1fx fewer; planning: %.1fx faster (keep=0), "
	       "%.1fx faster (keep=1)\n",
	       stat_of(plans[0], "objects_analysed") /
		       stat_of(plans[2], "objects_analysed"),
	       plans[0]->plan_ms / plans[1]->plan_ms,
	       plans[0]->plan_ms / plans[2]->plan_ms);
	uint64_t sum[NSPEC] = {0}, lbsum = 0;
	uint32_t bundle_smaller = 0, bundle_larger = 0;
	for (uint32_t c = 0; c < nc; c++) {
		lbsum += lb[c];
		for (int s = 0; s < NSPEC; s++)
			sum[s] += peak[s * nc + c];
		bundle_smaller += peak[nc + c] < peak[c];
		bundle_larger += peak[nc + c] > peak[c];
	}
	printf("per-core peaks summed: lower bound %" PRIu64 ", flat %" PRIu64
	       ", bundle keep=0 %" PRIu64 " (%+.1f%% vs flat), bundle %" PRIu64
	       " (%+.1f%% vs flat)\n",
	       lbsum, sum[0], sum[1],
	       100.0 * ((double)sum[1] - (double)sum[0]) / (double)sum[0],
	       sum[2],
	       100.0 * ((double)sum[2] - (double)sum[0]) / (double)sum[0]);
	printf("cores where bundle keep=0 needs less than flat: %u, more: %u, "
	       "the same: %u\n",
	       bundle_smaller, bundle_larger,
	       nc - bundle_smaller - bundle_larger);
	if (!quiet) {
		printf("%6s %12s %12s %12s %14s %12s\n", "core", "capacity",
		       "lower bound", "numa-flat", "bundle keep=0",
		       "numa-bundle");
		for (uint32_t c = 0; c < nc; c++)
			printf("%6u %12" PRIu64 " %12" PRIu64 " %12" PRIu64
			       " %14" PRIu64 " %12" PRIu64 "\n",
			       c, t->spaces[nm->first_space + c].capacity,
			       lb[c], peak[c], peak[nc + c],
			       peak[2 * nc + c]);
	}
out:
	for (int s = 0; s < NSPEC; s++)
		as_plan_destroy(plans[s]);
	free(peak);
	free(lb);
	free(live);
	as_trace_destroy(t);
	return rc;
}

static int usage(void)
{
	fputs("usage: numa_gen [--cores C] [--blocks N] [--seed S] "
	      "[--per-core LO:HI]\n"
	      "                [--ragged P] [--capacity BYTES] [-o FILE]\n"
	      "       numa_gen compare TRACE [--quiet]\n",
	      stderr);
	return 2;
}

static bool num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '-' || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "compare") == 0)
		return compare(argv[2],
			       argc > 3 && strcmp(argv[3], "--quiet") == 0);
	struct params pr = {16, 100000, 1, 8, 24, 0.3, 0, "-"};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (!v)
			return usage();
		i++;
		if (strcmp(a, "--cores") == 0 && num(v, 1, 4096, &x)) {
			pr.cores = (uint32_t)x;
		} else if (strcmp(a, "--blocks") == 0 &&
			   num(v, 1, 100000000, &x)) {
			pr.blocks = x;
		} else if (strcmp(a, "--seed") == 0 &&
			   num(v, 0, UINT64_MAX, &x)) {
			pr.seed = x;
		} else if (strcmp(a, "--capacity") == 0 &&
			   num(v, 1, UINT64_MAX / 4, &x)) {
			pr.capacity = x;
		} else if (strcmp(a, "--ragged") == 0) {
			char *end;
			pr.ragged = strtod(v, &end);
			if (*end || pr.ragged < 0 || pr.ragged > 1)
				return usage();
		} else if (strcmp(a, "--per-core") == 0) {
			unsigned lo, hi;
			if (sscanf(v, "%u:%u", &lo, &hi) != 2 || lo < 1 ||
			    hi < lo || hi > 1024)
				return usage();
			pr.per_lo = lo;
			pr.per_hi = hi;
		} else if (strcmp(a, "-o") == 0) {
			pr.out = v;
		} else {
			return usage();
		}
	}
	/* Whole or not at all: a temporary file renamed over the output. */
	struct as_atomic *a;
	FILE *f;
	if (as_atomic_open(pr.out, &a, &f) != AS_OK) {
		perror(pr.out);
		return 2;
	}
	if (generate(&pr, f) != 0) {
		as_atomic_abort(a);
		fprintf(stderr, "numa_gen: cannot write %s\n", pr.out);
		return 2;
	}
	if (as_atomic_commit(a) != AS_OK) {
		fprintf(stderr, "numa_gen: cannot write %s\n", pr.out);
		return 2;
	}
	return 0;
}
