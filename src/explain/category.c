/*
 * Categories of buffers in the model's own terms: parameters, activations,
 * gradients, optimizer state, temporaries, unknown; and the user's own
 * (--rule NAME=REGEX) ahead of them. docs/explain.md ("Categories") states
 * the rules; the first that matches decides, in this order:
 *
 *   1. a user rule whose regular expression is found in the file or the
 *      function of one of the buffer's frames (rules in the order given);
 *   2. parameters: allocated before the recording (a snapshot's blocks
 *      live from step 0), or with a frame of a constructor (`__init__`),
 *      `reset_parameters`, torch.nn.init, `load_state_dict`, or Module's
 *      `to`/`cuda`/`_apply`/`to_empty`;
 *   3. temporaries: freed (not live at the end) before the program's
 *      next allocation;
 *   4. optimizer: allocated in an annotation stage named like
 *      "Optimizer.step#..." or with a frame in torch/optim/;
 *   5. gradients: in a stage whose name has "backward", or with a frame
 *      whose function has "backward" or of autograd's engine;
 *   6. activations: in a stage whose name has "forward", or with a frame
 *      whose function is `forward`;
 *   7. unknown.
 *
 * The frame-based answers are cached per stack number; stages are looked
 * up by binary search in merged intervals per class. So a buffer costs
 * O(log stages) after its stack's first visit.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "explain/explain_private.h"

static const char *const cat_names[] = {
	[AS_X_CAT_PARAMETERS] = "parameters",
	[AS_X_CAT_ACTIVATIONS] = "activations",
	[AS_X_CAT_GRADIENTS] = "gradients",
	[AS_X_CAT_OPTIMIZER] = "optimizer",
	[AS_X_CAT_TEMPORARIES] = "temporaries",
	[AS_X_CAT_UNKNOWN] = "unknown",
};

static const char *const reason_texts[] = {
	[AS_X_WHY_RULE] = "--rule",
	[AS_X_WHY_BEFORE] = "allocated before the recording",
	[AS_X_WHY_INIT] = "a constructor, init or .to() frame",
	[AS_X_WHY_TEMPORARY] = "freed before the next allocation",
	[AS_X_WHY_OPT_STAGE] = "in an Optimizer.step stage",
	[AS_X_WHY_OPT_FRAME] = "a torch.optim frame",
	[AS_X_WHY_BWD_STAGE] = "in a backward stage",
	[AS_X_WHY_BWD_FRAME] = "a backward or autograd engine frame",
	[AS_X_WHY_FWD_STAGE] = "in a forward stage",
	[AS_X_WHY_FWD_FRAME] = "a forward frame",
	[AS_X_WHY_NO_FRAMES] = "no frames, no stage",
	[AS_X_WHY_NO_RULE] = "no rule matched its frames or stage",
};

const char *as_x_reason_text(enum as_x_why w)
{
	return (size_t)w < AS_X_WHY_COUNT ? reason_texts[w] : "?";
}

/* Stage classes and frame classes share the numbering opt, bwd, fwd. */
enum { OPT, BWD, FWD, NCLASS };

struct interval {
	uint16_t space;
	uint64_t start, end;
};

/* A stack's frame answers: the rule or class matched, and where. */
struct stack_info {
	bool done;
	int32_t rule;              /* the first user rule, or -1 */
	bool init;
	bool cls[NCLASS];
	const char *at[NCLASS + 2]; /* the frame: classes, rule, init */
	size_t len[NCLASS + 2];
};

struct as_x_categorizer {
	const struct as_trace *t;
	const struct as_order *order;
	const struct as_explain_rule *rules;
	uint32_t nrules;
	regex_t *re;
	uint32_t nre;
	struct interval *iv[NCLASS];
	uint32_t niv[NCLASS];
	const char **iv_name[NCLASS]; /* the first stage of each interval */
	struct stack_info *stacks;
	uint32_t nstacks;
	bool snapshot;
};

static bool has_ci(const char *s, const char *needle)
{
	size_t n = strlen(needle);
	for (; *s; s++)
		if (strncasecmp(s, needle, n) == 0)
			return true;
	return false;
}

