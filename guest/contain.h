/* Containment applied in the program's process just before exec. */
#ifndef MAFL_CONTAIN_H
#define MAFL_CONTAIN_H

#include <stddef.h>
#include <sys/types.h>

struct mafl_policy {
	int seccomp;      /* 1: the default filter; 0: none */
	int egress_open;  /* with the filter: 1 leaves socket() alone, 0 allows only AF_UNIX */
	int landlock;     /* 1: auto (best effort, ABI probed); 0: off */
	int supervisor;   /* with the filter: the pid no signal may reach; 0: none */
	int signals_scoped; /* Landlock (ABI 6+) already keeps signals inside the run */
	int own_identity;   /* the program runs under an identity of the run's own */
};

/* The highest syscall number the default policy knows (file_setattr, Linux 6.17): any higher
 * number answers ENOSYS, as on a kernel without the call, until the policy decides on it. */
#define MAFL_SECCOMP_MAX_KNOWN 469

/* Loads the seccomp filters for p into the calling process (no_new_privs must be set):
 * libseccomp's, as it was built with the launcher (guest/gen/filtergen.c) with the
 * supervisor's pid filled in, then the floor, a filter by syscall number. The launcher links
 * no libseccomp. Returns 0, or a negative errno (EINVAL: a supervisor pid no prebuilt filter
 * takes, 1 or less; libseccomp's filter may be loaded when the floor fails). */
int mafl_seccomp_load(const struct mafl_policy *p);
/* Writes libseccomp's filter for p as its PFC text to fd: in the launcher, the text
 * libseccomp printed when it was built, with the supervisor's pid filled in; in filtergen,
 * libseccomp's now. Returns 0, or a negative errno. */
int mafl_seccomp_export_pfc(const struct mafl_policy *p, int fd);
/* Writes the floor filter a run loads with p as readable text to fd (nothing with the filter
 * off). Returns 0, or a negative errno. */
int mafl_seccomp_export_floor(const struct mafl_policy *p, int fd);
struct sock_filter;
/* Writes pid into the instructions at pid_at and -pid into those at negpid_at: how a run
 * fills in its supervisor's pid in a prebuilt filter (filtergen checks this very step). */
void mafl_seccomp_fill_pid(struct sock_filter *f, const unsigned short *pid_at, size_t npid,
			   const unsigned short *negpid_at, size_t nnegpid, int pid);
#ifdef MAFL_FILTERGEN
/* filtergen only: builds the filter for p with libseccomp into f (room for max
 * instructions). Returns the number of instructions (0 with the filter off), or a negative
 * errno (E2BIG: max too small). */
ssize_t mafl_seccomp_build_bpf(const struct mafl_policy *p, struct sock_filter *f, size_t max);
#endif
/* The name recorded in program_exit.json: "off", "default" or "default+egress". */
const char *mafl_seccomp_name(const struct mafl_policy *p);



/* The supervisor's pid the filter `maf-launch policy` prints names, unless told another. */
#define MAFL_POLICY_EXAMPLE_SUPERVISOR 4242

/* Applies "--egress", "--seccomp" or "--landlock" with its value to p. Returns 1 if opt is
 * one of them, 0 if not; dies with a usage error on a bad value. */
int mafl_policy_option(struct mafl_policy *p, const char *opt, const char *val);

/* Restricts the calling process with Landlock, best effort. Reads and execution everywhere
 * but /dev, of which only null, zero, full, random and urandom (read and write) and the
 * listing of /dev itself; writes only below R/work, R/tmp, R/host_tools/host_tool_calls,
 * the writable paths given (NULL-terminated, may be NULL), and /dev/shm with an identity of
 * the run's own; no device made anywhere, and (ABI 5+) no ioctl on a device; with egress
 * closed (ABI 4+) no TCP bind or connect; (ABI 6+) no signals to, and no abstract unix
 * sockets of, processes outside the run. A path that is absent or beyond the program's
 * reach adds nothing. ruleset is what mafl_landlock_ruleset made for p, which this takes
 * over (closes), or negative to make it here. Returns the ABI enforced (> 0), 0 if the
 * kernel has no Landlock, or a negative errno. */
int mafl_landlock_apply(const struct mafl_policy *p, int ruleset, const char *run_dir,
			const char *const *writable);

/* The part of that ruleset no run changes: the reads (every entry of / but /dev), the
 * devices and, with p->own_identity, /dev/shm; built with raw system calls only, so that
 * the launcher may build it while it shares the supervisor's memory (spawn.h), for
 * mafl_landlock_apply to finish in the program's process. Returns a close-on-exec
 * descriptor, -ENOSYS without Landlock, or another negative errno. */
int mafl_landlock_ruleset(const struct mafl_policy *p);
/* The first Landlock ABI with signal and abstract-socket scopes. */
#define MAFL_LANDLOCK_ABI_SCOPE 6
/* Names a result of mafl_landlock_apply for program_exit.json: "abi-N", "unsupported",
 * "failed". */
void mafl_landlock_name(int result, char *buf, size_t size);

#endif
