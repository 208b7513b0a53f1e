/* Starting processes without copying the launcher's memory.
 *
 * On a virtual machine whose page faults are costly, fork() is dear: a copy of every page
 * table, then a fault for each page either side writes. maf-launch run starts two processes
 * on the path that the caller waits for, so it shares memory instead, in the two ways
 * posix_spawn-like code can:
 *
 * - mafl_spawn_shared() starts the supervisor in the launcher's own memory (CLONE_VM, with a
 *   stack of its own). The launcher then makes R/work and two files for the supervisor
 *   (run.c), waits for the supervisor's report, writes it out and exits, and does so with
 *   the raw system calls below: they touch no C library state (not even errno, which the
 *   two processes share), so the supervisor owns the heap, stdio and errno from its first
 *   instruction. Once the launcher has exited, the memory is the supervisor's alone.
 * - mafl_spawn_vfork() starts the program's process the way vfork() does (CLONE_VM and
 *   CLONE_VFORK, on a stack of its own): the supervisor sleeps until the child has exec'd or
 *   exited, which it would wait for anyway. The child must not allocate, use stdio or
 *   return; it ends in exec or _exit.
 *
 * Builds with AddressSanitizer, and architectures without the raw calls, fork() instead. */
#ifndef MAFL_SPAWN_H
#define MAFL_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

#if defined(__SANITIZE_ADDRESS__)
#define MAFL_SPAWN_FORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MAFL_SPAWN_FORK 1
#endif
#endif
#if !defined(MAFL_SPAWN_FORK) && !defined(__x86_64__) && !defined(__aarch64__)
#define MAFL_SPAWN_FORK 1
#endif
#ifndef MAFL_SPAWN_FORK
#define MAFL_SPAWN_FORK 0
#endif

/* Runs fn(arg) in a new process sharing this one's memory (or a fork); the child exits with
 * fn's return value. Returns the child's pid, or -1 with errno. */
pid_t mafl_spawn_shared(int (*fn)(void *), void *arg);
/* Runs fn(arg) in a new process that borrows this one's memory until it execs or exits,
 * while this one waits (or a fork). Returns the child's pid, or -1 with errno. */
pid_t mafl_spawn_vfork(int (*fn)(void *), void *arg);
/* mafl_spawn_vfork() with exit_signal, not SIGCHLD, sent when the child ends: a "clone
 * child", which waitpid() sees only with __WALL (or __WCLONE). */
pid_t mafl_spawn_vfork_signal(int (*fn)(void *), void *arg, int exit_signal);

/* System calls that leave errno alone: they return the kernel's result (-errno on failure).
 * For the launcher after mafl_spawn_shared(). */
long mafl_raw_read(int fd, void *buf, size_t len);
long mafl_raw_write(int fd, const void *buf, size_t len);
long mafl_raw_close(int fd);
long mafl_raw_wait(pid_t pid);
long mafl_raw_openat(int dirfd, const char *path, int flags, int mode);
long mafl_raw_unlinkat(int dirfd, const char *path);
long mafl_raw_mkdirat(int dirfd, const char *path, int mode);
/* Any other system call of three arguments, on the same terms. */
long mafl_raw_syscall(long nr, long a, long b, long c);
/* Sends err as an int on the stream socket sock, with fd attached as SCM_RIGHTS when
 * fd >= 0; never raises SIGPIPE. */
long mafl_raw_send_fd(int sock, int fd, int err);
__attribute__((noreturn)) void mafl_raw_exit(int code);

#endif
