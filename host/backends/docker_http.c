/* The Docker backend's requests: HTTP/1.1 to the engine over its unix socket, over TCP
 * (with TLS: libcurl's, on OpenSSL) or over ssh (a socketpair to `ssh HOST docker system
 * dial-stdio`, docker_ssh.c, handed to libcurl as a connected socket), through libcurl's
 * multi interface, without blocking. Each request under way (struct docker_xfer)
 * has a multi handle of its own, so that what it waits on (its socket, its timer) is its
 * task's alone and a transfer that ends is seen by the task that made it: libcurl's timer
 * is multi-wide, and a transfer another task's call finished would be reported to no one.
 * The handles are lent from a pool kept by the backend and given back when the request is
 * over, with the connection libcurl keeps in each: the next request, from any task or
 * thread, takes an idle one and reuses its connection. (A CURLSH sharing connections
 * between multi handles would do the same, but libcurl 7.88 does not support a shared
 * connection cache used from several threads at once, and ops run on any thread.) A multi
 * handle is used by one task at a time: nothing of libcurl is shared between threads. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "docker.h"
#include "internal.h"

#define CONNECT_TIMEOUT_MS 10000
#define PATH_STAT_HEADER "X-Docker-Container-Path-Stat:"
/* Idle handles (and their connections) kept between requests; past it, a handle given back
 * is freed and its connection closed. */
#define POOL_MAX 16
/* The longest a request waits without a word from libcurl (no socket, no timer): never, by
 * libcurl's account; a look now and then all the same. */
#define IDLE_LOOK_MS 100

/* A multi handle and the easy handle it performs, lent to one request at a time. */
struct slot {
	CURLM *multi;
	CURL *easy;
	struct slot *next;
};

struct docker_http {
	struct docker_endpoint ep;
	struct docker_ssh *ssh;    /* SSH: the connections' processes */
	atomic_int_fast64_t requests;
	atomic_int libpod;         /* an answer came from Podman (its Server header) */
	pthread_mutex_t lock;      /* the pool */
	struct slot *idle;
	int nidle;
};

/* A socket libcurl has the request wait on, and for what (CURL_POLL_*). */
struct xsock {
	curl_socket_t fd;
	int what;
};

struct docker_xfer {
	struct docker_http *h;
	struct slot *s;
	const struct docker_request *req;
	struct docker_reply *reply;
	struct curl_slist *headers;
	long status;
	int headers_seen;          /* the final answer's headers are all in */
	int nomem;
	size_t body_size;
	struct xsock socks[MAFH_WANT_FDS];
	int nsocks;
	int sock_overflow;         /* libcurl wanted more sockets than a task may watch */
	int64_t now;               /* the clock of the call under way, for on_timer */
	int64_t timer_at;          /* libcurl's timer on that clock; INT64_MAX: none */
	int done;
	CURLcode result;
	curl_socket_t ssh_fd;      /* SSH: the connection's socket, once made; else -1 */
	int ssh_started;           /* SSH: its ssh has the other end */
	uint64_t ssh_id;           /* SSH: the connection's, for its stderr */
	char ssh_why[256];         /* SSH: why ssh could not be started */
	char errbuf[CURL_ERROR_SIZE];
};

int mafh__docker_http_new(struct docker_endpoint *ep, struct docker_http **out,
			  struct mafh_error *err)
{
	struct docker_http *h;

	*out = NULL;
	/* libcurl counts its initialisations: each backend takes one and gives it back. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		mafh__docker_endpoint_clear(ep);
		return mafh__error_set(err, MAFH_EIO, "libcurl cannot be initialised");
	}
	h = calloc(1, sizeof(*h));
	if (!h || (ep->via == DOCKER_VIA_SSH && mafh__docker_ssh_new(&h->ssh) < 0)) {
		free(h);
		mafh__docker_endpoint_clear(ep);
		curl_global_cleanup();
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory setting up libcurl");
	}
	h->ep = *ep;
	memset(ep, 0, sizeof(*ep));
	atomic_init(&h->requests, 0);
	atomic_init(&h->libpod, 0);
	pthread_mutex_init(&h->lock, NULL);
	*out = h;
	return 0;
}

static void slot_free(struct slot *s)
{
	if (!s)
		return;
	curl_multi_cleanup(s->multi);
	curl_easy_cleanup(s->easy);
	free(s);
}

void mafh__docker_http_free(struct docker_http *h)
{
	if (!h)
		return;
	while (h->idle) {
		struct slot *s = h->idle;

		h->idle = s->next;
		slot_free(s);
	}
	pthread_mutex_destroy(&h->lock);
	/* After the handles: their connections' closes reach the ssh processes. */
	mafh__docker_ssh_free(h->ssh);
	mafh__docker_endpoint_clear(&h->ep);
	free(h);
	curl_global_cleanup();
}

