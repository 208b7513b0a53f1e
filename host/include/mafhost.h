/* libmafhost: supervise a program run through maf-launch and serve its host-tool calls over
 * nothing but a sandbox backend's exec and file operations.
 *
 * The pieces, in the order a host uses them:
 *   - a backend (struct mafh_backend_ops, mafh_backend_new): a table of functions (exec,
 *     write_file, read_file, stat, optionally wait_change, the four of a stream and
 *     exec_input) plus a context pointer, with the capabilities it declares. Built in:
 *     local (this machine), docker (a container, through the Docker engine's API) and a
 *     latency-injecting wrapper that simulates a remote backend.
 *   - a registry of tools (mafh_registry_*): names, declared parameters, callbacks, limits.
 *   - a run (mafh_run_*): a sans-I/O state machine that hands out the operations it needs
 *     (mafh_run_next_op) and takes their results (mafh_run_op_result), and a blocking driver
 *     over a backend (mafh_run_drive, mafh_run_wait) for C callers.
 *
 * Conventions
 *   - Functions return 0 (MAFH_OK) or a negative errno value (MAFH_E* names the ones the
 *     library itself produces; a backend's own failures pass through with their errno).
 *     mafh_strerror names any of them. Where a struct mafh_error * is taken it may be NULL;
 *     otherwise it receives the code and one sentence.
 *   - Nothing prints, exits, or keeps global state. Freeing NULL is a no-op.
 *   - Strings passed in are copied unless the comment says "borrowed".
 *   - Structs the caller fills (options, limits, tools, backend tables, op results) begin
 *     with a size field: set it to sizeof the struct (the *_init functions do). A library
 *     newer than the caller gives the fields past that size their defaults.
 *   - Structs the library fills and lends out (struct mafh_op, struct mafh_event,
 *     struct mafh_call) also begin with a size: the library's sizeof, so a caller built
 *     against a newer header can tell whether a field is there (offsetof(...) < size).
 *   - JSON crosses the API as text (UTF-8, one JSON value), never as a parser's tree: tool
 *     arguments arrive as the text of a JSON object, a tool's value is handed back as text.
 *     Parse them with any JSON library.
 *
 * The header needs only the C library's headers. Link with -lmafhost (pkg-config mafhost).
 */
#ifndef MAFHOST_H
#define MAFHOST_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(MAFH_NO_VISIBILITY)
#define MAFH_API __attribute__((visibility("default")))
#else
#define MAFH_API
#endif

/* The API is declared in parts, each a file of mafhost/ that this header includes after the
 * errors, in this order: backend.h (the backends), tools.h (the tools and the registry),
 * run.h (a run: its options, events and result) and drive.h (the sans-I/O core, driving from
 * an event loop, the blocking driver). A program includes this header alone. */

/* ---- version ----------------------------------------------------------------------------- */

#define MAFH_VERSION_MAJOR 0
#define MAFH_VERSION_MINOR 3
#define MAFH_VERSION_PATCH 0
#define MAFH_VERSION "0.3.0"

/* The version of the library actually loaded ("0.3.0"): static, never NULL. Compare it with
 * MAFH_VERSION, the version of the header the caller was built against. */
MAFH_API const char *mafh_version(void);

/* ---- errors ------------------------------------------------------------------------------ */

#define MAFH_OK 0
#define MAFH_EINVAL (-EINVAL)       /* a bad argument or option */
#define MAFH_ENOMEM (-ENOMEM)       /* out of memory */
#define MAFH_ENOTSUP (-ENOTSUP)     /* the backend lacks a capability the run needs */
#define MAFH_EPERM (-EPERM)         /* refused: registering into a sealed registry, ... */
#define MAFH_EEXIST (-EEXIST)       /* a tool of that name is already registered */
#define MAFH_ENOENT (-ENOENT)       /* no such file, container or tool */
#define MAFH_E2BIG (-E2BIG)         /* past a size or count cap */
#define MAFH_EIO (-EIO)             /* a backend operation failed, with no errno of its own */
#define MAFH_EPROTO (-EPROTO)       /* the guest or the launcher broke the protocol */
#define MAFH_ETIMEDOUT (-ETIMEDOUT) /* a deadline passed */
#define MAFH_EBUSY (-EBUSY)         /* an op is outstanding */
#define MAFH_ECANCELED (-ECANCELED) /* the run was stopped by the caller */
#define MAFH_ELAUNCH (-ENOEXEC)     /* the launcher failed to start the program */
#define MAFH_EPIPE (-EPIPE)         /* a stream has ended */

/* A short name for code ("invalid argument", "no such file or directory", ...): for the
 * MAFH_E* codes the library's own words, for any other negative errno the C library's.
 * Static, never NULL, thread-safe. */
MAFH_API const char *mafh_strerror(int code);

/* A detailed error: code is 0 or a negative errno value, message one sentence (may be
 * empty). */
struct mafh_error {
	int code;
	char message[256];
};

#include "mafhost/backend.h"
#include "mafhost/tools.h"
#include "mafhost/run.h"
#include "mafhost/drive.h"

#ifdef __cplusplus
}
#endif

#endif
