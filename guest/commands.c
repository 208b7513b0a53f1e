/* The launcher's commands, their options and their help: the one table the parser, --help,
 * the man page and the bash completion are made from (opt.h says the format). The build's
 * generator (guest/gen/docgen.c) compiles this file with MAFL_DOCGEN, without the commands'
 * code. */
#include <stddef.h>

#include "commands.h"
#include "contain.h"

#ifdef MAFL_DOCGEN
#define FN(f) NULL
#else
#define FN(f) f
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

const struct mafl_opt mafl_opt_help = {"--help", NULL, "print this help", MAFL_O_HELP, 0};

static const struct mafl_opt launcher_opts[] = {
	{"--version", NULL, "print the version", MAFL_O_VERSION, 0},
	{0},
};

const struct mafl_command mafl_launcher = {
	.name = "",
	.summary = "start a program detached, supervised and contained; serve its host-tool "
		   "calls",
	.synopsis = "COMMAND [OPTION]... [-- PROGRAM [ARG]...]",
	.about = "The in-sandbox side of maf host-tool calls: starts a program detached from the "
		 "caller, supervises and contains it, and writes the run's markers in the "
		 "maf-sandbox file protocol.\n\n"
		 "Run 'maf-launch COMMAND --help' for a command's options.",
	.opts = launcher_opts,
	.exit_codes = "0 success, 2 usage, 125 launcher failure, 126 cannot execute, 127 not "
		      "found.",
	.flags = MAFL_CMD_OPERANDS,
};

static const struct mafl_opt run_opts[] = {
	{"--run-dir", "R", "the run directory: absolute, existing, not a symlink, no ':' or "
	 "'\\' (required); anywhere: below a directory the program's identity may not pass (a "
	 "root launcher's), the program sees R alone of it (a mount namespace of its own; "
	 "needs CAP_SYS_ADMIN)", MAFL_O_RUN_DIR, MAFL_COMPLETE_DIR},
	{"--timeout", "S", "wall-clock limit in seconds (fractions allowed); then SIGTERM, the "
	 "grace, SIGKILL (default: none)", MAFL_O_TIMEOUT, 0},
	{"--grace", "S", "seconds between SIGTERM and SIGKILL (default: 2)", MAFL_O_GRACE, 0},
	{"--max-output-bytes", "N", "keep at most N bytes of output; the rest is counted and "
	 "dropped, and the truncation recorded (default: 67108864)", MAFL_O_MAX_OUTPUT_BYTES, 0},
	{"--egress", "closed|open", "closed: sockets other than AF_UNIX fail with EPERM "
	 "(default: closed)", MAFL_O_EGRESS, MAFL_COMPLETE_WORDS},
	{"--seccomp", "default|off", "the default seccomp filter, or none (default: default)",
	 MAFL_O_SECCOMP, MAFL_COMPLETE_WORDS},
	{"--landlock", "auto|off", "Landlock where the kernel has it, or not at all (default: "
	 "auto)", MAFL_O_LANDLOCK, MAFL_COMPLETE_WORDS},
	{"--tool", "NAME", "a tool the program may call through the channel (repeatable; "
	 "without any, every name is passed on)", MAFL_O_TOOL, 0},
	{"--max-calls", "N", "calls the channel passes on before it refuses them itself "
	 "(default: no limit of its own)", MAFL_O_MAX_CALLS, 0},
	{"--user", "UID[:GID]", "run PROGRAM as UID (and GID, default UID); needs a privileged "
	 "launcher. Default when the launcher is root: an identity of the run's own, 1048576 + "
	 "the supervisor's pid (268435456 + it from 1048576 on); otherwise the launcher's own.\n"
	 "--user 0 keeps root and its capabilities: only for a program trusted more than the "
	 "sandbox", MAFL_O_USER, 0},
	{"--max-procs", "N", "processes and threads of the run's identity, when it has one of "
	 "its own (RLIMIT_NPROC; default: 256; 0: none)", MAFL_O_MAX_PROCS, 0},
	{"--max-memory", "BYTES", "address space of each process of the run (RLIMIT_AS; "
	 "suffixes K, M, G; default: 4G, none in AddressSanitizer builds; 0: none)",
	 MAFL_O_MAX_MEMORY, 0},
	{"--writable", "PATH", "a directory or file outside R the program may also write "
	 "(Landlock; repeatable, at most 16)", MAFL_O_WRITABLE, MAFL_COMPLETE_FILE},
	{"--files-stdin", NULL, "first put files in R/host_tools from stdin, read to its end: "
	 "each a line 'NAME SIZE' (NAME one path component, not starting with '.'; SIZE "
	 "decimal) and then SIZE bytes; at most 16 files and 64 MiB in all. Each is written "
	 "beside NAME and renamed over it (mode 0644), so a symlink there is replaced, never "
	 "followed. R and its parents are made where missing (mode 0755). The program is "
	 "launched only once all are in place", MAFL_O_FILES_STDIN, 0},
	{0},
};

