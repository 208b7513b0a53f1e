/* The local backend's stream: fork and execvp of argv with its stdin and stdout on pipes
 * that stay open until the stream is closed, stderr on a third pipe whose first 4 KiB are
 * kept for the sentence of a failure. The child runs in its own process group, killed whole
 * when the stream is closed while it still runs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "local.h"

#define STDERR_KEEP 4096
/* How long a closed stream's command has to end once its stdin is closed. */
#define CLOSE_GRACE_MS 1000

struct local_stream {
	pid_t pid;
	int in, out, err;              /* our ends: the command's stdin, stdout, stderr */
	char errbuf[STDERR_KEEP + 1];
	size_t errlen;
	char name[64];                 /* argv[0], for sentences */
};

/* Takes what stderr holds now, keeping the first STDERR_KEEP bytes; at most a pipe's worth
 * a call, so that a command writing stderr without end cannot keep the caller here. */
static void drain_stderr(struct local_stream *s)
{
	char tmp[4096];
	ssize_t n = -1;
	int reads = 0;

	while (s->err >= 0 && reads++ < 16 && (n = read(s->err, tmp, sizeof(tmp))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				close(s->err);
				s->err = -1;
			}
			return;
		}
		if (s->errlen < STDERR_KEEP) {
			size_t k = (size_t)n < STDERR_KEEP - s->errlen ? (size_t)n
								     : STDERR_KEEP - s->errlen;

			memcpy(s->errbuf + s->errlen, tmp, k);
			s->errlen += k;
			s->errbuf[s->errlen] = '\0';
		}
	}
	if (n == 0 && s->err >= 0) {
		close(s->err);
		s->err = -1;
	}
}

/* The stream's end, in a sentence: what the command said on stderr, or how it ended. */
static int ended(struct local_stream *s, struct mafh_error *err)
{
	char line[256];
	int status;

	drain_stderr(s);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(s->errbuf, "\n"), s->errbuf);
	if (line[0])
		return mafh__error_set(err, MAFH_EPIPE, "%s ended: %s", s->name, line);
	if (s->pid > 0 && waitpid(s->pid, &status, WNOHANG) == s->pid) {
		s->pid = -1;
		return mafh__error_set(err, MAFH_EPIPE, "%s ended with exit code %d", s->name,
				       mafp_exit_code_from_wait_status(status));
	}
	return mafh__error_set(err, MAFH_EPIPE, "%s closed its stdout", s->name);
}

int mafh__local_stream_open(const char *const *argv, void **out, struct mafh_error *err)
{
	int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, saved;
	struct local_stream *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	snprintf(s->name, sizeof(s->name), "%s", argv[0]);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
		goto fail;
	s->pid = fork();
	if (s->pid < 0)
		goto fail;
	if (s->pid == 0)
		mafh__local_child(argv, in[0], o[1], e[1]);
	setpgid(s->pid, s->pid);
	close(in[0]);
	close(o[1]);
	close(e[1]);
	s->in = in[1];
	s->out = o[0];
	s->err = e[0];
	fcntl(s->in, F_SETFL, O_NONBLOCK);
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
	*out = s;
	return 0;
fail:
	saved = errno;
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (o[i] >= 0)
			close(o[i]);
		if (e[i] >= 0)
			close(e[i]);
	}
	free(s);
	return mafh__error_set(err, -saved, "cannot start %s: %s", argv[0], strerror(saved));
}

int mafh__local_stream_write(void *stream, const void *data, size_t len, int64_t timeout_ms,
			     struct mafh_error *err)
{
	struct local_stream *s = stream;
	const char *p = data;
	int64_t deadline = mafh__now_ms() + timeout_ms;

	while (len) {
		ssize_t n = write(s->in, p, len);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EPIPE)
			return ended(s, err);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = s->in, .events = POLLOUT};
			int64_t left = deadline - mafh__now_ms();

			if (left <= 0)
				return mafh__error_set(err, MAFH_ETIMEDOUT, "%s took no input for "
						       "%lld ms", s->name, (long long)timeout_ms);
			poll(&pf, 1, left > 1000 ? 1000 : (int)left);
			continue;
		}
		return mafh__error_set(err, -errno, "cannot write to %s: %s", s->name,
				       strerror(errno));
	}
	return 0;
}

int mafh__local_stream_read(void *stream, void *buf, size_t cap, int64_t timeout_ms,
			    struct mafh_error *err)
{
	struct local_stream *s = stream;
	int64_t deadline = mafh__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		struct pollfd pf[2] = {{.fd = s->out, .events = POLLIN},
				       {.fd = s->err, .events = POLLIN}};
		ssize_t n = read(s->out, buf, cap);
		int64_t left;

		if (n > 0)
			return (int)n;
		if (n == 0)
			return ended(s, err);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return mafh__error_set(err, -errno, "cannot read from %s: %s", s->name,
					       strerror(errno));
		drain_stderr(s);
		left = deadline - mafh__now_ms();
		if (left <= 0)
			return 0;
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
			return mafh__error_set(err, -errno, "cannot wait for %s: %s", s->name,
					       strerror(errno));
	}
}

void mafh__local_stream_close(void *stream)
{
	struct local_stream *s = stream;
	int64_t deadline = mafh__now_ms() + CLOSE_GRACE_MS;

	if (!s)
		return;
	close(s->in);
	close(s->out);
	if (s->err >= 0)
		close(s->err);
	/* Its stdin ended, the command ends by itself; else it is killed, its group with it. */
	while (s->pid > 0) {
		int status;
		pid_t r = waitpid(s->pid, &status, WNOHANG);

		if (r == s->pid || (r < 0 && errno != EINTR))
			break;
		if (mafh__now_ms() >= deadline) {
			kill(-s->pid, SIGKILL);
			kill(s->pid, SIGKILL);
			while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
				;
			break;
		}
		mafh__sleep_until_ms(mafh__now_ms() + 5);
	}
	free(s);
}
