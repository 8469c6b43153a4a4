#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

const char *as_strerror(int err)
{
	switch (err) {
	case AS_OK:
		return "success";
#define XX(code, text) \
	case AS_E##code: \
		return text;
		AS_ERRNO_MAP(XX)
#undef XX
	}
	return "unknown error";
}

const char *as_err_name(int err)
{
	switch (err) {
	case AS_OK:
		return "OK";
#define XX(code, _) \
	case AS_E##code: \
		return "E" #code;
		AS_ERRNO_MAP(XX)
#undef XX
	}
	return "EUNKNOWN";
}

const char *as_diag_text(const struct as_diag *d, char *buf, size_t len)
{
	const char *file = d->file[0] ? d->file : "allocscope";
	if (d->line)
		snprintf(buf, len, "%s:%llu: %s", file,
			 (unsigned long long)d->line, d->msg);
	else
		snprintf(buf, len, "%s: %s", file, d->msg);
	return buf;
}

/*
 * Messages quote names from hostile input: control bytes (an escape
 * sequence could forge or hide terminal output) are written as \xNN, and
 * the message is cut to fit, so no name reaches a terminal raw.
 */
static void defang(char *msg, size_t cap)
{
	char out[sizeof(((struct as_diag *)0)->msg)];
	size_t o = 0;
	for (const unsigned char *c = (const unsigned char *)msg;
	     *c && o + 5 < sizeof(out) && o + 5 < cap; c++) {
		if (*c < 0x20 || *c == 0x7f)
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "\\x%02x", *c);
		else
			out[o++] = (char)*c;
	}
	out[o] = 0;
	memcpy(msg, out, o + 1);
}

int as_diag_set(struct as_diag *d, uint64_t line, int err, const char *fmt,
		...)
{
	if (d) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
		defang(d->msg, sizeof(d->msg));
		d->line = line;
		d->err = err;
	}
	return err;
}
