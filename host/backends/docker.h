/* What the Docker backend's files share (mafh__docker_ names). Not installed.
 *   docker.c        the context, creation and destruction, the ops' nb table
 *   docker_exec.c   an exec, with or without an input, and a stream's opening, as small
 *                   state machines over engine requests
 *   docker_files.c  write_file, read_file, stat and mkdtemp
 *   docker_op.h     what those three share: the context and an op's task
 *   docker_endpoint.c where the engine is: a unix socket, TCP with TLS or without, ssh, as
 *                   the docker CLI finds it (DOCKER_HOST, its TLS variables, contexts)
 *   docker_ssh.c    the ssh processes a connection over ssh is
 *   docker_http.c   requests to the engine (libcurl's multi interface)
 *   docker_hijack.c an exec's stdio on a connection the engine hands over, and the stream
 *                   ops over it
 *   docker_tar.c    the archives the engine takes and gives (libarchive)
 *   docker_parse.c  the engine's bytes: the exec stream's frames, the path-stat header and
 *                   its JSON replies; pure, so unit tests and fuzz targets take them alone
 * Everything the engine sends is read as untrusted: the container's processes choose file
 * names, link targets and every byte of an exec's stream. */
#ifndef MAFHOST_DOCKER_H
#define MAFHOST_DOCKER_H

#include <stddef.h>
#include <stdint.h>

#include "mafhost.h"

/* The engine API version spoken (Docker 20.10 and later answer it). */
#define DOCKER_API "/v1.41"
/* The longest container path taken, its NUL included; a longer one is MAFH_EINVAL. */
#define DOCKER_PATH_MAX 4096
/* The longest X-Docker-Container-Path-Stat value taken (base64 of a name and a link
 * target, each at most 4 KiB); a longer one is a protocol error. */
#define DOCKER_PATH_STAT_MAX 16384
/* An engine's error reply kept for its message; the rest is dropped. */
#define DOCKER_ERROR_BODY_MAX 4096
/* A JSON reply kept whole (container and exec inspections); longer is a protocol error. */
#define DOCKER_REPLY_MAX (1u << 20)

/* ---- docker_parse.c ------------------------------------------------------------------- */

/* The exec stream (Tty false): frames of an 8-byte header (stream, 0, 0, 0, and the
 * payload's length as a big-endian uint32) and the payload. Fed in pieces of any size. */
enum docker_stream {
	DOCKER_STDIN = 0,          /* never sent to us; taken as stdout, as the engine's client */
	DOCKER_STDOUT = 1,
	DOCKER_STDERR = 2,
	DOCKER_SYSTEMERR = 3,      /* the engine's own error, in the stream */
};

struct docker_demux {
	unsigned char head[8];
	size_t head_len;           /* bytes of the next header held */
	enum docker_stream stream; /* the frame being read */
	uint32_t left;             /* its payload bytes still to come */
};

/* Takes a payload piece of stream; 0, or -1 to stop the feed (the error is the sink's). */
typedef int (*docker_sink_fn)(void *ud, enum docker_stream stream, const char *p, size_t n);

/* Zeroes *d: at a frame's start. */
void mafh__docker_demux_init(struct docker_demux *d);
/* Feeds data[0..len) through d, calling sink for each payload piece. 0; -1 for a header
 * that is not one (a stream past 3, or a non-zero padding byte); -2 when the sink stopped. */
int mafh__docker_demux_feed(struct docker_demux *d, const void *data, size_t len,
			    docker_sink_fn sink, void *ud);
/* 1 when the stream ended between frames, 0 inside one. */
int mafh__docker_demux_whole(const struct docker_demux *d);

/* The X-Docker-Container-Path-Stat header, decoded: the engine's lstat of the path. */
struct docker_path_stat {
	int64_t size;
	uint32_t mode;             /* Go's os.FileMode: type bits high, permissions low */
	enum mafh_file_type type;  /* from mode: REGULAR, DIR, SYMLINK or OTHER */
};
/* Decodes b64[0..len) (standard base64 of a JSON object with at least a numeric size and
 * mode). 0, or -1 when it is not that. */
