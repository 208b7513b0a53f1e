/* The call channel's watch on the calls directory (channel_impl.h): the events that say a
 * response is in place, read a bounded amount a wake. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "channel_impl.h"
#include "protocol.h"
#include "util.h"

int mafl__channel_inotify_open(struct channel *c)
{
	c->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->ino_fd < 0 && errno != EMFILE && errno != ENFILE && errno != ENOMEM &&
	    errno != ENOSYS)
		return -1;
	return 0;
}

int mafl__channel_watch(struct channel *c)
{
	char path[64];

	if (c->ino_fd < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c->calls_dir);
	if (inotify_add_watch(c->ino_fd, path, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR) >= 0)
		return 0;
	if (errno != ENOSPC)
		return -1;
	/* Out of watches: the timer instead. */
	close(c->ino_fd);
	c->ino_fd = -1;
	return 0;
}

/* One read of the queued events a wake, however many more are queued: a program can queue
 * them as fast as it closes files, and the timer and signals must get their turn. Such a
 * program would still keep the supervisor reading (a read and a poll for every few events,
 * at its pace) and doing nothing else. The host's traffic does not look like that: its
 * writes name responses awaited. So once INOTIFY_IDLE_READS reads in a row (paced: not
 * mafl__channel_call's reads of its own events) have named no call awaiting its first look, each
 * such read is followed by INOTIFY_QUIET_MS without one, until a read names one. The queue
 * then fills, and may overflow (IN_Q_OVERFLOW makes every call due): a response awaited
 * meanwhile is found when the reads reach it, and only the flooding run's calls wait. */
void mafl__channel_inotify_read(struct channel *c, int paced)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(c->ino_fd, buf, sizeof(buf));
	int awaited = 0;
	char *p;
	size_t j;

	for (p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *ev = (struct inotify_event *)p;
		long id;
		size_t nl = ev->len ? strlen(ev->name) : 0;
		size_t sl = strlen(MAFP_SUFFIX_RESPONSE);

		p += sizeof(*ev) + ev->len;
		if (ev->mask & IN_Q_OVERFLOW) {
			mafl__channel_all_due(c);
			awaited = 1;
			continue;
		}
		if (nl <= sl || strcmp(ev->name + nl - sl, MAFP_SUFFIX_RESPONSE) != 0 ||
		    mafp_marker_parse(ev->name, nl - sl, 1, MAFP_CALL_ID_MAX, &id) < 0)
			continue;
		for (j = 0; j < MAFL_CHANNEL_MAX_INFLIGHT; j++) {
			if (c->calls[j].n == id) {
				c->calls[j].due = 1;
				c->calls[j].renamed = (ev->mask & IN_MOVED_TO) != 0;
				awaited |= !c->calls[j].failed;
			}
		}
	}
	if (!paced)
		return;
	if (awaited) {
		c->idle_reads = 0;
	} else if (++c->idle_reads >= INOTIFY_IDLE_READS) {
		c->idle_reads = INOTIFY_IDLE_READS;
		c->quiet_until = mafl_now_ms() + INOTIFY_QUIET_MS;
	}
}
