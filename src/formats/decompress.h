/*
 * Private: a byte reader over a file that may be compressed. Opening looks
 * at the first bytes: the zstd magic (28 b5 2f fd) or the gzip magic (1f 8b)
 * select a streaming decoder, anything else is read as is. Decoders keep a
 * fixed input window, so memory is bounded whatever the ratio; what the
 * caller keeps of the output is its business (load_stream keeps one window
 * of whole lines).
 */
#ifndef AS_DECOMPRESS_H
#define AS_DECOMPRESS_H

#include <stdint.h>
#include <stdio.h>

#include "allocscope/build.h"

struct as_reader;

/*
 * The largest zstd window the decoder accepts: 2^31 bytes, what
 * `zstd --long=31` (the most it writes) needs. A frame's window is memory
 * the decoder holds while reading it (128 MiB for --long=27).
 */
#define AS_ZSTD_WINDOW_LOG_MAX 31

enum as_compression { AS_PLAIN, AS_GZIP, AS_ZSTD };

/*
 * Open a reader on `f` (the caller keeps `f` and closes it after
 * as_reader_close). On success *out is the new reader and *kind what was
 * found; errors fill `diag` (line 0). `max_out`: the most bytes it may
 * give (after decompression, plain input too), UINT64_MAX for no limit.
 * With `keep`, the raw bytes it reads are kept (as_reader_spool may then
 * copy them) until as_reader_spool or as_reader_forget.
 */
int as_reader_open(FILE *f, uint64_t max_out, bool keep,
		   struct as_reader **out, enum as_compression *kind,
		   struct as_diag *diag);

/*
 * Read up to `cap` bytes into buf; *got is 0 only at the end of the data.
 * A truncated or corrupt stream is an error (AS_EPARSE), a failed read
 * AS_EIO, more than `max_out` bytes AS_EPARSE naming the limit.
 */
int as_reader_read(struct as_reader *r, char *buf, size_t cap, size_t *got,
		   struct as_diag *diag);

/*
 * Copy every raw byte the reader has read (kept since its open) and will
 * read into `spool` (the caller's; written, not closed), so that another
 * reader over `spool` sees exactly the bytes this one saw.
 */
int as_reader_spool(struct as_reader *r, FILE *spool, struct as_diag *diag);

/*
 * Copy the raw bytes the reader has not read yet into its spool, to the
 * end of its file (the spool then holds the whole input).
 */
int as_reader_spool_rest(struct as_reader *r, struct as_diag *diag);

/* Stop keeping raw bytes (the input will not be read again). */
void as_reader_forget(struct as_reader *r);

/* Release the reader (not the FILE); NULL is a no-op. */
void as_reader_close(struct as_reader *r);

/* The extension a compression is known by (".gz", ".zst"), or NULL. */
const char *as_compression_ext(enum as_compression kind);

#endif
