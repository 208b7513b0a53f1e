/* Unit tests for the pure pieces of the sans-I/O core (host/src/core.h): the pacing of
 * looks, the launcher's argv, the launcher's output, requests judged and answers encoded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core.h"

/* ---- pacing ------------------------------------------------------------------------------- */

static void test_pacing_first_looks(void **state)
{
	struct mafh__pacing p;

	(void)state;
	mafh__pacing_init(&p, 2, 200);
	/* The program is given the shim's poll interval to start. */
	assert_int_equal(mafh__pacing_launched(&p, 1000), 1000 + MAFH__SHIM_POLL_MS);
	/* Before the first answer the exit marker is probed on every third empty look. */
	assert_int_equal(mafh__pacing_missed(&p), 0);
	assert_int_equal(mafh__pacing_missed(&p), 0);
	assert_int_equal(mafh__pacing_missed(&p), 1);
	/* After an answer, on every second. */
	mafh__pacing_answered(&p, 2000);
	assert_int_equal(mafh__pacing_missed(&p), 0);
	assert_int_equal(mafh__pacing_missed(&p), 1);
}

static void test_pacing_after_answer(void **state)
{
	struct mafh__pacing p;

	(void)state;
	mafh__pacing_init(&p, 2, 200);
	/* No latency seen: the first look comes one shim gap after the answer. */
	assert_int_equal(mafh__pacing_answered(&p, 1000), 1050);
	/* A slow backend: the look is sent early by the op's own latency. */
	mafh__pacing_observe(&p, 20);
	assert_int_equal(mafh__pacing_answered(&p, 2000), 2030);
	/* Latency past the gap: at once, never in the past. */
	mafh__pacing_observe(&p, 200);
	mafh__pacing_observe(&p, 200);
	assert_int_equal(mafh__pacing_answered(&p, 3000), 3000);
}

static void test_pacing_learns_the_gap(void **state)
{
	struct mafh__pacing p;
	double gap;

	(void)state;
	mafh__pacing_init(&p, 2, 200);
	mafh__pacing_observe(&p, 4);
	mafh__pacing_answered(&p, 1000);
	/* Found at the first look: a little sooner next time. */
	gap = p.gap_ms;
	mafh__pacing_found(&p);
	assert_true(p.gap_ms < gap && p.gap_ms > gap * 0.99);
	/* Looked too early where a look is costly: the gap grows by half. */
	gap = p.gap_ms;
	mafh__pacing_missed(&p);
	mafh__pacing_next_after_miss(&p, 1010);
	assert_true(p.gap_ms > gap * 1.49 && p.gap_ms < gap * 1.51);
	/* ...but never past poll_max_ms. */
	for (int i = 0; i < 20; i++) {
		mafh__pacing_answered(&p, 2000);
		mafh__pacing_missed(&p);
		mafh__pacing_next_after_miss(&p, 2001);
	}
	assert_true(p.gap_ms <= 200.0);
	/* Where a look is cheap the gap is not learnt upwards. */
	mafh__pacing_init(&p, 2, 200);
	mafh__pacing_observe(&p, 0);
	mafh__pacing_answered(&p, 1000);
	mafh__pacing_missed(&p);
	mafh__pacing_next_after_miss(&p, 1001);
	assert_true(p.gap_ms == MAFH__SHIM_POLL_MS);
}

static void test_pacing_backs_off(void **state)
{
	struct mafh__pacing p;
	int64_t now = 1000, prev = 0, next;

	(void)state;
	mafh__pacing_init(&p, 2, 200);
	mafh__pacing_launched(&p, now);
	/* Each empty look waits longer, up to poll_max_ms. */
	for (int i = 0; i < 12; i++) {
		mafh__pacing_missed(&p);
		next = mafh__pacing_next_after_miss(&p, now) - now;
		assert_true(next >= 2 && next <= 200);
		assert_true(next >= prev);
		prev = next;
		now += next;
	}
	assert_int_equal(prev, 200);
	/* Over a slow backend the idle poll stretches to 24 op latencies. */
	mafh__pacing_observe(&p, 50);
	mafh__pacing_missed(&p);
	assert_int_equal(mafh__pacing_next_after_miss(&p, now) - now, 24 * 50);
	/* A request stepped over resets the count of misses. */
	mafh__pacing_stepped(&p);
	assert_int_equal(p.misses, 0);
}

