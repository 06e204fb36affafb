# SPDX-License-Identifier: GPL-2.0
# Entry points of the project; the work is done by scripts/.

.PHONY: all check ci kernel kernel-perf tests tree patches series-check refresh-patches regen deps clean help

all: kernel tests

help:
	@echo "make check            build everything, run all tests (SMAP on and off)"
	@echo "make ci               what CI runs: make check, then make check-distro"
	@echo "make bench [QUICK=1]  the benchmark: perf and stock kernels, SMAP on/off, build/bench/"
	@echo "make bench-page       the results page from tools/vhost-bench/results.json"
	@echo "make stress [SECONDS=N] [SEED=S] [PROCS=P]  randomized campaign, debug kernel"
	@echo "make kernel           debug kernel into build/kbuild-debug"
	@echo "make kernel-perf      benchmark kernel into build/kbuild-perf"
	@echo "make tests            selftests into build/selftests"
	@echo "make patches          export the full series into build/patches"
	@echo "make series-check     build every step of the series (allmodconfig W=1, debug), checkpatch each"
	@echo "make refresh-patches  rewrite patches/ from commits in build/linux"
	@echo "make regen            regenerate the netlink code from the YNL spec"
	@echo "make deb              Debian packages vhost-metamap-dkms, vhostctl into build/deb"
	@echo "make check-distro     the packages on Debian 12's (SMAP off) and 13's (SMAP on) own 6.12 kernels"
	@echo "scripts/vm --smap on|off -- CMD   run CMD in a guest"

check:
	@scripts/check

ci:
	@scripts/ci

deps:
	@scripts/install-deps

tree: deps
	@scripts/prepare-tree

kernel: deps
	@scripts/build-kernel debug

kernel-perf: deps
	@scripts/build-kernel perf

tests: kernel
	@scripts/build-tests

patches:
	@scripts/export-patches

series-check: deps
	@scripts/series-check

refresh-patches:
	@scripts/refresh-patches

clean:
	rm -rf build/kbuild-debug build/kbuild-perf build/selftests build/check build/patches \
		build/deb build/distro build/distro-install build/stock build/series-check

regen:
	@scripts/ynl-regen

# The benchmark (issues 6, 15): perf kernel and stock 6.12, SMAP on and off,
# paths alternating in one guest, worker counts under -icount; QUICK=1 for a
# short run.  Results in build/bench/.
.PHONY: bench bench-page
bench:
	@QUICK=$(QUICK) scripts/bench

# Documentation/networking/vhost-bench-results.rst from the committed
# results (make bench writes both; make check fails when they disagree).
bench-page:
	@scripts/bench-page

# The Debian packages (issue 18): vhost-metamap-dkms and vhostctl into
# build/deb/; check-distro tests them on Debian 12's and 13's own 6.12
# kernels (build/distro/<release>/), Debian 13 SMAP on, Debian 12 SMAP off
# (DISTRO_MATRIX=full: both modes on both).
.PHONY: deb check-distro
deb:
	@scripts/deb

check-distro:
	@scripts/check-distro

# The stress campaign (issue 16): vhost_stress on the debug kernel for
# SECONDS (default 600), replaying SEED if given; build/stress/.
.PHONY: stress
stress:
	@STRESS_SECONDS=$(SECONDS) STRESS_SEED=$(SEED) STRESS_PROCS=$(PROCS) scripts/stress
