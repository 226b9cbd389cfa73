# gelu-fusion: `make run` (the report) and `make test` (every test).
# Each target installs what is missing (scripts/install-deps.sh), then builds
# (`make run` in build-run/, for this CPU only; the others in build/).
# `make check`: the quick tier for the edit loop (no long sweeps, no
# sanitizers). `make format` / `make format-check`: clang-format.
BUILD ?= build
# One compile per core and per 2 GiB of available memory (scripts/jobs.sh).
JOBS ?= $(shell bash scripts/jobs.sh)
CMAKE_FLAGS ?=
# In CI (CI=true in the environment) compiler warnings are errors, and every
# compile's peak memory and time are logged (scripts/compile-meter.sh) for
# scripts/check-build-bounds.sh, which `make test` runs last.
GELU_WERROR ?= $(if $(filter true,$(CI)),ON,OFF)
GELU_MEASURE_COMPILES ?= $(if $(filter true,$(CI)),ON,OFF)
export GELU_WERROR GELU_MEASURE_COMPILES

.PHONY: all deps configure build run test test-unit check bench clean format format-check gpu-check

all: build

# The project's Python (PyTorch 2.11 and the test tools from PyPI), made by
# install-deps (scripts/python-env.sh); the build, pytest and the report use it.
VENV ?= $(CURDIR)/.venv
export VENV

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DGELU_WERROR=$(GELU_WERROR) -DGELU_MEASURE_COMPILES=$(GELU_MEASURE_COMPILES) \
	  -DGELU_PYTHON=$(VENV)/bin/python $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `make run`: the report and only what it runs (gelu_report_deps: the
# gelu-fusion command and the PyTorch adapter), with the CPU kernels for this
# CPU's best SIMD target plus the scalar fallback (GELU_SIMD_TARGETS=native),
# no tests and no CUDA, in a build directory of its own, so that `make test`
# and `make build` in $(BUILD) keep every target. ARGS=--full: the complete
# report.
RUN_BUILD ?= build-run
run: deps
	@cmake -S . -B $(RUN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DGELU_SIMD_TARGETS=native -DGELU_WITH_TESTS=OFF -DGELU_WITH_CUDA=OFF \
	  -DGELU_WERROR=$(GELU_WERROR) -DGELU_PYTHON=$(VENV)/bin/python $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(RUN_BUILD) -j $(JOBS) --target gelu_report_deps
	$(RUN_BUILD)/gelu-fusion report $(ARGS)

test: test-unit test-packaging test-asan test-tsan test-fuzz test-gpu
	@bash scripts/check-build-bounds.sh $(BUILD) build-asan build-tsan build-fuzz

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Unit tests and pytest without the tests labelled slow (tests/CMakeLists.txt).
check: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE slow

# Installing and using the library as docs/install.md shows: cmake --install, a
# consumer project via find_package, pkg-config and add_subdirectory, and
# pip install with pytest against the installed package.
.PHONY: test-packaging
test-packaging: build
	BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/test-packaging.sh

# Sanitizers, each in its own build directory that later runs reuse
# (scripts/sanitize.sh, cmake/sanitizers.cmake): unit tests under ASan+UBSan,
# threaded tests under TSan, and the API fuzzer for a bounded minute in
# `make test` or FUZZ_SECONDS in `make fuzz`.
.PHONY: test-asan test-tsan test-fuzz fuzz
FUZZ_SECONDS ?= 600
test-asan: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh asan
test-tsan: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh tsan
test-fuzz: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh fuzz 60
fuzz: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh fuzz $(FUZZ_SECONDS)

# The CUDA backend's check (docs/cuda.md). `make gpu-bundle` here: what the
# GPU machine runs, from the main build's CUDA targets, into gpu-bundle/
# (scripts/gpu-bundle.sh). On the GPU machine (no apt, pip or network, and
# nothing compiled): `make gpu-check STAGES="smoke accuracy"` or
# scripts/gpu-check.sh STAGE.... `make test` (test-gpu) makes the bundle,
# dry-runs every stage here, and checks that broken bundles fail.
.PHONY: gpu-bundle test-gpu
GPU_BUNDLE ?= gpu-bundle
STAGES ?= all
gpu-bundle: build
	bash scripts/gpu-bundle.sh $(BUILD) $(GPU_BUNDLE)
gpu-check:
	GPU_CHECK_BUNDLE=$(GPU_BUNDLE) bash scripts/gpu-check.sh $(STAGES)
test-gpu: gpu-bundle
	GPU_CHECK_BUNDLE=$(GPU_BUNDLE) GELU_PYTHON=$(VENV)/bin/python \
	  OUT=$(BUILD)/gpu-check-dry-run bash scripts/gpu-check.sh --dry-run all
	GELU_PYTHON=$(VENV)/bin/python bash scripts/test-gpu-check.sh $(GPU_BUNDLE)

bench: build
	$(BUILD)/bench/gelu_bench $(ARGS)

format: deps
	@bash scripts/format.sh
format-check: deps
	@bash scripts/format.sh --check

clean:
	rm -rf $(BUILD) $(RUN_BUILD)
