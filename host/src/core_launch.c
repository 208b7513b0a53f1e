/* The run's beginning: program.py and the shim written into R/host_tools, then `maf-launch
 * run`, whose launch line says the program runs and under what. */
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum mafh__outcome mafh__emit_write_program(struct mafh_run *run, struct mafh_op *op)
{
	mafh__host_tools_path(run, MAFP_FILE_PROGRAM);
	mafh__op_write(run, op, run->program, run->program_len);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_write_program(struct mafh_run *run,
					    const struct mafh_op_result *res)
{
	if (res->error) {
		mafh__end_run(run, MAFH_RUN_ERROR, res->error, "writing the program failed: %s",
			      res->detail.message);
		return OC_FAILED;
	}
	return run->write_shim ? OC_SHIM_DUE : OC_OK;
}

/* The shim's text, malloc'd: the caller's, or the registry's. 0, or -1 with the run ended. */
static int shim_text(struct mafh_run *run, char **text, size_t *len)
{
	struct mafh_error e = {0};

	if (run->shim) {
		if (!(*text = mafh__memdup(run->shim, run->shim_len))) {
			mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory");
			return -1;
		}
		*len = run->shim_len;
		return 0;
	}
	if (mafh_shim_source(run->reg, text, len, &e) != 0) {
		mafh__end_run(run, MAFH_RUN_ERROR, e.code, "%s", e.message);
		return -1;
	}
	return 0;
}

enum mafh__outcome mafh__emit_write_shim(struct mafh_run *run, struct mafh_op *op)
{
	char *text = NULL;
	size_t len = 0;

	if (shim_text(run, &text, &len) != 0)
		return OC_FAILED;
	free(run->wbuf);
	run->wbuf = text;
	run->wlen = len;
	mafh__host_tools_path(run, MAFP_FILE_SHIM);
	mafh__op_write(run, op, run->wbuf, run->wlen);
	return OC_PENDING;
}

enum mafh__outcome mafh__take_write_shim(struct mafh_run *run, const struct mafh_op_result *res)
{
	free(run->wbuf);
	run->wbuf = NULL;
	if (res->error) {
		mafh__end_run(run, MAFH_RUN_ERROR, res->error, "writing the shim failed: %s",
			      res->detail.message);
		return OC_FAILED;
	}
	return OC_OK;
}

/* The launch's stdin with --files-stdin: "NAME SIZE\n" and the bytes, for the program and,
 * where the run writes one, the shim. 0, or -1 with the run ended. */
static int files_in(struct mafh_run *run)
{
	char *shim = NULL, head[2][64];
	size_t shim_len = 0, h[2], n;

	if (run->write_shim && shim_text(run, &shim, &shim_len) != 0)
		return -1;
	h[0] = (size_t)snprintf(head[0], sizeof(head[0]), "%s %zu\n", MAFP_FILE_PROGRAM,
				run->program_len);
	h[1] = shim ? (size_t)snprintf(head[1], sizeof(head[1]), "%s %zu\n", MAFP_FILE_SHIM,
				       shim_len) : 0;
	n = h[0] + run->program_len + h[1] + shim_len;
	free(run->launch_in);
	run->launch_in = malloc(n ? n : 1);
	if (!run->launch_in) {
		free(shim);
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ENOMEM, "out of memory");
		return -1;
	}
	memcpy(run->launch_in, head[0], h[0]);
	memcpy(run->launch_in + h[0], run->program, run->program_len);
	if (shim) {
		memcpy(run->launch_in + h[0] + run->program_len, head[1], h[1]);
		memcpy(run->launch_in + h[0] + run->program_len + h[1], shim, shim_len);
	}
	free(shim);
	run->launch_in_len = n;
	return 0;
}

enum mafh__outcome mafh__emit_launch(struct mafh_run *run, struct mafh_op *op)
{
	struct mafh__launch_args la = {
		.launcher = run->launcher, .run_dir = run->run_dir,
		.timeout_ms = run->deadline - run->now,
		.max_output_bytes = run->limits.max_output_bytes, .egress = run->egress,
		.seccomp = run->seccomp, .landlock = run->landlock, .user = run->user,
		.max_procs = run->max_procs[0] ? run->max_procs : NULL,
		.max_memory = run->max_memory[0] ? run->max_memory : NULL,
		.writable = run->writable, .prog_argv = run->prog_argv,
		.files_stdin = run->files_on_stdin,
	};

