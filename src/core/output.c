/*
 * Outputs: written whole or not at all (as_atomic_*), and checked before
 * any work against the inputs of the run (as_output_check).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "core/internal.h"

/* ---- Outputs written whole or not at all ---- */

/*
 * How an output is written: through a stdio stream the process already
 * has (stdout, stderr), straight into what the path names (a FIFO, a
 * device, a descriptor of ours named /dev/fd/N), into a temporary file
 * beside the target renamed over it at the end (regular files and new
 * ones), or, when the target's directory takes no new file, into an
 * unlinked temporary file copied over the target's bytes at the end (in
 * place: a failed run leaves the file as it was, a failed copy does not).
 */
enum atomic_kind { AT_STDIO, AT_DIRECT, AT_TEMP, AT_IN_PLACE };

struct as_atomic {
	FILE *f;
	enum atomic_kind kind;
	char *path; /* AT_TEMP: the final file, a symlink's target */
	char *tmp;  /* AT_TEMP: the temporary file beside it */
	int target; /* AT_IN_PLACE: the final file, open for writing */
};

/*
 * Temporary files open now, for as_atomic_remove_pending() in a signal
 * handler, which has no other way to find them: one of the library's two
 * process-wide pieces of state (the other is the hash key, util.c), and
 * neither is a run's. A slot is claimed with a compare-and-swap, since two
 * runner threads may make files at once, and filled (with every signal
 * blocked) as soon as the file exists; it is emptied after the file is
 * renamed or removed, before its path is freed, so the handler only ever
 * unlinks a live path (or a renamed one, harmlessly). Past
 * AS_ATOMIC_SLOTS files at once, the extra ones are not covered.
 */
#define AS_ATOMIC_SLOTS 64
static _Atomic(char *) pending[AS_ATOMIC_SLOTS];

static void track(char *tmp)
{
	for (int i = 0; i < AS_ATOMIC_SLOTS; i++) {
		char *none = NULL;
		if (atomic_compare_exchange_strong(&pending[i], &none, tmp))
			return;
	}
}

static void untrack(const char *tmp)
{
	for (int i = 0; tmp && i < AS_ATOMIC_SLOTS; i++) {
		char *mine = (char *)tmp;
		atomic_compare_exchange_strong(&pending[i], &mine, NULL);
	}
}

void as_atomic_remove_pending(void)
{
	for (int i = 0; i < AS_ATOMIC_SLOTS; i++) {
		char *tmp = atomic_load(&pending[i]);
		if (tmp)
			unlink(tmp);
	}
}

/*
 * The descriptor a /dev/stdout-like name means: /dev/stdout, /dev/stderr,
 * /dev/fd/N, /proc/self/fd/N or /proc/PID/fd/N with this process's PID;
 * -1 for any other name. Such a name is written through the descriptor
 * the process already has, as a shell's redirection set it up: reopening
 * it could truncate a file opened for appending, and its "target"
 * (pipe:[1234]) is no file to rename over.
 */
static int fd_named(const char *p)
{
	if (strcmp(p, "/dev/stdout") == 0)
		return 1;
	if (strcmp(p, "/dev/stderr") == 0)
		return 2;
	const char *n = NULL;
	if (strncmp(p, "/dev/fd/", 8) == 0) {
		n = p + 8;
	} else if (strncmp(p, "/proc/self/fd/", 14) == 0) {
		n = p + 14;
	} else if (strncmp(p, "/proc/", 6) == 0) {
		char *end;
		errno = 0;
		unsigned long pid = strtoul(p + 6, &end, 10);
		if (!errno && end != p + 6 && p[6] != '0' &&
		    pid == (unsigned long)getpid() &&
		    strncmp(end, "/fd/", 4) == 0)
			n = end + 4;
	}
	long fd = 0;
	for (const char *q = n; n && *q; q++) {
		if (*q < '0' || *q > '9' || fd > 1000000000L)
			return -1;
		fd = fd * 10 + (*q - '0');
	}
	return n && *n ? (int)fd : -1;
}