/* ---- the launcher's argv ------------------------------------------------------------------ */

static void assert_argv(const struct mafh__argv *a, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		assert_non_null(a->v[i]);
		assert_string_equal(a->v[i], want[i]);
	}
	assert_null(a->v[i]);
}

static void test_argv(void **state)
{
	struct mafh__argv a;
	char *prog[] = {"python3", "/r/host_tools/program.py", "x y", NULL};
	struct mafh__launch_args la = {
		.launcher = "/bin/maf-launch", .run_dir = "/r", .timeout_ms = 61234,
		.max_output_bytes = 1048576, .prog_argv = prog,
	};
	char *many[160];

	(void)state;
	assert_int_equal(mafh__argv_launch(&a, &la), 0);
	assert_argv(&a, (const char *const[]){"/bin/maf-launch", "run", "--run-dir", "/r",
			"--timeout", "61.234", "--max-output-bytes", "1048576", "--", "python3",
			"/r/host_tools/program.py", "x y", NULL});
	la.egress = "open";
	la.seccomp = "off";
	la.landlock = "auto";
	la.timeout_ms = 5;
	assert_int_equal(mafh__argv_launch(&a, &la), 0);
	assert_argv(&a, (const char *const[]){"/bin/maf-launch", "run", "--run-dir", "/r",
			"--timeout", "0.005", "--max-output-bytes", "1048576", "--egress", "open",
			"--seccomp", "off", "--landlock", "auto", "--", "python3",
			"/r/host_tools/program.py", "x y", NULL});
	/* What contains the program, when the host says. */
	{
		char *w[] = {"/srv/out", "/dev/shm", NULL};
		struct mafh__launch_args lb = {
			.launcher = "ml", .run_dir = "/r", .timeout_ms = 1000,
			.max_output_bytes = 10, .user = "1000:1000", .max_procs = "0",
			.max_memory = "1073741824", .writable = w, .prog_argv = prog,
		};

		assert_int_equal(mafh__argv_launch(&a, &lb), 0);
		assert_argv(&a, (const char *const[]){"ml", "run", "--run-dir", "/r",
				"--timeout", "1.000", "--max-output-bytes", "10", "--user", "1000:1000",
				"--max-procs", "0", "--max-memory", "1073741824", "--writable",
				"/srv/out", "--writable", "/dev/shm", "--", "python3",
				"/r/host_tools/program.py", "x y", NULL});
		lb.max_procs = lb.max_memory = NULL;
		lb.user = NULL;
		lb.writable = NULL;
		assert_int_equal(mafh__argv_launch(&a, &lb), 0);
		assert_string_equal(a.v[8], "--");
		/* The files on the launch's stdin. */
		lb.files_stdin = 1;
		assert_int_equal(mafh__argv_launch(&a, &lb), 0);
		assert_string_equal(a.v[8], "--files-stdin");
		assert_string_equal(a.v[9], "--");
	}
	/* Past the cap: refused, and the argv is cut where it would not fit. */
	for (int i = 0; i < 159; i++)
		many[i] = "arg";
	many[159] = NULL;
	la.prog_argv = many;
	assert_int_equal(mafh__argv_launch(&a, &la), -1);
	assert_null(a.v[MAFH__ARGV_MAX]);

	assert_int_equal(mafh__argv_wait(&a, "ml", "/r", 12, 2000, 1048576, 0), 0);
	assert_argv(&a, (const char *const[]){"ml", "wait", "--run-dir", "/r", "--next", "12",
			"--timeout-ms", "2000", "--max-bytes", "1048576", NULL});
	/* With the supervisor named, wait also says when it is gone without the marker. */
	assert_int_equal(mafh__argv_wait(&a, "ml", "/r", 3, 0, 64, 4242), 0);
	assert_argv(&a, (const char *const[]){"ml", "wait", "--run-dir", "/r", "--next", "3",
			"--timeout-ms", "0", "--max-bytes", "64", "--supervisor-pid", "4242", NULL});
	/* serve accepts each answer at once (--ack). */
	assert_int_equal(mafh__argv_serve(&a, "ml", "/r", 1048576, 8388608, 4242), 0);
	assert_argv(&a, (const char *const[]){"ml", "serve", "--run-dir", "/r", "--ack",
			"--max-bytes", "1048576", "--max-answer-bytes", "8388608",
			"--supervisor-pid", "4242", NULL});
	assert_int_equal(mafh__argv_stop(&a, "ml", "/r", 4242, 10250, -1, 0, NULL), 0);
	assert_argv(&a, (const char *const[]){"ml", "stop", "--run-dir", "/r",
			"--supervisor-pid", "4242", "--timeout", "10.250", NULL});
	/* The stop that brings the output back and then reclaims R, keeping work. */
	assert_int_equal(mafh__argv_stop(&a, "ml", "/r", 4242, 10250, 65536, 1, "work"), 0);
	assert_argv(&a, (const char *const[]){"ml", "stop", "--run-dir", "/r",
			"--supervisor-pid", "4242", "--timeout", "10.250", "--output", "65536",
			"--reclaim", "--keep", "work", NULL});
	assert_int_equal(mafh__argv_stop(&a, "ml", "/r", 4242, 10250, -1, 1, NULL), 0);
	assert_argv(&a, (const char *const[]){"ml", "stop", "--run-dir", "/r",
			"--supervisor-pid", "4242", "--timeout", "10.250", "--reclaim", NULL});
	assert_int_equal(mafh__argv_reclaim(&a, "ml", "/r", NULL), 0);
	assert_argv(&a, (const char *const[]){"ml", "reclaim", "--run-dir", "/r", NULL});
	assert_int_equal(mafh__argv_reclaim(&a, "ml", "/r", "work"), 0);
	assert_argv(&a, (const char *const[]){"ml", "reclaim", "--run-dir", "/r", "--keep",
			"work", NULL});
}

