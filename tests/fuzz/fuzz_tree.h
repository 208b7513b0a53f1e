/* Shared by the fuzz targets: compares a cJSON tree with the tree its printed form parses
 * back to. cJSON_Compare cannot be the oracle: it looks object members up by key, so an
 * object with a duplicate key differs from itself. */
#ifndef FUZZ_TREE_H
#define FUZZ_TREE_H

#include <math.h>
#include <string.h>

#include "cJSON.h"

/* 1 if b is what printing a and parsing the text gives: the same shape and keys in the same
 * order; numbers equal to the precision cJSON prints (it may use 15 significant digits);
 * a non-finite number (from "1e999") prints as null. */
static int fuzz_same_node(const cJSON *a, const cJSON *b, int top)
{
	const cJSON *x, *y;

	if (!a || !b)
		return a == b;
	/* A detached member keeps its key; only members below the top are compared by key. */
	if (!top && (a->string || b->string) &&
	    (!a->string || !b->string || strcmp(a->string, b->string) != 0))
		return 0;
	if (cJSON_IsNumber(a) && !isfinite(a->valuedouble))
		return cJSON_IsNull(b);
	if ((a->type & 0xff) != (b->type & 0xff))
		return 0;
	if (cJSON_IsNumber(a)) {
		double d = fabs(a->valuedouble - b->valuedouble);
		double m = fmax(fabs(a->valuedouble), fabs(b->valuedouble));

		return d <= m * 1e-14 || d == 0;
	}
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			if (!fuzz_same_node(x, y, 0))
				return 0;
		return !x && !y;
	}
	return 1;
}

static int fuzz_same_tree(const cJSON *a, const cJSON *b)
{
	return fuzz_same_node(a, b, 1);
}

#endif