static const struct mafl_opt call_opts[] = {
	{"--timeout", "S", "give up after S seconds (default: wait as long as the run lasts)",
	 MAFL_O_TIMEOUT, 0},
	{0},
};

static const struct mafl_opt policy_opts[] = {
	{"--egress", "closed|open", "the filter of a run with this --egress (default: closed)",
	 MAFL_O_EGRESS, MAFL_COMPLETE_WORDS},
	{"--seccomp", "default|off", "the filter of a run with this --seccomp; off prints "
	 "nothing (default: default)", MAFL_O_SECCOMP, MAFL_COMPLETE_WORDS},
	{"--supervisor-pid", "PID", "the supervisor's pid the filter names (default: "
	 STR(MAFL_POLICY_EXAMPLE_SUPERVISOR) ")", MAFL_O_SUPERVISOR_PID, 0},
	{"--floor", NULL, "print the floor filter's instructions instead of the PFC",
	 MAFL_O_FLOOR, 0},
	{"--check", NULL, "refused: the build checks the filter, as 'build/gen/filtergen "
	 "--check PID...' does in the source tree", MAFL_O_CHECK, 0},
	{0},
};

#define WAIT_RUN_DIR {"--run-dir", "R", "the run directory (required)", MAFL_O_RUN_DIR, \
		      MAFL_COMPLETE_DIR}
#define WAIT_NEXT {"--next", "N", "the call id to wait for, 1..999999 (required)", \
		   MAFL_O_NEXT, 0}
#define WAIT_TIMEOUT_MS {"--timeout-ms", "T", "milliseconds to wait, up to 86400000; 0 " \
			 "looks once (required)", MAFL_O_TIMEOUT_MS, 0}
#define WAIT_MAX_BYTES {"--max-bytes", "B", "the largest request printed (default: " \
			"1048576)", MAFL_O_MAX_BYTES, 0}
#define WAIT_MAX_ANSWER {"--max-answer-bytes", "A", "the largest answer taken (default: " \
			 "67108864)", MAFL_O_MAX_ANSWER_BYTES, 0}
#define WAIT_AS_WAIT_SUPERVISOR {"--supervisor-pid", "P", "as for 'maf-launch wait'", \
				 MAFL_O_SUPERVISOR_PID, 0}

static const struct mafl_opt wait_opts[] = {
	WAIT_RUN_DIR,
	WAIT_NEXT,
	WAIT_TIMEOUT_MS,
	WAIT_MAX_BYTES,
	{"--supervisor-pid", "P", "the run's supervisor (supervisor_pid in the launch line): "
	 "the event is \"lost\" as soon as P is gone, or is not R's supervisor, without the "
	 "exit marker", MAFL_O_SUPERVISOR_PID, 0},
	{0},
};

