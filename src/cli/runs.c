#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runs.h"

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

static int walk(const char *dir, bool all_files, struct list *out,
		struct as_diag *diag, int depth)
{
	if (depth > 32)
		return fail(diag, AS_EINVAL, "directories nested too deeply%s",
			    "");
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(diag->file, sizeof(diag->file), "%s", dir);
		return fail(diag, AS_EIO, "cannot open: %s", strerror(errno));
	}
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
		if (!p) {
			err = AS_ENOMEM;
		} else if (cli_is_dir(p)) {
			err = walk(p, all_files, out, diag, depth + 1);
			free(p);
		} else if (all_files || is_trace_name(names.v[i]) ||
			   is_trace_content(p)) {
			err = list_push(out, p);
		} else {
			free(p);
		}
	}
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
		err = walk(args[i], all_files, &l, diag, 0);
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

int cli_report_diag(const struct as_diag *d)
{
	char buf[1024];
	fprintf(stderr, "%s\n", as_diag_text(d, buf, sizeof(buf)));
	return 2;
}
