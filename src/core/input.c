/*
 * Inputs: files, FIFOs and standard input opened for reading
 * (as_open_input, as_open_regular), and the unlinked temporary file an
 * input read twice is copied to (as_spool_open).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocscope/build.h"
#include "core/internal.h"

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a file";
}

/*
 * Open `path` for reading: a regular file, or with `fifo_ok` a FIFO too.
 * stat first: a device is not even opened (an open can have effects: a
 * tape rewinds). A FIFO is opened as any reader of it would: the open
 * waits for a writer. Otherwise the open cannot block (a FIFO put there
 * meanwhile), and fstat checks what was opened, not what the name was.
 */
static int open_checked(const char *path, bool fifo_ok, FILE **out,
			struct as_diag *diag)
{
	struct stat st;
	bool named = stat(path, &st) == 0;
	bool fifo = named && fifo_ok && S_ISFIFO(st.st_mode);
	if (named && !fifo && !S_ISREG(st.st_mode))
		return as_diag_set(diag, 0, AS_EIO,
				   "not a regular file but %s",
				   file_kind(st.st_mode));
	int fd = open(path, O_RDONLY | (fifo ? 0 : O_NONBLOCK) | O_NOCTTY |
				    O_CLOEXEC);
	if (fd < 0)
		return as_diag_set(diag, 0, AS_EIO, "cannot open: %s",
				   strerror(errno));
	int err = AS_OK;
	int flags = fcntl(fd, F_GETFL);
	if (fstat(fd, &st) != 0)
		err = as_diag_set(diag, 0, AS_EIO, "cannot open: %s",
				  strerror(errno));
	else if (!S_ISREG(st.st_mode) && !(fifo_ok && S_ISFIFO(st.st_mode)))
		err = as_diag_set(diag, 0, AS_EIO,
				  "not a regular file but %s",
				  file_kind(st.st_mode));
	else if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
		err = as_diag_set(diag, 0, AS_EIO, "cannot open: %s",
				  strerror(errno));
	FILE *f = err ? NULL : fdopen(fd, "rb");
	if (!err && !f)
		err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	if (err) {
		close(fd);
		return err;
	}
	*out = f;
	return AS_OK;
}

int as_open_regular(const char *path, FILE **out, struct as_diag *diag)
{
	return open_checked(path, false, out, diag);
}

int as_open_input(const char *path, FILE **out, struct as_diag *diag)
{
	if (strcmp(path, "-") != 0)
		return open_checked(path, true, out, diag);
	/* Standard input, whatever it is but a directory: a file, a pipe, a
	 * terminal. A duplicate, so the caller's fclose leaves descriptor 0
	 * alone. */
	struct stat st;
	int fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return as_diag_set(diag, 0, AS_EIO,
				   "cannot read standard input: %s",
				   strerror(errno));
	FILE *f = NULL;
	int err = AS_OK;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		err = as_diag_set(diag, 0, AS_EIO,
				  "standard input is a directory");
	else if (!(f = fdopen(fd, "rb")))
		err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	if (err) {
		close(fd);
		return err;
	}
	*out = f;
	return AS_OK;
}

int as_spool_open(const char *dir, FILE **out)
{
	if (!dir || !*dir)
		dir = "/tmp";
	size_t n = strlen(dir);
	char *name = malloc(n + sizeof("/.asXXXXXX"));
	if (!name) {
		errno = ENOMEM;
		return AS_ENOMEM;
	}
	memcpy(name, dir, n);
	memcpy(name + n, "/.asXXXXXX", sizeof("/.asXXXXXX"));
	/* Unlinked at once, with every signal blocked while it has a name:
	 * no handler runs then, and after it there is nothing to remove,
	 * whatever ends the run (SIGKILL too). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int fd = mkstemp(name);
	if (fd >= 0)
		unlink(name);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(name);
	FILE *f = NULL;
	if (fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0)
		f = fdopen(fd, "w+b");
	e = fd < 0 ? e : errno;
	if (!f) {
		if (fd >= 0)
			close(fd);
		errno = e;
		return AS_EIO;
	}
	*out = f;
	return AS_OK;
}

