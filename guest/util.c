#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

const char *mafl_prog = "maf-launch";

static void vwarn(const char *fmt, va_list ap, int err)
{
	char msg[1024];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (n < 0)
		msg[0] = '\0';
	if (err)
		dprintf(2, "%s: %s: %s\n", mafl_prog, msg, strerror(err));
	else
		dprintf(2, "%s: %s\n", mafl_prog, msg);
}

void mafl_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap, 0);
	va_end(ap);
	exit(code);
}

void mafl_die_errno(int code, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap, err);
	va_end(ap);
	exit(code);
}

void mafl_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap, 0);
	va_end(ap);
}

int mafl_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t mafl_read_full(int fd, void *buf, size_t size)
{
	char *p = buf;
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, p + got, size - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int part_name(char *part, size_t size, const char *name)
{
	if (snprintf(part, size, "%s%s", name, MAFP_PART_SUFFIX) >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* mafl_publish_at() from the open .part file on. */
static int publish_part(int dirfd, const char *part, const char *name, int fd,
			const void *content, size_t len, int durable)
{
	int err;

	if (mafl_write_all(fd, content, len) < 0 || (durable && fsync(fd) < 0))
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, part, dirfd, name) < 0)
		goto fail;
	if (durable && fsync(dirfd) < 0)
		return -1;
	return 0;
fail:
	err = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, part, 0);
	errno = err;
	return -1;
}

int mafl_publish_at(int dirfd, const char *name, const void *content, size_t len, int durable)
{
	char part[256];
	int fd;

	if (part_name(part, sizeof(part), name) < 0)
		return -1;
	fd = openat(dirfd, part, MAFL_OPEN_STAGED, 0666);
	if (fd < 0)
		return -1;
	return publish_part(dirfd, part, name, fd, content, len, durable);
}

int mafl_publish_staged_at(int dirfd, const char *name, int fd, const void *content, size_t len,
			   int durable)
{
	char part[256];

	if (part_name(part, sizeof(part), name) < 0) {
		close(fd);
		return -1;
	}
	return publish_part(dirfd, part, name, fd, content, len, durable);
}

int mafl_parse_u64(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');

		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int mafl_parse_seconds_ms(const char *s, long long max_ms, long long *out_ms)
{
	long long whole = 0, frac = 0, scale = 100;
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		whole = whole * 10 + (*s - '0');
		if (whole > max_ms / 1000 + 1)
			return -1;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			frac += (*s - '0') * scale;
			scale /= 10;
		}
	}
	if (*s || digits == 0 || frac > max_ms || whole > (max_ms - frac) / 1000)
		return -1;
	*out_ms = whole * 1000 + frac;
	return 0;
}

static long long ms_of(const struct timespec *ts)
{
	return (long long)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

long long mafl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ms_of(&ts);
}

long long mafl_now_ms_syscall(void)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) < 0)
		return mafl_now_ms();
	return ms_of(&ts);
}

void mafl_str_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (size == 0)
		return;
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int mafl_open_regular_at(int dirfd, const char *name, struct stat *st)
{
	int fd, err;

	/* Look before opening: opening a device can have side effects, and a FIFO opened
	 * without O_NONBLOCK would block. */
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		return -1;
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			errno = EINVAL;
		return -1;
	}
	/* It may have been swapped between the look and the open. */
	err = fstat(fd, st) < 0 ? errno : !S_ISREG(st->st_mode) ? EINVAL : 0;
	if (err) {
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* The launch arena: see util.h. Static, so zero until used; nothing in it is ever reused. */
static unsigned char arena[32768] __attribute__((aligned(16)));
static size_t arena_used;

void *mafl_arena_calloc(size_t n, size_t size)
{
	size_t len;
	void *p;

	if (size && n > ((size_t)-1 - 15) / size)
		return NULL;
	len = (n * size + 15) & ~(size_t)15;
	if (len > sizeof(arena) - arena_used)
		return calloc(n, size);
	p = arena + arena_used;
	arena_used += len;
	return p;
}

void mafl_arena_free(void *p)
{
	if ((unsigned char *)p < arena || (unsigned char *)p >= arena + sizeof(arena))
		free(p);
}
