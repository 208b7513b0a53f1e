# make demo: a Python program in the sandbox (maf-launch on the local backend, the default
# seccomp policy) walks a four-stage lookup only the host's tools can answer:
#   state name -> state id -> store ids -> sales rows -> product names.
# --verbose shows each call on stderr as it is served.
# The data stays on the host (tests/demo/data.json), served by tests/demo/tools_server.py.
# Included by the root Makefile. DEMO_STATE picks the state (Oregon, Washington, Nevada).

DEMO_STATE ?= Oregon
DEMO_DIR := $(abspath tests/demo)
DEMO_TOOLS := --tools-server "$(PYTHON) $(DEMO_DIR)/tools_server.py $(DEMO_DIR)/data.json" \
	--tool state_id --param state_id:name:string \
	--tool stores_in_state --param stores_in_state:state_id:integer \
	--tool sales_for_store --param sales_for_store:store_id:integer \
	--tool product_name --param product_name:product_id:integer

# setup first, then the two binaries, in that order even under make -j.
demo: setup
	$(MAKE) $(BUILD)/maf-launch $(BUILD)/maf-host
	@echo "== maf-host run tests/demo/program.py $(DEMO_STATE): local backend, default seccomp policy,"
	@echo "   4 host tools served by tests/demo/tools_server.py from tests/demo/data.json"
	@echo
	@MAF_LAUNCH=$(abspath $(BUILD))/maf-launch $(BUILD)/maf-host run --backend local \
		--seccomp default --timeout 60 --max-calls 32 --summary --verbose \
		$(DEMO_TOOLS) $(DEMO_DIR)/program.py -- "$(DEMO_STATE)"

# make demo-docker: the same program, tools and summary, with the program in a container of
# maf-launch/python-noshell (Python, no shell; built by make images), --network none, driven
# through the Docker backend: the run directory is made, served, stopped and reclaimed over
# the engine's exec and archive endpoints alone. The container is removed afterwards.
demo-docker: setup
	$(MAKE) images
	@echo "== maf-host run tests/demo/program.py $(DEMO_STATE): Docker backend, a container of"
	@echo "   $(IMAGE_PREFIX)/python-noshell (no shell, --network none), default seccomp policy,"
	@echo "   4 host tools served by tests/demo/tools_server.py from tests/demo/data.json"
	@echo
	@c=maf-launch-demo-$$$$; \
	$(DOCKER) run -d --rm --network none --name $$c $(IMAGE_PREFIX)/python-noshell >/dev/null; \
	trap '$(DOCKER) rm -f '$$c' >/dev/null 2>&1' EXIT; \
	$(BUILD)/maf-host run --backend docker:$$c --seccomp default --timeout 120 \
		--max-calls 32 --summary --verbose $(DEMO_TOOLS) $(DEMO_DIR)/program.py -- "$(DEMO_STATE)"
