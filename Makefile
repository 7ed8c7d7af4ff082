# gpulse: the two commands a new machine needs are `make demo` and `make test`.
JOBS ?= $(shell nproc)
BUILD := build
GPULSE := $(BUILD)/bin/gpulse

.PHONY: deps deps-build configure build demo test bench fuzz clean format deb image

deps:
	bash scripts/install-deps.sh

deps-build:
	bash scripts/install-deps.sh --build-only

# Everything: gpulse, the simulator, the tests and the benchmarks. A tree `make demo` configured
# without the tests and benchmarks is configured again with them.
configure: deps
	cmake --preset default -DGPULSE_BUILD_TESTS=ON -DGPULSE_BUILD_BENCH=ON

build: deps
	@if [ ! -f $(BUILD)/build.ninja ] || grep -q '^GPULSE_BUILD_\(TESTS\|BENCH\):BOOL=OFF' $(BUILD)/CMakeCache.txt; then \
	  cmake --preset default -DGPULSE_BUILD_TESTS=ON -DGPULSE_BUILD_BENCH=ON; fi
	cmake --build --preset default -j $(JOBS)

# The first run: only the packages building needs, only gpulse and the simulator built (a fresh tree
# is configured without the tests and benchmarks; one configured with them keeps them).
demo: deps-build
	@[ -f $(BUILD)/build.ninja ] || cmake --preset default -DGPULSE_BUILD_TESTS=OFF -DGPULSE_BUILD_BENCH=OFF
	cmake --build --preset default -j $(JOBS) --target gpulse gpulse_nvml_sim
	bash scripts/demo.sh $(GPULSE)

# The package and the image are built first: tests/package checks them. When a test fails, the
# failed ones run once more, alone, with their output last (where a CI log's tail shows it); the
# run fails either way.
test: build
	$(MAKE) --no-print-directory image
	@ctest --preset default -j $(JOBS) || { \
	  echo "== the failed tests once more, alone, with their output"; \
	  ctest --preset default --rerun-failed --output-on-failure 2>&1 | tail -n 300; exit 1; }

# The Debian package, build/gpulse_VERSION_ARCH.deb, from the install tree (cmake/package.cmake).
deb: deps-build
	@[ -f $(BUILD)/build.ninja ] || cmake --preset default -DGPULSE_BUILD_TESTS=OFF -DGPULSE_BUILD_BENCH=OFF
	cmake --build --preset default -j $(JOBS) --target gpulse gpulse_nvml_sim gpulse_docs_generated gpulse_changelog
	cd $(BUILD) && cpack --config CPackConfig.cmake
	@echo "wrote $$(ls $(BUILD)/gpulse_*.deb)"

# The container image (deploy/container/Containerfile, built without a container engine):
# build/image/ as an OCI layout, build/gpulse-image.tar the same as one archive.
image: deb
	bash deploy/container/build-image.sh $(BUILD)

bench: build
	bash bench/run.sh --build $(BUILD) $(AREA)

# Every libFuzzer target (tests/fuzz, docs/fuzzing.md) for FUZZ_SECONDS each, in build-fuzz/.
FUZZ_SECONDS ?= 60
fuzz: deps
	bash tests/fuzz/run.sh --build --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i
