/* Unit tests for the local backend (host/backends/local*.c) and the latency wrapper
 * (host/backends/latency.c), in a temporary directory, and for the backend table checks.
 * The same backends as tasks are test_backend_tasks.c and test_backend_streams.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend_fixture.h"

static void test_write_read(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_read_result rr;
	struct mafh_stat st;
	struct mafh_error err = {0};

	(void)state;
	assert_true((mafh_backend_caps(b) & MAFH_CAPS_REQUIRED) == MAFH_CAPS_REQUIRED);
	assert_true(mafh_backend_caps(b) & MAFH_CAP_BLOCKING_EXEC);
	assert_string_equal(mafh_backend_launcher_path(b), "/bin/true");
	/* Missing parents are created. */
	assert_int_equal(mafh_backend_write_file(b, at("a/b/c.txt"), "hello", 5, NULL, &err), 0);
	assert_int_equal(mafh_backend_read_file(b, at("a/b/c.txt"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_OK);
	assert_int_equal(rr.len, 5);
	assert_memory_equal(rr.data, "hello", 5);
	mafh_read_result_clear(&rr);
	/* Replaced whole, and an empty file reads as empty. */
	assert_int_equal(mafh_backend_write_file(b, at("a/b/c.txt"), "", 0, NULL, &err), 0);
	assert_int_equal(mafh_backend_read_file(b, at("a/b/c.txt"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_OK);
	assert_int_equal(rr.len, 0);
	mafh_read_result_clear(&rr);
	/* Absence is a status, also when a parent is missing. */
	assert_int_equal(mafh_backend_read_file(b, at("a/b/none"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_ABSENT);
	assert_int_equal(mafh_backend_read_file(b, at("x/y/none"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_ABSENT);
	/* The cap. */
	assert_int_equal(mafh_backend_write_file(b, at("big"), "0123456789", 10, NULL, &err), 0);
	assert_int_equal(mafh_backend_read_file(b, at("big"), 9, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_TOO_BIG);
	assert_null(rr.data);
	assert_int_equal(mafh_backend_read_file(b, at("big"), 10, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_OK);
	mafh_read_result_clear(&rr);
	/* stat. */
	assert_int_equal(mafh_backend_stat(b, at("big"), &st, &err), 0);
	assert_true(st.exists);
	assert_int_equal(st.size, 10);
	assert_int_equal(st.type, MAFH_FILE_REGULAR);
	assert_int_equal(mafh_backend_stat(b, at("a"), &st, &err), 0);
	assert_int_equal(st.type, MAFH_FILE_DIR);
	assert_int_equal(mafh_backend_stat(b, at("nothing"), &st, &err), 0);
	assert_false(st.exists);
	/* Relative paths are refused. */
	assert_int_equal(mafh_backend_write_file(b, "rel/x", "", 0, NULL, &err), MAFH_EINVAL);
	mafh_backend_free(b);
}

static void test_hostile_files(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_read_result rr;
	struct mafh_stat st;
	struct mafh_error err = {0};
	char buf[64] = "";
	int fd;

	(void)state;
	/* A symlink is never followed by a read... */
	assert_int_equal(mafh_backend_write_file(b, at("secret"), "secret", 6, NULL, &err), 0);
	assert_int_equal(symlink(at("secret"), at("link")), 0);
	assert_int_equal(mafh_backend_read_file(b, at("link"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_NOT_REGULAR);
	assert_int_equal(mafh_backend_stat(b, at("link"), &st, &err), 0);
	assert_int_equal(st.type, MAFH_FILE_SYMLINK);
	/* ...nor by a write: the link itself is replaced, the target untouched. */
	assert_int_equal(mafh_backend_write_file(b, at("link"), "answer", 6, NULL, &err), 0);
	fd = open(at("secret"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	assert_memory_equal(buf, "secret", 6);
	assert_int_equal(mafh_backend_stat(b, at("link"), &st, &err), 0);
	assert_int_equal(st.type, MAFH_FILE_REGULAR);
	/* A directory and a FIFO: refused at once, never blocking. */
	assert_int_equal(mkdir(at("d"), 0755), 0);
	assert_int_equal(mafh_backend_read_file(b, at("d"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_NOT_REGULAR);
	assert_int_equal(mkfifo(at("fifo"), 0644), 0);
	assert_int_equal(mafh_backend_read_file(b, at("fifo"), 100, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_NOT_REGULAR);
	/* A write onto a planted directory fails cleanly and leaves no temporary file. */
	assert_int_not_equal(mafh_backend_write_file(b, at("d"), "x", 1, NULL, &err), 0);
	assert_non_null(strstr(err.message, "cannot write"));
	assert_int_equal(err.code, -EISDIR);
	assert_int_equal(rmdir(at("d")), 0);
	/* A directory swapped for a symlink: reads and writes through it are refused. */
	assert_int_equal(mkdir(at("real"), 0755), 0);
	assert_int_equal(symlink(at("real"), at("via")), 0);
	assert_int_not_equal(mafh_backend_write_file(b, at("via/f"), "x", 1, NULL, &err), 0);
	assert_non_null(strstr(err.message, "symlink"));
	/* ELOOP from openat2's RESOLVE_NO_SYMLINKS, ENOTDIR from the walk where it is absent. */
	assert_true(err.code == -ELOOP || err.code == -ENOTDIR);
	assert_int_not_equal(mafh_backend_read_file(b, at("via/f"), 10, &rr, &err), 0);
	assert_true(err.code == -ELOOP || err.code == -ENOTDIR);
	assert_int_not_equal(access(at("real/f"), F_OK), 0);
	mafh_backend_free(b);
}

/* The file at path: its bytes (NUL-terminated, at most 63) and inode. */
static ino_t file_at(const char *path, char *buf, size_t size)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	n = read(fd, buf, size - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
	return st.st_ino;
}

/* Asserts that the file at path holds exactly want. */
static void assert_file_holds(const char *path, const char *want)
{
	char buf[64];

	file_at(path, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_write_reusing(void **state)
{
	struct mafh_backend *b = local(), *lat = NULL;
	struct mafh_error err = {0};
	struct stat st;
	char buf[64];
	ino_t ino;

	(void)state;
	/* A longer donor: written over, cut to the new length, renamed; no new inode. */
	assert_int_equal(mafh_backend_write_file(b, at("0001.request.json"), "a long request", 14, NULL, &err), 0);
	ino = file_at(at("0001.request.json"), buf, sizeof(buf));
	assert_int_equal(mafh_backend_write_file(b, at("0001.response.json"), "short", 5, at("0001.request.json"), &err), 0);
	assert_int_equal(file_at(at("0001.response.json"), buf, sizeof(buf)), ino);
	assert_string_equal(buf, "short");
	assert_int_equal(lstat(at("0001.request.json"), &st), -1);
	/* A shorter donor grows; a response already there (a planted symlink here) is replaced,
	 * not followed. */
	assert_int_equal(mafh_backend_write_file(b, at("secret"), "secret", 6, NULL, &err), 0);
	assert_int_equal(symlink(at("secret"), at("0002.response.json")), 0);
	assert_int_equal(mafh_backend_write_file(b, at("0002.request.json"), "r", 1, NULL, &err), 0);
	ino = file_at(at("0002.request.json"), buf, sizeof(buf));
	assert_int_equal(mafh_backend_write_file(b, at("0002.response.json"), "a longer one", 12, at("0002.request.json"), &err), 0);
	assert_int_equal(file_at(at("0002.response.json"), buf, sizeof(buf)), ino);
	assert_string_equal(buf, "a longer one");
	assert_file_holds(at("secret"), "secret");

	/* Donors that are not taken: the response is a new file, the donor left as it was. */
	/* a second link (the other name must keep its bytes)... */
	assert_int_equal(mafh_backend_write_file(b, at("0003.request.json"), "req3", 4, NULL, &err), 0);
	assert_int_equal(link(at("0003.request.json"), at("kept")), 0);
	ino = file_at(at("0003.request.json"), buf, sizeof(buf));
	assert_int_equal(mafh_backend_write_file(b, at("0003.response.json"), "resp3", 5, at("0003.request.json"), &err), 0);
	assert_int_not_equal(file_at(at("0003.response.json"), buf, sizeof(buf)), ino);
	assert_string_equal(buf, "resp3");
	assert_file_holds(at("kept"), "req3");
	assert_file_holds(at("0003.request.json"), "req3");
	/* ...a symlink (its target untouched, the link still there)... */
	assert_int_equal(symlink(at("secret"), at("0004.request.json")), 0);
	assert_int_equal(mafh_backend_write_file(b, at("0004.response.json"), "resp4", 5, at("0004.request.json"), &err), 0);
	assert_file_holds(at("0004.response.json"), "resp4");
	assert_file_holds(at("secret"), "secret");
	assert_int_equal(lstat(at("0004.request.json"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	/* ...a FIFO (never opened, so never blocking), a missing donor... */
	assert_int_equal(mkfifo(at("0005.request.json"), 0644), 0);
	assert_int_equal(mafh_backend_write_file(b, at("0005.response.json"), "resp5", 5, at("0005.request.json"), &err), 0);
	assert_file_holds(at("0005.response.json"), "resp5");
	assert_int_equal(lstat(at("0005.request.json"), &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(mafh_backend_write_file(b, at("0006.response.json"), "resp6", 5, at("0006.request.json"), &err), 0);
	assert_file_holds(at("0006.response.json"), "resp6");
	/* ...a donor in another directory, or named as path itself... */
	assert_int_equal(mafh_backend_write_file(b, at("sub/0007.request.json"), "req7", 4, NULL, &err),
			 0);
	assert_int_equal(mafh_backend_write_file(b, at("0007.response.json"), "resp7", 5, at("sub/0007.request.json"), &err), 0);
	assert_file_holds(at("sub/0007.request.json"), "req7");
	assert_int_equal(mafh_backend_write_file(b, at("0007.response.json"), "again", 5, at("0007.response.json"), &err), 0);
	assert_file_holds(at("0007.response.json"), "again");
	/* ...or no donor at all. */
	assert_int_equal(mafh_backend_write_file(b, at("0008.response.json"), "r8", 2, NULL, &err), 0);
	assert_file_holds(at("0008.response.json"), "r8");
	/* A backend that does not reuse files (the latency wrapper, as a remote backend) writes
	 * plainly and leaves the file to replace alone. */
	assert_int_equal(mafh_backend_latency_new(local(), 1, &lat), 0);
	assert_int_equal(mafh_backend_write_file(b, at("0009.request.json"), "req9", 4, NULL, &err), 0);
	assert_int_equal(mafh_backend_write_file(lat, at("0009.response.json"), "resp9", 5, at("0009.request.json"), &err), 0);
	assert_file_holds(at("0009.request.json"), "req9");
	assert_file_holds(at("0009.response.json"), "resp9");
	mafh_backend_free(lat);
	mafh_backend_free(b);
}

static void test_exec(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_exec_result x;
	struct mafh_error err = {0};
	const char *echo[] = {"sh", "-c", "printf out; printf err >&2; exit 3", NULL};
	const char *big[] = {"sh", "-c", "head -c 100000 /dev/zero", NULL};
	const char *slow[] = {"sleep", "5", NULL};
	const char *none[] = {"/nonexistent/prog", NULL};
	const char *bg[] = {"sh", "-c", "sleep 5 & echo started", NULL};
	struct timespec t0, t1;

	(void)state;
	assert_int_equal(mafh_backend_exec(b, echo, 5000, 1024, &x, &err), 0);
	assert_int_equal(x.exit_code, 3);
	assert_false(x.timed_out);
	assert_int_equal(x.out_len, 3);
	assert_memory_equal(x.out, "out", 3);
	assert_int_equal(x.err_len, 3);
	assert_memory_equal(x.err, "err", 3);
	mafh_exec_result_clear(&x);
	/* stdout past the cap is drained and dropped. */
	assert_int_equal(mafh_backend_exec(b, big, 5000, 10, &x, &err), 0);
	assert_int_equal(x.exit_code, 0);
	assert_int_equal(x.out_len, 10);
	mafh_exec_result_clear(&x);
	/* The timeout kills. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mafh_backend_exec(b, slow, 200, 10, &x, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(x.timed_out);
	assert_int_equal(x.exit_code, -1);
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	mafh_exec_result_clear(&x);
	/* Not found: 127, as env does. */
	assert_int_equal(mafh_backend_exec(b, none, 5000, 10, &x, &err), 0);
	assert_int_equal(x.exit_code, 127);
	assert_non_null(strstr(x.err, "not found"));
	mafh_exec_result_clear(&x);
	/* A background process holding the pipes does not hold the exec. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mafh_backend_exec(b, bg, 10000, 100, &x, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(x.exit_code, 0);
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	mafh_exec_result_clear(&x);
	assert_int_equal(mafh_backend_exec(b, (const char *[]){NULL}, 10, 10, &x, &err),
			 MAFH_EINVAL);
	mafh_backend_free(b);
}

/* exec_input: the bytes are the command's stdin, then its end; whatever their size, and
 * whether or not the command reads them (no SIGPIPE reaches the host). */
static void test_exec_input(void **state)
{
	struct mafh_backend *b = local(), *lat = NULL;
	struct mafh_exec_result x;
	struct mafh_error err = {0};
	const char *cat[] = {"cat", NULL};
	const char *count[] = {"wc", "-c", NULL};
	const char *ignores[] = {"true", NULL};
	const char *tty[] = {"sh", "-c", "test -t 0 && echo tty; exec wc -c", NULL};
	size_t big_len = 4u << 20;
	char *big = malloc(big_len);

	(void)state;
	assert_non_null(big);
	memset(big, 'x', big_len);
	assert_true(mafh_backend_caps(b) & MAFH_CAP_EXEC_STDIN);
	assert_int_equal(mafh_backend_exec_input(b, cat, "{\"value\":1}\n", 12, 5000, 1024, &x,
						 &err), 0);
	assert_int_equal(x.exit_code, 0);
	assert_int_equal(x.out_len, 12);
	assert_memory_equal(x.out, "{\"value\":1}\n", 12);
	mafh_exec_result_clear(&x);
	/* Past a pipe's capacity. */
	assert_int_equal(mafh_backend_exec_input(b, count, big, big_len, 10000, 64, &x, &err), 0);
	assert_int_equal(x.exit_code, 0);
	assert_int_equal(strtoul(x.out, NULL, 10), big_len);
	mafh_exec_result_clear(&x);
	/* Not read at all. */
	assert_int_equal(mafh_backend_exec_input(b, ignores, big, big_len, 5000, 64, &x, &err), 0);
	assert_int_equal(x.exit_code, 0);
	mafh_exec_result_clear(&x);
	/* Empty, and NULL with no bytes: an empty stdin, not a terminal. */
	assert_int_equal(mafh_backend_exec_input(b, tty, NULL, 0, 5000, 64, &x, &err), 0);
	assert_int_equal(x.exit_code, 0);
	assert_int_equal(strtoul(x.out, NULL, 10), 0);
	mafh_exec_result_clear(&x);
	assert_int_equal(mafh_backend_exec_input(b, cat, NULL, 3, 5000, 64, &x, &err),
			 MAFH_EINVAL);
	/* The latency wrapper passes it on. */
	assert_int_equal(mafh_backend_latency_new(b, 0, &lat), 0);
	assert_true(mafh_backend_caps(lat) & MAFH_CAP_EXEC_STDIN);
	assert_int_equal(mafh_backend_exec_input(lat, cat, "abc", 3, 5000, 64, &x, &err), 0);
	assert_int_equal(x.out_len, 3);
	assert_memory_equal(x.out, "abc", 3);
	mafh_exec_result_clear(&x);
	mafh_backend_free(lat);
	free(big);
}

/* ---- errors ------------------------------------------------------------------------------- */

/* A failure returns the errno of the system call that failed, not one catch-all code; what
 * is not a failure (absence, a file that is not regular, a program's exit) stays a result. */
static void test_errors_keep_errno(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_read_result rr;
	struct mafh_exec_result x;
	struct mafh_stat st;
	struct mafh_error err = {0};
	const char *none[] = {"/nonexistent/prog", NULL};
	const char *noexec[] = {NULL, NULL};
	char name[251];

	(void)state;
	/* A path component that is a regular file. */
	assert_int_equal(mafh_backend_write_file(b, at("file"), "x", 1, NULL, &err), 0);
	assert_int_equal(mafh_backend_write_file(b, at("file/below"), "x", 1, NULL, &err),
			 -ENOTDIR);
	assert_int_equal(err.code, -ENOTDIR);
	assert_non_null(strstr(err.message, "Not a directory"));
	assert_string_equal(mafh_strerror(err.code), "Not a directory");
	assert_int_equal(mafh_backend_read_file(b, at("file/below"), 10, &rr, &err), -ENOTDIR);
	assert_int_equal(mafh_backend_stat(b, at("file/below"), &st, &err), -ENOTDIR);
	/* A directory: read as a file it is a status, written over it is EISDIR (rename). */
	assert_int_equal(mkdir(at("d"), 0755), 0);
	assert_int_equal(mafh_backend_read_file(b, at("d"), 10, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_NOT_REGULAR);
	assert_int_equal(mafh_backend_write_file(b, at("d"), "x", 1, NULL, &err), -EISDIR);
	/* Absence is still a status, not ENOENT. */
	assert_int_equal(mafh_backend_read_file(b, at("none/none"), 10, &rr, &err), 0);
	assert_int_equal(rr.status, MAFH_READ_ABSENT);
	assert_int_equal(mafh_backend_stat(b, at("none/none"), &st, &err), 0);
	assert_false(st.exists);
	/* Bad arguments stay MAFH_EINVAL: a relative path, a name too long for the temporary
	 * name, "..". */
	assert_int_equal(mafh_backend_read_file(b, "rel", 10, &rr, &err), MAFH_EINVAL);
	assert_int_equal(mafh_backend_stat(b, "rel", &st, &err), MAFH_EINVAL);
	memset(name, 'n', 250);
	name[250] = '\0';
	assert_int_equal(mafh_backend_write_file(b, at(name), "x", 1, NULL, &err), MAFH_EINVAL);
	assert_non_null(strstr(err.message, "the file name in"));
	assert_int_equal(mafh_backend_write_file(b, at("d/.."), "x", 1, NULL, &err), MAFH_EINVAL);
	/* A program that cannot run is an exit code, as env gives it: 127 not found, 126 not
	 * executable. */
	assert_int_equal(mafh_backend_exec(b, none, 5000, 10, &x, &err), 0);
	assert_int_equal(x.exit_code, 127);
	mafh_exec_result_clear(&x);
	assert_int_equal(mafh_backend_write_file(b, at("noexec"), "#!/bin/sh\n", 10, NULL, &err),
			 0);
	noexec[0] = at("noexec");
	assert_int_equal(mafh_backend_exec(b, noexec, 5000, 10, &x, &err), 0);
	assert_int_equal(x.exit_code, 126);
	assert_non_null(strstr(x.err, "cannot execute"));
	mafh_exec_result_clear(&x);
	mafh_backend_free(b);
}

/* Writes ro/f and then ro/sub/f under dir, where ro is a read-only tmpfs mounted in a child
 * of its own mount namespace (nothing is left mounted when it ends). Returns the errno the
 * writes failed with (both must agree), 0 if they did not fail, or -1 where the mount cannot
 * be made (not root, or no namespaces). */
static int write_read_only(void)
{
	int status;
	pid_t pid;

	assert_int_equal(mkdir(at("ro"), 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct mafh_backend *b = NULL;
		int r;

		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", at("ro"), "tmpfs", MS_RDONLY, NULL) < 0)
			_exit(255);
		if (mafh_backend_local_new(NULL, &b) < 0)
			_exit(254);
		r = mafh_backend_write_file(b, at("ro/f"), "x", 1, NULL, NULL);
		if (r == mafh_backend_write_file(b, at("ro/sub/f"), "x", 1, NULL, NULL))
			_exit(-r);
		_exit(253);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 254);
	assert_int_not_equal(WEXITSTATUS(status), 253);
	return WEXITSTATUS(status) == 255 ? -1 : WEXITSTATUS(status);
}

static void test_read_only_dir(void **state)
{
	struct mafh_backend *b;
	struct mafh_error err = {0};
	int e;

	(void)state;
	if (geteuid() != 0) {
		/* Root would pass a mode of 0555; anyone else is refused with EACCES. */
		b = local();
		assert_int_equal(mkdir(at("locked"), 0555), 0);
		assert_int_equal(mafh_backend_write_file(b, at("locked/f"), "x", 1, NULL, &err),
				 -EACCES);
		assert_non_null(strstr(err.message, "Permission denied"));
		mafh_backend_free(b);
		return;
	}
	e = write_read_only();
	if (e < 0)
		skip();
	assert_int_equal(e, EROFS);
}

/* ---- wait_change -------------------------------------------------------------------------- */

static void test_wait_change(void **state)
{
	struct mafh_backend *b = local(), *lat = NULL;
	struct mafh_error err = {0};
	const char *const names1[] = {"host_tool_calls/0001.request.json", "program_exit_code",
				      NULL};
	const char *const names2[] = {"host_tool_calls/0002.request.json", "program_exit_code",
				      NULL};
	char ht[300];
	struct publisher p = {0};

	(void)state;
	assert_true(mafh_backend_caps(b) & MAFH_CAP_WAIT_CHANGE);
	snprintf(ht, sizeof(ht), "%s", at("host_tools"));
	/* The directory does not exist yet: nothing can appear, the wait ends at its
	 * deadline (the timeouts here are safety nets, not measurements). */
	assert_int_equal(mafh_backend_wait_change(b, ht, names1, 50, &err), 0);
	assert_int_equal(mkdir(ht, 0755), 0);
	/* Nothing happens: 0 at the deadline. */
	assert_int_equal(mafh_backend_wait_change(b, ht, names1, 50, &err), 0);
	/* The subdirectory is made and the request renamed into it while we wait. */
	p.mkdir_path = at("host_tools/host_tool_calls");
	p.path = at("host_tools/host_tool_calls/0001.request.json");
	p.pause_ms = 100;
	assert_int_equal(pthread_create(&p.thread, NULL, publish, &p), 0);
	assert_int_equal(mafh_backend_wait_change(b, ht, names1, 20000, &err), 1);
	pthread_join(p.thread, NULL);
	/* Already there: at once. */
	assert_int_equal(mafh_backend_wait_change(b, ht, names1, 20000, &err), 1);
	/* The next request, renamed in later (the cached watch on host_tool_calls). */
	assert_int_equal(mafh_backend_wait_change(b, ht, names2, 50, &err), 0);
	p.mkdir_path = NULL;
	p.path = at("host_tools/host_tool_calls/0002.request.json");
	assert_int_equal(pthread_create(&p.thread, NULL, publish, &p), 0);
	assert_int_equal(mafh_backend_wait_change(b, ht, names2, 20000, &err), 1);
	pthread_join(p.thread, NULL);
	/* Several files renamed in between waits (requests from threads at once): a wait for
	 * each sees it, whichever wait took their events (a wait that missed one would end at
	 * its deadline with 0). */
	{
		char path[5][600];
		int i;

		p.pause_ms = 0;
		for (i = 0; i < 5; i++) {
			snprintf(path[i], sizeof(path[i]), "%s/%04d.request.json",
				 at("host_tools/host_tool_calls"), 5 + i);
			p.path = path[i];
			publish(&p);
		}
		for (i = 0; i < 5; i++) {
			char name[64];

			snprintf(name, sizeof(name), "host_tool_calls/%04d.request.json", 5 + i);
			assert_int_equal(mafh_backend_wait_change(b, ht,
								  (const char *const[]){name, NULL},
								  20000, &err), 1);
		}
		for (i = 0; i < 5; i++)
			unlink(path[i]);
	}
	/* A request written in place (no rename: the program may write request files itself)
	 * is not waited for by event, but every wait begins with a look: a later wait sees it.
	 * (The loop bound is a safety net, not a measurement.) */
	{
		char path[600];
		int fd, i, r = 0;

		snprintf(path, sizeof(path), "%s", at("host_tools/host_tool_calls/0003.request.json"));
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "{}", 2), 2);
		close(fd);
		for (i = 0; i < 200 && r != 1; i++)
			r = mafh_backend_wait_change(b, ht,
						     (const char *const[]){"host_tool_calls/0003."
									   "request.json", NULL},
						     50, &err);
		assert_int_equal(r, 1);
		unlink(path);
	}
	/* The exit marker, in the top directory. */
	p.path = at("host_tools/program_exit_code");
	assert_int_equal(pthread_create(&p.thread, NULL, publish, &p), 0);
	assert_int_equal(mafh_backend_wait_change(b, ht,
						  (const char *const[]){"host_tool_calls/0003."
									"request.json",
									"program_exit_code",
									NULL},
						  20000, &err), 1);
	pthread_join(p.thread, NULL);
	/* The directory replaced under the cached watch: the wait still sees the new one. */
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", ht,
			 at("host_tools/host_tool_calls"));
		assert_int_equal(system(cmd), 0);
	}
	p.path = at("host_tools/host_tool_calls/0004.request.json");
	assert_int_equal(pthread_create(&p.thread, NULL, publish, &p), 0);
	for (int i = 0; i < 3; i++) {
		/* A false alarm is allowed (the old watch went away): wait again. */
		if (mafh_backend_wait_change(b, ht,
					     (const char *const[]){"host_tool_calls/0004."
								   "request.json", NULL},
					     20000, &err) == 1 &&
		    access(p.path, F_OK) == 0)
			break;
		assert_true(i < 2);
	}
	pthread_join(p.thread, NULL);
	/* A symlink planted as the directory is not followed: a wait on it does not fail the
	 * run, it only looks (here: the target holds the name, but it is not seen there). */
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && touch '%s/x' && ln -s '%s' '%s'",
			 at("elsewhere"), at("elsewhere"), at("elsewhere"), at("link"));
		assert_int_equal(system(cmd), 0);
		assert_int_equal(mafh_backend_wait_change(b, at("link"),
							  (const char *const[]){"x", NULL}, 30,
							  &err), 0);
	}
	/* Bad arguments. */
	assert_int_equal(mafh_backend_wait_change(b, "relative", names1, 10, &err), MAFH_EINVAL);
	assert_int_equal(mafh_backend_wait_change(b, ht, (const char *const[]){"../x", NULL}, 10,
						  &err), MAFH_EINVAL);
	assert_int_equal(mafh_backend_wait_change(b, ht, (const char *const[]){"a/b/c", NULL}, 10,
						  &err), MAFH_EINVAL);
	assert_int_equal(mafh_backend_wait_change(b, ht, NULL, 10, &err), MAFH_EINVAL);
	/* The latency wrapper simulates a backend without notification. */
	assert_int_equal(mafh_backend_latency_new(b, 0, &lat), 0);
	assert_false(mafh_backend_caps(lat) & MAFH_CAP_WAIT_CHANGE);
	assert_int_equal(mafh_backend_wait_change(lat, ht, names1, 10, &err), MAFH_ENOTSUP);
	mafh_backend_free(lat);
}

static int64_t ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (int64_t)(t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

static void test_latency(void **state)
{
	struct mafh_backend *b = NULL;
	struct mafh_read_result rr;
	struct mafh_stat st;
	struct timespec t0;

	(void)state;
	assert_int_equal(mafh_backend_latency_new(local(), 30, &b), 0);
	assert_string_equal(mafh_backend_launcher_path(b), "/bin/true");
	assert_true((mafh_backend_caps(b) & MAFH_CAPS_REQUIRED) == MAFH_CAPS_REQUIRED);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mafh_backend_write_file(b, at("lat"), "x", 1, NULL, NULL), 0);
	assert_int_equal(mafh_backend_read_file(b, at("lat"), 10, &rr, NULL), 0);
	assert_int_equal(rr.status, MAFH_READ_OK);
	mafh_read_result_clear(&rr);
	assert_int_equal(mafh_backend_stat(b, at("lat"), &st, NULL), 0);
	assert_true(ms_since(&t0) >= 90);
	mafh_backend_free(b);
	/* Ownership of inner passes even on failure. */
	assert_int_equal(mafh_backend_latency_new(local(), -1, &b), MAFH_EINVAL);
	assert_null(b);
}

static int fake_exec(void *ctx, const char *const *argv, int64_t timeout_ms, size_t out_cap,
		     struct mafh_exec_result *res, struct mafh_error *err)
{
	(void)ctx;
	(void)argv;
	(void)timeout_ms;
	(void)out_cap;
	(void)res;
	(void)err;
	return 0;
}

static int destroyed;

static void fake_destroy(void *ctx)
{
	(void)ctx;
	destroyed++;
}

static void test_table_checks(void **state)
{
	struct mafh_backend_ops ops;
	struct mafh_backend *b = NULL;
	struct mafh_error err = {0};
	struct mafh_read_result rr;
	struct mafh_registry *reg;
	struct mafh_run_options o;
	struct mafh_run *run = NULL;

	(void)state;
	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_FILES_IN;
	ops.exec = fake_exec;
	ops.destroy = fake_destroy;
	/* FILES_IN declared without write_file: refused, ctx released. */
	destroyed = 0;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), MAFH_EINVAL);
	assert_int_equal(destroyed, 1);
	ops.caps = MAFH_CAP_EXEC;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), 0);
	assert_string_equal(mafh_backend_launcher_path(b), "maf-launch");
	assert_int_equal(mafh_backend_read_file(b, "/x", 1, &rr, &err), MAFH_ENOTSUP);
	assert_non_null(strstr(err.message, "FILES_OUT"));
	/* A run over it is refused at creation, naming what is missing. */
	assert_int_equal(mafh_registry_new(&reg), 0);
	mafh_run_options_init(&o);
	o.run_dir = "/tmp/r";
	o.program = "";
	assert_int_equal(mafh_run_new(reg, b, &o, &run, &err), MAFH_ENOTSUP);
	assert_null(run);
	assert_non_null(strstr(err.message, "FILES_IN"));
	mafh_registry_free(reg);
	mafh_backend_free(b);
	assert_int_equal(destroyed, 2);
	ops.size = 0;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), MAFH_EINVAL);
	/* EXEC_STDIN declared without exec_input: refused, with a sentence naming it. */
	ops.size = sizeof(ops);
	ops.caps = MAFH_CAP_EXEC | MAFH_CAP_EXEC_STDIN;
	destroyed = 0;
	assert_int_equal(mafh_backend_new(&ops, &b, &err), MAFH_EINVAL);
	assert_null(b);
	assert_int_equal(destroyed, 1);
	assert_non_null(strstr(err.message, "MAFH_CAP_EXEC_STDIN without an exec_input"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_reusing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors_keep_errno, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_latency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_change, setup, teardown),
		cmocka_unit_test(test_table_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
