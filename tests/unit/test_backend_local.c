/* Unit tests for the local backend (host/backends/local*.c) and the latency wrapper
 * (host/backends/latency.c), in a temporary directory, and for the backend table checks; the
 * same backends as tasks (mafh_task_*), driven by a poll loop of the test's own. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
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

#include "mafhost.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/mafh-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, rel);
	return buf[i];
}

static struct mafh_backend *local(void)
{
	struct mafh_backend *b = NULL;

	assert_int_equal(mafh_backend_local_new("/bin/true", &b), 0);
	assert_non_null(b);
	return b;
}

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

/* A writer in another thread: after a pause, makes the directory (if asked) and publishes
 * a file the way the shim and the supervisor do, through NAME.part and a rename. */
struct publisher {
	pthread_t thread;
	const char *mkdir_path;
	const char *path;
	int pause_ms;
};

static void *publish(void *arg)
{
	struct publisher *p = arg;
	struct timespec ts = {.tv_sec = p->pause_ms / 1000,
			      .tv_nsec = (long)(p->pause_ms % 1000) * 1000000};
	char part[600];
	int fd;

	nanosleep(&ts, NULL);
	if (p->mkdir_path)
		mkdir(p->mkdir_path, 0755);
	snprintf(part, sizeof(part), "%s.part", p->path);
	fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, "{}", 2) != 2)
			perror("write");
		close(fd);
		rename(part, p->path);
	}
	return NULL;
}

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


/* ---- tasks (mafh_task_*), driven from a poll loop ---------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The most the tasks of one drive may take: a safety net against a hang, not a measurement. */
#define DRIVE_LIMIT_MS 60000

/* Advances tasks[0..n) from this one thread until every one is over, polling between turns
 * on everything they want and sleeping no later than the earliest time they name. res[i] is
 * task i's result. Returns how many turns it took. */
static int drive(struct mafh_task **tasks, const struct mafh_op_result **res, int n)
{
	struct pollfd *pf = calloc((size_t)n * MAFH_WANT_FDS, sizeof(*pf));
	char *over = calloc((size_t)n, 1);
	int64_t start = now_ms();
	int left = n, turns = 0;

	assert_non_null(pf);
	assert_non_null(over);
	while (left > 0) {
		int64_t until = INT64_MAX, now = now_ms(), wait;
		int nf = 0;

		assert_true(now - start < DRIVE_LIMIT_MS);
		turns++;
		for (int i = 0; i < n; i++) {
			struct mafh_want w;

			if (over[i])
				continue;
			if (mafh_task_advance(tasks[i], now, &w, &res[i]) == 0) {
				assert_non_null(res[i]);
				over[i] = 1;
				left--;
				continue;
			}
			assert_true(w.nfds >= 0 && w.nfds <= MAFH_WANT_FDS);
			for (int k = 0; k < w.nfds; k++)
				pf[nf++] = (struct pollfd){.fd = w.fds[k].fd,
							   .events = w.fds[k].events};
			if (w.until_ms < until)
				until = w.until_ms;
		}
		if (!left)
			break;
		/* A task that waits on nothing and no time would never be taken further. */
		assert_true(nf > 0 || until != INT64_MAX);
		wait = until == INT64_MAX ? 1000 : until - now_ms();
		wait = wait < 0 ? 0 : wait > 1000 ? 1000 : wait;
		assert_true(poll(pf, (nfds_t)nf, (int)wait) >= 0 || errno == EINTR);
	}
	free(pf);
	free(over);
	return turns;
}

/* One op as a task over b in slot *state, driven to its end: its result (copied; exec and
 * read data stay the task's, freed with it by the caller through *task). */
static struct mafh_op_result run_task(struct mafh_backend *b, void **state,
				      const struct mafh_op *op, struct mafh_task **task)
{
	const struct mafh_op_result *r = NULL;

	assert_int_equal(mafh_task_new(b, state, op, now_ms(), task, NULL), 0);
	drive(task, &r, 1);
	return *r;
}

static struct mafh_op op_of(enum mafh_op_kind kind)
{
	struct mafh_op op;

