/* maf-host's tools: a command run once per call (--tool NAME=COMMAND), or one long-lived
 * tools server speaking newline-delimited JSON (--tools-server COMMAND, --tool NAME). Both
 * run on the host, through the host's own /bin/sh. Every answer is bounded in bytes and in
 * time, so a tool can refuse, fail or misbehave but never hang the run. */
#ifndef CLI_TOOLS_H
#define CLI_TOOLS_H

#include <signal.h>
#include <stddef.h>

#include "cJSON.h"

/* Set (from a signal handler, say) to cut short the call in progress and refuse every later
 * one: the run is stopping. Calls notice it within about 100 ms. */
extern volatile sig_atomic_t cli_tools_cancel;

/* The most a note keeps: what libmafhost keeps of one (mafh_reply_note). */
#define TOOL_NOTE_MAX (64u << 10)

/* The outcome of one call: exactly one of value (owned, free with cJSON_Delete) and refusal
 * (owned, malloc'd sentence) is set. A refusal may come with a note (owned, malloc'd, NULL
 * if none): what the tool printed, for the operator and never for the program, at most
 * TOOL_NOTE_MAX bytes, with what was not kept counted in its last line. */
struct tool_answer {
	cJSON *value;
	char *refusal;
	char *note;
	size_t note_len;
};

void cli_tool_answer_clear(struct tool_answer *a);

/* Runs `sh -c command` with args_json on its stdin; its stdout (at most out_max bytes) must
 * be one JSON value. A non-zero exit is a refusal carrying the first line of its stderr.
 * After timeout_ms the command's process group is killed and the call refused. A refusal's
 * note holds what the command printed: its stdout (unless past out_max) and its stderr. name
 * is used in sentences only. Returns 0 with *a filled, or -1 (out of memory; *a empty). */
int cli_tool_command_call(const char *name, const char *command, const char *args_json,
		      size_t out_max, long long timeout_ms, struct tool_answer *a);

struct tools_server;

/* Starts `sh -c command` in its own process group, with pipes on its stdin and stdout (its
 * stderr is ours). line_max bounds each answer line. Returns a server the caller ends with
 * cli_tools_server_free, or NULL with a sentence in err. */
struct tools_server *cli_tools_server_start(const char *command, size_t line_max, char *err,
					size_t err_size);

/* Sends {"id": N, "name": name, "arguments": args} and waits at most timeout_ms for
 * {"id": N, "value": ...} or {"id": N, "refusal": "..."}. A server that has ended, answers
 * garbage, a wrong id or too long a line, or is too slow is marked failed (and killed): this
 * call and every later one are refused, and cli_tools_server_error() says why; an answer
 * line it could not take is the refusal's note. args is borrowed. Returns 0 with *a filled,
 * or -1 (out of memory). */
int cli_tools_server_call(struct tools_server *s, const char *name, const cJSON *args,
		      long long timeout_ms, struct tool_answer *a);

/* The first failure of the server, a sentence, or NULL while it is healthy. Borrowed. */
const char *cli_tools_server_error(const struct tools_server *s);

/* Closes the server's stdin, gives it a moment to exit, then kills its process group, and
 * frees s. NULL is a no-op. */
void cli_tools_server_free(struct tools_server *s);

#endif
