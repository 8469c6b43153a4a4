/*
 * Preloaded with glibc's libc_malloc_debug.so.0, starts glibc's malloc
 * trace (mtrace(3)) before main, so an unmodified program writes every
 * malloc, realloc and free to $MALLOC_TRACE (tests/bench/place_bench.sh).
 *
 *   cc -shared -fPIC -o shim.so mtrace_shim.c
 *   MALLOC_TRACE=out.mtrace \
 *   LD_PRELOAD="libc_malloc_debug.so.0 ./shim.so" program ...
 */
#include <mcheck.h>

__attribute__((constructor)) static void start_trace(void)
{
	mtrace();
}
