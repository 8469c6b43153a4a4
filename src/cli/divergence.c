/*
 * check TRACE -s SPEC: where a model of an allocator leaves the recording
 * it replays (cuda-caching on a PyTorch snapshot). The library finds it
 * (struct as_divergence, which cuda-caching attaches to its plan:
 * as_plan_divergence); this file only words it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "allocscope/cuda.h"
#include "allocscope/io.h"
#include "divergence.h"
#include "shared.h"

/* A recorded address (a trace offset) as the real one, when the trace maps
 * it back. */
static uint64_t real_address(const struct as_trace *t, uint16_t space,
			     uint64_t offset)
{
	uint64_t a;
	return as_trace_address_of(t, space, offset, &a) ? a : offset;
}

static void print_side(const struct as_trace *t, uint16_t space,
		       const char *who, const struct as_div_side *s)
{
	char hb[32];
	if (!s->segment_size) {
		printf("  %-9s no block: out of memory\n", who);
		return;
	}
	printf("  %-9s ", who);
	if (s->segment == AS_NO_OFFSET)
		printf("a segment the recording did not have");
	else
		printf("segment 0x%" PRIx64,
		       real_address(t, space, s->segment));
	printf(" (%s%s, %s pool, %s) at +%" PRIu64 "\n",
	       as_human_bytes(s->segment_size, hb, sizeof(hb)),
	       s->expandable ? " mapped in an expandable range" : "",
	       s->small ? "small" : "large",
	       s->new_segment ? "reserved for it" : "a cached block",
	       s->offset);
}

static double pct(uint64_t a, uint64_t n)
{
	return n ? 100.0 * (double)a / (double)n : 0.0;
}

/* The model's notes on what it read from the recording ("inputs: ") and
 * on what it held at each out of memory ("oom: "), escaped. */
static void print_model_notes(const struct as_plan *p)
{
	for (uint32_t k = 0; k < p->nnotes; k++)
		if (strncmp(p->notes[k], "inputs: ", 8) == 0 ||
		    strncmp(p->notes[k], "oom: ", 5) == 0)
			printf("%s\n", cli_esc(p->notes[k]));
}

int cli_divergence_report(const struct as_trace *t, const char *spec,
			  const struct as_plan *p)
{
	const struct as_divergence *d = as_plan_divergence(p);
	if (!d) {
		fprintf(stderr,
			"%s: %s compares itself with no recording here (a "
			"PyTorch snapshot with a trace and its segments)\n",
			t->path, spec);
		return 2;
	}
	if (!d->compared) {
		printf("%s against %s: nothing to compare (no allocation of "
		       "the trace in a recorded segment)\n",
		       spec, t->path);
		return 0;
	}
	printf("%s against %s: %" PRIu64 " allocations compared, %" PRIu64
	       " in the recorded block (%.2f%%), %" PRIu64
	       " in a segment of the recorded size at the recorded offset "
	       "(%.2f%%)\n",
	       spec, t->path, d->compared, d->agree, pct(d->agree, d->compared),
	       d->same_place, pct(d->same_place, d->compared));
	if (d->kind == AS_DIV_NONE || d->buffer >= t->nbuffers) {
		printf("no divergence: every allocation is where the recording "
		       "put it\n");
		print_model_notes(p);
		return 0;
	}
	const struct as_buffer *b = &t->buffers[d->buffer];
	const char *name = as_trace_buffer_name(t, d->buffer);
	const struct as_buffer_info *info = t->info ? &t->info[d->buffer] : NULL;
	uint64_t asked = info && info->requested ? info->requested : b->size;
	printf("first divergence: step %" PRIu64 ", %s, buffer %s (#%u, %" PRIu64
	       " B asked): %s\n",
	       d->time, d->space < t->nspaces ? t->spaces[d->space].name : "?",
	       name ? name : "?", d->buffer, asked, as_div_kind_name(d->kind));
	print_side(t, d->space, "model:", &d->model);
	print_side(t, d->space, "recorded:", &d->recorded);
	const char *frames = as_trace_buffer_frames(t, d->buffer);
	if (frames) {
		size_t n = strcspn(frames, "\n");
		printf("  allocated at %.*s\n", (int)n, frames);
	}
	printf("  likely cause: %s\n", d->cause);
	print_model_notes(p);
	return 1;
}
