/* The call channel's client side (channel.h), for `maf-launch call` and the tests: a
 * private connection through the inherited socket, or to the listening socket's path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "channel.h"

int mafl_channel_connect(int chan_fd)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	char data[] = "connect";
	struct iovec iov = {.iov_base = data, .iov_len = sizeof(data) - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	int sv[2], err;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	memset(ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
	while (sendmsg(chan_fd, &mh, MSG_NOSIGNAL) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(sv[0]);
		close(sv[1]);
		errno = err;
		return -1;
	}
	close(sv[1]);
	return sv[0];
}

int mafl_channel_connect_path(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *slash = strrchr(path, '/');
	int fd, dir = -1, err, n;

	if (strlen(path) < sizeof(sa.sun_path)) {
		memcpy(sa.sun_path, path, strlen(path) + 1);
	} else {
		/* Too long for a socket address: through the directory, open as DIR, for
		 * /proc/self/fd/DIR/NAME names the same file. */
		char *d = slash ? strndup(path, (size_t)(slash - path) + 1) : NULL;

		if (!d) {
			errno = slash ? ENOMEM : ENAMETOOLONG;
			return -1;
		}
		dir = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		err = errno;
		free(d);
		if (dir < 0) {
			errno = err;
			return -1;
		}
		n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d%s", dir, slash);
		if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
			close(dir);
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	while (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(fd);
		errno = err;
		fd = -1;
	}
	if (dir >= 0) {
		err = errno;
		close(dir);
		errno = err;
	}
	return fd;
}