int mafh__docker_path_stat_decode(const char *b64, size_t len, struct docker_path_stat *out);
/* Strict standard base64 (RFC 4648, padded): 0 and out[0..*out_len), or -1. out holds at
 * least len / 4 * 3 bytes. */
int mafh__docker_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len);

/* The "message" of an engine's error reply, made printable (control bytes as '?', at most
 * size - 1 bytes, cut at a UTF-8 boundary). Empty when body is not such a reply. */
void mafh__docker_message(const char *body, size_t len, char *buf, size_t size);
/* A container or exec id as the engine gives it: 1..128 ASCII letters and digits. */
int mafh__docker_id_ok(const char *id);
/* An exec's creation reply {"Id": ...}: 0 and the id in id (size bytes), or -1. */
int mafh__docker_exec_id_parse(const char *body, size_t len, char *id, size_t size);

/* An exec's inspection, as far as the backend needs it. */
struct docker_exec_state {
	int running;
	int has_exit_code;
	int exit_code;
	int64_t pid;               /* 0: the process never started */
};
int mafh__docker_exec_state_parse(const char *body, size_t len, struct docker_exec_state *st);

/* A container's inspection: its full id (id, size bytes), whether it runs, and its state's
 * word ("exited", ...; status, status_size bytes, "" if none). 0, or -1. */
int mafh__docker_container_parse(const char *body, size_t len, char *id, size_t size,
				 int *running, char *status, size_t status_size);

/* The head of the engine's answer to an upgrade request, in buf[0..len): its length, the
 * blank line that ends it included, once it is all there (with *status, the status line's
 * code), 0 while it is not, or -1 when the bytes cannot be an HTTP/1.x answer's head. */
long mafh__docker_upgrade_head(const char *buf, size_t len, long *status);

/* 1 when message is the engine's report that it wrote path and closed it, then could not set
 * its owner, mode or times because the file was gone: "lchown PATH: no such file or
 * directory" (or chmod, chtimes), PATH as seen in the container or below the container's
 * root on the host; or Podman's "setting access and modify timestamps on \"PATH\" to ...: no
 * such file or directory" (or "setting additional permissions on"). The guest may rename a
 * file as soon as it is closed (the supervisor reuses a relayed response that way): the
 * data landed whole. In Podman's form a path with a '"' or '\\' is never matched. */
int mafh__docker_written_then_gone(const char *message, const char *path);

/* 1 when message (an error reply's, as mafh__docker_message made it) says the container is
 * not there: dockerd's "No such container: NAME", Podman's "no container with name or ID
 * \"NAME\" found: no such container". */
int mafh__docker_no_such_container(const char *message);
/* 1 when message says the container is not running: dockerd's "Container ID is not
 * running", Podman's "can only create exec sessions on running containers: container
 * state improper". */
int mafh__docker_not_running(const char *message);
/* Podman's account of an exec it could not start, in the exec's stderr: its first line,
 * "Error: " and the runtime's reason ending in "OCI runtime attempted to invoke a command
 * that was not found" or "OCI permission denied". Where the reason starts in err (after
 * "Error: ", up to the first line end), or NULL. */
const char *mafh__docker_libpod_start_error(const char *err, size_t len);
/* The length of err[0..len) without Podman's own last line, which it adds to an exec's
 * stderr when the exec's attach socket closes under it: "Error: read unixpacket (or write)
 * @->/proc/self/fd/N/attach: read: connection reset by peer\n" (so the program's own
 * stderr is what is kept). */
size_t mafh__docker_libpod_stderr_len(const char *err, size_t len);

/* ---- docker_tar.c --------------------------------------------------------------------- */

