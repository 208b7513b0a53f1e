/* The guest shim maf_host_tools.py, generated from a registry. It implements maf-sandbox's
 * shim semantics exactly (shared/PROTOCOL.md, "Host-tool calls (upstream)"), so a program
 * written against upstream's module runs unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The module's text, shim_template: host/src/shim/maf_host_tools.py, which host/gen/embed
 * turns into a C string when the library is built. Its placeholders are filled in here. */
#include "shim_template.h"

/* The line the registry's tools take the place of. */
#define TOOLS_LINE "    # @TOOLS@\n"

/* The other placeholders, and what stands in for each. */
static const struct {
	const char *name;
	const char *value;
} fills[] = {
	{"@MAFH_VERSION@", MAFH_VERSION},
	{"@MAFP_DIR_CALLS@", MAFP_DIR_CALLS},
	{"@MAFP_PART_SUFFIX@", MAFP_PART_SUFFIX},
	{"@MAFP_SUFFIX_CLAIM@", MAFP_SUFFIX_CLAIM},
	{"@MAFP_SUFFIX_REQUEST@", MAFP_SUFFIX_REQUEST},
	{"@MAFP_SUFFIX_RESPONSE@", MAFP_SUFFIX_RESPONSE},
};

struct buf {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (!b->failed && mafh__append(&b->p, &b->len, &b->cap, SIZE_MAX, s, n) < 0)
		b->failed = 1;
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Copies s[0..n) with each placeholder of fills replaced by its value; any other '@' (the
 * module has "@ll" for struct.pack) is copied as it is. */
static void put_filled(struct buf *b, const char *s, size_t n)
{
	const char *end = s + n;

	while (s < end) {
		const char *at = memchr(s, '@', (size_t)(end - s));
		size_t i;

		if (!at) {
			put(b, s, (size_t)(end - s));
			return;
		}
		put(b, s, (size_t)(at - s));
		s = at;
		for (i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
			size_t len = strlen(fills[i].name);

			if ((size_t)(end - s) >= len && memcmp(s, fills[i].name, len) == 0) {
				puts_(b, fills[i].value);
				s += len;
				break;
			}
		}
		if (i == sizeof(fills) / sizeof(fills[0]))
			put(b, s++, 1);
	}
}

/* A Python expression for the string s: a bytes literal with every byte outside printable
 * ASCII (and quote, backslash) escaped, decoded as UTF-8, so no byte of a description can
 * break out of the literal or make the module fail to compile. */
static void put_pystr(struct buf *b, const char *s)
{
	char esc[8];

	puts_(b, "b\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			put(b, (const char *)&c, 1);
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			puts_(b, esc);
		}
	}
	puts_(b, "\".decode(\"utf-8\", \"replace\")");
}

int mafh_shim_source(const struct mafh_registry *reg, char **text, size_t *len,
		     struct mafh_error *err)
{
	struct buf b = {0};
	const char *tools = strstr(shim_template, TOOLS_LINE);
	size_t i;

	*text = NULL;
	if (len)
		*len = 0;
	/* A template without its tools line is a bug of the build (the unit tests would fail),
	 * never the caller's. */
	if (!tools)
		return mafh__error_set(err, MAFH_EPROTO,
				       "libmafhost was built from a shim template without its tools line");
	put_filled(&b, shim_template, (size_t)(tools - shim_template));
	for (i = 0; i < reg->n_tools; i++) {
		puts_(&b, "    (");
		put_pystr(&b, reg->tools[i].name);
		puts_(&b, ", ");
		put_pystr(&b, reg->tools[i].description);
		puts_(&b, "),\n");
	}
	tools += strlen(TOOLS_LINE);
	put_filled(&b, tools, strlen(tools));
	if (b.failed) {
		free(b.p);
		return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
	}
	*text = b.p;
	if (len)
		*len = b.len;
	return 0;
}