static int stage_class(const char *name)
{
	if (has_ci(name, "optimizer.step") || has_ci(name, "optimizer_step") ||
	    has_ci(name, "## optimizer"))
		return OPT;
	if (has_ci(name, "backward"))
		return BWD;
	if (has_ci(name, "forward"))
		return FWD;
	return -1;
}

static bool iv_before(uint32_t a, uint32_t b, const void *ctx)
{
	const struct interval *x = (const struct interval *)ctx + a,
			      *y = (const struct interval *)ctx + b;
	if (x->space != y->space)
		return x->space < y->space;
	return x->start < y->start;
}

/* Class c's stages, sorted by (space, start) and merged. */
static int build_intervals(struct as_x_categorizer *c, int cls)
{
	const struct as_trace *t = c->t;
	uint32_t n = 0;
	for (uint32_t k = 0; k < t->nstages; k++)
		n += stage_class(t->stages[k].name) == cls &&
		     t->stages[k].end > t->stages[k].start;
	if (!n)
		return AS_OK;
	struct interval *raw = malloc(sizeof(*raw) * n);
	const char **rawn = malloc(sizeof(*rawn) * n);
	uint32_t *ord = malloc(sizeof(*ord) * n);
	c->iv[cls] = malloc(sizeof(*c->iv[cls]) * n);
	c->iv_name[cls] = malloc(sizeof(*c->iv_name[cls]) * n);
	int err = raw && rawn && ord && c->iv[cls] && c->iv_name[cls]
			  ? AS_OK
			  : AS_ENOMEM;
	uint32_t m = 0;
	for (uint32_t k = 0; !err && k < t->nstages; k++) {
		const struct as_stage *s = &t->stages[k];
		if (stage_class(s->name) == cls && s->end > s->start) {
			raw[m] = (struct interval){s->space, s->start, s->end};
			rawn[m] = s->name;
			ord[m] = m;
			m++;
		}
	}
	if (!err)
		err = as_sort_u32(ord, n, iv_before, raw);
	for (uint32_t k = 0; !err && k < n; k++) {
		const struct interval *x = &raw[ord[k]];
		struct interval *last =
			c->niv[cls] ? &c->iv[cls][c->niv[cls] - 1] : NULL;
		if (last && last->space == x->space && x->start <= last->end) {
			if (x->end > last->end)
				last->end = x->end;
			continue;
		}
		c->iv_name[cls][c->niv[cls]] = rawn[ord[k]];
		c->iv[cls][c->niv[cls]++] = *x;
	}
	free(raw);
	free(rawn);
	free(ord);
	return err;
}

