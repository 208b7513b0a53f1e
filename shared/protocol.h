/* The wire protocol, compiled into both maf-launch and libmafhost: every file name, marker
 * format, JSON field and limit. shared/PROTOCOL.md describes the same things in prose. */
#ifndef MAF_PROTOCOL_H
#define MAF_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "cJSON.h"

/* The version of this wire protocol (shared/PROTOCOL.md), not the project's: the project's
 * is MAF_VERSION, from host/include/mafhost.h through the build. */
#define MAFP_PROTOCOL_VERSION "0.1.0"

/* The run directory R: the host picks it, absolute, with no ':' and no backslash. */
#define MAFP_RUN_DIR_MAX 1024
#define MAFP_DIR_WORK "work"
#define MAFP_DIR_HOST_TOOLS "host_tools"
/* Below R/host_tools (upstream names). */
#define MAFP_FILE_PROGRAM "program.py"
#define MAFP_FILE_SHIM "maf_host_tools.py"
#define MAFP_FILE_SHELL_LAUNCHER "run_program.sh"
#define MAFP_FILE_OUTPUT "program_output.txt"
#define MAFP_MARKER_PID "program_pid"
#define MAFP_MARKER_SESSION "program_session"
#define MAFP_MARKER_EXIT_CODE "program_exit_code"
#define MAFP_DIR_CALLS "host_tool_calls"
/* Ours, additive: the rich exit record, written before the legacy exit marker. */
#define MAFP_FILE_EXIT_RECORD "program_exit.json"
/* Ours: the call channel's listening socket, for the run's processes without the inherited
 * descriptor. */
#define MAFP_FILE_CHANNEL_SOCKET "channel.sock"
/* Markers are staged under NAME.part and renamed into place. */
#define MAFP_PART_SUFFIX ".part"

/* The line the launcher prints when it made a session; the host trusts only this line. */
#define MAFP_SESSION_LINE "maf-host-tools: session"

/* Call files in R/host_tools/host_tool_calls: NNNN is the id zero-padded to 4 digits. */
#define MAFP_CALL_ID_WIDTH 4
#define MAFP_CALL_ID_MAX 999999
#define MAFP_SUFFIX_CLAIM ".claim"
#define MAFP_SUFFIX_REQUEST ".request.json"
#define MAFP_SUFFIX_RESPONSE ".response.json"

/* Upstream defaults and our caps on guest-written bytes. */
#define MAFP_DEFAULT_MAX_CALLS 16
#define MAFP_DEFAULT_RESPONSE_MAX (8u << 20)
#define MAFP_MARKER_MAX 32          /* bytes in a decimal marker file */
#define MAFP_EXIT_RECORD_MAX 4096   /* bytes in program_exit.json */
#define MAFP_LAUNCH_LINE_MAX 1024   /* bytes in the launcher's JSON line */
#define MAFP_JSON_DEPTH_MAX 64      /* nesting accepted in any guest-written JSON */
#define MAFP_TOOL_NAME_MAX 128
#define MAFP_UNDELIVERED_MAX 64     /* ids in the exit record's "undelivered" */

/* Exit codes of maf-launch (tini/env conventions). */
#define MAFP_EXIT_USAGE 2
#define MAFP_EXIT_LAUNCHER 125
#define MAFP_EXIT_CANNOT_EXEC 126
#define MAFP_EXIT_NOT_FOUND 127

enum mafp_status {
	MAFP_STATUS_EXITED,
	MAFP_STATUS_SIGNALED,
	MAFP_STATUS_TIMEOUT,
	MAFP_STATUS_STOPPED,
	MAFP_STATUS_LAUNCH_FAILED,
};

