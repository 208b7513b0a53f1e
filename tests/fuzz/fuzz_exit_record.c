/* libFuzzer target: mafp_exit_record_decode, the host's reader of program_exit.json.
 * Oracle: an accepted record has its fields in range, and re-encoding and decoding it gives
 * the same record (numbers compared exactly below 2^52: above, cJSON's printer may round to
 * 15 significant digits, a known imprecision that no real count reaches). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

static int same_int(int64_t a, int64_t b)
{
	return a == b || (a >= ((int64_t)1 << 52) && b >= ((int64_t)1 << 52));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mafp_exit_record rec, again;
	const char *why = NULL;
	char *buf, *enc;

	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (mafp_exit_record_decode(buf, size, &rec, &why) != 0) {
		free(buf);
		if (!why)
			abort();
		return 0;
	}
	free(buf);
	if (size > MAFP_EXIT_RECORD_MAX || rec.exit_code < 0 || rec.exit_code > 255 ||
	    rec.signal < 0 || rec.signal > 64 || rec.wall_ms < 0 || rec.cpu_ms < 0 ||
	    rec.peak_rss_kb < 0 || rec.output_bytes < 0 || rec.calls < 0 ||
	    (rec.output_truncated != 0 && rec.output_truncated != 1) ||
	    !memchr(rec.seccomp, '\0', sizeof(rec.seccomp)) ||
	    !memchr(rec.landlock, '\0', sizeof(rec.landlock)) ||
	    !memchr(rec.error, '\0', sizeof(rec.error)) ||
	    strcmp(mafp_status_name(rec.status), "unknown") == 0 || rec.n_undelivered < 0 ||
	    rec.n_undelivered > MAFP_UNDELIVERED_MAX)
		abort();
	for (int i = 0; i < rec.n_undelivered; i++)
		if (rec.undelivered[i] < 1 || rec.undelivered[i] > MAFP_CALL_ID_MAX)
			abort();
	enc = mafp_exit_record_encode(&rec);
	if (!enc)
		return 0;
	if (mafp_exit_record_decode(enc, strlen(enc), &again, &why) != 0) {
		/* Control bytes in strings are escaped as \u00XX: six bytes for one, so a
		 * record near the cap can grow past it. Anything else is a bug. */
		if (strlen(enc) <= MAFP_EXIT_RECORD_MAX)
			abort();
		free(enc);
		return 0;
	}
	free(enc);
	if (again.status != rec.status || again.exit_code != rec.exit_code ||
	    again.signal != rec.signal || !same_int(again.wall_ms, rec.wall_ms) ||
	    !same_int(again.cpu_ms, rec.cpu_ms) || !same_int(again.peak_rss_kb, rec.peak_rss_kb) ||
	    !same_int(again.output_bytes, rec.output_bytes) || !same_int(again.calls, rec.calls) ||
	    again.output_truncated != rec.output_truncated ||
	    strcmp(again.seccomp, rec.seccomp) || strcmp(again.landlock, rec.landlock) ||
	    strcmp(again.error, rec.error) || again.n_undelivered != rec.n_undelivered ||
	    memcmp(again.undelivered, rec.undelivered,
		   (size_t)rec.n_undelivered * sizeof(rec.undelivered[0])))
		abort();
	return 0;
}
