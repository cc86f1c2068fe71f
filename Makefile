# DePFS top-level build. One Makefile; every folder's *.c is picked up by
# wildcard, so adding a source file needs no edit here.
#
#   make            build everything into $(BUILD) (default build/)
#   make deps       install Debian packages (idempotent)
#   make test       unit + integration tests
#   make asan       the same tests under AddressSanitizer + UBSan (build-asan/)
#   make bench      benchmarks, printing a table
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

PKGS      := libisal libprotobuf-c fuse3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs libisal libprotobuf-c 2>/dev/null)
FUSE_LIBS  := $(shell pkg-config --libs fuse3 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(OPT) -g -fPIC -pthread \
           -fno-strict-aliasing $(SAN) -I. -I$(BUILD)/proto -Icommon -Iclient/lib $(PKG_CFLAGS)
LDFLAGS ?=
LDFLAGS += -pthread $(SAN)
BASE_LIBS := $(PKG_LIBS) -lleveldb -lpthread -lm
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
TEST_SRC  := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps test unit integration asan bench soak install clean mpich
# keep objects and generated sources that pattern chains would delete
.SECONDARY:
all: $(BINS) $(LIBDEPFS_SO) $(TEST_BINS) $(BENCH_BINS) $(BUILD)/lib/depfs.pc

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

$(LIBDEPFS_SO): $(LIBDEPFS_O) $(COMMON_O)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libdepfs.so.0 -o $@ $^ $(BASE_LIBS) $(RDMA_LIBS)

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

# Unit tests link every folder archive; the linker takes what each needs.
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIBMDS) $(LIBIOS) $(LIBREC) $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(BASE_LIBS) $(RDMA_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIBDEPFS_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUSE_LIBS) $(BASE_LIBS) $(RDMA_LIBS)

$(BUILD)/lib/depfs.pc: Makefile
	@mkdir -p $(dir $@)
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: depfs\nDescription: DePFS erasure-coded parallel file system client\nVersion: 0.1.0\nLibs: -L$${libdir} -ldepfs\nLibs.private: $(BASE_LIBS) $(RDMA_LIBS)\nCflags: -I$${includedir}\n' '$(PREFIX)' > $@

unit: $(TEST_BINS)
	@BUILD=$(BUILD) tests/run-unit

integration: all mpich
	@BUILD=$(BUILD) tests/integration/run-all

# tests/run-all builds the MPICH driver (cached) beside the first tests
test: all
	@BUILD=$(BUILD) tests/run-all

# MPICH 4.0.2 with the DePFS ROMIO driver, built once into /var/cache/depfs-mpich
# and reused until the driver changes; exit 77 (no MPICH source here) is not an
# error: test_mpiio then skips.
mpich: $(LIBDEPFS_SO)
	@client/adio/build-mpich.sh $(BUILD); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

bench: all
	@BUILD=$(BUILD) tests/bench/run-bench

# The fault campaign of tests/integration/campaign.py (test_fault_campaign is
# its short form in `make test`): ROUNDS rounds, each a fresh cluster under a
# seeded schedule of faults; prints rounds, faults of each kind and bytes
# verified; fails on any lost acknowledged byte or failed check. SEED replays.
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
	rm -rf $(BUILD) build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
