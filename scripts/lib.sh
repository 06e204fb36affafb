# SPDX-License-Identifier: GPL-2.0
# Common settings for the project's scripts; sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=$BUILD/linux
TARBALL=${TARBALL:-/usr/src/linux-source-6.12.tar.xz}
# What a fresh clone (CI's) would otherwise download or build again, kept
# outside the clone as ccache is: the live-migration test's guest kernel and
# QEMU root, check-distro's Debian systems (cache_entry).  VHOST_CACHE
# moves it; VHOST_CACHE=$BUILD/cache keeps it in the clone.
CACHE=${VHOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vhost-metamap}
# Directories of this repository that hold files at their kernel paths.
OVERLAY_DIRS="drivers include Documentation tools mm net"

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
log() { echo "==> $*" >&2; }

# Files of ours that go into the tree: tracked ones plus untracked, not ignored.
overlay_files() {
	(cd "$TOP" && git ls-files -co --exclude-standard -- $OVERLAY_DIRS) |
		while read -r f; do if [ -f "$TOP/$f" ]; then echo "$f"; fi; done
}

# cache_entry NAME KEY: lock the cache entry NAME (fd 8, held until the
# caller exits: two clones never build or use one entry at once) and set
# CACHE_DIR to its directory.  Its status: 0 if it holds what KEY (a
# digest of everything it is made from) says, 1 if not; then it is empty,
# for the caller to fill and seal with cache_seal.  A key never written,
# or one of an entry whose making was cut short, does not match.
cache_entry() {
	cache_lock "$1"
	[ "$(cat "$CACHE_DIR.key" 2>/dev/null)" = "$2" ] && [ -d "$CACHE_DIR" ] && return 0
	rm -rf "$CACHE_DIR" "$CACHE_DIR.key"
	mkdir -p "$CACHE_DIR"
	return 1
}

cache_lock() {	# cache_lock NAME: cache_entry's lock alone, and CACHE_DIR
	CACHE_DIR=$CACHE/$1
	mkdir -p "$CACHE"
	exec 8> "$CACHE_DIR.lock"
	flock 8
}

cache_seal() {	# cache_seal NAME KEY: what cache_entry NAME KEY made is complete
	echo "$2" > "$CACHE/$1.key"
}

# base_tree: Debian's tree as extracted, none of our patches or files (tag
# "base" of build/linux), checked out at build/stock/linux; its path.  A
# tree that is not exactly that is an error.
base_tree() {
	local stock=$BUILD/stock/linux
	if [ ! -e "$stock/.git" ]; then
		log "checking out Debian's tree (tag base) into $stock"
		mkdir -p "$BUILD/stock"
		(	# (prepare-tree's lock: no git am in the tree meanwhile)
			flock 9
			git -C "$TREE" worktree prune
			git -C "$TREE" worktree add -q --detach "$stock" base >&2
		) 9> "$BUILD/.prepare-tree.lock"
	fi
	[ "$(git -C "$stock" rev-parse HEAD)" = "$(git -C "$TREE" rev-parse base)" ] &&
		git -C "$stock" diff --quiet HEAD ||
		die "$stock is not Debian's tree as extracted (git -C $stock checkout -f base)"
	echo "$stock"
}

# Debian 13's QEMU of build/migration/qemu-root (scripts/qemu-root), run on
# the host by its root's loader with its root's libraries, modules and
# firmware: QEMU10 is the command, qemu10 ARGS... runs it.
QEMU10_ROOT=$BUILD/migration/qemu-root
QEMU10=(env "QEMU_MODULE_DIR=$QEMU10_ROOT/usr/lib/x86_64-linux-gnu/qemu"
	"$QEMU10_ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	--library-path "$QEMU10_ROOT/usr/lib/x86_64-linux-gnu"
	"$QEMU10_ROOT/usr/bin/qemu-system-x86_64"
	-L "$QEMU10_ROOT/usr/share/seabios" -L "$QEMU10_ROOT/usr/share/qemu")
qemu10() { "${QEMU10[@]}" "$@"; }

patches_hash() {
	find "$TOP/patches" -name '*.patch' -print0 | sort -z |
		xargs -0r cat | sha1sum | cut -c1-40
}

# metamap_mode_set MODE PARAM: write a metadata mode to the module parameter
# and read it back; 0 only if PARAM now says MODE.
metamap_mode_set() {
	echo "$1" > "$2" 2>/dev/null && [ "$(cat "$2" 2>/dev/null)" = "$1" ]
}

# The guest's tests in parts (scripts/guest-selftests runs those
# GUEST_PARTS names; GUEST_PARTS_ALL by default).  "datapath": what reads or
# writes guest memory, so what SMAP changes (vhost_net in each metadata
# mode, the other selftest programs, the stress smoke, testpmd); "admin":
# the admin plane (the vhost_admin* programs and vhostctl.sh), whose code
# touches no guest memory; "migration": the live-migration test with a real
# VMM; "smoke": vhost_net once, in the default metadata mode (batch), the
# three ring layouts that hold every dimension's values, the datapath's
# share of make check's SMAP-off guest (doc/testing.md says why the rest
# would only repeat there); "nested":
# vhost-vsock under upstream's vsock_test with a nested guest in a real
# VMM.
GUEST_PARTS_ALL="datapath admin migration nested"

