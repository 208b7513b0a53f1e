/* Unit tests for the core's table (host/src/core.c): the graph printed from it is the one
 * checked in as docs/core-states.dot, and the table's shape holds (every state reached from
 * BEGIN, DONE reached from every state). Run from the checkout's root, as make unit does.
 * `test_core_states --print` prints the graph: `make core-states` writes the file with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core.h"

#define DOT_PATH "docs/core-states.dot"

/* The graph as the table prints it, malloc'd. */
static char *table_dot(size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(mafh__core_dot(f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The checked-in file, malloc'd, or NULL when it cannot be read. */
static char *file_dot(size_t *len)
{
	FILE *f = fopen(DOT_PATH, "rb");
	char *buf = NULL;
	size_t cap = 0, n;

	if (!f)
		return NULL;
	*len = 0;
	do {
		if (*len + 4096 > cap) {
			char *nb = realloc(buf, cap += 65536);

			assert_non_null(nb);
			buf = nb;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	fclose(f);
	return buf;
}

/* The line of buf[0..len) that holds offset i: its start, and its length in *n. */
static const char *line_at(const char *buf, size_t len, size_t i, int *n)
{
	const char *p = buf + (i < len ? i : len), *nl;

	while (p > buf && p[-1] != '\n')
		p--;
	nl = memchr(p, '\n', (size_t)(buf + len - p));
	*n = (int)((nl ? nl : buf + len) - p);
	return p;
}

static void test_graph_is_checked_in(void **state)
{
	size_t tlen, flen = 0, i, line = 1;
	char *table = table_dot(&tlen), *file = file_dot(&flen);
	const char *tl, *fl;
	int tn, fn;

	(void)state;
	if (!file)
		fail_msg("%s cannot be read (run the test from the checkout's root): `make "
			 "core-states` writes it from the table", DOT_PATH);
	for (i = 0; i < tlen && i < flen && table[i] == file[i]; i++)
		line += table[i] == '\n';
	if (i < tlen || i < flen) {
		tl = line_at(table, tlen, i, &tn);
		fl = line_at(file, flen, i, &fn);
		print_error("%s differs from the table in host/src/core.c at line %zu:\n"
			    "  table: %.*s\n  file:  %.*s\n", DOT_PATH, line, tn, tl, fn, fl);
		free(table);
		free(file);
		fail_msg("the table changed and %s did not: `make core-states` writes it again",
			 DOT_PATH);
	}
	free(table);
	free(file);
}

/* Every state is reached from BEGIN, and reaches DONE. */
static void test_table_shape(void **state)
{
	int from_begin[ST_COUNT] = {0}, to_done[ST_COUNT] = {0};
	int changed;

	(void)state;
	from_begin[ST_BEGIN] = 1;
	to_done[ST_DONE] = 1;
	do {
		changed = 0;
		for (int s = 0; s < ST_COUNT; s++)
			for (int o = 0; o < OC_COUNT; o++) {
				enum mafh__state to = mafh__core_next(s, o);

				if (to == ST_BEGIN)
					continue;
				if (from_begin[s] && !from_begin[to])
					changed = from_begin[to] = 1;
				if (to_done[to] && !to_done[s])
					changed = to_done[s] = 1;
			}
	} while (changed);
	for (int s = 0; s < ST_COUNT; s++) {
		if (!from_begin[s] || !to_done[s])
			fail_msg("state %d is %s", s, !from_begin[s] ? "not reached from BEGIN"
				 : "a dead end: DONE is not reached from it");
	}
	/* Nothing leads anywhere from DONE, nor on PENDING (an op out, no transition). */
	for (int o = 0; o < OC_COUNT; o++)
		assert_int_equal(mafh__core_next(ST_DONE, o), ST_BEGIN);
	for (int s = 0; s < ST_COUNT; s++)
		assert_int_equal(mafh__core_next(s, OC_PENDING), ST_BEGIN);
	/* A run cut short goes to its ending, wherever it is cut. */
	for (int s = 0; s < ST_COUNT; s++) {
		enum mafh__state to = mafh__core_next(s, OC_CUT);

		assert_true(to == ST_BEGIN || to == ST_ENDING);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_graph_is_checked_in),
		cmocka_unit_test(test_table_shape),
	};

	if (argc == 2 && strcmp(argv[1], "--print") == 0)
		return mafh__core_dot(stdout) == 0 && fflush(stdout) == 0 ? 0 : 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
