/*
 * Compressed input, streaming: zstd through its streaming API (frames whose
 * window is past 2^AS_ZSTD_WINDOW_LOG_MAX are refused; skippable
 * frames, which pzstd writes first, are skipped as zstd skips them), gzip
 * through zlib (concatenated members are one stream, as gzip -d reads them).
 * Input is read in a fixed window; output goes straight into the caller's
 * buffer. A stream that ends inside a frame or member is truncated: an
 * error, never a silently shorter trace.
 *
 * The limit: a reader gives at most the caller's `max_out` bytes, whatever
 * the ratio (real recordings compress up to 1000 times, so no ratio tells
 * a bomb from one). Memory stays flat: the input window, the decoder's
 * (zstd: the frame's window, up to 2 GiB for --long=31; zlib: 32 KiB) and
 * the caller's buffer.
 *
 * A reader opened to `keep` holds the raw bytes it read until the caller
 * knows whether the input is read again: then they go to a spool (a file
 * of the caller's) with every raw byte read after, or are dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "core/internal.h"
#include "formats/decompress.h"

#define IN_CAP (64u << 10)

struct as_reader {
	FILE *f;
	enum as_compression kind;
	unsigned char *in;
	size_t in_len, in_pos;
	bool in_eof;
	ZSTD_DStream *zs;
	size_t zhint;           /* last ZSTD_decompressStream result: 0 at a
				 * frame's end */
	z_stream gz;
	bool gz_ready, gz_member_end;
	uint64_t out_total, max_out; /* bytes given, the most it may give */
	bool keep;                   /* raw bytes go to kept[] */
	char *kept;
	size_t kept_len, kept_cap;
	FILE *spool; /* raw bytes go here (after kept[]) */
};

/* Raw bytes just read: kept, spooled, or neither. */
static int raw(struct as_reader *r, const void *p, size_t n,
	       struct as_diag *diag)
{
	if (r->spool) {
		if (n && fwrite(p, 1, n, r->spool) != n)
			return as_diag_set(diag, 0, AS_EIO,
					   "cannot keep a copy of the input "
					   "(temporary file): %s",
					   strerror(errno));
		return AS_OK;
	}
	if (!r->keep || n == 0)
		return AS_OK;
	if (n > r->kept_cap - r->kept_len) {
		size_t cap = r->kept_cap ? r->kept_cap : IN_CAP;
		while (cap - r->kept_len < n)
			cap *= 2;
		char *k = realloc(r->kept, cap);
		if (!k)
			return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
		r->kept = k;
		r->kept_cap = cap;
	}
	memcpy(r->kept + r->kept_len, p, n);
	r->kept_len += n;
	return AS_OK;
}

/* Up to `cap` raw bytes at p; *got 0 at the end. */
static int raw_read(struct as_reader *r, void *p, size_t cap, size_t *got,
		    struct as_diag *diag)
{
	*got = fread(p, 1, cap, r->f);
	if (*got == 0 && ferror(r->f))
		return as_diag_set(diag, 0, AS_EIO, "read error: %s",
				   strerror(errno));
	return raw(r, p, *got, diag);
}

static int fill(struct as_reader *r, struct as_diag *diag)
{
	if (r->in_pos < r->in_len || r->in_eof)
		return AS_OK;
	r->in_pos = 0;
	int err = raw_read(r, r->in, IN_CAP, &r->in_len, diag);
	r->in_eof = !err && r->in_len == 0;
	return err;
}

const char *as_compression_ext(enum as_compression kind)
{
	switch (kind) {
	case AS_GZIP:
		return ".gz";
	case AS_ZSTD:
		return ".zst";
	default:
		return NULL;
	}
}

void as_reader_close(struct as_reader *r)
{
	if (!r)
		return;
	if (r->zs)
		ZSTD_freeDStream(r->zs);
	if (r->gz_ready)
		inflateEnd(&r->gz);
	free(r->kept);
	free(r->in);
	free(r);
}

void as_reader_forget(struct as_reader *r)
{
	free(r->kept);
	r->kept = NULL;
	r->kept_len = r->kept_cap = 0;
	r->keep = false;
}

int as_reader_spool(struct as_reader *r, FILE *spool, struct as_diag *diag)
{
	r->spool = spool;
	int err = raw(r, r->kept, r->kept_len, diag);
	as_reader_forget(r);
	return err;
}

int as_reader_spool_rest(struct as_reader *r, struct as_diag *diag)
{
	char buf[IN_CAP];
	size_t got = 1;
	int err = AS_OK;
	while (!err && !r->in_eof && got)
		err = raw_read(r, buf, sizeof(buf), &got, diag);
	return err;
}

