/* Included before cJSON.c in the launcher's build only (the Makefile's -include): cJSON reads
 * back a number it has just printed with sscanf("%lg"), which would link the C library's
 * whole scanf engine into a launcher that is baked into every image. strtod reads the same
 * text to the same double. */
#ifndef MAFL_CJSON_SCAN_H
#define MAFL_CJSON_SCAN_H

#include <stdio.h>
#include <stdlib.h>

static inline int mafl_scan_lg(const char *s, double *d)
{
	char *end;

	*d = strtod(s, &end);
	return end != s;
}

#define sscanf(s, fmt, d) mafl_scan_lg((s), (d))

#endif
