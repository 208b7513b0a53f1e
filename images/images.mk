# The container images (README, "Images"): make images builds maf-launch/launcher,
# maf-launch/python-noshell and maf-launch/scratch-c with the Docker engine. Each build
# context is assembled under build/images/NAME from the build and this machine's Debian
# files; nothing of it is committed. Included by the Makefile.
DOCKER ?= docker
IMAGE_PREFIX ?= maf-launch
IMAGES_DIR := $(BUILD)/images
DOCKER_BUILD = $(DOCKER) build -q --build-arg LAUNCHER=$(IMAGE_PREFIX)/launcher

.PHONY: images images-engine images-test

images-engine:
	@$(DOCKER) info >/dev/null 2>&1 || { echo "make images: the Docker engine is not" \
		"reachable ('$(DOCKER) info' failed; make setup starts dockerd)" >&2; exit 1; }

images: all images-engine $(IMAGES_DIR)/hostcall-demo
	@if readelf -l $(BUILD)/maf-launch | grep -q INTERP; then echo "make images:" \
		"$(BUILD)/maf-launch is linked against a shared C library; images need the" \
		"static build (make, not make asan)" >&2; exit 1; fi
	rm -rf $(IMAGES_DIR)/launcher $(IMAGES_DIR)/python-noshell $(IMAGES_DIR)/scratch-c
	mkdir -p $(IMAGES_DIR)/launcher $(IMAGES_DIR)/python-noshell $(IMAGES_DIR)/scratch-c/dirs/runs \
		$(IMAGES_DIR)/scratch-c/dirs/tmp
	cp images/launcher/Dockerfile $(BUILD)/maf-launch $(IMAGES_DIR)/launcher/
	mkdir -p $(IMAGES_DIR)/launcher/links/usr/local/bin
	ln -s maf-launch $(IMAGES_DIR)/launcher/links/usr/local/bin/sleep
	tar -C $(IMAGES_DIR)/launcher/links --owner=0 --group=0 --numeric-owner --mtime=@0 \
		--sort=name -cf $(IMAGES_DIR)/launcher/links.tar usr/local/bin/sleep
	$(DOCKER) build -q -t $(IMAGE_PREFIX)/launcher $(IMAGES_DIR)/launcher
	cp images/python-noshell/Dockerfile $(IMAGES_DIR)/python-noshell/
	$(PYTHON) images/python-noshell/assemble.py $(IMAGES_DIR)/python-noshell/rootfs.tar
	$(DOCKER_BUILD) -t $(IMAGE_PREFIX)/python-noshell $(IMAGES_DIR)/python-noshell
	cp images/scratch-c/Dockerfile $(IMAGES_DIR)/hostcall-demo $(IMAGES_DIR)/scratch-c/
	chmod 1777 $(IMAGES_DIR)/scratch-c/dirs/tmp
	chmod 0755 $(IMAGES_DIR)/scratch-c/dirs/runs
	tar -C $(IMAGES_DIR)/scratch-c/dirs --owner=0 --group=0 --numeric-owner --mtime=@0 \
		--sort=name -cf $(IMAGES_DIR)/scratch-c/dirs.tar runs tmp
	$(DOCKER_BUILD) -t $(IMAGE_PREFIX)/scratch-c $(IMAGES_DIR)/scratch-c
	@$(DOCKER) image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' $(IMAGE_PREFIX)/launcher
	@$(DOCKER) image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' $(IMAGE_PREFIX)/python-noshell
	@$(DOCKER) image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' $(IMAGE_PREFIX)/scratch-c

$(IMAGES_DIR)/hostcall-demo: images/scratch-c/hostcall-demo.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -D_GNU_SOURCE $(WARN) -Os -static -s -o $@ $<

# The image tests (tests/images), against the images just built, each container with
# --network none. Without a reachable engine they are skipped, unless REQUIRE_DOCKER=1
# (.ci/run sets it): then the missing engine fails them.
images-test: all $(PROBE_BIN)
	@if [ "$(REQUIRE_DOCKER)" = 1 ] || $(DOCKER) info >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory images; fi
	MAF_BUILD=$(abspath $(BUILD)) MAF_IMAGE_PREFIX=$(IMAGE_PREFIX) $(PYTHON) -m pytest -q \
		-p no:cacheprovider tests/images