/* ---- the launcher's output ---------------------------------------------------------------- */

static void test_launch_output(void **state)
{
	struct mafp_launch_info info;
	const char *why = NULL;
	int session = -1;
	const char *out;

	(void)state;
	out = "{\"pid\":10,\"supervisor_pid\":9,\"session\":10}\nmaf-host-tools: session\n";
	assert_int_equal(mafh__launch_output_parse(out, strlen(out), &info, &session, &why), 0);
	assert_int_equal(info.pid, 10);
	assert_int_equal(info.supervisor_pid, 9);
	assert_int_equal(session, 1);
	/* The session line must be exact; the launch line is the first line with '{'. */
	out = "noise\n{\"pid\":11,\"supervisor_pid\":8,\"session\":11}\nmaf-host-tools: session \n";
	assert_int_equal(mafh__launch_output_parse(out, strlen(out), &info, &session, &why), 0);
	assert_int_equal(info.pid, 11);
	assert_int_equal(session, 0);
	out = "maf-host-tools: session\n";
	assert_int_equal(mafh__launch_output_parse(out, strlen(out), &info, &session, &why), -1);
	assert_string_equal(why, "none found");
	out = "{\"pid\":\"x\"}\n";
	assert_int_equal(mafh__launch_output_parse(out, strlen(out), &info, &session, &why), -1);
	assert_string_not_equal(why, "none found");
	assert_int_equal(mafh__launch_output_parse(NULL, 0, &info, &session, &why), -1);
}

