/* libFuzzer target: the Docker backend's demultiplexer of an exec's stream
 * (host/backends/docker_parse.c): the bytes a container's command writes, framed by the
 * engine. The first input byte sets the size of the pieces the rest is fed in (1..256).
 * Oracle: a plain reading of the frames, done here over the whole input: the same bytes on
 * each stream, the same refusal, the same end (between frames or inside one). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"

struct streams {
	unsigned char *buf[4];
	size_t len[4];
};

static int sink(void *ud, enum docker_stream stream, const char *p, size_t n)
{
	struct streams *s = ud;

	if (stream != DOCKER_STDOUT && stream != DOCKER_STDERR && stream != DOCKER_SYSTEMERR)
		abort();
	memcpy(s->buf[stream] + s->len[stream], p, n);
	s->len[stream] += n;
	return 0;
}

/* The frames read plainly: 0 or -1 (a bad header), whole set when the input ends between
 * frames. */
static int reference(const uint8_t *p, size_t size, struct streams *s, int *whole)
{
	size_t i = 0;

	*whole = 1;
	while (i < size) {
		size_t n, take;
		int stream;

		if (size - i < 8) {
			*whole = 0;
			return 0;
		}
		if (p[i] > 3 || p[i + 1] || p[i + 2] || p[i + 3])
			return -1;
		stream = p[i] == 0 ? 1 : p[i];
		n = (size_t)p[i + 4] << 24 | (size_t)p[i + 5] << 16 | (size_t)p[i + 6] << 8 |
		    (size_t)p[i + 7];
		i += 8;
		take = n < size - i ? n : size - i;
		memcpy(s->buf[stream] + s->len[stream], p + i, take);
		s->len[stream] += take;
		i += take;
		if (take < n)
			*whole = 0;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct streams got = {0}, want = {0};
	struct docker_demux d;
	size_t piece, i;
	int rc = 0, want_rc, want_whole;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] + 1;
	data++;
	size--;
	for (i = 1; i < 4; i++) {
		got.buf[i] = malloc(size + 1);
		want.buf[i] = malloc(size + 1);
		if (!got.buf[i] || !want.buf[i])
			abort();
	}
	mafh__docker_demux_init(&d);
	for (i = 0; i < size && rc == 0; i += piece) {
		/* An exact-size heap copy of each piece: reading past it is an ASan error. */
		size_t n = size - i < piece ? size - i : piece;
		uint8_t *copy = malloc(n);

		if (!copy)
			abort();
		memcpy(copy, data + i, n);
		rc = mafh__docker_demux_feed(&d, copy, n, sink, &got);
		free(copy);
	}
	want_rc = reference(data, size, &want, &want_whole);
	if (rc != want_rc || (rc == 0 && mafh__docker_demux_whole(&d) != want_whole))
		abort();
	for (i = 1; i < 4; i++) {
		if (got.len[i] != want.len[i] || memcmp(got.buf[i], want.buf[i], got.len[i]) != 0)
			abort();
		free(got.buf[i]);
		free(want.buf[i]);
	}
	return 0;
}