int as_reader_open(FILE *f, uint64_t max_out, bool keep,
		   struct as_reader **out, enum as_compression *kind,
		   struct as_diag *diag)
{
	struct as_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->in = malloc(IN_CAP))) {
		free(r);
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	}
	r->f = f;
	r->max_out = max_out;
	r->keep = keep;
	int err = fill(r, diag);
	if (err)
		goto fail;
	/* A short first read is fine: the magic is at most 4 bytes. */
	while (r->in_len < 4 && !r->in_eof) {
		size_t got;
		if ((err = raw_read(r, r->in + r->in_len, IN_CAP - r->in_len,
				    &got, diag)))
			goto fail;
		r->in_eof = got == 0;
		r->in_len += got;
	}
	const unsigned char *m = r->in;
	/* A frame, or a skippable frame (magic 0x184D2A5?, little-endian). */
	if (r->in_len >= 4 &&
	    ((m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) ||
	     ((m[0] & 0xf0) == 0x50 && m[1] == 0x2a && m[2] == 0x4d &&
	      m[3] == 0x18))) {
		r->kind = AS_ZSTD;
		if (!(r->zs = ZSTD_createDStream()) ||
		    ZSTD_isError(ZSTD_initDStream(r->zs)) ||
		    ZSTD_isError(ZSTD_DCtx_setParameter(
			    r->zs, ZSTD_d_windowLogMax,
			    AS_ZSTD_WINDOW_LOG_MAX))) {
			err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
			goto fail;
		}
		r->zhint = 1;
	} else if (r->in_len >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
		r->kind = AS_GZIP;
		if (inflateInit2(&r->gz, 15 + 16) != Z_OK) {
			err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
			goto fail;
		}
		r->gz_ready = true;
	}
	*kind = r->kind;
	*out = r;
	return AS_OK;
fail:
	as_reader_close(r);
	return err;
}

static int read_plain(struct as_reader *r, char *buf, size_t cap,
		      size_t *got, struct as_diag *diag)
{
	if (r->in_pos < r->in_len) {
		size_t n = r->in_len - r->in_pos;
		if (n > cap)
			n = cap;
		memcpy(buf, r->in + r->in_pos, n);
		r->in_pos += n;
		*got = n;
		return AS_OK;
	}
	*got = 0;
	return r->in_eof ? AS_OK : raw_read(r, buf, cap, got, diag);
}

static int read_zstd(struct as_reader *r, char *buf, size_t cap,
		     size_t *got, struct as_diag *diag)
{
	ZSTD_outBuffer o = {buf, cap, 0};
	for (;;) {
		int err = fill(r, diag);
		if (err)
			return err;
		if (r->in_pos == r->in_len && r->in_eof && r->zhint == 0)
			break; /* the last frame is done */
		ZSTD_inBuffer i = {r->in, r->in_len, r->in_pos};
		size_t z = ZSTD_decompressStream(r->zs, &o, &i);
		r->in_pos = i.pos;
		if (ZSTD_isError(z))
			return as_diag_set(diag, 0, AS_EPARSE,
					   "corrupt zstd data: %s",
					   ZSTD_getErrorName(z));
		r->zhint = z;
		if (o.pos > 0)
			break;
		if (r->in_pos == r->in_len && r->in_eof) {
			if (r->zhint != 0)
				return as_diag_set(diag, 0, AS_EPARSE,
						   "truncated zstd data (the "
						   "file ends inside a frame)");
			break;
		}
	}
	*got = o.pos;
	return AS_OK;
}

static int read_gzip(struct as_reader *r, char *buf, size_t cap,
		     size_t *got, struct as_diag *diag)
{
	z_stream *z = &r->gz;
	size_t done = 0;
	while (done == 0) {
		int err = fill(r, diag);
		if (err)
			return err;
		z->next_in = r->in + r->in_pos;
		z->avail_in = (uInt)(r->in_len - r->in_pos);
		if (r->gz_member_end) {
			if (z->avail_in == 0)
				break; /* the end, between members */
			if (inflateReset(z) != Z_OK)
				return as_diag_set(diag, 0, AS_EPARSE,
						   "corrupt gzip data");
			r->gz_member_end = false;
		}
		size_t room = cap - done;
		if (room > UINT32_MAX)
			room = UINT32_MAX;
		z->next_out = (Bytef *)buf + done;
		z->avail_out = (uInt)room;
		int rc = inflate(z, Z_NO_FLUSH);
		r->in_pos = r->in_len - z->avail_in;
		done += room - z->avail_out;
		if (rc == Z_STREAM_END) {
			r->gz_member_end = true;
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			return as_diag_set(diag, 0, AS_EPARSE,
					   "corrupt gzip data: %s",
					   z->msg ? z->msg : "inflate failed");
		}
		if (done == 0 && !r->gz_member_end &&
		    r->in_pos == r->in_len && r->in_eof)
			return as_diag_set(diag, 0, AS_EPARSE,
					   "truncated gzip data (the file "
					   "ends inside a member)");
	}
	*got = done;
	return AS_OK;
}

int as_reader_read(struct as_reader *r, char *buf, size_t cap, size_t *got,
		   struct as_diag *diag)
{
	*got = 0;
	if (cap == 0)
		return AS_OK;
	/* One byte past the limit tells a larger input from one of exactly
	 * max_out bytes. */
	uint64_t room = r->max_out - r->out_total;
	if (room < UINT64_MAX && cap > room + 1)
		cap = (size_t)(room + 1);
	int err = r->kind == AS_ZSTD   ? read_zstd(r, buf, cap, got, diag)
		  : r->kind == AS_GZIP ? read_gzip(r, buf, cap, got, diag)
				       : read_plain(r, buf, cap, got, diag);
	r->out_total += *got;
	if (!err && r->out_total > r->max_out) {
		char h[32];
		return as_diag_set(diag, 0, AS_EPARSE,
				   "more than %llu bytes (%s) of input%s: "
				   "refused; --max-input-bytes N|none or "
				   "ALLOCSCOPE_MAX_INPUT raises the limit",
				   (unsigned long long)r->max_out,
				   as_human_bytes(r->max_out, h, sizeof(h)),
				   r->kind == AS_PLAIN ? ""
						       : " after decompression");
	}
	return err;
}
