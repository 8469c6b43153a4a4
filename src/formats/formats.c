/*
 * The format table and loading: a file is matched to a format by its
 * extension, else by its first bytes (each row's sniff, in table order; the
 * ops format takes any text left), then read through the row's parser. Line
 * formats stream through a window of whole lines, so a 10^7-buffer trace
 * never sits in memory as text; pulled formats (JSON) read through an
 * as_source, as many times as they need; whole formats are read at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/decompress.h"
#include "formats/formats.h"

/* In detection order: the ops format, which takes any text, last; the
 * profiler's Chrome traces before the JSON traces, which take any object. */
static const struct as_format_impl *const formats[] = {
	&as_format_pickle,
	&as_format_profiler,
	&as_format_json,
	&as_format_mtrace,
	&as_format_heaptrack,
	&as_format_csv,
	&as_format_ops,
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

/* How many first bytes detection looks at (a profiler trace's
 * "traceEvents" may come after several devices' properties). */
#define SNIFF_BYTES (64u << 10)

static const struct as_format_impl *by_name(const char *name)
{
	if (!name || strcmp(name, "auto") == 0)
		return NULL;
	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(formats[i]->name, name) == 0)
			return formats[i];
	if (strcmp(name, "txt") == 0 || strcmp(name, "text") == 0)
		return &as_format_ops;
	return NULL;
}

bool as_format_known(const char *name)
{
	return !name || strcmp(name, "auto") == 0 || by_name(name);
}

const char *as_format_names(size_t i)
{
	return i < NFORMATS ? formats[i]->name : NULL;
}

/* The row with the longest extension that ends the file's name, or NULL. */
static const struct as_format_impl *by_extension(const char *name)
{
	const char *slash = strrchr(name, '/');
	const char *base = slash ? slash + 1 : name;
	size_t n = strlen(base), best = 0;
	const struct as_format_impl *found = NULL;
	for (size_t i = 0; i < NFORMATS; i++)
		for (const char *p = formats[i]->extensions; *p;) {
			size_t w = strcspn(p, " ");
			if (w > best && w <= n &&
			    memcmp(base + n - w, p, w) == 0) {
				best = w;
				found = formats[i];
			}
			p += w;
			p += strspn(p, " ");
		}
	return found;
}

/* The first row whose sniff takes the head; NULL when none but ops does. */
static const struct as_format_impl *by_content(const char *head, size_t len)
{
	if (len > SNIFF_BYTES)
		len = SNIFF_BYTES;
	for (size_t i = 0; i < NFORMATS; i++)
		if (formats[i] != &as_format_ops && formats[i]->sniff(head, len))
			return formats[i];
	return NULL;
}

static const struct as_format_impl *detect(const char *name,
					   const char *head, size_t len)
{
	const struct as_format_impl *f = by_extension(name);
	if (!f)
		f = by_content(head, len);
	return f ? f : &as_format_ops;
}

static int start(const char *name, const struct as_format_impl *fmt,
		 const struct as_live_sink *sink, struct as_builder **b,
		 struct as_diag *diag)
{
	*b = as_builder_create(name, fmt->name);
	/* A sink takes the blocks of malloc recordings; others load whole. */
	if (*b && (fmt == &as_format_heaptrack || fmt == &as_format_mtrace))
		(*b)->sink = sink;
	return *b ? AS_OK : as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
}

/*
 * Past the whole blank lines at p ("\n" or "\r\n" each, eight newlines or
 * four CRLFs at a time); *n gets how many.
 */
static const char *skip_blank_lines(const char *p, const char *end,
				    uint64_t *n)
{
	static const char nl8[8] = "\n\n\n\n\n\n\n\n";
	static const char crlf4[8] = "\r\n\r\n\r\n\r\n";
	uint64_t k = 0;
	for (;;) {
		if (end - p >= 8 && memcmp(p, nl8, 8) == 0)
			p += 8, k += 8;
		else if (end - p >= 8 && memcmp(p, crlf4, 8) == 0)
			p += 8, k += 4;
		else if (p < end && *p == '\n')
			p++, k++;
		else if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
			p += 2, k++;
		else
			break;
	}
	*n = k;
	return p;
}

/* Past a run of blanks (space, tab, CR, LF) at p, blank lines at their
 * pace. */
