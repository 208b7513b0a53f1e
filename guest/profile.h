/* The launch's own profile, in a build made for it (make bench-launch builds one with
 * -DMAFL_PROFILE beside the real launcher): MAFL_MARK("step") records the monotonic clock
 * when the launch reaches a step, in whichever of its processes it is: the launcher, the
 * supervisor and the program's process share one memory until the exec (spawn.h), so one
 * table holds them all, in order. The launcher prints it on stderr as it exits
 * (mafl_profile_print): one line a step, "PROFILE <ns since the first mark> <cpu> <step>". In
 * every other build the marks are nothing. */
#ifndef MAFL_PROFILE_H
#define MAFL_PROFILE_H

#ifdef MAFL_PROFILE
#include <time.h>
#include <sys/syscall.h>

#include "spawn.h"

#define MAFL_PROFILE_MAX 64
struct mafl_profile_mark {
	const char *step;
	long long ns;
	unsigned cpu;
};
extern struct mafl_profile_mark mafl_profile[MAFL_PROFILE_MAX];
extern int mafl_profile_n;

/* Raw system calls: the marks are made where the C library may not be used (spawn.h). */
static inline void mafl_mark(const char *step)
{
	struct timespec ts;
	int i = __atomic_fetch_add(&mafl_profile_n, 1, __ATOMIC_RELAXED);

	if (i >= MAFL_PROFILE_MAX)
		return;
	mafl_raw_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	mafl_raw_syscall(SYS_getcpu, (long)&mafl_profile[i].cpu, 0, 0);
	mafl_profile[i].step = step;
	mafl_profile[i].ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* Writes the table on fd 2, with raw system calls. */
void mafl_profile_print(void);
#define MAFL_MARK(step) mafl_mark(step)
#define MAFL_PROFILE_PRINT() mafl_profile_print()
#else
#define MAFL_MARK(step) ((void)0)
#define MAFL_PROFILE_PRINT() ((void)0)
#endif

#endif