int64_t mafh__docker_http_requests(const struct docker_http *h)
{
	return atomic_load(&((struct docker_http *)h)->requests);
}

void mafh__docker_http_count(struct docker_http *h)
{
	atomic_fetch_add(&h->requests, 1);
}

const char *mafh__docker_http_socket(const struct docker_http *h)
{
	return h->ep.where;
}

int mafh__docker_http_libpod(struct docker_http *h)
{
	return atomic_load(&h->libpod);
}

const struct docker_endpoint *mafh__docker_http_endpoint(const struct docker_http *h)
{
	return &h->ep;
}

char *mafh__docker_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s), i, o = 0;
	char *e = n < SIZE_MAX / 3 ? malloc(n * 3 + 1) : NULL;

	if (!e)
		return NULL;
	/* As curl_easy_escape: RFC 3986's unreserved characters as they are, all else %XX. */
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			e[o++] = (char)c;
		} else {
			e[o++] = '%';
			e[o++] = hex[c >> 4];
			e[o++] = hex[c & 15];
		}
	}
	e[o] = '\0';
	return e;
}

void mafh__docker_reply_clear(struct docker_reply *reply)
{
	free(reply->body);
	memset(reply, 0, sizeof(*reply));
}

/* ---- libcurl's callbacks ------------------------------------------------------------- */

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct docker_xfer *x = userp;
	int i;

	(void)easy;
	(void)socketp;
	/* A handle in the pool (a connection closed at its cleanup) has no request to tell. */
	if (!x)
		return 0;
	for (i = 0; i < x->nsocks && x->socks[i].fd != fd; i++)
		;
	if (what == CURL_POLL_REMOVE) {
		if (i < x->nsocks)
			x->socks[i] = x->socks[--x->nsocks];
		return 0;
	}
	if (i == x->nsocks) {
		if (x->nsocks == MAFH_WANT_FDS) {
			x->sock_overflow = 1;
			return -1;
		}
		x->nsocks++;
	}
	x->socks[i].fd = fd;
	x->socks[i].what = what;
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct docker_xfer *x = userp;

	(void)multi;
	if (x)
		x->timer_at = timeout_ms < 0 ? INT64_MAX : x->now + timeout_ms;
	return 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct docker_xfer *x = ud;
	size_t n = size * nmemb;
	struct docker_reply *r = x->reply;

	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A status line: a 100 Continue's headers are not the answer's. */
		x->headers_seen = 0;
		r->has_path_stat = 0;
		r->path_stat_len = 0;
		if (sscanf(p, "HTTP/%*s %ld", &x->status) != 1)
			x->status = 0;
		return n;
	}
	if ((n == 2 && p[0] == '\r' && p[1] == '\n') || (n == 1 && p[0] == '\n')) {
		/* The end of a block of headers: the answer's, unless it was a 1xx. */
		if (x->status >= 200) {
			x->headers_seen = 1;
			r->status = x->status;
			if (x->req->headers_done &&
			    x->req->headers_done(x->req->ud, x->status,
						 r->has_path_stat ? r->path_stat : NULL,
						 r->path_stat_len) < 0) {
				r->stopped = 1;
				return 0;
			}
		}
		return n;
	}
	/* Podman names itself in every answer ("Server: Libpod/4.3.1 (linux)"). */
	if (n > 15 && strncasecmp(p, "Server: Libpod/", 15) == 0)
		atomic_store(&x->h->libpod, 1);
	if (n > strlen(PATH_STAT_HEADER) &&
	    strncasecmp(p, PATH_STAT_HEADER, strlen(PATH_STAT_HEADER)) == 0) {
		size_t vlen = n - strlen(PATH_STAT_HEADER);

		/* Longer than any the engine makes: kept cut, and refused when decoded. */
		if (vlen > DOCKER_PATH_STAT_MAX)
			vlen = DOCKER_PATH_STAT_MAX;
		memcpy(r->path_stat, p + strlen(PATH_STAT_HEADER), vlen);
		r->path_stat[vlen] = '\0';
		r->path_stat_len = vlen;
		r->has_path_stat = 1;
	}
	return n;
}