# part_programs PART: the programs of PART, one per line, a program that
# runs N times given N times (as each run reports "PROGRAM: ..." once).
part_programs() {
	local t progs
	# the selftests' kselftest programs, as their Makefile lists them
	progs=$(sed -n 's/^TEST_GEN_PROGS := //p' "$TOP/tools/testing/selftests/vhost/Makefile")
	case "$1" in
	datapath)
		echo vhost_net; echo vhost_net; echo vhost_net
		for t in $progs; do
			case "$t" in vhost_net|vhost_admin*) ;; *) echo "$t" ;; esac
		done
		echo vhost_stress; echo testpmd_in_order.sh ;;
	admin)
		for t in $progs; do
			case "$t" in vhost_admin*) echo "$t" ;; esac
		done
		echo vhostctl.sh ;;
	migration)
		echo check-migration ;;
	nested)
		echo check-nested ;;
	smoke)
		echo vhost_net ;;
	esac
}

# parts_result LOG TAG PARTS: append to LOG a result of its own: every
# program of PARTS ran in this guest, as many times as part_programs says
# (scripts/ktap-run reports each run as "PROGRAM: ...", whatever its end).
# A program the guest never started fails it.
parts_result() {
	local out=$1 tag=$2 parts=$3 n part p want got missing=
	n=$(grep -c -E '^\[[^]]*\] (not )?ok [0-9]+ ' "$out")
	for part in $parts; do
		while read -r want p; do
			got=$(grep -c -E "^\\[[^]]*\\] (not )?ok [0-9]+ ${p//./\\.}: " "$out")
			[ "$got" -ge "$want" ] || missing+=" $p (${got} of $want runs)"
		done < <(part_programs "$part" | sort | uniq -c)
	done
	n=$((n + 1))
	if [ -z "$missing" ]; then
		echo "[$tag] ok $n every program of the parts '$parts' ran" >> "$out"
	else
		echo "[$tag] not ok $n every program of the parts '$parts' ran: missing$missing" >> "$out"
	fi
}

# guest_results LOG TAG SMAP STATUS CONSOLE: append to LOG, after the
# guest's own results, the results a guest run adds of itself, numbered on
# from the last: the SMAP mode its cpu really has (from the "vm: ...
# smap=X (from /proc/cpuinfo)" line vm-init prints), a console log free of
# splats (a missing log is not a clean one), and the guest's end: status
# 0, or 1 with a failure among its results; anything else (killed by
# the timeout: 124, never finished its command: 125) is a failure.
guest_results() {
	local out=$1 tag=$2 smap=$3 st=$4 console=$5 n seen why
	n=$(grep -c -E '^\[[^]]*\] (not )?ok [0-9]+ ' "$out")
	seen=$(sed -n 's/^vm: .*smap=\([a-z]*\) (from \/proc\/cpuinfo)$/\1/p' "$out")
	n=$((n + 1))
	if [ "$seen" = "$smap" ]; then
		echo "[$tag] ok $n guest cpu has smap=$smap" >> "$out"
	else
		echo "[$tag] not ok $n guest cpu has smap=$smap (it has '${seen:-?}')" >> "$out"
	fi
	n=$((n + 1))
	if splat=$("$TOP/scripts/scan-splat" "$console" 2>&1); then
		echo "[$tag] ok $n kernel log free of splats" >> "$out"
	elif [ -r "$console" ]; then
		# The splat's first lines, for the summary's diagnostics.
		sed -n '1,/Call Trace:/p' <<< "$splat" | head -n 20 |
			sed "s/^/[$tag] # /" >> "$out"
		echo "[$tag] not ok $n kernel log free of splats" >> "$out"
	else
		echo "[$tag] not ok $n kernel log free of splats (no console log $console)" >> "$out"
	fi
	n=$((n + 1))
	case "$st" in
	0) why= ;;
	1) grep -q -E '^\[[^]]*\] not ok [0-9]+ ' "$out" && why= ||
		why="exit 1 with no failed result" ;;
	124) why="killed by its timeout" ;;
	125) why="did not finish its command (status 125)" ;;
	*) why="exit $st" ;;
	esac
	if [ -z "$why" ]; then
		echo "[$tag] ok $n guest ran its command to the end (exit $st)" >> "$out"
	else
		echo "[$tag] not ok $n guest ran its command to the end: $why" >> "$out"
	fi
}

# in_chroot_of ROOT CMD...: CMD in the Debian system at ROOT, with /proc,
# /sys and /dev, in a mount namespace of its own (nothing stays mounted),
# with a clean environment and no terminal (apt and debconf ask nothing).
in_chroot_of() {
	unshare -m --propagation private /bin/sh -c '
		set -e
		r=$1; shift
		mount -t proc proc "$r/proc"
		mount -t sysfs sys "$r/sys"
		mount --rbind /dev "$r/dev"
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 HOME=/root "$@"' sh "$@"
}

# debian_codename debian12|debian13: the release's codename.
debian_codename() {
	case "$1" in
	debian12) echo bookworm ;;
	debian13) echo trixie ;;
	*) return 1 ;;
	esac
}