static const struct mafl_opt relay_opts[] = {
	WAIT_RUN_DIR,
	WAIT_NEXT,
	WAIT_TIMEOUT_MS,
	{"--answer", "ID", "the call the answer is for, 1..999999 (with --value-stdin)",
	 MAFL_O_ANSWER, 0},
	{"--value-stdin", NULL, "the response file's bytes are stdin (with --answer)",
	 MAFL_O_VALUE_STDIN, 0},
	WAIT_MAX_ANSWER,
	WAIT_MAX_BYTES,
	WAIT_AS_WAIT_SUPERVISOR,
	{0},
};

static const struct mafl_opt serve_opts[] = {
	WAIT_RUN_DIR,
	{"--ack", NULL, "print {\"event\":\"accepted\",\"id\":I} the moment the answer to call I "
	 "is in place, before waiting for request I + 1", MAFL_O_ACK, 0},
	WAIT_MAX_BYTES,
	WAIT_MAX_ANSWER,
	WAIT_AS_WAIT_SUPERVISOR,
	{0},
};

static const struct mafl_opt stop_opts[] = {
	{"--run-dir", "R", "the run directory (required)", MAFL_O_RUN_DIR, MAFL_COMPLETE_DIR},
	{"--supervisor-pid", "P", "the run's supervisor (required)", MAFL_O_SUPERVISOR_PID, 0},
	{"--timeout", "S", "seconds to wait for P before killing (default: 10)", MAFL_O_TIMEOUT,
	 0},
	{"--output", "N", "once the run has ended, print its output (R/host_tools/"
	 "program_output.txt) after the exit record, if it is at most N bytes (the format "
	 "above)", MAFL_O_OUTPUT, 0},
	{"--reclaim", NULL, "then delete R as 'maf-launch reclaim' does; only once the exit "
	 "record is printed (and with --output, the output or that there is none)",
	 MAFL_O_RECLAIM, 0},
	{"--keep", "NAME", "with --reclaim: leave R and R/NAME, as 'maf-launch reclaim --keep'",
	 MAFL_O_KEEP, 0},
	{0},
};

static const struct mafl_opt reclaim_opts[] = {
	{"--run-dir", "R", "the run directory: absolute, not a symlink (required)",
	 MAFL_O_RUN_DIR, MAFL_COMPLETE_DIR},
	{"--keep", "NAME", "leave R and its entry NAME (one path component: no '/', not '.' or "
	 "'..', at most 255 bytes), and delete every other entry of R the same way. R/NAME is "
	 "not looked into, whatever it is (a symlink stays a symlink), and may be absent. R "
	 "keeps its mode.", MAFL_O_KEEP, 0},
	{0},
};

static const struct mafl_opt init_opts[] = {
	{"--grace", "S", "seconds the other processes have to end, as PID 1 (default: 5; keep "
	 "it below the engine's stop timeout, 10 s for docker stop)", MAFL_O_GRACE, 0},
	{0},
};

static const struct mafl_opt sleep_opts[] = {
	{"--version", NULL, "print the version", MAFL_O_VERSION, 0},
	{0},
};

