/*
 * allocscope-view: the interactive viewer. SDL2 lives in this directory
 * only; every picture and every piece of text in the window is drawn by the
 * library's renderer (allocscope_render.h) into pixels that are uploaded to
 * a streaming SDL texture.
 *
 * doc.c     a trace and its plans: loading, then planning on a thread of
 *           its own (SDL threads; who owns what is said at its top)
 * view.c    what is shown: view range, selection, search, keys
 * frame.c   a frame: the picture, the status bar and the boxes over it
 * script.c  --script: key and mouse events played from a file
 * main.c    arguments, window, event loop, --bench-frames
 */
#ifndef AS_VIEWER_H
#define AS_VIEWER_H

#include <SDL.h>

#include "allocscope/allocscope.h"
#include "allocscope/render.h"

#define MAX_SPECS 64
#define STATUS_H 40 /* logical pixels: two lines of text */

/* Colours (ARGB) of the status bar, its messages and the boxes. */
#define C_TEXT 0xff1a1a1au
#define C_BAR 0xff262a30u
#define C_BAR_TEXT 0xffeeeeeeu
#define C_RED 0xffd62728u
#define C_RED_LIGHT 0xffff7b7bu
#define C_PROMPT 0xffffd75eu
#define C_OK 0xff8fd18fu
#define C_BOX 0xf2ffffffu
#define C_BORDER 0xff555555u

/*
 * One strategy's slot in a doc. `spec` is written at load, then only read.
 * The rest belongs to the planning thread until the slot is handed over
 * (doc_poll sets `ready`), then to the UI thread, which only reads it:
 * never read plan, report, peak, failed, err or diag of a slot that is not
 * ready. `ready` itself is the UI thread's.
 */
struct strat {
	char spec[256];
	struct as_plan *plan;      /* NULL when the strategy failed */
	struct as_report report;
	uint64_t peak;
	uint32_t failed;
	int err;                   /* 0, or why there is no plan (diag) */
	struct as_diag diag;
	double ms;                 /* planning and validating it took */
	bool ready;
};

/*
 * A loaded trace and its plans, as the UI thread sees them. t, s and ns
 * point into a job shared with the planning thread (doc.c); the trace is
 * complete (names made) and read-only from load on. lb is the lower bound.
 */
struct doc_job;
struct doc {
	char path[1024];
	struct as_trace *t;
	struct strat *s;
	size_t ns;
	uint64_t lb;
	struct doc_job *job;
	size_t nready;
};

/* How a doc plans: `wake`, an SDL event type posted after each plan (0:
 * none); `hold`, start with no strategy allowed (tests: doc_allow);
 * `step_limit` for the exact baselines when `limit_set` (0: none), else
 * the default set's without specs and none with them (as replay). */
struct doc_opts {
	uint32_t wake;
	bool hold;
	bool limit_set;
	uint64_t step_limit;
	uint64_t max_input; /* as_load_options.max_input_bytes */
};

/*
 * Load `path` and start planning `specs` (none: every strategy that
 * applies) on a thread, cheapest first, one per processor at once
 * (strip after the baselines it starts from). `o` may be NULL. On failure
 * returns a negative code with diag filled and leaves *d alone. The window
 * may show the doc at once.
 */
int doc_load(struct doc *d, const char *path, const char *const *specs,
	     size_t nspecs, const struct doc_opts *o, struct as_diag *diag);
/* Hand over the slots planned since the last call; returns how many. */
size_t doc_poll(struct doc *d);
/* Block until n slots are planned (SIZE_MAX: all), then doc_poll. */
void doc_wait(struct doc *d, size_t n);
/* Post `type` after each plan from now on (0: stop): SDL's event queue
 * must be up (SDL_Init) before a thread may post to it. */
void doc_wake(struct doc *d, uint32_t type);
/* Let the thread start only n strategies in all (tests; default all). */
void doc_allow(struct doc *d, size_t n);
/* Whether a strategy is being planned: the slot planned longest, and for
 * how long. */
bool doc_planning(const struct doc *d, size_t *slot, double *ms);
/* Milliseconds since c0, a reading of SDL_GetPerformanceCounter. */
double doc_ms_since(Uint64 c0);
/* The first ready slot, in spec order, whose strategy failed (not one left
 * out, doc_left_out), or NULL. */
const struct strat *doc_first_error(const struct doc *d);
/*
 * Whether the slot's strategy stopped at the default set's step limit:
 * left out, not failed (as `allocscope replay` leaves it out).
 */
bool doc_left_out(const struct strat *s);
/* Let go of the doc without waiting for the thread (it stops after the
 * strategy it runs and frees what the doc held). NULL-safe on a zeroed doc. */
void doc_finish(struct doc *d);
/* Docs loaded and not yet freed by whoever let go last (tests). */
int doc_live_jobs(void);

struct viewer {
	struct doc doc;
	const char *specs[MAX_SPECS];
	size_t nspecs;
	struct doc_opts load; /* how a load plans (--step-limit) */