	memset(&op, 0, sizeof(op));
	op.size = sizeof(op);
	op.kind = kind;
	return op;
}

/* Whether process pid is gone: no longer there, or a zombie (killed, not yet reaped by its
 * new parent). */
static int process_gone(long pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Waits (a safety net of 5 s) for pid to be gone: SIGKILL is delivered asynchronously. */
static int process_ends(long pid)
{
	for (int i = 0; i < 500; i++) {
		if (process_gone(pid))
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A number the file at path holds, waited for (a safety net of 10 s) while task, when not
 * NULL, goes on. */
static long number_in(const char *path, struct mafh_task *task)
{
	for (int i = 0; i < 1000; i++) {
		char buf[32] = "";
		struct mafh_want w;
		const struct mafh_op_result *r;
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			close(fd);
			if (n > 0 && buf[n - 1] == '\n')
				return strtol(buf, NULL, 10);
		}
		if (task)
			assert_int_equal(mafh_task_advance(task, now_ms(), &w, &r), 1);
		usleep(10000);
	}
	fail_msg("%s was not written", path);
	return -1;
}

static void test_task_exec(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	void *slot = NULL;
	const char *big[] = {"sh", "-c", "head -c 3000000 /dev/zero; head -c 200000 /dev/zero >&2; "
			     "exit 5", NULL};
	const char *whole[] = {"head", "-c", "1500000", "/dev/urandom", NULL};
	const char *none[] = {"/nonexistent/prog", NULL};

	(void)state;
	/* Large output: stdout kept up to the op's cap and stderr to 64 KiB, the rest drained
	 * (the command would block on a full pipe otherwise, and never exit). */
	op.argv = big;
	op.timeout_ms = 20000;
	op.out_cap = 1u << 20;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	/* It waits on descriptors: the two pipes and the child's pidfd. */
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 1);
	assert_true(w.nfds >= 2);
	assert_true(w.until_ms <= now_ms() + 20000);
	mafh_task_free(t);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_int_equal(r.exec.exit_code, 5);
	assert_false(r.exec.timed_out);
	assert_int_equal(r.exec.out_len, 1u << 20);
	assert_int_equal(r.exec.err_len, 64u << 10);
	for (size_t i = 0; i < r.exec.out_len; i++)
		if (r.exec.out[i] != 0)
			fail_msg("byte %zu of the output is %d", i, r.exec.out[i]);
	mafh_task_free(t);
	/* All of a large output, under the cap. */
	op.argv = whole;
	op.out_cap = 4u << 20;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, 1500000);
	mafh_task_free(t);
	/* Not found: 127, and the sentence. */
	op.argv = none;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 127);
	assert_non_null(strstr(r.exec.err, "not found"));
	mafh_task_free(t);
	/* Checked before any backend sees it. */
	op.argv = whole;
	op.len = 3;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), MAFH_EINVAL);
	assert_null(t);
	assert_null(slot);      /* an exec keeps nothing in the slot */
	mafh_backend_free(b);
}

static void test_task_exec_timeout(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg;

	(void)state;
	/* A command and a process it started in the background, both past the timeout: the
	 * whole process group is killed. */
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo out; sleep 30",
		 at("bg.pid"));
	op.argv = argv;
	op.timeout_ms = 300;
	op.out_cap = 100;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_true(r.exec.timed_out);
	assert_int_equal(r.exec.exit_code, -1);
	/* What came before the kill is kept. */
	assert_int_equal(r.exec.out_len, 4);
	assert_memory_equal(r.exec.out, "out\n", 4);
	mafh_task_free(t);
	bg = number_in(at("bg.pid"), NULL);
	assert_true(bg > 0);
	assert_true(process_ends(bg));
	mafh_backend_free(b);
}

