/*
 * allocscope files and text: what a program that reads traces and writes
 * reports needs around the library's calls, shared by the front ends (the
 * CLI, the viewer) and the library's own readers and writers (formats,
 * render, explain, compare), so that each is written once.
 *
 * Nothing here prints. Errors are AS_E* codes with errno or a struct
 * as_diag telling why, for the caller's message.
 */
#ifndef ALLOCSCOPE_IO_H
#define ALLOCSCOPE_IO_H

#include "allocscope/allocscope.h"

/* ---- Inputs ----
 * Opening a file to read as a trace reader would, without blocking on what
 * is no file. */

/*
 * An input file, opened for reading: a regular file (the open never
 * blocks), a FIFO or a pipe (the open waits for a writer, as any reader's
 * does), or "-", standard input (a duplicate of descriptor 0, whatever it
 * is but a directory). A device, a socket or a directory fails at once,
 * before a byte is read ("not a regular file but a directory").
 * On success *f is the open file; the caller closes it. Otherwise diag
 * (when not NULL) gets the reason; its file name is the caller's to set.
 */
int as_open_input(const char *path, FILE **f, struct as_diag *diag);

/* ---- Outputs ----
 * Files written whole or not at all, without damaging what their path
 * names, checked against the run's inputs before any work, and the
 * standard streams closed with their errors told. */

/*
 * An output written whole or not at all, without damaging what its path
 * names:
 * - "-", /dev/stdout and /dev/stderr write to stdout and stderr; /dev/fd/N
 *   and /proc/self/fd/N to that descriptor of the process (a duplicate);
 * - a symbolic link is followed (to /dev/stdout too): its target is
 *   written, the link stays;
 * - a FIFO or a character device (/dev/null, a terminal) is written
 *   directly, never replaced;
 * - a regular file, or a new one, is written to a temporary file beside it
 *   (a short hidden name, ".as" and 8 characters, so any name the file
 *   system takes works) that as_atomic_commit renames over it, keeping the
 *   file's permissions; as_atomic_abort removes it.
 * A directory, a block device or a socket is refused (errno EISDIR, EPERM,
 * ENXIO). Errors are AS_EIO or AS_ENOMEM with errno telling why, for the
 * caller's message; commit sets errno the same way.
 */
struct as_atomic;
int as_atomic_open(const char *path, struct as_atomic **out, FILE **f);
int as_atomic_commit(struct as_atomic *a);   /* closes and renames */
void as_atomic_abort(struct as_atomic *a);   /* closes and removes; NULL ok */
/* Remove every temporary file open now: async-signal-safe, for the handler
 * of a terminating signal (the final files are left untouched). */
void as_atomic_remove_pending(void);

/*
 * An existing regular file whose directory takes no new file (its mode, an
 * immutable flag) is written in place: the output is staged in an unlinked
 * temporary file and copied over the file's bytes at commit, so a run that
 * fails leaves the file as it was, but a copy that fails (a full disk)
 * leaves it cut short. as_output_check tells this beforehand.
 */
#define AS_OUTPUT_IN_PLACE 1u

/*
 * Whether the noutputs outputs (NULL entries skipped) may be written by a
 * run that reads `inputs` (ninputs paths; "-" is standard input, and as an
 * output standard output): the names are followed through symbolic links
 * (to /dev/stdout and /dev/fd/N too) and regular files compared by device
 * and inode, names that do not exist yet by their directory (device and
 * inode) and file name. AS_OK; AS_EINVAL for the first output that is one
 * of the inputs (diag: "is an input of this run"); AS_EIO when an output's
 * name cannot be followed (a link loop, a directory that cannot be
 * searched: diag says why). diag's file is that output's path. how (when
 * not NULL, noutputs entries) gets AS_OUTPUT_IN_PLACE for each output that
 * will not be written atomically. Call it before any work.
 */
int as_output_check(const char *const *outputs, size_t noutputs,
		    const char *const *inputs, size_t ninputs, unsigned *how,
		    struct as_diag *diag);

/*
 * Flush and close a standard stream at exit, as coreutils' close_stream:
 * 0, or the errno of the failure when a write failed before or now (a
 * full disk, a reader gone with SIGPIPE ignored, a descriptor closed with
 * >&- when something was written to it).
 */
int as_close_stream(FILE *f);

/* ---- Text ----
 * Names from traces made safe for terminals, Markdown and JSON, and sizes
 * for people. */

/*
 * How as_escape writes a name:
 * - AS_ESCAPE_TEXT, for a terminal: bytes a terminal acts on rather than
 *   shows (C0 and C1 controls, DEL, the bidi overrides and isolates) and
 *   bytes that are not UTF-8 become \xNN, one per byte;
 * - AS_ESCAPE_MARKDOWN, for Markdown text and table cells: that, and
 *   < > & as entities, \ ` * _ [ ] | ~ behind a backslash, so no name
 *   becomes HTML, a link, emphasis or a new table column;
 * - AS_ESCAPE_MARKDOWN_CODE, inside a code span (which shows HTML and
 *   emphasis as text): that of AS_ESCAPE_TEXT, and | as \| for tables. A
 *   code span cannot hold a backtick: the caller writes a name that has
 *   one as AS_ESCAPE_MARKDOWN text.
 */
enum as_escape_how {
	AS_ESCAPE_TEXT,
	AS_ESCAPE_MARKDOWN,
	AS_ESCAPE_MARKDOWN_CODE,
};

/*
 * Write `s` escaped into buf (len bytes with the NUL, as snprintf: cut
 * between whole escapes and characters when it does not fit; buf may be
 * NULL when len is 0). Returns the length the whole of it takes, without
 * the NUL.
 */
size_t as_escape(char *buf, size_t len, const char *s, enum as_escape_how how);

/* Write `s` as a JSON string literal (quotes and escapes). */
void as_json_string(FILE *f, const char *s);

/* Human units: 1536 -> "1.5 KiB". */
const char *as_human_bytes(uint64_t n, char *buf, size_t len);

#endif
