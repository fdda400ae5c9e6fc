# SPDX-License-Identifier: GPL-2.0
# asyncbpf build. `make` builds .output/asyncbpf; `make test` runs everything;
# `make deps` installs the Debian packages (as root). See README.md.

OUTPUT    := .output
SAN_OUT   := $(OUTPUT)/san
FUZZ_OUT  := $(OUTPUT)/fuzz
CLANG     ?= $(firstword $(shell command -v clang-16 clang-19 clang-14 clang 2>/dev/null))
BPFTOOL   ?= $(firstword $(shell command -v bpftool /usr/sbin/bpftool 2>/dev/null))
PYTHON    ?= /usr/bin/python3
# test-build's parallel jobs (the sanitizer and fuzz builds, the Rust programs)
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
CC        ?= cc
PKG_CONFIG ?= pkg-config
PKGS      := libbpf libdw libelf libcjson capstone zlib libseccomp libmicrohttpd

UNAME_M   := $(shell uname -m)
ARCH      := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(UNAME_M)))
VMLINUX   := vmlinux/$(ARCH)/vmlinux.h
BPF_ARCH  := $(patsubst x86,x86,$(ARCH))

# Read when make parses this file. Targets that install packages first (demo,
# test) run `deps` and then re-invoke make, so that these are read afterwards:
# on a fresh machine the first parse finds no packages.
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -g -O2
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuser -Ibpf -I$(OUTPUT) $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS    := $(PKG_LIBS) -liberty

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# user/<subsystem>/*.c (user/README.md); objects mirror the folders.
USER_SRCS := $(wildcard user/*/*.c)
USER_HDRS := $(wildcard user/*/*.h)
LIB_SRCS  := $(filter-out user/cli/main.c,$(USER_SRCS))
OBJS      := $(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(USER_SRCS))
SAN_OBJS  := $(patsubst user/%.c,$(SAN_OUT)/obj/%.o,$(USER_SRCS))
SAN_LIB_OBJS := $(patsubst user/%.c,$(SAN_OUT)/obj/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(SAN_OUT)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(FUZZ_SRCS))
FUZZ_LIB_OBJS := $(patsubst user/%.c,$(FUZZ_OUT)/obj/%.o,$(LIB_SRCS))

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# `make install`: the binary, the man page and the bash completion under
# $(DESTDIR)$(PREFIX) (default /usr/local).
PREFIX ?= /usr/local

.PHONY: install uninstall

.PHONY: all clean deps test test-build unit check-env demo fixtures conformance san fuzz fuzz-long \
	bench-analyze bench-tools bench-trace bench-stacks format format-check check-layout vmlinux bench-profile

all: check-env $(OUTPUT)/asyncbpf

check-env:
	@for p in $(PKGS); do $(PKG_CONFIG) --exists $$p || { \
		echo "asyncbpf: build: pkg-config cannot find '$$p': run 'make deps' as root" >&2; exit 1; }; done
	@test -n "$(CLANG)" || { echo "asyncbpf: build: no clang found: run 'make deps' as root" >&2; exit 1; }
	@test -n "$(BPFTOOL)" || { echo "asyncbpf: build: no bpftool found: run 'make deps' as root" >&2; exit 1; }
	@test -f $(VMLINUX) || { echo "asyncbpf: build: no $(VMLINUX) for architecture '$(UNAME_M)': run vmlinux/gen-vmlinux.sh on a kernel with BTF" >&2; exit 1; }

$(OUTPUT) $(SAN_OUT) $(SAN_OUT)/tests $(FUZZ_OUT):
	$(Q)mkdir -p $@

