# DePFS top-level build. One Makefile; every folder's *.c is picked up by
# wildcard, so adding a source file needs no edit here.
#
#   make            build everything into $(BUILD) (default build/)
#   make deps       install Debian packages (idempotent)
#   make test       unit + component + integration tests
#   make unit       pure unit tests (tests/unit)
#   make component  tests of libdepfs and the daemons together (tests/component)
#   make asan       the same tests under AddressSanitizer + UBSan (build-asan/)
#   make bench      benchmarks, printing a table (written to $(BUILD)/bench/results.md;
#                   DEPFS_BENCH_PUBLISH=1 also into docs/BENCH-RESULTS.md)
#   make fuzz       every libFuzzer target (fuzz/) for FUZZ_SECONDS each (default 300),
#                   built with clang + ASan + UBSan into $(BUILD)-fuzz; `make test` runs
#                   them FUZZ_TEST_SECONDS each (default 20) on the committed corpus
#   make soak       the randomized fault campaign, as long as asked:
#                   make soak ROUNDS=N SEED=S [ROUND_SECONDS=T] [MAX_MINUTES=M]
#   make install PREFIX=/usr/local
#
# Parallel developers may use a private build dir: make BUILD=build-foo

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
SAN     ?=
OPT     ?= -O2
# HOOKS=1: the TEST ONLY switches of libdepfs (DEPFS_TEST_NO_LOCKS,
# DEPFS_TEST_PAUSE) and the named fault points (common/fault.h) are compiled
# in. Only `make hooks` sets it, into $(BUILD)/hooks: the binaries users run
# never carry them.
HOOKS   ?=