/* A tar of one entry named name (relative: no leading '/'), owned by 0:0, with mode's
 * permission bits: a regular file of data[0..len) when dir is 0, else a directory (data
 * unused). *out is malloc'd (the caller frees it). 0, MAFH_ENOMEM, or MAFH_EIO with a
 * sentence in err (libarchive's). */
int mafh__docker_tar_one(const char *name, int dir, unsigned mode, const void *data,
			 size_t len, char **out, size_t *out_len, struct mafh_error *err);
/* Reads the first entry of tar[0..len) (possibly cut short: truncated says so) into res:
 * NOT_REGULAR for anything but a regular file (its data never read), TOO_BIG (size set) past
 * cap, else OK with a malloc'd copy of its data. 0, or MAFH_ENOMEM, or MAFH_EPROTO with a
 * sentence (no entry, or a file cut short). */
int mafh__docker_tar_first(const char *tar, size_t len, int truncated, size_t cap,
			   struct mafh_read_result *res, struct mafh_error *err);

/* ---- docker_endpoint.c ---------------------------------------------------------------- */

/* How the engine is reached. */
enum docker_via {
	DOCKER_VIA_UNIX,           /* its unix socket */
	DOCKER_VIA_TCP,            /* TCP, with TLS or without */
	DOCKER_VIA_SSH,            /* ssh HOST docker system dial-stdio, one process a connection */
};

/* Where the engine is, all malloc'd (mafh__docker_endpoint_clear frees them). */
struct docker_endpoint {
	enum docker_via via;
	char *where;               /* for sentences: the socket's path, tcp://HOST:PORT, ssh://... */
	char *socket;              /* UNIX: the socket's path */
	char *base;                /* the URLs' scheme and authority: http://docker, https://H:P */
	int tls;                   /* TCP: TLS */
	int verify;                /* TLS: the engine's certificate verified (and its name) */
	char *ca, *cert, *key;     /* TLS: the files (PEM), each NULL when there is none */
	char **ssh_argv;           /* SSH: the command, NULL-terminated */
};

/* Parses a DOCKER_HOST-style url (unix:///PATH, tcp://[HOST][:PORT], ssh://[USER@]HOST[:PORT]
 * [/SOCKET]) into *ep, TLS on for tcp:// when tls says so (its files are not looked for).
 * 0, or MAFH_EINVAL with a sentence naming what is wrong, or MAFH_ENOMEM. Pure. */
int mafh__docker_host_parse(const char *url, int tls, struct docker_endpoint *ep,
			    struct mafh_error *err);
/* A docker context's meta.json, json[0..len): 1 when it is not the context name's, 0 when it
 * is (*host its engine's host, malloc'd, or NULL when it names none; *skip_verify its
 * SkipTLSVerify), -1 when it cannot be read as one. Pure. */
int mafh__docker_context_parse(const char *json, size_t len, const char *name, char **host,
			       int *skip_verify);
/* Where the engine is, as the docker CLI finds it: o's socket_path, o's host, o's context,
 * DOCKER_HOST (with DOCKER_TLS_VERIFY, DOCKER_TLS and DOCKER_CERT_PATH), DOCKER_CONTEXT or
 * the configuration's currentContext (DOCKER_CONFIG, else ~/.docker), else the default
 * socket. 0, or a negative errno with one sentence in err. */
int mafh__docker_endpoint_resolve(const struct mafh_docker_options *o,
				  struct docker_endpoint *ep, struct mafh_error *err);
void mafh__docker_endpoint_clear(struct docker_endpoint *ep);

/* ---- docker_ssh.c --------------------------------------------------------------------- */

/* The ssh processes of an engine reached over ssh, one a connection. */
struct docker_ssh;
int mafh__docker_ssh_new(struct docker_ssh **out);
/* A connection to be: *fd a fresh unix socket (*id the connection's) and addr (at least 110 bytes) the address it
 * is to connect to (*addr_len its length), a listener of its own. 0, or -errno with a
 * sentence. */
