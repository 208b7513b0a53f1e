/* Where the Docker backend finds its engine, as the docker CLI does: the options' socket or
 * host, else DOCKER_HOST, else a docker context (DOCKER_CONTEXT, or the config's
 * currentContext), else the default socket. A host is unix:///PATH, tcp://HOST:PORT (TLS as
 * DOCKER_TLS_VERIFY, DOCKER_TLS and DOCKER_CERT_PATH say, or as the context's files) or
 * ssh://[USER@]HOST[:PORT][/SOCKET] (the engine reached through `ssh HOST docker system
 * dial-stdio`, as the CLI's connection helper runs it). The parsers of a host and of a
 * context's metadata are pure (the metadata is a file anyone who can write the config
 * directory chose): unit tests and fuzz targets take them alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cJSON.h"
#include "docker.h"
#include "internal.h"
#include "protocol.h"

/* A config.json or meta.json larger than this is refused (the CLI's are a few KiB). */
#define META_MAX (1u << 20)
/* The CLI's connect timeout for ssh, given unless the user's own flags say otherwise. */
#define SSH_CONNECT_TIMEOUT "ConnectTimeout=30"

void mafh__docker_endpoint_clear(struct docker_endpoint *ep)
{
	int i;

	free(ep->where);
	free(ep->socket);
	free(ep->base);
	free(ep->ca);
	free(ep->cert);
	free(ep->key);
	if (ep->ssh_argv)
		for (i = 0; ep->ssh_argv[i]; i++)
			free(ep->ssh_argv[i]);
	free(ep->ssh_argv);
	memset(ep, 0, sizeof(*ep));
}

static int nomem(struct mafh_error *err)
{
	return mafh__error_set(err, MAFH_ENOMEM, "out of memory finding the Docker engine");
}

/* 1 when s is something a POSIX shell takes as one word as it is. */
static int plain_word(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "_./:=@%+-,", *s))
			return 0;
	return 1;
}

/* Appends s to *cmd as one shell word (single-quoted unless plain), a space before it. */
static int add_word(char **cmd, size_t *len, size_t *size, const char *s)
{
	const char *p;

	if (*len && mafh__append(cmd, len, size, SIZE_MAX, " ", 1) < 0)
		return -1;
	if (plain_word(s))
		return mafh__append(cmd, len, size, SIZE_MAX, s, strlen(s));
	if (mafh__append(cmd, len, size, SIZE_MAX, "'", 1) < 0)
		return -1;
	for (p = s; *p; p++) {
		if (*p == '\'' ? mafh__append(cmd, len, size, SIZE_MAX, "'\\''", 4) < 0
			       : mafh__append(cmd, len, size, SIZE_MAX, p, 1) < 0)
			return -1;
	}
	return mafh__append(cmd, len, size, SIZE_MAX, "'", 1);
}

/* The ssh command the CLI runs for spec: ssh [-l USER] [-p PORT] -o ConnectTimeout=30 -T --
 * HOST 'docker [--host=unix://SOCKET] system dial-stdio'. */
static int ssh_argv(struct docker_endpoint *ep, const char *user, const char *port,
		    const char *host, const char *path)
{
	const char *words[4] = {"docker", NULL, "system", "dial-stdio"};
	char *cmd = NULL, *hostopt = NULL;
	size_t len = 0, size = 0;
	int i, n = 0;

	ep->ssh_argv = calloc(12, sizeof(char *));
	if (!ep->ssh_argv)
		return -1;
	if (path && strcmp(path, "/") != 0 && *path && asprintf(&hostopt, "--host=unix://%s",
								 path) < 0)
		return -1;
	words[1] = hostopt;
	for (i = 0; i < 4; i++)
		if (words[i] && add_word(&cmd, &len, &size, words[i]) < 0) {
			free(cmd);
			free(hostopt);
			return -1;
		}
	free(hostopt);
#define ARG(s) do { if (!(ep->ssh_argv[n++] = strdup(s))) goto fail; } while (0)
	ARG("ssh");
	if (user) {
		ARG("-l");
		ARG(user);
	}
	if (port) {
		ARG("-p");
		ARG(port);
	}
	ARG("-o");
	ARG(SSH_CONNECT_TIMEOUT);
	ARG("-T");
	ARG("--");
	ARG(host);
#undef ARG
	ep->ssh_argv[n] = cmd;
	return 0;
fail:
	free(cmd);
	return -1;
}

