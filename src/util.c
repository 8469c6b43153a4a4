#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocscope.h"

struct as_atomic {
	FILE *f;
	char *path;
	char *tmp;
};

int as_atomic_open(const char *path, struct as_atomic **out, FILE **f)
{
	struct as_atomic *a = calloc(1, sizeof(*a));
	if (!a)
		return AS_ENOMEM;
	if (strcmp(path, "-") == 0) {
		a->f = stdout;
		*out = a;
		*f = a->f;
		return AS_OK;
	}
	size_t n = strlen(path);
	a->path = strdup(path);
	a->tmp = malloc(n + 16);
	if (!a->path || !a->tmp)
		goto fail;
	snprintf(a->tmp, n + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(a->tmp);
	if (fd < 0) {
		free(a->tmp);
		a->tmp = NULL;
		goto fail;
	}
	a->f = fdopen(fd, "w");
	if (!a->f) {
		close(fd);
		goto fail;
	}
	*out = a;
	*f = a->f;
	return AS_OK;
fail:
	as_atomic_abort(a);
	return AS_EIO;
}

int as_atomic_commit(struct as_atomic *a)
{
	int err = AS_OK;
	if (!a->path) { /* stdout */
		if (fflush(a->f) != 0)
			err = AS_EIO;
		free(a);
		return err;
	}
	if (ferror(a->f) | fclose(a->f))
		err = AS_EIO;
	a->f = NULL;
	if (err == AS_OK && rename(a->tmp, a->path) != 0)
		err = AS_EIO;
	if (err != AS_OK)
		unlink(a->tmp);
	free(a->tmp);
	free(a->path);
	free(a);
	return err;
}

void as_atomic_abort(struct as_atomic *a)
{
	if (!a)
		return;
	if (a->path) {
		if (a->f)
			fclose(a->f);
		if (a->tmp)
			unlink(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	free(a);
}

void as_json_string(FILE *f, const char *s)
{
	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				putc(*p, f);
		}
	}
	putc('"', f);
}

const char *as_human_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB",
					   "PiB", "EiB"};
	int u = 0;
	double v = (double)n;
	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	else if (v >= 100.0)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else if (v >= 10.0)
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}
