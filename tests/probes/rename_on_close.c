/* A static probe for images without a libc: watches the directory argv[1] (made if absent)
 * and renames each file closed after writing to NAME.taken as soon as it is told of it,
 * as the launcher's supervisor takes a relayed response over for its next request. Never
 * ends. */
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(8)));
	int fd;

	if (argc != 2)
		return 2;
	mkdir(argv[1], 0755);
	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, argv[1], IN_CLOSE_WRITE) < 0)
		return 1;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf)), off = 0;

		if (n <= 0)
			return 1;
		while (off < n) {
			struct inotify_event *e = (struct inotify_event *)(buf + off);
			char from[4096], to[4096];

			off += (ssize_t)(sizeof(*e) + e->len);
			if (!e->len || strstr(e->name, ".taken"))
				continue;
			snprintf(from, sizeof(from), "%s/%s", argv[1], e->name);
			snprintf(to, sizeof(to), "%s/%s.taken", argv[1], e->name);
			rename(from, to);
		}
	}
}
