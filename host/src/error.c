/* Error codes, sentences and small helpers shared by every file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

const char *mafh_strerror(int code)
{
	switch (code) {
	case MAFH_OK:
		return "success";
	case MAFH_EINVAL:
		return "invalid argument";
	case MAFH_ENOMEM:
		return "out of memory";
	case MAFH_ENOTSUP:
		return "the backend lacks a needed capability";
	case MAFH_EPERM:
		return "operation refused";
	case MAFH_EEXIST:
		return "already registered";
	case MAFH_ENOENT:
		return "no such file or tool";
	case MAFH_E2BIG:
		return "past a size or count cap";
	case MAFH_EIO:
		return "backend operation failed";
	case MAFH_EPROTO:
		return "protocol violation";
	case MAFH_ETIMEDOUT:
		return "deadline passed";
	case MAFH_EBUSY:
		return "busy";
	case MAFH_ECANCELED:
		return "stopped";
	case MAFH_ELAUNCH:
		return "launch failed";
	case MAFH_EPIPE:
		return "the stream has ended";
	}
	/* Any other errno a backend passed through, in the C library's words; the strings of
	 * strerrordesc_np are static and never rewritten, unlike strerror's. */
	if (code < 0 && code > -4096) {
		const char *s = strerrordesc_np(-code);

		if (s)
			return s;
	}
	return "unknown error";
}

const char *mafh_version(void)
{
	return MAFH_VERSION;
}

int mafh__error_set(struct mafh_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

void mafh__error_clear(struct mafh_error *err)
{
	if (err) {
		err->code = 0;
		err->message[0] = '\0';
	}
}

void mafh__copy_versioned(void *dst, size_t dst_size, const void *src, size_t src_size)
{
	size_t n = src_size < dst_size ? src_size : dst_size;

	memset(dst, 0, dst_size);
	memcpy(dst, src, n);
}

int64_t mafh__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mafh__sleep_until_ms(int64_t until_ms)
{
	struct timespec ts;

	ts.tv_sec = until_ms / 1000;
	ts.tv_nsec = (until_ms % 1000) * 1000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int mafh__append(char **buf, size_t *len, size_t *size, size_t cap, const void *p, size_t n)
{
	if (*len >= cap)
		return 0;
	if (n > cap - *len)
		n = cap - *len;
	if (*len + n + 1 > *size) {
		size_t ns = *size ? *size : 4096;
		char *nb;

		while (ns < *len + n + 1)
			ns *= 2;
		nb = realloc(*buf, ns);
		if (!nb) {
			errno = ENOMEM;
			return -1;
		}
		*buf = nb;
		*size = ns;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}