/* The stage of class cls holding (space, time), or NULL. */
static const char *in_class(const struct as_x_categorizer *c, int cls,
			    uint16_t space, uint64_t time)
{
	const struct interval *iv = c->iv[cls];
	uint32_t lo = 0, hi = c->niv[cls];
	while (lo < hi) { /* the first interval after (space, time) */
		uint32_t mid = lo + (hi - lo) / 2;
		if (iv[mid].space < space ||
		    (iv[mid].space == space && iv[mid].start <= time))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct interval *x = &iv[lo - 1];
	return x->space == space && x->end > time ? c->iv_name[cls][lo - 1]
						  : NULL;
}

int as_x_cat_create(const struct as_trace *t,
		    const struct as_explain_options *o,
		    const struct as_order *order, struct as_x_categorizer **out)
{
	struct as_x_categorizer *c = calloc(1, sizeof(*c));
	if (!c)
		return AS_ENOMEM;
	c->t = t;
	c->order = order;
	c->rules = o->rules;
	c->snapshot = t->format && strcmp(t->format, "pickle") == 0;
	int err = AS_OK;
	if (o->nrules &&
	    !(c->re = calloc(o->nrules, sizeof(*c->re))))
		err = AS_ENOMEM;
	for (uint32_t k = 0; !err && k < o->nrules; k++) {
		if (!o->rules[k].name || !o->rules[k].regex ||
		    regcomp(&c->re[k], o->rules[k].regex,
			    REG_EXTENDED | REG_NOSUB))
			err = AS_EINVAL;
		else
			c->nre = k + 1;
	}
	c->nrules = c->nre;
	uint32_t n = 0;
	for (uint32_t k = 0; as_trace_stack_text(t, k); k++)
		n = k + 1;
	c->nstacks = n;
	if (!err && !(c->stacks = calloc((size_t)n + 1, sizeof(*c->stacks))))
		err = AS_ENOMEM;
	for (int cls = 0; cls < NCLASS && !err; cls++)
		err = build_intervals(c, cls);
	if (err) {
		as_x_cat_destroy(c);
		return err;
	}
	*out = c;
	return AS_OK;
}

void as_x_cat_destroy(struct as_x_categorizer *c)
{
	if (!c)
		return;
	for (uint32_t k = 0; k < c->nre; k++)
		regfree(&c->re[k]);
	free(c->re);
	for (int cls = 0; cls < NCLASS; cls++) {
		free(c->iv[cls]);
		free(c->iv_name[cls]);
	}
	free(c->stacks);
	free(c);
}

static bool span_is(struct as_x_span s, const char *w)
{
	size_t n = strlen(w);
	return s.n == n && memcmp(s.s, w, n) == 0;
}

static bool span_ends(struct as_x_span s, const char *w)
{
	size_t n = strlen(w);
	return s.n >= n && memcmp(s.s + s.n - n, w, n) == 0;
}

static bool span_has(struct as_x_span s, const char *w)
{
	size_t n = strlen(w);
	for (size_t i = 0; i + n <= s.n; i++)
		if (memcmp(s.s + i, w, n) == 0)
			return true;
	return false;
}

static bool span_regex(const regex_t *re, struct as_x_span s)
{
	char buf[2048];
	size_t n = s.n < sizeof(buf) - 1 ? s.n : sizeof(buf) - 1;
	memcpy(buf, s.s, n);
	buf[n] = 0;
	return regexec(re, buf, 0, NULL, 0) == 0;
}

static bool init_frame(struct as_x_span file, struct as_x_span fn)
{
	if (span_is(fn, "__init__") || span_is(fn, "reset_parameters") ||
	    span_is(fn, "load_state_dict") || span_has(file, "torch/nn/init.py"))
		return true;
	return span_ends(file, "torch/nn/modules/module.py") &&
	       (span_is(fn, "to") || span_is(fn, "cuda") || span_is(fn, "_apply") ||
		span_is(fn, "to_empty"));
}

static bool backward_frame(struct as_x_span file, struct as_x_span fn)
{
	(void)file;
	return span_has(fn, "backward") || span_has(fn, "autograd::Engine::");
}

static void note(struct stack_info *si, int slot, const char *at, size_t len)
{
	if (!si->at[slot]) {
		si->at[slot] = at;
		si->len[slot] = len;
	}
}

static const struct stack_info *stack_info(struct as_x_categorizer *c,
					   uint32_t k)
{
	struct stack_info *si = &c->stacks[k];
	if (si->done)
		return si;
	si->done = true;
	si->rule = -1;
	const char *text = as_trace_stack_text(c->t, k);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		struct as_x_span file, fn;
		as_x_frame_parts(p, l, &file, &fn);
		for (uint32_t r = 0; r < c->nrules; r++) {
			if ((int32_t)r >= si->rule && si->rule >= 0)
				break;
			if ((file.n && span_regex(&c->re[r], file)) ||
			    span_regex(&c->re[r], fn)) {
				si->rule = (int32_t)r;
				si->at[NCLASS] = p;
				si->len[NCLASS] = l;
				break;
			}
		}
		if (init_frame(file, fn)) {
			si->init = true;
			note(si, NCLASS + 1, p, l);
		}
		if (span_has(file, "/torch/optim/") || span_has(file, "\\torch\\optim\\")) {
			si->cls[OPT] = true;
			note(si, OPT, p, l);
		}
		if (backward_frame(file, fn)) {
			si->cls[BWD] = true;
			note(si, BWD, p, l);
		}
		if (span_is(fn, "forward")) {
			si->cls[FWD] = true;
			note(si, FWD, p, l);
		}
		p = nl ? nl + 1 : NULL;
	}
	return si;
}

/* Whether buffer b ends before any other allocation starts: the first
 * start after its own (by_start, binary search) is at or past its end. */
