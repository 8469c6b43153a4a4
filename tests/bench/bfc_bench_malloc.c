/*
 * The glibc reference for bench/bfc_bench.sh: replay the alloc/free lines of
 * an ops trace written by that script (names "b<N>", N unique per
 * allocation) with malloc and free, and time only the replay loop.
 *
 * usage: bfc_bench_malloc TRACE.ops   prints "events N seconds S"
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct op {
	uint32_t id;
	uint32_t is_free;
	uint64_t size;
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TRACE.ops\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	size_t n = 0, cap = 1 << 20;
	uint32_t maxid = 0;
	struct op *ops = malloc(cap * sizeof(*ops));
	char line[256];
	while (ops && fgets(line, sizeof(line), f)) {
		struct op o = {0};
		unsigned long long size = 0;
		unsigned id;
		if (sscanf(line, "alloc b%u %llu", &id, &size) == 2)
			o = (struct op){id, 0, size};
		else if (sscanf(line, "free b%u", &id) == 1)
			o = (struct op){id, 1, 0};
		else
			continue;
		if (n == cap) {
			cap *= 2;
			ops = realloc(ops, cap * sizeof(*ops));
			if (!ops)
				break;
		}
		if (id > maxid)
			maxid = id;
		ops[n++] = o;
	}
	fclose(f);
	void **ptr = calloc((size_t)maxid + 1, sizeof(*ptr));
	if (!ops || !ptr) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	uintptr_t sink = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n; i++) {
		if (ops[i].is_free) {
			free(ptr[ops[i].id]);
			ptr[ops[i].id] = NULL;
		} else {
			ptr[ops[i].id] = malloc(ops[i].size);
			sink ^= (uintptr_t)ptr[ops[i].id];
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("events %zu seconds %.6f sink %u\n", n, s, (unsigned)(sink & 1));
	return 0;
}
