# maf-launch: the static in-guest launcher and the host library. Plain GNU make.
# Overrides go in config.mak (ignored by git): CC, MUSL_CC, BUILD, PYTHON, ...
-include config.mak

BUILD ?= build
TP ?= build/third_party
CC ?= cc
MUSL_CC ?= musl-gcc
PYTHON ?= /usr/bin/python3
SAN ?=
LD ?= ld
OBJCOPY ?= objcopy
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
# Where bash-completion looks for a command's completion by its name (for /usr/local too).
BASHCOMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# Where make install puts the Python package: on the interpreter's path for /usr (Debian's
# dist-packages) and /usr/local; for another PREFIX, name it in PYTHONPATH.
PYTHON_VERSION = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYTHON_VERSION)/dist-packages)

WARN := -Wall -Wextra -Werror
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong
COMMON := -std=c11 -D_GNU_SOURCE -Ishared -I$(TP)/cjson -I$(BUILD)/gen -DCJSON_NESTING_LIMIT=128
CJSON_FLAGS := -std=c11 -O2 -DCJSON_NESTING_LIMIT=128 -w

# The guest: static musl unless GUEST_CC is overridden (make asan builds it with glibc).
GUEST_CC ?= $(MUSL_CC)
# Size matters (the launcher is baked into every image): no unwind tables (nothing unwinds
# C), sections collected, and no page padding between code and data.
GUEST_SMALL := -Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fno-unwind-tables
GUEST_CFLAGS ?= $(COMMON) $(WARN) $(GUEST_SMALL) -fstack-protector-strong \
	-I$(TP)/musl/include -isystem $(TP)/kernel-include
GUEST_LDFLAGS ?= -static -s -Wl,--gc-sections -Wl,-z,noseparate-code -Wl,--build-id=none
# libseccomp builds the filters when maf-launch is built (filtergen); the launcher links none.
GUEST_LIBS ?= $(TP)/musl/lib/libseccomp.a

HOST_CFLAGS := $(COMMON) $(WARN) $(HARDEN) -O2 -g -Ihost/include -Ihost/src -Ihost/backends \
	$(SAN)
HOST_LDFLAGS := $(SAN)

