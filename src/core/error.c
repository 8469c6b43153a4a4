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

/*
 * The file name and the message are escaped (as_escape, for a terminal):
 * a path from a directory walk or a name in a message may hold escape
 * sequences. A diagnostic without a message still says something: the
 * error it records, or that none was given.
 */
const char *as_diag_text(const struct as_diag *d, char *buf, size_t len)
{
	char file[4 * sizeof(d->file)], msg[4 * sizeof(d->msg)];
	as_escape(file, sizeof(file), d->file[0] ? d->file : "allocscope",
		  AS_ESCAPE_TEXT);
	if (d->msg[0])
		as_escape(msg, sizeof(msg), d->msg, AS_ESCAPE_TEXT);
	else if (d->err)
		snprintf(msg, sizeof(msg), "%s (no more is known)",
			 as_strerror(d->err));
	else
		snprintf(msg, sizeof(msg), "failed, and no reason was given");
	if (d->line)
		snprintf(buf, len, "%s:%llu: %s", file,
			 (unsigned long long)d->line, msg);
	else
		snprintf(buf, len, "%s: %s", file, msg);
	return buf;
}

/*
 * Messages quote names from hostile input: they are escaped (as_escape,
 * for a terminal: an escape sequence could forge or hide terminal output)
 * and cut to fit, so no name reaches a terminal raw.
 */
static void defang(char *msg, size_t cap)
{
	char out[sizeof(((struct as_diag *)0)->msg)];
	as_escape(out, sizeof(out) < cap ? sizeof(out) : cap, msg,
		  AS_ESCAPE_TEXT);
	memcpy(msg, out, strlen(out) + 1);
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
