# The host's documentation, made by the build and installed by make install; included by the
# Makefile.
#   $(BUILD)/man/maf-host.1, $(BUILD)/completions/maf-host.bash
#       from maf-host's own table (host/cli/commands.c and the option rows beside their
#       setters), by host/cli/gen/docgen.c linked with maf-host's objects: the table the
#       program parses and prints its help from.
#   $(BUILD)/man/libmafhost.3
#       from host/include/mafhost.h and its parts (host/include/mafhost/), whose comments
#       are the API's reference, by host/gen/man3.py (which fails when a MAFH_API function
#       would be missing).
HOSTDOC_GEN := $(BUILD)/gen/maf-host-docgen
HOST_DOCS := $(BUILD)/man/maf-host.1 $(BUILD)/completions/maf-host.bash \
	$(BUILD)/man/libmafhost.3

.PHONY: host-docs clean-host-docs

all: host-docs
host-docs: $(HOST_DOCS)

$(HOSTDOC_GEN): host/cli/gen/docgen.c \
	$(patsubst %.c,$(BUILD)/host-obj/%.o,$(filter-out host/cli/main.c,$(HOSTCLI_SRC))) \
	$(BUILD)/libmafhost-internal.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -Ihost/cli -o $@ $^ $(HOST_LDFLAGS) $(MAFH_LIBS)

$(BUILD)/man/maf-host.1: $(HOSTDOC_GEN)
	@mkdir -p $(dir $@)
	$(HOSTDOC_GEN) man > $@.tmp
	mv $@.tmp $@

$(BUILD)/completions/maf-host.bash: $(HOSTDOC_GEN)
	@mkdir -p $(dir $@)
	$(HOSTDOC_GEN) bash > $@.tmp
	mv $@.tmp $@

$(BUILD)/man/libmafhost.3: host/include/mafhost.h $(MAFH_PARTS) host/gen/man3.py
	@mkdir -p $(dir $@)
	$(PYTHON) host/gen/man3.py --libs '$(MAFH_LIBS)' host/include/mafhost.h > $@.tmp
	mv $@.tmp $@

clean: clean-host-docs
clean-host-docs:
	rm -f $(HOST_DOCS) $(HOSTDOC_GEN)
