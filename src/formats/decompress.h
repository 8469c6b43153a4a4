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

#include "allocscope/allocscope.h"

struct as_reader;

/*
 * What a compressed file may expand to: AS_INFLATE_FLOOR bytes plus
 * AS_INFLATE_RATIO times the compressed bytes read; past it, reading fails
 * (AS_EPARSE). Real traces compress 2 to 25 times.
 */
#define AS_INFLATE_FLOOR ((uint64_t)32 << 20)
#define AS_INFLATE_RATIO 128u

enum as_compression { AS_PLAIN, AS_GZIP, AS_ZSTD };

/*
 * Open a reader on `f` (the caller keeps `f` and closes it after
 * as_reader_close). On success *out is the new reader and *kind what was
 * found; errors fill `diag` (line 0).
 */
int as_reader_open(FILE *f, struct as_reader **out, enum as_compression *kind,
		   struct as_diag *diag);

/*
 * Read up to `cap` bytes into buf; *got is 0 only at the end of the data.
 * A truncated or corrupt stream is an error (AS_EPARSE), a failed read
 * AS_EIO.
 */
int as_reader_read(struct as_reader *r, char *buf, size_t cap, size_t *got,
		   struct as_diag *diag);

/* Release the reader (not the FILE); NULL is a no-op. */
void as_reader_close(struct as_reader *r);

/* The extension a compression is known by (".gz", ".zst"), or NULL. */
const char *as_compression_ext(enum as_compression kind);

#endif
