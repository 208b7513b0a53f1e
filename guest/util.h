/* Small helpers shared by the launcher's subcommands: dying clearly, whole reads and
 * writes, and markers published atomically. */
#ifndef MAFL_UTIL_H
#define MAFL_UTIL_H

#include <fcntl.h>
#include <stddef.h>
#include <sys/types.h>

extern const char *mafl_prog;	/* "maf-launch", or "maf-launch run" once dispatched */

/* Prints "maf-launch: MESSAGE" on stderr and exits with code. */
__attribute__((noreturn, format(printf, 2, 3))) void mafl_die(int code, const char *fmt, ...);
/* As mafl_die(), with ": strerror(errno)" appended. */
__attribute__((noreturn, format(printf, 2, 3))) void mafl_die_errno(int code, const char *fmt, ...);
/* Prints the message without exiting. */
__attribute__((format(printf, 1, 2))) void mafl_warnx(const char *fmt, ...);

/* Writes all of buf, looping on EINTR and short writes. Returns 0, or -1 with errno set. */
int mafl_write_all(int fd, const void *buf, size_t len);
/* Reads up to size bytes until EOF, looping on EINTR. Returns bytes read, or -1 with errno. */
ssize_t mafl_read_full(int fd, void *buf, size_t size);

/* How a file the program may have planted something in the way of is opened for writing
 * (mode 0666 less umask): O_NOFOLLOW refuses a symlink, and O_NONBLOCK a FIFO, whose open
 * would otherwise wait for a reader forever (it has no effect on a regular file). */
#define MAFL_OPEN_STAGED (O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

/* Publishes content as dir/name: writes dir/name.part (opened with MAFL_OPEN_STAGED), fsyncs
 * it if durable, renames it into place and, if durable, fsyncs the directory. dirfd is an
 * open directory. Returns 0, or -1 with errno set (the .part file is removed). */
int mafl_publish_at(int dirfd, const char *name, const void *content, size_t len, int durable);
/* mafl_publish_at() with dir/name.part already open as fd, which it closes in every case. */
int mafl_publish_staged_at(int dirfd, const char *name, int fd, const void *content, size_t len,
			   int durable);

/* Parses a duration in seconds ("30", "0.5") into milliseconds. Returns 0 or -1. */
int mafl_parse_seconds_ms(const char *s, long long max_ms, long long *out_ms);
/* Parses a non-negative decimal integer no larger than max. Returns 0 or -1. */
int mafl_parse_u64(const char *s, unsigned long long max, unsigned long long *out);

/* Monotonic milliseconds. */
long long mafl_now_ms(void);

/* Zeroed memory for what the launch path allocates (the run's environment, the channel),
 * from a static arena while it lasts and from calloc after. A process's first malloc costs
 * more than the allocation: the heap's set-up system calls and a page fault for each new
 * size class, dear where page faults are (a VM with shadow paging). What is allocated here
 * lives for the whole run; mafl_arena_free frees only what calloc gave. */
void *mafl_arena_calloc(size_t n, size_t size);
void mafl_arena_free(void *p);
/* mafl_now_ms through the system call rather than the vDSO, for a clock read once on the launch
 * path: a process's first use of the vDSO maps its pages, three page faults that cost far
 * more than one system call where page faults are dear. */
long long mafl_now_ms_syscall(void);

/* Copies src into dst of size bytes, truncating, always terminated. */
void mafl_str_copy(char *dst, size_t size, const char *src);

struct stat;
/* Opens dirfd/name for reading only if it is a regular file: a symlink is never followed, a
 * FIFO never blocks, a device is never opened. Fills *st. Returns a close-on-exec descriptor,
 * or -1 with errno: ENOENT absent, EINVAL anything but a regular file. */
int mafl_open_regular_at(int dirfd, const char *name, struct stat *st);

#endif