int mafh__docker_ssh_prepare(struct docker_ssh *s, int *fd, uint64_t *id, void *addr,
			     unsigned *addr_len, struct mafh_error *err);
/* Once fd has connected: argv (looked up in PATH) started with the end accepted as its
 * stdin and stdout. 1 when started (or before), 0 when fd has not connected yet, -errno with
 * a sentence. */
int mafh__docker_ssh_start(struct docker_ssh *s, int fd, char *const argv[],
			   struct mafh_error *err);
/* Closes fd, a connection mafh__docker_ssh_prepare made; its process is reaped once it ends. */
void mafh__docker_ssh_closed(struct docker_ssh *s, int fd);
/* The last line of what the process of connection id (mafh__docker_ssh_prepare's) wrote on
 * its stderr (control bytes as '?'), in buf: its length, 0 when there is none (or its
 * process was reaped already). */
size_t mafh__docker_ssh_stderr(struct docker_ssh *s, uint64_t id, char *buf, size_t size);
/* Closes every connection, ends and reaps every process (SIGTERM, SIGKILL after 3 s). */
void mafh__docker_ssh_free(struct docker_ssh *s);

/* ---- docker_http.c -------------------------------------------------------------------- */

struct docker_http;

/* Requests to the engine at *ep, which is taken (cleared here, even on failure). 0 and
 * *out, or MAFH_ENOMEM, or MAFH_EIO when libcurl cannot be set up (a sentence in err). Safe
 * to use from several threads at once. */
int mafh__docker_http_new(struct docker_endpoint *ep, struct docker_http **out,
			  struct mafh_error *err);
void mafh__docker_http_free(struct docker_http *h);
/* Requests made so far, failed ones included. */
int64_t mafh__docker_http_requests(const struct docker_http *h);
/* Counts a request made on a connection of its own (a stream's start). */
void mafh__docker_http_count(struct docker_http *h);
/* Where the engine is, for sentences: the socket's path, tcp://HOST:PORT or the ssh URL. */
const char *mafh__docker_http_socket(const struct docker_http *h);
/* 1 once an answer of the engine came from Podman (its Server header says Libpod/). */
int mafh__docker_http_libpod(struct docker_http *h);
/* The endpoint h reaches (borrowed). */
const struct docker_endpoint *mafh__docker_http_endpoint(const struct docker_http *h);

/* One request. target is the path and query after the API version, already escaped. The
 * body of a 2xx answer goes to sink when given (which returns 0, or -1 to stop the transfer:
 * the request then ends as stopped, with no error), else is kept in reply up to reply_cap
 * bytes (past it the transfer stops, reply_cut set). A non-2xx answer's body is kept up to
 * DOCKER_ERROR_BODY_MAX. The path-stat header is kept when the engine sends one. */
struct docker_request {
	const char *method;        /* GET, HEAD, POST, PUT */
	const char *target;        /* "/containers/ID/json", ... */
	const char *content_type;  /* of body, or NULL */
	const void *body;
	size_t body_len;
	int64_t timeout_ms;        /* the whole request; <= 0: no limit */
	int (*sink)(void *ud, const char *p, size_t n);
	/* Called once the answer's status and headers are in (before any body): 0 to go on,
	 * -1 to stop the transfer there (stopped, no error). May be NULL. */
	int (*headers_done)(void *ud, long status, const char *path_stat, size_t path_stat_len);
	void *ud;
	size_t reply_cap;
	/* Only the connection (and its TLS) is made: the request's method, target and body are
	 * not sent, and the connection is x's, for mafh__docker_xfer_send and _recv, until x is
	 * freed (then it is closed, never reused). */
	int connect_only;
};

struct docker_reply {
	long status;               /* 0 when no answer came */
	char *body;                /* malloc'd, NUL-terminated (the caller frees it), or NULL */
	size_t body_len;
	int reply_cut;
	int stopped;               /* a callback stopped the transfer */
	int timed_out;             /* timeout_ms passed */
	char path_stat[DOCKER_PATH_STAT_MAX + 1];
	size_t path_stat_len;
	int has_path_stat;
};

