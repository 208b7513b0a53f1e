/* A harness that drives the Docker backend through libmafhost's public API, for the tests
 * in this directory: one JSON object a line on stdin, one answer a line on stdout, so a test
 * can change the engine's world (stop or remove the container) between two operations.
 * Bytes cross as hex.
 *   {"op":"new","container":C,"launcher":L,"socket":S}   L and S optional
 *   {"op":"exec","argv":[...],"timeout_ms":N,"out_cap":N}
 *   {"op":"write","path":P,"hex":H}
 *   {"op":"read","path":P,"cap":N}
 *   {"op":"stat","path":P}
 *   {"op":"mkdtemp","template":T}
 *   {"op":"requests"}
 * Every answer has "rc" (0 or the negative code) and "message" (the error's sentence, or
 * ""), and what the operation gave. usage: docker_ops < LINES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"
#include "mafhost.h"

#define LINE_MAX_BYTES (64u << 20)
#define BAD_LINE 1              /* perform's answer to a line it cannot perform */

static char *hex_of(const char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *h = malloc(n * 2 + 1);
	size_t i;

	if (!h)
		return NULL;
	for (i = 0; i < n; i++) {
		h[2 * i] = digits[(unsigned char)p[i] >> 4];
		h[2 * i + 1] = digits[(unsigned char)p[i] & 15];
	}
	h[2 * n] = '\0';
	return h;
}

static int nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* hex (even length, lower case) into a malloc'd buffer of *n bytes, or NULL. */
static char *bytes_of(const char *hex, size_t *n)
{
	size_t len = strlen(hex), i;
	char *b = malloc(len / 2 + 1);

	if (!b || len % 2) {
		free(b);
		return NULL;
	}
	for (i = 0; i < len / 2; i++) {
		int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return NULL;
		}
		b[i] = (char)(hi << 4 | lo);
	}
	*n = len / 2;
	return b;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void add_hex(cJSON *out, const char *key, const char *p, size_t n)
{
	char *h = hex_of(p ? p : "", p ? n : 0);

	if (!h) {
		fprintf(stderr, "docker_ops: out of memory\n");
		exit(1);
	}
	cJSON_AddStringToObject(out, key, h);
	free(h);
}

static const char *const read_status[] = {"ok", "absent", "too_big", "not_regular"};
static const char *const file_type[] = {"none", "regular", "dir", "symlink", "other"};

/* Performs one operation over *b into out; 0, the code of a failure, or BAD_LINE. */
static int perform(struct mafh_backend **b, const cJSON *in, cJSON *out, struct mafh_error *err)
{
	const char *op = str(in, "op");
	int rc;

	if (!op)
		return BAD_LINE;
	if (strcmp(op, "new") == 0) {
		struct mafh_docker_options o;

		mafh_docker_options_init(&o);
		o.socket_path = str(in, "socket");
		mafh_backend_free(*b);
		*b = NULL;
		return mafh_backend_docker_new(str(in, "container"), str(in, "launcher"), &o, b,
					       err);
	}
	if (!*b)
		return BAD_LINE;
	if (strcmp(op, "exec") == 0) {
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(in, "argv");
		int n = cJSON_GetArraySize(args), i;
		const char **argv = calloc((size_t)n + 1, sizeof(*argv));
		struct mafh_exec_result res;

		if (!argv)
			return BAD_LINE;
		for (i = 0; i < n; i++)
			argv[i] = cJSON_GetArrayItem(args, i)->valuestring;
		rc = mafh_backend_exec(*b, argv, (int64_t)num(in, "timeout_ms", 0),
				       (size_t)num(in, "out_cap", 1 << 20), &res, err);
		free(argv);
		cJSON_AddNumberToObject(out, "exit_code", res.exit_code);
		cJSON_AddBoolToObject(out, "timed_out", res.timed_out);
		add_hex(out, "out", res.out, res.out_len);
		add_hex(out, "err", res.err, res.err_len);
		mafh_exec_result_clear(&res);
		return rc;
	}
	if (strcmp(op, "write") == 0) {
		size_t n = 0;
		char *data = bytes_of(str(in, "hex") ? str(in, "hex") : "", &n);

		if (!data)
			return BAD_LINE;
		rc = mafh_backend_write_file(*b, str(in, "path"), data, n, NULL, err);
		free(data);
		return rc;
	}
	if (strcmp(op, "read") == 0) {
		struct mafh_read_result res;

		rc = mafh_backend_read_file(*b, str(in, "path"), (size_t)num(in, "cap", 1 << 20),
					    &res, err);
		cJSON_AddStringToObject(out, "status", read_status[res.status]);
		cJSON_AddNumberToObject(out, "size", (double)res.size);
		add_hex(out, "hex", res.data, res.len);
		mafh_read_result_clear(&res);
		return rc;
	}
	if (strcmp(op, "stat") == 0) {
		struct mafh_stat st;

		rc = mafh_backend_stat(*b, str(in, "path"), &st, err);
		cJSON_AddBoolToObject(out, "exists", st.exists);
		cJSON_AddNumberToObject(out, "size", (double)st.size);
		cJSON_AddStringToObject(out, "type", file_type[st.type]);
		return rc;
	}
	if (strcmp(op, "mkdtemp") == 0) {
		char *t = strdup(str(in, "template") ? str(in, "template") : "");

		if (!t)
			return BAD_LINE;
		rc = mafh_backend_docker_mkdtemp(*b, t, err);
		cJSON_AddStringToObject(out, "path", t);
		free(t);
		return rc;
	}
	if (strcmp(op, "requests") == 0) {
		cJSON_AddNumberToObject(out, "requests", (double)mafh_backend_docker_requests(*b));
		return 0;
	}
	return BAD_LINE;
}

int main(void)
{
	struct mafh_backend *b = NULL;
	char *line = malloc(LINE_MAX_BYTES);

	if (!line)
		return 1;
	while (fgets(line, LINE_MAX_BYTES, stdin)) {
		struct mafh_error err = {0};
		cJSON *in = cJSON_Parse(line), *out = cJSON_CreateObject();
		char *text;
		int rc;

		if (!in || !out) {
			fprintf(stderr, "docker_ops: a line that is not JSON: %s", line);
			return 1;
		}
		rc = perform(&b, in, out, &err);
		if (rc == BAD_LINE) {
			fprintf(stderr, "docker_ops: a line it cannot perform: %s", line);
			return 1;
		}
		cJSON_AddNumberToObject(out, "rc", rc);
		cJSON_AddStringToObject(out, "message", err.message);
		text = cJSON_PrintUnformatted(out);
		if (!text)
			return 1;
		printf("%s\n", text);
		fflush(stdout);
		free(text);
		cJSON_Delete(in);
		cJSON_Delete(out);
	}
	mafh_backend_free(b);
	free(line);
	return 0;
}
