#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int mafl_parse_stat_ppid(const char *buf, size_t len, pid_t *ppid)
{
	const char *p = NULL, *end = buf + len;
	long v = 0;
	size_t i;

	/* The command name is in parentheses and may contain ')': the last one closes it. */
	for (i = len; i > 0; i--) {
		if (buf[i - 1] == ')') {
			p = buf + i;
			break;
		}
	}
	/* ") S PPID ..." */
	if (!p || end - p < 5 || p[0] != ' ' || p[2] != ' ')
		return -1;
	p += 3;
	if (p >= end || *p < '0' || *p > '9')
		return -1;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 0x7fffffff)
			return -1;
	}
	if (p < end && *p != ' ')
		return -1;
	*ppid = (pid_t)v;
	return 0;
}

/* The parent pid in the stat file at dirfd/path (a process's /proc/PID/stat). */
static int stat_ppid_at(int dirfd, const char *path, pid_t *ppid)
{
	char buf[1024];
	ssize_t n;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = mafl_read_full(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return -1;
	return mafl_parse_stat_ppid(buf, (size_t)n, ppid);
}

static int dir_ppid(int dir, pid_t *ppid)
{
	return stat_ppid_at(dir, "stat", ppid);
}

static int open_pid_dir(int procfd, pid_t pid)
{
	char name[16];

	snprintf(name, sizeof(name), "%d", (int)pid);
	return openat(procfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

#define WALK_AGAIN (-1)

/* One walk up from pid: 1 found, 0 not, WALK_AGAIN when a link moved under it. A directory
 * of /proc stays with its process: once that process is reaped, reading through it fails
 * rather than read another's. A child names its parent until the parent has exited (the
 * kernel hands the children on before the parent's pid is freed), so when the child still
 * names the parent after the parent's directory was opened, the directory is the parent's
 * and not that of a process that took its pid meanwhile. */
static int walk_up(int procfd, pid_t pid, pid_t ancestor)
{
	int dir = open_pid_dir(procfd, pid), depth, rc = 0;

	if (dir < 0)
		return 0;
	for (depth = 0; depth < MAFL_TREE_DEPTH_MAX; depth++) {
		pid_t ppid, again;
		int up;

		if (dir_ppid(dir, &ppid) < 0) {
			/* pid itself gone, or a parent already passed its children on */
			rc = depth ? WALK_AGAIN : 0;
			break;
		}
		if (ppid == ancestor) {
			rc = 1;
			break;
		}
		if (ppid <= 0)
			break;	/* the top of the tree */
		up = open_pid_dir(procfd, ppid);
		if (up < 0 || dir_ppid(dir, &again) < 0 || again != ppid) {
			if (up >= 0)
				close(up);
			rc = WALK_AGAIN;
			break;
		}
		close(dir);
		dir = up;
	}
	close(dir);
	return rc;
}

int mafl_tree_descends(int procfd, pid_t pid, pid_t ancestor)
{
	int tries, rc = 0;

	if (pid <= 0 || ancestor <= 0 || pid == ancestor)
		return 0;
	for (tries = 0; tries < 3; tries++) {
		rc = walk_up(procfd, pid, ancestor);
		if (rc != WALK_AGAIN)
			return rc;
	}
	return 0;
}

struct proc_ent {
	pid_t pid, ppid;
	int mark;
};

static int read_ppid(int procfd, const char *name, pid_t *ppid)
{
	char path[64];
	int n = snprintf(path, sizeof(path), "%s/stat", name);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	return stat_ppid_at(procfd, path, ppid);
}

int mafl_tree_signal(pid_t root, int sig, pid_t spare)
{
	struct proc_ent *ents = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	int changed, count = 0, procfd;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	procfd = dirfd(dir);
	while ((de = readdir(dir))) {
		char *e;
		long pid = strtol(de->d_name, &e, 10);
		pid_t ppid;

		if (*e || pid <= 0 || pid == root || (spare > 0 && pid == spare))
			continue;
		if (read_ppid(procfd, de->d_name, &ppid) < 0)
			continue;	/* gone already */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct proc_ent *ne = realloc(ents, ncap * sizeof(*ents));

			if (!ne)
				break;
			ents = ne;
			cap = ncap;
		}
		ents[n].pid = (pid_t)pid;
		ents[n].ppid = ppid;
		ents[n].mark = 0;
		n++;
	}
	closedir(dir);
	/* Mark descendants: a process is one when its parent is root or marked. Passes repeat
	 * until nothing changes, which takes as many passes as the tree is deep. */
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			size_t j;

			if (ents[i].mark)
				continue;
			if (ents[i].ppid == root) {
				ents[i].mark = 1;
				changed = 1;
				continue;
			}
			for (j = 0; j < n; j++) {
				if (ents[j].mark && ents[j].pid == ents[i].ppid) {
					ents[i].mark = 1;
					changed = 1;
					break;
				}
			}
		}
	} while (changed);
	for (i = 0; i < n; i++) {
		if (ents[i].mark && kill(ents[i].pid, sig) == 0)
			count++;
	}
	free(ents);
	return count;
}