static void test_wait_events(void **state)
{
	struct mafh__wait_event ev;
	char big[600];
	const char *out;

	(void)state;
	out = "{\"event\":\"timeout\"}\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.kind, MAFH__WAIT_TIMEOUT);
	out = "{\"event\":\"exit\",\"size\":1}\n0";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.kind, MAFH__WAIT_EXIT);
	assert_true(mafh__wait_event_whole(&ev));
	assert_int_equal(ev.body_len, 1);
	assert_memory_equal(ev.body, "0", 1);
	/* A size that is not the body's, an oversized or unreadable file: not whole. */
	out = "{\"event\":\"exit\",\"size\":2}\n0";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_false(mafh__wait_event_whole(&ev));
	out = "{\"event\":\"request\",\"id\":3,\"size\":2,\"oversized\":true}\n{}";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.kind, MAFH__WAIT_REQUEST);
	assert_int_equal(ev.id, 3);
	assert_true(ev.oversized);
	assert_false(mafh__wait_event_whole(&ev));
	out = "{\"event\":\"request\",\"id\":4,\"error\":\"not a regular file\"}\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_true(ev.unreadable);
	assert_false(mafh__wait_event_whole(&ev));
	/* An id that is not a call number is no id. */
	out = "{\"event\":\"request\",\"id\":2.5,\"size\":0}\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.id, -1);
	out = "{\"event\":\"request\",\"id\":1e9,\"size\":0}\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.id, -1);
	out = "{\"event\":\"surprise\"}\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), 0);
	assert_int_equal(ev.kind, MAFH__WAIT_OTHER);
	/* No header line, a header that is not an object or has no event, or one past its cap. */
	out = "{\"event\":\"timeout\"}";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), -1);
	out = "[1]\n";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), -1);
	out = "{\"size\":1}\n0";
	assert_int_equal(mafh__wait_event_parse(out, strlen(out), &ev), -1);
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"event\":\"timeout\"", 18);
	memcpy(big + sizeof(big) - 3, "}\n", 3);
	assert_int_equal(mafh__wait_event_parse(big, strlen(big), &ev), -1);
	assert_int_equal(ev.kind, MAFH__WAIT_BAD);
	assert_int_equal(mafh__wait_event_parse(NULL, 0, &ev), -1);
}

/* serve's events on a stream: one at a time, an accepted line (serve --ack) one of them. */
static void test_stream_events(void **state)
{
	static const char acc[] = "{\"event\":\"accepted\",\"id\":3}\n";
	static const char req4[] = "{\"event\":\"request\",\"id\":4,\"size\":2}\n{}";
	struct mafh__wait_event ev;
	char buf[300];

	(void)state;
	/* An accepted line alone: the line, no bytes after it. */
	assert_int_equal(mafh__stream_event_len(acc, strlen(acc), 64, &ev), (long)strlen(acc));
	assert_int_equal(ev.kind, MAFH__WAIT_ACCEPTED);
	assert_int_equal(ev.id, 3);
	assert_int_equal(ev.body_len, 0);
	/* Cut anywhere: not all there yet. */
	for (size_t i = 0; i < strlen(acc); i++)
		assert_int_equal(mafh__stream_event_len(acc, i, 64, &ev), 0);
	/* Followed by the next event: the first alone, then the next from where it ends. */
	snprintf(buf, sizeof(buf), "%s%s", acc, req4);
	assert_int_equal(mafh__stream_event_len(buf, strlen(buf), 64, &ev), (long)strlen(acc));
	assert_int_equal(ev.kind, MAFH__WAIT_ACCEPTED);
	assert_int_equal(mafh__stream_event_len(buf + strlen(acc), strlen(req4), 64, &ev),
			 (long)strlen(req4));
	assert_int_equal(ev.kind, MAFH__WAIT_REQUEST);
	assert_int_equal(ev.id, 4);
	assert_memory_equal(ev.body, "{}", 2);
	assert_int_equal(mafh__stream_event_len(buf + strlen(acc), strlen(req4) - 1, 64, &ev), 0);
	/* A size on an accepted line brings no bytes; an id that is no call number is none. */
	snprintf(buf, sizeof(buf), "{\"event\":\"accepted\",\"id\":1,\"size\":5}\nabcde");
	assert_int_equal(mafh__stream_event_len(buf, strlen(buf), 64, &ev),
			 (long)strlen(buf) - 5);
	assert_int_equal(ev.body_len, 0);
	snprintf(buf, sizeof(buf), "{\"event\":\"accepted\",\"id\":0}\n");
	assert_int_equal(mafh__stream_event_len(buf, strlen(buf), 64, &ev), (long)strlen(buf));
	assert_int_equal(ev.id, -1);
	/* wait's own parser knows the line too (its taker refuses it). */
	assert_int_equal(mafh__wait_event_parse(acc, strlen(acc), &ev), 0);
	assert_int_equal(ev.kind, MAFH__WAIT_ACCEPTED);
	/* What cannot be an event, accepted or not. */
	assert_int_equal(mafh__stream_event_len("{\"id\":3}\n", 9, 64, &ev), -1);
	/* No head line within 256 bytes: none will come. */
	memset(buf, ' ', sizeof(buf));
	assert_int_equal(mafh__stream_event_len(buf, sizeof(buf), 64, &ev), -1);
}

