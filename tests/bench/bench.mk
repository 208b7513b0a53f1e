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

# Then the profile of a launch, step by step (tests/bench/launch_profile.py), with a launcher
# built beside the real one with -DMAFL_PROFILE (guest/profile.h) in $(BUILD)/profile.
PROFILE_BUILD := $(BUILD)/profile
.PHONY: profile-launcher
profile-launcher: $(TP_STAMP)
	@$(MAKE) --no-print-directory BUILD=$(PROFILE_BUILD) \
		GUEST_CFLAGS="$(GUEST_CFLAGS) -DMAFL_PROFILE" $(PROFILE_BUILD)/maf-launch

bench-launch: $(BUILD)/maf-launch $(BUILD)/bench_launch profile-launcher
	$(BUILD)/bench_launch --launcher $(abspath $(BUILD)/maf-launch) \
		--reference tests/integration/reference/run_program.sh \
		--iterations $(BENCH_LAUNCH_ITERATIONS) $(BENCH_LAUNCH_FLAGS)
	$(PYTHON) tests/bench/launch_profile.py $(abspath $(PROFILE_BUILD)/maf-launch) \
		--iterations $(BENCH_LAUNCH_ITERATIONS)

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

# make bench-docker: host-tool calls over the Docker engine (tests/bench/bench_docker.py): the
# median of each engine operation through libmafhost's Docker backend (docker_ops), then the
# per-call p50 and p90 and the backend operations per call of maf-host run --backend docker
# (--transport files, wait, relay and stream) in python-noshell, against maf-sandbox's way measured in
# the same run (its shell launcher in python-noshell with busybox-static added, served over
# docker cp and docker exec at 0.2 s and 10 ms polls). Figures only, no pass/fail; the targets
# (p50 <= median exec + median write + 5 ms, and at least 2x fewer operations per call than
# the 10 ms baseline) are printed beside them. Sets the machine up and builds what it needs,
# images included; every container it runs, and its baseline image, is removed at the end.
# Then the same over each engine of BENCH_DOCKER_ENGINES (tests/engines/engines.py starts
# each on the loopback and stops it after: a dockerd over TLS, this dockerd over ssh
# dial-stdio, Podman as root and rootless), a row each, the baseline at 10 ms over each;
# none: this engine alone.
BENCH_DOCKER_ENGINES ?= tls,ssh,podman,podman-rootless
BENCH_DOCKER_CALLS ?= 40
BENCH_DOCKER_ENGINE_OPS ?= 30
BENCH_DOCKER_FLAGS ?=

bench-docker: setup
	$(MAKE) all images $(DOCKER_OPS)
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) $(PYTHON) \
		tests/bench/bench_docker.py --calls $(BENCH_DOCKER_CALLS) \
		--engine-ops $(BENCH_DOCKER_ENGINE_OPS) --engines $(BENCH_DOCKER_ENGINES) \
		$(BENCH_DOCKER_FLAGS)

# make bench-transports: files, relay and stream against maf-sandbox's way, twice: over the
# Docker engine (make bench-docker, with wait too, and the targets of stream and relay), then
# over the latency wrapper at BENCH_LATENCY_MS an operation on this machine
# (tests/bench/bench_transports.py). Figures only, each comparison made in one run.
BENCH_LATENCY_MS ?= 50
BENCH_TRANSPORTS_CALLS ?= 20

bench-transports: bench-docker
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/bench/bench_transports.py \
		--calls $(BENCH_TRANSPORTS_CALLS) --latency-ms $(BENCH_LATENCY_MS)

# make bench-python: the Python package as a host on the local backend, the current one
# against the previous release (BENCH_PYTHON_BASELINE, built from git history in a temporary
# directory with this tree's third-party build; the working tree is not touched), in one run
# (tests/bench/bench_python.py): each measurement a fresh process with one version's package,
# library and launcher alone. Per-call p50 and p99 of the same program served by each version
# alternately, on every CPU (maf-host with a tools server as a reference), on one CPU, and
# with the host on one CPU and the launcher on another; then 1, 10, 100 and 1000 runs of a
# 10-call program at once on one event loop, each level and version in a fresh process: runs
# complete, calls answered, the host's own CPU per call, peak memory per run, the calls' p50
# and p99, wall time, and the host's threads and descriptors at their peak; then the current
# version's 1000 runs again with a second host serving rounds of 10 runs beside them, each
# host's CPU per call under the same load. Figures only, with the targets beside them (current
# p50 / previous p50 no worse than 1.0 within 5%, in each of the two placements; at 1000 runs
# every call answered, and CPU per call no higher than at 10 under the same load) and a
# Markdown table at the end; it fails only when a run of the current version does not
# complete. The run directories are on /dev/shm where it is a tmpfs
# (BENCH_PYTHON_FLAGS='--runs-in /tmp' puts them on the disk, whose own cost per file the
# bench's docstring explains).
BENCH_PYTHON_CALLS ?= 200
BENCH_PYTHON_ROUNDS ?= 12
BENCH_PYTHON_LEVELS ?= 1,10,100,1000
BENCH_PYTHON_BASELINE ?= ad4847e
BENCH_PYTHON_FLAGS ?=

