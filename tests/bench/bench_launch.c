/* make bench-launch: the time for the exec of `maf-launch run` to return, against upstream's
 * shell launcher (`sh R/host_tools/run_program.sh`), for the same trivial program
 * (`python3 R/host_tools/program.py`, which does nothing).
 *
 * Each is started the way a backend's exec starts it: posix_spawn with stdout and stderr on
 * pipes, both read to EOF, then the exit status. The clock runs from just before the spawn
 * to the status. They alternate within one run (which goes first alternates too), each in a
 * fresh run directory, and each run is waited for (untimed: its exit marker) before the next
 * starts, so both see the same machine. The run directories are made under $TMPDIR (default
 * /tmp): every launch creates files there, and the file system's cost of a new inode is part
 * of both launchers' figures. That cost is timed before the launches and printed: on ext4
 * without a journal it grows with every inode freed in the last half minute or so, which
 * the kernel steps over rather than reuse. So the run directories are kept until the last
 * launch, not removed one by one, which would make the bench's own clean-up part of what it
 * measures; --delete-each removes each as soon as its run has ended, to see a host that
 * reclaims every run before the next. `maf-launch --version` is timed the same way as the
 * launches, as the floor: the cost of starting and ending the launcher itself. Prints
 * figures only. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { OURS, SHELL, FLOOR, KINDS };
static const char *const kind_name[KINDS] = {"maf-launch run", "sh run_program.sh",
					     "maf-launch --version"};

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bench-launch: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0)
		die("cannot write %s", path);
}

static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		die("cannot read %s", path);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		die("cannot read %s", path);
	close(fd);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return buf;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static void remove_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The median microseconds to make one new, empty file in dir (in a directory of its own). */
static double create_cost_us(const char *dir)
{
	enum { N = 200 };
	char sub[4200], path[4300];
	long long t[N];
	int i;

	snprintf(sub, sizeof(sub), "%s/create-cost", dir);
	if (mkdir(sub, 0755) < 0)
		die("cannot create %s", sub);
	for (i = 0; i < N; i++) {
		long long t0;
		int fd;

		snprintf(path, sizeof(path), "%s/%d", sub, i);
		t0 = now_ns();
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		t[i] = now_ns() - t0;
		if (fd < 0)
			die("cannot create %s", path);
		close(fd);
	}
	qsort(t, N, sizeof(long long), cmp_ll);
	return (double)t[N / 2] / 1e3;
}

/* Spawns argv with stdout and stderr on pipes, reads both to EOF, reaps it. Returns the
 * nanoseconds from before the spawn to the status; *out gets what it printed on stdout. */