static const char *skip_blanks(const char *p, const char *end)
{
	for (;;) {
		uint64_t n;
		p = skip_blank_lines(p, end, &n);
		if (p == end || !(*p == ' ' || *p == '\t' || *p == '\r'))
			return p;
		p++;
	}
}

/* Runs of at least this many blank lines ("\n" or "\r\n") are counted, not
 * handed to the format line by line (every line format skips them). */
#define NL_RUN 16
/*
 * More blank lines in a row than this are no recording (a newline bomb):
 * refused before a decoder's window (128 MiB for zstd --long=27) fills.
 */
#define MAX_NL_RUN (1u << 24)

static bool cr_or_lf(char c)
{
	return c == '\r' || c == '\n';
}

/*
 * The first run of NL_RUN blank lines or more in [p, end), p at a line's
 * start: where it starts (a line's start), *stop where it ends and *n its
 * lines; NULL when there is none. One byte in NL_RUN is looked at where
 * there is none: a byte other than CR or LF is in no run, and a run's
 * lines take NL_RUN bytes at least.
 */
static const char *find_run(const char *p, const char *end,
			    const char **stop, uint64_t *n)
{
	size_t len = (size_t)(end - p), q = NL_RUN - 1;
	while (q < len) {
		if (!cr_or_lf(p[q])) {
			q += NL_RUN;
			continue;
		}
		/* The CR/LF bytes around q; a run starts after the first LF
		 * of them unless they start the piece (a line's start). */
		size_t s = q, a;
		while (s > 0 && cr_or_lf(p[s - 1]))
			s--;
		for (a = s; s > 0 && a < len && p[a] != '\n'; a++)
			if (!cr_or_lf(p[a]))
				break;
		if (s > 0 && (a == len || p[a] != '\n')) {
			q = a + NL_RUN;
			continue;
		}
		a += s > 0; /* past that LF */
		*stop = skip_blank_lines(p + a, end, n);
		if (*n >= NL_RUN)
			return p + a;
		size_t next = (size_t)(*stop - p) + NL_RUN - 1;
		q = next > q ? next : q + 1;
	}
	return NULL;
}

static int feed(struct as_builder *b, const struct as_format_impl *fmt,
		struct as_line_state *st, const char *data, size_t len,
		struct as_diag *diag)
{
	const char *nul = memchr(data, 0, len);
	if (nul) { /* the line parsers stop at NUL: refuse it on its line */
		uint64_t line = st->line + 1;
		for (const char *q = data; q < nul; q++)
			line += *q == '\n';
		return as_diag_set(diag, line, AS_EPARSE,
				   "NUL byte in a text file");
	}
	const char *p = data, *end = data + len;
	if (!st->content)
		st->content = skip_blanks(data, end) < end;
	while (p < end) {
		/* The whole lines before a long run of blank lines go to the
		 * format; the run's lines are counted. A run goes on from the
		 * last piece when this one starts with it. */
		const char *stop;
		uint64_t n = 0;
		const char *r = find_run(p, end, &stop, &n);
		if (r != p)
			st->nl_run = 0;
		const char *upto = r ? r : end;
		int err = upto > p ? fmt->lines(b, st, p, (size_t)(upto - p),
						diag)
				   : AS_OK;
		if (err || !r)
			return err;
		st->line += n;
		st->nl_run += n;
		if (st->nl_run > MAX_NL_RUN)
			return as_diag_set(diag, st->line, AS_EPARSE,
					   "more than %u blank lines in a row: "
					   "refused (no recording has them; a "
					   "newline bomb?)",
					   MAX_NL_RUN);
		p = stop;
	}
	return AS_OK;
}

static int finish(struct as_builder *b, const struct as_format_impl *fmt,
		  struct as_line_state *st, int err, struct as_trace **out,
		  struct as_diag *diag)
{
	if (fmt->end)
		err = fmt->end(b, st, err, diag);
	if (err == AS_OK && b->sink && b->sink->end)
		err = b->sink->end(b->sink->ctx, b, diag);
	/* One rule for every line format: nothing but blanks is no trace. */
	if (err == AS_OK && fmt->lines && !st->content)
		err = as_diag_set(diag, 1, AS_EPARSE, "empty file");
	if (err == AS_OK) {
		err = as_builder_finish(b, out, diag);
		if (err == AS_OK)
			return AS_OK; /* the builder is consumed */
	}
	if (err == AS_ENOMEM)
		as_diag_set(diag, diag->line, AS_ENOMEM, "out of memory");
	else if (!diag->msg[0]) /* every error has text */
		as_diag_set(diag, diag->line, err, "%s", as_strerror(err));
	as_builder_destroy(b);
	return err;
}