bench-python: all
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/bench/bench_python.py \
		--calls $(BENCH_PYTHON_CALLS) --rounds $(BENCH_PYTHON_ROUNDS) \
		--levels $(BENCH_PYTHON_LEVELS) --baseline $(BENCH_PYTHON_BASELINE) \
		--tp $(abspath $(TP)) $(BENCH_PYTHON_FLAGS)

# make bench-adopt: what the one-line switch gives a maf-sandbox host (tests/bench/
# bench_adopt.py), in one run over maf-sandbox-docker's own sandbox class: maf-sandbox's
# dispatch_over_exec with its shell launcher (at its default 0.2 s poll, in python-noshell
# with busybox's shell added) against mafhost.maf_sandbox.dispatch_over_exec (stream, and
# relay), BENCH_ADOPT_CALLS calls each: p50 and p90 per call, sandbox operations and engine
# commands per call. Runs maf-sandbox from ../shared/upstream in the Debian 13 root that make
# upstream uses; sets the machine up; the shell image is removed at the end. Figures only.
BENCH_ADOPT_CALLS ?= 50

bench-adopt: setup
	$(MAKE) all images
	@if [ ! -d "$(UPSTREAM_DIR)/packages/maf-sandbox" ]; then \
		echo "make bench-adopt: maf-sandbox's code is not at $(UPSTREAM_DIR)"; exit 1; fi; \
	bash .ci/debian13 $(UPSTREAM_ROOT) || exit 1; \
	$(PYTHON) tests/upstream/shell_image.py build $(SHELL_TEST_IMAGE) \
		$(IMAGE_PREFIX)/python-noshell >/dev/null || exit 1; \
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) \
		MAF_SHELL_IMAGE=$(SHELL_TEST_IMAGE) tests/upstream/enter $(UPSTREAM_ROOT) \
		python3 tests/bench/bench_adopt.py --calls $(BENCH_ADOPT_CALLS); rc=$$?; \
	$(PYTHON) tests/upstream/shell_image.py remove $(SHELL_TEST_IMAGE); exit $$rc

# make bench-codeact: what maf-sandbox-codeact's execute_code costs a host over
# maf-sandbox-docker (tests/bench/bench_codeact.py), the current release line as published
# (make upstream-current's /opt/maf-current in the Debian 13 root): maf-sandbox's own exec
# channel (in python-noshell with busybox's shell added) against maf-launch's channel
# (with_maf_launch, in python-noshell), side by side in one run, the ways alternated, with
# programs making 0 and 4 host-tool calls (tests/demo's lookup). Per execute_code: p50 and p90,
# sandbox operations, engine requests (through a counting proxy on the engine's socket) and
# docker commands, and where the time goes (acquire, prepare, run, reclaim, dispose); and
# maf-launch's channel on maf-sandbox-bubblewrap (the root entered with MAF_ENTER_PIVOT=1, so
# that bwrap can make its user namespace; disposal only: that backend reclaims nothing). First
# BENCH_CODEACT_ITERATIONS calls a case and way under the router's default cleanup (a
# container a call), then BENCH_CODEACT_REUSE_ITERATIONS with one container a way, reclaimed
# after each call (0: not run). Figures only: a verdict line a case, against its target
# (upstream's p50 over maf-launch's: 4 calls at least 20x, none at least 1.0x); it fails only
# when it cannot run or a call's result is wrong. Sets the machine up; every container of the
# run and the shell image are removed at the end. Three to five minutes here.
BENCH_CODEACT_ITERATIONS ?= 6
BENCH_CODEACT_REUSE_ITERATIONS ?= 3

bench-codeact: setup
	$(MAKE) all images
	@bash .ci/debian13 $(UPSTREAM_ROOT) || exit 1; \
	why=$$(PYTHON=$(PYTHON) bash .ci/upstream-venv $(UPSTREAM_ROOT)) || \
		{ echo "make bench-codeact: $${why#upstream-venv: }"; exit 1; }; \
	$(PYTHON) tests/upstream/shell_image.py build $(SHELL_TEST_IMAGE) \
		$(IMAGE_PREFIX)/python-noshell >/dev/null || exit 1; \
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) \
		MAF_SHELL_IMAGE=$(SHELL_TEST_IMAGE) MAF_ENTER_PIVOT=1 tests/upstream/enter \
		$(UPSTREAM_ROOT) /opt/maf-current/bin/python tests/bench/bench_codeact.py \
		--iterations $(BENCH_CODEACT_ITERATIONS) \
		--reuse-iterations $(BENCH_CODEACT_REUSE_ITERATIONS); rc=$$?; \
	$(PYTHON) tests/upstream/shell_image.py remove $(SHELL_TEST_IMAGE); exit $$rc
