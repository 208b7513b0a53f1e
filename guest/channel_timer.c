/* When the call channel looks without an event (channel_impl.h): without inotify, on a timer
 * that starts short after each request and doubles; after a response that could not be
 * taken, not before retry_at; after a flood of inotify events, not before quiet_until. */
#include "channel_impl.h"
#include "util.h"

/* Whether a call still waits for its response to be looked at. */
static int awaiting(const struct channel *c)
{
	int i;

	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT; i++)
		if (c->calls[i].n && !c->calls[i].due)
			return 1;
	return 0;
}

void mafl__channel_look_soon(struct channel *c)
{
	if (c->ino_fd >= 0)
		return;
	c->look_step = LOOK_MIN_MS;
	c->look_at = mafl_now_ms() + LOOK_MIN_MS;
}

void mafl__channel_look_on_timer(struct channel *c)
{
	long long now;

	if (c->ino_fd >= 0 || !c->look_at || (now = mafl_now_ms()) < c->look_at)
		return;
	mafl__channel_all_due(c);
	c->look_step = c->look_step * 2 > LOOK_MAX_MS ? LOOK_MAX_MS : c->look_step * 2;
	c->look_at = now + c->look_step;
}

/* The shorter of a poll timeout (-1: none) and wait milliseconds. */
static int shorter(int timeout_ms, long long wait)
{
	return timeout_ms < 0 || wait < timeout_ms ? (int)wait : timeout_ms;
}

int mafl__channel_wait_ms(struct channel *c, int timeout_ms, int *poll_inotify)
{
	long long now = -1;
	int i;

	if (c->quiet_until) {
		now = mafl_now_ms();
		if (now >= c->quiet_until)
			c->quiet_until = 0;
		else if (timeout_ms != 0)
			timeout_ms = (int)(c->quiet_until - now);
	}
	*poll_inotify = !c->quiet_until;
	if (c->ino_fd < 0 && c->look_at && timeout_ms != 0 && awaiting(c)) {
		if (now < 0)
			now = mafl_now_ms();
		timeout_ms = shorter(timeout_ms, c->look_at > now ? c->look_at - now : 0);
	}
	for (i = 0; i < MAFL_CHANNEL_MAX_INFLIGHT && timeout_ms != 0; i++) {
		const struct call *k = &c->calls[i];

		if (!k->n || !k->due)
			continue;
		if (!k->failed)
			return 0;
		if (now < 0)
			now = mafl_now_ms();
		timeout_ms = shorter(timeout_ms, c->retry_at > now ? c->retry_at - now : 0);
	}
	return timeout_ms;
}