static void test_task_exec_grandchild(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg;

	(void)state;
	/* The command exits at once, leaving a process that holds its stdout and stderr for
	 * 30 s: the exec ends with the command, well within its own timeout of 20 s (were it
	 * held by the pipes, it would end timed out). */
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo started", at("bg.pid"));
	op.argv = argv;
	op.timeout_ms = 20000;
	op.out_cap = 100;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_false(r.exec.timed_out);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, 8);
	assert_memory_equal(r.exec.out, "started\n", 8);
	mafh_task_free(t);
	/* It is left alone: only a timeout kills the group. */
	bg = number_in(at("bg.pid"), NULL);
	assert_false(process_gone(bg));
	kill((pid_t)bg, SIGKILL);
	mafh_backend_free(b);
}

/* A task freed under way kills the command and its group, and reaps the command. */
static void test_task_exec_abandoned(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	void *slot = NULL;
	char cmd[600];
	const char *argv[] = {"sh", "-c", cmd, NULL};
	long bg, pid;

	(void)state;
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s'; echo $$ > '%s'; wait",
		 at("bg.pid"), at("sh.pid"));
	op.argv = argv;
	op.timeout_ms = 60000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	pid = number_in(at("sh.pid"), t);
	bg = number_in(at("bg.pid"), t);
	assert_false(process_gone(pid));
	mafh_task_free(t);
	/* Reaped by the free itself: not even a zombie is left of the command. */
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_true(process_ends(bg));
	mafh_backend_free(b);
}

static void test_task_exec_input(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_op_result r;
	void *slot = NULL;
	const char *cat[] = {"cat", NULL};
	const char *ignores[] = {"true", NULL};
	const char *tty[] = {"sh", "-c", "test -t 0 && echo tty; exec wc -c", NULL};
	size_t len = 3u << 20;
	char *in = malloc(len);

	(void)state;
	assert_non_null(in);
	for (size_t i = 0; i < len; i++)
		in[i] = (char)('a' + i % 26);
	/* Past a pipe's capacity, both ways. */
	op.argv = cat;
	op.data = in;
	op.len = len;
	op.timeout_ms = 20000;
	op.out_cap = 4u << 20;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(r.exec.out_len, len);
	assert_memory_equal(r.exec.out, in, len);
	mafh_task_free(t);
	/* Not read at all. */
	op.argv = ignores;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	mafh_task_free(t);
	/* Empty: an empty stdin, not /dev/null's absence of one nor a terminal. */
	op.argv = tty;
	op.data = "";
	op.len = 0;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.exec.exit_code, 0);
	assert_int_equal(strtoul(r.exec.out, NULL, 10), 0);
	mafh_task_free(t);
	free(in);
	mafh_backend_free(b);
}

/* Publishes path the way the shim does: path.part written, then renamed to path. */
static void publish_now(const char *path)
{
	struct publisher p = {.path = path};

	publish(&p);
	assert_int_equal(access(path, F_OK), 0);
}