static int bad_host(struct mafh_error *err, const char *url, const char *why)
{
	return mafh__error_set(err, MAFH_EINVAL, "the Docker host '%s' %s", url, why);
}

/* A port: 1 to 65535 in decimal. */
static int port_ok(const char *p, size_t n)
{
	long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return 0;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (p[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/* Splits authority[0..n) into host and port (either may be empty): [V6]:PORT, HOST:PORT or
 * HOST. -1 when it is none of those. */
static int split_authority(const char *a, size_t n, char *host, size_t host_size,
			   char *port, size_t port_size)
{
	const char *colon;
	size_t hl;

	if (n && a[0] == '[') {
		const char *end = memchr(a, ']', n);

		if (!end)
			return -1;
		hl = (size_t)(end - a) + 1;
		colon = hl < n ? a + hl : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		colon = memchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
		if (colon && memchr(colon + 1, ':', n - hl - 1))
			return -1;
	}
	if (hl >= host_size)
		return -1;
	memcpy(host, a, hl);
	host[hl] = '\0';
	port[0] = '\0';
	if (colon) {
		size_t pl = n - hl - 1;

		if (pl >= port_size || !port_ok(colon + 1, pl))
			return -1;
		memcpy(port, colon + 1, pl);
		port[pl] = '\0';
	}
	return 0;
}

/* 1 when host[0..) holds only what a host name or address may (letters, digits, '.', '-',
 * '_', and the brackets and colons of an IPv6 one), not starting with '-'. */
static int host_chars_ok(const char *h)
{
	if (h[0] == '-')
		return 0;
	for (; *h; h++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    ".-_[]:%", *h))
			return 0;
	return 1;
}

int mafh__docker_host_parse(const char *url, int tls, struct docker_endpoint *ep,
			    struct mafh_error *err)
{
	char host[256], port[8], user[128];
	const char *rest, *slash, *at;
	size_t n;

	memset(ep, 0, sizeof(*ep));
	if (!url || !*url)
		return bad_host(err, "", "is empty");
	if (strlen(url) > 2048)
		return mafh__error_set(err, MAFH_EINVAL, "the Docker host is longer than 2048 "
				       "bytes");
	if (strncmp(url, "unix://", 7) == 0) {
		if (url[7] != '/')
			return bad_host(err, url, "does not name an absolute socket path "
					"(unix:///PATH)");
		ep->via = DOCKER_VIA_UNIX;
		if (!(ep->socket = strdup(url + 7)) || !(ep->where = strdup(url + 7)) ||
		    !(ep->base = strdup("http://docker")))
			goto oom;
		return 0;
	}
	if (strncmp(url, "tcp://", 6) == 0) {
		rest = url + 6;
		slash = strchr(rest, '/');
		n = slash ? (size_t)(slash - rest) : strlen(rest);
		if (slash && strcmp(slash, "/") != 0)
			return bad_host(err, url, "has a path; the Docker backend takes "
					"tcp://HOST:PORT");
		if (memchr(rest, '@', n) || memchr(rest, '?', n) || memchr(rest, '#', n) ||
		    split_authority(rest, n, host, sizeof(host), port, sizeof(port)) < 0 ||
		    !host_chars_ok(host))
			return bad_host(err, url, "is not tcp://HOST:PORT");
		ep->via = DOCKER_VIA_TCP;
		ep->tls = tls;
		/* The CLI's defaults: 127.0.0.1, and 2376 with TLS, 2375 without. */
		if (asprintf(&ep->where, "tcp://%s:%s", host[0] ? host : "127.0.0.1",
			     port[0] ? port : tls ? "2376" : "2375") < 0) {
			ep->where = NULL;
			goto oom;
		}
		if (asprintf(&ep->base, "%s://%s", tls ? "https" : "http", ep->where + 6) < 0) {
			ep->base = NULL;
			goto oom;
		}
		return 0;
	}
	if (strncmp(url, "ssh://", 6) == 0) {
		rest = url + 6;
		if (strpbrk(rest, "?#"))
			return bad_host(err, url, "has a query or a fragment, which ssh:// takes "
					"none of");
		slash = strchr(rest, '/');
		n = slash ? (size_t)(slash - rest) : strlen(rest);
		at = memchr(rest, '@', n);
		user[0] = '\0';
		if (at) {
			size_t ul = (size_t)(at - rest);

			if (memchr(rest, ':', ul))
				return bad_host(err, url, "holds a password: a plain-text password "
						"is not supported (use ssh's keys or agent)");
			if (ul == 0 || ul >= sizeof(user) || rest[0] == '-')
				return bad_host(err, url, "names no usable user before '@'");
			memcpy(user, rest, ul);
			user[ul] = '\0';
			n -= ul + 1;
			rest = at + 1;
		}
		if (split_authority(rest, n, host, sizeof(host), port, sizeof(port)) < 0 ||
		    !host[0] || !host_chars_ok(host))
			return bad_host(err, url, "is not ssh://[USER@]HOST[:PORT][/SOCKET]");
		if (slash && slash[1] && slash[strspn(slash, "/")] == '\0')
			slash = NULL;
		ep->via = DOCKER_VIA_SSH;
		/* libcurl resolves the URL's host before it asks for the socket: a number. */
		if (!(ep->where = strdup(url)) || !(ep->base = strdup("http://127.0.0.1")) ||
		    ssh_argv(ep, user[0] ? user : NULL, port[0] ? port : NULL, host,
			     slash) < 0)
			goto oom;
		return 0;
	}
	return bad_host(err, url, "is not one the Docker backend can reach: it takes "
			"unix:///PATH, tcp://HOST:PORT and ssh://[USER@]HOST[:PORT]");
oom:
	mafh__docker_endpoint_clear(ep);
	return nomem(err);
}

int mafh__docker_context_parse(const char *json, size_t len, const char *name, char **host,
			       int *skip_verify)
{
	cJSON *j = mafp_json_parse(json, len, META_MAX), *ep, *h, *sv, *nm;
	int rc = -1;

	*host = NULL;
	*skip_verify = 0;
	if (!j)
		return -1;
	nm = cJSON_GetObjectItemCaseSensitive(j, "Name");
	if (!cJSON_IsString(nm) || strcmp(nm->valuestring, name) != 0) {
		rc = 1;
		goto out;
	}
	ep = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "Endpoints"),
					      "docker");
	h = cJSON_GetObjectItemCaseSensitive(ep, "Host");
	sv = cJSON_GetObjectItemCaseSensitive(ep, "SkipTLSVerify");
	if (!cJSON_IsObject(ep) || (h && !cJSON_IsString(h) && !cJSON_IsNull(h)) ||
	    (sv && !cJSON_IsBool(sv) && !cJSON_IsNull(sv)))
		goto out;
	*skip_verify = cJSON_IsTrue(sv);
	if (cJSON_IsString(h) && h->valuestring[0] && !(*host = strdup(h->valuestring)))
		goto out;
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* A file of at most META_MAX bytes, whole, in *buf (malloc'd, NUL-terminated): 0, or -errno
 * (-EFBIG past the bound). */
static int slurp(const char *path, char **buf, size_t *len)
{
	size_t size = 0;
	char chunk[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	ssize_t n;

	*buf = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (*len + (size_t)n > META_MAX) {
			n = -1;
			errno = EFBIG;
			break;
		}
		if (mafh__append(buf, len, &size, SIZE_MAX, chunk, (size_t)n) < 0) {
			n = -1;
			errno = ENOMEM;
			break;
		}
	}
	e = n < 0 ? errno : 0;
	close(fd);
	if (e || mafh__append(buf, len, &size, SIZE_MAX, "", 1) < 0) {
		free(*buf);
		*buf = NULL;
		return e ? -e : -ENOMEM;
	}
	(*len)--;
	return 0;
}

/* The CLI's configuration directory: DOCKER_CONFIG, else ~/.docker (HOME, else the passwd
 * entry's home). */
static int config_dir(char *buf, size_t size)
{
	const char *env = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
	struct passwd *pw;

	if (env && *env)
		return snprintf(buf, size, "%s", env) < (int)size ? 0 : -1;
	if (!home || !*home) {
		pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home)
		return -1;
	return snprintf(buf, size, "%s/.docker", home) < (int)size ? 0 : -1;
}

/* The context's name: the option's, DOCKER_CONTEXT's, or config.json's currentContext; NULL
 * for the default one. *from says where it came from, for sentences. */
static int context_name(const struct mafh_docker_options *o, const char *dir, char **out,
			const char **from, struct mafh_error *err)
{
	const char *env = getenv("DOCKER_CONTEXT");
	char path[4096], *json;
	size_t len;
	cJSON *j, *cur;
	int rc;

	*out = NULL;
	if (o->context && *o->context) {
		*from = "the options";
		return (*out = strdup(o->context)) ? 0 : nomem(err);
	}
	if (env && *env) {
		*from = "DOCKER_CONTEXT";
		return (*out = strdup(env)) ? 0 : nomem(err);
	}
	*from = "config.json's currentContext";
	if (snprintf(path, sizeof(path), "%s/config.json", dir) >= (int)sizeof(path))
		return 0;
	rc = slurp(path, &json, &len);
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc < 0)
		return mafh__error_set(err, rc, "the docker CLI's configuration %s cannot be "
				       "read: %s", path, strerror(-rc));
	j = mafp_json_parse(json, len, META_MAX);
	free(json);
	if (!j)
		return mafh__error_set(err, MAFH_EINVAL, "the docker CLI's configuration %s is "
				       "not JSON", path);
	cur = cJSON_GetObjectItemCaseSensitive(j, "currentContext");
	if (cJSON_IsString(cur) && cur->valuestring[0] && !(*out = strdup(cur->valuestring))) {
		cJSON_Delete(j);
		return nomem(err);
	}
	cJSON_Delete(j);
	return 0;
}

/* The TLS files of a context (DIR/contexts/tls/ID/docker/NAME.pem), each when present. */
static int context_tls(struct docker_endpoint *ep, const char *dir, const char *id,
		       struct mafh_error *err)
{
	static const char *const names[3] = {"ca.pem", "cert.pem", "key.pem"};
	char **dst[3] = {&ep->ca, &ep->cert, &ep->key};
	char path[4096];
	int i;

	for (i = 0; i < 3; i++) {
		if (snprintf(path, sizeof(path), "%s/contexts/tls/%s/docker/%s", dir, id,
			     names[i]) >= (int)sizeof(path))
			continue;
		if (access(path, F_OK) == 0 && !(*dst[i] = strdup(path)))
			return nomem(err);
	}
	return 0;
}

/* The context name's endpoint, from DIR/contexts/meta/ID/meta.json, the one whose Name is
 * name (ID is its SHA-256, which the scan need not compute). */
static int context_endpoint(const char *dir, const char *name, const char *from,
			    struct docker_endpoint *ep, struct mafh_error *err)
{
	char path[4096], *json, *host = NULL;
	struct dirent *de;
	size_t len;
	int rc = 1, skip = 0;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/contexts/meta", dir) >= (int)sizeof(path))
		return mafh__error_set(err, MAFH_EINVAL, "the docker CLI's configuration "
				       "directory's path is too long");
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) > 128)
			continue;
		if (snprintf(path, sizeof(path), "%s/contexts/meta/%s/meta.json", dir,
			     de->d_name) >= (int)sizeof(path) || slurp(path, &json, &len) < 0)
			continue;
		rc = mafh__docker_context_parse(json, len, name, &host, &skip);
		free(json);
		if (rc <= 0)
			break;
	}
	if (rc < 0) {
		if (d)
			closedir(d);
		return mafh__error_set(err, MAFH_EINVAL, "the Docker context '%s' (%s) has "
				       "metadata that cannot be read: %s", name, from, path);
	}
	if (rc > 0) {
		if (d)
			closedir(d);
		return mafh__error_set(err, MAFH_ENOENT, "there is no Docker context '%s' (%s) "
				       "in %s/contexts", name, from, dir);
	}
	if (!host) {
		closedir(d);
		return mafh__error_set(err, MAFH_EINVAL, "the Docker context '%s' (%s) names no "
				       "host for the engine", name, from);
	}
	rc = mafh__docker_host_parse(host, 0, ep, err);
	free(host);
	if (rc == 0 && ep->via == DOCKER_VIA_TCP) {
		rc = context_tls(ep, dir, de->d_name, err);
		/* TLS when the context has its files or says to skip their verification. */
		if (rc == 0 && (ep->ca || ep->cert || ep->key || skip)) {
			char *where = strdup(ep->where);

			mafh__docker_endpoint_clear(ep);
			if (!where) {
				closedir(d);
				return nomem(err);
			}
			rc = mafh__docker_host_parse(where, 1, ep, err);
			free(where);
			if (rc == 0) {
				ep->verify = !skip;
				rc = context_tls(ep, dir, de->d_name, err);
			}
		}
	}
	closedir(d);
	if (rc < 0)
		mafh__docker_endpoint_clear(ep);
	return rc;
}