static void test_first_line(void **state)
{
	char buf[8];

	(void)state;
	mafh__first_line(buf, sizeof(buf), "ab\x1b[c\nsecond", 13);
	assert_string_equal(buf, "ab?[c");
	mafh__first_line(buf, sizeof(buf), "0123456789", 10);
	assert_string_equal(buf, "0123456");
	mafh__first_line(buf, sizeof(buf), NULL, 0);
	assert_string_equal(buf, "");
}

/* ---- requests judged, answers encoded ----------------------------------------------------- */

static int nop(const struct mafh_call *call, struct mafh_reply *reply, void *ud)
{
	(void)call;
	(void)ud;
	return mafh_reply_value(reply, "1", 1);
}

static struct mafh_registry *registry(void)
{
	struct mafh_registry *reg;
	struct mafh_param ps[] = {{"a", MAFH_JSON_INTEGER, 1}};
	struct mafh_tool t = {.size = sizeof(t), .name = "inc", .params = ps, .n_params = 1,
			      .fn = nop};

	assert_int_equal(mafh_registry_new(&reg), 0);
	assert_int_equal(mafh_registry_add(reg, &t, NULL), 0);
	return reg;
}

static void judge(struct mafh_registry *reg, int64_t answered, const char *text, long id,
		  struct mafh__judged *j)
{
	struct mafh_limits lim;

	mafh_registry_get_limits(reg, &lim);
	mafh__request_judge(reg, &lim, answered, text, strlen(text), id, j);
}

static void test_request_judge(void **state)
{
	struct mafh_registry *reg = registry();
	struct mafh__judged j;

	(void)state;
	judge(reg, 0, "{\"id\": \"0001\", \"name\": \"inc\", \"arguments\": {\"a\": 1}}", 1, &j);
	assert_int_equal(j.verdict, MAFH__REQ_CALL);
	assert_string_equal(j.tool, "inc");
	assert_non_null(j.t);
	assert_non_null(j.args);
	cJSON_Delete(j.args);
	/* The budget counts answers written, refusals included. */
	judge(reg, 16, "{\"id\": \"0017\", \"name\": \"inc\", \"arguments\": {\"a\": 1}}", 17, &j);
	assert_int_equal(j.verdict, MAFH__REQ_REFUSE);
	assert_non_null(strstr(j.sentence, "budget of 16"));
	assert_null(j.args);
	judge(reg, 0, "{\"id\": \"0001\", \"name\": \"dec\", \"arguments\": {}}", 1, &j);
	assert_int_equal(j.verdict, MAFH__REQ_REFUSE);
	assert_string_equal(j.tool, "dec");
	assert_non_null(strstr(j.sentence, "no host tool named 'dec'"));
	judge(reg, 0, "{\"id\": \"0001\", \"name\": \"inc\", \"arguments\": {\"a\": 1.5}}", 1, &j);
	assert_int_equal(j.verdict, MAFH__REQ_REFUSE);
	assert_non_null(strstr(j.sentence, "JSON type integer"));
	judge(reg, 0, "{\"id\": \"0002\", \"abandoned\": true}", 2, &j);
	assert_int_equal(j.verdict, MAFH__REQ_STEP_OVER);
	/* Not decoded (maybe torn), or for another id. */
	judge(reg, 0, "{\"id\": \"0001\", \"na", 1, &j);
	assert_int_equal(j.verdict, MAFH__REQ_UNREAD);
	assert_string_equal(j.tool, "");
	assert_true(j.sentence[0]);
	judge(reg, 0, "{\"id\": \"0002\", \"name\": \"inc\", \"arguments\": {\"a\": 1}}", 1, &j);
	assert_int_equal(j.verdict, MAFH__REQ_UNREAD);
	mafh_registry_free(reg);
}