static void diag_start(struct as_diag *diag, const char *name)
{
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", name);
}

static int unknown_format(const char *format, struct as_diag *diag)
{
	return as_diag_set(diag, 0, AS_EINVAL, "unknown format '%s'", format);
}

/*
 * A pulled format's input: `head`, the bytes already read (all of them for
 * text in memory), then the rest of the reader. The reader copies every
 * raw byte it reads into `spool`; the first rewind copies the rest, and
 * from then on each pass reads the spool (decompressed again), skipping
 * what head holds (and the BOM before it). So the input itself is read
 * once, and every pass sees the same bytes, whatever happens to the file.
 */
struct as_source {
	const char *head;
	size_t head_len, pos;
	struct as_reader **r; /* NULL: head is all */
	FILE *spool;
	bool spooled;  /* *r reads the spool */
	size_t skip;   /* bytes of the file before head (a BOM) */
	bool bounded;  /* compressed, or not a regular file */
	uint64_t max;  /* the input's most bytes */
};

int as_trace_parse(const char *name, const char *data, size_t len,
		   const char *format, struct as_trace **out,
		   struct as_diag *diag)
{
	struct as_diag local;
	struct as_builder *b;
	struct as_line_state st = {0};
	if (!diag)
		diag = &local;
	diag_start(diag, name);
	if (!as_format_known(format))
		return unknown_format(format, diag);
	const struct as_format_impl *fmt = by_name(format);
	size_t bom = as_bom_len(data, len); /* one rule for every format */
	data += bom, len -= bom;
	if (!fmt)
		fmt = detect(name, data, len);
	int err = start(name, fmt, NULL, &b, diag);
	if (err)
		return err;
	if (fmt->stream) {
		struct as_source src = {.head = data, .head_len = len};
		err = fmt->stream(b, &src, diag);
	} else if (fmt->whole) {
		err = fmt->whole(b, data, len, diag);
	} else {
		err = feed(b, fmt, &st, data, len, diag);
	}
	return finish(b, fmt, &st, err, out, diag);
}

#define WINDOW (256u << 10)
/* Bounds against hostile (compressed) input: one line, a whole-file format. */
#define MAX_LINE (64u << 20)
#define MAX_WHOLE_COMPRESSED (1u << 30)
/* One JSON value held at once from such input: its text, cJSON's copy and
 * a root member's kept text stay under 1 GiB together. */
#define MAX_VALUE_STREAMED (256u << 20)

int as_source_read(struct as_source *s, char *buf, size_t cap, size_t *got,
		   struct as_diag *diag)
{
	if (s->pos < s->head_len) {
		size_t n = s->head_len - s->pos < cap ? s->head_len - s->pos
						      : cap;
		memcpy(buf, s->head + s->pos, n);
		s->pos += n;
		*got = n;
		return AS_OK;
	}
	if (!s->r) {
		*got = 0;
		return AS_OK;
	}
	return as_reader_read(*s->r, buf, cap, got, diag);
}

int as_source_rewind(struct as_source *s, struct as_diag *diag)
{
	s->pos = 0;
	if (!s->r)
		return AS_OK;
	int err = s->spooled ? AS_OK : as_reader_spool_rest(*s->r, diag);
	if (err)
		return err;
	if (fflush(s->spool) != 0 || fseek(s->spool, 0, SEEK_SET) != 0)
		return as_diag_set(diag, 0, AS_EIO,
				   "cannot keep a copy of the input "
				   "(temporary file): %s",
				   strerror(errno));
	enum as_compression kind;
	as_reader_close(*s->r);
	*s->r = NULL;
	s->spooled = true;
	err = as_reader_open(s->spool, s->max, false, s->r, &kind, diag);
	char scratch[4096];
	for (size_t left = s->skip + s->head_len; !err && left > 0;) {
		size_t got;
		err = as_reader_read(*s->r, scratch,
				     left < sizeof(scratch) ? left
							    : sizeof(scratch),
				     &got, diag);
		if (!err && got == 0)
			err = as_diag_set(diag, 0, AS_EIO, "the copy of the "
							   "input is short");
		left -= err ? 0 : got;
	}
	return err;
}

