/* Internals shared across libmafhost's files (mafh__ names). Not installed. */
#ifndef MAFHOST_INTERNAL_H
#define MAFHOST_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "mafhost.h"
#include "protocol.h"

/* Sets err (if not NULL) to code and a printf-formatted sentence; returns code. */
int mafh__error_set(struct mafh_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void mafh__error_clear(struct mafh_error *err);

/* Copies at most dst_size bytes of src, honouring src_size (versioned structs): the caller's
 * struct may be older (smaller) or newer (larger) than ours. Zeroes what is not copied. */
void mafh__copy_versioned(void *dst, size_t dst_size, const void *src, size_t src_size);

/* A backend's ops performed without blocking: how the library's own backends work (task.c
 * gives them their blocking table functions, mafh_run_advance and mafh_task_* drive them from
 * an event loop). */
struct mafh__nb_ops {
	/* Starts op (any kind but CALL and DONE; checked). *state is the caller's slot for what
	 * the backend keeps between ops (a stream, watches), NULL at first and freed by
	 * state_free. Returns 0 when op is over already (res filled), 1 when it goes on in
	 * *task. res was made by mafh_op_result_init. */
	int (*start)(void *ctx, void **state, const struct mafh_op *op, int64_t now_ms,
		     void **task, struct mafh_op_result *res);
	/* What task waits on: the descriptors (up to MAFH_WANT_FDS) and *until_ms, the time to
	 * step it at the latest (INT64_MAX: none). Returns their count. */
	int (*want)(void *ctx, void *task, struct mafh_pollfd *fds, int64_t *until_ms);
	/* Takes task further without blocking: 1 while it goes on, 0 once it is over (res
	 * filled). */
	int (*step)(void *ctx, void *task, int64_t now_ms, struct mafh_op_result *res);
	/* Frees task, once over or while it goes on (then the op is abandoned). What a result
	 * points to and is not malloc'd for the caller (stream_data) lives in the state, until
	 * the next op started on it. */
	void (*free)(void *ctx, void *task);
	/* Frees a state, closing what it holds. */
	void (*state_free)(void *ctx, void *state);
};

struct mafh_backend {
	struct mafh_backend_ops ops;
	const struct mafh__nb_ops *nb;  /* NULL: ops' blocking functions */
	/* The state of the table's stateless calls (wait_change) over nb, one caller at a
	 * time. */
	pthread_mutex_t shared_lock;
	void *shared_state;
};

/* A backend whose ops are nb's, over ctx (destroy(ctx) when the backend is freed, or at
 * once when this fails): caps and launcher as in struct mafh_backend_ops. Its table's
 * blocking functions are nb performed to the end. 0, or MAFH_ENOMEM. */
int mafh__backend_new_nb(unsigned caps, const char *launcher_path, void *ctx,
			 void (*destroy)(void *ctx), const struct mafh__nb_ops *nb,
			 struct mafh_backend **out);
/* Performs op over b to its end, blocking in poll(2): res filled as by a task (what it
 * holds is the caller's to clear, stream_data excepted, which lives in *state). */
void mafh__backend_perform(struct mafh_backend *b, void **state, const struct mafh_op *op,
			   struct mafh_op_result *res);

/* A registered tool (copied). */
struct mafh__tool {
	char *name;
	char *description;
	struct mafh_param *params;  /* names malloc'd */
	size_t n_params;
	mafh_tool_fn fn;
	void *ud;
};

struct mafh_registry {
	struct mafh__tool *tools;
	size_t n_tools;
	size_t cap_tools;
	struct mafh_limits limits;
	int sealed;
	/* mafh_registry_set_pass_through: every request goes to pt_fn, unjudged. */
	int pass_through;
	mafh_tool_fn pt_fn;
	void *pt_ud;
};

/* The registered tool of that name, or NULL. */
const struct mafh__tool *mafh__registry_find(const struct mafh_registry *reg, const char *name);
/* mafh_registry_check_args over an already parsed tree (borrowed). */
int mafh__registry_check_tree(const struct mafh_registry *reg, const char *name,
			      const cJSON *args, struct mafh_error *err);

/* What a tool callback answered (mafh_reply_*): owned strings, freed by mafh__reply_clear. */
struct mafh_reply {
	char *value;
	size_t value_len;
	char *refusal;
	char *note;
	size_t note_len;
	enum mafh_raw_answer raw_answer;  /* mafh_reply_raw */
};
void mafh__reply_clear(struct mafh_reply *r);

/* The backend a run was made with (NULL for a sans-I/O run). */
struct mafh_backend *mafh__run_backend(const struct mafh_run *run);
/* 1 once mafh_run_stop was called. */
int mafh__run_stop_requested(const struct mafh_run *run);

/* Appends p[0..n) to the malloc'd buffer *buf (*len bytes used of *size), growing it by
 * doubling and keeping a NUL after the bytes; what would pass cap bytes is dropped (SIZE_MAX:
 * no cap). 0, or -1 with errno ENOMEM (the buffer as it was). */
int mafh__append(char **buf, size_t *len, size_t *size, size_t cap, const void *p, size_t n);

/* Monotonic milliseconds (CLOCK_MONOTONIC). */
int64_t mafh__now_ms(void);
/* Sleeps until the monotonic time until_ms (EINTR resumed). */
void mafh__sleep_until_ms(int64_t until_ms);

#endif
