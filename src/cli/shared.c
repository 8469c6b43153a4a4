#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "allocscope/io.h"
#include "shared.h"

/* How deep a walk goes: a tree deeper than that is refused, named. */
#define WALK_DEPTH 32
#define WALK_DEPTH_TEXT "32"

/* The CLI fills diagnostics itself (the library's helper is private). */
static int fail(struct as_diag *d, int err, const char *msg, const char *arg)
{
	snprintf(d->msg, sizeof(d->msg), msg, arg);
	d->line = 0;
	return err;
}

struct list {
	char **v;
	size_t n, cap;
};

static int list_push(struct list *l, char *s)
{
	if (!s)
		return AS_ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			return AS_ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return AS_OK;
}

bool cli_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cli_parse_u64(const char *arg, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end || errno)
		return false;
	*v = x;
	return true;
}

const char *cli_parse_amount(const char *arg, double max, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(arg, &end);
	if (end == arg || *end || isnan(x))
		return "is not a number";
	if (x < 0)
		return "is negative";
	if (errno == ERANGE && fabs(x) < 1)
		x = 0; /* too small to tell from 0 */
	else if (errno || x > max)
		return "is too large";
	*v = x;
	return NULL;
}

bool cli_parse_jobs(const char *arg, unsigned *jobs)
{
	uint64_t j;
	if (!cli_parse_u64(arg, &j) || j < 1 || j > CLI_JOBS_MAX)
		return false;
	*jobs = (unsigned)j;
	return true;
}

static bool is_trace_name(const char *name)
{
	static const char *const ext[] = {".ops",    ".txt",    ".json",
					  ".csv",    ".mtrace", ".heaptrack",
					  ".pickle"};
	size_t n = strlen(name);
	/* Compressed traces count by their inner extension. */
	if (n > 3 && strcmp(name + n - 3, ".gz") == 0)
		n -= 3;
	else if (n > 4 && strcmp(name + n - 4, ".zst") == 0)
		n -= 4;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t e = strlen(ext[i]);
		if (n > e && strncmp(name + n - e, ext[i], e) == 0)
			return true;
	}
	return false;
}

/* A file whose name tells no format, kept when its content is a profiler
 * trace (Kineto names them as it likes: `rank0.trace`, no extension). */
static bool is_trace_content(const char *path)
{
	const char *f = as_trace_sniff(path);
	return f && strcmp(f, "profiler") == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	bool slash = n && dir[n - 1] == '/';
	size_t len = n + strlen(name) + 2;
	char *s = malloc(len);
	if (s)
		snprintf(s, len, "%s%s%s", dir, slash ? "" : "/", name);
	return s;
}

/* The directories a walk is in, outermost first: a link back to one of
 * them is a loop. */
struct ancestors {
	dev_t dev[WALK_DEPTH + 1];
	ino_t ino[WALK_DEPTH + 1];
	int n;
};

/*
 * A file found in a walk that cannot be a trace (a FIFO would block the
 * run, a device never ends) is skipped and named on stderr with what it
 * is; so is a link back to a directory the walk is in (a loop: its traces
 * are listed once, from where the walk met them first).
 */
static void skipped(const char *path, const char *why)
{
	fprintf(stderr, "%s: skipped: %s\n", cli_esc(path), why);
}

static int walk(const char *dir, bool all_files, struct list *out,
		struct as_diag *diag, struct ancestors *up)
{
	struct stat st;
	if (stat(dir, &st) != 0) {
		snprintf(diag->file, sizeof(diag->file), "%s", dir);
		return fail(diag, AS_EIO, "cannot open: %s", strerror(errno));
	}
	for (int i = 0; i < up->n; i++)
		if (up->dev[i] == st.st_dev && up->ino[i] == st.st_ino) {
			skipped(dir, "a link back to a directory this walk is "
				     "in (a loop)");
			return AS_OK;
		}
	if (up->n > WALK_DEPTH) {
		snprintf(diag->file, sizeof(diag->file), "%s", dir);
		return fail(diag, AS_EINVAL,
			    "directories nested more than %s deep here",
			    WALK_DEPTH_TEXT);
	}
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(diag->file, sizeof(diag->file), "%s", dir);
		return fail(diag, AS_EIO, "cannot open: %s", strerror(errno));
	}
	up->dev[up->n] = st.st_dev;
	up->ino[up->n] = st.st_ino;
	up->n++;
	struct list names = {0};
	int err = AS_OK;
	struct dirent *e;
	while (err == AS_OK && (e = readdir(d)))
		if (e->d_name[0] != '.')
			err = list_push(&names, strdup(e->d_name));
	closedir(d);
	if (err == AS_OK && names.n)
		qsort(names.v, names.n, sizeof(*names.v), name_cmp);
	for (size_t i = 0; err == AS_OK && i < names.n; i++) {
		char *p = join(dir, names.v[i]);
		bool is = p && stat(p, &st) == 0;
		if (!p) {
			err = AS_ENOMEM;
		} else if (is && S_ISDIR(st.st_mode)) {
			err = walk(p, all_files, out, diag, up);
			free(p);
		} else if (!all_files && !is_trace_name(names.v[i]) &&
			   !(is && S_ISREG(st.st_mode) && is_trace_content(p))) {
			/* Named as no trace, nor one by its first bytes (a
			 * regular file only: nothing else is opened). */
			free(p);
		} else if (is && !S_ISREG(st.st_mode)) {
			/* Refused by its stat alone: nothing is opened (a
			 * FIFO, which a name given alone may be, would hold
			 * the walk until a writer came). */
			struct as_diag why;
			cli_check_input(p, false, &why);
			skipped(p, S_ISFIFO(st.st_mode)
					   ? "not a regular file but a FIFO"
					   : why.msg);
			free(p);
		} else {
			/* A regular file, or one that vanished or a dangling
			 * link: the load says what is wrong with it. */
			err = list_push(out, p);
		}
	}
	up->n--;
	cli_paths_free(names.v, names.n);
	if (err == AS_ENOMEM)
		fail(diag, err, "out of memory%s", "");
	return err;
}