/* program_exit.json. Strings are fixed buffers so the record needs no freeing. */
struct mafp_exit_record {
	enum mafp_status status;
	int exit_code;          /* as sh reports it: 0..255, 128+N for signal N */
	int signal;             /* the signal that ended the program, 0 if none */
	int64_t wall_ms;
	int64_t cpu_ms;         /* user + system of every reaped process of the run */
	int64_t peak_rss_kb;    /* largest resident set of any process of the run */
	int64_t output_bytes;   /* bytes the program wrote, including those past the cap */
	int output_truncated;   /* the output file holds only the first max_output_bytes */
	int64_t calls;          /* answers the channel delivered to a caller */
	/* Channel calls published as requests whose answer reached no caller: the program
	 * ended (or the caller left) first. At most MAFP_UNDELIVERED_MAX ids, ascending. */
	long undelivered[MAFP_UNDELIVERED_MAX];
	int n_undelivered;
	char seccomp[32];       /* "default", "default+egress", "off" */
	char landlock[32];      /* "off", "unsupported", "abi-N" */
	char error[256];        /* launch_failed: why; else empty */
};

/* The JSON line maf-launch run prints on success. */
struct mafp_launch_info {
	int64_t pid;            /* the program */
	int64_t supervisor_pid; /* the maf-launch process that stays with it */
	int64_t session;        /* the session the program leads (its pid) */
	/* What contains the program, as the launcher saw it applied (absent from the line of
	 * an older launcher: identity empty). The host trusts these, not the exit record: the
	 * record is a file, the line comes over the launcher's own stdout. */
	char identity[16];      /* "own": an identity of the run's own; "launcher": the
				 * launcher's (it was not privileged); "" unknown */
	int64_t uid, gid;       /* the program's */
	char landlock[32];      /* "abi-N", "unsupported", "failed", "off" */
};
#define MAFP_IDENTITY_OWN "own"
#define MAFP_IDENTITY_LAUNCHER "launcher"

/* 0 if R is a usable run directory name (absolute, no ':' nor '\\', no NUL, not "/", at
 * most MAFP_RUN_DIR_MAX bytes, no "." or ".." component); else -1 and *why is a static
 * sentence. */
int mafp_run_dir_check(const char *run_dir, const char **why);

/* Writes "R/host_tools/NAME" into buf. Returns 0, or -1 if it does not fit. */
int mafp_host_tools_path(char *buf, size_t size, const char *run_dir, const char *name);

/* Writes the call file name for id and suffix ("0007.request.json") into buf. Returns 0, or
 * -1 if id is out of range or it does not fit. */
int mafp_call_file_name(char *buf, size_t size, long id, const char *suffix);

/* Hands a call file over (PROTOCOL.md): the file dir/from, which its writer is done with,
 * becomes dir/to with data as its bytes, so no new inode is made. It must still be the
 * regular file with one link that dev and ino name (opened without following a symlink,
 * never blocking, and looked at once open): data is written over it from the start, it is
 * cut to len, and renamed to to. Returns 0, or -1 with errno set (EEXIST: not that file,
 * nothing written; else the write, the cut or the rename failed and from may have been
 * written part way). The caller then makes to as a new file. */
int mafp_call_file_hand_over(int dirfd, const char *from, const char *to, uint64_t dev,
			     uint64_t ino, const void *data, size_t len);

/* Parses a decimal marker (program_pid, program_exit_code): digits only, optional leading
 * '-' only when allow_negative, no whitespace, at most MAFP_MARKER_MAX bytes, within
 * [min, max]. Returns 0 and sets *out, or -1. */
int mafp_marker_parse(const char *buf, size_t len, long min, long max, long *out);

/* The exit code sh reports for a wait status: WEXITSTATUS, or 128+N for signal N. */
int mafp_exit_code_from_wait_status(int wstatus);

const char *mafp_status_name(enum mafp_status status);
/* Returns 0 and sets *out for a known name, else -1. */
int mafp_status_from_name(const char *name, enum mafp_status *out);

/* Parses guest-written JSON: at most max_len bytes, nesting at most MAFP_JSON_DEPTH_MAX,
 * the whole buffer one value (trailing white space allowed). Returns a tree the caller
 * frees with cJSON_Delete, or NULL. */
cJSON *mafp_json_parse(const char *buf, size_t len, size_t max_len);
/* 1 if an object in j (at any depth) holds a key twice, 0 if none does, -1 out of memory. */
int mafp_json_has_duplicate_key(const cJSON *j);

/* Encodes rec as one line of JSON without a newline. Returns a string the caller frees with
 * free(), or NULL on allocation failure. */