/* A request under way, without blocking: started, then stepped whenever one of the
 * descriptors it names is ready or its time comes. */
struct docker_xfer;
/* Starts req (borrowed, with what it points to, until the xfer is freed) over a connection
 * of the pool; *reply is zeroed and filled as the answer comes. 0 and *out, or a negative
 * code with a sentence (out of memory, a path too long). The caller frees *out. */
int mafh__docker_xfer_start(struct docker_http *h, const struct docker_request *req,
			    struct docker_reply *reply, int64_t now_ms, struct docker_xfer **out,
			    struct mafh_error *err);
/* What x waits on: its sockets in fds (MAFH_WANT_FDS at most), their count returned, and
 * *until_ms on the clock of its steps. */
int mafh__docker_xfer_want(const struct docker_xfer *x, struct mafh_pollfd *fds,
			   int64_t *until_ms);
/* Takes x further without blocking: 1 while it goes on; once it is over, 0 when an answer
 * came (whatever its status) or a callback stopped it, and also when timeout_ms passed
 * (reply->timed_out); else a negative errno with one sentence in err: the engine unreachable
 * ("cannot reach the Docker engine at SOCKET: ..."), the connection broken, out of memory.
 * reply is the caller's to clear (mafh__docker_reply_clear). */
int mafh__docker_xfer_step(struct docker_xfer *x, int64_t now_ms, struct mafh_error *err);
/* Frees x; a transfer still under way is dropped with its connection. NULL is a no-op. */
void mafh__docker_xfer_free(struct docker_xfer *x);
/* Over a connect_only request's connection, once it is over with 0: up to n bytes into buf,
 * their count, 0 at its end, -EAGAIN when none is there now, or a negative errno. */
long mafh__docker_xfer_recv(struct docker_xfer *x, void *buf, size_t n);
/* What the connection takes now of buf[0..n): the count, -EAGAIN when none, or -errno. */
long mafh__docker_xfer_send(struct docker_xfer *x, const void *buf, size_t n);
/* The connection's descriptor, to poll (-1 when there is none). */
int mafh__docker_xfer_fd(const struct docker_xfer *x);
/* A request performed to its end, blocking in poll(2): as mafh__docker_xfer_step's end. */
int mafh__docker_http_do(struct docker_http *h, const struct docker_request *req,
			 struct docker_reply *reply, struct mafh_error *err);
void mafh__docker_reply_clear(struct docker_reply *reply);
/* s escaped for a URL's path or query, as curl_easy_escape does, malloc'd; NULL when out of
 * memory. */
char *mafh__docker_escape(const char *s);

/* ---- docker_hijack.c ------------------------------------------------------------------ */

/* A connection the engine hands over to an exec's stdio (see docker_hijack.c), opened and
 * used without blocking. */
struct docker_hijack;
/* Starts opening a connection of its own to http's engine and POSTing body to target (after
 * the API version: "/exec/ID/start") on it, asked to be handed over, within open_ms (<= 0:
 * 10 s). The exec's frames (any that come with the answer's head, and all after) go to
 * sink(ud, ...). name is the command, for sentences. 0 and *out, or a negative code with a
 * sentence. The caller frees *out; http outlives it. */
int mafh__docker_hijack_start(struct docker_http *http, const char *target, const char *body,
			      const char *name, int64_t now_ms, int64_t open_ms,
			      docker_sink_fn sink, void *ud, struct docker_hijack **out,
			      struct mafh_error *err);
/* The opening taken further: 1 while it goes on, 0 once the engine has said 101 (or 200),
 * or a negative code with a sentence: the engine unreachable ("cannot reach the Docker
 * engine at SOCKET: ..."), the request not sent, the engine's refusal, or open_ms passed. */
int mafh__docker_hijack_opening(struct docker_hijack *h, int64_t now_ms,
				struct mafh_error *err);
