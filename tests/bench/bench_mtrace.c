/*
 * Malloc-trace benchmark driver (not a test): load one trace file (any
 * format, compressed or not) and print
 *   "events,buffers,seconds,cpu_seconds,events_per_s,events_per_cpu_s,
 *    peak_rss_bytes_per_buffer,lower_bound,model_bytes_per_buffer"
 * The peak resident memory is the whole process's (VmHWM) when the load
 * returns: the trace model plus what the reader held on the way (its 1 MiB
 * window, address and string tables) and the program itself. The model's
 * bytes are the resident memory the load left (VmRSS after it less VmRSS
 * before): the trace and what the allocator keeps around it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "allocscope/allocscope.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process (user + system): the machine is shared. */
static double cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* A field of /proc/self/status in bytes ("VmHWM", "VmRSS"). */
static double status_bytes(const char *key)
{
	char line[256], fmt[32];
	double kb = 0;
	snprintf(fmt, sizeof(fmt), "%s: %%lf kB", key);
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024.0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_mtrace FILE\n");
		return 2;
	}
	struct as_trace *t;
	struct as_diag d;
	double rss0 = status_bytes("VmRSS");
	double t0 = now(), c0 = cpu();
	if (as_trace_load(argv[1], NULL, &t, &d) != AS_OK) {
		char buf[1024];
		fprintf(stderr, "%s\n", as_diag_text(&d, buf, sizeof(buf)));
		return 2;
	}
	double secs = now() - t0, cs = cpu() - c0, rss = status_bytes("VmHWM");
	double model = status_bytes("VmRSS") - rss0;
	double nb = t->nbuffers ? t->nbuffers : 1;
	uint64_t lb = as_trace_lower_bound(t);
	printf("%u,%u,%.3f,%.3f,%.0f,%.0f,%.1f,%llu,%.1f\n", t->nevents,
	       t->nbuffers, secs, cs, t->nevents / (secs > 0 ? secs : 1e-9),
	       t->nevents / (cs > 0 ? cs : 1e-9), rss / nb,
	       (unsigned long long)lb, model / nb);
	as_trace_destroy(t);
	return 0;
}