/* Keeps body bytes in the reply, up to cap; past it the transfer stops. */
static int keep(struct docker_xfer *x, const char *p, size_t n, size_t cap)
{
	struct docker_reply *r = x->reply;

	if (r->body_len + n > cap) {
		n = cap - r->body_len;
		r->reply_cut = 1;
	}
	if (mafh__append(&r->body, &r->body_len, &x->body_size, SIZE_MAX, p, n) < 0) {
		x->nomem = 1;
		return -1;
	}
	return r->reply_cut ? -1 : 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct docker_xfer *x = ud;
	size_t n = size * nmemb;

	if (x->status < 200 || x->status > 299)
		return keep(x, p, n, DOCKER_ERROR_BODY_MAX) < 0 && x->nomem ? 0 : n;
	if (x->req->sink) {
		if (x->req->sink(x->req->ud, p, n) < 0) {
			x->reply->stopped = 1;
			return 0;
		}
		return n;
	}
	if (keep(x, p, n, x->req->reply_cap) < 0) {
		if (!x->nomem)
			x->reply->stopped = 1;
		return 0;
	}
	return n;
}

/* ---- the pool ------------------------------------------------------------------------ */

/* An idle handle, or a new one. NULL when out of memory. */
static struct slot *slot_take(struct docker_http *h)
{
	struct slot *s;

	pthread_mutex_lock(&h->lock);
	s = h->idle;
	if (s) {
		h->idle = s->next;
		h->nidle--;
	}
	pthread_mutex_unlock(&h->lock);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->multi = curl_multi_init();
	s->easy = curl_easy_init();
	if (!s->multi || !s->easy ||
	    curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
	    curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_timer) != CURLM_OK) {
		slot_free(s);
		return NULL;
	}
	return s;
}

/* Gives s back to the pool (with its connection, when libcurl kept it), or frees it. */
static void slot_give(struct docker_http *h, struct slot *s)
{
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, NULL);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, NULL);
	pthread_mutex_lock(&h->lock);
	if (h->nidle < POOL_MAX) {
		s->next = h->idle;
		h->idle = s;
		h->nidle++;
		s = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	slot_free(s);
}

/* ---- a request ------------------------------------------------------------------------ */

