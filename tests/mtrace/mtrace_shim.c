/*
 * Record a glibc mtrace of any program, unchanged:
 *
 *   MALLOC_TRACE=/tmp/prog.%p.mtrace \
 *   LD_PRELOAD="libc_malloc_debug.so.0 /path/to/libmtrace_shim.so" prog args
 *
 * glibc writes a trace only once the program calls mtrace(); this library
 * calls it from a constructor. Since glibc 2.34 the tracing hooks live in
 * libc_malloc_debug.so.0, which must be preloaded too (first). "%p" in
 * MALLOC_TRACE becomes the process id, so every process of a pipeline or a
 * fork gets its own file; children see the pattern again, not our name.
 * The trace has no "= End" line: the program exits without muntrace(), as
 * allocscope expects of a killed program (live blocks are never freed).
 */
#define _GNU_SOURCE
#include <mcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void mtrace_shim_start(void)
{
	const char *pattern = getenv("MALLOC_TRACE");
	if (!pattern || !*pattern)
		return;
	const char *p = strstr(pattern, "%p");
	if (!p) {
		mtrace();
		return;
	}
	char *saved = strdup(pattern);
	char name[4096];
	int n = snprintf(name, sizeof(name), "%.*s%ld%s", (int)(p - pattern),
			 pattern, (long)getpid(), p + 2);
	if (!saved || n < 0 || (size_t)n >= sizeof(name)) {
		free(saved);
		return;
	}
	setenv("MALLOC_TRACE", name, 1);
	mtrace();
	setenv("MALLOC_TRACE", saved, 1);
	free(saved);
}
