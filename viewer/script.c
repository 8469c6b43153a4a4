/*
 * --script FILE: key and mouse events played through SDL's event queue, so
 * a test drives the viewer exactly as a person would. One step a line:
 *
 *   # comment                 blank lines and comments are skipped
 *   key NAME                  a key by SDL name: f, Tab, 1, Escape, Return,
 *                             /, ?; modifiers as ctrl+NAME, shift+NAME
 *   type TEXT                 text input (the rest of the line)
 *   move X Y                  the mouse to (X, Y), logical pixels
 *   click X Y                 press and release the left button there
 *   dclick X Y                a double click there
 *   drag X0 Y0 X1 Y1          press at X0 Y0, move, release at X1 Y1
 *   wheel N [at] X Y [ctrl|shift]   N wheel steps (negative: out)
 *   drop FILE                 a file dropped onto the window
 *   resize W H                the window's new size (logical pixels)
 *   wait N                    draw N frames
 *   screenshot FILE           draw a frame and save the window as PNG
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/io.h"
#include "viewer.h"

enum step_kind {
	S_KEY, S_TYPE, S_MOVE, S_CLICK, S_DCLICK, S_DRAG, S_WHEEL, S_DROP,
	S_WAIT, S_SHOT, S_RESIZE,
};

struct script_step {
	enum step_kind kind;
	uint64_t line;
	SDL_Keycode key;
	Uint16 mod;
	int a[4];
	char *text;
};

static const char *const step_names[] = {
	"key", "type", "move", "click", "dclick", "drag", "wheel", "drop",
	"wait", "screenshot", "resize", NULL,
};

void script_finish(struct script *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->steps[i].text);
	free(s->steps);
	s->steps = NULL;
	s->n = 0;
}

static int fail(struct as_diag *d, uint64_t line, const char *msg,
		const char *arg)
{
	d->line = line;
	snprintf(d->msg, sizeof(d->msg), msg, arg);
	return AS_EPARSE;
}

/* Whole integers within [lo, hi] from `s`; returns how many were read. */
static int ints(char **s, int *out, int max, long lo, long hi, bool *bad)
{
	int n = 0;
	while (n < max) {
		while (**s == ' ' || **s == '\t')
			(*s)++;
		if (!**s || !(isdigit((unsigned char)**s) || **s == '-'))
			break;
		char *end;
		errno = 0;
		long x = strtol(*s, &end, 10);
		if (errno || end == *s || x < lo || x > hi ||
		    (*end && *end != ' ' && *end != '\t')) {
			*bad = true;
			return n;
		}
		out[n++] = (int)x;
		*s = end;
	}
	return n;
}

static char *trimmed(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
			 s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = 0;
	return s;
}

static int parse_key(char *name, struct script_step *st)
{
	st->mod = KMOD_NONE;
	for (;;) {
		char *plus = strchr(name, '+');
		if (!plus || plus == name || !plus[1])
			break;
		*plus = 0;
		if (SDL_strcasecmp(name, "ctrl") == 0)
			st->mod |= KMOD_LCTRL;
		else if (SDL_strcasecmp(name, "shift") == 0)
			st->mod |= KMOD_LSHIFT;
		else if (SDL_strcasecmp(name, "alt") == 0)
			st->mod |= KMOD_LALT;
		else
			return -1;
		name = plus + 1;
	}
	st->key = SDL_GetKeyFromName(name);
	if (st->key == SDLK_UNKNOWN && strlen(name) == 1)
		st->key = (SDL_Keycode)(unsigned char)name[0];
	return st->key == SDLK_UNKNOWN ? -1 : 0;
}

