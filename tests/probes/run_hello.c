/* A static probe for images without a libc: writes one line on stdout and one on stderr,
 * sleeps argv[2] seconds when given, then exits with argv[1] (default 0). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

int main(int argc, char **argv)
{
	say(1, "hello from stdout\n");
	say(2, "hello from stderr\n");
	if (argc > 2)
		sleep((unsigned)atoi(argv[2]));
	return argc > 1 ? atoi(argv[1]) : 0;
}