int cli_expand_traces(char *const *args, size_t nargs, bool all_files,
		      char ***out, size_t *nout, struct as_diag *diag)
{
	struct list l = {0};
	int err = AS_OK;
	memset(diag, 0, sizeof(*diag));
	for (size_t i = 0; err == AS_OK && i < nargs; i++) {
		if (!cli_is_dir(args[i])) {
			err = list_push(&l, strdup(args[i]));
			continue;
		}
		size_t before = l.n;
		struct ancestors up = {.n = 0};
		err = walk(args[i], all_files, &l, diag, &up);
		if (err == AS_OK && l.n == before) {
			snprintf(diag->file, sizeof(diag->file), "%s",
				 args[i]);
			err = fail(diag, AS_EINVAL,
				   "no traces in this directory (%s)",
				   ".ops, .txt, .json, .csv, .mtrace, "
				   ".heaptrack, .pickle, also .gz or .zst; "
				   "profiler traces by content");
		}
	}
	if (err != AS_OK) {
		if (err == AS_ENOMEM)
			fail(diag, err, "out of memory%s", "");
		cli_paths_free(l.v, l.n);
		return err;
	}
	*out = l.v;
	*nout = l.n;
	return AS_OK;
}

void cli_paths_free(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}

/* ---- Progress ---- */

#define PROGRESS_AFTER_S 0.5
#define PROGRESS_EVERY_S 0.1
#define BAR_WIDTH 30

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(struct cli_progress *p, size_t total, bool enabled)
{
	*p = (struct cli_progress){
		.enabled = enabled && total > 1 && isatty(STDERR_FILENO),
		.total = total,
		.t0 = now_s(),
	};
}