/* While opening: what h waits on (*fd, returning 1, or no descriptor, 0) and until when. */
int mafh__docker_hijack_opening_want(const struct docker_hijack *h, struct mafh_pollfd *fd,
				     int64_t *until_ms);
/* The connection's descriptor, for a caller's want (never read, written or closed there). */
int mafh__docker_hijack_fd(const struct docker_hijack *h);
/* Once open: what to wait on for events (POLLIN, POLLOUT) in *fd, 1; *until_ms is made 0
 * when bytes already taken from the connection wait to be read (and left as it is else). */
int mafh__docker_hijack_want(const struct docker_hijack *h, short events,
			     struct mafh_pollfd *fd, int64_t *until_ms);
/* Once open: reads what the connection holds now, at most about budget bytes, into the
 * sink. 1 when bytes came, 0 when none is there now, MAFH_EPIPE once the engine has ended
 * the connection (and from then on), MAFH_EPROTO for bytes not framed as an exec's output,
 * MAFH_ECANCELED when the sink stopped (its owner knows why), or another negative errno;
 * err gets a sentence but for the sink's stop. */
int mafh__docker_hijack_pull(struct docker_hijack *h, size_t budget, struct mafh_error *err);
/* Writes what the connection takes now of data[0..len): the count (0: none now), MAFH_EPIPE
 * once the command or the connection is gone, or another negative errno. */
long mafh__docker_hijack_push(struct docker_hijack *h, const void *data, size_t len);
/* Ends the command's stdin (the connection's write side). */
void mafh__docker_hijack_shut_write(struct docker_hijack *h);
/* 1 when the frames ended between two frames. */
int mafh__docker_hijack_whole(const struct docker_hijack *h);
/* Closes the connection and frees h. NULL is a no-op. */
void mafh__docker_hijack_free(struct docker_hijack *h);

/* A stream's state (the STREAM ops' slot): the connection, the command's stdout read and
 * not taken yet (at most DOCKER_STDIO_MAX bytes: past it the stream is broken), its first
 * 4 KiB of stderr for sentences. */
#define DOCKER_STDIO_MAX (4u << 20)
struct docker_stdio;
/* Made before its connection, whose frames go to mafh__docker_stdio_sink(s, ...). 0, or
 * MAFH_ENOMEM. */
int mafh__docker_stdio_new(const char *name, struct docker_stdio **out);
int mafh__docker_stdio_sink(void *ud, enum docker_stream stream, const char *p, size_t n);
/* The open connection is s's from now on. */
void mafh__docker_stdio_attach(struct docker_stdio *s, struct docker_hijack *h);
/* Closes the connection at once and frees s. NULL is a no-op. */
void mafh__docker_stdio_free(struct docker_stdio *s);

/* A STREAM_READ, STREAM_WRITE or STREAM_CLOSE over s. */
struct docker_stdio_op {
	struct docker_stdio *s;
	const struct mafh_op *op;
	int64_t until;             /* READ: op->until_ms; WRITE: its timeout; CLOSE: its grace */
	size_t done;               /* WRITE: bytes written */
};
/* Starts op over s. What an earlier READ handed out is taken then. */
void mafh__docker_stdio_op_start(struct docker_stdio *s, const struct mafh_op *op,
				 int64_t now_ms, struct docker_stdio_op *o);
/* Takes o further: 1 while it goes on, 0 once over (res filled; a READ's stream_data lies
 * in s until the next op on it). A CLOSE leaves the connection closed: free s after it. */
int mafh__docker_stdio_op_step(struct docker_stdio_op *o, int64_t now_ms,
			       struct mafh_op_result *res);
/* What o waits on: the connection's descriptor in *fd, and the time. Returns 1, or 0 when
 * it waits on no descriptor. */
int mafh__docker_stdio_op_want(const struct docker_stdio_op *o, struct mafh_pollfd *fd,
			       int64_t *until_ms);

#endif