static void test_task_wait(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_WAIT_UNTIL);
	struct mafh_want w;
	const struct mafh_op_result *r;
	const char *const names[] = {"host_tool_calls/0001.request.json", "program_exit_code",
				     NULL};
	char ht[300];
	void *slot = NULL;
	int64_t t0;

	(void)state;
	snprintf(ht, sizeof(ht), "%s", at("host_tools"));
	assert_int_equal(mkdir(ht, 0755), 0);
	op.wait_dir = ht;
	op.wait_names = names;
	/* Nothing comes: woke 0 at until_ms, having waited on the inotify descriptor. */
	t0 = now_ms();
	op.until_ms = t0 + 100;
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_non_null(slot);  /* the watches are the slot's */
	assert_int_equal(mafh_task_advance(t, t0, &w, &r), 1);
	assert_int_equal(w.nfds, 1);
	assert_int_equal(w.fds[0].events, POLLIN);
	assert_int_equal(w.until_ms, op.until_ms);
	drive(&t, &r, 1);
	assert_int_equal(r->error, 0);
	assert_int_equal(r->woke, 0);
	assert_true(now_ms() >= op.until_ms);
	mafh_task_free(t);
	/* A file made while it waits, in a subdirectory that did not exist when it started: it
	 * wakes (at until_ms, 20 s on, it would have woke 0). */
	op.until_ms = now_ms() + 20000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	assert_int_equal(mkdir(at("host_tools/host_tool_calls"), 0755), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/host_tool_calls/0001.request.json"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* Already there: over at its start. */
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 0);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* The exit marker, in the top directory, from the same slot's kept watches. */
	op.wait_names = (const char *const[]){"host_tool_calls/0002.request.json",
					      "program_exit_code", NULL};
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/program_exit_code"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	assert_int_equal(unlink(at("host_tools/program_exit_code")), 0);
	/* The directory removed while a wait is under way: woken (a false alarm), and the next
	 * wait watches the new one. */
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	{
		char cmd[700];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", ht,
			 at("host_tools/host_tool_calls"));
		assert_int_equal(system(cmd), 0);
	}
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	publish_now(at("host_tools/host_tool_calls/0002.request.json"));
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 1);
	mafh_task_free(t);
	/* Bad names: an error of the op, with a sentence. */
	op.wait_names = (const char *const[]){"../x", NULL};
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 0);
	assert_int_equal(r->error, MAFH_EINVAL);
	assert_non_null(strstr(r->detail.message, "NAME or SUB/NAME"));
	mafh_task_free(t);
	/* Without a directory: a timer, on no descriptor. */
	op.wait_dir = NULL;
	op.wait_names = NULL;
	op.until_ms = now_ms() + 50;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &r), 1);
	assert_int_equal(w.nfds, 0);
	assert_int_equal(w.until_ms, op.until_ms);
	drive(&t, &r, 1);
	assert_int_equal(r->woke, 0);
	assert_true(now_ms() >= op.until_ms);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

/* One read of a stream in slot: its bytes appended to buf (*len), its end in *ended. */
static void stream_read(struct mafh_backend *b, void **slot, int64_t for_ms, char *buf,
			size_t *len, size_t cap, int *ended, char *why, size_t why_size)
{
	struct mafh_op op = op_of(MAFH_OP_STREAM_READ);
	struct mafh_task *t = NULL;
	struct mafh_op_result r;

	op.cap = cap - *len < 65536 ? cap - *len : 65536;
	op.until_ms = now_ms() + for_ms;
	r = run_task(b, slot, &op, &t);
	assert_int_equal(r.error, 0);
	if (r.stream_len)
		memcpy(buf + *len, r.stream_data, r.stream_len);
	*len += r.stream_len;
	*ended = r.stream_ended;
	if (why)
		snprintf(why, why_size, "%s", r.detail.message);
	mafh_task_free(t);
}

static void test_task_stream(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	void *slot = NULL;
	const char *cat[] = {"cat", NULL};
	size_t big = 100000, len;
	char *out = malloc(big), *in = malloc(big);
	int ended;

	(void)state;
	assert_non_null(out);
	assert_non_null(in);
	for (size_t i = 0; i < big; i++)
		in[i] = (char)('A' + i % 26);
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = cat;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	assert_non_null(slot);
	mafh_task_free(t);
	/* Nothing written yet: a read waits on stdout and ends at its time with no bytes. */
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 100;
	op.until_ms = now_ms() + 50;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 1);
	assert_true(w.nfds >= 1);
	assert_int_equal(w.fds[0].events, POLLIN);
	drive(&t, &rp, 1);
	assert_int_equal(rp->error, 0);
	assert_int_equal(rp->stream_len, 0);
	assert_false(rp->stream_ended);
	mafh_task_free(t);
	/* Writes and reads, echoed: small ones, then one past a pipe's capacity. */
	for (int round = 0; round < 3; round++) {
		char line[32];

		snprintf(line, sizeof(line), "frame %d\n", round);
		op = op_of(MAFH_OP_STREAM_WRITE);
		op.data = line;
		op.len = strlen(line);
		r = run_task(b, &slot, &op, &t);
		assert_int_equal(r.error, 0);
		mafh_task_free(t);
		for (len = 0, ended = 0; len < strlen(line) && !ended;)
			stream_read(b, &slot, 10000, out, &len, big, &ended, NULL, 0);
		assert_false(ended);
		assert_int_equal(len, strlen(line));
		assert_memory_equal(out, line, len);
	}
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = in;
	op.len = big;
	op.timeout_ms = 20000;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	for (len = 0, ended = 0; len < big && !ended;)
		stream_read(b, &slot, 10000, out, &len, big, &ended, NULL, 0);
	assert_int_equal(len, big);
	assert_memory_equal(out, in, big);
	/* Closed: cat ends with its stdin, and the slot holds no stream after. */
	op = op_of(MAFH_OP_STREAM_CLOSE);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 10;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, now_ms(), &w, &rp), 0);
	assert_int_equal(rp->error, MAFH_EINVAL);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	free(in);
	free(out);
	mafh_backend_free(b);
}

