# libFuzzer targets for every parser of guest-written bytes (tests/fuzz/fuzz_*.c), included
# by the Makefile.
#   make fuzz          build every target and fuzz each for FUZZ_SECONDS (default 20) from
#                      its seeds in tests/fuzz/corpus/NAME/ (NAME: the file name without
#                      fuzz_); new inputs go to $(BUILD)/fuzz/corpus/NAME, crash inputs to
#                      $(BUILD)/fuzz/crash/. Fails if any target crashes, leaks or trips a
#                      sanitizer, after running them all.
#   make fuzz-smoke    replay the seeds only, once each (a second or so): a regression test.
# Overrides: FUZZ_CC (clang), FUZZ_SECONDS, FUZZ_ARGS (more libFuzzer flags; not -jobs,
# whose workers write fuzz-N.log into the current directory).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 20
FUZZ_ARGS ?=
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
# The host's objects are compiled without -Iguest, as in the Makefile (guest/run.h is not a
# host header); the launcher's objects and the targets, which include guest headers, add it.
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Ishared -Ihost/include -Ihost/src \
	-Ihost/backends -I$(TP)/cjson \
	-I$(BUILD)/gen -DCJSON_NESTING_LIMIT=128 -Wall -Wextra -Werror $(FUZZ_SAN)
# cJSON is instrumented too, so the fuzzer steers through its paths, but not held to our
# warnings.
FUZZ_CHANNEL := $(wildcard guest/channel_*.c)
FUZZ_DEPS := shared/protocol.c $(TP)/cjson/cJSON.c guest/tree.c guest/util.c $(FUZZ_CHANNEL) \
	$(wildcard host/src/*.c) host/backends/docker_parse.c host/backends/docker_endpoint.c
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRC))
FUZZ_BIN := $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))

.PHONY: fuzz fuzz-build fuzz-smoke

$(BUILD)/fuzz/obj/cJSON.o: $(TP_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -g -O1 -DCJSON_NESTING_LIMIT=128 -w $(FUZZ_SAN) -c $(TP)/cjson/cJSON.c -o $@
$(BUILD)/fuzz/obj/guest/%.o: guest/%.c $(TP_STAMP) $(wildcard shared/*.h guest/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Iguest -c $< -o $@
$(BUILD)/fuzz/obj/%.o: %.c $(TP_STAMP) $(wildcard shared/*.h host/include/*.h host/src/*.h \
	host/backends/docker.h) $(MAFH_PARTS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(BUILD)/fuzz/obj/host/src/shim.o: $(BUILD)/gen/shim_template.h

FUZZ_OBJ := $(BUILD)/fuzz/obj/cJSON.o $(BUILD)/fuzz/obj/shared/protocol.o \
	$(BUILD)/fuzz/obj/guest/tree.o $(BUILD)/fuzz/obj/guest/util.o \
	$(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_CHANNEL)) \
	$(BUILD)/fuzz/obj/host/backends/docker_parse.o \
	$(BUILD)/fuzz/obj/host/backends/docker_endpoint.o \
	$(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(wildcard host/src/*.c))
# Made by pattern rules for a pattern rule: make would delete them as intermediate files.
.SECONDARY: $(FUZZ_OBJ)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Iguest -o $@ $< $(FUZZ_OBJ) -lm

fuzz-build: $(FUZZ_BIN)

# Each target runs to its time limit; a crash stops that target (its input is kept under
# $(BUILD)/fuzz/crash/) and the others still run.
fuzz: $(FUZZ_BIN)
	@mkdir -p $(BUILD)/fuzz/crash; failed=""; \
	for n in $(FUZZ_NAMES); do \
		mkdir -p $(BUILD)/fuzz/corpus/$$n tests/fuzz/corpus/$$n; \
		echo "== fuzz_$$n: $(FUZZ_SECONDS) s"; \
		$(BUILD)/fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/crash/$$n- $(FUZZ_ARGS) \
			$(BUILD)/fuzz/corpus/$$n tests/fuzz/corpus/$$n \
			> $(BUILD)/fuzz/$$n.log 2>&1 || failed="$$failed $$n"; \
		grep -E '^stat::number_of_executed_units|^Done|ERROR|SUMMARY|^artifact_prefix|Test unit written' \
			$(BUILD)/fuzz/$$n.log || true; \
	done; \
	if [ -n "$$failed" ]; then \
		echo "fuzz: FAILED:$$failed (logs in $(BUILD)/fuzz/NAME.log, inputs in $(BUILD)/fuzz/crash/)"; \
		exit 1; \
	fi; \
	echo "fuzz: all $(words $(FUZZ_NAMES)) targets ran $(FUZZ_SECONDS) s without a crash"

# Replays every seed once, no fuzzing: libFuzzer runs the files named on its command line.
fuzz-smoke: $(FUZZ_BIN)
	@failed=""; \
	for n in $(FUZZ_NAMES); do \
		seeds=$$(find tests/fuzz/corpus/$$n -type f 2>/dev/null | sort); \
		[ -n "$$seeds" ] || { echo "fuzz-smoke: no seeds in tests/fuzz/corpus/$$n"; failed="$$failed $$n"; continue; }; \
		if $(BUILD)/fuzz/fuzz_$$n $$seeds > $(BUILD)/fuzz/$$n.smoke.log 2>&1; then \
			echo "fuzz-smoke: fuzz_$$n: $$(echo $$seeds | wc -w) seeds ok"; \
		else \
			echo "fuzz-smoke: fuzz_$$n FAILED:"; \
			grep -E 'Running:|ERROR|runtime error|SUMMARY' $(BUILD)/fuzz/$$n.smoke.log | tail -n 6; \
			failed="$$failed $$n"; \
		fi; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz-smoke: FAILED:$$failed (logs: $(BUILD)/fuzz/NAME.smoke.log)"; exit 1; }
