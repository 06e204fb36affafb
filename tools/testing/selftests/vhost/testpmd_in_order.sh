#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# DPDK's testpmd as an independent driver of vhost-net: the virtio-user PMD
# over /dev/vhost-net with a TAP backend, once with in_order=1 (TAP tpmd1)
# and once with in_order=0 (tpmd0).  Each run checks that the device came
# up, that VIRTIO_F_IN_ORDER (bit 35) is in the features the device acked
# (vhostctl, and sysfs) exactly when asked for, that every 64 B frame
# testpmd sent in txonly mode reached the TAP (its own counters against
# testpmd's port statistics, packets and bytes), and that every frame a
# packet socket injected into the TAP reached testpmd in rxonly mode (the
# sender's count, the TAP's and testpmd's).  One testpmd process per run,
# driven through its command line (-i) from a FIFO.  KTAP on stdout; a
# missing dpdk-testpmd or virtio PMD fails every test (scripts/install-deps
# installs them).  Root.
#
#   testpmd_in_order.sh [-t in_order=1|in_order=0|testpmd]...
#
# With the harness's filters (-t, -v, -f, -T, -V, -F), which
# scripts/guest-selftests passes to every program, only the runs a -t
# names; none when none does (plan 1..0).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/vhost_lib.sh"
VHOSTCTL=${VHOSTCTL:-$here/../../../vhostctl/vhostctl}
FEATURE_IN_ORDER=35
TX_LEN=64	# testpmd's txonly frames
RX_LEN=100	# the frames injected into the TAP
RX_FRAMES=${RX_FRAMES:-256}
TX_SECS=${TX_SECS:-1}

runs='' filtered=''
while getopts "t:v:f:T:V:F:" opt; do
	case $opt in
	t) filtered=1
	   case $OPTARG in
	   testpmd*) runs="1 0" ;;
	   in_order=1|in_order=0) runs+=" ${OPTARG#in_order=}" ;;
	   esac ;;
	v|f|T|V|F) filtered=1 ;;
	*) echo "usage: $0 [-t in_order=1|in_order=0|testpmd]..." >&2; exit 2 ;;
	esac
done
[ -z "$filtered" ] && runs="1 0"
nruns=$(echo $runs | wc -w)
echo "TAP version 13"
echo "1..$((nruns * 4))"
[ "$nruns" = 0 ] && exit 0