size_t as_source_limit(const struct as_source *s)
{
	return s->bounded ? MAX_VALUE_STREAMED : SIZE_MAX;
}

/* What load_stream reads. */
struct input {
	struct as_reader **r;
	const char *path, *detect_name;
	bool bounded;     /* compressed, or not a regular file */
	uint64_t max;     /* the most bytes it may hold */
	const char *spool_dir; /* as_load_options' */
	const struct as_live_sink *sink; /* as_trace_load_live's, or NULL */
};

static int load_stream(const struct input *in,
		       const struct as_format_impl *fmt,
		       struct as_trace **out, struct as_diag *diag)
{
	struct as_reader **r = in->r;
	size_t cap = WINDOW, have = 0, bom = 0;
	char *buf = malloc(cap);
	struct as_builder *b = NULL;
	struct as_line_state st = {0};
	FILE *spool = NULL;
	int err = buf ? AS_OK : AS_ENOMEM;
	bool eof = false;
	while (err == AS_OK && !eof) {
		if (have == cap) { /* a line (or a whole file) past the window */
			bool whole = !b; /* line formats start at once */
			if (whole ? in->bounded && cap >= MAX_WHOLE_COMPRESSED
				  : cap >= MAX_LINE) {
				err = as_diag_set(diag, st.line + 1, AS_EPARSE,
						  whole ? "decompressed input "
							  "exceeds %u MiB"
							: "line longer than %u "
							  "MiB",
						  (whole ? MAX_WHOLE_COMPRESSED
							 : MAX_LINE) >> 20);
				break;
			}
			char *n = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2)
						      : NULL;
			if (!n) {
				err = AS_ENOMEM;
				break;
			}
			buf = n;
			cap *= 2;
		}
		size_t got;
		if ((err = as_reader_read(*r, buf + have, cap - have, &got,
					  diag)))
			break;
		eof = got == 0;
		have += got;
		if (!b && have == got) { /* the first bytes: a BOM goes */
			bom = as_bom_len(buf, have);
			memmove(buf, buf + bom, have -= bom);
		}
		if (!b) {
			if (!fmt)
				fmt = detect(in->detect_name, buf, have);
			/* Only a pulled format reads its input again. */
			if (fmt->stream && !eof) {
				if (as_spool_open(in->spool_dir, &spool) !=
				    AS_OK) {
					err = as_diag_set(
						diag, 0, AS_EIO,
						"cannot make a temporary "
						"file for the input: %s",
						strerror(errno));
					break;
				}
				if ((err = as_reader_spool(*r, spool, diag)))
					break;
			} else {
				as_reader_forget(*r);
			}
			if (fmt->whole && !eof)
				continue; /* read it whole */
			if ((err = start(in->path, fmt, in->sink, &b, diag)))
				break;
			if (fmt->stream) { /* it reads the rest itself */
				struct as_source src = {
					.head = buf, .head_len = have,
					.r = eof ? NULL : r, .spool = spool,
					.skip = bom, .bounded = in->bounded,
					.max = in->max};
				err = fmt->stream(b, &src, diag);
				break;
			}
			if (fmt->whole) {
				err = fmt->whole(b, buf, have, diag);
				break;
			}
		}
		size_t used = have;
		while (!eof && used > 0 && buf[used - 1] != '\n')
			used--;
		if (used == 0)
			continue;
		err = feed(b, fmt, &st, buf, used, diag);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	free(buf);
	if (spool)
		fclose(spool);
	if (!b) {
		if (err == AS_ENOMEM)
			as_diag_set(diag, 0, err, "out of memory");
		return err;
	}
	return finish(b, fmt, &st, err, out, diag);
}

/* Whether `path` ends in `ext`. */
static bool ends_with(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);
	return n > e && strcmp(path + n - e, ext) == 0;
}

int as_parse_max_input(const char *text, uint64_t *out)
{
	if (!text)
		return AS_EINVAL;
	if (strcmp(text, "none") == 0) {
		*out = UINT64_MAX;
		return AS_OK;
	}
	uint64_t v;
	if (as_parse_size(text, &v) != AS_SIZE_OK || v == 0)
		return AS_EINVAL;
	*out = v;
	return AS_OK;
}

