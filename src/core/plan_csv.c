/*
 * Plan files, read and written in one place: `id,lower,upper,size,offset`,
 * one row per buffer in trace order, offset -1 for a failed allocation;
 * lifetimes are [lower, upper). Names are quoted as RFC 4180 says when
 * they hold a comma, a quote, a line break or edge blanks, and read back
 * the same. The CSV field splitter here is also the trace CSV reader's
 * (src/formats/csv.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

enum col { C_ID, C_LOWER, C_UPPER, C_SIZE, C_ALIGN, C_OFFSET, C_N };

static const char *const col_names[C_N] = {"id",   "lower",     "upper",
					   "size", "alignment", "offset"};

/* Plans may carry more columns (segment_size, ...): they are skipped. */
#define MAX_COLS 16

int as_csv_split(const char *s, size_t len, const char **f, size_t *flen,
		 int max, char *scratch, size_t cap)
{
	int n = 0;
	size_t i = 0, used = 0;
	for (;;) {
		if (n == max)
			return -1;
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		size_t j;
		if (i < len && s[i] == '"') {
			/* Quoted: everything to the closing quote, "" is ". */
			char *out = scratch + used;
			size_t k = 0;
			for (j = i + 1; j < len; j++) {
				if (s[j] == '"') {
					if (j + 1 < len && s[j + 1] == '"')
						j++;
					else
						break;
				}
				if (!scratch || used + k >= cap)
					return -2;
				out[k++] = s[j];
			}
			if (j >= len)
				return -2;
			j++;
			while (j < len && (s[j] == ' ' || s[j] == '\t'))
				j++;
			if (j < len && s[j] != ',')
				return -2;
			f[n] = out;
			flen[n++] = k;
			used += k;
		} else {
			j = i;
			while (j < len && s[j] != ',')
				j++;
			size_t e = j;
			while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t'))
				e--;
			f[n] = s + i;
			flen[n++] = e - i;
		}
		if (j >= len)
			return n;
		i = j + 1;
	}
}

const char *as_csv_record(const char **p, const char *end, size_t *len,
			  uint64_t *lines)
{
	if (*p >= end)
		return NULL;
	const char *s = *p, *q = s;
	bool quoted = false;
	*lines = 1;
	for (; q < end; q++) {
		if (*q == '"')
			quoted = !quoted;
		else if (*q == '\n' && !quoted)
			break;
		else if (*q == '\n')
			++*lines;
	}
	*p = q < end ? q + 1 : end;
	if (q > s && q[-1] == '\r')
		q--;
	*len = (size_t)(q - s);
	return s;
}

/* Whether a name must be quoted to read back as itself. */
static bool needs_quotes(const char *name)
{
	size_t n = strlen(name);
	return n == 0 || strpbrk(name, ",\"\r\n") || name[0] == ' ' ||
	       name[0] == '\t' || name[n - 1] == ' ' || name[n - 1] == '\t';
}

static void put_name(FILE *f, const char *name)
{
	if (!needs_quotes(name)) {
		fputs(name, f);
		return;
	}
	fputc('"', f);
	for (const char *c = name; *c; c++) {
		if (*c == '"')
			fputc('"', f);
		fputc(*c, f);
	}
	fputc('"', f);
}

static bool by_name(uint32_t a, uint32_t b, const void *ctx)
{
	const struct as_trace *t = ctx;
	return strcmp(t->buffers[a].name, t->buffers[b].name) < 0;
}

