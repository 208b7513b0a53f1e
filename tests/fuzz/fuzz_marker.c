/* libFuzzer target: mafp_marker_parse, the reader of program_pid, program_session,
 * program_exit_code and of call ids in file names. The first byte picks the bounds (those the
 * callers use, and the widest the contract allows); the rest is the marker.
 * Oracle: an accepted marker is [-]digits, within the bounds, at most MAFP_MARKER_MAX bytes,
 * and strtol agrees with the value. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

static const struct {
	long min, max;
} bounds[] = {
	{0, 255},                       /* program_exit_code */
	{1, INT_MAX},                   /* program_pid, program_session */
	{1, MAFP_CALL_ID_MAX},          /* call ids */
	{-10, 10},
	{-1, 0},
	{0, LONG_MAX},
	{-LONG_MAX, LONG_MAX},
	{LONG_MIN, LONG_MAX},
	{LONG_MIN, 0},
	{5, 4},                         /* empty: nothing is accepted */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long min, max, v = 0x5a5a, want;
	char copy[64], *end;
	size_t len, i;
	int rc;

	if (size < 1)
		return 0;
	min = bounds[data[0] % (sizeof(bounds) / sizeof(bounds[0]))].min;
	max = bounds[data[0] % (sizeof(bounds) / sizeof(bounds[0]))].max;
	len = size - 1;
	/* An exact-size heap copy: reading past len is an ASan error. */
	{
		char *buf = malloc(len ? len : 1);

		if (!buf)
			return 0;
		memcpy(buf, data + 1, len);
		rc = mafp_marker_parse(buf, len, min, max, &v);
		free(buf);
	}
	if (rc != 0) {
		if (rc != -1 || v != 0x5a5a)
			abort();
		return 0;
	}
	if (len == 0 || len > MAFP_MARKER_MAX || v < min || v > max)
		abort();
	for (i = 0; i < len; i++) {
		char c = (char)data[1 + i];

		if (!((c >= '0' && c <= '9') || (i == 0 && c == '-' && len > 1)))
			abort();
	}
	memcpy(copy, data + 1, len);
	copy[len] = '\0';
	errno = 0;
	want = strtol(copy, &end, 10);
	if (errno || *end || want != v)
		abort();
	return 0;
}
