# SPDX-License-Identifier: GPL-2.0
# Common settings for the project's scripts; sourced, never run.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
TREE=$BUILD/linux
TARBALL=${TARBALL:-/usr/src/linux-source-6.12.tar.xz}
# Directories of this repository that hold files at their kernel paths.
OVERLAY_DIRS="drivers include Documentation tools mm net"

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
log() { echo "==> $*" >&2; }

# Files of ours that go into the tree: tracked ones plus untracked, not ignored.
overlay_files() {
	(cd "$TOP" && git ls-files -co --exclude-standard -- $OVERLAY_DIRS) |
		while read -r f; do if [ -f "$TOP/$f" ]; then echo "$f"; fi; done
}

patches_hash() {
	find "$TOP/patches" -name '*.patch' -print0 | sort -z |
		xargs -0r cat | sha1sum | cut -c1-40
}
