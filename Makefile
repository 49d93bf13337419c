# infertop: every entry point of the project.
#
#   make            build bin/inferd and bin/infertop
#   make run        install missing Debian packages, build, start the demo
#   make test       install missing Debian packages, build, run every test
#   make bench      performance bars of the spec; table + build/bench/*.json
#   make asan       the tests again under ASan + UBSan
#   make fuzz       libFuzzer targets (clang), short runs over the corpora
#   make install    PREFIX=/usr/local DESTDIR= honoured; make uninstall
#   make deps-graph the parts and which uses which (tests/layering/rules)
#
# Objects go under $(B) so that the sanitizer build (B=build/asan) never
# mixes with the normal one.

PREFIX  ?= /usr/local
DESTDIR ?=
B       ?= build
CC      ?= cc
# The default build is portable (baseline x86-64) and carries every kernel
# path of engine/compute/cpu.h, each compiled with its own instruction set
# (KERNEL_PATHS below); inferd picks the best the CPU has at start, or the
# one INFERD_CPU names. ARCH=-march=native is the opt-in for a binary that
# runs only where it was built (the rest of the engine vectorized for that
# CPU too; make install then installs that binary).
ARCH    ?=
OPT     ?= -O2
SAN     ?=
# The entry points that build before they do something else (run, test,
# bench, asan) build on every core: CI calls plain `make test`, and a
# serial build of the whole tree is a large part of its 15-minute budget.
# A -j given on the command line wins.
JOBS    ?= $(shell nproc 2>/dev/null || echo 1)
SUBMAKE  = $(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS))

PKGS_ENGINE := openblas libzmq jansson libcrypto libpcre2-8 libmicrohttpd
PKGS_STORE  := sqlite3 jansson
PKGS_TUI    := ncursesw libssh inih libzmq jansson sqlite3 libcurl
PKGS_TEST   := criterion

pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null)

# Includes name their folder from the repository root ("engine/compute/kvcache.h"),
# or are bare within one folder.
CPPFLAGS += -D_GNU_SOURCE -I.
# -Wno-psabi: vec8.h's 32-byte vectors pass between static functions only,
# whose calling convention is GCC's own choice; on a baseline build GCC
# warns that it differs from an AVX build's.
CFLAGS   += -std=c11 $(OPT) $(ARCH) -g -Wall -Wextra -Werror -Wno-psabi -pthread $(SAN)
LDFLAGS  += -pthread $(SAN)
LDLIBS   += -lm

ENGINE_CFLAGS := $(call pc_cflags,$(PKGS_ENGINE))
ENGINE_LIBS   := $(call pc_libs,$(PKGS_ENGINE))
STORE_LIBS    := $(call pc_libs,$(PKGS_STORE))
TUI_CFLAGS    := $(call pc_cflags,$(PKGS_TUI))
TUI_LIBS      := $(call pc_libs,$(PKGS_TUI))
TEST_CFLAGS   := $(call pc_cflags,$(PKGS_TEST))
TEST_LIBS     := $(call pc_libs,$(PKGS_TEST))

# Each program's library is every .c of its parts but the file holding
# main(); the parts are the sub-folders (see each folder's README).
# The kernel files are compiled once per path (see KERNEL_PATHS).
KERNELS    := qblock_f qblock_q qblock_lane qblock_k attention_task
ENGINE_SRC := $(filter-out engine/cmd/inferd.c $(KERNELS:%=engine/compute/%.c),$(wildcard engine/*/*.c))
STORE_SRC  := $(wildcard store/*.c)
TUI_SRC    := $(filter-out tui/cmd/infertop.c,$(wildcard tui/*/*.c))
ENGINE_H   := $(wildcard engine/*/*.h)
TUI_H      := $(wildcard tui/*/*.h)

