/* The call channel's insides, shared by its files and by nothing else (channel.h is the
 * channel to the rest of the launcher):
 *   channel_server.c   the socket server: the connections, their lines and answers, the
 *                      channel's life and its turn of the supervisor's loop
 *   channel_files.c    the file bridge: a call made a claim and a request file, its response
 *                      file read and relayed
 *   channel_inotify.c  the watch on the calls directory, and its events
 *   channel_timer.c    when to look without an event: without inotify, after a response that
 *                      failed, after a flood of events
 *   channel_client.c   the caller's side: connecting through the socket pair or the path */
#ifndef MAFL_CHANNEL_IMPL_H
#define MAFL_CHANNEL_IMPL_H

#include <stdint.h>
#include <sys/types.h>

#include "channel.h"
#include "protocol.h"

/* Calls taken from one connection per wake: the rest of what it sent waits, in its buffer
 * or in the socket, for the next turn of the supervisor's loop (mafl_channel_pollfds asks
 * for one at once), so a connection that streams calls holds up neither the timer nor the
 * others. */
#define CONN_CALLS_PER_WAKE 16

/* After a read of a response that failed, the next such read waits at least this many times
 * as long as that one took (and at least MAFL_CHANNEL_RETRY_MS): see
 * mafl__channel_serve_due. */
#define RETRY_COST_FACTOR 10

/* Reads of inotify events in a row that named no response awaiting its first look, after
 * which each such read is followed by a pause without one: see mafl__channel_inotify_read. */
#define INOTIFY_IDLE_READS 32
#define INOTIFY_QUIET_MS 5

/* Without inotify (out of instances or watches: per-user limits, 128 instances by default,
 * which a host running that many runs at once as one user reaches), the responses awaited
 * are looked for on a timer: LOOK_MIN_MS after a request, then twice as long each time up to
 * LOOK_MAX_MS, from LOOK_MIN_MS again at the next request. */
#define LOOK_MIN_MS 1
#define LOOK_MAX_MS 32

struct conn {
	int fd;                 /* -1: slot free */
	char *in;
	size_t in_len, in_cap;  /* the line buffer grows from 4 KiB to MAFL_CHANNEL_LINE_MAX */
	size_t in_off;          /* in[in_off..in_len) is not handled yet */
	size_t in_scan;         /* in[in_off..in_scan) holds no newline */
	int more;               /* a whole line is buffered, left for the next wake */
	char *out;
	size_t out_len, out_off;
	int eof;                /* the peer closed its side: close once nothing is owed */
};

struct call {
	long n;                 /* the call file number; 0: slot free */
	int conn;               /* the connection to answer, -1 when it went away */
	cJSON *id;              /* the caller's id, owned */
	int raw;                /* published verbatim: the response is relayed verbatim too */
	int due;                /* an event named the response since the last look */
	int renamed;            /* the last event naming it was a rename into place */
	int failed;             /* a look found the file and could not take it, as seen: */
	struct channel_file_state seen;
};

/* A call file done with, which a later request reuses (reuse_spare): call n's request or
 * its response (suffix). */
struct spare {
	long n;
	const char *suffix;
	uint64_t dev, ino;
};

#define SPARES 8

struct channel {
	int host_tools;         /* R/host_tools, borrowed */
	int calls_dir;          /* R/host_tools/host_tool_calls, once a call needed it */
	int listen_fd;          /* our end of the socketpair the program inherits */
	int sock_fd;            /* listening at R/host_tools/channel.sock */
	uint64_t sock_dev, sock_ino;  /* that socket's file, removed at the end if still ours */
	int proc_fd;            /* /proc, for the peer check; -1: none, the socket serves none */
	int ino_fd;             /* -1: no inotify, the timer below instead */
	long long look_at;      /* without inotify: the next look for responses (ms); 0: none */
	int look_step;
	struct conn conns[MAFL_CHANNEL_MAX_CONNS];
	struct call calls[MAFL_CHANNEL_MAX_INFLIGHT];
	long next_n;            /* no claim below this one is ours to take */
	long claim_src;         /* our last claim made as a file, linked to by the next; 0: none */
	struct spare spares[SPARES];
	int nspares;
	long long retry_at;     /* no response that failed is read again before (ms) */
	pid_t witness;          /* the run's witness; 0: none */
	int next_due;           /* where the next look for due calls starts: each gets a turn */
	int idle_reads;         /* inotify reads in a row that named nothing new */
	long long quiet_until;  /* no inotify read before (ms); 0: none pending */
	unsigned long long accepted;
	long long answered;     /* answers relayed to their caller's connection */
	long lost[MAFP_UNDELIVERED_MAX];  /* calls whose answer found no caller */
	int nlost;
	struct channel_opts opts;
};

/* channel_server.c */
/* Queues one answer line for connection i (consumed). Returns 0 once queued, -1 when the
 * answer reached no connection. */
int mafl__channel_send(struct channel *c, int i, char *line);
/* The answer line to a call: a refusal when refusal is set, else the raw response when
 * response is, else the value. Borrows its arguments; NULL on ENOMEM. */
char *mafl__channel_answer_line(const cJSON *id, const cJSON *value, const char *refusal,
				const char *response);
/* Answers a call with a refusal; counted when it reaches the caller. Returns as
 * mafl__channel_send. */
int mafl__channel_refuse(struct channel *c, int i, const cJSON *id, const char *sentence);
/* Records call n, published, whose answer reached no caller (the exit record's). */
void mafl__channel_lost(struct channel *c, long n);

/* channel_files.c */
/* Handles one call line from connection i: refused, or published as a request. */
void mafl__channel_call(struct channel *c, int i, const char *line, size_t len);
/* Looks at the responses that are due, within the wake's budget, and relays them. */
void mafl__channel_serve_due(struct channel *c);
/* Every call waiting is due for a look (no event says which). */
void mafl__channel_all_due(struct channel *c);

/* channel_inotify.c */
/* Starts inotify for the channel: c->ino_fd, or -1 where the user is out of instances.
 * Returns 0, or -1 with errno set on another failure. */
int mafl__channel_inotify_open(struct channel *c);
/* Watches the calls directory c->calls_dir; out of watches, the timer takes over. Returns 0,
 * or -1 with errno set. */
int mafl__channel_watch(struct channel *c);
/* Takes one read of the queued events: the calls they name are due. paced: counted
 * against a flood (not a read of the channel's own events). */
void mafl__channel_inotify_read(struct channel *c, int paced);

/* channel_timer.c */
/* A request was published: without inotify, the looks begin again at their shortest. */
void mafl__channel_look_soon(struct channel *c);
/* Without inotify: when the timer is due, every call waiting is due for a look. */
void mafl__channel_look_on_timer(struct channel *c);
/* How long poll() may wait for the channel (-1: no limit, 0: work is waiting), given what
 * the connections ask (timeout_ms on entry); whether the inotify descriptor is to be polled
 * (0 while a flood is held off). */
int mafl__channel_wait_ms(struct channel *c, int timeout_ms, int *poll_inotify);

#endif