static int parse_line(char *s, uint64_t line, struct script_step *st,
		      struct as_diag *d)
{
	char *sp = s;
	while (*sp && *sp != ' ' && *sp != '\t')
		sp++;
	char save = *sp;
	*sp = 0;
	int k = 0;
	while (step_names[k] && strcmp(step_names[k], s) != 0)
		k++;
	if (!step_names[k])
		return fail(d, line, "unknown script step '%s' (key, type, "
				     "move, click, dclick, drag, wheel, drop, "
				     "wait, screenshot, resize)", s);
	*sp = save;
	char *rest = trimmed(sp);
	st->kind = (enum step_kind)k;
	st->line = line;
	bool bad = false;
	int n;
	switch (st->kind) {
	case S_KEY:
		if (!*rest || parse_key(rest, st))
			return fail(d, line, "unknown key '%s'", rest);
		break;
	case S_TYPE:
	case S_DROP:
	case S_SHOT:
		if (!*rest)
			return fail(d, line, "%s needs an argument",
				    step_names[k]);
		st->text = strdup(rest);
		if (!st->text)
			return fail(d, line, "out of memory%s", "");
		break;
	case S_MOVE:
	case S_CLICK:
	case S_DCLICK:
		n = ints(&rest, st->a, 2, -100000, 100000, &bad);
		if (bad || n != 2 || *rest)
			return fail(d, line, "%s wants X Y", step_names[k]);
		break;
	case S_DRAG:
		n = ints(&rest, st->a, 4, -100000, 100000, &bad);
		if (bad || n != 4 || *rest)
			return fail(d, line, "drag wants X0 Y0 X1 Y1%s", "");
		break;
	case S_WHEEL:
		n = ints(&rest, st->a, 1, -100, 100, &bad);
		if (!bad && n == 1 && strncmp(rest, " at", 3) == 0)
			rest += 3;
		if (!bad && n == 1)
			n += ints(&rest, st->a + 1, 2, -100000, 100000, &bad);
		rest = trimmed(rest);
		if (strcmp(rest, "ctrl") == 0)
			st->mod = KMOD_LCTRL;
		else if (strcmp(rest, "shift") == 0)
			st->mod = KMOD_LSHIFT;
		else if (*rest)
			bad = true;
		if (bad || n != 3)
			return fail(d, line, "wheel wants N [at] X Y "
					     "[ctrl|shift], N in -100..100%s",
				    "");
		break;
	case S_RESIZE:
		n = ints(&rest, st->a, 2, 200, 16384, &bad);
		if (bad || n != 2 || *rest)
			return fail(d, line, "resize wants W H, each 200 to "
					     "16384%s", "");
		break;
	case S_WAIT:
		n = ints(&rest, st->a, 1, 0, 100000, &bad);
		if (bad || n != 1 || *rest)
			return fail(d, line, "wait wants N frames, 0 to "
					     "100000%s", "");
		break;
	}
	return AS_OK;
}

int script_load(const char *path, struct script *s, struct as_diag *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->file, sizeof(d->file), "%s", path);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(d->msg, sizeof(d->msg), "cannot open: %s",
			 strerror(errno));
		return AS_EIO;
	}
	struct script out = {0};
	size_t cap = 0, bufcap = 0;
	char *buf = NULL;
	uint64_t line = 0;
	int err = AS_OK;
	/* Whole lines, however long: a long line is never split into steps. */
	errno = 0;
	while (getline(&buf, &bufcap, f) >= 0) {
		line++;
		char *t = trimmed(buf);
		if (!*t || *t == '#')
			continue;
		if (out.n == cap) {
			cap = cap ? cap * 2 : 16;
			struct script_step *p =
				realloc(out.steps, cap * sizeof(*p));
			if (!p) {
				err = fail(d, line, "out of memory%s", "");
				break;
			}
			out.steps = p;
		}
		struct script_step *st = &out.steps[out.n];
		memset(st, 0, sizeof(*st));
		err = parse_line(t, line, st, d);
		if (err)
			break;
		out.n++;
	}
	if (!err && ferror(f))
		err = fail(d, line + 1, errno == ENOMEM ? "out of memory%s"
						       : "cannot read: %s",
			   errno == ENOMEM ? "" : strerror(errno));
	free(buf);
	fclose(f);
	if (err) {
		script_finish(&out);
		return err;
	}
	*s = out;
	return AS_OK;
}

int script_check_outputs(const struct script *s, const char *trace,
			 const char *script, const char *screenshot)
{
	const char **in = malloc((s->n + 2) * sizeof(*in));
	if (!in) {
		fputs("allocscope-view: out of memory\n", stderr);
		return 2;
	}
	size_t nin = 0;
	in[nin++] = trace;
	if (script)
		in[nin++] = script;
	for (size_t i = 0; i < s->n; i++)
		if (s->steps[i].kind == S_DROP)
			in[nin++] = s->steps[i].text;
	const char **out = malloc((s->n + 1) * sizeof(*out));
	unsigned *how = calloc(s->n + 1, sizeof(*how));
	struct as_diag d = {0};
	char msg[1024];
	size_t nout = 0;
	int status = 0;
	for (size_t i = 0; out && i < s->n; i++)
		if (s->steps[i].kind == S_SHOT)
			out[nout++] = s->steps[i].text;
	if (out && screenshot)
		out[nout++] = screenshot;
	if (!out || !how) {
		fputs("allocscope-view: out of memory\n", stderr);
		status = 2;
	} else if (as_output_check(out, nout, in, nin, how, &d)) {
		fprintf(stderr, "%s\n", as_diag_text(&d, msg, sizeof(msg)));
		status = 2;
	}
	for (size_t i = 0; !status && i < nout; i++) {
		if (!(how[i] & AS_OUTPUT_IN_PLACE))
			continue;
		struct as_diag note = {.err = AS_OK};
		snprintf(note.file, sizeof(note.file), "%s", out[i]);
		snprintf(note.msg, sizeof(note.msg),
			 "note: its directory takes no new file: written in "
			 "place, not atomically");
		fprintf(stderr, "%s\n", as_diag_text(&note, msg, sizeof(msg)));
	}
	free(out);
	free(how);
	free(in);
	return status;
}

