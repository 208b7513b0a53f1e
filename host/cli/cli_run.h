/* maf-host run, in steps: run_args.c parses argv into struct run_args; run.c builds the
 * registry, the backend and the run options from it, runs, and reports; events.c prints the
 * run's events for --verbose. */
#ifndef CLI_RUN_H
#define CLI_RUN_H

#include <stdio.h>

#include "mafhost.h"

#define RUN_PARAMS_MAX 64       /* --param per tool */

struct run_serve;

/* One --tool. */
struct run_tool {
	char *name;
	const char *command;          /* NULL: served by the tools server */
	struct mafh_param params[RUN_PARAMS_MAX];
	char *param_names[RUN_PARAMS_MAX];
	size_t n_params;
	struct run_serve *serve;      /* set by run.c: what a call of the tool needs */
};

/* A limit as given: text is the argument (NULL when not given), value its number. */
struct run_limit {
	const char *text;
	unsigned long long value;
};

/* What the command line asked for, argv parsed and nothing built. Words the library judges
 * (egress, seccomp, landlock, the transport, the limits' ranges) are kept as given: NULL or
 * unset means the library's default. */
struct run_args {
	struct run_tool *tools;
	size_t n_tools;
	const char *server_command;
	long long tool_timeout_ms;
	long long timeout_ms;
	long long exec_timeout_ms;    /* 0: the library's default */
	long long ending_ms;          /* 0: the library's default */
	struct run_limit max_calls;
	struct run_limit max_output_bytes;
	struct run_limit max_response_bytes;
	const char *backend;          /* "local", "docker:CONTAINER" or "enter:PID", as given */
	const char *container;        /* docker: CONTAINER (in backend); NULL otherwise */
	int enter_pid;                /* enter: PID (> 0); 0 otherwise */
	const char *launcher;         /* --launcher, or NULL: the backend's default */
	unsigned long long latency_ms;
	const char *transport;
	enum mafh_transport transport_value;
	const char *egress;
	const char *seccomp;
	const char *landlock;
	const char *user;
	struct run_limit max_procs;
	const char *max_memory;
	long long max_memory_value;   /* -1: not given */
	const char *writable[17];     /* --writable, NULL-terminated; the library caps the count */
	size_t n_writable;
	int keep_run_dir;
	int json;
	int summary;
	int verbose;
	const char *program_path;     /* PROGRAM.py, or NULL with --guest-program */
	const char *guest_program;    /* --guest-program PATH: in the sandbox, not uploaded */
	char **program_args;          /* borrowed from argv */
	size_t n_program_args;
	/* While parsing: the library judges each --tool's name as it is given, by registering
	 * it here (this registry serves nothing and is freed once argv is parsed). */
	struct mafh_registry *names;
};

/* Fills *a from argv (argv[0] is "run"); a usage error exits 2. Free with cli_run_args_free. */
void cli_run_args_parse(struct run_args *a, int argc, char **argv);
void cli_run_args_free(struct run_args *a);

/* A mafh_event_fn for --verbose: one line on stderr per event (a refusal's detail on the
 * lines after it). ud is a struct run_events. */
struct run_events {
	const struct mafh_run_result *res;   /* the run's result once made, for the counts */
};
void cli_run_events_print(const struct mafh_event *ev, void *ud);

#endif
