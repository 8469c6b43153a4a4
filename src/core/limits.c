/*
 * What a finished trace must keep within, checked once for every reader in
 * as_builder_finish, and the input line of each buffer those checks (and
 * the alias checks) report.
 *
 * Lines: one signed difference to the previous buffer's line per buffer,
 * zigzag LEB128 coded, so a buffer costs one byte when its line is within
 * 63 of the previous one (every streamed format). Looking a line up scans
 * from the start: it happens only on the way to an error.
 *
 * Live bytes: every strategy places buffers in 64-bit address spaces, so a
 * trace in which more than 2^64-1 bytes are live at once in a space cannot
 * be planned by any of them; with several spaces the rule is on the sum of
 * each space's peak, the lower bound, which therefore never saturates
 * (docs/trace-format.md, "Sizes past 2^64").
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace_private.h"

int as_builder_note_line(struct as_builder *b, uint64_t line)
{
	if (b->cap_lines - b->nlines < 10) {
		size_t cap = b->cap_lines ? 2 * b->cap_lines : 4096;
		uint8_t *p = realloc(b->lines, cap);
		if (!p)
			return AS_ENOMEM;
		b->lines = p;
		b->cap_lines = cap;
	}
	uint64_t d = line - b->last_line; /* modulo 2^64, signed below */
	uint64_t z = (d << 1) ^ (uint64_t)-(int64_t)(d >> 63);
	do {
		uint8_t byte = z & 0x7f;
		z >>= 7;
		b->lines[b->nlines++] = byte | (z ? 0x80 : 0);
	} while (z);
	b->last_line = line;
	return AS_OK;
}

uint64_t as_builder_line_of(const struct as_builder *b, uint32_t idx)
{
	uint64_t line = 0;
	size_t at = 0;
	for (uint32_t i = 0; i <= idx; i++) {
		uint64_t z = 0;
		unsigned shift = 0;
		uint8_t byte;
		do {
			if (at == b->nlines)
				return 0; /* a buffer added without a line */
			byte = b->lines[at++];
			if (shift < 64)
				z |= (uint64_t)(byte & 0x7f) << shift;
			shift += 7;
		} while (byte & 0x80);
		line += (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
	}
	return line;
}

int as_builder_check_live(const struct as_builder *b, struct as_diag *diag)
{
	const struct as_trace *t = b->t;
	uint16_t ns = t->nspaces ? t->nspaces : 1;
	/* Per space: bytes live in the running case, the peak, and the case
	 * `live` was last touched in (cases restart every space at 0). */
	uint64_t *live = calloc(ns, sizeof(*live));
	uint64_t *peak = calloc(ns, sizeof(*peak));
	uint32_t *seen = calloc(ns, sizeof(*seen));
	int err = AS_ENOMEM;
	if (!live || !peak || !seen)
		goto out;
	uint64_t total = 0; /* the sum of the peaks: the lower bound */
	uint32_t kase = 0;
	err = AS_OK;
	for (uint32_t i = 0; i < t->nevents; i++) {
		const struct as_event *e = &t->events[i];
		if (e->kind == AS_EV_CASE)
			kase++;
		if (e->kind != AS_EV_ALLOC && e->kind != AS_EV_FREE)
			continue;
		const struct as_buffer *buf = &t->buffers[e->arg];
		if (buf->alias_of != AS_NONE)
			continue;
		uint16_t s = buf->space < ns ? buf->space : 0;
		if (seen[s] != kase) {
			seen[s] = kase;
			live[s] = 0;
		}
		if (e->kind == AS_EV_FREE) {
			live[s] -= buf->size;
			continue;
		}
		/* live <= peak <= total <= 2^64-1 holds before this one. */
		uint64_t now = live[s] + buf->size;
		if (buf->size > UINT64_MAX - live[s] ||
		    (now > peak[s] && now - peak[s] > UINT64_MAX - total)) {
			err = as_diag_set(diag, as_builder_line_of(b, e->arg),
					  AS_EPARSE,
					  "more than 2^64-1 bytes live at "
					  "once%s",
					  ns > 1 ? " (each space's peak, "
						   "summed over spaces)"
						 : "");
			goto out;
		}
		live[s] = now;
		if (now > peak[s]) {
			total += now - peak[s];
			peak[s] = now;
		}
	}
out:
	free(live);
	free(peak);
	free(seen);
	return err;
}
