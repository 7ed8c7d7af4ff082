# gpulse: the two commands a new machine needs are `make demo` and `make test`.
JOBS ?= $(shell nproc)
BUILD := build
GPULSE := $(BUILD)/bin/gpulse

.PHONY: deps configure build demo test bench fuzz clean format

deps:
	bash scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake --preset default

configure: deps
	cmake --preset default

build: deps $(BUILD)/build.ninja
	cmake --build --preset default -j $(JOBS)

demo: build
	bash scripts/demo.sh $(GPULSE)

test: build
	ctest --preset default -j $(JOBS)

bench: build
	bash bench/run.sh $(BUILD)

# Every libFuzzer target (tests/fuzz, docs/fuzzing.md) for FUZZ_SECONDS each, in build-fuzz/.
FUZZ_SECONDS ?= 60
fuzz: deps
	bash tests/fuzz/run.sh --build --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i
