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
