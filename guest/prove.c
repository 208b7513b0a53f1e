/* Proving that a pid names the supervisor of a run (prove.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "prove.h"
#include "util.h"

#define PROVE_CMDLINE_MAX 65536		/* bytes of /proc/P/cmdline looked at */

static void strip_slashes(const char *s, size_t *len)
{
	while (*len > 1 && s[*len - 1] == '/')
		(*len)--;
}

/* Finds the value of the last --run-dir among the options of a 'maf-launch run' argv, read
 * against run's table as run reads them (mafl_opt_next): options end at "--" or the first
 * word that is not one ('-' alone is not); --help, or an option run does not know, would
 * have ended run before it started a supervisor. args holds the words back to back, each
 * NUL-terminated. Returns the value or NULL. */
static const char *cmdline_run_dir(const char *args, size_t len)
{
	const struct mafl_command *run = &mafl_commands[MAFL_COMMAND_RUN];
	const char *run_dir = NULL, *p = args, *end = args + len, *w, *next, *v;
	const struct mafl_opt *valued = NULL;	/* the option this word is the value of */
	size_t index = 0;

	for (; p < end; p = next, index++) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		const struct mafl_opt *o;

		if (!z)
			return NULL;	/* cut by our read cap before the options ended */
		w = p;
		next = z + 1;
		if (index == 0)
			continue;
		if (index == 1) {
			if (strcmp(w, "run") != 0)
				return NULL;
			continue;
		}
		if (valued) {
			if (valued->key == MAFL_O_RUN_DIR)
				run_dir = w;
			valued = NULL;
			continue;
		}
		if (strcmp(w, "--") == 0 || w[0] != '-' || w[1] == '\0')
			return run_dir;
		o = mafl_opt_match(run, w, &v);
		if (!o || o->key == MAFL_O_HELP)
			return NULL;	/* run would have printed its help, or refused */
		if (v && o->key == MAFL_O_RUN_DIR)
			run_dir = v;
		else if (o->arg && !v)
			valued = o;
	}
	/* Options ran to the end of argv: run would have refused to start. */
	return NULL;
}

/* 1 when every uid of the process behind procfd (real, effective, saved, filesystem, from
 * its status, which anyone may read) is the caller's effective uid, else 0 with why. */
static int all_uids_ours(int procfd, char *why, size_t size)
{
	char buf[4096], *line, *end;
	long u;
	uid_t me = geteuid();
	ssize_t n;
	int fd, i;

	fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : mafl_read_full(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		snprintf(why, size, "its status cannot be read (%s)", strerror(errno));
		return 0;
	}
	buf[n] = '\0';
	line = strstr(buf, "\nUid:");
	if (!line) {
		snprintf(why, size, "its status names no uids");
		return 0;
	}
	line += 5;
	for (i = 0; i < 4; i++, line = end) {
		while (*line == '\t' || *line == ' ')
			line++;
		u = strtol(line, &end, 10);
		if (end == line) {
			snprintf(why, size, "its status names no uids");
			return 0;
		}
		if (u != (long)me) {
			snprintf(why, size, "its executable cannot be read, and it runs as uid %lu, "
				 "not %lu", (unsigned long)u, (unsigned long)me);
			return 0;
		}
	}
	return 1;
}

int mafl_prove_supervisor(pid_t pid, const char *run_dir, const struct stat *self, char *why,
			  size_t size)
{
	char path[64], *cmd = NULL;
	const char *rd;
	struct stat st;
	size_t rlen;
	ssize_t n;
	int procfd, fd, rc = -1;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		snprintf(why, size, "there is no process %d", (int)pid);
		return -1;
	}
	/* stat follows the exe link to the executable's inode, even a deleted one. A supervisor
	 * is not dumpable, so a caller without CAP_SYS_PTRACE (root in a container with the
	 * engine's default capabilities) cannot follow the link (EACCES): the process must
	 * then be one of the caller's own uid, which a program run under an identity of its
	 * own cannot make, and pass the checks below. */
	if (fstatat(procfd, "exe", &st, 0) < 0) {
		if (errno != EACCES) {
			snprintf(why, size, "its executable cannot be read (%s)", strerror(errno));
			goto out;
		}
		if (!all_uids_ours(procfd, why, size))
			goto out;
	} else if (st.st_dev != self->st_dev || st.st_ino != self->st_ino) {
		snprintf(why, size, "it does not run this maf-launch executable");
		goto out;
	}
	if (getsid(pid) != pid) {
		snprintf(why, size, "it does not lead its own session, as a supervisor does");
		goto out;
	}
	cmd = malloc(PROVE_CMDLINE_MAX);
	if (!cmd) {
		snprintf(why, size, "out of memory");
		goto out;
	}
	fd = openat(procfd, "cmdline", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : mafl_read_full(fd, cmd, PROVE_CMDLINE_MAX);
	if (fd >= 0)
		close(fd);
	if (n < 0) {
		snprintf(why, size, "its command line cannot be read (%s)", strerror(errno));
		goto out;
	}
	rd = cmdline_run_dir(cmd, (size_t)n);
	if (!rd) {
		snprintf(why, size, "it is not 'maf-launch run' with a --run-dir");
		goto out;
	}
	rlen = strlen(rd);
	strip_slashes(rd, &rlen);
	if (rlen != strlen(run_dir) || memcmp(rd, run_dir, rlen) != 0) {
		snprintf(why, size, "it supervises the run in %.*s", (int)(rlen > 512 ? 512 : rlen),
			 rd);
		goto out;
	}
	rc = 0;
out:
	free(cmd);
	close(procfd);
	return rc;
}