	/* What is drawn: one strategy, or all of them stacked (compare). */
	size_t cur;
	bool compare;
	struct as_render *r;
	struct as_render_opts o;
	struct as_render_view view; /* t1 <= t0: everything */

	/* Window and pixels. */
	SDL_Window *win;
	SDL_Renderer *ren;
	SDL_Texture *tex;
	int win_w, win_h;          /* logical pixels */
	int px_w, px_h;            /* device pixels */
	double scale;
	uint32_t *px;
	bool dirty;
	double draw_ms, overlay_ms; /* the last paint: picture, overlays */
	double present_ms;          /* the last upload and present */

	/* Mouse. */
	int mx, my;
	bool mouse_in;
	struct as_render_hit hover;
	bool hover_stale;          /* the mouse moved: hit-test when painting */
	bool dragging, drag_moved;
	int drag_x, drag_y;
	struct as_render_view drag_view;

	/* Selection, search, overlays. */
	uint32_t selected;
	bool typing;
	char query[128];
	uint32_t match;
	bool help, show_peak, show_violations;
	/* Time cursor (t): what is live at the mouse's time, grouped (g). */
	bool show_cursor;
	enum as_group_by group;
	uint32_t *live;            /* scratch: every buffer */
	int cursor_panel;
	double cursor_time;
	int64_t cursor_n;
	/* Allocator state (a): blocks of the strategy in view at a time. */
	struct as_render_state state;
	struct as_block *blocks;
	size_t nblocks, cap_blocks;
	atomic_bool state_stop;    /* the state replay's cancel flag */
	/* Category bands (e): each buffer's explain category, made on first
	 * use for the trace loaded; shown when v->o.buffer_group is set. */
	uint8_t *bands;
	const char *band_names[64];
	uint32_t nbands;
	/* Range summary ([ and ]): times marked, NAN when not. */
	double range_a, range_b;
	size_t peak_panel;
	uint32_t peak_bufs[24];
	int64_t npeak;
	char msg[512];
	uint32_t msg_color;
	char save_dir[512];
	int saves;
	bool quit;

	/* Planning (doc.c): batch runs wait for every plan, reloads too. */
	bool batch;
	uint32_t wake;             /* SDL event type of a finished plan */
	size_t panel_slot[MAX_SPECS]; /* compare: slot of each panel */
	size_t npanel_slot;
	long planning_tick;        /* the elapsed tenths last shown */
};

/* view.c */
int view_init(struct viewer *v, int w, int h);
void view_finish(struct viewer *v);
/* Rebuild the picture after a new doc, strategy or compare mode. */
int view_rebuild(struct viewer *v);
/* Take the plans finished since the last frame; redraw what they change. */
void view_poll(struct viewer *v);
/* The window's logical and device size changed (or was first set). */
int view_resize(struct viewer *v, int win_w, int win_h, int px_w, int px_h);
/* Handle one SDL event; mod is the keyboard modifier state. */
void view_event(struct viewer *v, const SDL_Event *e);
/* Pan by a fraction of the view (bench, arrows). */
void view_pan(struct viewer *v, double ft, double fy);
void view_zoom_time(struct viewer *v, double factor, double at_x);
void view_message(struct viewer *v, uint32_t color, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The picture's height in logical pixels: the window less the status bar. */
int view_pic_h(const struct viewer *v);
/* Whether slot s is handed over with a plan (so it can be drawn). */
bool view_shown(const struct strat *s);
/* The slot drawn in panel `panel`; without one, the slot in view (which
 * may still be planning: check `ready` before reading more than spec). */
const struct strat *view_strat_of_panel(const struct viewer *v, int panel);
/* Hit-test the mouse's position into v->hover (dirty when it changes). */
void view_update_hover(struct viewer *v);
/* The time cursor's groupings (g), by enum as_group_by. */
#define VIEW_GROUPS 5 /* AS_GROUP_BUFFER .. AS_GROUP_STAGE */
extern const char *const view_group_names[VIEW_GROUPS];

/* frame.c */
/* Paint the whole window into v->px. */
int view_paint(struct viewer *v);

/* script.c: a parsed script. */
struct script_step;
struct script {
	struct script_step *steps;
	size_t n;
};
/* Parse `path`; on error prints nothing, fills diag (FILE:LINE). */
int script_load(const char *path, struct script *s, struct as_diag *diag);
void script_finish(struct script *s);
/*
 * Before any work: --screenshot (NULL: none) and every screenshot step
 * checked against the inputs (the trace, the script, each dropped file),
 * as_output_check. 0, or 2 with the reason printed ("FILE: is an input of
 * this run"); a write that will not be atomic gets a note on stderr.
 */
int script_check_outputs(const struct script *s, const char *trace,
			 const char *script, const char *screenshot);
/* Play every step; `frame` draws and presents one frame, `shot` saves a
 * screenshot. Returns 0, or 2 when a step failed (message printed). */
int script_play(const struct script *s, struct viewer *v,
		int (*frame)(struct viewer *v),
		int (*shot)(struct viewer *v, const char *path));

#endif