# The library's version, from the header; 0.x: a minor release may change the ABI, so the
# SONAME carries major.minor.
MAFH_VERSION := $(shell sed -n 's/^.define MAFH_VERSION "\(.*\)"$$/\1/p' host/include/mafhost.h)
MAFH_SOVERSION := $(word 1,$(subst ., ,$(MAFH_VERSION))).$(word 2,$(subst ., ,$(MAFH_VERSION)))
MAFH_SONAME := libmafhost.so.$(MAFH_SOVERSION)
MAFH_SO := libmafhost.so.$(MAFH_VERSION)
# What the library needs beyond libc: libcurl and libarchive (the Docker backend's HTTP and
# tar), pthread mutexes (in libc from glibc 2.34 on) and the math cJSON uses where the
# compiler does not inline it. The .pc's Libs.private: a host linking the archive gets these
# shared, with their own dependencies (a fully static host needs their -dev packages' own).
MAFH_LIBS := -lcurl -larchive -lm -lpthread
# The header's parts, which it includes and make install puts beside it (include/mafhost/).
MAFH_PARTS := $(wildcard host/include/mafhost/*.h)

GUEST_SRC := $(wildcard guest/*.c)
SHARED_SRC := $(wildcard shared/*.c)
HOST_SRC := $(wildcard host/src/*.c host/backends/*.c)
HOSTCLI_SRC := $(wildcard host/cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
BENCH_SRC := $(wildcard tests/bench/*.c)
PROBE_SRC := $(wildcard tests/probes/*.c)

GUEST_OBJ := $(patsubst %.c,$(BUILD)/guest-obj/%.o,$(GUEST_SRC) $(SHARED_SRC)) \
	$(BUILD)/guest-obj/cJSON.o
HOST_OBJ := $(patsubst %.c,$(BUILD)/host-obj/%.o,$(HOST_SRC) $(SHARED_SRC)) \
	$(BUILD)/host-obj/cJSON.o
# The launcher's logic, compiled for the host so unit tests can link it (main.c excluded).
GUEST_HOSTOBJ := $(patsubst %.c,$(BUILD)/host-obj/%.o,$(filter-out guest/main.c,$(GUEST_SRC)))
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
PROBE_BIN := $(patsubst tests/probes/%.c,$(BUILD)/probes/%,$(PROBE_SRC))

TP_STAMP := $(TP)/.stamp

.PHONY: all deps setup test unit core-states integration hostile hostile-guest docker engines python upstream upstream-current asan fuzz \
	bench-launch bench-calls bench-docker bench-transports bench-python bench-adopt bench-codeact demo \
	demo-docker \
	clean size probes install install-check shim-check
.DELETE_ON_ERROR:

all: $(BUILD)/maf-launch $(BUILD)/libmafhost.a $(BUILD)/$(MAFH_SO) \
	$(if $(HOSTCLI_SRC),$(BUILD)/maf-host)

# Installs packages (and starts dockerd) when missing; a no-op on a prepared machine.
setup:
	@bash .ci/setup

deps: $(TP_STAMP)
$(TP_STAMP):
	bash .ci/third-party $(TP)

$(BUILD)/guest-obj/cJSON.o: $(TP_STAMP) guest/cjson_scan.h
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(CJSON_FLAGS) $(GUEST_SMALL) -include guest/cjson_scan.h -c $(TP)/cjson/cJSON.c -o $@
$(BUILD)/guest-obj/%.o: %.c $(TP_STAMP) $(wildcard guest/*.h shared/*.h)
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -c $< -o $@

# The project's one version is MAFH_VERSION in host/include/mafhost.h; the launcher gets it as
# MAF_VERSION, the Python package through its build (host/python/setup.py) or make install.
$(BUILD)/gen/version.h: host/include/mafhost.h
	@mkdir -p $(dir $@)
	printf '/* Made by the build from host/include/mafhost.h. */\n#define MAF_VERSION "%s"\n' \
		'$(MAFH_VERSION)' > $@.tmp
	mv $@.tmp $@
$(BUILD)/guest-obj/guest/main.o $(BUILD)/guest-obj/guest/sleep.o $(BUILD)/host-obj/guest/sleep.o: \
	$(BUILD)/gen/version.h

# The seccomp filters a run loads, built with libseccomp now rather than in every run
# (guest/gen/filtergen.c says how, and what it checks).
$(BUILD)/gen/filtergen: guest/gen/filtergen.c guest/seccomp.c guest/contain.h $(TP_STAMP)
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -Iguest -DMAFL_FILTERGEN -o $@ guest/gen/filtergen.c guest/seccomp.c \
		$(GUEST_LDFLAGS) $(GUEST_LIBS)
$(BUILD)/gen/seccomp_filters.h: $(BUILD)/gen/filtergen
	$< > $@.tmp
	mv $@.tmp $@
$(BUILD)/guest-obj/guest/seccomp.o $(BUILD)/host-obj/guest/seccomp.o: $(BUILD)/gen/seccomp_filters.h

# The guest module the host writes beside a program, kept as the Python file it is
# (host/src/shim/maf_host_tools.py) and compiled into the library as a C string.
$(BUILD)/gen/embed: host/gen/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O2 -o $@ $<
$(BUILD)/gen/shim_template.h: host/src/shim/maf_host_tools.py $(BUILD)/gen/embed
	$(BUILD)/gen/embed shim_template < $< > $@.tmp
	mv $@.tmp $@
$(BUILD)/host-obj/host/src/shim.o: $(BUILD)/gen/shim_template.h

$(BUILD)/maf-launch: $(GUEST_OBJ)
	$(GUEST_CC) $(GUEST_LDFLAGS) -o $@ $^
	@echo "maf-launch: $$(stat -c %s $@) bytes"

$(BUILD)/host-obj/cJSON.o: $(TP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CJSON_FLAGS) -g -fPIC $(SAN) -c $(TP)/cjson/cJSON.c -o $@
$(BUILD)/host-obj/%.o: %.c $(TP_STAMP) $(wildcard guest/*.h shared/*.h host/include/*.h host/src/*.h \
	host/backends/*.h) $(MAFH_PARTS)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -fPIC -c $< -o $@

# The launcher's logic compiled for the unit tests sees the guest's headers; the host's own
# objects do not (guest/spawn.h is not <spawn.h>).
$(GUEST_HOSTOBJ): HOST_CFLAGS += -Iguest

# The library's objects are compiled with hidden visibility: only what the header marks
# MAFH_API (the mafh_ functions) is exported; cJSON, the protocol (mafp_) and the mafh__
# internals are not, so they cannot clash with a host's own cJSON.
$(HOST_OBJ): HOST_CFLAGS += -fvisibility=hidden
$(HOST_OBJ): CJSON_FLAGS += -fvisibility=hidden

$(BUILD)/$(MAFH_SO): $(HOST_OBJ)
	$(CC) -shared -Wl,-soname,$(MAFH_SONAME) -Wl,-z,defs $(HOST_LDFLAGS) -o $@ $^ $(MAFH_LIBS)
	ln -sf $(MAFH_SO) $(BUILD)/$(MAFH_SONAME)
	ln -sf $(MAFH_SONAME) $(BUILD)/libmafhost.so

# The public archive holds one object, a partial link of the library's, in which the hidden
# symbols have been made local: a host linking it statically sees only mafh_ names.
$(BUILD)/libmafhost.o: $(HOST_OBJ)
	$(LD) -r -o $@.tmp $^
	$(OBJCOPY) --localize-hidden $@.tmp $@
	@rm -f $@.tmp
$(BUILD)/libmafhost.a: $(BUILD)/libmafhost.o
	@rm -f $@
	ar rcs $@ $<

# The same objects as they are, for what is built here and uses the internals: maf-host, the
# unit tests and the benches.
$(BUILD)/libmafhost-internal.a: $(HOST_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/maf-host: $(patsubst %.c,$(BUILD)/host-obj/%.o,$(HOSTCLI_SRC)) $(BUILD)/libmafhost-internal.a
	$(CC) $(HOST_LDFLAGS) -o $@ $^ $(MAFH_LIBS)

# Unit tests link the host library, the launcher's logic and cmocka. The headers beside
# them hold the helpers that several test files share (a fixture each, static inline).
$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(BUILD)/libmafhost-internal.a \
	$(GUEST_HOSTOBJ)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Iguest -Itests/unit -o $@ $< $(GUEST_HOSTOBJ) \
		$(BUILD)/libmafhost-internal.a \
		$(HOST_LDFLAGS) -lcmocka -lseccomp $(MAFH_LIBS)

# Probes are static musl programs the integration tests run inside the sandbox.
$(BUILD)/probes/%: tests/probes/%.c $(TP_STAMP)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -D_GNU_SOURCE $(WARN) -O2 -static -isystem $(TP)/kernel-include -o $@ $<

probes: $(PROBE_BIN)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# docs/core-states.dot: the sans-I/O core's table (host/src/core.c) as a Graphviz graph,
# printed by the unit test that fails while the file differs from it.
core-states: $(BUILD)/tests/test_core_states
	$< --print > docs/core-states.dot.tmp
	mv docs/core-states.dot.tmp docs/core-states.dot

# The shim's template compiles as Python by itself, and so does a shim made from it, with no
# placeholder left; in that shim, a wrapper for `add` and none for the names that are not
# identifiers or are Python keywords.
SHIM_CHECK_PY = import sys; sys.path.insert(0, sys.argv[1]); import maf_host_tools as m; \
	assert callable(m.add) and m.__all__ == ["HostToolError", "call", "add"], m.__all__
shim-check: $(BUILD)/maf-host
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	export PYTHONPYCACHEPREFIX=$$tmp/pycache; \
	$(PYTHON) -m py_compile host/src/shim/maf_host_tools.py; \
	$(BUILD)/maf-host shim --tool add --tool two-words --tool class > $$tmp/maf_host_tools.py; \
	if grep -n '@MAF\|@TOOLS@' $$tmp/maf_host_tools.py; then \
		echo "shim-check: a placeholder is left in the shim"; exit 1; fi; \
	$(PYTHON) -m py_compile $$tmp/maf_host_tools.py; \
	$(PYTHON) -c '$(SHIM_CHECK_PY)' $$tmp; \
	echo "shim-check: host/src/shim/maf_host_tools.py and the shim of add, two-words and class compile"

# Under make asan the interpreter gets the sanitizer's runtime preloaded, as for make python:
# a test that loads the library in-process (test_relay_argv's Python host) needs it first.
integration: all $(PROBE_BIN)
	MAF_BUILD=$(abspath $(BUILD)) $(if $(SAN),LD_PRELOAD=$$($(CC) -print-file-name=libasan.so)) \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/integration

# Hostile programs, one per attack on what the README promises to contain, run through
# maf-host on the local backend as root (tests/hostile). Its own pytest run: its conftest is
# not the integration tests'.
hostile: all
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/hostile

# A launcher turned hostile on every transport (tests/hostile-guest): floods, commands that
# never return, forged exit events and forged requests, under maf-host and mafhost, locally
# (as root), in a maf-launch/python-noshell container and in a bubblewrap sandbox entered
# (as root, with bwrap: skipped without it); each run comes back within its
# deadline and the ending's budget, the host at most 64 MiB above its baseline, with the
# record's verdict and no tool run on forged arguments. The image is built first when it is
# missing and the build can make it (the static launcher); Docker cases are skipped where
# no engine answers, unless REQUIRE_DOCKER=1.
hostile-guest: all
	@if { [ "$(REQUIRE_DOCKER)" = 1 ] || $(DOCKER) info >/dev/null 2>&1; } && \
		! $(DOCKER) image inspect $(IMAGE_PREFIX)/python-noshell >/dev/null 2>&1 && \
		! readelf -l $(BUILD)/maf-launch | grep -q INTERP; then \
		$(MAKE) --no-print-directory images; fi
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) $(PYTHON) -m pytest -q \
		-p no:cacheprovider tests/hostile-guest

# The Docker backend against engines the tests start (tests/engines/engines.py): a dockerd
# behind TLS on 127.0.0.1 (certificates made by openssl, a client without one refused),
# this machine's engine over ssh to 127.0.0.1 (dial-stdio), and Podman's Docker-compatible
# service, as root and rootless (a user of its own, made and removed). Their own tests (the sentences of each certificate and connection error,
# contexts; one event loop serving 100 runs at once on each of this machine's engine, the
# TLS one and Podman, in containers of maf-launch/python-noshell, which is built first as
# for images-test), then the whole of tests/docker over each (over ssh, where each connection
# is a login, 32 execs at once rather than 128), and the image tests (the images built into
# it) over each Podman. Skipped where one cannot be started, unless REQUIRE_DOCKER=1.
engines: all $(PROBE_BIN) $(BUILD)/docker/docker_ops
	@if [ "$(REQUIRE_DOCKER)" = 1 ] || $(DOCKER) info >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory images; fi
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) $(PYTHON) -m pytest -q \
		-p no:cacheprovider tests/engines
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/engines/engines.py tls -- \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/docker
	MAF_BUILD=$(abspath $(BUILD)) MAF_DOCKER_MANY=32 $(PYTHON) tests/engines/engines.py ssh -- \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/docker
	for podman in podman podman-rootless; do \
		MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) tests/engines/engines.py $$podman -- sh -c \
		'$(PYTHON) -m pytest -q -p no:cacheprovider tests/docker && \
		$(MAKE) --no-print-directory images-test' || exit 1; \
	done

# The Docker backend against the engine (tests/docker): docker_ops drives it through
# libmafhost's API, maf-host run drives whole runs. Skipped where no engine answers, unless
# REQUIRE_DOCKER=1.
DOCKER_OPS := $(BUILD)/docker/docker_ops
$(DOCKER_OPS): tests/docker/docker_ops.c $(BUILD)/libmafhost-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -o $@ $< $(BUILD)/libmafhost-internal.a $(HOST_LDFLAGS) $(MAFH_LIBS)
docker: all $(PROBE_BIN) $(DOCKER_OPS)
	MAF_BUILD=$(abspath $(BUILD)) $(PYTHON) -m pytest -q -p no:cacheprovider tests/docker

# The Python package (host/python) over this build's library and launcher: the local
# backend, objects with the sandbox surface, and Docker (tests/python; its Docker tests are
# skipped where no engine answers, unless REQUIRE_DOCKER=1).
# Under make asan the interpreter is started with the sanitizer's runtime preloaded (it must
# come first to load the sanitized library); the tests' conftest keeps it from the processes
# they start.
python: all
	MAF_BUILD=$(abspath $(BUILD)) $(if $(SAN),LD_PRELOAD=$$($(CC) -print-file-name=libasan.so)) \
		$(PYTHON) -m pytest -q -p no:cacheprovider tests/python

# maf-sandbox 0.21 itself (../shared/upstream, beside the checkout) with maf-launch swapped in
# for its shell launcher (tests/upstream): in a Debian 13 root (maf-sandbox needs Python 3.12
# or later), made once by .ci/debian13 and entered, as root, by tests/upstream/enter.
# Skipped, with the reason, where the upstream folder is absent. Needs the static launcher
# (the root has no sanitizer runtime) and, for its Docker test, make images.
# The drop-in's parity tests (tests/upstream/test_adopt_parity.py) also need the image
# maf-sandbox's shell launcher runs in, made here (outside the root, where busybox-static
# is) from python-noshell and removed at the end.
UPSTREAM_DIR ?= $(abspath ..)/shared/upstream
UPSTREAM_ROOT ?= $(BUILD)/debian13
SHELL_TEST_IMAGE ?= $(IMAGE_PREFIX)/python-busybox-test
upstream: all
	@if [ ! -d "$(UPSTREAM_DIR)/packages/maf-sandbox" ]; then \
		echo "make upstream: skipped: maf-sandbox's code is not at $(UPSTREAM_DIR)"; exit 0; fi; \
	bash .ci/debian13 $(UPSTREAM_ROOT) || exit 1; \
	if docker image inspect $(IMAGE_PREFIX)/python-noshell >/dev/null 2>&1; then \
		$(PYTHON) tests/upstream/shell_image.py build $(SHELL_TEST_IMAGE) \
			$(IMAGE_PREFIX)/python-noshell >/dev/null || exit 1; fi; \
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) \
		MAF_SHELL_IMAGE=$(SHELL_TEST_IMAGE) tests/upstream/enter $(UPSTREAM_ROOT) \
		python3 -m pytest -q -p no:cacheprovider tests/upstream; rc=$$?; \
	$(PYTHON) tests/upstream/shell_image.py remove $(SHELL_TEST_IMAGE); exit $$rc

# The current maf-sandbox release line, as published (tests/upstream-current): the exact
# versions of tests/upstream-current/requirements.txt, installed once by .ci/upstream-venv
# into a virtual environment of the same Debian 13 root (/opt/maf-current; remade when the
# pins change) and entered as a plain `chroot` enters it (its / no mount's root, which
# make upstream's binding gives it), so that the channel's runs below pytest's private
# tmp_path are made where a plain chroot makes them; then maf-sandbox-bubblewrap's tests,
# in the same root made the mount namespace's root (MAF_ENTER_PIVOT=1: bwrap makes a user
# namespace, which the kernel refuses a chroot'ed process). Skipped, with the reason, where the
# package index cannot be reached from here (the script's exit 3), unless CI=true: then that
# fails.
upstream-current: all
	@bash .ci/debian13 $(UPSTREAM_ROOT) || exit 1; \
	why=$$(PYTHON=$(PYTHON) bash .ci/upstream-venv $(UPSTREAM_ROOT)); rc=$$?; \
	if [ $$rc = 3 ]; then \
		if [ "$${CI:-}" = true ]; then echo "make upstream-current: $${why#upstream-venv: } (CI=true)"; \
			exit 1; fi; \
		echo "make upstream-current: skipped: $${why#upstream-venv: }"; exit 0; fi; \
	[ $$rc = 0 ] || exit $$rc; \
	if docker image inspect $(IMAGE_PREFIX)/python-noshell >/dev/null 2>&1; then \
		$(PYTHON) tests/upstream/shell_image.py build $(SHELL_TEST_IMAGE) \
			$(IMAGE_PREFIX)/python-noshell >/dev/null || exit 1; fi; \
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) \
		MAF_SHELL_IMAGE=$(SHELL_TEST_IMAGE) MAF_ENTER_PLAIN=1 tests/upstream/enter \
		$(UPSTREAM_ROOT) /opt/maf-current/bin/python -m pytest -q -p no:cacheprovider \
		--ignore=tests/upstream-current/test_bubblewrap.py tests/upstream-current; rc=$$?; \
	$(PYTHON) tests/upstream/shell_image.py remove $(SHELL_TEST_IMAGE); [ $$rc = 0 ] || exit $$rc; \
	MAF_BUILD=$(abspath $(BUILD)) MAF_ENTER_PIVOT=1 REQUIRE_BWRAP=1 tests/upstream/enter \
		$(UPSTREAM_ROOT) /opt/maf-current/bin/python -m pytest -q -p no:cacheprovider \
		tests/upstream-current/test_bubblewrap.py

# The README's test command: set up the machine, build, run every test, one target after
# the other, each one's time said as it passes (the first to fail stops it).
TEST_STEPS := all unit shim-check install-check fuzz-smoke integration hostile hostile-guest \
	images-test docker engines python upstream upstream-current
test: setup
	@for step in $(TEST_STEPS); do s=$$(date +%s); $(MAKE) $$step || exit 1; \
		echo "make test: $$step passed in $$(( $$(date +%s) - s )) s"; done

# The same suites with AddressSanitizer and UndefinedBehaviorSanitizer: the launcher is built
# against glibc for it (sanitizers need a dynamic C library), the host side as usual. The unit
# tests run with LeakSanitizer; the integration tests without it, because LeakSanitizer stops
# the world with ptrace, which the sandbox's seccomp filter denies to every program in a run
# (maf-launch call included): it would abort those processes, not find leaks.
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_MAKE = BUILD=build/asan SAN="$(ASAN_FLAGS)" GUEST_CC="$(CC)" \
	GUEST_CFLAGS="$(subst -I$(BUILD)/gen,-Ibuild/asan/gen,$(COMMON)) $(WARN) -O1 -g -Iguest \
		$(ASAN_FLAGS)" \
	GUEST_LDFLAGS="$(ASAN_FLAGS)" GUEST_LIBS=-lseccomp
asan: setup deps
	$(MAKE) $(ASAN_MAKE) all unit
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) $(ASAN_MAKE) integration hostile hostile-guest docker python

PC_LIBDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
# The man pages and the bash completions make install puts beside the programs: the
# launcher's are made by guest/docs.mk, the host's by host/cli/docs.mk.
INSTALL_MAN1 := $(BUILD)/man/maf-launch.1 $(BUILD)/man/maf-host.1
INSTALL_MAN3 := $(BUILD)/man/libmafhost.3
INSTALL_COMPLETIONS := $(BUILD)/completions/maf-launch.bash $(BUILD)/completions/maf-host.bash

# make install [PREFIX=/usr/local] [DESTDIR=]: the two programs, their man pages (MANDIR) and
# bash completions (BASHCOMPLETIONDIR, each named after its command), the library (static
# and shared), its header with its parts (include/mafhost/) and libmafhost(3), its
# pkg-config file and the Python package (PYTHONDIR), whose mafhost/_lib/ links to the
# library installed. The .pc and the link name PREFIX, without DESTDIR.
install: $(BUILD)/maf-launch $(BUILD)/maf-host $(BUILD)/libmafhost.a $(BUILD)/$(MAFH_SO) \
	$(INSTALL_MAN1) $(INSTALL_MAN3) $(INSTALL_COMPLETIONS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/mafhost
	install -m 0755 $(BUILD)/maf-launch $(BUILD)/maf-host $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(BASHCOMPLETIONDIR)
	install -m 0644 $(INSTALL_MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(INSTALL_MAN3) $(DESTDIR)$(MANDIR)/man3/
	set -e; for f in $(INSTALL_COMPLETIONS); do \
		install -m 0644 $$f $(DESTDIR)$(BASHCOMPLETIONDIR)/$$(basename $$f .bash); done
	install -m 0644 $(BUILD)/libmafhost.a $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(BUILD)/$(MAFH_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(MAFH_SO) $(DESTDIR)$(LIBDIR)/$(MAFH_SONAME)
	ln -sf $(MAFH_SONAME) $(DESTDIR)$(LIBDIR)/libmafhost.so
	install -m 0644 host/include/mafhost.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 $(MAFH_PARTS) $(DESTDIR)$(INCLUDEDIR)/mafhost/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(PC_LIBDIR)' 'includedir=$(PC_INCLUDEDIR)' '' \
		'Name: mafhost' \
		'Description: host-tool calls for programs run by maf-launch in a sandbox' \
		'Version: $(MAFH_VERSION)' \
		'Cflags: -I$${includedir}' \
		'Libs: -L$${libdir} -lmafhost' \
		'Libs.private: $(MAFH_LIBS)' > $(DESTDIR)$(LIBDIR)/pkgconfig/mafhost.pc
	install -d $(DESTDIR)$(PYTHONDIR)/mafhost/_lib $(DESTDIR)$(PYTHONDIR)/mafhost/maf_sandbox
	install -m 0644 host/python/mafhost/*.py host/python/mafhost/py.typed \
		$(DESTDIR)$(PYTHONDIR)/mafhost/
	install -m 0644 host/python/mafhost/maf_sandbox/*.py \
		$(DESTDIR)$(PYTHONDIR)/mafhost/maf_sandbox/
	printf '"""Written when the package was installed."""\nVERSION = "%s"\n' \
		'$(MAFH_VERSION)' > $(DESTDIR)$(PYTHONDIR)/mafhost/_version.py
	ln -sf $(LIBDIR)/$(MAFH_SONAME) $(DESTDIR)$(PYTHONDIR)/mafhost/_lib/$(MAFH_SONAME)
	@# The package's metadata, so that importlib.metadata and pip know it.
	install -d $(DESTDIR)$(PYTHONDIR)/mafhost-$(MAFH_VERSION).dist-info
	printf '%s\n' 'Metadata-Version: 2.1' 'Name: mafhost' 'Version: $(MAFH_VERSION)' \
		"Summary: $$(sed -n 's/^description = "\(.*\)"$$/\1/p' host/python/pyproject.toml)" \
		'Requires-Python: >=3.11' 'License: MIT' \
		> $(DESTDIR)$(PYTHONDIR)/mafhost-$(MAFH_VERSION).dist-info/METADATA
	echo make > $(DESTDIR)$(PYTHONDIR)/mafhost-$(MAFH_VERSION).dist-info/INSTALLER
	cd $(DESTDIR)$(PYTHONDIR) && { for f in mafhost/*.py mafhost/maf_sandbox/*.py mafhost/py.typed \
		mafhost/_lib/$(MAFH_SONAME) mafhost-$(MAFH_VERSION).dist-info/METADATA \
		mafhost-$(MAFH_VERSION).dist-info/INSTALLER; do echo "$$f,,"; done; \
		echo 'mafhost-$(MAFH_VERSION).dist-info/RECORD,,'; } \
		> mafhost-$(MAFH_VERSION).dist-info/RECORD

# Installs into a fresh prefix and builds tests/install/host.c against the installed files
# alone, statically and shared, and checks the man pages and the completions installed
# (tests/install/check.sh).
install-check: all
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	{ $(MAKE) --no-print-directory install PREFIX=$$tmp/prefix > $$tmp/install.log || \
		{ cat $$tmp/install.log; exit 1; }; } && \
	CC="$(CC)" PYTHON="$(PYTHON)" PYTHONDIR=$$tmp/prefix/lib/python$(PYTHON_VERSION)/dist-packages \
		sh tests/install/check.sh $$tmp/prefix $$tmp

size: $(BUILD)/maf-launch
	@stat -c '%n: %s bytes' $<

clean:
	rm -rf $(BUILD)/gen $(BUILD)/guest-obj $(BUILD)/host-obj $(BUILD)/tests $(BUILD)/probes \
		$(BUILD)/maf-launch $(BUILD)/maf-host $(BUILD)/libmafhost.a $(BUILD)/libmafhost.o \
		$(BUILD)/libmafhost-internal.a $(BUILD)/libmafhost.so* $(BUILD)/docker $(BUILD)/asan $(BUILD)/images

-include guest/docs.mk
-include host/cli/docs.mk
-include tests/bench/bench.mk
-include tests/fuzz/fuzz.mk
-include tests/demo/demo.mk
-include images/images.mk