	if (run->files_on_stdin && files_in(run) != 0)
		return OC_FAILED;
	mafh__argv_launch(&run->argv, &la);
	mafh__op_exec(run, op, mafh__clamp64(run->deadline - run->now, 1, run->exec_timeout_ms),
		      MAFH__LAUNCH_OUT_CAP);
	if (run->files_on_stdin) {
		op->data = run->launch_in;
		op->len = run->launch_in_len;
		run->result.exec_inputs++;
	}
	return OC_PENDING;
}

/* `maf-launch run` returned: 0 and its launch line, or why the run cannot go on (ended). */
static int launch_failed(struct mafh_run *run, const struct mafh_op_result *res,
			 struct mafp_launch_info *info)
{
	const struct mafh_exec_result *x = &res->exec;
	const char *why = NULL;
	char line[200];

	if (res->error) {
		mafh__end_run(run, MAFH_RUN_ERROR, res->error, "the launcher could not be run: %s",
			      res->detail.message[0] ? res->detail.message
			      : mafh_strerror(res->error));
		return -1;
	}
	if (x->timed_out) {
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_ETIMEDOUT, "maf-launch run did not return "
			      "in time");
		return -1;
	}
	if (x->exit_code != 0) {
		mafh__first_line(line, sizeof(line), x->err, x->err_len);
		run->result.exit_code = x->exit_code;
		mafh__end_run(run, MAFH_RUN_LAUNCH_FAILED, MAFH_ELAUNCH, "maf-launch run failed "
			      "with exit code %d: %s", x->exit_code, line[0] ? line
			      : "(no message)");
		return -1;
	}
	if (mafh__launch_output_parse(x->out, x->out_len, info, &run->result.session,
				      &why) != 0) {
		mafh__end_run(run, MAFH_RUN_ERROR, MAFH_EPROTO, "maf-launch run printed no usable "
			      "launch line: %s", why);
		return -1;
	}
	return 0;
}

enum mafh__outcome mafh__take_launch(struct mafh_run *run, const struct mafh_op_result *res)
{
	struct mafp_launch_info info;
	struct mafh_event ev = {.kind = MAFH_EVENT_RUN_STARTED};

	free(run->launch_in);
	run->launch_in = NULL;
	/* A launcher older than --files-stdin refuses it as usage, before anything is done:
	 * the files are written, and the launch asked again without it. */
	if (run->files_on_stdin && !res->error && !res->exec.timed_out &&
	    res->exec.exit_code == MAFP_EXIT_USAGE) {
		run->files_on_stdin = 0;
		run->files_plain = 1;
		return OC_PROGRAM_DUE;
	}
	if (launch_failed(run, res, &info))
		return OC_FAILED;
	run->result.pid = info.pid;
	run->result.supervisor_pid = info.supervisor_pid;
	memcpy(run->result.identity, info.identity, sizeof(run->result.identity));
	memcpy(run->result.landlock, info.landlock, sizeof(run->result.landlock));
	run->result.uid = info.uid;
	run->result.gid = info.gid;
	/* The launcher's word, over its own stdout: a program under its own identity, or
	 * under Landlock, cannot write R/host_tools, so the marker and record are the
	 * supervisor's. */
	run->result.verified = strcmp(info.identity, MAFP_IDENTITY_OWN) == 0 ||
			       strncmp(info.landlock, "abi-", 4) == 0;
	run->launched = 1;
	run->next_liveness_ms = run->now + run->liveness_ms;
	run->next_look_ms = mafh__pacing_launched(&run->pacing, run->now);
	if (run->transport != MAFH_TRANSPORT_FILES)
		run->next_look_ms = run->now;
	if (mafh__notifying(run))
		mafh__wait_for_files(run);
	ev.pid = info.pid;
	ev.supervisor_pid = info.supervisor_pid;
	mafh__event(run, &ev);
	return OC_OK;
}
