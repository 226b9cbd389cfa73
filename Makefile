# gelu-fusion: `make run` (the report) and `make test` (every test).
# Each target installs what is missing (scripts/install-deps.sh), then builds.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build run test test-unit bench clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/gelu-fusion report $(ARGS)

test: test-unit

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: build
	$(BUILD)/bench/gelu_bench $(ARGS)

clean:
	rm -rf $(BUILD)
