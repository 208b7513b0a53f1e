/* libFuzzer target: the framing of `maf-launch serve`'s events on a stream
 * (mafh__stream_event_len, host/src/launcher_output.c), guest-written bytes read in pieces.
 * The first two input bytes pick the largest body (the request cap) and a split point; the
 * rest is the stream. Oracle: a length is never past the bytes given, a frame found is one
 * mafh__wait_event_parse takes whole, as the event given with it, and whose body fits the
 * cap, and the answer for a prefix is "need more" or the same frame, never a different one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t caps[] = {0, 1, 32, 47, 1024, 1u << 20};
	struct mafh__wait_event ev, got, again;
	uint64_t cap;
	size_t len, cut;
	long n, m;
	char *buf;

	if (size < 2)
		return 0;
	cap = caps[data[0] % (sizeof(caps) / sizeof(caps[0]))];
	len = size - 2;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 2, len);
	n = mafh__stream_event_len(buf, len, cap, &got);
	if (n > (long)len || n < -1)
		abort();
	if (n > 0) {
		if (mafh__wait_event_parse(buf, (size_t)n, &ev) != 0)
			abort();
		if (got.kind != ev.kind || got.id != ev.id || got.unreadable != ev.unreadable ||
		    got.oversized != ev.oversized || got.size != ev.size || got.body != ev.body ||
		    got.body_len != ev.body_len)
			abort();
		if ((ev.kind == MAFH__WAIT_REQUEST || ev.kind == MAFH__WAIT_EXIT) &&
		    !ev.unreadable && !ev.oversized && (uint64_t)ev.body_len > cap)
			abort();
	}
	cut = len ? data[1] % (len + 1) : 0;
	m = mafh__stream_event_len(buf, cut, cap, &again);
	if (m > 0 && m != n)
		abort();
	if (n > 0 && (size_t)n <= cut && m != n)
		abort();
	free(buf);
	return 0;
}