/* The sentence of a failed transfer. */
static int transfer_error(struct docker_xfer *x, struct mafh_error *err)
{
	long os_errno = 0;
	const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(x->result);
	const struct docker_endpoint *ep = &x->h->ep;
	const char *socket = ep->where;
	char said[512];

	curl_easy_getinfo(x->s->easy, CURLINFO_OS_ERRNO, &os_errno);
	if (x->ssh_why[0])
		return mafh__error_set(err, MAFH_EIO, "%s (for %s)", x->ssh_why, socket);
	/* Over ssh, what ssh (or dial-stdio) said is the reason, whatever libcurl saw. */
	if (ep->via == DOCKER_VIA_SSH && x->result != CURLE_OUT_OF_MEMORY &&
	    x->result != CURLE_OPERATION_TIMEDOUT && x->ssh_fd != CURL_SOCKET_BAD &&
	    mafh__docker_ssh_stderr(x->h->ssh, x->ssh_id, said, sizeof(said)) > 0)
		return mafh__error_set(err, MAFH_EIO, "cannot reach the Docker engine at %s: "
				       "ssh says: %s", socket, said);
	switch (x->result) {
	case CURLE_OUT_OF_MEMORY:
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory talking to the Docker "
				       "engine");
	case CURLE_COULDNT_RESOLVE_HOST:
		return mafh__error_set(err, MAFH_EIO, "cannot reach the Docker engine at %s: its "
				       "host name does not resolve (%s)", socket, why);
	case CURLE_PEER_FAILED_VERIFICATION:
		return mafh__error_set(err, -EACCES, "the Docker engine at %s is not the one "
				       "its certificate should show: %s (checked against %s)",
				       socket, why, ep->ca ? ep->ca : "the system's CAs");
	case CURLE_SSL_CACERT_BADFILE:
		return mafh__error_set(err, MAFH_EINVAL, "the CA certificate %s for the Docker "
				       "engine at %s cannot be used: %s", ep->ca ? ep->ca : "",
				       socket, why);
	case CURLE_SSL_CERTPROBLEM:
		return mafh__error_set(err, MAFH_EINVAL, "the client certificate %s or its key %s "
				       "for the Docker engine at %s cannot be used: %s",
				       ep->cert ? ep->cert : "(none)", ep->key ? ep->key : "(none)",
				       socket, why);
	case CURLE_SSL_CONNECT_ERROR:
		if (strstr(why, "wrong version number") || strstr(why, "packet length too long"))
			return mafh__error_set(err, MAFH_EPROTO, "the Docker engine at %s does "
					       "not speak TLS (unset DOCKER_TLS_VERIFY and DOCKER_TLS "
					       "for plain TCP): %s", socket, why);
		/* A server that wants a client certificate it trusts says so in an alert. */
		if (strstr(why, "alert") || strstr(why, "certificate required"))
			return mafh__error_set(err, -EACCES, "the Docker engine at %s refused "
					       "the TLS handshake: it wants a client certificate "
					       "it trusts (%s): %s", socket,
					       ep->cert ? ep->cert : "none was sent", why);
		return mafh__error_set(err, MAFH_EPROTO, "the TLS handshake with the Docker "
				       "engine at %s failed: %s", socket, why);
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		/* TLS 1.3 sends the refusal of a client's certificate after the handshake, as an
		 * alert, or by closing the connection under the request being sent. */
		if (ep->tls && (strstr(why, "alert") || strstr(why, "certificate required")))
			return mafh__error_set(err, -EACCES, "the Docker engine at %s refused "
					       "the TLS connection: it wants a client certificate "
					       "it trusts (%s): %s", socket,
					       ep->cert ? ep->cert : "none was sent", why);
		if (ep->tls && (strstr(why, "errno 107") || strstr(why, "reset by peer")))
			return mafh__error_set(err, -EACCES, "the Docker engine at %s closed the "
					       "TLS connection as it began, as an engine with "
					       "--tlsverify does to a client certificate its CA did "
					       "not sign (%s): %s", socket,
					       ep->cert ? ep->cert : "none was sent", why);
		return mafh__error_set(err, MAFH_EIO, "the connection to the Docker engine at %s "
				       "failed: %s", socket, why);
	case CURLE_COULDNT_CONNECT:
		if (os_errno > 0)
			return mafh__error_set(err, (int)-os_errno, "cannot reach the Docker engine "
					       "at %s: %s", socket, strerror((int)os_errno));
		return mafh__error_set(err, MAFH_EIO, "cannot reach the Docker engine at %s: %s",
				       socket, why);
	default:
		return mafh__error_set(err, MAFH_EIO, "the connection to the Docker engine at %s "
				       "failed: %s", socket, why);
	}
}

/* SSH: a connection is made to a listener of its own, whose end an ssh process takes once
 * it has connected (docker_ssh.c). */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct docker_xfer *x = ud;
	struct mafh_error e = {0};
	unsigned len;
	int fd;

	(void)purpose;
	/* libcurl's address is a sockaddr storage: a unix one fits. */
	if (mafh__docker_ssh_prepare(x->h->ssh, &fd, &x->ssh_id, &a->addr, &len, &e) < 0) {
		snprintf(x->ssh_why, sizeof(x->ssh_why), "%s", e.message);
		return CURL_SOCKET_BAD;
	}
	a->family = AF_UNIX;
	a->addrlen = len;
	x->ssh_fd = fd;
	x->ssh_started = 0;
	return fd;
}

/* Called for a connection closed whichever request made it: the http is what it needs. */
static int on_close_socket(void *ud, curl_socket_t fd)
{
	mafh__docker_ssh_closed(((struct docker_http *)ud)->ssh, fd);
	return 0;
}