/* The directory part of `p` with its slash ("dir/", "/"; "" for none). */
static size_t dir_len(const char *p)
{
	const char *slash = strrchr(p, '/');
	return slash ? (size_t)(slash - p) + 1 : 0;
}

/*
 * Follow `path` through symbolic links to what is written: a descriptor
 * (*fd >= 0, a /dev/stdout-like name met on the way), or a path (*out,
 * malloc'ed) and whether it exists (*st then). A link's relative target is
 * taken beside the link, as the kernel does; the names are not tidied, so
 * `..` resolves as it would. 0, or -1 with errno set (ELOOP past 40 links).
 */
static int resolve(const char *path, int *fd, char **out, bool *exists,
		   struct stat *st)
{
	char *cur = strdup(path);
	char *target = malloc(PATH_MAX);
	int rc = -1;
	for (int hop = 0; cur && target; hop++) {
		if ((*fd = fd_named(cur)) >= 0) {
			rc = 0;
			break;
		}
		bool found = lstat(cur, st) == 0;
		if (!found && errno != ENOENT)
			break; /* EACCES, ENOTDIR...: errno says */
		if (!found || !S_ISLNK(st->st_mode)) {
			*exists = found;
			*out = cur;
			cur = NULL;
			rc = 0;
			break;
		}
		if (hop == 40) {
			errno = ELOOP;
			break;
		}
		ssize_t n = readlink(cur, target, PATH_MAX);
		if (n < 0)
			break;
		if (n == PATH_MAX) {
			errno = ENAMETOOLONG;
			break;
		}
		size_t d = target[0] == '/' ? 0 : dir_len(cur);
		char *next = malloc(d + (size_t)n + 1);
		if (!next)
			break;
		memcpy(next, cur, d);
		memcpy(next + d, target, (size_t)n);
		next[d + (size_t)n] = 0;
		free(cur);
		cur = next;
	}
	if ((!cur && rc != 0) || !target)
		errno = ENOMEM;
	free(cur);
	free(target);
	return rc;
}

/*
 * A new file beside `path` with a short name of its own (".as" and eight
 * random characters, hidden from directory walks), so any name the
 * filesystem takes for `path` works, even 255 bytes. Made with every signal
 * blocked until it is tracked, so a signal cannot leave it behind. `mode`:
 * the permissions (the umask applies). The open file, or -1 (errno).
 */
static int make_temp(struct as_atomic *a, mode_t mode)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t d = dir_len(a->path);
	a->tmp = malloc(d + sizeof(".as") + 8);
	if (!a->tmp) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(a->tmp, a->path, d);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Two files made at once differ in `a` (and O_EXCL settles the rest). */
	uint64_t seed = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
			(uint64_t)getpid() << 12 ^ (uintptr_t)a;
	for (int attempt = 0; attempt < 100; attempt++) {
		uint64_t r = as_splitmix64(&seed);
		char *q = a->tmp + d;
		memcpy(q, ".as", 3);
		for (int i = 0; i < 8; i++, r >>= 6)
			q[3 + i] = abc[(r & 63) % (sizeof(abc) - 1)];
		q[11] = 0;
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					      O_CLOEXEC,
			      mode);
		if (fd >= 0)
			track(a->tmp);
		int e = errno;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		errno = e;
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1; /* EEXIST a hundred times */
}

/* Whether make_temp's errno says the directory takes no new file (its
 * mode, an immutable flag, a read-only file system). */
static bool dir_refuses(int e)
{
	return e == EACCES || e == EPERM || e == EROFS;
}

/*
 * The target a->path (a regular file, no link) opened for writing as it
 * is, and the output staged in an unlinked temporary file until commit.
 * 0, or -1 (errno: why the target cannot be written).
 */
