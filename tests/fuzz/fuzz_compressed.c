/*
 * Compressed input: the bytes behind a .gz or a .zst name (the first byte
 * chooses), read through the streaming decompressor and the format found
 * inside. Any bytes are read or refused, never a crash or a runaway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "allocscope/allocscope.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char path[] = "/tmp/fuzz_compressedXXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		close(fd);
		unlink(path);
		return 0;
	}
	fwrite(data + 1, 1, size - 1, f);
	fclose(f);
	char named[64];
	snprintf(named, sizeof(named), "%s%s", path,
		 data[0] & 1 ? ".zst" : ".gz");
	if (rename(path, named) != 0) {
		unlink(path);
		return 0;
	}
	struct as_trace *t = NULL;
	struct as_diag d;
	if (as_trace_load(named, NULL, &t, &d) == AS_OK)
		as_trace_destroy(t);
	unlink(named);
	return 0;
}
