# infertop: every entry point of the project.
#
#   make            build bin/inferd and bin/infertop
#   make run        install missing Debian packages, build, start the demo
#   make test       install missing Debian packages, build, run every test
#   make bench      performance bars of the spec; table + build/bench/*.json
#   make asan       the tests again under ASan + UBSan
#   make fuzz       libFuzzer targets (clang), short runs over the corpora
#   make install    PREFIX=/usr/local DESTDIR= honoured; make uninstall
#
# Objects go under $(B) so that the sanitizer build (B=build/asan) never
# mixes with the normal one.

PREFIX  ?= /usr/local
DESTDIR ?=
B       ?= build
CC      ?= cc
# -march=native: the engine's hot loops (fp16/int4 dequant, dot products)
# are written for the compiler to vectorize; set ARCH= for a portable build.
ARCH    ?= -march=native
OPT     ?= -O2
SAN     ?=

PKGS_ENGINE := openblas libzmq jansson libcrypto
PKGS_STORE  := sqlite3 jansson
PKGS_TUI    := ncursesw libssh inih libzmq jansson sqlite3
PKGS_TEST   := criterion

pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null)

CPPFLAGS += -D_GNU_SOURCE -Iengine -Istore -Itui
CFLAGS   += -std=c11 $(OPT) $(ARCH) -g -Wall -Wextra -Werror -pthread $(SAN)
LDFLAGS  += -pthread $(SAN)
LDLIBS   += -lm

ENGINE_CFLAGS := $(call pc_cflags,$(PKGS_ENGINE))
ENGINE_LIBS   := $(call pc_libs,$(PKGS_ENGINE))
STORE_LIBS    := $(call pc_libs,$(PKGS_STORE))
TUI_CFLAGS    := $(call pc_cflags,$(PKGS_TUI))
TUI_LIBS      := $(call pc_libs,$(PKGS_TUI))
TEST_CFLAGS   := $(call pc_cflags,$(PKGS_TEST))
TEST_LIBS     := $(call pc_libs,$(PKGS_TEST))

# A directory's library is every .c in it but the file holding main().
ENGINE_SRC := $(filter-out engine/inferd.c,$(wildcard engine/*.c))
STORE_SRC  := $(wildcard store/*.c)
TUI_SRC    := $(filter-out tui/infertop.c,$(wildcard tui/*.c))

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(B)/%.o) $(B)/engine/embedded.o
STORE_OBJ  := $(STORE_SRC:%.c=$(B)/%.o)
TUI_OBJ    := $(TUI_SRC:%.c=$(B)/%.o)

BINS := $(B)/bin/inferd
ifneq ($(wildcard tui/infertop.c),)
BINS += $(B)/bin/infertop
endif

# Unit tests: one Criterion binary per tested directory.
UNIT_DIRS  := $(notdir $(wildcard tests/engine tests/store tests/tui))
UNIT_BINS  := $(UNIT_DIRS:%=$(B)/tests/unit_%)
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)
BENCH_BINS := $(BENCH_SRC:tests/bench/%.c=$(B)/tests/%)
HELPER_SRC := $(wildcard tests/lib/*.c)
HELPER_BINS := $(HELPER_SRC:tests/lib/%.c=$(B)/tests/%)

.SECONDEXPANSION:

.PHONY: all run test test-only bench asan fuzz install uninstall clean deps

all: $(BINS) bin

# bin/ holds symlinks into $(B) so that `./bin/inferd` works from the tree.
bin: $(BINS)
	@mkdir -p bin
	@for f in $(BINS); do ln -sf ../$$f bin/$$(basename $$f); done

deps:
	@contrib/install-deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	@if [ -x bin/infertop ]; then exec bin/infertop demo; \
	 else exec bin/inferd generate --prompt "Once upon a time" --steps 200; fi

test: deps
	@$(MAKE) --no-print-directory test-only

test-only: $(BINS) $(UNIT_BINS) $(HELPER_BINS)
	@B=$(B) tests/run.sh

bench: deps
	@$(MAKE) --no-print-directory $(BINS) $(BENCH_BINS) $(HELPER_BINS)
	@B=$(B) tests/bench/run.sh

asan: deps
	@$(MAKE) --no-print-directory B=build/asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test-only

# libFuzzer: each target is built with clang and the sanitizers and runs for
# FUZZ_TIME seconds over its seed corpus; inputs it finds go to
# $(B)/fuzz/corpus/<name>, the seeds in tests/fuzz/corpus/<name> stay as they are.
FUZZ_TIME  ?= 60
FUZZ_FLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -Iengine -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all

fuzz: $(B)/fuzz/fuzz_request $(B)/fuzz/fuzz_telemetry
	@mkdir -p $(B)/fuzz/corpus/request $(B)/fuzz/corpus/telemetry
	$(B)/fuzz/fuzz_request -max_total_time=$(FUZZ_TIME) -max_len=70000 -dict=tests/fuzz/request.dict \
	  $(B)/fuzz/corpus/request tests/fuzz/corpus/request
	$(B)/fuzz/fuzz_telemetry -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	  $(B)/fuzz/corpus/telemetry tests/fuzz/corpus/telemetry

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c engine/protocol.c engine/proto_reply.c engine/proto_tel.c \
                  engine/proto_step_scan.c engine/jsonr.c engine/jsonw.c $(wildcard engine/*.h)
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) -o $@ $(filter %.c,$^) $(call pc_libs,jansson libzmq)

$(B)/engine/embedded.o: engine/embedded.S engine/models/stories260K.bin engine/models/tok512.bin
	@mkdir -p $(@D)
	$(CC) -c -Iengine/models -o $@ $<

$(B)/engine/%.o: engine/%.c $(wildcard engine/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/store/%.o: store/%.c $(wildcard store/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/tui/%.o: tui/%.c $(wildcard tui/*.h engine/*.h store/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/libinferd.a: $(ENGINE_OBJ)
	$(AR) rcs $@ $^

$(B)/libstore.a: $(STORE_OBJ)
	$(AR) rcs $@ $^

$(B)/libtui.a: $(TUI_OBJ)
	$(AR) rcs $@ $^

$(B)/bin/inferd: engine/inferd.c $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(ENGINE_LIBS) $(LDLIBS)

$(B)/bin/infertop: tui/infertop.c $(B)/libtui.a $(B)/libstore.a $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(TUI_LIBS) $(STORE_LIBS) $(ENGINE_LIBS) $(LDLIBS)

ALL_LIBS = $(wildcard $(B)/libtui.a) $(B)/libstore.a $(B)/libinferd.a
LINK_ALL = $(LDFLAGS) $(TUI_LIBS) $(STORE_LIBS) $(ENGINE_LIBS) $(TEST_LIBS) $(LDLIBS)

$(B)/tests/unit_%: $$(wildcard tests/%/*.c tests/%/*.h) $(if $(TUI_SRC),$(B)/libtui.a) $(B)/libstore.a $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/$* $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(TEST_CFLAGS) $(CFLAGS) \
	  -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LINK_ALL)

$(B)/tests/bench_%: tests/bench/bench_%.c tests/bench/benchlib.c tests/bench/benchlib.h $(if $(TUI_SRC),$(B)/libtui.a) $(B)/libstore.a $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/bench $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LINK_ALL)

$(B)/tests/%: tests/lib/%.c $(if $(TUI_SRC),$(B)/libtui.a) $(B)/libstore.a $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LINK_ALL)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/inferd $(DESTDIR)$(PREFIX)/bin/infertop

clean:
	rm -rf build bin