/* TLS as the CLI takes it from its environment: DOCKER_TLS_VERIFY (any value: TLS, and the
 * engine's certificate verified), DOCKER_TLS (TLS without that), the files in
 * DOCKER_CERT_PATH, else the configuration directory: ca.pem must be there, cert.pem and
 * key.pem are sent when there. */
static int env_tls(struct docker_endpoint *ep, const char *dir, struct mafh_error *err)
{
	const char *certs = getenv("DOCKER_CERT_PATH");
	char path[4096];

	if (!certs || !*certs)
		certs = dir;
	if (!certs)
		return mafh__error_set(err, MAFH_EINVAL, "TLS is asked for, but there is no "
				       "DOCKER_CERT_PATH and no home directory to find ca.pem in");
	if (snprintf(path, sizeof(path), "%s/ca.pem", certs) >= (int)sizeof(path))
		return mafh__error_set(err, MAFH_EINVAL, "DOCKER_CERT_PATH is too long");
	if (access(path, R_OK) != 0)
		return mafh__error_set(err, -errno, "TLS to the Docker engine at %s needs the CA "
				       "certificate %s: %s", ep->where, path, strerror(errno));
	if (!(ep->ca = strdup(path)))
		return nomem(err);
	if (snprintf(path, sizeof(path), "%s/cert.pem", certs) < (int)sizeof(path) &&
	    access(path, F_OK) == 0 && !(ep->cert = strdup(path)))
		return nomem(err);
	if (snprintf(path, sizeof(path), "%s/key.pem", certs) < (int)sizeof(path) &&
	    access(path, F_OK) == 0 && !(ep->key = strdup(path)))
		return nomem(err);
	return 0;
}