static void test_task_stream_ends(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	void *slot = NULL;
	const char *says[] = {"sh", "-c", "echo bye; echo 'serve: refused' >&2; exit 3", NULL};
	char cmd[600];
	const char *quiet[] = {"sh", "-c", cmd, NULL};
	char out[64], why[256];
	size_t len = 0;
	int ended = 0;
	int64_t t0;
	long pid;

	(void)state;
	signal(SIGPIPE, SIG_IGN);   /* as a host does: a write to an ended command is EPIPE */
	/* Its output, then its end, with what it said on stderr as the sentence. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = says;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	while (!ended)
		stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, why, sizeof(why));
	assert_int_equal(len, 4);
	assert_memory_equal(out, "bye\n", 4);
	assert_non_null(strstr(why, "sh ended: serve: refused"));
	/* A write to it now: MAFH_EPIPE, with the sentence. (An exiting process may release
	 * its stdout before its stdin: a write can still go through for a moment.) */
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = "x\n";
	op.len = 2;
	for (int i = 0;; i++) {
		r = run_task(b, &slot, &op, &t);
		if (r.error || i == 500)
			break;
		mafh_task_free(t);
		usleep(10000);
	}
	assert_int_equal(r.error, MAFH_EPIPE);
	assert_non_null(strstr(r.detail.message, "refused"));
	mafh_task_free(t);
	/* Opened again in the same slot: a command that closes its stdout and goes on. Its
	 * stdout's end is the stream's; closing it kills it after a second's grace. */
	snprintf(cmd, sizeof(cmd), "echo $$ > '%s'; exec 1>&-; exec sleep 30", at("sh.pid"));
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = quiet;
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	len = 0;
	ended = 0;
	stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, why, sizeof(why));
	assert_true(ended);
	assert_int_equal(len, 0);
	assert_non_null(strstr(why, "closed its stdout"));
	pid = number_in(at("sh.pid"), NULL);
	assert_false(process_gone(pid));
	t0 = now_ms();
	op = op_of(MAFH_OP_STREAM_CLOSE);
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	/* It waited out the grace (sleep 30 does not end with its stdin), then killed and
	 * reaped the command. */
	assert_true(now_ms() - t0 >= 1000);
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	mafh_task_free(t);
	/* A stream left open is closed by the slot's free. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = (const char *[]){"cat", NULL};
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

/* Many execs at once from one thread: every one completes with its own result. */
#define CONCURRENT 200