/* How the connection is made, by the endpoint: its socket, TLS's files, or ssh. */
static int set_channel(struct docker_xfer *x, CURL *e)
{
	const struct docker_endpoint *ep = &x->h->ep;

	switch (ep->via) {
	case DOCKER_VIA_UNIX:
		return curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, ep->socket) != CURLE_OK;
	case DOCKER_VIA_SSH:
		return curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket) != CURLE_OK ||
		       curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, x) != CURLE_OK ||
		       curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket) != CURLE_OK ||
		       curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, x->h) != CURLE_OK ||
		       curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 0L) != CURLE_OK;
	case DOCKER_VIA_TCP:
		if (!ep->tls)
			return 0;
		/* As the CLI: its CA alone when verifying, the client's pair when it has one. */
		if (curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, ep->verify ? 1L : 0L) != CURLE_OK ||
		    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, ep->verify ? 2L : 0L) != CURLE_OK ||
		    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2) != CURLE_OK)
			return 1;
		if (ep->ca && (curl_easy_setopt(e, CURLOPT_CAINFO, ep->ca) != CURLE_OK ||
			       curl_easy_setopt(e, CURLOPT_CAPATH, NULL) != CURLE_OK))
			return 1;
		if (ep->cert && ep->key &&
		    (curl_easy_setopt(e, CURLOPT_SSLCERT, ep->cert) != CURLE_OK ||
		     curl_easy_setopt(e, CURLOPT_SSLKEY, ep->key) != CURLE_OK))
			return 1;
		return 0;
	}
	return 1;
}

static int set_options(struct docker_xfer *x, const char *url)
{
	const struct docker_request *req = x->req;
	CURL *e = x->s->easy;

	/* Options are set afresh for each request. */
	curl_easy_reset(e);
	if (curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK || set_channel(x, e) ||
	    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
			     req->timeout_ms > 0 ? (long)req->timeout_ms : 0L) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_HEADERDATA, x) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_WRITEDATA, x) != CURLE_OK)
		return -1;
	if (req->connect_only)
		return curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L) != CURLE_OK ? -1 : 0;
	if (strcmp(req->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(req->method, "GET") != 0) {
		/* POST and PUT: the body as POST data (borrowed), under the method asked for. */
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body ? req->body_len : 0));
		if (strcmp(req->method, "POST") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	}
	return 0;
}

int mafh__docker_xfer_start(struct docker_http *h, const struct docker_request *req,
			    struct docker_reply *reply, int64_t now_ms, struct docker_xfer **out,
			    struct mafh_error *err)
{
	struct docker_xfer *x;
	struct curl_slist *more;
	char url[DOCKER_PATH_MAX * 3 + 64], ctype[128];
	int n;

	*out = NULL;
	memset(reply, 0, sizeof(*reply));
	n = snprintf(url, sizeof(url), "%s" DOCKER_API "%s", h->ep.base, req->target);
	if (n < 0 || (size_t)n >= sizeof(url))
		return mafh__error_set(err, MAFH_EINVAL, "the engine request's path is too long");
	x = calloc(1, sizeof(*x));
	if (!x)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory talking to the Docker "
				       "engine");
	x->h = h;
	x->req = req;
	x->reply = reply;
	x->now = now_ms;
	x->timer_at = INT64_MAX;
	x->ssh_fd = CURL_SOCKET_BAD;
	/* No Expect: 100-continue round trip before a body. */
	x->headers = curl_slist_append(NULL, "Expect:");
	if (x->headers && req->content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", req->content_type);
		more = curl_slist_append(x->headers, ctype);
		if (!more) {
			curl_slist_free_all(x->headers);
			x->headers = NULL;
		} else {
			x->headers = more;
		}
	}
	errno = 0;
	if (!x->headers || !(x->s = slot_take(h))) {
		int e = errno == EMFILE || errno == ENFILE ? errno : ENOMEM;

		mafh__docker_xfer_free(x);
		/* A multi handle holds a socketpair of its own (libcurl's wakeup). */
		return mafh__error_set(err, -e, "cannot set up a request to the Docker engine: %s",
				       strerror(e));
	}
	if (set_options(x, url) < 0) {
		mafh__docker_xfer_free(x);
		return mafh__error_set(err, MAFH_EIO, "libcurl refused an option of the engine "
				       "request");
	}
	curl_multi_setopt(x->s->multi, CURLMOPT_SOCKETDATA, x);
	curl_multi_setopt(x->s->multi, CURLMOPT_TIMERDATA, x);
	/* A connection made for a stream is counted by its start (mafh__docker_http_count). */
	if (!req->connect_only)
		atomic_fetch_add(&h->requests, 1);
	if (curl_multi_add_handle(x->s->multi, x->s->easy) != CURLM_OK) {
		mafh__docker_xfer_free(x);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory talking to the Docker "
				       "engine");
	}
	/* Taken at once by the first step, whatever libcurl's timer said. */
	x->timer_at = now_ms;
	*out = x;
	return 0;
}