int mafh__docker_endpoint_resolve(const struct mafh_docker_options *o,
				  struct docker_endpoint *ep, struct mafh_error *err)
{
	const char *env = getenv("DOCKER_HOST"), *verify = getenv("DOCKER_TLS_VERIFY");
	const char *tls_env = getenv("DOCKER_TLS"), *from = NULL, *url = NULL;
	char dir[4096], *ctx = NULL;
	int have_dir = config_dir(dir, sizeof(dir)) == 0, rc, tls;

	memset(ep, 0, sizeof(*ep));
	tls = (verify && *verify) || (tls_env && *tls_env);
	if (o->socket_path) {
		if (o->socket_path[0] != '/')
			return mafh__error_set(err, MAFH_EINVAL, "the Docker engine's socket '%s' "
					       "is not an absolute path", o->socket_path);
		ep->via = DOCKER_VIA_UNIX;
		if (!(ep->socket = strdup(o->socket_path)) || !(ep->where = strdup(o->socket_path))
		    || !(ep->base = strdup("http://docker"))) {
			mafh__docker_endpoint_clear(ep);
			return nomem(err);
		}
		return 0;
	}
	/* The CLI's order: a host given, a context given, DOCKER_HOST, then DOCKER_CONTEXT
	 * and the configuration's current context. */
	if (o->host && *o->host)
		url = o->host;
	else if (env && *env && !(o->context && *o->context))
		url = env;
	if (!url && have_dir) {
		if ((rc = context_name(o, dir, &ctx, &from, err)) < 0)
			return rc;
		if (ctx && strcmp(ctx, "default") != 0) {
			rc = context_endpoint(dir, ctx, from, ep, err);
			free(ctx);
			return rc;
		}
		free(ctx);
	}
	if (!url)
		url = "unix://" MAFH_DOCKER_SOCKET;
	if ((rc = mafh__docker_host_parse(url, tls, ep, err)) < 0)
		return rc;
	if (ep->via == DOCKER_VIA_TCP && tls) {
		ep->verify = verify && *verify;
		if ((rc = env_tls(ep, have_dir ? dir : NULL, err)) < 0) {
			mafh__docker_endpoint_clear(ep);
			return rc;
		}
	}
	return 0;
}
