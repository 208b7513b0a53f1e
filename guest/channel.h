/* The call channel (ours): the program reaches the supervisor through a socket it inherits
 * (MAF_HOST_TOOLS_FD), or through R/host_tools/channel.sock (MAF_HOST_TOOLS_SOCKET) when it
 * holds no such descriptor; the supervisor turns each call into a claim and a request file in
 * the legacy format, waits for the response with inotify, and relays it.
 *
 * A call is one line, and so is its answer (shared/PROTOCOL.md, "The call channel"):
 *   {"id": ID, "name": TOOL, "arguments": {...}}   the request file is encoded from it;
 *                                                  answered {"id": ID, "value": V}
 *   {"id": ID, "request": TEXT}                    raw: TEXT's bytes are the request file;
 *                                                  answered {"id": ID, "response": FILE},
 *                                                  the response file's bytes as a string
 * or {"id": ID, "refusal": SENTENCE} either way. A raw call passes through no re-encoding
 * (a big integer, Infinity, a non-ASCII name, the key order reach the host as written), and
 * the launcher checks nothing in it: no tool name, no --tool list. */
#ifndef MAFL_CHANNEL_H
#define MAFL_CHANNEL_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cJSON.h"

#define MAFL_CHANNEL_FD_ENV "MAF_HOST_TOOLS_FD"
#define MAFL_CHANNEL_TOOLS_ENV "MAF_HOST_TOOLS"
#define MAFL_CHANNEL_SOCKET_ENV "MAF_HOST_TOOLS_SOCKET"
#define MAFL_CHANNEL_MAX_CONNS 64
#define MAFL_CHANNEL_MAX_INFLIGHT 64
#define MAFL_CHANNEL_LINE_MAX (1u << 20)        /* one call line, newline included */
#define MAFL_CHANNEL_RESPONSE_MAX (9u << 20)    /* a response file */
#define MAFL_CHANNEL_OUTBUF_MAX (32u << 20)     /* answers a connection has not read */
#define MAFL_CHANNEL_ID_MAX 128                 /* bytes of a caller's string id */
#define MAFL_CHANNEL_RETRY_MS 50                /* at least, between reads of responses
                                                   that failed */
/* poll entries the channel may need: the inherited socket's end, inotify, the listening
 * socket, the connections */
#define MAFL_CHANNEL_POLLFDS (3 + MAFL_CHANNEL_MAX_CONNS)

struct channel;

struct channel_opts {
	char **tools;                 /* allowed tool names, NULL-terminated; NULL: any */
	unsigned long long max_calls; /* 0: no launcher budget */
};

/* Creates the channel of a run whose R/host_tools is open as host_tools_fd (borrowed; open
 * until mafl_channel_free): the socket pair whose *program_fd end the program inherits (not
 * close-on-exec; the caller closes it after the fork). listener, which the channel takes,
 * is the socket the launcher made listening at R/host_tools/channel.sock (mode 0660), or -1
 * when it could not: the channel then goes on without it. It serves only the supervisor's
 * descendants (through /proc). Returns 0, or a negative errno. */
int mafl_channel_open(struct channel **out, int host_tools_fd, int listener,
		      const struct channel_opts *opts, int *program_fd);
/* Fills pf (room for MAFL_CHANNEL_POLLFDS) with what the channel waits on and returns the
 * count; *timeout_ms is how long poll() may wait before mafl_channel_handle must run even
 * without an event (-1: no limit, 0: work is waiting). */
int mafl_channel_pollfds(struct channel *c, struct pollfd *pf, int *timeout_ms);
/* Handles the events poll() returned for the entries mafl_channel_pollfds filled, and the work
 * left waiting; call it after every poll(), events or not. Its work per call is bounded,
 * whatever the program does: what is left waits for the next call. */
void mafl_channel_handle(struct channel *c, const struct pollfd *pf, int n);
/* The run's witness (witness.h): once it has ended, the channel makes no file any more (a
 * call is refused), since the host that killed the session may be removing R/host_tools. */
void mafl_channel_set_witness(struct channel *c, pid_t witness);
/* Answers (values and refusals) relayed to their caller's connection so far. */
long long mafl_channel_calls(const struct channel *c);
/* The calls published as requests whose answer reached no caller (the caller had left, or
 * the answer had not come when the program ended), ascending, at most max into ids. Returns
 * the count. */
int mafl_channel_undelivered(const struct channel *c, long *ids, int max);
/* Closes every descriptor and removes channel.sock if it is still the one mafl_channel_open
 * made; outstanding calls are dropped. NULL is a no-op. */
void mafl_channel_free(struct channel *c);

/* Client side, for `maf-launch call` and tests: opens a private connection through the
 * channel socket chan_fd (a socketpair end sent with SCM_RIGHTS). Returns the connection's
 * descriptor, or -1 with errno set. */
int mafl_channel_connect(int chan_fd);
/* Client side: opens a connection to the listening socket at path (MAF_HOST_TOOLS_SOCKET),
 * one longer than a socket address holds included (through its directory). Returns the
 * connection's descriptor, or -1 with errno set. */
int mafl_channel_connect_path(const char *path);

/* A response file as a look at it found it: a response that could not be taken is not
 * read again while its file still matches. */
struct channel_file_state {
	uint64_t dev, ino;
	int64_t size;
	int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};
/* Fills fs from st. */
void mafl_channel_file_state_of(struct channel_file_state *fs, const struct stat *st);

enum channel_look {
	CHANNEL_LOOK_NOW,       /* read the response */
	CHANNEL_LOOK_SKIP,      /* unchanged since it failed: wait for the next event */
	CHANNEL_LOOK_LATER,     /* it failed before: nothing until retry_at_ms */
};
/* What to do about a call's response that an event named. failed: the file as the last
 * look that could not take it found it, NULL if none failed; cur: the file now, NULL if it
 * cannot be stat'ed (a look then costs an open that fails); retry_at_ms: no response that
 * failed before is read again before it. Pure. */
enum channel_look mafl_channel_look_decide(const struct channel_file_state *failed,
					   const struct channel_file_state *cur, long long now_ms,
					   long long retry_at_ms);

/* One call line, split; every pointer is borrowed from the parsed line's tree. */
struct channel_call {
	const cJSON *id;            /* a string of at most MAFL_CHANNEL_ID_MAX bytes, or a number */
	const char *name;           /* a valid tool name; NULL for a raw call */
	const cJSON *arguments;     /* an object; NULL for a raw call */
	const char *request;        /* raw: the request file's bytes, any but NUL, maybe none;
				       NULL for a tool call */
	size_t request_len;
};

/* Checks one call line (without its newline) and splits it into *call: raw when it has a
 * "request" member (a JSON string, whatever "name" and "arguments" say), else a tool call
 * (an empty "arguments" object is created in the tree when absent). Returns 0, or -1 with a
 * sentence in why and call->id set if one could be read. *root is the tree (NULL if the
 * line did not parse), which the caller deletes either way. */
int mafl_channel_parse_call(const char *line, size_t len, cJSON **root, struct channel_call *call,
			    char *why, size_t why_size);

#endif