PKGS      := libisal libprotobuf-c fuse3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libisal libprotobuf-c 2>/dev/null)
FUSE_LIBS  := $(shell pkg-config --libs fuse3 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(OPT) -g -fPIC -pthread \
           -fno-strict-aliasing $(SAN) -I. -I$(BUILD)/proto -Icommon -Iclient/lib $(PKG_CFLAGS)
ifeq ($(HOOKS),1)
CFLAGS  += -DDEPFS_TEST_HOOKS
endif
LDFLAGS ?=
LDFLAGS += -pthread $(SAN)
BASE_LIBS := $(PKG_LIBS) -lleveldb -lsodium -lmunge -lpthread -lm
RDMA_LIBS := -libverbs -lrdmacm

PROTO_SRC := $(wildcard proto/*.proto)
PROTO_C   := $(patsubst proto/%.proto,$(BUILD)/proto/%.pb-c.c,$(PROTO_SRC))
PROTO_H   := $(PROTO_C:.c=.h)
PROTO_O   := $(PROTO_C:.c=.o)

# folder -> objects (main.c is kept out of the folder archive so tests can
# link the folder's internals)
objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out $(1)/main.c,$(wildcard $(1)/*.c)))
COMMON_O   := $(call objs,common) $(PROTO_O)
LIBDEPFS_O := $(call objs,client/lib)
MDS_O      := $(call objs,mds)
IOS_O      := $(call objs,ioserver)
REC_O      := $(call objs,recovery)
FUSE_O     := $(call objs,client/fuse)
CLI_O      := $(call objs,client/cli)

LIBCOMMON := $(BUILD)/lib/libdepfscommon.a
LIBDEPFS_A := $(BUILD)/lib/libdepfs.a
LIBDEPFS_SO := $(BUILD)/lib/libdepfs.so
LIBMDS := $(BUILD)/lib/libmds.a
LIBIOS := $(BUILD)/lib/libioserver.a
LIBREC := $(BUILD)/lib/librecovery.a

BINS := $(BUILD)/bin/depfs-mds $(BUILD)/bin/depfs-ioserver $(BUILD)/bin/depfs-recovery \
        $(BUILD)/bin/depfs-fuse $(BUILD)/bin/depfs
# tests/unit: one module at a time; tests/component: real daemons or
# several programs' code together; tests/lib: their shared helpers
TESTLIB_O  := $(call objs,tests/lib)
LIBTESTS   := $(BUILD)/lib/libdepfstests.a
UNIT_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
COMPONENT_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/component/test_*.c))
# tests/tools: C programs the integration tests run (extreme_walk)
TOOL_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/tools/*.c))
TEST_BINS  := $(UNIT_BINS) $(COMPONENT_BINS) $(TOOL_BINS)
# fuzz/: libFuzzer targets (fuzz_*.c, built only by `make fuzz-build`, with
# clang) and the seed corpus generator (built with everything)
FUZZ_BINS  := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/fuzz_*.c))
SEED_GEN   := $(BUILD)/fuzz/gen_seeds
FUZZ_BUILD ?= $(BUILD)-fuzz
FUZZ_CC    ?= clang
FUZZ_SAN   := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 300
FUZZ_TEST_SECONDS ?= 20
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps test unit component integration asan bench soak install clean mpich hooks \
        fuzz fuzz-build fuzz-targets fuzz-seeds
# keep objects and generated sources that pattern chains would delete
.SECONDARY:
all: $(BINS) $(LIBDEPFS_SO) $(TEST_BINS) $(BENCH_BINS) $(BUILD)/lib/depfs.pc $(SEED_GEN)

deps:
	@deploy/install-deps

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c
	$(CC) $(CFLAGS) -Wno-unused-parameter -c $< -o $@

# every object may include the generated headers
$(BUILD)/obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBCOMMON): $(COMMON_O)
$(LIBDEPFS_A): $(LIBDEPFS_O) $(COMMON_O)
$(LIBMDS): $(MDS_O)
$(LIBIOS): $(IOS_O)
$(LIBREC): $(REC_O)
$(LIBTESTS): $(TESTLIB_O)

$(LIBDEPFS_SO): $(LIBDEPFS_O) $(COMMON_O) client/lib/libdepfs.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libdepfs.so.0 -Wl,--version-script=client/lib/libdepfs.map -o $@ $(filter %.o,$^) $(BASE_LIBS) $(RDMA_LIBS)

$(BUILD)/bin/depfs-mds: $(BUILD)/obj/mds/main.o $(LIBMDS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BASE_LIBS) $(RDMA_LIBS)
$(BUILD)/bin/depfs-ioserver: $(BUILD)/obj/ioserver/main.o $(LIBIOS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BASE_LIBS) $(RDMA_LIBS)
$(BUILD)/bin/depfs-recovery: $(BUILD)/obj/recovery/main.o $(LIBREC) $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BASE_LIBS) $(RDMA_LIBS)
$(BUILD)/bin/depfs-fuse: $(FUSE_O) $(BUILD)/obj/client/fuse/main.o $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(FUSE_LIBS) $(BASE_LIBS) $(RDMA_LIBS)
$(BUILD)/bin/depfs: $(CLI_O) $(BUILD)/obj/client/cli/main.o $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(BASE_LIBS) $(RDMA_LIBS)

# Unit and component tests (tests/unit/test_x -> $(BUILD)/tests/unit/test_x)
# link the test helpers and every folder archive; the linker takes what each
# needs.
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(LIBTESTS) $(LIBMDS) $(LIBIOS) $(LIBREC) $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(BASE_LIBS) $(RDMA_LIBS)

# a fuzz target: the daemons' libraries under libFuzzer's main
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/fuzz_%.o $(LIBMDS) $(LIBIOS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(BASE_LIBS) $(RDMA_LIBS)

$(SEED_GEN): $(BUILD)/obj/fuzz/gen_seeds.o $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BASE_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUSE_LIBS) $(BASE_LIBS) $(RDMA_LIBS)

$(BUILD)/lib/depfs.pc: Makefile
	@mkdir -p $(dir $@)
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: depfs\nDescription: DePFS erasure-coded parallel file system client\nVersion: 0.1.0\nLibs: -L$${libdir} -ldepfs\nLibs.private: $(BASE_LIBS) $(RDMA_LIBS)\nCflags: -I$${includedir}\n' '$(PREFIX)' > $@

unit: $(UNIT_BINS)
	@BUILD=$(BUILD) tests/run-unit unit

# the daemons they start come from $(BUILD)/bin
component: $(COMPONENT_BINS) $(BINS)
	@BUILD=$(BUILD) tests/run-unit component

integration: all mpich
	@BUILD=$(BUILD) tests/integration/run-all

# tests/run-all builds the MPICH driver (cached) beside the unit and
# component tests
test: all hooks fuzz-build
	@BUILD=$(BUILD) FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) tests/run-all

# The fuzz targets, built into $(FUZZ_BUILD) by clang with the sanitizers
# (every object of the libraries they link is instrumented for coverage).
fuzz-build:
	@if command -v $(FUZZ_CC) >/dev/null; then \
	    $(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT=-O1 SAN="$(FUZZ_SAN)" \
	        fuzz-targets; \
	else echo "fuzz: no $(FUZZ_CC) (make deps installs it): fuzz targets not built"; fi
fuzz-targets: $(FUZZ_BINS)

# Each target for FUZZ_SECONDS on the committed corpus (fuzz/run-fuzz);
# crashes land in $(FUZZ_BUILD)/fuzz-artifacts.
fuzz: fuzz-build
	@fuzz/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Rewrites the seeds of fuzz/corpus from valid requests (after a protocol change).
fuzz-seeds: $(SEED_GEN)
	$(SEED_GEN) fuzz/corpus

# The test-only build (HOOKS=1 above) of the daemons, the tools and
# libdepfs.so, in $(BUILD)/hooks; tests that need a switch or a fault point
# run it (tests/integration/lib.sh use_test_build).
hooks:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/hooks HOOKS=1 $(BUILD)/hooks/lib/libdepfs.so \
	    $(patsubst $(BUILD)/%,$(BUILD)/hooks/%,$(BINS))

# MPICH 4.0.2 with the DePFS ROMIO driver, built once into /var/cache/depfs-mpich
# and reused until the driver changes; exit 77 (no MPICH source here) is not an
# error: test_mpiio then skips.
mpich: $(LIBDEPFS_SO)
	@client/adio/build-mpich.sh $(BUILD); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

bench: all hooks
	@BUILD=$(BUILD) tests/bench/run-bench

# The fault campaign of tests/integration/campaign.py (test_fault_campaign is
# its short form in `make test`): ROUNDS rounds, each a fresh cluster under a
# seeded schedule of faults (with an MPI-IO client when $(BUILD)/mpich holds
# MPICH with the driver: client/adio/build-mpich.sh); prints rounds, faults
# of each kind and bytes verified; fails on any lost acknowledged byte or
# failed check. SEED replays.
ROUNDS ?= 20
ROUND_SECONDS ?= 60
MAX_MINUTES ?= 0
soak: all
	@DEPFS_BIN_DIR=$(abspath $(BUILD))/bin tests/integration/campaign.py --rounds $(ROUNDS) \
	  --round-seconds $(ROUND_SECONDS) --max-minutes $(MAX_MINUTES) $(if $(SEED),--seed $(SEED))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/sbin
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 client/fuse/mount.depfs $(DESTDIR)$(PREFIX)/sbin/mount.depfs
	install -m 644 $(LIBDEPFS_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBDEPFS_SO) $(DESTDIR)$(PREFIX)/lib/libdepfs.so.0
	ln -sf libdepfs.so.0 $(DESTDIR)$(PREFIX)/lib/libdepfs.so
	install -m 644 client/lib/depfs.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/lib/depfs.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

clean:
	rm -rf $(BUILD) build-asan $(FUZZ_BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
