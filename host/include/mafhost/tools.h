/* libmafhost's tools: their parameters and callbacks, the answers a callback gives, the
 * registry and its limits, and the guest shim made from it. A part of <mafhost.h>, which
 * includes it: a program includes <mafhost.h>, never this file. */
#ifndef MAFHOST_TOOLS_H
#define MAFHOST_TOOLS_H

#ifndef MAFHOST_H
#error "include <mafhost.h>, not <mafhost/tools.h>"
#endif

/* ---- tools ------------------------------------------------------------------------------- */

/* Declared JSON types of a tool parameter. INTEGER is a number with no fractional part that a
 * double holds exactly. */
enum mafh_json_type {
	MAFH_JSON_ANY,
	MAFH_JSON_STRING,
	MAFH_JSON_NUMBER,
	MAFH_JSON_INTEGER,
	MAFH_JSON_BOOLEAN,
	MAFH_JSON_OBJECT,
	MAFH_JSON_ARRAY,
	MAFH_JSON_NULL,
};
/* "any", "string", "number", ...: static. */
MAFH_API const char *mafh_json_type_name(enum mafh_json_type type);
/* Parses a type name: 0 and *out, or MAFH_EINVAL. */
MAFH_API int mafh_json_type_from_name(const char *name, enum mafh_json_type *out);

struct mafh_param {
	const char *name;          /* a JSON object key, 1..128 bytes */
	enum mafh_json_type type;
	int required;
};

/* A call handed to a tool: lent by the library for the duration of the callback (or, for a
 * sans-I/O driver, until the CALL op's result). */
struct mafh_call {
	size_t size;               /* the library's sizeof(struct mafh_call) */
	int64_t id;                /* the request's number, 1.. */
	const char *tool;          /* the tool's name */
	/* The arguments: the text of a JSON object, NUL-terminated, already checked against
	 * the tool's declared parameters. */
	const char *arguments;
	size_t arguments_len;
	/* MAFH_CALL_* flags. On a pass-through registry (mafh_registry_set_pass_through) every
	 * call has MAFH_CALL_RAW: tool is "", and arguments[0..arguments_len) are the request
	 * file's bytes as the program wrote them (NUL-terminated; not decoded, not checked),
	 * or none with MAFH_CALL_OVERSIZED or MAFH_CALL_UNREADABLE. */
	unsigned flags;
	uint64_t request_size;     /* RAW: the request file's size in bytes */
};
#define MAFH_CALL_RAW 1u          /* a pass-through call: the request's bytes, unjudged */
#define MAFH_CALL_OVERSIZED 2u    /* larger than max_request_bytes: not read */
#define MAFH_CALL_UNREADABLE 4u   /* not a regular file that could be read */

/* What a pass-through callback does with a request (mafh_reply_raw). */
enum mafh_raw_answer {
	/* Writes the bytes given as the response file, whole and unchanged (within
	 * max_response_bytes; past it the program gets the run's refusal instead). */
	MAFH_RAW_RESPOND,
	/* Writes nothing and goes on to the next request: a number the program took and
	 * gave up (upstream's abandoned marker). */
	MAFH_RAW_STEP_OVER,
	/* Writes nothing and reads the same request again after poll_max_ms: it is not
	 * there yet (an empty file, say, or one that is not a regular file). */
	MAFH_RAW_LOOK_AGAIN,
	/* Writes nothing, and reads no request any more: the run only waits for the program
	 * to end (upstream's supervisor past its serving bound). */
	MAFH_RAW_HOLD,
};

/* Where a tool callback puts its answer (opaque; lent for the duration of the callback). */
struct mafh_reply;
/* Answers with a JSON value: json[0..len) is copied. Any text is taken here; the run
 * refuses the call if it is not one JSON value or is past the response caps, and says so
 * in its event. 0 or MAFH_ENOMEM. A later value or refusal replaces an earlier one. */
MAFH_API int mafh_reply_value(struct mafh_reply *reply, const char *json, size_t len);
/* Refuses the call: sentence (copied) is what the program's HostToolError says. 0 or
 * MAFH_ENOMEM. */
MAFH_API int mafh_reply_refuse(struct mafh_reply *reply, const char *sentence);
/* Attaches text for the operator, never sent to the program (what a failing tool printed,
 * the output that was not JSON, ...): it appears as the detail of the call's event. Copied,
 * at most 64 KiB kept. 0 or MAFH_ENOMEM. */
MAFH_API int mafh_reply_note(struct mafh_reply *reply, const char *text, size_t len);
/* The answer to a pass-through call (MAFH_CALL_RAW): how, and for MAFH_RAW_RESPOND the
 * response file's bytes, bytes[0..len) (copied). 0, MAFH_EINVAL (how unknown, or bytes NULL
 * with len) or MAFH_ENOMEM. */
MAFH_API int mafh_reply_raw(struct mafh_reply *reply, enum mafh_raw_answer how,
			    const char *bytes, size_t len);

/* A tool. call and reply are lent for the duration of the callback. Returns 0 once it has
 * set a value or a refusal on reply (neither is a refusal "the host tool gave no answer"), or
 * a negative errno value for a failure of the tool itself, which the program receives as a
 * refusal naming the tool and the error. A callback must not call back into the run that
 * dispatched it. */