# BPF objects: CO-RE, compiled once, used by both the normal and sanitizer builds.
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h $(VMLINUX) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(dir $(VMLINUX)) -Ibpf \
		-Wall -Werror -c $< -o $@.tmp && mv $@.tmp $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUTPUT)/obj/%.o: user/%.c $(USER_HDRS) bpf/*.h $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUTPUT)/asyncbpf: $(OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# Sanitizer build: what the tests run.
$(SAN_OUT)/obj/%.o: user/%.c $(USER_HDRS) bpf/*.h $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(SAN_OUT)/asyncbpf: $(SAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) $^ $(LDLIBS) -o $@

$(SAN_OUT)/tests/%: tests/unit/%.c tests/unit/*.h $(USER_HDRS) $(SAN_LIB_OBJS) | $(SAN_OUT)/tests
	$(call msg,TEST-CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Itests/unit $< $(SAN_LIB_OBJS) $(LDLIBS) -o $@

san: check-env $(SAN_OUT)/asyncbpf $(UNIT_BINS)

# libFuzzer targets (clang): ASan + UBSan + coverage.
FUZZ_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
$(FUZZ_OUT)/obj/%.o: user/%.c $(USER_HDRS) bpf/*.h $(SKELS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(ALL_CFLAGS) $(FUZZ_FLAGS) -c $< -o $@

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS) | $(FUZZ_OUT)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(ALL_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(FUZZ_LIB_OBJS) $(LDLIBS) -o $@

fuzz: check-env $(FUZZ_BINS)

FUZZ_SECONDS ?= 600
fuzz-long: fuzz
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# `make deps DEPS=...` replaces the installer (tests/test_build.py stubs it).
DEPS ?= scripts/deps.sh
deps:
	$(DEPS)

fixtures:
	tests/fixtures/build.sh

# third-party programs (tokio's tests, async-std/smol examples, an HTTP server)
conformance:
	tests/conformance/build.sh

vmlinux:
	vmlinux/gen-vmlinux.sh

# demo and test install the packages first, then re-invoke make: pkg-config's
# flags are read when make parses the Makefile, which must be after the install.
test:
	$(MAKE) deps
	$(MAKE) -j$(JOBS) test-build
	$(PYTHON) -m pytest -rs --durations=40 tests

test-build: all san fuzz fixtures conformance bench-tools

demo:
	$(MAKE) deps
	$(MAKE) all
	tests/fixtures/build.sh demo
	scripts/demo.sh

bench-analyze: all fixtures
	bench/analyze.sh

# The tracer's benchmark tools (bench/README.md): programs of their own under
# .output/bench/, linked with the tracer's objects (not part of `make all`).
BENCH_OUT  := $(OUTPUT)/bench
BENCH_BPF  := $(wildcard bench/*.bpf.c)
BENCH_SKELS := $(patsubst bench/%.bpf.c,$(BENCH_OUT)/%.skel.h,$(BENCH_BPF))
BENCH_LIB  := $(BENCH_OUT)/bench_common.o $(filter-out $(OUTPUT)/obj/cli/main.o,$(OBJS))
BENCH_TOOLS := $(BENCH_OUT)/floor $(BENCH_OUT)/consumer_bench

$(BENCH_OUT):
	$(Q)mkdir -p $@

$(BENCH_OUT)/%.bpf.o: bench/%.bpf.c bpf/*.h $(VMLINUX) | $(BENCH_OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(dir $(VMLINUX)) -Ibpf \
		-Wall -Werror -c $< -o $@.tmp && mv $@.tmp $@

$(BENCH_OUT)/%.skel.h: $(BENCH_OUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BENCH_OUT)/%.o: bench/%.c bench/*.h $(USER_HDRS) $(SKELS) $(BENCH_SKELS) | $(BENCH_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Ibench -I$(BENCH_OUT) -c $< -o $@

$(BENCH_OUT)/%: $(BENCH_OUT)/%.o $(BENCH_LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -lpthread -o $@

bench-tools: check-env $(BENCH_TOOLS)

bench-trace: all fixtures bench-tools
	bench/trace.sh

bench-profile: all fixtures
	bench/profile.sh

bench-stacks: all fixtures
	bench/stacks.sh

FORMAT_SRCS = user/*/*.c user/*/*.h bpf/*.c bpf/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c \
	bench/*.c bench/*.h

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

# Includes point one way down the pipeline (user/README.md).
check-layout:
	$(PYTHON) scripts/check-layout.py

clean:
	rm -rf $(OUTPUT)

.DELETE_ON_ERROR:
.SECONDARY:

install: all
	install -D -m 0755 $(OUTPUT)/asyncbpf $(DESTDIR)$(PREFIX)/sbin/asyncbpf
	install -D -m 0644 docs/man/asyncbpf.8 $(DESTDIR)$(PREFIX)/share/man/man8/asyncbpf.8
	install -D -m 0644 scripts/asyncbpf.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/asyncbpf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/asyncbpf $(DESTDIR)$(PREFIX)/share/man/man8/asyncbpf.8 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/asyncbpf
