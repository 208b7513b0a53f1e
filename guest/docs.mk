# The man page and the bash completion of maf-launch, included by the Makefile. Both are made
# from the launcher's option tables (guest/commands.c), the ones its parser and --help read,
# by guest/gen/docgen.c, built with the host's compiler; their prose stays out of the
# launcher, which is baked into every image. make install installs the two files.
#   make guest-docs    $(BUILD)/man/maf-launch.1 and $(BUILD)/completions/maf-launch.bash
#   man -l $(BUILD)/man/maf-launch.1
.PHONY: guest-docs guest-docs-clean

all: guest-docs

DOCGEN_SRC := guest/gen/docgen.c guest/commands.c

$(BUILD)/gen/maf-launch-docgen: $(DOCGEN_SRC) guest/opt.h guest/commands.h guest/contain.h guest/channel.h \
	shared/protocol.h $(BUILD)/gen/version.h $(TP_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(COMMON) $(WARN) -O2 -Iguest -DMAFL_DOCGEN -o $@ $(DOCGEN_SRC)

$(BUILD)/man/maf-launch.1: $(BUILD)/gen/maf-launch-docgen
	@mkdir -p $(dir $@)
	$< man > $@.tmp
	mv $@.tmp $@

$(BUILD)/completions/maf-launch.bash: $(BUILD)/gen/maf-launch-docgen
	@mkdir -p $(dir $@)
	$< bash > $@.tmp
	mv $@.tmp $@

guest-docs: $(BUILD)/man/maf-launch.1 $(BUILD)/completions/maf-launch.bash

# The integration tests check the two against the launcher's --help and parser.
integration: guest-docs

clean: guest-docs-clean
guest-docs-clean:
	rm -f $(BUILD)/man/maf-launch.1 $(BUILD)/completions/maf-launch.bash