typedef int (*mafh_tool_fn)(const struct mafh_call *call, struct mafh_reply *reply, void *ud);

struct mafh_tool {
	size_t size;               /* sizeof(struct mafh_tool) */
	const char *name;          /* printable ASCII, 1..128 bytes, no space, '/', '\\', '"' */
	const char *description;   /* may be NULL */
	const struct mafh_param *params;
	size_t n_params;           /* none: the tool takes any JSON object */
	/* May be NULL: the tool is then served only by a sans-I/O driver that runs CALL ops
	 * itself; the blocking driver refuses such calls with a sentence. */
	mafh_tool_fn fn;
	void *ud;                  /* borrowed; must outlive every run over the registry */
};

/* Limits a registry imposes on every run over it. */
struct mafh_limits {
	size_t size;                       /* sizeof(struct mafh_limits) */
	int64_t max_calls;                 /* answers per run, refusals included (default 16) */
	uint64_t max_response_bytes;       /* one response file (default 8 MiB) */
	uint64_t max_total_response_bytes; /* every response of a run (default 64 MiB) */
	uint64_t max_request_bytes;        /* one request file read (default 1 MiB) */
	uint64_t max_output_bytes;         /* program output kept and read back (default 1 MiB) */
};
/* Fills *lim with the defaults above and sets lim->size. */
MAFH_API void mafh_limits_init(struct mafh_limits *lim);

struct mafh_registry;

/* A new empty registry with the default limits. The caller frees *out with
 * mafh_registry_free, after every run over it. A sealed registry is only read: runs in
 * several threads may share it (their callbacks must then be thread-safe). MAFH_ENOMEM. */
MAFH_API int mafh_registry_new(struct mafh_registry **out);
MAFH_API void mafh_registry_free(struct mafh_registry *reg);
/* Registers a tool; the struct, its strings and params are copied. MAFH_EPERM once sealed,
 * MAFH_EEXIST for a name already there, MAFH_EINVAL for a bad name, parameter name or type,
 * or a parameter declared twice. */
MAFH_API int mafh_registry_add(struct mafh_registry *reg, const struct mafh_tool *tool,
			       struct mafh_error *err);
/* Replaces the limits (copied). MAFH_EPERM once sealed; MAFH_EINVAL for a zero cap or
 * max_calls outside 0..999999. */
MAFH_API int mafh_registry_set_limits(struct mafh_registry *reg, const struct mafh_limits *lim,
				      struct mafh_error *err);
/* Copies the limits into *lim (honouring lim->size). */
MAFH_API void mafh_registry_get_limits(const struct mafh_registry *reg, struct mafh_limits *lim);
/* Seals the registry: later add and set_limits fail with MAFH_EPERM. A run seals the
 * registry it is made over. Idempotent. */
MAFH_API void mafh_registry_seal(struct mafh_registry *reg);
MAFH_API int mafh_registry_sealed(const struct mafh_registry *reg);
/* The number of tools, and the i-th tool's name and description in registration order
 * (borrowed from the registry; NULL for i out of range). */
MAFH_API size_t mafh_registry_count(const struct mafh_registry *reg);
MAFH_API const char *mafh_registry_tool_name(const struct mafh_registry *reg, size_t i);
MAFH_API const char *mafh_registry_tool_description(const struct mafh_registry *reg, size_t i);
/* The bytes a backend must accept from one run: max_calls x max_response_bytes +
 * max_output_bytes, saturating at UINT64_MAX. */
MAFH_API uint64_t mafh_registry_transfer_bytes(const struct mafh_registry *reg);
/* Checks args_json[0..len) (one JSON object) against the declared parameters of the tool
 * named. 0, or MAFH_ENOENT (no such tool) or MAFH_EINVAL with the refusal's sentence in
 * err. */
MAFH_API int mafh_registry_check_args(const struct mafh_registry *reg, const char *name,
				      const char *args_json, size_t len, struct mafh_error *err);
/* Makes reg a pass-through: every request a run reads goes to fn as a MAFH_CALL_RAW call,
 * whatever it holds (unknown names, bytes that are not JSON, an abandoned marker, a request
 * past max_request_bytes unread), and fn decides what the program gets (mafh_reply_raw).
 * The run then applies no judgement of its own: max_calls is not counted (fn keeps its own
 * count) and no tool is looked up; max_request_bytes, max_response_bytes and
 * max_output_bytes still bound what the host holds. This is how a host serves a registry of
 * its own, with its own sentences, byte for byte. fn may be NULL for a sans-I/O driver that
 * runs CALL ops itself. MAFH_EPERM once sealed; MAFH_EINVAL when tools are registered
 * (and mafh_registry_add then fails with MAFH_EINVAL). */
MAFH_API int mafh_registry_set_pass_through(struct mafh_registry *reg, mafh_tool_fn fn,
					    void *ud, struct mafh_error *err);

/* The guest shim maf_host_tools.py for reg: call(name, **arguments), HostToolError, and one
 * wrapper per tool whose name is a valid, non-keyword Python identifier that does not clash
 * with the shim's own names after NFKC normalisation. *text is NUL-terminated and malloc'd
 * (the caller frees it); len may be NULL. */
MAFH_API int mafh_shim_source(const struct mafh_registry *reg, char **text, size_t *len,
			      struct mafh_error *err);

#endif
