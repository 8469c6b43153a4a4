/*
 * MiniMalloc's CSV: header `id,lower,upper,size` in any order, optional
 * `alignment` and `offset` (a given placement); lifetimes are [lower, upper).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"
#include "formats/formats.h"

enum col { C_ID, C_LOWER, C_UPPER, C_SIZE, C_ALIGN, C_OFFSET, C_N };

static const char *const col_names[C_N] = {"id",   "lower",     "upper",
					   "size", "alignment", "offset"};

#define MAX_COLS C_N
#define QUOTE_ERROR                                                          \
	"a quoted field is not closed, is followed by more than a comma, or " \
	"is too long (quoted fields hold no line breaks here)"

static int header(struct as_line_state *st, const char *s, size_t n,
		  struct as_diag *diag)
{
	const char *f[MAX_COLS];
	size_t fl[MAX_COLS];
	char scratch[256];
	int ncols = as_csv_split(s, n, f, fl, MAX_COLS, scratch,
				 sizeof(scratch));
	if (ncols == -2)
		return as_diag_set(diag, st->line, AS_EPARSE, QUOTE_ERROR);
	if (ncols < 0)
		return as_diag_set(diag, st->line, AS_EPARSE,
				   "too many columns in the header");
	for (int c = 0; c < C_N; c++)
		st->pos[c] = -1;
	for (int i = 0; i < ncols; i++) {
		int c;
		for (c = 0; c < C_N; c++)
			if (fl[i] == strlen(col_names[c]) &&
			    memcmp(f[i], col_names[c], fl[i]) == 0)
				break;
		if (c == C_N)
			return as_diag_set(diag, st->line, AS_EPARSE,
					   "unknown column '%.*s' (this format "
					   "has id, lower, upper, size and "
					   "optional alignment, offset)",
					   (int)fl[i], f[i]);
		if (st->pos[c] >= 0)
			return as_diag_set(diag, st->line, AS_EPARSE,
					   "column '%s' appears twice",
					   col_names[c]);
		st->pos[c] = i;
	}
	for (int c = C_ID; c <= C_SIZE; c++)
		if (st->pos[c] < 0)
			return as_diag_set(diag, st->line, AS_EPARSE,
					   "missing column '%s' in the header",
					   col_names[c]);
	st->ncols = ncols;
	return AS_OK;
}

static int row(struct as_builder *b, const struct as_line_state *st,
	       const char *s, size_t n, struct as_diag *diag)
{
	const char *f[MAX_COLS];
	size_t fl[MAX_COLS];
	const int *pos = st->pos;
	uint64_t line = st->line;
	char scratch[AS_NAME_MAX + 64];
	int got = as_csv_split(s, n, f, fl, MAX_COLS, scratch,
			       sizeof(scratch));
	if (got == -2)
		return as_diag_set(diag, line, AS_EPARSE, QUOTE_ERROR);
	if (got != st->ncols)
		return as_diag_set(diag, line, AS_EPARSE,
				   "expected %d fields, found %s%d", st->ncols,
				   got < 0 ? "more than " : "",
				   got < 0 ? MAX_COLS : got);
	uint64_t v[C_N] = {0, 0, 0, 0, 1, AS_NO_OFFSET};
	for (int c = C_LOWER; c < C_N; c++) {
		if (pos[c] < 0)
			continue;
		const char *x = f[pos[c]];
		size_t xl = fl[pos[c]];
		if (as_parse_u64(x, xl, &v[c]) &&
		    !(c == C_OFFSET && v[c] == AS_NO_OFFSET))
			continue;
		if (c == C_OFFSET && xl == 2 && memcmp(x, "-1", 2) == 0)
			continue; /* a failed allocation: no offset */
		bool digits = xl > 0;
		for (size_t i = 0; i < xl; i++)
			digits &= x[i] >= '0' && x[i] <= '9';
		return as_diag_set(diag, line, AS_EPARSE,
				   digits ? "%s %.*s overflows 64 bits"
					  : "%s '%.*s' is not a non-negative "
					    "integer",
				   col_names[c], (int)xl, x);
	}
	char name[AS_NAME_MAX + 1];
	size_t il = fl[pos[C_ID]];
	if (il == 0 || il >= sizeof(name))
		return as_diag_set(diag, line, AS_EPARSE,
				   il ? "id is too long (at most %d bytes)"
				      : "empty id",
				   AS_NAME_MAX);
	if (memchr(f[pos[C_ID]], 0, il))
		return as_diag_set(diag, line, AS_EPARSE, "NUL byte in an id");
	memcpy(name, f[pos[C_ID]], il);
	name[il] = 0;
	int64_t idx = as_builder_add_timed(b, name, v[C_SIZE], v[C_ALIGN],
					   v[C_LOWER], v[C_UPPER], line, diag);
	if (idx < 0)
		return (int)idx;
	if (v[C_OFFSET] != AS_NO_OFFSET) {
		if (v[C_OFFSET] > UINT64_MAX - v[C_SIZE])
			return as_diag_set(diag, line, AS_EPARSE,
					   "offset + size overflows 64 bits");
		as_builder_buffer(b, (uint32_t)idx)->recorded = v[C_OFFSET];
	}
	return AS_OK;
}

static int csv_lines(struct as_builder *b, struct as_line_state *st,
		 const char *data, size_t len, struct as_diag *diag)
{
	const char *p = data, *end = data + len, *s;
	size_t n;
	while ((s = as_next_line(&p, end, &n))) {
		st->line++;
		if (n == 0)
			continue;
		int err = st->ncols ? row(b, st, s, n, diag)
				    : header(st, s, n, diag);
		if (err)
			return err;
	}
	return AS_OK;
}

static int csv_end(struct as_builder *b, struct as_line_state *st, int err,
		   struct as_diag *diag)
{
	if (err || st->ncols)
		return err;
	return as_diag_set(diag, st->line ? st->line : 1, AS_EPARSE,
			   "empty file: expected the header "
			   "id,lower,upper,size");
}

static bool csv_sniff(const char *head, size_t len)
{
	return len >= 3 && memcmp(head, "id,", 3) == 0;
}

const struct as_format_impl as_format_csv = {
	.name = "csv",
	.extensions = ".csv",
	.sniff = csv_sniff,
	.lines = csv_lines,
	.end = csv_end,
};
