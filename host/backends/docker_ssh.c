/* The Docker backend's connections over ssh, as the docker CLI's connection helper makes
 * them: each connection is an `ssh HOST docker system dial-stdio` of its own, its stdin and
 * stdout one end of a unix connection whose other end libcurl uses as it would a socket.
 * (libcurl 7.88 connects every socket its open callback gives, whatever its sockopt
 * callback says: the socket given is a fresh one, the address it connects to a listener of
 * this connection's alone, in a directory of its own (0700), both removed once it has
 * connected; the end accepted is ssh's stdio. A named one: libcurl reuses a connection only
 * when its peer has a name, which an abstract socket's has not for it.) The process is
 * started with posix_spawnp in a session of its own (the CLI's setsid: a terminal's signals
 * are not its), its stderr kept (the first 1 KiB) for the
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
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
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
	uint64_t id;               /* the connection's, for its stderr after it closed */
	pid_t pid;                 /* 0 until started */
	int fd;                    /* the connection's end libcurl holds, -1 once closed */
	int listen;                /* what it connects to, until ssh has the other end */
	char dir[24];              /* the listener's directory (0700), until then */
	char path[108];            /* the listener's name in it, until then */
	int errfd;                 /* its stderr, -1 once read to its end */
	char err[ERR_KEEP + 1];
	size_t errlen;
	struct ssh_kid *next;
};

struct docker_ssh {
	pthread_mutex_t lock;
	uint64_t ids;
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

/* The listener's name and its directory, gone once it has served (its path is kept in the
 * peer's address): nothing is left behind by a process that ends without freeing the
 * backend, unless it ends while a connection is being made. */
static void unlink_listener(struct ssh_kid *k)
{
	if (k->path[0])
		unlink(k->path);
	if (k->dir[0])
		rmdir(k->dir);
	k->path[0] = k->dir[0] = '\0';
}

/* Reaps the processes whose connections are closed and that have ended; s->lock held. */
static void reap(struct docker_ssh *s)
{
	struct ssh_kid **pp = &s->kids, *k;

	while ((k = *pp)) {
		if (k->fd < 0 && (!k->pid || waitpid(k->pid, NULL, WNOHANG) != 0)) {
			*pp = k->next;
			if (k->errfd >= 0)
				close(k->errfd);
			if (k->listen >= 0)
				close(k->listen);
			unlink_listener(k);
			free(k);
			continue;
		}
		pp = &k->next;
	}
}

int mafh__docker_ssh_prepare(struct docker_ssh *s, int *fd, uint64_t *id, void *addr,
			     unsigned *addr_len, struct mafh_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ssh_kid *k;
	socklen_t len;
	uint64_t n;
	int e;

	*fd = -1;
	k = calloc(1, sizeof(*k));
	if (!k)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory starting ssh");
	k->fd = k->listen = k->errfd = -1;
	snprintf(k->dir, sizeof(k->dir), "/tmp/maf-ssh-XXXXXX");
	if (!mkdtemp(k->dir)) {
		e = errno;
		k->dir[0] = '\0';
		goto fail;
	}
	pthread_mutex_lock(&s->lock);
	n = ++s->ids;
	pthread_mutex_unlock(&s->lock);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/c", k->dir);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa.sun_path) + 1);
	k->listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	k->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (k->listen < 0 || k->fd < 0 || bind(k->listen, (struct sockaddr *)&sa, len) < 0 ||
	    listen(k->listen, 1) < 0) {
		e = errno;
		goto fail;
	}
	snprintf(k->path, sizeof(k->path), "%s", sa.sun_path);
	memcpy(addr, &sa, len);
	*addr_len = (unsigned)len;
	pthread_mutex_lock(&s->lock);
	reap(s);
	k->id = *id = n;
	k->next = s->kids;
	s->kids = k;
	pthread_mutex_unlock(&s->lock);
	*fd = k->fd;
	return 0;
fail:
	if (sa.sun_path[0] && k->listen >= 0)
		unlink(sa.sun_path);
	if (k->dir[0])
		rmdir(k->dir);
	if (k->listen >= 0)
		close(k->listen);
	if (k->fd >= 0)
		close(k->fd);
	free(k);
	return mafh__error_set(err, -e, "cannot set up a connection over ssh: %s", strerror(e));
}

/* Starts k's ssh on the connection its listener took (s->lock held). 1, 0 when nothing has
 * connected yet, or -errno with a sentence. */
static int start(struct ssh_kid *k, char *const argv[], struct mafh_error *err)
{
	int ep[2] = {-1, -1}, c, rc, e;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	sigset_t none;

	c = accept4(k->listen, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return errno == EAGAIN || errno == EINTR ? 0
		       : mafh__error_set(err, -errno, "cannot set up a connection over ssh: %s",
					 strerror(errno));
	close(k->listen);
	k->listen = -1;
	unlink_listener(k);
	/* Only this process can reach the name; still, only its own connection is served. */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != getpid()) {
		close(c);
		return mafh__error_set(err, MAFH_EIO, "cannot set up a connection over ssh: "
				       "another process took it");
	}
	if (pipe2(ep, O_CLOEXEC) < 0) {
		e = errno;
		close(c);
		return mafh__error_set(err, -e, "cannot start ssh to reach the Docker engine: %s",
				       strerror(e));
	}
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	/* The child's own signal mask, whatever the host's threads hold; a session of its own,
	 * as the CLI's. */
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_adddup2(&fa, c, 0);
	posix_spawn_file_actions_adddup2(&fa, c, 1);
	posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
	rc = posix_spawnp(&k->pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(c);
	close(ep[1]);
	if (rc != 0) {
		close(ep[0]);
		k->pid = 0;
		return mafh__error_set(err, -rc, "cannot start ssh to reach the Docker engine: %s",
				       strerror(rc));
	}
	k->errfd = ep[0];
	return 1;
}

int mafh__docker_ssh_start(struct docker_ssh *s, int fd, char *const argv[],
			   struct mafh_error *err)
{
	struct ssh_kid *k;
	int rc = 1;

	pthread_mutex_lock(&s->lock);
	for (k = s->kids; k && k->fd != fd; k = k->next)
		;
	if (k && k->listen >= 0)
		rc = start(k, argv, err);
	pthread_mutex_unlock(&s->lock);
	return rc;
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
	/* Not reaped here: its stderr may be asked for at once (the next connection reaps). */
	pthread_mutex_unlock(&s->lock);
}

size_t mafh__docker_ssh_stderr(struct docker_ssh *s, uint64_t id, char *buf, size_t size)
{
	struct ssh_kid *k;
	size_t n = 0;
	int i;

	buf[0] = '\0';
	pthread_mutex_lock(&s->lock);
	for (k = s->kids; k && k->id != id; k = k->next)
		;
	if (k && k->pid) {
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
		if (k->pid)
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
				if (k->pid)
					kill(k->pid, SIGKILL);
		nanosleep(&ts, NULL);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}