static int load(const char *path, const struct as_load_options *o,
		const struct as_live_sink *sink, struct as_trace **out,
		struct as_diag *diag)
{
	static const struct as_load_options defaults = {0};
	struct as_diag local;
	if (!diag)
		diag = &local;
	if (!o)
		o = &defaults;
	diag_start(diag, path);
	if (!as_format_known(o->format))
		return unknown_format(o->format, diag);
	uint64_t max = o->max_input_bytes ? o->max_input_bytes
					  : AS_MAX_INPUT_DEFAULT;
	/* A file, a FIFO or a pipe, or standard input ("-"). */
	FILE *f;
	int oerr = as_open_input(path, &f, diag);
	if (oerr)
		return oerr;
	struct stat st;
	bool regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
	struct as_reader *r = NULL;
	enum as_compression kind = AS_PLAIN;
	int err = as_reader_open(f, max, true, &r, &kind, diag);
	/* Detection sees the name without its compression extension. */
	char *name = strdup(path);
	if (!err && !name)
		err = as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	for (int k = AS_GZIP; !err && k <= AS_ZSTD; k++) {
		const char *ext = as_compression_ext((enum as_compression)k);
		if (!ends_with(name, ext))
			continue;
		if (kind != (enum as_compression)k)
			err = as_diag_set(diag, 0, AS_EPARSE,
					  "not %s data (named %s, its first "
					  "bytes are not %s's magic)",
					  k == AS_GZIP ? "gzip" : "zstd", ext,
					  k == AS_GZIP ? "gzip" : "zstd");
		name[strlen(name) - strlen(ext)] = 0;
	}
	struct input in = {.r = &r, .path = path, .detect_name = name,
			   .bounded = kind != AS_PLAIN || !regular,
			   .max = max, .spool_dir = o->spool_dir,
			   .sink = sink};
	if (!err)
		err = load_stream(&in, by_name(o->format), out, diag);
	free(name);
	as_reader_close(r);
	fclose(f);
	return err;
}

int as_trace_load(const char *path, const char *format, struct as_trace **out,
		  struct as_diag *diag)
{
	struct as_load_options o = {.format = format};
	return load(path, &o, NULL, out, diag);
}

int as_trace_load_opts(const char *path, const struct as_load_options *o,
		       struct as_trace **out, struct as_diag *diag)
{
	return load(path, o, NULL, out, diag);
}

int as_trace_load_live(const char *path, const struct as_load_options *o,
		       const struct as_live_sink *sink, struct as_trace **out,
		       struct as_diag *diag)
{
	if (!sink || !sink->alloc || !sink->free)
		return AS_EINVAL;
	return load(path, o, sink, out, diag);
}

const char *as_trace_sniff(const char *path)
{
	/* Never blocks: the walk's check of the name comes before this open,
	 * and a FIFO put there in between must not hang it. */
	FILE *f;
	struct as_diag diag;
	if (as_open_regular(path, &f, &diag) != AS_OK)
		return NULL;
	struct as_reader *r = NULL;
	enum as_compression kind;
	char *head = malloc(SNIFF_BYTES);
	size_t len = 0, got = 1;
	if (head && as_reader_open(f, SNIFF_BYTES, false, &r, &kind,
				   &diag) == AS_OK)
		while (got && len < SNIFF_BYTES &&
		       as_reader_read(r, head + len, SNIFF_BYTES - len, &got,
				      &diag) == AS_OK)
			len += got;
	const struct as_format_impl *fmt = NULL;
	if (head && len) {
		size_t bom = as_bom_len(head, len);
		fmt = by_content(head + bom, len - bom);
	}
	free(head);
	as_reader_close(r);
	fclose(f);
	return fmt ? fmt->name : NULL;
}

int as_recorded_lines(struct as_builder *b, struct as_line_state *st,
		      const char *data, size_t len, as_line_fn fn,
		      void *state, struct as_diag *diag)
{
	const char *p = data, *end = data + len, *s;
	size_t n;
	while ((s = as_next_line(&p, end, &n))) {
		st->line++;
		if (p == end && end[-1] != '\n') /* the file's last bytes */
			return as_builder_count(b, "incomplete last line "
						   "ignored (the writer "
						   "stopped mid-line)",
						1);
		int err = fn(b, state, s, n, st->line, diag);
		if (err)
			return err;
	}
	return AS_OK;
}
