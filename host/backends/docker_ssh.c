/* The Docker backend's connections over ssh, as the docker CLI's connection helper makes
 * them: each connection is an `ssh HOST docker system dial-stdio` of its own, its stdin and
 * stdout one end of a socketpair whose other end libcurl (or a stream) uses as it would a
 * socket. The process is started with posix_spawnp in a session of its own (the CLI's
 * setsid: a terminal's signals are not its), its stderr kept (the first 1 KiB) for the
 * sentence of a connection that fails. A connection closed ends its stdin, which ends
 * dial-stdio and so ssh; it is reaped when it has, and at the latest when the backend is
 * freed (SIGTERM, then SIGKILL after 3 s, as the CLI's). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "internal.h"

#define ERR_KEEP 1024
/* How long a process may take to end once its connection closed, at the backend's end,
 * before SIGKILL (the CLI's 3 s). */
#define END_GRACE_MS 3000

extern char **environ;

struct ssh_kid {
	pid_t pid;
	int fd;                    /* the connection's end we hold, -1 once closed */
	int errfd;                 /* its stderr, -1 once read to its end */
	char err[ERR_KEEP + 1];
	size_t errlen;
	struct ssh_kid *next;
};

struct docker_ssh {
	pthread_mutex_t lock;
	struct ssh_kid *kids;
};

int mafh__docker_ssh_new(struct docker_ssh **out)
{
	struct docker_ssh *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return MAFH_ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	return 0;
}

/* Takes what k's stderr holds now into k->err (the rest dropped); closes it at its end. */
static void take_stderr(struct ssh_kid *k)
{
	char buf[4096];
	ssize_t n;

	while (k->errfd >= 0) {
		n = read(k->errfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(k->errfd);
			k->errfd = -1;
			return;
		}
		if (k->errlen < ERR_KEEP) {
			size_t m = (size_t)n < ERR_KEEP - k->errlen ? (size_t)n : ERR_KEEP - k->errlen;

			memcpy(k->err + k->errlen, buf, m);
			k->errlen += m;
			k->err[k->errlen] = '\0';
		}
	}
}

/* Reaps the processes whose connections are closed and that have ended; s->lock held. */
static void reap(struct docker_ssh *s)
{
	struct ssh_kid **pp = &s->kids, *k;

	while ((k = *pp)) {
		if (k->fd < 0 && waitpid(k->pid, NULL, WNOHANG) != 0) {
			*pp = k->next;
			if (k->errfd >= 0)
				close(k->errfd);
			free(k);
			continue;
		}
		pp = &k->next;
	}
}

int mafh__docker_ssh_open(struct docker_ssh *s, char *const argv[], int *fd,
			  struct mafh_error *err)
{
	int sp[2] = {-1, -1}, ep[2] = {-1, -1}, rc, e;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct ssh_kid *k;
	sigset_t none;

	*fd = -1;
	k = calloc(1, sizeof(*k));
	if (!k)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory starting ssh");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0) {
		e = errno;
		goto fail_fds;
	}
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	/* The child's own signal mask and dispositions, whatever the host's threads hold. */
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_adddup2(&fa, sp[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
	rc = posix_spawnp(&k->pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(sp[1]);
	close(ep[1]);
	sp[1] = ep[1] = -1;
	if (rc != 0) {
		e = rc;
		goto fail_fds;
	}
	k->fd = sp[0];
	k->errfd = ep[0];
	pthread_mutex_lock(&s->lock);
	reap(s);
	k->next = s->kids;
	s->kids = k;
	pthread_mutex_unlock(&s->lock);
	*fd = sp[0];
	return 0;
fail_fds:
	for (rc = 0; rc < 2; rc++) {
		if (sp[rc] >= 0)
			close(sp[rc]);
		if (ep[rc] >= 0)
			close(ep[rc]);
	}
	free(k);
	return mafh__error_set(err, -e, "cannot start ssh to reach the Docker engine: %s",
			       strerror(e));
}

void mafh__docker_ssh_closed(struct docker_ssh *s, int fd)
{
	struct ssh_kid *k;

	pthread_mutex_lock(&s->lock);
	for (k = s->kids; k && k->fd != fd; k = k->next)
		;
	if (k) {
		take_stderr(k);
		k->fd = -1;
	}
	close(fd);
	reap(s);
	pthread_mutex_unlock(&s->lock);
}

size_t mafh__docker_ssh_stderr(struct docker_ssh *s, int fd, char *buf, size_t size)
{
	struct ssh_kid *k;
	size_t n = 0;
	int i;

	buf[0] = '\0';
	pthread_mutex_lock(&s->lock);
	for (k = s->kids; k && k->fd != fd; k = k->next)
		;
	if (k) {
		/* A process that failed has usually said why by the time its end is seen; a
		 * moment more is given to one still running (at most 200 ms). */
		for (i = 0; i < 20 && k->errfd >= 0 && !k->errlen; i++) {
			struct timespec ts = {0, 10 * 1000 * 1000};

			siginfo_t si = {0};

			take_stderr(k);
			if (!k->errlen && waitid(P_PID, (id_t)k->pid, &si,
						 WEXITED | WNOHANG | WNOWAIT) == 0 && !si.si_pid)
				nanosleep(&ts, NULL);
			else
				take_stderr(k);
		}
		/* Its last line that says something: ssh's own, or dial-stdio's. */
		while (k->errlen && (k->err[k->errlen - 1] == '\n' || k->err[k->errlen - 1] == '\r'))
			k->err[--k->errlen] = '\0';
		{
			const char *line = strrchr(k->err, '\n');

			line = line ? line + 1 : k->err;
			for (; *line && n + 1 < size; line++)
				buf[n++] = (unsigned char)*line < 0x20 ? '?' : *line;
			buf[n] = '\0';
		}
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

void mafh__docker_ssh_free(struct docker_ssh *s)
{
	struct ssh_kid *k;
	int64_t until;

	if (!s)
		return;
	for (k = s->kids; k; k = k->next) {
		if (k->fd >= 0) {
			close(k->fd);
			k->fd = -1;
		}
		kill(k->pid, SIGTERM);
	}
	until = mafh__now_ms() + END_GRACE_MS;
	while (s->kids) {
		struct timespec ts = {0, 5 * 1000 * 1000};

		reap(s);
		if (!s->kids)
			break;
		if (mafh__now_ms() >= until)
			for (k = s->kids; k; k = k->next)
				kill(k->pid, SIGKILL);
		nanosleep(&ts, NULL);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}