static char *encode(const struct mafh_op_result *res, uint64_t total, int *refused,
		    char *sentence)
{
	struct mafh_limits lim;

	mafh_limits_init(&lim);
	lim.max_response_bytes = 40;
	lim.max_total_response_bytes = 100;
	return mafh__answer_encode(res, "inc", &lim, total, refused, sentence,
				   MAFH__SENTENCE_MAX);
}

static void test_answer_encode(void **state)
{
	struct mafh_op_result res;
	char sentence[MAFH__SENTENCE_MAX];
	char *text;
	int refused;

	(void)state;
	mafh_op_result_init(&res, MAFH_OP_CALL);
	res.value = " [1, {\"b\": null}] ";
	res.value_len = strlen(res.value);
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(text, "{\"value\":[1,{\"b\":null}]}");
	assert_false(refused);
	assert_string_equal(sentence, "");
	free(text);
	/* Past the run's total: refused. */
	text = encode(&res, 90, &refused, sentence);
	assert_true(refused);
	assert_non_null(strstr(sentence, "total cap of 100 bytes"));
	free(text);
	/* Not one JSON value. */
	res.value = "{\"a\": 1} {}";
	res.value_len = strlen(res.value);
	text = encode(&res, 0, &refused, sentence);
	assert_true(refused);
	assert_non_null(strstr(sentence, "not one JSON value"));
	assert_non_null(strstr(text, "\"refusal\""));
	free(text);
	/* Larger than the cap, as given or once encoded. */
	res.value = "\"0123456789012345678901234567890123456789\"";
	res.value_len = strlen(res.value);
	text = encode(&res, 0, &refused, sentence);
	assert_true(refused);
	assert_non_null(strstr(sentence, "more than the cap of 40 bytes"));
	free(text);
	res.value = "\"01234567890123456789012345678901\"";
	res.value_len = strlen(res.value);
	text = encode(&res, 0, &refused, sentence);
	assert_true(refused);
	assert_non_null(strstr(sentence, "is 44 bytes"));
	free(text);
	/* A tool's refusal that is not valid UTF-8, or holds control characters: '?' for each
	 * bad byte, so the program can decode its answer. */
	mafh_op_result_init(&res, MAFH_OP_CALL);
	res.refusal = "caf\xc3\xa9 \xff\xc3 bad\x1b[0m \xed\xa0\x80 ok \xf0\x9f\x98\x80";
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(sentence, "caf\xc3\xa9 ?? bad?[0m ??? ok \xf0\x9f\x98\x80");
	free(text);
	/* A refusal, an empty one, no answer at all, a failure. */
	mafh_op_result_init(&res, MAFH_OP_CALL);
	res.refusal = "no such city";
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(text, "{\"refusal\":\"no such city\"}");
	assert_string_equal(sentence, "no such city");
	free(text);
	res.refusal = "";
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(sentence, "the host refused the call");
	free(text);
	res.refusal = NULL;
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(sentence, "the host tool 'inc' gave no answer");
	free(text);
	res.error = MAFH_ENOMEM;
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(sentence, "the host tool 'inc' failed: out of memory");
	free(text);
	snprintf(res.detail.message, sizeof(res.detail.message), "exit code 3");
	text = encode(&res, 0, &refused, sentence);
	assert_string_equal(sentence, "the host tool 'inc' failed: out of memory: exit code 3");
	assert_true(refused);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pacing_first_looks),
		cmocka_unit_test(test_pacing_after_answer),
		cmocka_unit_test(test_pacing_learns_the_gap),
		cmocka_unit_test(test_pacing_backs_off),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_launch_output),
		cmocka_unit_test(test_wait_events),
		cmocka_unit_test(test_stream_events),
		cmocka_unit_test(test_first_line),
		cmocka_unit_test(test_request_judge),
		cmocka_unit_test(test_answer_encode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