bool as_x_temporary(const struct as_order *o, const struct as_buffer *b)
{
	const struct as_buffer *bb = o->t->buffers;
	uint32_t lo = 0, hi = o->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (bb[o->by_start[mid]].start <= b->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == o->n || bb[o->by_start[lo]].start >= b->end;
}

void as_x_cat_of(struct as_x_categorizer *c, uint32_t i,
		 struct as_x_verdict *v)
{
	const struct as_buffer *b = &c->t->buffers[i];
	uint32_t k = as_trace_buffer_stack(c->t, i);
	const struct stack_info *si =
		k != AS_NONE && k < c->nstacks ? stack_info(c, k) : NULL;
	*v = (struct as_x_verdict){.cat = AS_X_CAT_UNKNOWN};
	if (si && si->rule >= 0) {
		v->rule = si->rule;
		v->cat = AS_X_CAT_COUNT + (uint32_t)si->rule;
		v->why = AS_X_WHY_RULE;
		v->at = si->at[NCLASS];
		v->len = si->len[NCLASS];
		return;
	}
	v->rule = -1;
	if (c->snapshot && b->start == 0) {
		v->cat = AS_X_CAT_PARAMETERS;
		v->why = AS_X_WHY_BEFORE;
		return;
	}
	if (si && si->init) {
		v->cat = AS_X_CAT_PARAMETERS;
		v->why = AS_X_WHY_INIT;
		v->at = si->at[NCLASS + 1];
		v->len = si->len[NCLASS + 1];
		return;
	}
	if (c->order && b->size > 0 && b->end > b->start &&
	    !(b->flags & AS_BUF_NEVER_FREED) && as_x_temporary(c->order, b)) {
		v->cat = AS_X_CAT_TEMPORARIES;
		v->why = AS_X_WHY_TEMPORARY;
		return;
	}
	static const uint32_t cats[NCLASS] = {
		AS_X_CAT_OPTIMIZER, AS_X_CAT_GRADIENTS, AS_X_CAT_ACTIVATIONS};
	static const enum as_x_why frame_why[NCLASS] = {
		AS_X_WHY_OPT_FRAME, AS_X_WHY_BWD_FRAME, AS_X_WHY_FWD_FRAME};
	static const enum as_x_why stage_why[NCLASS] = {
		AS_X_WHY_OPT_STAGE, AS_X_WHY_BWD_STAGE, AS_X_WHY_FWD_STAGE};
	for (int cls = 0; cls < NCLASS; cls++) {
		if (si && si->cls[cls]) {
			v->cat = cats[cls];
			v->why = frame_why[cls];
			v->at = si->at[cls];
			v->len = si->len[cls];
			return;
		}
		const char *st = in_class(c, cls, b->space, b->start);
		if (st) {
			v->cat = cats[cls];
			v->why = stage_why[cls];
			v->at = st;
			v->len = strlen(st);
			return;
		}
	}
	v->why = si ? AS_X_WHY_NO_RULE : AS_X_WHY_NO_FRAMES;
}

const char *as_x_cat_name(const struct as_x_categorizer *c, uint32_t cat)
{
	if (cat < AS_X_CAT_COUNT)
		return cat_names[cat];
	cat -= AS_X_CAT_COUNT;
	return cat < c->nrules ? c->rules[cat].name : "?";
}

int as_explain_buffer_categories(const struct as_trace *t,
				 const struct as_explain_options *o,
				 uint8_t *out, const char **names,
				 uint32_t cap, uint32_t *nnames)
{
	uint32_t n = AS_X_CAT_COUNT + o->nrules;
	if (n > cap || n > 255)
		return AS_EINVAL;
	struct as_order ord = {0};
	struct as_x_categorizer *c = NULL;
	int err = as_order_build(t, &ord);
	if (!err)
		err = as_x_cat_create(t, o, &ord, &c);
	for (uint32_t i = 0; !err && i < t->nbuffers; i++) {
		struct as_x_verdict v;
		as_x_cat_of(c, i, &v);
		out[i] = (uint8_t)(v.cat < n ? v.cat : AS_X_CAT_UNKNOWN);
	}
	for (uint32_t k = 0; !err && k < n; k++)
		names[k] = as_x_cat_name(c, k);
	if (!err)
		*nnames = n;
	as_x_cat_destroy(c);
	as_order_free(&ord);
	return err;
}