n=0 rc=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
nok() { n=$((n + 1)); echo "not ok $n $*"; rc=1; }
diag() { sed 's/^/# /'; }
result() {	# result NAME MSG...: ok without messages, else not ok
	local name=$1
	shift
	if [ $# = 0 ]; then
		ok "$name"
	else
		printf '%s\n' "$@" | diag
		nok "$name"
	fi
}

names() {	# the four test names of run in_order=$1
	echo "testpmd in_order=$1: virtio-user port up on /dev/vhost-net, TAP tpmd$1"
	if [ "$1" = 1 ]; then
		echo "testpmd in_order=1: VIRTIO_F_IN_ORDER acked by the device"
	else
		echo "testpmd in_order=0: VIRTIO_F_IN_ORDER not acked"
	fi
	echo "testpmd in_order=$1: txonly $TX_LEN B: the TAP took every frame sent"
	echo "testpmd in_order=$1: rxonly: every frame injected into the TAP received"
}

fail_all() {	# fail_all REASON: what the tests need is missing
	local v name

	for v in $runs; do
		while read -r name; do
			echo "# $1"
			nok "$name"
		done < <(names "$v")
	done
	exit 1
}

TESTPMD=$(command -v dpdk-testpmd) || fail_all "dpdk-testpmd missing (dpdk-dev)"
compgen -G "/usr/lib/*/dpdk/pmds-*/librte_net_virtio.so*" > /dev/null ||
	fail_all "DPDK's virtio PMD missing (librte-net-virtio23)"
[ -c /dev/vhost-net ] || fail_all "no /dev/vhost-net"

tmp=$(mktemp -d)
pid='' pids=()
# testpmd processes that quit: at most 30 s more, then killed (quietly: no
# job status line from bash).
cleanup() {
	local p end=$((SECONDS + 30))

	exec 3>&- 2> /dev/null
	[ -n "$pid" ] && kill -KILL "$pid"
	for p in "${pids[@]}"; do
		while kill -0 "$p" && [ "$SECONDS" -lt "$end" ]; do
			sleep 0.2
		done
		kill -KILL "$p"
	done
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT

val() { local v=0; read -r v < "$1" 2> /dev/null; echo "${v:-0}"; }

tap_snap() {	# tap_snap: "rx_packets rx_bytes rx_dropped tx_packets tx_bytes tx_dropped"
	local s out=

	for s in rx_packets rx_bytes rx_dropped tx_packets tx_bytes tx_dropped; do
		out+="$(val "$SYS/$s") "
	done
	echo "$out"
}

# The vhost device of testpmd's /dev/vhost-net fd: "vhost-name:" in fdinfo.
devname() {
	local fd

	for fd in /proc/"$pid"/fd/*; do
		[ "$(readlink "$fd" 2> /dev/null)" = /dev/vhost-net ] || continue
		awk '/^vhost-name:/ { print $2 }' "/proc/$pid/fdinfo/${fd##*/}"
		return
	done
}

up() {
	kill -0 "$pid" 2> /dev/null && [ -e "/sys/class/net/$tap" ] && [ -n "$(devname)" ] &&
		grep -q '^Port 0: ' "$log"
}

# The Nth "NIC statistics for port 0" block of the log: KEY=VALUE lines.
port_stats() {
	awk -v want="$1" '
		/NIC statistics for port 0/ { blk++; next }
		blk == want && /RX-packets:|TX-packets:/ {
			for (i = 1; i < NF; i++)
				if ($i ~ /^(RX|TX)-(packets|bytes):$/) {
					k = $i; sub(/:$/, "", k); gsub(/-/, "_", k)
					print k "=" $(i + 1)
				}
		}
		blk == want && /######## *$/ && !/NIC/ { exit }' "$log"
}

# Frames into the TAP through a packet socket, at most 64 not yet taken by
# vhost-net (the TAP's tx_packets), so that tun's queue never overflows.
inject() {	# inject COUNT LEN: prints the frames sent
	python3 - "$tap" "$1" "$2" << 'EOF'
import socket, sys, time
tap, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stat = '/sys/class/net/%s/statistics/tx_packets' % tap
def taken():
    with open(stat) as f:
        return int(f.read())
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((tap, 0))
hdr = bytes.fromhex('020000000002' '020000000001' '88b5')
base, sent = taken(), 0
while sent < count:
    frame = hdr + sent.to_bytes(4, 'big') + bytes(size - len(hdr) - 4)
    s.send(frame)
    sent += 1
    end = time.time() + 10
    while sent % 16 == 0 and taken() - base < sent - 64 and time.time() < end:
        time.sleep(0.002)
print(sent)
EOF
}

cmd() { echo "$*" >&3; }
rx_above() { [ "$(val "$SYS"/rx_packets)" -gt "$1" ]; }
tx_reached() { [ $(( $(val "$SYS"/tx_packets) - $1 )) -ge "$2" ]; }
gone() { ! kill -0 "$pid" 2> /dev/null; }
up_or_gone() { up || gone; }
stats_out() { grep -q '^TX_bytes=' < <(port_stats "$1"); }

run() {	# run IN_ORDER
	local io=$1 dev feat sysfeat a b c i sent st1 st2 msgs names_=()
	local tx_pk tx_by rx_pk rx_by d A B C t0 t_up

	mapfile -t names_ < <(names "$io")
	tap=tpmd$io
	SYS=/sys/class/net/$tap/statistics
	log=$tmp/testpmd-$io.log
	rm -f "$tmp/cmd"
	mkfifo "$tmp/cmd"
	# -i: commands from the FIFO; stdout line-buffered, so that the log is
	# in order with the commands.  The forwarding lcore is 1.
	stdbuf -oL "$TESTPMD" -l 0,1 --no-huge -m 64 --no-pci --no-shconf \
		--log-level=pmd.net.virtio.init:info \
		--vdev="virtio_user0,path=/dev/vhost-net,queue_size=1024,iface=$tap,in_order=$io" \
		-- -i --nb-cores=1 --txq=1 --rxq=1 --txd=1024 --rxd=1024 --burst=32 \
		--total-num-mbufs=4096 --no-mlockall --disable-link-check \
		< "$tmp/cmd" > "$log" 2>&1 &
	pid=$!
	t0=$SECONDS
	exec 3> "$tmp/cmd"
	# ~14 s under TCG before the port is up
	if ! wait_for 120 up_or_gone || gone; then
		tail -n 15 "$log" | diag
		nok "${names_[0]}"
		for i in 1 2 3; do nok "${names_[$i]} # no port"; done
		exec 3>&-
		kill -KILL "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
		pid=
		return
	fi
	t_up=$((SECONDS - t0))
	dev=$(devname)
	ok "${names_[0]} ($dev)"

	# What the device acked: vhostctl (generic netlink), and sysfs.
	feat=$("$VHOSTCTL" -j dev show "$dev" 2> "$tmp/err" | jq -r '.[0].features')
	sysfeat=$(val "/sys/class/vhost/$dev/features")
	msgs=()
	if ! [[ "$feat" =~ ^[0-9]+$ ]]; then
		msgs+=("vhostctl -j dev show $dev: features '$feat' $(cat "$tmp/err")")
	else
		printf 'features 0x%016x (vhostctl), %s (sysfs)\n' "$feat" "$sysfeat" | diag
		[ "$(printf '0x%016x' "$feat")" = "$sysfeat" ] ||
			msgs+=("vhostctl says $feat, sysfs $sysfeat")
		[ $(( (feat >> FEATURE_IN_ORDER) & 1 )) = "$io" ] ||
			msgs+=("bit $FEATURE_IN_ORDER is $(( (feat >> FEATURE_IN_ORDER) & 1 )), want $io")
	fi
	grep -i 'using .* path' "$log" | diag
	result "${names_[1]}" "${msgs[@]}"

	# TX: txonly for TX_SECS from the first frame on, then stop;
	# the TAP's counters settle when the worker has emptied the ring.
	ip link set "$tap" up
	a=$(tap_snap)
	cmd "set fwd txonly"
	cmd "set txpkts $TX_LEN"
	cmd "start"
	wait_for 60 rx_above "${a%% *}"
	sleep "$TX_SECS"
	cmd "stop"
	st1=
	for i in $(seq 1 50); do
		sleep 0.3
		st2=$(tap_snap)
		[ "$st2" = "$st1" ] && break
		st1=$st2
	done
	cmd "show port stats 0"
	b=$(tap_snap)

	# RX: rxonly while a packet socket injects RX_FRAMES frames into the TAP.
	cmd "set fwd rxonly"
	cmd "start"
	sent=$(inject "$RX_FRAMES" "$RX_LEN")
	wait_for 30 tx_reached "$(echo "$b" | cut -d' ' -f4)" "${sent:-0}"
	sleep 0.5
	cmd "stop"
	cmd "show port stats 0"
	c=$(tap_snap)
	# Once the statistics are out, testpmd quits (some 14 s under TCG)
	# while the next run starts; the TAPs differ.
	wait_for 30 stats_out 2 || echo "no second port statistics from testpmd" | diag
	cmd "quit"
	exec 3>&-
	pids+=("$pid")
	pid=
	echo "in_order=$io: port up after ${t_up}s, all done after $((SECONDS - t0))s" | diag

	# TX: testpmd's port counters (first block) against the TAP's RX.
	eval "$(port_stats 1 | sed 's/^/s1_/')"
	read -ra A <<< "$a"
	read -ra B <<< "$b"
	read -ra C <<< "$c"
	tx_pk=$(( B[0] + B[2] - A[0] - A[2] ))
	tx_by=$(( B[1] - A[1] ))
	d="testpmd TX-packets ${s1_TX_packets:-?} TX-bytes ${s1_TX_bytes:-?}; $tap rx_packets+rx_dropped $tx_pk rx_bytes $tx_by (rx_dropped $(( B[2] - A[2] )))"
	echo "$d" | diag
	msgs=()
	[ "${s1_TX_packets:-0}" -gt 0 ] || msgs+=("no TX-packets from testpmd")
	[ "${s1_TX_packets:-x}" = "$tx_pk" ] || msgs+=("packets differ")
	[ "${s1_TX_bytes:-x}" = "$tx_by" ] && [ "$tx_by" = $((tx_pk * TX_LEN)) ] ||
		msgs+=("bytes differ (want $((tx_pk * TX_LEN)))")
	[ $(( B[2] - A[2] )) = 0 ] || msgs+=("$tap dropped frames")
	result "${names_[2]}" "${msgs[@]}"

	# RX: the sender's count, the TAP's TX and testpmd's RX (second block
	# less the first).
	eval "$(port_stats 2 | sed 's/^/s2_/')"
	rx_pk=$(( ${s2_RX_packets:-0} - ${s1_RX_packets:-0} ))
	rx_by=$(( ${s2_RX_bytes:-0} - ${s1_RX_bytes:-0} ))
	echo "sent ${sent:-?}; $tap tx_packets $(( C[3] - B[3] )) tx_bytes $(( C[4] - B[4] )) tx_dropped $(( C[5] - B[5] )); testpmd RX-packets $rx_pk RX-bytes $rx_by" | diag
	msgs=()
	[ "${sent:-0}" = "$RX_FRAMES" ] || msgs+=("sent ${sent:-none} of $RX_FRAMES")
	[ $(( C[3] - B[3] )) = "$RX_FRAMES" ] ||
		msgs+=("$tap passed $(( C[3] - B[3] )) to vhost-net")
	[ "$rx_pk" = "$RX_FRAMES" ] || msgs+=("testpmd received $rx_pk")
	[ "$rx_by" = $((RX_FRAMES * RX_LEN)) ] ||
		msgs+=("testpmd RX-bytes $rx_by, want $((RX_FRAMES * RX_LEN))")
	[ $(( C[5] - B[5] )) = 0 ] || msgs+=("$tap dropped frames")
	result "${names_[3]}" "${msgs[@]}"
	unset s1_TX_packets s1_TX_bytes s1_RX_packets s1_RX_bytes
	unset s2_TX_packets s2_TX_bytes s2_RX_packets s2_RX_bytes
}

for v in $runs; do
	run "$v"
done
exit $rc
