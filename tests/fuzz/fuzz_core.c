/* libFuzzer target: the host's sans-I/O run core, over a registry of one tool or (the first
 * byte's bit 2) a pass-through one, over a backend with a blocking exec (bit 1: the relay
 * transport) that takes an input (bit 3: the answers on the relay's stdin) and brings stdout
 * back byte for byte (bit 4: stop prints the output after the record, and reclaims), fed
 * guest-written bytes wherever it takes them: the launcher's output (the launch line),
 * `maf-launch wait` and `relay` events, request files, the exit marker and record, and
 * stop's output. The input is a list of records
 * [selector byte][length byte][length bytes], each the result of the next op that reads
 * something; when it runs out, execs print nothing and files are absent, and the clock runs
 * on, so every run ends at its deadline. Oracle: no crash, no sanitizer report, no leak, the
 * run reaches DONE within a bounded number of ops, and its result is consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mafhost.h"

#define MAX_OPS 4000

struct input {
	const uint8_t *p;
	size_t left;
};

/* The next record, or 0 when the input is spent. */
static int next_record(struct input *in, uint8_t *sel, const uint8_t **data, size_t *len)
{
	if (in->left < 2)
		return 0;
	*sel = in->p[0];
	*len = in->p[1];
	if (*len > in->left - 2)
		*len = in->left - 2;
	*data = in->p + 2;
	in->p += 2 + *len;
	in->left -= 2 + *len;
	return 1;
}

static char *copy(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, d, n);
		s[n] = '\0';
	}
	return s;
}

static int echo_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)ud;
	return mafh_reply_value(reply, call->arguments, call->arguments_len);
}

/* A pass-through registry's callback: the request's first byte picks the answer, and a
 * response is the request's own bytes. */
static int raw_tool(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	unsigned how = call->arguments_len ? (unsigned char)call->arguments[0] % 5 : 0;

	(void)ud;
	if (how == 4)
		return mafh_reply_refuse(reply, call->arguments);
	return mafh_reply_raw(reply, (enum mafh_raw_answer)how, call->arguments,
			      call->arguments_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	struct mafh_tool t = {.size = sizeof(t), .name = "echo", .fn = echo_tool};
	struct mafh_registry *reg = NULL;
	struct mafh_run_options o;
	struct mafh_run *run = NULL;
	int64_t now = 1000;
	unsigned caps = MAFH_CAPS_REQUIRED;
	int ops;

	if (size < 1)
		return 0;
	if (data[0] & 1)
		caps |= MAFH_CAP_BLOCKING_EXEC;   /* the wait transport */
	if (data[0] & 4)
		caps |= MAFH_CAP_EXEC_STDIN;      /* relay's answers on its stdin */
	if (data[0] & 16)
		caps |= MAFH_CAP_LAUNCH_STDIN;    /* with bit 3, the files on the launch's */
	if (data[0] & 8)
		caps |= MAFH_CAP_EXEC_EXACT;      /* stop brings the output back, and reclaims */
	in.p++;
	in.left--;
	if (mafh_registry_new(&reg) != 0)
		abort();
	if (data[0] & 2 ? mafh_registry_set_pass_through(reg, raw_tool, NULL, NULL) != 0
			     : mafh_registry_add(reg, &t, NULL) != 0)
		abort();
	mafh_run_options_init(&o);
	o.run_dir = "/fuzz/run";
	o.program = "pass\n";
	o.program_len = 5;
	o.timeout_ms = 5000;
	if (mafh_run_new_sansio(reg, caps, &o, &run, NULL) != 0)
		abort();
	for (ops = 0; ops < MAX_OPS; ops++) {
		const struct mafh_op *op;
		struct mafh_op_result res;
		const uint8_t *d = NULL;
		size_t n = 0;
		uint8_t sel = 0;

		if (mafh_run_next_op(run, now, &op) != 0)
			abort();
		if (op->kind == MAFH_OP_DONE)
			break;
		mafh_op_result_init(&res, op->kind);
		switch (op->kind) {
		case MAFH_OP_EXEC:
			if (next_record(&in, &sel, &d, &n)) {
				/* 0 mostly; 1, usage (2), stop's 3 (lost) and 4 (not reclaimed) */
				static const int codes[8] = {0, 0, 0, 1, 0, 2, 4, 3};

				res.exec.exit_code = codes[sel % 8];
				res.exec.out = copy(d, n);
				res.exec.out_len = res.exec.out ? n : 0;
			}
			break;
		case MAFH_OP_READ:
			res.read.status = MAFH_READ_ABSENT;
			if (next_record(&in, &sel, &d, &n)) {
				res.read.status = (enum mafh_read_status)(sel % 4);
				if (res.read.status == MAFH_READ_OK) {
					res.read.data = copy(d, n);
					res.read.len = res.read.data ? n : 0;
				} else {
					res.read.size = (int64_t)n << 16;
				}
			}
			break;
		case MAFH_OP_WAIT_UNTIL:
			if (op->until_ms > now)
				now = op->until_ms;
			break;
		case MAFH_OP_CALL:
			if (mafh_run_call_tool(run, op, &res) != 0)
				abort();
			break;
		default:
			break;  /* WRITE, STAT: succeed; a stat says absent */
		}
		if (mafh_run_op_result(run, now, &res) != 0)
			abort();
		mafh_exec_result_clear(&res.exec);
		mafh_read_result_clear(&res.read);
		now += 7;  /* every op takes a little time: the deadline always comes */
	}
	if (ops == MAX_OPS)
		abort();   /* a run that never ends */
	{
		const struct mafh_run_result *r = mafh_run_result(run);

		if (!r || r->calls < 0)
			abort();
	}
	mafh_run_free(run);
	mafh_registry_free(reg);
	return 0;
}
