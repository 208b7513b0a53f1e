# make bench-launch: how long the exec of `maf-launch run` takes to return, against upstream's
# `sh run_program.sh` (the reference in tests/integration/reference) for the same trivial
# program, measured alternately in one run, in run directories under $TMPDIR (default /tmp),
# kept until the end (BENCH_LAUNCH_FLAGS=--delete-each removes each once its run has ended).
# Figures only, no pass/fail.
BENCH_LAUNCH_ITERATIONS ?= 200
BENCH_LAUNCH_FLAGS ?=

$(BUILD)/bench_launch: tests/bench/bench_launch.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -o $@ $<

bench-launch: $(BUILD)/maf-launch $(BUILD)/bench_launch
	$(BUILD)/bench_launch --launcher $(abspath $(BUILD)/maf-launch) \
		--reference tests/integration/reference/run_program.sh \
		--iterations $(BENCH_LAUNCH_ITERATIONS) $(BENCH_LAUNCH_FLAGS)

# make bench-calls: the round trip of a host-tool call on the local backend (p50, p99, calls
# per second), through the launcher's channel against the legacy file path, in one run of
# each host: maf-host with a tools server, and libmafhost with the tool in-process
# (bench_calls_inproc.c). Figures only, no pass/fail; the targets (p50 <= 200 us, >= 5,000
# calls/s) are printed beside them, and so is the machine's floor measured in the same run
# (bench_wake.c: the round trip between two processes over a socketpair).
BENCH_CALLS_CALLS ?= 2000

$(BUILD)/bench_calls_inproc: tests/bench/bench_calls_inproc.c $(BUILD)/libmafhost-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(BUILD)/libmafhost-internal.a $(HOST_LDFLAGS) -lm

$(BUILD)/bench_wake: tests/bench/bench_wake.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -o $@ $<

bench-calls: $(BUILD)/maf-launch $(BUILD)/maf-host $(BUILD)/bench_calls_inproc $(BUILD)/bench_wake
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/bench/bench_calls.py \
		--calls $(BENCH_CALLS_CALLS)
