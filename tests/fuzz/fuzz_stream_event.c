/* libFuzzer target: the framing of `maf-launch serve`'s events on a stream
 * (mafh__stream_event_len, host/src/launcher_output.c), guest-written bytes read in pieces.
 * The first two input bytes pick the largest body (the request cap) and a split point; the
 * rest is the stream. Oracle: a length is never past the bytes given, a frame found is one
 * mafh__wait_event_parse takes whole, as the event given with it, and whose body fits the
 * cap; an accepted line (serve --ack) is its head line alone, and the event after it is
 * framed the same way from where it ends, as the core reads them; the answer for a prefix is
 * "need more" or the same frame, never a different one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The oracle for the first event in buf[0..len), and for its prefix buf[0..cut): returns
 * its length (as mafh__stream_event_len does) with *got. */
static long check(const char *buf, size_t len, size_t cut, uint64_t cap,
		  struct mafh__wait_event *got)
{
	struct mafh__wait_event ev, again;
	long n, m;

	n = mafh__stream_event_len(buf, len, cap, got);
	if (n > (long)len || n < -1)
		abort();
	if (n > 0) {
		if (mafh__wait_event_parse(buf, (size_t)n, &ev) != 0)
			abort();
		if (got->kind != ev.kind || got->id != ev.id || got->unreadable != ev.unreadable ||
		    got->oversized != ev.oversized || got->size != ev.size ||
		    got->body != ev.body || got->body_len != ev.body_len)
			abort();
		if ((ev.kind == MAFH__WAIT_REQUEST || ev.kind == MAFH__WAIT_EXIT) &&
		    !ev.unreadable && !ev.oversized && (uint64_t)ev.body_len > cap)
			abort();
		/* An accepted line carries nothing after it: the next event starts there. */
		if (ev.kind == MAFH__WAIT_ACCEPTED &&
		    (ev.body_len != 0 || buf[n - 1] != '\n' || memchr(buf, '\n', (size_t)n - 1)))
			abort();
	}
	m = mafh__stream_event_len(buf, cut, cap, &again);
	if (m > 0 && m != n)
		abort();
	if (n > 0 && (size_t)n <= cut && m != n)
		abort();
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t caps[] = {0, 1, 32, 47, 1024, 1u << 20};
	struct mafh__wait_event got;
	uint64_t cap;
	size_t len, cut;
	long n;
	char *buf;

	if (size < 2)
		return 0;
	cap = caps[data[0] % (sizeof(caps) / sizeof(caps[0]))];
	len = size - 2;
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	memcpy(buf, data + 2, len);
	cut = len ? data[1] % (len + 1) : 0;
	n = check(buf, len, cut, cap, &got);
	/* After an accepted line, the frame's event, cut at the same place of the stream. */
	if (n > 0 && got.kind == MAFH__WAIT_ACCEPTED)
		check(buf + n, len - (size_t)n, cut > (size_t)n ? cut - (size_t)n : 0, cap, &got);
	free(buf);
	return 0;
}
