/* maf-launch sleep, also run by the name sleep: what container backends start an image with
 * (maf-sandbox-docker runs `IMAGE sleep infinity`), in an image that has no coreutils. The
 * arguments of coreutils' sleep: NUMBER[SUFFIX]..., added up; s, m, h, d; "infinity". */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "protocol.h"
#include "version.h"
#include "util.h"

/* Past a century a sleep is an infinite one: nothing waits on it. */
#define SLEEP_MAX_S (100LL * 365 * 86400)

/* Parses one operand into nanoseconds (capped at SLEEP_MAX_S). Returns 0, 1 for infinity,
 * or -1. */
static int parse_interval(const char *s, long long *ns)
{
	long long whole = 0, frac = 0, scale = 100000000, mult = 1;
	int digits = 0;

	if (strcmp(s, "infinity") == 0 || strcmp(s, "inf") == 0)
		return 1;
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		if (whole <= SLEEP_MAX_S)
			whole = whole * 10 + (*s - '0');
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			frac += (*s - '0') * scale;
			scale /= 10;
		}
	if (digits == 0)
		return -1;
	switch (*s) {
	case '\0': case 's': break;
	case 'm': mult = 60; break;
	case 'h': mult = 3600; break;
	case 'd': mult = 86400; break;
	default: return -1;
	}
	if (*s && s[1])
		return -1;
	if (whole > SLEEP_MAX_S / mult)
		return 1;
	*ns = whole * mult * 1000000000LL + frac * mult;
	return *ns >= SLEEP_MAX_S * 1000000000LL;
}

int mafl_cmd_sleep(int argc, char **argv)
{
	long long total = 0;
	struct mafl_args a;
	const char *v;
	int forever = 0, i;

	mafl_opt_init(&a, &mafl_commands[MAFL_COMMAND_SLEEP], argc, argv);
	if (mafl_opt_next(&a, &v) == MAFL_O_VERSION) {
		printf("sleep (maf-launch) %s\n", MAF_VERSION);
		return 0;
	}
	if (argc < 2) {
		mafl_opt_help_print(stderr, &mafl_commands[MAFL_COMMAND_SLEEP]);
		return MAFP_EXIT_USAGE;
	}
	for (i = 1; i < argc; i++) {
		long long ns = 0;
		int r = strcmp(argv[i], "--") == 0 && i == 1 ? 2 : parse_interval(argv[i], &ns);

		if (r == 2)
			continue;
		if (r < 0)
			mafl_die(MAFP_EXIT_USAGE, "invalid time interval '%s' (try '--help')",
				 argv[i]);
		forever |= r == 1;
		total += ns;
		if (total >= SLEEP_MAX_S * 1000000000LL)
			forever = 1;
	}
	if (forever)
		for (;;)
			pause();
	{
		struct timespec ts = {total / 1000000000LL, total % 1000000000LL};

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return 0;
}
