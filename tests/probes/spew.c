/* A static probe for images without a libc: writes argv[1] bytes on stdout and argv[2] on
 * stderr, in turns of up to 64 KiB, then exits with argv[3] (default 0). Byte i of stdout is
 * 'a' + i % 26, of stderr 'A' + i % 26, so a reader can check what it got, and where. */
#include <stdlib.h>
#include <unistd.h>

static int put(int fd, char first, unsigned long long *done, unsigned long long total)
{
	char buf[65536];
	size_t n = total - *done < sizeof(buf) ? (size_t)(total - *done) : sizeof(buf), i, off = 0;

	for (i = 0; i < n; i++)
		buf[i] = (char)(first + (*done + i) % 26);
	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	*done += n;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long out = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
	unsigned long long err = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	unsigned long long o = 0, e = 0;

	while (o < out || e < err) {
		if (o < out && put(1, 'a', &o, out) < 0)
			return 125;
		if (e < err && put(2, 'A', &e, err) < 0)
			return 125;
	}
	return argc > 3 ? atoi(argv[3]) : 0;
}