static int open_in_place(struct as_atomic *a)
{
	a->target = open(a->path, O_WRONLY | O_NOFOLLOW | O_NOCTTY |
					  O_CLOEXEC);
	struct stat st;
	if (a->target < 0)
		return -1;
	if (fstat(a->target, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(a->target);
		a->target = -1;
		errno = EAGAIN; /* it changed under us */
		return -1;
	}
	a->kind = AT_IN_PLACE;
	if (!(a->f = tmpfile()))
		return -1; /* abort closes the target */
	return 0;
}

/*
 * Copy the staged output (a->f) over the target's bytes and cut the
 * target to its length: 0, or -1 (errno).
 */
static int copy_in_place(struct as_atomic *a)
{
	char buf[65536];
	off_t at = 0;
	if (fflush(a->f) != 0 || ferror(a->f) || fseeko(a->f, 0, SEEK_SET))
		return -1;
	for (;;) {
		size_t n = fread(buf, 1, sizeof(buf), a->f);
		if (n == 0) {
			if (ferror(a->f))
				return -1;
			break;
		}
		for (size_t done = 0; done < n;) {
			ssize_t w = pwrite(a->target, buf + done, n - done,
					   at);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				if (w == 0)
					errno = EIO;
				return -1;
			}
			done += (size_t)w;
			at += w;
		}
	}
	return ftruncate(a->target, at);
}

/* Write straight into descriptor fd (the stream owns it): 0, or -1. */
static int stream_direct(struct as_atomic *a, int fd)
{
	if (!(a->f = fdopen(fd, "w"))) {
		close(fd);
		return -1;
	}
	a->kind = AT_DIRECT;
	return 0;
}

/* Open what `path` names directly for writing: a FIFO or a device. */
static int open_direct(struct as_atomic *a, const char *path)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	/* What was opened, not what the name was a moment ago. */
	if (fstat(fd, &st) != 0 ||
	    !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
		close(fd);
		errno = EAGAIN; /* it changed under us */
		return -1;
	}
	return stream_direct(a, fd);
}

/* A descriptor the process has (fd_named): stdout and stderr through their
 * stdio streams, so what the program prints keeps its order. */
static int open_fd(struct as_atomic *a, int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	if ((fl & O_ACCMODE) == O_RDONLY) {
		errno = EBADF;
		return -1;
	}
	if (fd == 1 || fd == 2) {
		a->f = fd == 1 ? stdout : stderr;
		a->kind = AT_STDIO;
		return 0;
	}
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return dup_fd < 0 ? -1 : stream_direct(a, dup_fd);
}

int as_atomic_open(const char *path, struct as_atomic **out, FILE **f)
{
	struct as_atomic *a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return AS_ENOMEM;
	}
	a->target = -1;
	if (strcmp(path, "-") == 0) {
		a->f = stdout;
		a->kind = AT_STDIO;
		*out = a;
		*f = a->f;
		return AS_OK;
	}
	int fd = -1, rc = -1;
	bool exists = false;
	struct stat st;
	if (resolve(path, &fd, &a->path, &exists, &st) != 0)
		goto fail;
	if (fd >= 0) {
		rc = open_fd(a, fd);
	} else if (exists && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
	} else if (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
		rc = open_direct(a, a->path);
	} else if (exists && S_ISBLK(st.st_mode)) {
		errno = EPERM; /* a disk is no place for a report */
	} else if (exists && !S_ISREG(st.st_mode)) {
		errno = ENXIO; /* a socket: what open(2) says of one */
	} else {
		/* A regular file, or none yet: the temporary file gets the
		 * permissions (and, when allowed, the owner) the file has. */
		int tfd = make_temp(a, exists ? st.st_mode & 0777 : 0666);
		if (tfd < 0 && exists && dir_refuses(errno)) {
			rc = open_in_place(a);
		} else if (tfd >= 0) {
			a->kind = AT_TEMP;
			if (exists && (fchmod(tfd, st.st_mode & 07777) != 0 ||
				       fchown(tfd, st.st_uid, st.st_gid) != 0)) {
				/* kept as made: the umask's mode, our owner */
			}
			if ((a->f = fdopen(tfd, "w")))
				rc = 0;
			else
				close(tfd);
		}
	}
	if (rc == 0) {
		*out = a;
		*f = a->f;
		return AS_OK;
	}