const struct mafl_command mafl_commands[MAFL_NCOMMANDS + 1] = {
	[MAFL_COMMAND_RUN] = {
		"run", FN(mafl_cmd_run),
		"start a program detached, supervised and contained",
		"--run-dir R [OPTION]... [--] PROGRAM [ARG]...",
		"Starts PROGRAM detached from the caller, in R/work, with its stdout and stderr "
		"merged into R/host_tools/program_output.txt, and returns once PROGRAM has been "
		"exec'd. A supervisor stays with it: it enforces the timeout, ends every process "
		"of the run when PROGRAM ends, and writes R/host_tools/program_exit.json and then "
		"R/host_tools/program_exit_code (128+N when killed by signal N).\n\n"
		"The program inherits the call channel: MAF_HOST_TOOLS_FD names the descriptor, "
		"MAF_HOST_TOOLS_SOCKET the socket a process of the run that no longer holds it "
		"connects to, MAF_HOST_TOOLS lists the --tool names; 'maf-launch call' uses "
		"them.\n\n"
		"On success prints one JSON line, what contains the program in the launcher's own "
		"words, {\"pid\", \"supervisor_pid\", \"session\", \"uid\", \"gid\", "
		"\"identity\", \"landlock\"}, and the line 'maf-host-tools: session'.",
		run_opts,
		"0 PROGRAM is running, 2 usage, 125 launcher failure, 126 PROGRAM cannot be "
		"executed, 127 PROGRAM not found.",
		MAFL_CMD_OPERANDS, MAFL_COMPLETE_COMMAND,
	},
	[MAFL_COMMAND_CALL] = {
		"call", FN(mafl_cmd_call),
		"call a host tool through the run's channel, from inside the run",
		"[--timeout S] TOOL [ARGUMENTS]",
		"Calls the host tool TOOL from inside a run started by 'maf-launch run', through "
		"the channel named by MAF_HOST_TOOLS_FD, or, without that descriptor, through the "
		"socket named by MAF_HOST_TOOLS_SOCKET. ARGUMENTS is a JSON object (default {}); "
		"'-' reads it from stdin. Prints the tool's value as JSON on stdout.",
		call_opts,
		"0 the value was printed, 1 the call was refused (the sentence is on stderr), 2 "
		"usage, 125 no channel or the channel failed.",
		MAFL_CMD_OPERANDS, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_POLICY] = {
		"policy", FN(mafl_cmd_policy),
		"print the seccomp filter a run would load",
		"[--egress closed|open] [--seccomp default|off] [--supervisor-pid PID] [--floor]",
		"Prints the seccomp filter 'maf-launch run' would load with the same options, as "
		"libseccomp's pseudo filter code (PFC). Prints nothing with --seccomp off. The "
		"filter denies signals to the run's supervisor, so it names its pid: a run fills "
		"in its own; PID (default " STR(MAFL_POLICY_EXAMPLE_SUPERVISOR) ") stands for it "
		"here.\n\n"
		"A run loads a second filter after it, the floor, which compares syscall numbers "
		"only: it denies the newer calls the policy denies whether libseccomp knows their "
		"names or not, and answers ENOSYS to every number the policy does not know. "
		"--floor prints its instructions instead of the PFC.\n\n"
		"A run does not build the filter: it loads the one libseccomp built when "
		"maf-launch was built, with the supervisor's pid filled in, and so does this "
		"command print it (maf-launch links no libseccomp). The build checks that filling "
		"in a pid gives what libseccomp builds for it; so does 'build/gen/filtergen "
		"--check PID...' in the source tree.",
		policy_opts,
		"0 the filter was printed, 2 usage, 125 the filter could not be printed.",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_WAIT] = {
		"wait", FN(mafl_cmd_wait),
		"block until request N or the run's exit marker exists; print it",
		"--run-dir R --next N --timeout-ms T [--max-bytes B] [--supervisor-pid P]",
		"Blocks on inotify until request N "
		"(R/host_tools/host_tool_calls/NNNN.request.json) or the exit marker "
		"(R/host_tools/program_exit_code) exists, or T ms have passed, then prints one "
		"event and exits 0; a request comes before the exit. Prints a JSON line, then "
		"exactly \"size\" raw bytes of the file when it has no \"error\" "
		"nor \"oversized\" (a symlink, directory or FIFO is never opened):\n"
		"  {\"event\":\"request\",\"id\":N,\"size\":L}  (L <= B; else \"oversized\":true)\n"
		"  {\"event\":\"request\",\"id\":N,\"size\":0,\"error\":\"not a regular file\"}\n"
		"  {\"event\":\"exit\",\"size\":L}           (L <= 32; same error and oversized)\n"
		"  {\"event\":\"timeout\"}\n"
		"  {\"event\":\"lost\"}  (with --supervisor-pid: P is gone, or is not R's\n"
		"                    supervisor, and there is no exit marker)\n"
		"Creates R/host_tools/host_tool_calls if it is missing.",
		wait_opts,
		"0 an event (a timeout too) was printed, 2 usage, 125 failure.",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_RELAY] = {
		"relay", FN(mafl_cmd_relay),
		"write an answer, then wait as 'wait' does: one exec a call",
		"--run-dir R --next N --timeout-ms T [--answer ID --value-stdin] "
		"[--max-answer-bytes A] [--max-bytes B] [--supervisor-pid P]",
		"Writes the answer to call ID, when given, then waits as 'maf-launch wait' does "
		"and prints the same events. The answer is stdin, read to its end: the whole "
		"response file (R/host_tools/host_tool_calls/IIII.response.json), written under a "
		"temporary name and renamed into place, so a reader sees it whole or not at all. "
		"It is never an argument, which any process may read while the relay waits. "
		"Creates R/host_tools/host_tool_calls if it is missing.",
		relay_opts,
		"0 the answer (if any) was written and an event printed, 2 usage (an answer past "
		"A included: nothing written), 125 failure (the answer may not have been written: "
		"nothing was printed).",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_SERVE] = {
		"serve", FN(mafl_cmd_serve),
		"the relay over a stream: frames on stdin, events on stdout",
		"--run-dir R [--ack] [--max-bytes B] [--max-answer-bytes A] [--supervisor-pid P]",
		"The relay over a stream: for a host attached to its stdin and stdout through one "
		"exec that stays open. Each frame the host writes on stdin is answered on stdout "
		"with one event of 'maf-launch wait', printed the moment it exists:\n"
		"  {\"next\":N}\\n                 wait for request N (or the exit)\n"
		"  {\"answer\":I,\"size\":L}\\n + L bytes\n"
		"                               write the L bytes whole as the response file\n"
		"                               of call I (a temporary name, then a rename),\n"
		"                               then wait for request I + 1\n"
		"An event means the answer before it is in place. With --ack, serve also says so "
		"at once: the moment the response file of call I is in place, before it waits "
		"for I + 1, it prints one line\n"
		"  {\"event\":\"accepted\",\"id\":I}\n"
		"and the event of I + 1 follows when it exists, as without --ack.\n\n"
		"The host writes nothing more until it has the event. Ends with exit 0 when stdin "
		"ends (between frames, or while it waits).",
		serve_opts,
		"0 stdin ended, 2 usage or a frame that breaks these rules, 125 failure (an answer "
		"that could not be written: nothing printed for it).",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_STOP] = {
		"stop", FN(mafl_cmd_stop),
		"end a run's whole process tree through its verified supervisor",
		"--run-dir R --supervisor-pid P [--timeout S] [--output N] [--reclaim [--keep "
		"NAME]]",
		"Ends run R's whole process tree through its supervisor P (supervisor_pid in the "
		"launch line), and signals nothing before P is proven to be it: through a pidfd "
		"(so a recycled pid is never hit), P must run this maf-launch executable, lead its "
		"own session and be 'maf-launch run' with --run-dir R (trailing slashes aside). "
		"Then SIGTERM to P, which stops the run (status \"stopped\"); if P has not exited "
		"after the timeout, SIGKILL to its descendants and to P (the exit record may then "
		"be missing).\n"
		"Prints the exit record (R/host_tools/program_exit.json) if there is one.\n"
		"With --output N, stdout is the record's line (an empty line when there is none), "
		"then one line for the output and what it says: 'output B' and then exactly B "
		"bytes, the whole output; 'output absent'; 'output over' (larger than N bytes: "
		"nothing of it printed); or 'output unreadable' (why on stderr).\n"
		"With --reclaim, once the record is printed (and with --output, all but an "
		"unreadable output) R is deleted as 'maf-launch reclaim' does; without a record, "
		"R is left for the host to read.\n"
		"When the launcher was root, every process of the run's own identity (uid 1048576 "
		"+ P, or 268435456 + P from P 1048576 on) is killed too, wherever it went: also "
		"when P is gone, so that nothing of a run whose supervisor was killed survives it.",
		stop_opts,
		"0 the run has ended (or had already: P is gone and left the exit marker), and "
		"with --reclaim R is deleted if the record was printed, 1 P is not the supervisor "
		"of run R (nothing signalled), 3 the run is lost: P is gone and left no exit "
		"marker and record it wrote (a marker or record that is not the supervisor's own is "
		"not accepted), 4 the run has ended and all is printed, but R could not be deleted "
		"(what is left named on stderr), 2 usage, 125 other failure.",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_RECLAIM] = {
		"reclaim", FN(mafl_cmd_reclaim),
		"delete a run directory without following symlinks or mounts",
		"--run-dir R [--keep NAME]",
		"Deletes the run directory R and all below it without following a symlink (it is "
		"removed as a link) or crossing a mount point (a mount below R is left in place "
		"with all it holds, and named). Read-only directories are made writable first.",
		reclaim_opts,
		"0 R is gone (or was absent; with --keep: all but R/NAME is gone), 1 something "
		"could not be removed (each named on stderr), 2 usage (R relative, a symlink, not "
		"a directory; a bad NAME), 125 other failure.",
		0, MAFL_COMPLETE_NONE,
	},
	[MAFL_COMMAND_INIT] = {
		"init", FN(mafl_cmd_init),
		"a container's PID 1: reap orphans, forward signals, stop cleanly",
		"[--grace S] [--] [CMD [ARG]...]",
		"A minimal init for container images (ENTRYPOINT [\"/usr/local/bin/maf-launch\", "
		"\"init\"]): reaps every process handed to it, such as the supervisors that "
		"'maf-launch run' leaves behind a 'docker exec', and exits cleanly on 'docker "
		"stop'.\n\n"
		"Without CMD it waits and reaps until SIGTERM or SIGINT, then exits 0.\n"
		"With CMD it runs CMD as its child, forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, "
		"SIGUSR1, SIGUSR2 and SIGWINCH to it, and exits with CMD's status (128+N when "
		"signal N ended it). CMD is looked up in PATH.\n\n"
		"As PID 1, before it exits, it sends SIGTERM to every other process in the "
		"container (each run's supervisor then ends its run and writes its markers), waits "
		"up to the grace for them to be gone, and SIGKILLs the rest; a second SIGTERM or "
		"SIGINT cuts the grace short. When it is not PID 1, it makes itself the child "
		"subreaper, so it still reaps CMD's orphans while it runs, and it signals nothing "
		"but CMD: what still runs when it exits goes to the next reaper.",
		init_opts,
		"CMD's status; without CMD 0; 2 usage; 125 init failed; 126 CMD cannot be "
		"executed; 127 CMD not found.",
		MAFL_CMD_OPERANDS, MAFL_COMPLETE_COMMAND,
	},
	[MAFL_COMMAND_SLEEP] = {
		"sleep", FN(mafl_cmd_sleep),
		"pause as coreutils' sleep does (also run by the name sleep)",
		"NUMBER[SUFFIX]...",
		"Pauses for the sum of the NUMBERs (decimal, a fraction allowed) of seconds, or "
		"minutes (m), hours (h) or days (d), as coreutils' sleep does; 'infinity' (or "
		"'inf') never ends. For images with no coreutils: container backends start them "
		"as 'IMAGE sleep infinity'. A signal ends it as it ends sleep.",
		sleep_opts,
		"0 slept, 2 usage.",
		MAFL_CMD_OPERANDS | MAFL_CMD_APPLET | MAFL_CMD_ALONE, MAFL_COMPLETE_NONE,
	},
	[MAFL_NCOMMANDS] = {0},
};