static void push_motion(int x, int y, Uint32 state)
{
	SDL_Event e = {0};
	e.type = SDL_MOUSEMOTION;
	e.motion.x = x;
	e.motion.y = y;
	e.motion.state = state;
	SDL_PushEvent(&e);
}

static void push_button(int x, int y, bool down, int clicks)
{
	SDL_Event e = {0};
	e.type = down ? SDL_MOUSEBUTTONDOWN : SDL_MOUSEBUTTONUP;
	e.button.button = SDL_BUTTON_LEFT;
	e.button.state = down ? SDL_PRESSED : SDL_RELEASED;
	e.button.clicks = (Uint8)clicks;
	e.button.x = x;
	e.button.y = y;
	SDL_PushEvent(&e);
}

int script_play(const struct script *s, struct viewer *v,
		int (*frame)(struct viewer *v),
		int (*shot)(struct viewer *v, const char *path))
{
	for (size_t i = 0; i < s->n && !v->quit; i++) {
		const struct script_step *st = &s->steps[i];
		SDL_Event e = {0};
		switch (st->kind) {
		case S_KEY:
			e.type = SDL_KEYDOWN;
			e.key.state = SDL_PRESSED;
			e.key.keysym.sym = st->key;
			e.key.keysym.mod = st->mod;
			SDL_PushEvent(&e);
			e.type = SDL_KEYUP;
			e.key.state = SDL_RELEASED;
			SDL_PushEvent(&e);
			break;
		case S_TYPE: {
			/* In pieces that fit an SDL text event. */
			const char *p = st->text;
			while (*p) {
				size_t l = strlen(p);
				if (l >= sizeof(e.text.text))
					l = sizeof(e.text.text) - 1;
				while (l > 0 && (p[l] & 0xc0) == 0x80)
					l--;
				e.type = SDL_TEXTINPUT;
				memcpy(e.text.text, p, l);
				e.text.text[l] = 0;
				SDL_PushEvent(&e);
				p += l;
			}
			break;
		}
		case S_MOVE:
			push_motion(st->a[0], st->a[1], 0);
			break;
		case S_CLICK:
		case S_DCLICK:
			push_motion(st->a[0], st->a[1], 0);
			push_button(st->a[0], st->a[1], true, 1);
			push_button(st->a[0], st->a[1], false, 1);
			if (st->kind == S_DCLICK) {
				push_button(st->a[0], st->a[1], true, 2);
				push_button(st->a[0], st->a[1], false, 2);
			}
			break;
		case S_DRAG:
			push_motion(st->a[0], st->a[1], 0);
			push_button(st->a[0], st->a[1], true, 1);
			for (int k = 1; k <= 4; k++)
				push_motion(st->a[0] + (st->a[2] - st->a[0]) * k / 4,
					    st->a[1] + (st->a[3] - st->a[1]) * k / 4,
					    SDL_BUTTON_LMASK);
			push_button(st->a[2], st->a[3], false, 1);
			break;
		case S_WHEEL:
			push_motion(st->a[1], st->a[2], 0);
			SDL_SetModState((SDL_Keymod)st->mod);
			e.type = SDL_MOUSEWHEEL;
			e.wheel.y = st->a[0];
			e.wheel.direction = SDL_MOUSEWHEEL_NORMAL;
			SDL_PushEvent(&e);
			break;
		case S_DROP:
			e.type = SDL_DROPFILE;
			e.drop.file = SDL_strdup(st->text);
			SDL_PushEvent(&e);
			break;
		case S_WAIT:
			for (int k = 0; k < st->a[0] && !v->quit; k++)
				if (frame(v))
					return 2;
			continue;
		case S_SHOT:
			if (frame(v) || shot(v, st->text))
				return 2;
			continue;
		case S_RESIZE:
			/* The window system answers with a size event. */
			if (v->win) {
				SDL_SetWindowSize(v->win, st->a[0], st->a[1]);
			} else {
				e.type = SDL_WINDOWEVENT;
				e.window.event = SDL_WINDOWEVENT_SIZE_CHANGED;
				e.window.data1 = st->a[0];
				e.window.data2 = st->a[1];
				SDL_PushEvent(&e);
			}
			for (int k = 0; k < 100 && v->win_w != st->a[0]; k++) {
				if (frame(v)) /* until it arrives, at most 1 s */
					return 2;
				SDL_Delay(10);
			}
			break;
		}
		if (frame(v))
			return 2;
		SDL_SetModState(KMOD_NONE);
	}
	return 0;
}