int mafh__docker_xfer_want(const struct docker_xfer *x, struct mafh_pollfd *fds,
			   int64_t *until_ms)
{
	int i, n = 0;

	for (i = 0; i < x->nsocks; i++) {
		short ev = (short)((x->socks[i].what & CURL_POLL_IN ? POLLIN : 0) |
				   (x->socks[i].what & CURL_POLL_OUT ? POLLOUT : 0));

		if (ev)
			fds[n++] = (struct mafh_pollfd){.fd = x->socks[i].fd, .events = ev};
	}
	*until_ms = x->timer_at;
	if (!n && *until_ms == INT64_MAX)
		*until_ms = x->now + IDLE_LOOK_MS;
	return n;
}

/* A multi call that failed (out of memory, a callback's refusal) ends the transfer. */
static void acted(struct docker_xfer *x, CURLMcode mc)
{
	if (mc == CURLM_OK || x->done)
		return;
	x->done = 1;
	x->result = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_RECV_ERROR;
	snprintf(x->errbuf, sizeof(x->errbuf), "%s", curl_multi_strerror(mc));
}

/* Tells libcurl what is ready among the request's sockets (looked at now, without waiting)
 * and whether its timer is due, then whether the transfer is over. */
static void drive(struct docker_xfer *x, int64_t now)
{
	struct pollfd pf[MAFH_WANT_FDS];
	int i, n = 0, running;
	CURLMsg *msg;
	long t = -1;

	for (i = 0; i < x->nsocks; i++) {
		short ev = (short)((x->socks[i].what & CURL_POLL_IN ? POLLIN : 0) |
				   (x->socks[i].what & CURL_POLL_OUT ? POLLOUT : 0));

		if (ev)
			pf[n++] = (struct pollfd){.fd = x->socks[i].fd, .events = ev};
	}
	while (n && poll(pf, (nfds_t)n, 0) < 0 && errno == EINTR)
		;
	for (i = 0; i < n; i++) {
		int ev = 0;

		if ((pf[i].events & POLLIN) && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			ev |= CURL_CSELECT_IN;
		if ((pf[i].events & POLLOUT) && (pf[i].revents & (POLLOUT | POLLHUP | POLLERR)))
			ev |= CURL_CSELECT_OUT;
		/* A socket an earlier call closed is unknown to libcurl, which ignores it. */
		if (ev)
			acted(x, curl_multi_socket_action(x->s->multi, pf[i].fd, ev, &running));
	}
	if (now >= x->timer_at) {
		x->timer_at = INT64_MAX;
		acted(x, curl_multi_socket_action(x->s->multi, CURL_SOCKET_TIMEOUT, 0, &running));
	}
	/* A connection over ssh made in those calls gets its ssh now. */
	if (x->ssh_fd != CURL_SOCKET_BAD && !x->ssh_started) {
		struct mafh_error e = {0};
		int rc = mafh__docker_ssh_start(x->h->ssh, x->ssh_fd, x->h->ep.ssh_argv, &e);

		if (rc < 0)
			snprintf(x->ssh_why, sizeof(x->ssh_why), "%s", e.message);
		x->ssh_started = rc != 0;
	}
	while ((msg = curl_multi_info_read(x->s->multi, &i))) {
		if (msg->msg == CURLMSG_DONE && !x->done) {
			x->done = 1;
			x->result = msg->data.result;
		}
	}
	/* libcurl calls on_timer only when its timer changes: one it left as it was, or one
	 * that came due on libcurl's clock a moment after ours, is asked for. */
	if (!x->done && curl_multi_timeout(x->s->multi, &t) == CURLM_OK)
		x->timer_at = t < 0 ? INT64_MAX : now + t;
}

int mafh__docker_xfer_step(struct docker_xfer *x, int64_t now_ms, struct mafh_error *err)
{
	struct docker_reply *reply = x->reply;
	int rc;

	x->now = now_ms;
	if (!x->done)
		drive(x, now_ms);
	if (x->sock_overflow) {
		x->done = 1;
		x->result = CURLE_RECV_ERROR;
		snprintf(x->errbuf, sizeof(x->errbuf), "more than %d sockets at once",
			 MAFH_WANT_FDS);
	}
	if (!x->done)
		return 1;
	if (x->nomem) {
		mafh__docker_reply_clear(reply);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the Docker "
				       "engine's answer");
	}
	if (x->result == CURLE_OK || (x->result == CURLE_WRITE_ERROR && reply->stopped))
		return 0;
	if (x->result == CURLE_OPERATION_TIMEDOUT && x->req->timeout_ms > 0) {
		reply->timed_out = 1;
		return 0;
	}
	reply->status = 0;
	rc = transfer_error(x, err);
	return rc;
}

