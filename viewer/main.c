/*
 * allocscope-view TRACE [-s SPEC]...: the interactive viewer. This file
 * reads arguments, opens the window and runs the event loop; what is shown
 * and how keys act on it is in view.c.
 *
 * Exit status: 0 done, 2 usage error, a trace that cannot be loaded or a
 * script or screenshot that fails.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocscope/io.h"
#include "viewer.h"

#define EXIT_USAGE 2

static const char usage_text[] =
	"usage: allocscope-view TRACE [-s SPEC]... [--size WxH]\n"
	"                       [--color-by buffer|size|pool|lifetime]\n"
	"                       [--script FILE] [--screenshot FILE]\n"
	"                       [--frames N] [--bench-frames N]\n"
	"                       [--compare] [--save-dir DIR] [--time-startup]\n"
	"                       [--step-limit N] [--max-input-bytes N|none]\n"
	"\n"
	"--max-input-bytes: the most bytes TRACE may hold decompressed\n"
	"(default 64G, or ALLOCSCOPE_MAX_INPUT).\n"
	"SPEC is NAME[:key=value[,key=value]...]; without -s the default set\n"
	"is shown (as allocscope replay runs it), its exact baselines left\n"
	"out past their step limit (--step-limit N sets it, 0: none; with -s\n"
	"there is none unless given). --script, --screenshot,\n"
	"--frames and --bench-frames run without a person and exit; without\n"
	"a display they use SDL's dummy video driver, and wait for every plan\n"
	"before they start. Otherwise the window opens once the trace is read\n"
	"and plans appear as they are made. --time-startup opens the window,\n"
	"prints when the first frame and each plan came, and exits when the\n"
	"last plan is shown. Press ? in the window for keys.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("allocscope-view: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n", stderr);
	fputs(usage_text, stderr);
	return EXIT_USAGE;
}

static bool parse_count(const char *s, uint64_t min, uint64_t max,
			uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || errno || *end || x < min || x > max)
		return false;
	*out = x;
	return true;
}

/* The texture matches the window's device pixels. */
static int sync_size(struct viewer *v)
{
	int w = v->win_w, h = v->win_h, pw = w, ph = h;
	if (v->win) {
		SDL_GetWindowSize(v->win, &w, &h);
		if (SDL_GetRendererOutputSize(v->ren, &pw, &ph) != 0)
			pw = w, ph = h;
	}
	bool changed = pw != v->px_w || ph != v->px_h || !v->px;
	int err = view_resize(v, w, h, pw, ph);
	if (err)
		return err;
	if (v->ren && (changed || !v->tex)) {
		if (v->tex)
			SDL_DestroyTexture(v->tex);
		v->tex = SDL_CreateTexture(v->ren, SDL_PIXELFORMAT_ARGB8888,
					   SDL_TEXTUREACCESS_STREAMING, pw, ph);
		if (!v->tex)
			return AS_ENOMEM;
	}
	return AS_OK;
}

static void present(struct viewer *v)
{
	if (!v->ren)
		return;
	Uint64 c0 = SDL_GetPerformanceCounter();
	SDL_UpdateTexture(v->tex, NULL, v->px, v->px_w * 4);
	SDL_RenderClear(v->ren);
	SDL_RenderCopy(v->ren, v->tex, NULL, NULL);
	SDL_RenderPresent(v->ren);
	v->present_ms = (double)(SDL_GetPerformanceCounter() - c0) * 1000.0 /
			(double)SDL_GetPerformanceFrequency();
}

static void set_title(struct viewer *v)
{
	if (!v->win || !v->doc.ns || v->cur >= v->doc.ns)
		return;
	char title[1400];
	const char *p = strrchr(v->doc.path, '/');
	snprintf(title, sizeof(title), "allocscope-view: %s: %s",
		 p ? p + 1 : v->doc.path,
		 v->compare ? "all strategies" : v->doc.s[v->cur].spec);
	if (strcmp(title, SDL_GetWindowTitle(v->win)) != 0)
		SDL_SetWindowTitle(v->win, title);
}