void cli_progress_step(struct cli_progress *p, const char *what)
{
	p->done++;
	if (!p->enabled)
		return;
	double t = now_s();
	if (t - p->t0 < PROGRESS_AFTER_S || t - p->last < PROGRESS_EVERY_S)
		return;
	p->last = t;
	size_t fill = p->total ? p->done * BAR_WIDTH / p->total : 0;
	char bar[BAR_WIDTH + 1];
	for (size_t i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = 0;
	what = cli_esc(what);
	size_t wlen = strlen(what);
	const char *tail = wlen > 36 ? what + wlen - 36 : what;
	fprintf(stderr, "\r\033[K[%s] %zu/%zu %5.1fs %s%s", bar, p->done,
		p->total, t - p->t0, wlen > 36 ? "..." : "", tail);
	fflush(stderr);
	p->drawn = true;
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->drawn = false;
}

int cli_report_diag(const struct as_diag *d, int err)
{
	char buf[4096];
	struct as_diag x = *d;
	if (!x.err)
		x.err = err;
	fprintf(stderr, "%s\n", as_diag_text(&x, buf, sizeof(buf)));
	return 2;
}

int cli_check_input(const char *path, bool stdin_ok, struct as_diag *diag)
{
	FILE *f;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", path);
	if (stdin_ok && strcmp(path, "-") == 0)
		return AS_OK;
	/* A FIFO is a stream: opening it here would wait for its writer,
	 * and closing it would cut the writer off. Its reader opens it. */
	struct stat st;
	if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
		return AS_OK;
	int err = as_open_input(path, &f, diag);
	if (err == AS_OK)
		fclose(f);
	return err;
}

int cli_load_init(struct as_load_options *lo)
{
	*lo = (struct as_load_options){.spool_dir = getenv("TMPDIR")};
	const char *e = getenv("ALLOCSCOPE_MAX_INPUT");
	if (!e || as_parse_max_input(e, &lo->max_input_bytes) == AS_OK)
		return 0;
	fprintf(stderr, "allocscope: ALLOCSCOPE_MAX_INPUT wants a byte count "
			"(64G: K, M, G, T, P, E are powers of 1024) or none, "
			"not '%s'\n",
		cli_esc(e));
	return 2;
}

int cli_max_input(const char *value, struct as_load_options *lo)
{
	if (as_parse_max_input(value, &lo->max_input_bytes) == AS_OK)
		return 0;
	fprintf(stderr, "allocscope: --max-input-bytes wants a byte count "
			"(64G: K, M, G, T, P, E are powers of 1024) or none, "
			"not '%s'\n",
		cli_esc(value));
	return 2;
}

/*
 * Four slots, each grown to the longest name it held, so one printf can
 * quote up to four names. They live until the program ends (reachable:
 * no leak report).
 */
const char *cli_esc(const char *s)
{
	static char *slot[4];
	static size_t cap[4];
	static unsigned next;
	unsigned i = next++ % 4;
	size_t n = as_escape(NULL, 0, s, AS_ESCAPE_TEXT) + 1;
	if (n > cap[i]) {
		char *g = realloc(slot[i], n);
		if (!g)
			return "(a name, not shown: out of memory)";
		slot[i] = g;
		cap[i] = n;
	}
	as_escape(slot[i], n, s, AS_ESCAPE_TEXT);
	return slot[i];
}

int cli_write_out(const char *path, cli_write_fn fn, void *ctx)
{
	struct as_atomic *a;
	FILE *f;
	if (as_atomic_open(path, &a, &f) != AS_OK) {
		fprintf(stderr, "%s: cannot write: %s\n", cli_esc(path),
			strerror(errno));
		return 2;
	}
	errno = 0;
	int err = fn(ctx, f);
	if (err != AS_OK) {
		int e = errno;
		as_atomic_abort(a);
		fprintf(stderr, "%s: write failed: %s\n", cli_esc(path),
			err == AS_ENOMEM || !e ? as_strerror(err) : strerror(e));
		return 2;
	}
	if (as_atomic_commit(a) != AS_OK) {
		fprintf(stderr, "%s: write failed: %s\n", cli_esc(path),
			strerror(errno));
		return 2;
	}
	return 0;
}

int cli_usage_error(const char *who, const char *usage, const char *fmt,
		    const char *arg)
{
	fprintf(stderr, "%s: ", who);
	fprintf(stderr, fmt, cli_esc(arg));
	fputs("\n", stderr);
	fputs(usage, stderr);
	return 2;
}

int cli_rest_arg(char *a, const char *who, const char *usage,
		 char **args, size_t *nargs)
{
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		fputs(usage, stdout);
		return -1;
	}
	if (a[0] == '-' && a[1])
		return cli_usage_error(who, usage,
				       "unknown or incomplete option '%s'", a);
	args[(*nargs)++] = a;
	return 0;
}

int cli_check_outputs(const char *const *outputs, size_t nout,
		      const char *const *inputs, size_t nin)
{
	struct as_diag d = {0};
	unsigned *how = calloc(nout + 1, sizeof(*how));
	if (!how) {
		fputs("allocscope: out of memory\n", stderr);
		return 2;
	}
	int err = as_output_check(outputs, nout, inputs, nin, how, &d);
	for (size_t i = 0; !err && i < nout; i++)
		if (how[i] & AS_OUTPUT_IN_PLACE)
			fprintf(stderr,
				"%s: note: its directory takes no new file: "
				"written in place, not atomically\n",
				cli_esc(outputs[i]));
	free(how);
	return err ? cli_report_diag(&d, err) : 0;
}

/* Registered with atexit() by cli_close_std_at_exit. */
static void close_std(void)
{
	int e = as_close_stream(stdout);
	if (e)
		fprintf(stderr, "allocscope: write error: %s\n", strerror(e));
	if (as_close_stream(stderr) != 0 || e)
		_exit(2);
}

void cli_close_std_at_exit(void)
{
	atexit(close_std);
}

int cli_amount_error(const char *who, const char *usage, const char *opt,
		     const char *arg, const char *why, const char *unit)
{
	char fmt[256];
	snprintf(fmt, sizeof(fmt), "%s: '%%s' %s (give 0 to %.0f %s)", opt,
		 why, CLI_AMOUNT_MAX, unit);
	return cli_usage_error(who, usage, fmt, arg);
}