static void test_task_concurrent(void **state)
{
	struct mafh_backend *b = local();
	struct mafh_task *t[CONCURRENT];
	const struct mafh_op_result *r[CONCURRENT];
	struct mafh_op op[CONCURRENT];
	char arg[CONCURRENT][16];
	const char *argv[CONCURRENT][5];
	void *slot[CONCURRENT];
	int64_t t0 = now_ms();
	int turns;

	(void)state;
	for (int i = 0; i < CONCURRENT; i++) {
		snprintf(arg[i], sizeof(arg[i]), "%d", i);
		argv[i][0] = "sh";
		argv[i][1] = "-c";
		argv[i][2] = "sleep 0.2; echo \"done $0\"";
		argv[i][3] = arg[i];
		argv[i][4] = NULL;
		op[i] = op_of(MAFH_OP_EXEC);
		op[i].argv = argv[i];
		op[i].timeout_ms = 50000;
		op[i].out_cap = 64;
		slot[i] = NULL;
		assert_int_equal(mafh_task_new(b, &slot[i], &op[i], now_ms(), &t[i], NULL), 0);
	}
	turns = drive(t, r, CONCURRENT);
	for (int i = 0; i < CONCURRENT; i++) {
		char want[32];

		snprintf(want, sizeof(want), "done %d\n", i);
		assert_int_equal(r[i]->error, 0);
		assert_false(r[i]->exec.timed_out);
		assert_int_equal(r[i]->exec.exit_code, 0);
		assert_int_equal(r[i]->exec.out_len, strlen(want));
		assert_memory_equal(r[i]->exec.out, want, strlen(want));
		mafh_task_free(t[i]);
	}
	/* For the record (not a condition): one after the other, they would take 40 s. */
	print_message("%d execs of 0.2 s from one thread: %lld ms, %d turns of poll\n",
		      CONCURRENT, (long long)(now_ms() - t0), turns);
	mafh_backend_free(b);
}

static void test_task_latency(void **state)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op;
	struct mafh_op_result r;
	struct mafh_want w;
	const struct mafh_op_result *rp;
	const char *echo[] = {"echo", "hi", NULL};
	void *slot = NULL;
	char out[16];
	size_t len = 0;
	int ended = 0;
	int64_t t0;

	(void)state;
	assert_int_equal(mafh_backend_latency_new(local(), 200, &b), 0);
	assert_false(mafh_backend_caps(b) & MAFH_CAP_WAIT_CHANGE);
	/* An exec: first the latency, a timer on no descriptor, then the local exec's. */
	op = op_of(MAFH_OP_EXEC);
	op.argv = echo;
	op.timeout_ms = 10000;
	op.out_cap = 16;
	t0 = now_ms();
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_true(w.until_ms >= t0 + 200);
	assert_int_equal(mafh_task_advance(t, w.until_ms, &w, &rp), 1);
	assert_true(w.nfds >= 2);
	drive(&t, &rp, 1);
	assert_int_equal(rp->exec.exit_code, 0);
	assert_int_equal(rp->exec.out_len, 3);
	assert_memory_equal(rp->exec.out, "hi\n", 3);
	mafh_task_free(t);
	/* A stream: its opening and writes cost the latency, its reads do not. */
	op = op_of(MAFH_OP_STREAM_OPEN);
	op.argv = (const char *[]){"cat", NULL};
	r = run_task(b, &slot, &op, &t);
	assert_int_equal(r.error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_WRITE);
	op.data = "abc";
	op.len = 3;
	t0 = now_ms();
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_true(w.until_ms >= t0 + 200);
	drive(&t, &rp, 1);
	assert_int_equal(rp->error, 0);
	mafh_task_free(t);
	op = op_of(MAFH_OP_STREAM_READ);
	op.cap = 16;
	op.until_ms = now_ms() + 10000;
	assert_int_equal(mafh_task_new(b, &slot, &op, now_ms(), &t, NULL), 0);
	if (mafh_task_advance(t, now_ms(), &w, &rp) == 1) {
		/* Not there yet: it waits on stdout, not on a timer of its own. */
		assert_true(w.nfds >= 1);
		assert_int_equal(w.until_ms, op.until_ms);
	}
	mafh_task_free(t);
	while (len < 3 && !ended)
		stream_read(b, &slot, 10000, out, &len, sizeof(out), &ended, NULL, 0);
	assert_int_equal(len, 3);
	assert_memory_equal(out, "abc", 3);
	/* A wait: a plain timer (the wrapper has no notification), with no latency. */
	op = op_of(MAFH_OP_WAIT_UNTIL);
	op.wait_dir = dir;
	op.wait_names = (const char *const[]){"x", NULL};
	t0 = now_ms();
	op.until_ms = t0 + 30;
	assert_int_equal(mafh_task_new(b, &slot, &op, t0, &t, NULL), 0);
	assert_int_equal(mafh_task_advance(t, t0, &w, &rp), 1);
	assert_int_equal(w.nfds, 0);
	assert_int_equal(w.until_ms, op.until_ms);
	mafh_task_free(t);
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
}

