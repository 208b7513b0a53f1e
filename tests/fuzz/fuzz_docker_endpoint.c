/* libFuzzer target: where the Docker backend's engine is, from what a user or a file wrote:
 * a DOCKER_HOST-style host (mafh__docker_host_parse) and a docker context's meta.json
 * (mafh__docker_context_parse), host/backends/docker_endpoint.c. The input is the host, a
 * NUL, then the metadata. Oracle: a host taken has every field its kind needs (an ssh one
 * an argv "ssh" ... "--" HOST COMMAND whose HOST cannot be read as an option); one refused
 * leaves the endpoint empty with a sentence; metadata taken names a host or none, never an
 * empty one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t hl = nul ? (size_t)(nul - data) : size;
	char *url = malloc(hl + 1), *host = NULL;
	struct docker_endpoint ep;
	struct mafh_error err = {0};
	int rc, skip, i;

	if (!url)
		abort();
	memcpy(url, data, hl);
	url[hl] = '\0';
	rc = mafh__docker_host_parse(url, hl & 1, &ep, &err);
	if (rc == 0) {
		if (!ep.where || !ep.base)
			abort();
		if (ep.via == DOCKER_VIA_UNIX && (!ep.socket || ep.socket[0] != '/'))
			abort();
		if (ep.via == DOCKER_VIA_SSH) {
			if (!ep.ssh_argv || strcmp(ep.ssh_argv[0], "ssh") != 0)
				abort();
			for (i = 0; ep.ssh_argv[i] && strcmp(ep.ssh_argv[i], "--") != 0; i++)
				;
			if (!ep.ssh_argv[i] || !ep.ssh_argv[i + 1] || ep.ssh_argv[i + 1][0] == '-' ||
			    !ep.ssh_argv[i + 2] || ep.ssh_argv[i + 3])
				abort();
		}
		mafh__docker_endpoint_clear(&ep);
	} else if (ep.where || ep.base || ep.socket || ep.ssh_argv || !err.message[0]) {
		abort();
	}
	free(url);
	if (nul) {
		rc = mafh__docker_context_parse((const char *)nul + 1, size - hl - 1, "x", &host,
						&skip);
		if ((rc != 0 && host) || (host && !host[0]))
			abort();
		free(host);
	}
	return 0;
}
