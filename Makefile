# Thin wrapper over CMake + Ninja + ctest. Every target installs what it
# needs first (scripts/deps.sh), so each works on a fresh Debian 12 machine.
#
#   make demo           the main job (README's first command)
#   make demo-nbd       a pool on three NBD "machines", one of them lost and back
#   make test           the whole suite, each test once (README's second command):
#                       test-sanitize, then test-integration
#   make test-sanitize  the unit tests (ctest label unit) under AddressSanitizer + UBSan
#   make test-integration  the compat, fuse and crash tests in the Release build
#   make test-release   every test in the Release build (the quick loop between changes)
#   make test-tsan      the concurrency tests under ThreadSanitizer
#   make fuzz           each libFuzzer target for FUZZ_SECONDS (clang)
#   make bench          every bench_* (Release); BENCH_FILTER=regex to narrow
#   make bench-report   fio on uzfs, zfs-fuse and passthrough_ll: docs/bench/report.md (QUICK=1: short)
#   make fixtures       regenerate tests/fixtures from zfs-fuse (needs root)
#   make install        zpool, zfs, uzfsd, zdb, sizecalc and the man pages into PREFIX (/usr/local)

BUILD        ?= build
BUILD_ASAN   ?= build-asan
BUILD_TSAN   ?= build-tsan
BUILD_FUZZ   ?= build-fuzz
FUZZ_SECONDS ?= 20
JOBS         ?= $(shell nproc)
# The integration tests spend much of their time waiting (on daemons,
# zfs-fuse, mounts, sleeps): they run twice as many at once as there are
# CPUs (7 minutes instead of 12 on two CPUs).
TEST_JOBS    ?= $(shell echo $$(( $(JOBS) * 2 )))
CMAKE_FLAGS  ?=
ifneq ($(CI),)
CMAKE_FLAGS += -DUZFS_WERROR=ON
endif
# ccache: hash paths relative to the checkout, so clones share cached objects.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
# The tests' precompiled header: ccache caches what includes it only when
# told to trust the header's timestamps and macros.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: all deps build test test-integration test-release test-sanitize test-tsan fuzz bench bench-report demo demo-nbd fixtures install clean
PREFIX       ?= /usr/local

all: build

deps:
	@bash scripts/deps.sh

$(BUILD)/build.ninja: CMakeLists.txt
	@bash scripts/deps.sh
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	@bash scripts/deps.sh
	cmake --build $(BUILD) -j $(JOBS)

# The whole suite, each test once: the unit tests under the sanitizers,
# which find more there than in an optimized build; the tests that judge
# against zfs-fuse and OpenZFS, mount through FUSE or kill a daemon in a
# loop in the Release build, the product users run (under the sanitizers
# the kill loops spend minutes repeating code paths the unit tests take).
# The labels are named, not `-LE unit`: the unit tests are not built in
# build/ by this target, and ctest lists each as an unlabelled NOT_BUILT.
# ctest starts the slowest tests first, from their times in earlier runs
# (scripts/ctest-costs.sh), so none of a minute or two runs alone at the end.
test: test-sanitize test-integration

test-integration: $(BUILD)/build.ninja
	@bash scripts/deps.sh
	cmake --build $(BUILD) -j $(JOBS) --target integration_tests
	@bash scripts/ctest-costs.sh seed $(BUILD)
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -L '^(compat|fuse|crash)$$'

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Only the tests it runs (label unit) are built. The Debug flags are given
# so that a build directory configured earlier with others builds what CI
# builds. The engine is built at -O1 (the test files stay at -O0): the
# sanitizers check the same code, and the unit tests ran in 455 s instead
# of about 1250 s at -O0, for the same build time.
test-sanitize:
	@bash scripts/deps.sh
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DUZFS_UNIT_TESTS_ONLY=ON \
	  '-DCMAKE_C_FLAGS_DEBUG=-g1 -O1' '-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1' '-DUZFS_TEST_OPTIMIZE=-O0;-g0' \
	  -DUZFS_SANITIZE=address,undefined -DUZFS_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	@bash scripts/ctest-costs.sh seed $(BUILD_ASAN)
	cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS) -L unit

# The tests that run the data path from many threads, under ThreadSanitizer
# (TSAN_TESTS: the ctest regex; TSAN_OPS: the stress test's operations per
# thread).
TSAN_TESTS ?= ZplRangeLocks|ZplConcurrency|ZplFsTest.ConcurrentThreads|ObjsetWriterTest.SyncRunsWhile|PoolScrub.(Refuses|GoesOn|ADevice|BlocksFreed)|PoolResilver.(TwoReplaces|ASecondDisk|AStaleDevice)|PoolSpare.AVanished
TSAN_OPS   ?= 400
test-tsan:
	@bash scripts/deps.sh
	cmake -S . -B $(BUILD_TSAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DUZFS_SANITIZE=thread -DUZFS_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target zpl_range_lock_test zpl_concurrency_test zpl_fs_test objset_writer_test pool_scan_test \
	  pool_resilver_test pool_spare_test
	cd $(BUILD_TSAN) && UZFS_STRESS_OPS=$(TSAN_OPS) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

# Built at -O1 with line tables only (-g1): a short run finds what it finds
# at nearly the same speed, and the build takes far less time than at -O2
# with full debug information. The targets run JOBS at a time.
fuzz:
	@bash scripts/deps.sh
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  '-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1' '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1' \
	  -DUZFS_FUZZ=ON -DUZFS_SANITIZE=address,undefined -DUZFS_BUILD_TESTS=OFF \
	  -DUZFS_BUILD_BENCHMARKS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_targets
	bash scripts/run-fuzzers.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(JOBS)

bench: build
	bash scripts/run-benchmarks.sh $(BUILD) '$(BENCH_FILTER)'

# The benchmark report (scripts/bench-report.sh; needs root): the fio suite
# on uzfs, zfs-fuse and libfuse's passthrough_ll, then docs/bench/report.md
# with throughput.png and sync-write-latency.png. Builds only the binaries
# it runs. QUICK=1 (the same as BENCH_REPORT_FLAGS=--quick) is the short CI
# run, its report in a new directory under /var/tmp; BENCH_REPORT_FLAGS
# passes the script's other flags (--out DIR, --rows LIST, --layout, --keep).
BENCH_REPORT_FLAGS ?=
ifeq ($(QUICK),1)
BENCH_REPORT_FLAGS += --quick
endif
bench-report: $(BUILD)/build.ninja
	@bash scripts/deps.sh
	cmake --build $(BUILD) -j $(JOBS) --target uzfsd zpool zfs mount.fuse.uzfs
	bash scripts/bench-report.sh $(BENCH_REPORT_FLAGS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The demo installs and builds only what it runs, its output in a log.
demo:
	@BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" bash scripts/demo.sh --prepare $(BUILD)

# A raidz2 pool over six NBD exports on three "machines" (network
# namespaces, scripts/nbd-host.sh), one of them lost during writes and
# resilvered when it returns (scripts/demo-nbd.sh; needs root).
demo-nbd:
	@BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" bash scripts/demo-nbd.sh --prepare $(BUILD)

fixtures: deps
	for f in tests/fixtures/*/make-*.sh; do scripts/zfs-fuse-sandbox.sh "$$f" || exit 1; done

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)