void mafh__docker_xfer_free(struct docker_xfer *x)
{
	if (!x)
		return;
	if (x->s) {
		/* A transfer left under way leaves its connection closed by libcurl (it is not
		 * reusable mid-answer); the handle is clean again either way. */
		curl_multi_remove_handle(x->s->multi, x->s->easy);
		curl_easy_setopt(x->s->easy, CURLOPT_ERRORBUFFER, NULL);
		curl_easy_setopt(x->s->easy, CURLOPT_OPENSOCKETDATA, NULL);
		/* A connection of a request's own (handed over to a stream) is never reused. */
		if (x->req->connect_only) {
			curl_multi_setopt(x->s->multi, CURLMOPT_SOCKETDATA, NULL);
			curl_multi_setopt(x->s->multi, CURLMOPT_TIMERDATA, NULL);
			slot_free(x->s);
		} else {
			slot_give(x->h, x->s);
		}
	}
	curl_slist_free_all(x->headers);
	free(x);
}

long mafh__docker_xfer_recv(struct docker_xfer *x, void *buf, size_t n)
{
	size_t got = 0;
	CURLcode rc = curl_easy_recv(x->s->easy, buf, n, &got);

	if (rc == CURLE_OK)
		return (long)got;
	if (rc == CURLE_AGAIN)
		return -EAGAIN;
	return rc == CURLE_RECV_ERROR || rc == CURLE_UNSUPPORTED_PROTOCOL ? -ECONNRESET : -EIO;
}

long mafh__docker_xfer_send(struct docker_xfer *x, const void *buf, size_t n)
{
	size_t sent = 0;
	CURLcode rc = curl_easy_send(x->s->easy, buf, n, &sent);

	if (rc == CURLE_OK)
		return (long)sent;
	if (rc == CURLE_AGAIN)
		return -EAGAIN;
	return rc == CURLE_SEND_ERROR ? -EPIPE : -EIO;
}

int mafh__docker_xfer_fd(const struct docker_xfer *x)
{
	curl_socket_t fd = CURL_SOCKET_BAD;

	if (curl_easy_getinfo(x->s->easy, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK)
		return -1;
	return fd == CURL_SOCKET_BAD ? -1 : (int)fd;
}

int mafh__docker_http_do(struct docker_http *h, const struct docker_request *req,
			 struct docker_reply *reply, struct mafh_error *err)
{
	struct docker_xfer *x;
	int rc = mafh__docker_xfer_start(h, req, reply, mafh__now_ms(), &x, err);

	if (rc < 0)
		return rc;
	while ((rc = mafh__docker_xfer_step(x, mafh__now_ms(), err)) == 1) {
		struct mafh_pollfd fds[MAFH_WANT_FDS];
		struct pollfd pf[MAFH_WANT_FDS];
		int64_t until, left;
		int n = mafh__docker_xfer_want(x, fds, &until), i;

		left = until - mafh__now_ms();
		if (left <= 0)
			continue;
		for (i = 0; i < n; i++)
			pf[i] = (struct pollfd){.fd = fds[i].fd, .events = fds[i].events};
		poll(pf, (nfds_t)n, left > 1000 ? 1000 : (int)left);
	}
	mafh__docker_xfer_free(x);
	return rc;
}
