/*
 * The fuzz targets (tests/fuzz/fuzz_*.c): each defines
 * LLVMFuzzerTestOneInput for one reader, or for the strategies. Built with
 * libFuzzer under -Dfuzz=true (clang); otherwise each is linked with
 * replay.c into a replayer that runs files through the target once, which
 * the test suite does over traces/, tests/bad/ and tests/fuzz/regress/.
 */
#ifndef AS_FUZZ_H
#define AS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse data as a trace in `format`; NULL when it is refused. */
struct as_trace;
struct as_trace *fuzz_parse(const uint8_t *data, size_t size,
			    const char *format);

/* Parse data as the value of `key` ("graph", "numa") in an otherwise valid
 * JSON trace, so the fuzzer spends its time inside that form's reader. */
void fuzz_json_form(const uint8_t *data, size_t size, const char *key);

#endif
