/*
 * Compressed input (gzip, zstd): the reader that unpacks a trace file as it
 * streams, fed from memory. Any bytes are unpacked or refused, never a
 * crash, and never more than the limit it is given.
 */
#include <stdio.h>

#include "formats/decompress.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	FILE *f = fmemopen((void *)data, size, "rb");
	if (!f)
		return 0;
	struct as_reader *r = NULL;
	enum as_compression kind;
	struct as_diag d;
	if (as_reader_open(f, (uint64_t)64 << 20, false, &r, &kind, &d) ==
	    AS_OK) {
		static char buf[1 << 16];
		size_t got = 0, total = 0;
		while (as_reader_read(r, buf, sizeof(buf), &got, &d) == AS_OK &&
		       got > 0 && total < ((size_t)64 << 20))
			total += got;
		as_reader_close(r);
	}
	fclose(f);
	return 0;
}
