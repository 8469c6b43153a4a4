/*
 * A replayer for a fuzz target without libFuzzer: every file given (or in
 * a directory given) goes through LLVMFuzzerTestOneInput once; with
 * --format-byte, once per format with the format byte in front (the
 * strategies target). TAP output for the test suite; a crash fails it.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocscope/allocscope.h"
#include "fuzz.h"

static int run_file(const char *path, int variants)
{
	static uint8_t buf[1 << 22];
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf + 1, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (variants == 0) {
		LLVMFuzzerTestOneInput(buf + 1, n);
		return 1;
	}
	for (int k = 0; k < variants; k++) {
		buf[0] = (uint8_t)k;
		LLVMFuzzerTestOneInput(buf, n + 1);
	}
	return 1;
}

int main(int argc, char **argv)
{
	int files = 0, variants = 0, first = 1;
	if (argc > 1 && strcmp(argv[1], "--format-byte") == 0) {
		while (as_format_names((size_t)variants))
			variants++; /* once per format */
		first = 2;
	}
	for (int i = first; i < argc; i++) {
		DIR *dp = opendir(argv[i]);
		if (!dp) {
			if (run_file(argv[i], variants) < 0) {
				printf("1..1\nnot ok 1 - cannot read %s\n",
				       argv[i]);
				return 1;
			}
			files++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(dp))) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 e->d_name);
			if (run_file(path, variants) > 0)
				files++;
		}
		closedir(dp);
	}
	printf("1..1\n%s 1 - every corpus file is read or refused without "
	       "a crash (%d files)\n",
	       files ? "ok" : "not ok", files);
	return files ? 0 : 1;
}