# Each kernel path of engine/compute/cpu.h: its number (QB_PATH) and the
# instruction set its objects are compiled for, each a superset of the one
# before. Everything else is compiled for $(ARCH) alone.
KERNEL_PATHS     := scalar avx2 avx512 vnni amx
PATH_ID_scalar   := 0
PATH_ID_avx2     := 1
PATH_ID_avx512   := 2
PATH_ID_vnni     := 3
PATH_ID_amx      := 4
PATH_FLAGS_avx2   := -mavx2 -mfma -mf16c
PATH_FLAGS_avx512 := $(PATH_FLAGS_avx2) -mavx512f -mavx512bw -mavx512dq -mavx512vl
PATH_FLAGS_vnni   := $(PATH_FLAGS_avx512) -mavx512vnni
PATH_FLAGS_amx    := $(PATH_FLAGS_vnni) -mavx512vbmi -mgfni -mamx-tile -mamx-int8
KERNEL_OBJ := $(foreach p,$(KERNEL_PATHS),$(KERNELS:%=$(B)/engine/compute/%.$(p).o))

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(B)/%.o) $(B)/engine/model/embedded.o $(KERNEL_OBJ)
STORE_OBJ  := $(STORE_SRC:%.c=$(B)/%.o)
TUI_OBJ    := $(TUI_SRC:%.c=$(B)/%.o)

BINS := $(B)/bin/inferd $(B)/bin/infertop
MANS := $(B)/man/inferd.1 $(B)/man/infertop.1
COMPLETIONS := $(B)/completion/infertop.bash $(B)/completion/_infertop
OPTDOC := $(B)/tools/optdoc

