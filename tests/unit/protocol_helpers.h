/* Helpers of the wire protocol's unit tests (test_protocol*.c): unterminated copies, so
 * that ASan catches a parser that reads past its length, and nested JSON. Static inline,
 * so that each test file compiles the helpers it uses and no warning names the others. */
#ifndef PROTOCOL_HELPERS_H
#define PROTOCOL_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define LEN(s) (sizeof(s) - 1)

/* A heap copy of n bytes with no terminator after them, so that ASan catches a parser that
 * reads past len. */
static inline char *unterminated(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);

	assert_non_null(p);
	memcpy(p, s, n);
	return p;
}

/* depth times open, then inner, then depth times close: malloc'd. */
static inline char *nested(int depth, const char *open, const char *close, const char *inner)
{
	size_t n = strlen(inner) + (size_t)depth * (strlen(open) + strlen(close)) + 1;
	char *s = malloc(n), *w = s;
	int i;

	assert_non_null(s);
	for (i = 0; i < depth; i++)
		w += sprintf(w, "%s", open);
	w += sprintf(w, "%s", inner);
	for (i = 0; i < depth; i++)
		w += sprintf(w, "%s", close);
	return s;
}

#endif
