/* maf-launch run: the launch (run.c) and the supervisor that stays with the program
 * (supervise.c). */
#ifndef MAFL_LAUNCH_H
#define MAFL_LAUNCH_H

#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

#include "contain.h"
#include "protocol.h"

#define MAFL_DEFAULT_MAX_OUTPUT (64ull << 20)
#define MAFL_DEFAULT_GRACE_MS 2000
#define MAFL_DEFAULT_MAX_PROCS 256
/* AddressSanitizer reserves terabytes of address space, which any RLIMIT_AS refuses: its
 * builds of the launcher (`make asan`) set no memory limit unless asked. */
#if defined(__SANITIZE_ADDRESS__)
#define MAFL_DEFAULT_MAX_MEMORY 0ull
#else
#define MAFL_DEFAULT_MAX_MEMORY (4ull << 30)
#endif
/* A privileged launcher runs each program under an identity of the run's own, derived from
 * the supervisor's pid, which no other live run can have (pids are unique), far above any
 * account or system id: uid and gid 2^20 + the pid for a pid below 2^20 (every pid in a
 * container, and on a host whose pid_max is the kernel's default), else 2^28 + the pid. The
 * first range ends at 2^21, where a tar's 7 octal digits of owner end: a file of the run's
 * own is then described by the one ustar header a Docker backend reading the first block of
 * `docker cp` (maf-sandbox-docker's) expects, not behind a pax header. `maf-launch stop`
 * derives the identity from the pid it is given, to end a run whose supervisor is gone. */
#define MAFL_RUN_ID_LOW 0x100000u
#define MAFL_RUN_ID_LOW_MAX 0x200000u
#define MAFL_RUN_ID_BASE 0x10000000u
#define MAFL_RUN_ID_MAX (MAFL_RUN_ID_BASE + 0x400000u)   /* pids are below 2^22 */

/* The uid and gid of the run whose supervisor is pid. */
static inline unsigned mafl_run_id(pid_t supervisor)
{
	return (unsigned)supervisor < MAFL_RUN_ID_LOW ? MAFL_RUN_ID_LOW + (unsigned)supervisor
						      : MAFL_RUN_ID_BASE + (unsigned)supervisor;
}

/* 1 if id is one mafl_run_id gives. */
static inline int mafl_is_run_id(unsigned id)
{
	return (id >= MAFL_RUN_ID_LOW && id < MAFL_RUN_ID_LOW_MAX) ||
	       (id >= MAFL_RUN_ID_BASE + MAFL_RUN_ID_LOW && id < MAFL_RUN_ID_MAX);
}
/* The run's private temporary directory, R/tmp: TMPDIR, TMP and TEMP name it. */
#define MAFL_DIR_TMP "tmp"
#define MAFL_WRITABLE_MAX 16

struct run_opts {
	char run_dir[MAFP_RUN_DIR_MAX + 1]; /* without trailing slashes */
	long long timeout_ms;               /* 0: none */
	long long grace_ms;                 /* between SIGTERM and SIGKILL */
	unsigned long long max_output;      /* bytes kept in program_output.txt */
	struct mafl_policy policy;
	char **tools;                       /* --tool names, NULL-terminated; NULL: any */
	unsigned long long max_calls;       /* --max-calls; 0: no launcher budget */
	char **argv;                        /* PROGRAM ARGS..., borrowed from main's argv */
	char **envp;                        /* the program's environment, built by run.c */
	long long user_uid, user_gid;       /* --user; -1: the default */
	unsigned long long max_procs;       /* RLIMIT_NPROC with an own identity; 0: none */
	unsigned long long max_memory;      /* RLIMIT_AS; 0: none */
	const char *writable[MAFL_WRITABLE_MAX + 1]; /* --writable, NULL-terminated */
	int files_stdin;                    /* --files-stdin */
};

/* --files-stdin (stage.c): at most this many files, of this many bytes in all. */
#define MAFL_STAGE_FILES_MAX 16
#define MAFL_STAGE_BYTES_MAX (64ULL << 20)
/* One file's line without its newline, line[0..len): NULL with NAME (NUL-terminated) and its
 * SIZE, or why it is not "NAME SIZE". */
const char *mafl_stage_header(const char *line, size_t len, char *name,
			      unsigned long long *size);
/* Reads stdin to its end and puts each file it holds in R/host_tools (opened: host_tools);
 * dies, usage (2) for what is not the format, launcher (125) for what cannot be done. */
void mafl_stage_files(int host_tools, const char *run_dir);

/* What the supervisor tells the launcher through the status pipe, once: the launcher writes
 * text as it is, to stdout when exit_code is 0 and to stderr otherwise, and exits with
 * exit_code. (It shares the supervisor's memory, so it formats nothing itself.) */
struct launch_report {
	int exit_code;          /* 0: the program was exec'd; else the launcher's exit code */
	unsigned len;           /* bytes of text */
	char text[512];         /* the launch line and the session line, or one error line */
};

/* Open directories of the run, by file descriptor so no path is resolved twice. R/work is
 * made by the launcher once the supervisor has started, and handed over (run.c). */
struct run_dirs {
	int run;                /* R */
	int host_tools;         /* R/host_tools */
};

/* How the launcher hands R/work over to the supervisor: an int, 0 with the directory
 * attached, the errno of its open, or MAFL_WORK_MKDIR plus the errno of its mkdir. */
#define MAFL_WORK_MKDIR 0x10000

/* The sentence for the run's subdirectory name that could not be made (mkdir_err, an errno)
 * or, that done, opened (open_err), as the launch reports it for R/host_tools and R/work. */
void mafl_run_subdir_error(char *buf, size_t size, const char *run_dir, const char *name,
			   int mkdir_err, int open_err);

/* Parses run's argv into o. Dies with exit code 2 on bad usage; prints help and exits 0 on
 * --help. */
void mafl_run_parse_args(int argc, char **argv, struct run_opts *o);

/* Builds the program's environment from env (NULL-terminated): PYTHONPATH rebuilt with
 * R/host_tools first then only inherited entries that are absolute, canonical and outside
 * R; PYTHONUNBUFFERED=1; PYTHONNOUSERSITE=1; TMPDIR, TMP and TEMP set to R/tmp; maf_kept and
 * maf_entry (the shell launcher's variables, which it unsets) left out. Returns an array
 * from mafl_arena_calloc (util.h) whose first entry (PYTHONPATH) is allocated the same way and whose others are
 * env's own strings or constants, or NULL on allocation failure. Free it with
 * mafl_run_free_env(). */
char **mafl_run_build_env(char *const *env, const char *run_dir);
void mafl_run_free_env(char **env);

/* Keeps or drops one inherited PYTHONPATH entry (1 keep, 0 drop), as the shell launcher does. */
int mafl_run_pythonpath_entry_ok(const char *entry, size_t len, const char *run_dir);

/* The CPUs of a launch: the caller's affinity (saved), and whether a process of the launch is
 * held to one of them (held), to be given saved back. */
struct mafl_cpu_hold {
	cpu_set_t saved;
	int held;
};

/* The supervisor: starts the program, reports the launch through report_fd, then
 * supervises it to the end and writes the markers. Never returns. It may share the
 * launcher's memory (spawn.h): o, d and away must stay as they are. report_fd is a stream
 * socket on which the launcher also sends the files it makes for the launch (run.c). away
 * says whether the launcher put the supervisor on a CPU other than its own (held) and the
 * affinity to give back (saved) once the program's process has exec'd. */
__attribute__((noreturn)) void mafl_supervise(const struct run_opts *o, const struct run_dirs *d,
					      int report_fd, const struct mafl_cpu_hold *away);

#endif
