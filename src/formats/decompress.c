/*
 * Compressed input, streaming: zstd through its streaming API (the decoder
 * refuses frames whose window exceeds its default limit, 128 MiB; skippable
 * frames, which pzstd writes first, are skipped as zstd skips them), gzip
 * through zlib (concatenated members are one stream, as gzip -d reads them).
 * Input is read in a fixed window; output goes straight into the caller's
 * buffer. A stream that ends inside a frame or member is truncated: an
 * error, never a silently shorter trace.
 *
 * The ratio rule: a reader's output may reach AS_INFLATE_FLOOR bytes plus
 * AS_INFLATE_RATIO times the compressed bytes read so far, no more. Every
 * reader's cost is a multiple of the bytes it is given; with this, the
 * cost of a compressed file is a multiple of its own size too (2 MB of zstd
 * can hold 60 GiB of newlines; here they are refused after 288 MiB at most).
 */
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
	uint64_t in_total, out_total; /* compressed bytes read, bytes out */
};

static int fill(struct as_reader *r, struct as_diag *diag)
{
	if (r->in_pos < r->in_len || r->in_eof)
		return AS_OK;
	r->in_pos = 0;
	r->in_len = fread(r->in, 1, IN_CAP, r->f);
	r->in_total += r->in_len;
	if (r->in_len == 0) {
		if (ferror(r->f))
			return as_diag_set(diag, 0, AS_EIO, "read error");
		r->in_eof = true;
	}
	return AS_OK;
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
	free(r->in);
	free(r);
}

int as_reader_open(FILE *f, struct as_reader **out, enum as_compression *kind,
		   struct as_diag *diag)
{
	struct as_reader *r = calloc(1, sizeof(*r));
	if (!r || !(r->in = malloc(IN_CAP))) {
		free(r);
		return as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	}
	r->f = f;
	int err = fill(r, diag);
	if (err)
		goto fail;
	/* A short first read is fine: the magic is at most 4 bytes. */
	while (r->in_len < 4 && !r->in_eof) {
		size_t got = fread(r->in + r->in_len, 1, IN_CAP - r->in_len, f);
		if (got == 0) {
			if (ferror(f)) {
				err = as_diag_set(diag, 0, AS_EIO, "read error");
				goto fail;
			}
			r->in_eof = true;
			break;
		}
		r->in_len += got;
		r->in_total += got;
	}
	const unsigned char *m = r->in;
	/* A frame, or a skippable frame (magic 0x184D2A5?, little-endian). */
	if (r->in_len >= 4 &&
	    ((m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) ||
	     ((m[0] & 0xf0) == 0x50 && m[1] == 0x2a && m[2] == 0x4d &&
	      m[3] == 0x18))) {
		r->kind = AS_ZSTD;
		if (!(r->zs = ZSTD_createDStream()) ||
		    ZSTD_isError(ZSTD_initDStream(r->zs))) {
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
	*got = r->in_eof ? 0 : fread(buf, 1, cap, r->f);
	if (*got == 0 && ferror(r->f))
		return as_diag_set(diag, 0, AS_EIO, "read error");
	return AS_OK;
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
	int err;
	switch (r->kind) {
	case AS_ZSTD:
		err = read_zstd(r, buf, cap, got, diag);
		break;
	case AS_GZIP:
		err = read_gzip(r, buf, cap, got, diag);
		break;
	default:
		return read_plain(r, buf, cap, got, diag);
	}
	r->out_total += *got;
	if (!err && r->out_total > AS_INFLATE_FLOOR &&
	    (r->out_total - AS_INFLATE_FLOOR) / AS_INFLATE_RATIO >= r->in_total)
		return as_diag_set(diag, 0, AS_EPARSE,
				   "%s data expands past %u MiB plus %u times "
				   "its %llu compressed bytes read so far: "
				   "refused (a decompression bomb?)",
				   r->kind == AS_ZSTD ? "zstd" : "gzip",
				   (unsigned)(AS_INFLATE_FLOOR >> 20),
				   AS_INFLATE_RATIO,
				   (unsigned long long)r->in_total);
	return err;
}
