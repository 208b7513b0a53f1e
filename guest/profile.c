/* The launch's profile table (profile.h), in builds made with -DMAFL_PROFILE only. */
#include "profile.h"

#ifdef MAFL_PROFILE
#include <string.h>

struct mafl_profile_mark mafl_profile[MAFL_PROFILE_MAX];
int mafl_profile_n;

void mafl_profile_print(void)
{
	int n = mafl_profile_n < MAFL_PROFILE_MAX ? mafl_profile_n : MAFL_PROFILE_MAX;

	for (int i = 0; i < n; i++) {
		char line[160], digits[24];
		long long d = mafl_profile[i].ns - mafl_profile[0].ns;
		size_t len = 0, k = 0;

		memcpy(line, "PROFILE ", 8);
		len = 8;
		do
			digits[k++] = (char)('0' + d % 10);
		while ((d /= 10) > 0 && k < sizeof(digits));
		while (k)
			line[len++] = digits[--k];
		line[len++] = ' ';
		line[len++] = (char)('0' + mafl_profile[i].cpu % 10);
		line[len++] = ' ';
		for (const char *s = mafl_profile[i].step; *s && len < sizeof(line) - 1; s++)
			line[len++] = *s;
		line[len++] = '\n';
		mafl_raw_write(2, line, len);
	}
}
#else
typedef int mafl_profile_unused;
#endif
