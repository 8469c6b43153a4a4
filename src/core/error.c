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

int as_diag_set(struct as_diag *d, uint64_t line, int err, const char *fmt,
		...)
{
	if (d) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
		va_end(ap);
		d->line = line;
	}
	return err;
}