/* In a child of its own (the filter cannot be taken back): syscall denied with err by a
 * seccomp filter, then fn. Returns fn's exit code. */
static int with_syscall_denied(int syscall_nr, int err, int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

		if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), syscall_nr, 0) < 0 ||
		    seccomp_load(ctx) < 0)
			_exit(99);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Without pidfds: an exec looks at its child on a timer, and still ends with it. Exit code
 * 0, or the number of the check that failed. */
static int exec_without_pidfd(void)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_EXEC);
	struct mafh_want w;
	const struct mafh_op_result *r;
	const char *argv[] = {"sh", "-c", "sleep 30 & sleep 0.1; echo ok", NULL};
	void *slot = NULL;
	int64_t start, limit;

	if (mafh_backend_local_new(NULL, &b) < 0)
		return 1;
	op.argv = argv;
	op.timeout_ms = 20000;
	op.out_cap = 16;
	start = now_ms();
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 2;
	if (mafh_task_advance(t, start, &w, &r) != 1)
		return 3;
	if (w.nfds != 2 || w.until_ms > start + 50)
		return 4;       /* the pipes, and a look at most 50 ms on */
	limit = start + 15000;
	while (mafh_task_advance(t, now_ms(), &w, &r) == 1) {
		struct pollfd pf[MAFH_WANT_FDS];
		int64_t left = w.until_ms - now_ms();

		if (now_ms() > limit)
			return 5;
		for (int i = 0; i < w.nfds; i++)
			pf[i] = (struct pollfd){.fd = w.fds[i].fd, .events = w.fds[i].events};
		poll(pf, (nfds_t)w.nfds, left < 0 ? 0 : left > 1000 ? 1000 : (int)left);
	}
	if (r->error || r->exec.timed_out || r->exec.exit_code != 0 || r->exec.out_len != 3)
		return 6;
	mafh_task_free(t);
	mafh_backend_free(b);
	return 0;
}

/* Without inotify (EMFILE: the user out of instances): a wait is a timer, never an error,
 * and a name already there still ends it at once. */
static int wait_without_inotify(void)
{
	struct mafh_backend *b = NULL;
	struct mafh_task *t = NULL;
	struct mafh_op op = op_of(MAFH_OP_WAIT_UNTIL);
	struct mafh_want w;
	const struct mafh_op_result *r;
	void *slot = NULL;
	int64_t start = now_ms();

	if (mafh_backend_local_new(NULL, &b) < 0)
		return 1;
	op.wait_dir = dir;
	op.wait_names = (const char *const[]){"sub/present", NULL};
	op.until_ms = start + 20000;
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 2;
	if (mafh_task_advance(t, start, &w, &r) != 1)
		return 3;
	if (w.nfds != 0 || w.until_ms != op.until_ms)
		return 4;
	mafh_task_free(t);
	if (mkdir(at("sub"), 0755) < 0 || close(open(at("sub/present"), O_CREAT | O_WRONLY, 0644)))
		return 5;
	if (mafh_task_new(b, &slot, &op, start, &t, NULL) < 0)
		return 6;
	if (mafh_task_advance(t, start, &w, &r) != 0 || r->error || r->woke != 1)
		return 7;
	mafh_task_free(t);
	/* The table's call: 1, not an error. */
	if (mafh_backend_wait_change(b, dir, op.wait_names, 10, NULL) != 1)
		return 8;
	mafh_backend_state_free(b, slot);
	mafh_backend_free(b);
	return 0;
}

static void test_task_fallbacks(void **state)
{
	(void)state;
	assert_int_equal(with_syscall_denied(SCMP_SYS(pidfd_open), ENOSYS, exec_without_pidfd), 0);
	assert_int_equal(with_syscall_denied(SCMP_SYS(inotify_init1), EMFILE,
					     wait_without_inotify), 0);
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
		cmocka_unit_test_setup_teardown(test_task_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_grandchild, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_exec_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_stream_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_latency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_fallbacks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
