/* The Docker backend's requests: HTTP/1.1 to the engine over its unix socket, through one
 * libcurl easy handle kept for the backend's life, so its connection is reused from one
 * request to the next (an exec's stream ends with the connection, and the next request
 * opens another). One request at a time: docker.c holds its lock around each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "docker.h"
#include "internal.h"

#define CONNECT_TIMEOUT_MS 10000
#define PATH_STAT_HEADER "X-Docker-Container-Path-Stat:"

struct docker_http {
	CURL *curl;
	char *socket;
	int64_t requests;
	char errbuf[CURL_ERROR_SIZE];
};

int mafh__docker_http_new(const char *socket_path, struct docker_http **out,
			  struct mafh_error *err)
{
	struct docker_http *h;

	*out = NULL;
	/* libcurl counts its initialisations: each backend takes one and gives it back. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return mafh__error_set(err, MAFH_EIO, "libcurl cannot be initialised");
	h = calloc(1, sizeof(*h));
	if (!h || !(h->socket = strdup(socket_path)) || !(h->curl = curl_easy_init())) {
		if (h)
			free(h->socket);
		free(h);
		curl_global_cleanup();
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory setting up libcurl");
	}
	*out = h;
	return 0;
}

void mafh__docker_http_free(struct docker_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	free(h->socket);
	free(h);
	curl_global_cleanup();
}

int64_t mafh__docker_http_requests(const struct docker_http *h)
{
	return h->requests;
}

const char *mafh__docker_http_socket(const struct docker_http *h)
{
	return h->socket;
}

char *mafh__docker_escape(struct docker_http *h, const char *s)
{
	char *e = curl_easy_escape(h->curl, s, 0), *copy;

	/* curl's strings go back to curl_free: hand out one of our own. */
	copy = e ? strdup(e) : NULL;
	curl_free(e);
	return copy;
}

void mafh__docker_reply_clear(struct docker_reply *reply)
{
	free(reply->body);
	memset(reply, 0, sizeof(*reply));
}

/* A request in flight: the caller's request and reply, and where the answer stands. */
struct xfer {
	struct docker_http *h;
	const struct docker_request *req;
	struct docker_reply *reply;
	long status;
	int headers_seen;          /* the final answer's headers are all in */
	int nomem;
	size_t body_size;
};

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
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
static int keep(struct xfer *x, const char *p, size_t n, size_t cap)
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
	struct xfer *x = ud;
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

/* The sentence of a failed transfer. */
static int transfer_error(struct docker_http *h, CURLcode rc, struct mafh_error *err)
{
	long os_errno = 0;
	const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);

	curl_easy_getinfo(h->curl, CURLINFO_OS_ERRNO, &os_errno);
	switch (rc) {
	case CURLE_OUT_OF_MEMORY:
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory talking to the Docker "
				       "engine");
	case CURLE_COULDNT_CONNECT:
		if (os_errno > 0)
			return mafh__error_set(err, (int)-os_errno, "cannot reach the Docker engine "
					       "at %s: %s", h->socket, strerror((int)os_errno));
		return mafh__error_set(err, MAFH_EIO, "cannot reach the Docker engine at %s: %s",
				       h->socket, why);
	default:
		return mafh__error_set(err, MAFH_EIO, "the connection to the Docker engine at %s "
				       "failed: %s", h->socket, why);
	}
}

int mafh__docker_http_do(struct docker_http *h, const struct docker_request *req,
			 struct docker_reply *reply, struct mafh_error *err)
{
	struct xfer x = {.h = h, .req = req, .reply = reply};
	struct curl_slist *headers = NULL, *more;
	char url[DOCKER_PATH_MAX * 3 + 64], ctype[128];
	CURLcode rc;
	int n;

	memset(reply, 0, sizeof(*reply));
	n = snprintf(url, sizeof(url), "http://docker" DOCKER_API "%s", req->target);
	if (n < 0 || (size_t)n >= sizeof(url))
		return mafh__error_set(err, MAFH_EINVAL, "the engine request's path is too long");
	/* Options are set afresh for each request; reset keeps the connection. */
	curl_easy_reset(h->curl);
	h->errbuf[0] = '\0';
	/* No Expect: 100-continue round trip before a body. */
	headers = curl_slist_append(NULL, "Expect:");
	if (headers && req->content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", req->content_type);
		more = curl_slist_append(headers, ctype);
		if (!more) {
			curl_slist_free_all(headers);
			headers = NULL;
		} else {
			headers = more;
		}
	}
	if (!headers)
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory talking to the Docker "
				       "engine");
	if (curl_easy_setopt(h->curl, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_UNIX_SOCKET_PATH, h->socket) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS) !=
		    CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS,
			     req->timeout_ms > 0 ? (long)req->timeout_ms : 0L) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &x) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &x) != CURLE_OK) {
		curl_slist_free_all(headers);
		return mafh__error_set(err, MAFH_EIO, "libcurl refused an option of the engine "
				       "request");
	}
	if (strcmp(req->method, "HEAD") == 0) {
		curl_easy_setopt(h->curl, CURLOPT_NOBODY, 1L);
	} else if (strcmp(req->method, "GET") != 0) {
		/* POST and PUT: the body as POST data, under the method asked for. */
		curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body ? req->body_len : 0));
		if (strcmp(req->method, "POST") != 0)
			curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, req->method);
	}
	h->requests++;
	rc = curl_easy_perform(h->curl);
	curl_slist_free_all(headers);
	if (x.nomem) {
		mafh__docker_reply_clear(reply);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory reading the Docker "
				       "engine's answer");
	}
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && reply->stopped))
		return 0;
	if (rc == CURLE_OPERATION_TIMEDOUT && req->timeout_ms > 0) {
		reply->timed_out = 1;
		return 0;
	}
	reply->status = 0;
	return transfer_error(h, rc, err);
}