fail:;
	int e = errno;
	as_atomic_abort(a);
	errno = e;
	return AS_EIO;
}

int as_atomic_commit(struct as_atomic *a)
{
	int err = AS_OK, e = 0;
	if (a->kind == AT_STDIO) {
		if (fflush(a->f) != 0 || ferror(a->f))
			err = AS_EIO, e = errno;
		free(a);
		errno = e;
		return err;
	}
	if (a->kind == AT_IN_PLACE) {
		errno = 0;
		if (copy_in_place(a) != 0)
			err = AS_EIO, e = errno ? errno : EIO;
		if (close(a->target) != 0 && !err)
			err = AS_EIO, e = errno;
		fclose(a->f);
	} else {
		if (ferror(a->f) | fclose(a->f))
			err = AS_EIO, e = errno ? errno : EIO;
	}
	a->f = NULL;
	if (a->kind == AT_TEMP) {
		if (err == AS_OK && rename(a->tmp, a->path) != 0)
			err = AS_EIO, e = errno;
		if (err != AS_OK)
			unlink(a->tmp);
		untrack(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	free(a);
	errno = e;
	return err;
}

void as_atomic_abort(struct as_atomic *a)
{
	if (!a)
		return;
	if (a->kind != AT_STDIO && a->f)
		fclose(a->f);
	if (a->target >= 0)
		close(a->target);
	if (a->kind == AT_TEMP && a->tmp) {
		unlink(a->tmp);
		untrack(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	free(a);
}

/* ---- Outputs checked against the inputs of the run ---- */

/*
 * Where a path leads, links followed: an existing file (its device and
 * inode), or for a new file its directory's (device and inode) and its
 * name. `std` is the descriptor "-" means. final: the file written (no
 * link), NULL for descriptors.
 */
struct where {
	bool exists, regular, dir_known;
	dev_t dev;
	ino_t ino;
	char *final;      /* malloc'ed, or NULL */
	const char *base; /* a new file: its name in final */
};

/* The directory part of `p` as a path of its own ("." for none). */
static char *dir_of(const char *p)
{
	size_t d = dir_len(p);
	char *dir = malloc(d + 2);
	if (dir) {
		memcpy(dir, p, d);
		memcpy(dir + d, d ? "" : ".", d ? 1 : 2);
	}
	return dir;
}

static int locate(const char *path, int std, struct where *w)
{
	struct stat st;
	int fd = -1;
	bool exists = false;
	memset(w, 0, sizeof(*w));
	if (strcmp(path, "-") == 0)
		fd = std;
	else if (resolve(path, &fd, &w->final, &exists, &st) != 0)
		return -1;
	if (fd >= 0 && fstat(fd, &st) != 0)
		return 0; /* a closed descriptor: no file at all */
	if (fd >= 0 || exists) {
		w->exists = true;
		w->regular = S_ISREG(st.st_mode);
		w->dev = st.st_dev;
		w->ino = st.st_ino;
		return 0;
	}
	char *dir = dir_of(w->final);
	if (!dir) {
		free(w->final);
		w->final = NULL;
		errno = ENOMEM;
		return -1;
	}
	if (stat(dir, &st) == 0) {
		w->dir_known = true;
		w->dev = st.st_dev;
		w->ino = st.st_ino;
	}
	w->base = w->final + dir_len(w->final);
	free(dir);
	return 0;
}

static void where_free(struct where *w)
{
	free(w->final);
}

/* Whether two places are one: the same regular file (a terminal or a
 * pipe both read and written is no file to clobber), or the same new name
 * in the same directory. */
static bool same_place(const struct where *a, const struct where *b)
{
	if (a->exists || b->exists)
		return a->exists && b->exists && a->regular && b->regular &&
		       a->dev == b->dev && a->ino == b->ino;
	if (a->dir_known != b->dir_known)
		return false;
	if (!a->dir_known)
		return strcmp(a->final, b->final) == 0;
	return a->dev == b->dev && a->ino == b->ino &&
	       strcmp(a->base, b->base) == 0;
}

/* Whether an existing regular file `final` would be written in place:
 * its directory takes no new file, the file takes writes. */
static bool in_place(const char *final)
{
	char *dir = dir_of(final);
	if (!dir)
		return false;
	bool r = faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) != 0 &&
		 dir_refuses(errno) &&
		 faccessat(AT_FDCWD, final, W_OK, AT_EACCESS) == 0;
	free(dir);
	return r;
}

int as_output_check(const char *const *outputs, size_t noutputs,
		    const char *const *inputs, size_t ninputs, unsigned *how,
		    struct as_diag *diag)
{
	/* Each input followed once; each output compared with them all in
	 * memory (diff --svg DIR: one output a trace). */
	struct where *in = calloc(ninputs + 1, sizeof(*in));
	bool *found = calloc(ninputs + 1, sizeof(*found));
	int err = in && found ? AS_OK : AS_ENOMEM;
	for (size_t i = 0; !err && i < ninputs; i++)
		found[i] = inputs[i] && locate(inputs[i], 0, &in[i]) == 0;
	if (err)
		as_diag_set(diag, 0, err, "out of memory");
	for (size_t o = 0; !err && o < noutputs; o++) {
		struct where out;
		const char *path = outputs[o];
		if (how)
			how[o] = 0;
		if (!path)
			continue;
		if (diag) {
			snprintf(diag->file, sizeof(diag->file), "%s", path);
			diag->line = 0;
		}
		if (locate(path, 1, &out) != 0) {
			err = as_diag_set(diag, 0,
					  errno == ENOMEM ? AS_ENOMEM : AS_EIO,
					  "cannot write: %s", strerror(errno));
			break;
		}
		/* An input that cannot be followed: its reader says why. */
		for (size_t i = 0; i < ninputs && !err; i++)
			if (found[i] && same_place(&out, &in[i]))
				err = as_diag_set(diag, 0, AS_EINVAL,
						  "is an input of this run");
		if (!err && how && out.exists && out.regular && out.final &&
		    in_place(out.final))
			how[o] |= AS_OUTPUT_IN_PLACE;
		where_free(&out);
	}
	for (size_t i = 0; in && i < ninputs; i++)
		where_free(&in[i]);
	free(in);
	free(found);
	return err;
}

/* ---- Standard streams closed at exit ---- */

int as_close_stream(FILE *f)
{
	/* What coreutils' close_stream does: a stream that failed before, or
	 * whose last bytes cannot be written, is an error; a descriptor that
	 * was closed from the start (>&-) is one only when something was to
	 * be written to it. The reason is the first failure's, found again by
	 * a flush of what is left, or a zero-byte write. */
	bool failed = ferror(f) != 0;
	errno = 0;
	int flush = fflush(f);
	int e = errno;
	bool unwritten = flush != 0;
	if (failed && !e) {
		/* The bytes that failed are gone; ask the descriptor again. */
		int fd = fileno(f);
		if (fd >= 0 && write(fd, "", 0) < 0)
			e = errno;
	}
	errno = 0;
	int closed = fclose(f);
	if (!e && closed != 0 && errno != EBADF)
		e = errno;
	if (failed || unwritten || (closed != 0 && errno != EBADF))
		return e ? e : EIO;
	return 0;
}