# Unit tests: one Criterion binary per program or store (tests/engine,
# tests/tui, tests/store), its sources in sub-folders that mirror the code.
UNIT_DIRS  := engine store tui
UNIT_BINS  := $(UNIT_DIRS:%=$(B)/tests/unit_%)
# Each test file is an object of its own: one cc over a binary's fifty
# files ran on one core at the end of the build, the longest job of it.
unit_obj    = $(patsubst %.c,$(B)/%.o,$(wildcard tests/$(1)/*.c tests/$(1)/*/*.c))
UNIT_OBJ   := $(foreach d,$(UNIT_DIRS),$(call unit_obj,$(d)))
UNIT_H     := $(wildcard $(UNIT_DIRS:%=tests/%/*.h) $(UNIT_DIRS:%=tests/%/*/*.h))
BENCH_SRC  := $(wildcard tests/bench/bench_*.c)
BENCH_BINS := $(BENCH_SRC:tests/bench/%.c=$(B)/tests/%)
HELPER_SRC := $(wildcard tests/lib/*.c)
HELPER_BINS := $(HELPER_SRC:tests/lib/%.c=$(B)/tests/%)

.SECONDEXPANSION:

.PHONY: all run test test-only bench asan fuzz install uninstall clean deps deps-graph

all: $(BINS) bin $(MANS) $(COMPLETIONS)

# bin/ holds symlinks into $(B) so that `./bin/inferd` works from the tree.
bin: $(BINS)
	@mkdir -p bin
	@for f in $(BINS); do ln -sf ../$$f bin/$$(basename $$f); done

deps:
	@contrib/install-deps.sh

run: deps
	@$(SUBMAKE) all
	@if [ -x bin/infertop ]; then exec bin/infertop demo; \
	 else exec bin/inferd generate --prompt "Once upon a time" --steps 200; fi

test: deps
	@$(SUBMAKE) test-only

test-only: $(BINS) $(MANS) $(COMPLETIONS) $(OPTDOC) $(UNIT_BINS) $(HELPER_BINS)
	@B=$(B) tests/run.sh

bench: deps
	@$(SUBMAKE) $(BINS) $(BENCH_BINS) $(HELPER_BINS)
	@B=$(B) tests/bench/run.sh

asan: deps
	@$(SUBMAKE) B=build/asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test-only

# libFuzzer: each target is built with clang and the sanitizers and runs for
# FUZZ_TIME seconds over its seed corpus; inputs it finds go to
# $(B)/fuzz/corpus/<name>, the seeds in tests/fuzz/corpus/<name> stay as they are.
FUZZ_TIME  ?= 60
FUZZ_FLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=all

FUZZ_TARGETS := request telemetry stage gguf tokenizer promtext
# Per target: the sources it links, its longest input, its dictionary.
FUZZ_SRC_request   := $(wildcard engine/proto/*.c) engine/sys/kvbits.c engine/sys/utf8.c
FUZZ_SRC_telemetry := $(FUZZ_SRC_request)
# The stage-frame decoder lives in the node server, beside the protocol.
FUZZ_SRC_stage     := engine/node/ring.c engine/node/ring_msg.c $(FUZZ_SRC_request)
FUZZ_SRC_gguf      := engine/model/gguf.c engine/model/gguf_llama.c engine/model/wtype.c
FUZZ_SRC_tokenizer := $(addprefix engine/model/,vocab.c pretok.c merge.c tok_spm.c tok_bpe.c \
                        tokenizer.c tok_stream.c gguf.c wtype.c embedded.S) engine/sys/utf8.c
# The console's reader of other engines' /metrics (its header is listed
# for the rebuild; the rule compiles only the .c files).
FUZZ_SRC_promtext  := tui/engine/promtext.c tui/engine/promtext.h
FUZZ_ARGS_request   := -max_len=70000 -dict=tests/fuzz/request.dict
FUZZ_ARGS_telemetry := -max_len=4096
FUZZ_ARGS_stage     := -max_len=8192
FUZZ_ARGS_gguf      := -max_len=16384 -dict=tests/fuzz/gguf.dict
FUZZ_ARGS_tokenizer := -max_len=4096
FUZZ_ARGS_promtext  := -max_len=8192 -dict=tests/fuzz/promtext.dict

fuzz: $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)
	$(foreach t,$(FUZZ_TARGETS),mkdir -p $(B)/fuzz/corpus/$(t) && \
	  $(B)/fuzz/fuzz_$(t) -max_total_time=$(FUZZ_TIME) $(FUZZ_ARGS_$(t)) \
	    $(B)/fuzz/corpus/$(t) tests/fuzz/corpus/$(t) &&) true

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRC_$$*) $(ENGINE_H)
	@mkdir -p $(@D)
	clang $(FUZZ_FLAGS) -Iengine/model/embedded -o $@ $(filter %.c %.S,$^) \
	  $(call pc_libs,jansson libzmq libpcre2-8)

$(B)/engine/model/embedded.o: engine/model/embedded.S engine/model/embedded/stories260K.bin \
                             engine/model/embedded/tok512.bin
	@mkdir -p $(@D)
	$(CC) -c -Iengine/model/embedded -o $@ $<

# The kernels' simple loops (dequantize a block, quantize a row) vectorize
# only under the full cost model, which -O2 leaves out (perf: dequant and
# activation rounding were a tenth of a quantized prefill).
$(B)/engine/compute/%.o: CFLAGS += -fvect-cost-model=dynamic

$(B)/engine/%.o: engine/%.c $(ENGINE_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -c -o $@ $<

define kernel_rule
$(B)/engine/compute/%.$(1).o: engine/compute/%.c $(ENGINE_H)
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) $$(ENGINE_CFLAGS) $$(CFLAGS) -DQB_PATH=$(PATH_ID_$(1)) $(PATH_FLAGS_$(1)) -c -o $$@ $$<
endef
$(foreach p,$(KERNEL_PATHS),$(eval $(call kernel_rule,$(p))))

$(B)/store/%.o: store/%.c $(wildcard store/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/tui/%.o: tui/%.c $(TUI_H) $(ENGINE_H) $(wildcard store/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/libinferd.a: $(ENGINE_OBJ)
	$(AR) rcs $@ $^

$(B)/libstore.a: $(STORE_OBJ)
	$(AR) rcs $@ $^

$(B)/libtui.a: $(TUI_OBJ)
	$(AR) rcs $@ $^

$(B)/bin/inferd: engine/cmd/inferd.c $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(ENGINE_LIBS) $(LDLIBS)

$(B)/bin/infertop: tui/cmd/infertop.c $(B)/libtui.a $(B)/libstore.a $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(TUI_LIBS) $(STORE_LIBS) $(ENGINE_LIBS) $(LDLIBS)

LIBS_ALL = $(B)/libtui.a $(B)/libstore.a $(B)/libinferd.a
LINK_ALL = $(LDFLAGS) $(TUI_LIBS) $(STORE_LIBS) $(ENGINE_LIBS) $(TEST_LIBS) $(LDLIBS)

$(B)/tests/unit_%: $$(call unit_obj,%) $(LIBS_ALL)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LINK_ALL)

$(UNIT_OBJ): $(B)/tests/%.o: tests/%.c $(UNIT_H) $(ENGINE_H) $(TUI_H) $(wildcard store/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(TEST_CFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/tests/bench_%: tests/bench/bench_%.c tests/bench/benchlib.c tests/bench/benchlib.h $(LIBS_ALL)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LINK_ALL)

$(B)/tests/%: tests/lib/%.c $(LIBS_ALL)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(TUI_CFLAGS) $(ENGINE_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) $(filter %.a,$^) $(LINK_ALL)

# optdoc writes what the settings table knows into the man pages and the
# completions (engine/proto/gen/optdoc.c); from the engine's library the
# linker takes the table and what its code calls, nothing more.
$(OPTDOC): engine/proto/gen/optdoc.c $(B)/libinferd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(call pc_libs,jansson) $(LDLIBS)

# The man pages: each contrib/man/PAGE.1.in through MAN_SUBST, the sed
# expressions that fill its placeholders (the version lives in version.h
# alone), then optdoc for the verbs' sections.
VERSION   := $(shell sed -n 's/.*INFERD_VERSION "\(.*\)".*/\1/p' engine/proto/version.h)
MAN_SUBST := -e 's/@VERSION@/$(VERSION)/g'

$(B)/man/%.1: contrib/man/%.1.in engine/proto/version.h $(OPTDOC)
	@test -n '$(VERSION)' || { echo 'engine/proto/version.h: no INFERD_VERSION' >&2; exit 1; }
	@mkdir -p $(@D)
	sed $(MAN_SUBST) $< | $(OPTDOC) man $* >$@.tmp && mv $@.tmp $@

# The completions: contrib/completion/SCRIPT.in with the table's rows.
$(B)/completion/%: contrib/completion/%.in $(OPTDOC)
	@mkdir -p $(@D)
	$(OPTDOC) complete <$< >$@.tmp && mv $@.tmp $@

# The part-level include graph, bottom up; `make test` checks it against
# tests/layering/rules (tests/layering/check.sh).
deps-graph:
	@tests/layering/check.sh --graph

# The operator's kit (contrib/): man pages, bash and zsh completion, and the
# systemd template unit, its ExecStart pointed at the installed inferd.
MAN1    := $(DESTDIR)$(PREFIX)/share/man/man1
BASHCOMP := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHCOMP := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd/system
# The example cluster file, where a bare `infertop` points a new user.
SHAREDIR := $(DESTDIR)$(PREFIX)/share/infertop

install: $(BINS) $(MANS) $(COMPLETIONS)
	install -d $(DESTDIR)$(PREFIX)/bin $(MAN1) $(BASHCOMP) $(ZSHCOMP) $(UNITDIR) $(SHAREDIR)
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MANS) $(MAN1)/
	install -m 644 $(B)/completion/infertop.bash $(BASHCOMP)/infertop
	ln -sf infertop $(BASHCOMP)/inferd
	install -m 644 $(B)/completion/_infertop $(ZSHCOMP)/_infertop
	sed 's|/usr/local/bin/inferd|$(PREFIX)/bin/inferd|' contrib/systemd/inferd@.service \
	  >$(UNITDIR)/inferd@.service
	chmod 644 $(UNITDIR)/inferd@.service
	install -m 644 contrib/cluster.example.conf $(SHAREDIR)/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/inferd $(DESTDIR)$(PREFIX)/bin/infertop
	rm -f $(MAN1)/inferd.1 $(MAN1)/infertop.1 $(BASHCOMP)/infertop $(BASHCOMP)/inferd
	rm -f $(ZSHCOMP)/_infertop $(UNITDIR)/inferd@.service $(SHAREDIR)/cluster.example.conf
	-rmdir $(SHAREDIR) 2>/dev/null

clean:
	rm -rf build bin