char *mafp_exit_record_encode(const struct mafp_exit_record *rec);
/* Decodes program_exit.json. Returns 0, or -1 with a static sentence in *why. Fields absent
 * from the record keep the defaults (0, empty strings); unknown fields are ignored. */
int mafp_exit_record_decode(const char *buf, size_t len, struct mafp_exit_record *rec,
			    const char **why);

/* Encodes the launch line without a newline. Caller frees the result with free(). */
char *mafp_launch_info_encode(const struct mafp_launch_info *info);
/* The same line, for pids (0 .. 2^31-1), into buf without allocating: the launcher's path,
 * where a first use of the allocator and cJSON costs page faults. Returns its length, or -1
 * if it does not fit or a field is out of range. */
int mafp_launch_info_format(const struct mafp_launch_info *info, char *buf, size_t size);
/* Decodes the launch line (the first line of the launcher's stdout that starts with '{').
 * Returns 0, or -1 with a static sentence in *why. */
int mafp_launch_info_decode(const char *buf, size_t len, struct mafp_launch_info *info,
			    const char **why);

/* A request file, as the upstream shim writes it. */
struct mafp_request {
	long id;                /* parsed from "id" */
	int abandoned;          /* {"id": ..., "abandoned": true} */
	char name[MAFP_TOOL_NAME_MAX + 1];
	cJSON *arguments;       /* an object, owned by the request; NULL when abandoned */
};

/* Decodes a request file of at most max_len bytes whose expected id is expect_id. Returns 0,
 * or -1 with a sentence (suitable for a refusal) in why. On success the caller releases
 * req with mafp_request_clear. */
int mafp_request_decode(const char *buf, size_t len, size_t max_len, long expect_id,
			struct mafp_request *req, char *why, size_t why_size);
void mafp_request_clear(struct mafp_request *req);

/* Encodes a request as the upstream shim does. arguments is borrowed (NULL means {}).
 * Caller frees the result with free(). */
char *mafp_request_encode(long id, const char *name, const cJSON *arguments);
/* {"id": "NNNN", "abandoned": true}. Caller frees with free(). */
char *mafp_request_encode_abandoned(long id);

/* {"value": VALUE} and {"refusal": SENTENCE}. value is borrowed. Caller frees with free(). */
char *mafp_response_encode_value(const cJSON *value);
char *mafp_response_encode_refusal(const char *sentence);

/* A response file, as the host writes it. Exactly one of value and refusal is set. */
struct mafp_response {
	cJSON *value;           /* owned; the "value" member detached from its object */
	char *refusal;          /* owned, malloc'd */
};
/* Decodes a response of at most max_len bytes. Returns 0, or -1 if it is incomplete or
 * malformed (a reader treats that as not yet arrived). On success release with
 * mafp_response_clear. */
int mafp_response_decode(const char *buf, size_t len, size_t max_len, struct mafp_response *resp);
void mafp_response_clear(struct mafp_response *resp);

/* Standard base64 (RFC 4648, with '=' padding), under the Docker backend's reader of the
 * engine's X-Docker-Container-Path-Stat header. encode writes the text and a NUL into out,
 * which holds at least MAFP_BASE64_LEN(len) + 1 bytes, and returns its length. decode
 * takes exactly the canonical text (length a multiple of 4, padding only at the end, the
 * unused bits zero), writes at most len / 4 * 3 bytes into out and returns their count, or
 * -1. */
#define MAFP_BASE64_LEN(n) (((n) + 2) / 3 * 4)
size_t mafp_base64_encode(const void *data, size_t len, char *out);
long mafp_base64_decode(const char *text, size_t len, void *out);

/* 1 if the len bytes of text are UTF-8 as strict decoders take it (no overlong form, no
 * surrogate, nothing past U+10FFFF), else 0. Pure. */
int mafp_utf8_valid(const char *text, size_t len);
/* The length (1 to 4) of the one UTF-8 sequence, taken as above, that starts text and fits
 * in its left bytes, or 0 when none does. Pure. */
size_t mafp_utf8_seq_len(const char *text, size_t left);

/* 1 if name is a tool name we accept: 1..MAFP_TOOL_NAME_MAX bytes of printable ASCII
 * other than '/', '\\', quote and space. */
int mafp_tool_name_valid(const char *name);

#endif