/* First position in `order` whose buffer is named `name`, or -1. */
static int64_t find_name(const struct as_trace *t, const uint32_t *order,
			 const char *name)
{
	int64_t lo = 0, hi = t->nbuffers;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (strcmp(t->buffers[order[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->nbuffers && strcmp(t->buffers[order[lo]].name, name) == 0)
		return lo;
	return -1;
}

static int read_plan_rows(const struct as_trace *t, const char *data,
			  size_t len, struct as_plan *p, uint32_t *order,
			  uint32_t *taken, struct as_diag *diag)
{
	const char *cur = data + as_bom_len(data, len), *end = data + len, *s;
	size_t n;
	uint64_t line = 0;
	int pos[C_N], ncols = -1;
	const char *f[MAX_COLS];
	size_t fl[MAX_COLS];
	char scratch[AS_NAME_MAX + 64];
	uint64_t nlines = 1;
	for (int c = 0; c < C_N; c++)
		pos[c] = -1;
	while ((s = as_csv_record(&cur, end, &n, &nlines))) {
		line += nlines;
		if (n == 0)
			continue;
		int got = as_csv_split(s, n, f, fl, MAX_COLS, scratch,
				       sizeof(scratch));
		if (got == -2)
			return as_diag_set(diag, line - nlines + 1, AS_EPARSE,
					   "a quoted field is not closed, is "
					   "followed by more than a comma, or "
					   "is too long");
		if (ncols < 0) {
			ncols = got;
			for (int i = 0; i < got; i++)
				for (int c = 0; c < C_N; c++)
					if (fl[i] == strlen(col_names[c]) &&
					    !memcmp(f[i], col_names[c], fl[i]))
						pos[c] = i;
			if (got < 0 || pos[C_ID] < 0 || pos[C_OFFSET] < 0)
				return as_diag_set(diag, line, AS_EPARSE,
						   "a plan needs the columns "
						   "id and offset");
			continue;
		}
		if (got != ncols)
			return as_diag_set(diag, line, AS_EPARSE,
					   "expected %d fields, found %d",
					   ncols, got);
		char name[AS_NAME_MAX + 1];
		size_t il = fl[pos[C_ID]];
		if (il >= sizeof(name))
			return as_diag_set(diag, line, AS_EPARSE,
					   "id is too long (at most %d bytes)",
					   AS_NAME_MAX);
		if (memchr(f[pos[C_ID]], 0, il))
			return as_diag_set(diag, line, AS_EPARSE,
					   "NUL byte in an id");
		memcpy(name, f[pos[C_ID]], il);
		name[il] = 0;
		int64_t first = find_name(t, order, name);
		if (first < 0)
			return as_diag_set(diag, line, AS_EPARSE,
					   "id '%s' is not in the trace",
					   name);
		uint64_t k = first + taken[first];
		if (k >= t->nbuffers ||
		    strcmp(t->buffers[order[k]].name, name) != 0)
			return as_diag_set(diag, line, AS_EPARSE,
					   "more rows for id '%s' than the "
					   "trace has allocations",
					   name);
		taken[first]++;
		uint32_t bi = order[k];
		const char *o = f[pos[C_OFFSET]];
		size_t ol = fl[pos[C_OFFSET]];
		uint64_t off;
		if (ol == 2 && memcmp(o, "-1", 2) == 0)
			off = AS_NO_OFFSET;
		else if (!as_parse_u64(o, ol, &off) || off == AS_NO_OFFSET)
			return as_diag_set(diag, line, AS_EPARSE,
					   "offset '%.*s' is not a "
					   "non-negative integer (or -1)",
					   (int)ol, o);
		else if (off > UINT64_MAX - t->buffers[bi].size)
			return as_diag_set(diag, line, AS_EPARSE,
					   "offset %llu of '%s' plus its size "
					   "%llu passes 2^64",
					   (unsigned long long)off, name,
					   (unsigned long long)
						   t->buffers[bi].size);
		if (pos[C_SIZE] >= 0) {
			uint64_t sz;
			if (!as_parse_u64(f[pos[C_SIZE]], fl[pos[C_SIZE]], &sz) ||
			    sz != t->buffers[bi].size)
				return as_diag_set(
					diag, line, AS_EPARSE,
					"size of '%s' differs from the "
					"trace's %llu",
					name,
					(unsigned long long)t->buffers[bi].size);
		}
		/* A plan for another schedule of the same names is not this
		 * trace's plan: its lifetimes must be the trace's. */
		const struct as_buffer *tb = &t->buffers[bi];
		uint64_t lo = tb->start, up = tb->end;
		if ((pos[C_LOWER] >= 0 &&
		     !as_parse_u64(f[pos[C_LOWER]], fl[pos[C_LOWER]], &lo)) ||
		    (pos[C_UPPER] >= 0 &&
		     !as_parse_u64(f[pos[C_UPPER]], fl[pos[C_UPPER]], &up)) ||
		    lo != tb->start || up != tb->end)
			return as_diag_set(diag, line, AS_EPARSE,
					   "lifetime of '%s' differs from the "
					   "trace's [%llu, %llu)",
					   name, (unsigned long long)tb->start,
					   (unsigned long long)tb->end);
		p->offset[bi] = off;
	}
	if (ncols < 0)
		return as_diag_set(diag, 1, AS_EPARSE, "empty plan file");
	for (uint32_t i = 0; i < t->nbuffers; i++)
		if (i == 0 || strcmp(t->buffers[order[i]].name,
				     t->buffers[order[i - 1]].name) != 0) {
			uint32_t j = i;
			while (j < t->nbuffers &&
			       strcmp(t->buffers[order[j]].name,
				      t->buffers[order[i]].name) == 0)
				j++;
			if (taken[i] != j - i)
				return as_diag_set(diag, 0, AS_EPARSE,
						   "the plan has no row for "
						   "'%s'",
						   t->buffers[order[i]].name);
		}
	return AS_OK;
}

int as_plan_read_csv(const struct as_trace *t, const char *path,
		     struct as_plan **out, struct as_diag *diag)
{
	struct as_diag local;
	if (!diag)
		diag = &local;
	memset(diag, 0, sizeof(*diag));
	snprintf(diag->file, sizeof(diag->file), "%s", path);
	/* Never blocks (a FIFO), refuses a directory or a device. */
	FILE *fp;
	int oerr = as_open_input(path, &fp, diag);
	if (oerr)
		return oerr;
	size_t cap = 1 << 16, len = 0;
	char *data = malloc(cap);
	size_t got;
	while (data && (got = fread(data + len, 1, cap - len, fp)) > 0) {
		len += got;
		if (len == cap) {
			char *n = realloc(data, cap * 2);
			if (!n) {
				free(data);
				data = NULL;
			}
			data = n;
			cap *= 2;
		}
	}
	fclose(fp);
	struct as_plan *p = as_plan_create(t);
	uint32_t *order = malloc(((size_t)t->nbuffers + 1) * sizeof(*order));
	uint32_t *taken = calloc((size_t)t->nbuffers + 1, sizeof(*taken));
	int err = AS_ENOMEM;
	if (data && p && order && taken && as_trace_name_all(t) == AS_OK) {
		for (uint32_t i = 0; i < t->nbuffers; i++)
			order[i] = i;
		err = as_sort_u32(order, t->nbuffers, by_name, t);
		if (err == AS_OK)
			err = read_plan_rows(t, data, len, p, order, taken,
					     diag);
	} else {
		as_diag_set(diag, 0, AS_ENOMEM, "out of memory");
	}
	free(data);
	free(order);
	free(taken);
	if (err) {
		as_plan_destroy(p);
		return err;
	}
	*out = p;
	return AS_OK;
}

int as_plan_write_csv(const struct as_plan *p, const struct as_trace *t,
		      FILE *f)
{
	bool segs = p->segment_size != NULL;
	if (as_trace_name_all(t) != AS_OK)
		return AS_ENOMEM;
	fputs(segs ? "id,lower,upper,size,offset,segment_size,segment_offset\n"
		   : "id,lower,upper,size,offset\n",
	      f);
	for (uint32_t i = 0; i < t->nbuffers; i++) {
		const struct as_buffer *b = &t->buffers[i];
		put_name(f, b->name);
		if (p->offset[i] == AS_NO_OFFSET)
			fprintf(f, ",%llu,%llu,%llu,-1",
				(unsigned long long)b->start,
				(unsigned long long)b->end,
				(unsigned long long)b->size);
		else
			fprintf(f, ",%llu,%llu,%llu,%llu",
				(unsigned long long)b->start,
				(unsigned long long)b->end,
				(unsigned long long)b->size,
				(unsigned long long)p->offset[i]);
		if (segs && p->segment_size[i])
			fprintf(f, ",%llu,%llu\n",
				(unsigned long long)p->segment_size[i],
				(unsigned long long)p->segment_offset[i]);
		else
			fputs(segs ? ",,\n" : "\n", f);
	}
	return ferror(f) ? AS_EIO : AS_OK;
}