static long long timed(char *const *argv, char *out, size_t out_size, int *status)
{
	posix_spawn_file_actions_t fa;
	int o[2], e[2], open_fds = 2;
	size_t got = 0;
	long long t0, t1;
	pid_t pid;

	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
		die("cannot create a pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, o[1], 1);
	posix_spawn_file_actions_adddup2(&fa, e[1], 2);
	t0 = now_ns();
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		die("cannot start %s", argv[0]);
	close(o[1]);
	close(e[1]);
	{
		struct pollfd pf[2] = {{.fd = o[0], .events = POLLIN}, {.fd = e[0], .events = POLLIN}};

		while (open_fds > 0) {
			char sink[4096];
			int i;

			if (poll(pf, 2, -1) < 0 && errno != EINTR)
				die("poll failed");
			for (i = 0; i < 2; i++) {
				ssize_t n;

				if (!pf[i].revents)
					continue;
				if (i == 0 && got + 1 < out_size)
					n = read(pf[i].fd, out + got, out_size - 1 - got);
				else
					n = read(pf[i].fd, sink, sizeof(sink));
				if (n <= 0) {
					pf[i].fd = -1;
					open_fds--;
				} else if (i == 0 && got + 1 < out_size) {
					got += (size_t)n;
				}
			}
		}
	}
	waitpid(pid, status, 0);
	t1 = now_ns();
	out[got] = '\0';
	close(o[0]);
	close(e[0]);
	posix_spawn_file_actions_destroy(&fa);
	return t1 - t0;
}

static void wait_exit(const char *run_dir)
{
	char marker[4200], code[16] = "";
	long long deadline = now_ns() + 60000000000LL;
	int fd;

	snprintf(marker, sizeof(marker), "%s/host_tools/program_exit_code", run_dir);
	while ((fd = open(marker, O_RDONLY | O_CLOEXEC)) < 0) {
		if (now_ns() > deadline)
			die("no exit marker in %s after 60 s", run_dir);
		usleep(2000);
	}
	if (read(fd, code, sizeof(code) - 1) < 0 || strcmp(code, "0") != 0)
		die("the program in %s did not exit 0", run_dir);
	close(fd);
}

static double quantile_ms(long long *t, int n, double q)
{
	return t[(int)(q * (n - 1) + 0.5)] / 1e6;
}

/* The file `python3` names on PATH, as both launchers will find it: the figures depend on
 * it (a wrapper script such as pyenv's shim starts more processes beside the launch). */
static void which_python3(char *out, size_t size)
{
	const char *path = getenv("PATH"), *p;

	snprintf(out, size, "not on PATH");
	for (p = path; p && *p;) {
		size_t n = strcspn(p, ":");
		char cand[4200];

		if (n > 0 && n < 4096) {
			snprintf(cand, sizeof(cand), "%.*s/python3", (int)n, p);
			if (access(cand, X_OK) == 0) {
				snprintf(out, size, "%s", cand);
				return;
			}
		}
		p += n;
		if (*p == ':')
			p++;
	}
}

int main(int argc, char **argv)
{
	const char *launcher = NULL, *reference = NULL;
	int iterations = 200, warmup = 5, delete_each = 0, i, k;
	double create_us;
	const char *tmp = getenv("TMPDIR");
	char base[1024];
	long long *times[KINDS];
	size_t ref_len;
	char *ref;
	struct stat st;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--launcher") == 0 && i + 1 < argc)
			launcher = argv[++i];
		else if (strcmp(argv[i], "--reference") == 0 && i + 1 < argc)
			reference = argv[++i];
		else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			iterations = atoi(argv[++i]);
		else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (strcmp(argv[i], "--delete-each") == 0)
			delete_each = 1;
		else
			die("usage: bench_launch --launcher PATH --reference run_program.sh "
			    "[--iterations N] [--warmup N] [--delete-each]");
	}
	if (!launcher || !reference || iterations < 10 || warmup < 0)
		die("usage: bench_launch --launcher PATH --reference run_program.sh "
		    "[--iterations N (10 or more)] [--warmup N] [--delete-each]");
	ref = read_file(reference, &ref_len);
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(base, sizeof(base), "%s/maf-bench-launch-XXXXXX", tmp) >= (int)sizeof(base))
		die("the directory name %s is too long", tmp);
	if (!mkdtemp(base))
		die("cannot create a directory in %s", tmp);
	/* A run under an identity of its own passes through it to its run directory. */
	chmod(base, 0711);
	for (k = 0; k < KINDS; k++)
		times[k] = calloc((size_t)iterations, sizeof(long long));
	create_us = create_cost_us(base);

	for (i = -warmup; i < iterations; i++) {
		for (k = 0; k < KINDS; k++) {
			/* Rotate which goes first. */
			int kind = (k + (i + warmup)) % KINDS, status;
			char run[4096], ht[4200], path[4300], out[4096];
			long long t;

			snprintf(run, sizeof(run), "%s/%d-%d", base, kind, i + warmup);
			snprintf(ht, sizeof(ht), "%s/host_tools", run);
			if (mkdir(run, 0755) < 0 || mkdir(ht, 0755) < 0)
				die("cannot create %s", run);
			snprintf(path, sizeof(path), "%s/program.py", ht);
			write_file(path, "pass\n", 5);
			snprintf(path, sizeof(path), "%s/run_program.sh", ht);
			write_file(path, ref, ref_len);
			if (kind == OURS) {
				char prog[4300];
				char *const av[] = {(char *)launcher, "run", "--run-dir", run, "--",
						    "python3", prog, NULL};

				snprintf(prog, sizeof(prog), "%s/program.py", ht);
				t = timed(av, out, sizeof(out), &status);
			} else if (kind == SHELL) {
				char *const av[] = {"sh", path, NULL};

				t = timed(av, out, sizeof(out), &status);
			} else {
				char *const av[] = {(char *)launcher, "--version", NULL};

				t = timed(av, out, sizeof(out), &status);
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				die("%s did not exit 0", kind_name[kind]);
			if (kind != FLOOR) {
				if (!strstr(out, "maf-host-tools: session"))
					die("%s printed no session line", kind_name[kind]);
				wait_exit(run);
			}
			if (delete_each)
				remove_tree(run);
			if (i >= 0)
				times[kind][i] = t;
		}
	}
	remove_tree(base);

	printf("bench-launch: %d launches each, alternating, trivial python3 program, from the "
	       "spawn to the exit status with stdout and stderr read to EOF\n", iterations);
	{
		char py[4200];

		which_python3(py, sizeof(py));
		printf("  python3: %s\n", py);
	}
	{
		struct statfs fs;
		const char *kind = "other";

		if (statfs(tmp, &fs) == 0)
			kind = fs.f_type == TMPFS_MAGIC ? "tmpfs" : fs.f_type == EXT4_SUPER_MAGIC
				? "ext4" : "other";
		printf("  run directories under %s (%s; TMPDIR chooses), %s; a new file there "
		       "cost %.0f us before the launches\n", tmp, kind,
		       delete_each ? "each removed once its run has ended" : "removed at the end",
		       create_us);
	}
	for (k = 0; k < KINDS; k++) {
		qsort(times[k], (size_t)iterations, sizeof(long long), cmp_ll);
		printf("  %-22s median %7.3f ms   p10 %7.3f ms   p90 %7.3f ms\n", kind_name[k],
		       quantile_ms(times[k], iterations, 0.5), quantile_ms(times[k], iterations, 0.1),
		       quantile_ms(times[k], iterations, 0.9));
	}
	printf("  ratio (sh run_program.sh / maf-launch run): %.2fx\n",
	       quantile_ms(times[SHELL], iterations, 0.5) / quantile_ms(times[OURS], iterations, 0.5));
	if (stat(launcher, &st) == 0)
		printf("  maf-launch binary: %lld bytes\n", (long long)st.st_size);
	return 0;
}
