# make bench-launch: how long the exec of `maf-launch run` takes to return, against upstream's
# `sh run_program.sh` (the reference in tests/integration/reference) for the same trivial
# program, measured alternately in one run. Figures only, no pass/fail.
BENCH_LAUNCH_ITERATIONS ?= 200

bench-launch: $(BUILD)/maf-launch
	$(PYTHON) tests/bench/bench_launch.py --launcher $(abspath $(BUILD)/maf-launch) \
		--reference tests/integration/reference/run_program.sh \
		--iterations $(BENCH_LAUNCH_ITERATIONS)