/* Handle every pending event, then draw if anything changed. */
static int frame(struct viewer *v)
{
	SDL_Event e;
	while (SDL_PollEvent(&e)) {
		if (e.type == SDL_QUIT) {
			v->quit = true;
		} else if (e.type == SDL_WINDOWEVENT &&
			   (e.window.event == SDL_WINDOWEVENT_SIZE_CHANGED ||
			    e.window.event == SDL_WINDOWEVENT_RESIZED)) {
			if (!v->win) { /* scripted, without a window */
				v->win_w = e.window.data1;
				v->win_h = e.window.data2;
			}
			if (sync_size(v)) {
				fputs("allocscope-view: out of memory\n", stderr);
				return EXIT_USAGE;
			}
		} else {
			view_event(v, &e); /* a finished plan's wake-up too */
		}
	}
	view_poll(v);
	if (v->dirty) {
		int err = view_paint(v);
		if (err) {
			fprintf(stderr, "allocscope-view: cannot draw: %s\n",
				as_strerror(err));
			return EXIT_USAGE;
		}
		set_title(v);
		present(v);
	}
	return 0;
}

/* Save what the window shows: read back from SDL when there is a window,
 * else the pixels drawn. */
static int shot(struct viewer *v, const char *path)
{
	size_t n = (size_t)v->px_w * (size_t)v->px_h;
	uint32_t *buf = malloc(n * 4);
	if (!buf) {
		fputs("allocscope-view: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	bool read = false;
	if (v->ren) {
		SDL_RenderCopy(v->ren, v->tex, NULL, NULL);
		read = SDL_RenderReadPixels(v->ren, NULL,
					    SDL_PIXELFORMAT_ARGB8888, buf,
					    v->px_w * 4) == 0;
	}
	if (!read)
		memcpy(buf, v->px, n * 4);
	for (size_t i = 0; i < n; i++)
		buf[i] |= 0xff000000u; /* the window is opaque */
	struct as_diag d = {0};
	int err = as_render_write_png_argb32(path, buf, v->px_w, v->px_h,
					     v->px_w * 4, &d);
	free(buf);
	if (err) {
		char t[1024];
		fprintf(stderr, "%s\n", as_diag_text(&d, t, sizeof(t)));
		return EXIT_USAGE;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_times(const char *what, double *ms, long n)
{
	qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
	long p95 = (long)(0.95 * (double)(n - 1) + 0.5);
	printf("%s: %ld frames, min %.1f ms, median %.1f ms, p95 %.1f ms, "
	       "max %.1f ms\n",
	       what, n, ms[0], ms[(n - 1) / 2], ms[p95], ms[n - 1]);
}

/* CPU time of the process, all threads (the software OpenGL's too): on a
 * shared machine wall times also count the time others had the CPU. */
static double cpu_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* --bench-frames: N frames panning by 1% of the view (whole pixels: the
 * renderer moves its picture and draws the uncovered columns), then N
 * frames moving the mouse (hover: hit test, tooltip). */
static int bench(struct viewer *v, long n)
{
	double *ms = malloc((size_t)n * 5 * sizeof(*ms));
	if (!ms)
		return EXIT_USAGE;
	double *draw = ms + n, *over = ms + 2 * n, *pres = ms + 3 * n,
	       *cpu = ms + 4 * n;
	double freq = (double)SDL_GetPerformanceFrequency();
	struct as_render_panel_info info;
	as_render_panel_info(v->r, 0, &info);
	size_t np = as_render_panel_count(v->r);
	uint64_t moved0 = 0;
	for (size_t k = 0; k < np; k++)
		if (as_render_panel_info(v->r, k, &info) == AS_OK)
			moved0 += info.frames_moved;
	as_render_panel_info(v->r, 0, &info);
	for (int phase = 0; phase < 3; phase++) {
		if (phase == 2) { /* count this phase's moves */
			moved0 = 0;
			for (size_t k = 0; k < np; k++)
				if (as_render_panel_info(v->r, k, &info) ==
				    AS_OK)
					moved0 += info.frames_moved;
		}
		as_render_panel_info(v->r, 0, &info);
		for (long i = 0; i < n; i++) {
			Uint64 t0 = SDL_GetPerformanceCounter();
			double c0 = cpu_ms();
			if (phase == 0) {
				view_pan(v, i % 20 < 10 ? 0.01 : -0.01, 0);
			} else if (phase == 2) {
				double f = i % 20 < 10 ? 0.01 : -0.01;
				view_pan(v, f, f);
			} else {
				SDL_Event e = {0};
				e.type = SDL_MOUSEMOTION;
				e.motion.x = (int)(info.x + info.w *
							    (0.2 + 0.6 * (double)(i % 50) / 50));
				e.motion.y = (int)(info.y + info.h / 2);
				view_event(v, &e);
				v->dirty = true;
			}
			if (frame(v)) {
				free(ms);
				return EXIT_USAGE;
			}
			ms[i] = (double)(SDL_GetPerformanceCounter() - t0) *
				1000.0 / freq;
			draw[i] = v->draw_ms;
			over[i] = v->overlay_ms;
			pres[i] = v->present_ms;
			cpu[i] = cpu_ms() - c0;
		}
		print_times(phase == 1	 ? "hover (hit test, tooltip)"
			    : phase == 2 ? "pan in time and addresses (1% "
					   "each, whole pixels)"
					 : "pan (1% of the view, whole pixels)",
			    ms, n);
		print_times("  CPU time of this process (all its threads)", cpu,
			    n);
		print_times("  of which the picture", draw, n);
		print_times("  of which the overlays", over, n);
		print_times("  of which the upload and present", pres, n);
		if (phase != 1) {
			struct as_render_panel_info pi;
			uint64_t moved = 0;
			for (size_t k = 0; k < np; k++)
				if (as_render_panel_info(v->r, k, &pi) == AS_OK)
					moved += pi.frames_moved;
			printf("  panels whose buffers were moved, not placed "
			       "again: %llu of %ld frames x %zu panels\n",
			       (unsigned long long)(moved - moved0), n, np);
		}
	}
	free(ms);
	return 0;
}

/* --time-startup: each plan as the window takes it; true once all are. */
static bool time_plans(const struct viewer *v, bool *seen, Uint64 start)
{
	for (size_t i = 0; i < v->doc.ns; i++)
		if (v->doc.s[i].ready && !seen[i]) {
			seen[i] = true;
			printf("plan %s shown at %.0f ms (planned in %.0f ms%s)\n",
			       v->doc.s[i].spec, doc_ms_since(start),
			       v->doc.s[i].ms,
			       doc_left_out(&v->doc.s[i]) ? ", left out"
			       : v->doc.s[i].err	  ? ", failed"
							  : "");
			fflush(stdout);
		}
	return v->doc.nready == v->doc.ns;
}

/* At exit: standard output and error flushed and closed, a failure said
 * and exit status 2 (as_close_stream; the CLI does the same). */
static void close_std(void)
{
	int e = as_close_stream(stdout);
	if (e)
		fprintf(stderr, "allocscope-view: write error: %s\n",
			strerror(e));
	if (as_close_stream(stderr) != 0 || e)
		_Exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	atexit(close_std);
	Uint64 start = SDL_GetPerformanceCounter();
	struct viewer v = {0};
	bool time_startup = false;
	const char *trace = NULL, *script_path = NULL, *screenshot = NULL;
	uint64_t frames = 0, bench_frames = 0;
	int w = 1280, h = 800 + STATUS_H;
	enum as_color_by color_by = AS_COLOR_BUFFER;
	const char *env_max = getenv("ALLOCSCOPE_MAX_INPUT");
	if (env_max && as_parse_max_input(env_max, &v.load.max_input))
		return usage_error("ALLOCSCOPE_MAX_INPUT wants a byte count "
				   "(64G) or none, not '%s'", env_max);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--version") == 0) {
			printf("allocscope-view %s\n", AS_VERSION);
			return 0;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (strcmp(a, "-s") == 0 && more) {
			if (v.nspecs == MAX_SPECS)
				return usage_error("too many -s (%s)", "64");
			v.specs[v.nspecs++] = argv[++i];
		} else if (strcmp(a, "--size") == 0 && more) {
			if (as_render_parse_size(argv[++i], &w, &h) != AS_OK)
				return usage_error("--size wants WxH, each 200 "
						   "to 16384, not '%s'", argv[i]);
		} else if (strcmp(a, "--color-by") == 0 && more) {
			if (as_color_by_from_name(argv[++i], &color_by))
				return usage_error("--color-by wants buffer, "
						   "size, pool or lifetime, not "
						   "'%s'", argv[i]);
		} else if (strcmp(a, "--script") == 0 && more) {
			script_path = argv[++i];
		} else if (strcmp(a, "--screenshot") == 0 && more) {
			screenshot = argv[++i];
		} else if (strcmp(a, "--time-startup") == 0) {
			time_startup = true;
		} else if (strcmp(a, "--compare") == 0) {
			v.compare = true;
		} else if (strcmp(a, "--save-dir") == 0 && more) {
			snprintf(v.save_dir, sizeof(v.save_dir), "%s", argv[++i]);
		} else if (strcmp(a, "--frames") == 0 && more) {
			if (!parse_count(argv[++i], 1, 1000000, &frames))
				return usage_error("--frames wants a count from "
						   "1 to 1000000, not '%s'",
						   argv[i]);
		} else if (strcmp(a, "--bench-frames") == 0 && more) {
			if (!parse_count(argv[++i], 1, 100000, &bench_frames))
				return usage_error("--bench-frames wants a count "
						   "from 1 to 100000, not '%s'",
						   argv[i]);
		} else if (strcmp(a, "--step-limit") == 0 && more) {
			if (!parse_count(argv[++i], 0, UINT64_MAX,
					 &v.load.step_limit))
				return usage_error("--step-limit wants a number "
						   "of steps (0: none), not "
						   "'%s'", argv[i]);
			v.load.limit_set = true;
		} else if (strcmp(a, "--max-input-bytes") == 0 && more) {
			if (as_parse_max_input(argv[++i], &v.load.max_input))
				return usage_error("--max-input-bytes wants a "
						   "byte count (64G) or none, "
						   "not '%s'", argv[i]);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown or incomplete option '%s'",
					   a);
		} else if (!trace) {
			trace = a;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (!trace)
		return usage_error("missing TRACE%s", "");
	bool batch = script_path || screenshot || frames || bench_frames;
	if (batch && time_startup)
		return usage_error("--time-startup times the window a person "
				   "sees, not %s", "--script, --screenshot, "
				   "--frames or --bench-frames");

	struct as_diag d = {0};
	char msg[1024];
	struct script sc = {0};
	if (script_path && script_load(script_path, &sc, &d)) {
		fprintf(stderr, "%s\n", as_diag_text(&d, msg, sizeof(msg)));
		return EXIT_USAGE;
	}
	if (script_check_outputs(&sc, trace, script_path, screenshot)) {
		script_finish(&sc);
		return EXIT_USAGE;
	}
	Uint64 t_load = 0;
	int status = 0;
	view_init(&v, w, h);
	v.o.color_by = color_by;
	v.batch = batch;
	v.planning_tick = -1;
	/* A plan's wake-up: no SDL_Init needed to take a number. */
	v.wake = SDL_RegisterEvents(1);
	if (v.wake == (uint32_t)-1)
		v.wake = 0; /* the 200 ms wait still sees it */
	/* Strategies are planned on a thread from here on; batch runs wait
	 * for every plan (and fail on the first failure, in spec order), as
	 * when they were planned here before the window. Wake-ups only once
	 * SDL is up (doc_wake below): SDL_Init sets up the queue they go to. */
	int err = doc_load(&v.doc, trace, v.specs, v.nspecs, &v.load, &d);
	const struct strat *failed = NULL;
	if (!err && batch) {
		doc_wait(&v.doc, SIZE_MAX);
		if ((failed = doc_first_error(&v.doc)) != NULL)
			d = failed->diag;
	}
	if (err || failed) {
		fprintf(stderr, "%s\n", as_diag_text(&d, msg, sizeof(msg)));
		script_finish(&sc);
		doc_finish(&v.doc);
		return EXIT_USAGE;
	}
	double load_ms = doc_ms_since(start);
	bool *seen = NULL;
	if (time_startup && !(seen = calloc(v.doc.ns, sizeof(*seen)))) {
		fputs("allocscope-view: out of memory\n", stderr);
		status = EXIT_USAGE;
		goto out;
	}

	/* A window when there is a display; without one, batch runs use the
	 * dummy driver, or no window at all. */
	if (SDL_Init(SDL_INIT_VIDEO) != 0 && batch) {
		SDL_SetHint(SDL_HINT_VIDEODRIVER, "dummy");
		if (SDL_Init(SDL_INIT_VIDEO) != 0 &&
		    SDL_Init(SDL_INIT_EVENTS) != 0) {
			fprintf(stderr, "allocscope-view: SDL: %s\n",
				SDL_GetError());
			status = EXIT_USAGE;
			goto out;
		}
	} else if (!SDL_WasInit(SDL_INIT_VIDEO)) {
		fprintf(stderr, "allocscope-view: cannot open a display: %s\n",
			SDL_GetError());
		status = EXIT_USAGE;
		goto out;
	}
	if (SDL_WasInit(SDL_INIT_VIDEO)) {
		SDL_SetHint(SDL_HINT_MOUSE_FOCUS_CLICKTHROUGH, "1");
		v.win = SDL_CreateWindow("allocscope-view",
					 SDL_WINDOWPOS_UNDEFINED,
					 SDL_WINDOWPOS_UNDEFINED, w, h,
					 SDL_WINDOW_RESIZABLE |
						 SDL_WINDOW_ALLOW_HIGHDPI);
		if (v.win)
			v.ren = SDL_CreateRenderer(v.win, -1, 0);
		if (!v.ren && !batch) {
			fprintf(stderr, "allocscope-view: cannot open a "
					"window: %s\n", SDL_GetError());
			status = EXIT_USAGE;
			goto out;
		}
		if (!v.ren && v.win) {
			SDL_DestroyWindow(v.win);
			v.win = NULL;
		}
	}
	if (SDL_WasInit(SDL_INIT_EVENTS))
		doc_wake(&v.doc, v.wake);
	Uint64 t0 = SDL_GetPerformanceCounter();
	if (sync_size(&v) || view_rebuild(&v)) {
		fputs("allocscope-view: out of memory\n", stderr);
		status = EXIT_USAGE;
		goto out;
	}
	t_load = SDL_GetPerformanceCounter() - t0;
	SDL_EventState(SDL_DROPFILE, SDL_ENABLE);
	SDL_StopTextInput();
	if (bench_frames) {
		SDL_RendererInfo ri = {0};
		if (v.ren)
			SDL_GetRendererInfo(v.ren, &ri);
		printf("%s: %u buffers, %zu panels, window %dx%d (%dx%d "
		       "pixels), video %s, renderer %s; picture prepared in "
		       "%.0f ms\n",
		       trace, v.doc.t->nbuffers, as_render_panel_count(v.r),
		       v.win_w, v.win_h, v.px_w, v.px_h,
		       SDL_GetCurrentVideoDriver() ? SDL_GetCurrentVideoDriver()
						   : "none",
		       ri.name ? ri.name : "none",
		       (double)t_load * 1000.0 /
			       (double)SDL_GetPerformanceFrequency());
	}
	if ((status = frame(&v)) != 0)
		goto out;
	if (time_startup) {
		printf("%s: %u buffers; trace loaded at %.0f ms, first frame "
		       "presented at %.0f ms\n", trace, v.doc.t->nbuffers,
		       load_ms, doc_ms_since(start));
		fflush(stdout);
	}
	if (script_path && (status = script_play(&sc, &v, frame, shot)) != 0)
		goto out;
	for (uint64_t i = 0; i < frames && !v.quit; i++) {
		v.dirty = true;
		if ((status = frame(&v)) != 0)
			goto out;
	}
	if (bench_frames && (status = bench(&v, (long)bench_frames)) != 0)
		goto out;
	if (screenshot && (status = shot(&v, screenshot)) != 0)
		goto out;
	while (!batch && !v.quit) {
		if (time_startup && time_plans(&v, seen, start)) {
			printf("every plan shown at %.0f ms\n",
			       doc_ms_since(start));
			break;
		}
		SDL_WaitEventTimeout(NULL, 200);
		if ((status = frame(&v)) != 0)
			break;
	}
out:
	free(seen);
	script_finish(&sc);
	view_finish(&v);
	if (v.tex)
		SDL_DestroyTexture(v.tex);
	if (v.ren)
		SDL_DestroyRenderer(v.ren);
	if (v.win)
		SDL_DestroyWindow(v.win);
	SDL_Quit();
	return status;
}
