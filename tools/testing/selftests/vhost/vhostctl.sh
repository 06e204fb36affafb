#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vhostctl(8) against the live vhost admin plane, as root: the card's command
# on a device with traffic, show/stats against sysfs and against the traffic
# generator's own counts, text against JSON, a device named by its TAP, every
# error path (status, message, nothing changed), unprivileged callers, and
# monitor seeing devices come and go.  KTAP on stdout.
#
# Programs: $VHOSTCTL, else tools/vhostctl/vhostctl of the source tree this
# script is in, else vhostctl in $PATH; $VHOST_NET_HOLD, else vhost_net_hold
# in the current directory (the selftests' build directory) or next to this
# script.
set -u

here=$(cd "$(dirname "$0")" && pwd)
KSFT_SKIP=4

find_prog() {	# find_prog CANDIDATE...: the first executable one
	local p

	for p in "$@"; do
		if [ -n "$p" ] && [ -x "$p" ] && [ -f "$p" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

VHOSTCTL=$(find_prog "${VHOSTCTL:-}" "$here/../../../vhostctl/vhostctl" \
	"$(command -v vhostctl)")
HOLD=$(find_prog "${VHOST_NET_HOLD:-}" "$PWD/vhost_net_hold" "$here/vhost_net_hold")
PY=$(command -v python3)
SETPRIV=$(command -v setpriv)
SYS=/sys/class/vhost

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p

	for p in "${pids[@]}"; do
		kill -TERM "$p" 2> /dev/null
	done
	wait 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

vc() { "$VHOSTCTL" "$@"; }
# vhostctl without CAP_NET_ADMIN (still root otherwise)
vc_unpriv() {
	"$SETPRIV" --inh-caps=-net_admin --bounding-set=-net_admin -- \
		"$VHOSTCTL" "$@"
}

wait_for() {	# wait_for SECONDS CMD...: until CMD succeeds
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.1
	done
}

# Python helpers: JSON queries and the comparisons with sysfs and text.
cat > "$tmp/h.py" << 'EOF'
import json, sys

def load(path):
    with open(path) as f:
        return json.load(f)

def sysdump(path):
    """relpath=value lines -> dict"""
    d = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip('\n').partition('=')
            d[k] = v
    return d

def text_value(k, v):
    if isinstance(v, bool):
        return 'on' if v else 'off'
    if k == 'features':
        return '0x%016x' % v
    return str(v)

def pairs(tokens, what):
    if len(tokens) % 2:
        raise SystemExit('%s: odd number of words: %s' % (what, tokens))
    return {tokens[i]: tokens[i + 1] for i in range(0, len(tokens), 2)}

def fail(msgs):
    for m in msgs:
        print(m)
    sys.exit(1 if msgs else 0)

def cmd_get(path, expr):
    v = eval(expr, {'d': load(path)})
    print(v if isinstance(v, str) else json.dumps(v))

def cmd_show_text(text_path, json_path):
    """'show' text against '-j show' of the same single device"""
    lines = open(text_path).read().split('\n')
    d = load(json_path)
    if len(d) != 1:
        fail(['%d devices in JSON' % len(d)])
    d = d[0]
    head = lines[0].split()
    msgs = []
    if head[0] != d['name'] + ':':
        msgs.append('header %r, name %r' % (head[0], d['name']))
    words = head[1:] + ' '.join(lines[1:]).split()
    text = pairs(words, 'text')
    want = {k.replace('_', '-'): text_value(k, v) for k, v in d.items()
            if k not in ('id', 'name')}
    if text != want:
        msgs.append('text %s\njson %s' % (text, want))
    fail(msgs)

def cmd_stats_text(text_path, json_path):
    """'stats' text against '-j stats' (device counters only)"""
    lines = open(text_path).read().split('\n')
    d = load(json_path)[0]
    msgs = []
    if lines[0] != d['name'] + ':':
        msgs.append('header %r' % lines[0])
    text = pairs(' '.join(lines[1:]).split(), 'text')
    want = {k.replace('_', '-'): str(v) for k, v in d['stats'].items()}
    if text != want:
        msgs.append('text %s\njson %s' % (text, want))
    fail(msgs)

def cmd_stats_sysfs(json_path, dump_path):
    """device counters against statistics/: every reported one equal, the
    others read 0"""
    st = load(json_path)[0]['stats']
    sysfs = {k[len('statistics/'):]: v for k, v in sysdump(dump_path).items()
             if k.startswith('statistics/')}
    msgs = []
    if len(st) < 8:
        msgs.append('only %d counters: %s' % (len(st), sorted(st)))
    for k, v in st.items():
        if k not in sysfs:
            msgs.append('%s: no sysfs file' % k)
        elif str(v) != sysfs[k]:
            msgs.append('%s: netlink %s sysfs %s' % (k, v, sysfs[k]))
    for k, v in sysfs.items():
        if k not in st and v != '0':
            msgs.append('%s: not reported, sysfs %s' % (k, v))
    fail(msgs)

QUEUE_ATTRS = ('type', 'num', 'busypoll_us', 'metamap_valid')

def cmd_queues_sysfs(json_path, dump_path, num_queues):
    """per-queue attributes and counters against queues/vqN/"""
    d = load(json_path)[0]
    sysfs = sysdump(dump_path)
    qs = d.get('queues', [])
    msgs = []
    if [q['index'] for q in qs] != list(range(int(num_queues))):
        msgs.append('queues %s, num_queues %s' % ([q['index'] for q in qs],
                                                  num_queues))
    for q in qs:
        p = 'queues/vq%d/' % q['index']
        for k in ('type', 'num', 'busypoll_us'):
            if str(q.get(k)) != sysfs.get(p + k):
                msgs.append('%s%s: netlink %s sysfs %s' % (p, k, q.get(k),
                                                           sysfs.get(p + k)))
        if str(int(q.get('metamap_valid', -1))) != sysfs.get(p + 'metamap_valid'):
            msgs.append('%smetamap_valid: %s / %s' % (
                p, q.get('metamap_valid'), sysfs.get(p + 'metamap_valid')))
        # the counters: the queue's other files (or its statistics/)
        files = {}
        for k, v in sysfs.items():
            if k.startswith(p):
                k = k[len(p):]
                if k.startswith('statistics/'):
                    k = k[len('statistics/'):]
                if k not in QUEUE_ATTRS:
                    files[k] = v
        st = {k: str(v) for k, v in q.get('stats', {}).items()}
        if st != files:
            msgs.append('%sstatistics:\nnetlink %s\nsysfs   %s' % (p, st, files))
        zc = 'zcopy_sent' in st
        if zc != (q['type'] == 'tx'):
            msgs.append('%s: zero-copy counters on a %s queue: %s' % (p, q['type'], zc))
    fail(msgs)

def cmd_queue_sums(json_path):
    d = load(json_path)[0]
    msgs = []
    for k, v in d['stats'].items():
        s = sum(q['stats'].get(k, 0) for q in d['queues'])
        if s != v:
            msgs.append('%s: device %d, sum of queues %d' % (k, v, s))
    fail(msgs)

def cmd_monitor_json(path, dev, dev_b, busypoll):
    ev = []
    msgs = []
    for n, line in enumerate(open(path)):
        try:
            ev.append(json.loads(line))
        except ValueError as e:
            msgs.append('line %d: %s: %r' % (n + 1, e, line))
    names = [(e.get('event'), e.get('name')) for e in ev]
    for e in ev:
        for k in ('owner_pid', 'backend_ifname', 'backend_ifindex'):
            if k in e:
                msgs.append('%s in a notification: %s' % (k, e))
        if e.get('event') not in ('add', 'del', 'change'):
            msgs.append('event %r' % e.get('event'))
    ch = [e for e in ev if e.get('event') == 'change' and e.get('name') == dev]
    if not ch or ch[-1].get('busypoll_us') != int(busypoll):
        msgs.append('no change event of %s with busypoll_us %s' % (dev, busypoll))
    if ('add', dev_b) not in names or ('del', dev_b) not in names or \
       names.index(('add', dev_b)) > names.index(('del', dev_b)):
        msgs.append('no add then del of %s: %s' % (dev_b, names))
    fail(msgs)

globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
EOF
h() { "$PY" "$tmp/h.py" "$@"; }
jget() { h get "$@"; }

# "relpath=value" of every file under a device's sysfs directory we compare
sysfs_dump() {	# sysfs_dump DEV [queues]
	local d=$SYS/$1 f

	(
		cd "$d" || exit 1
		for f in statistics/*; do
			echo "$f=$(cat "$f")"
		done
		if [ "${2:-}" = queues ]; then
			for f in queues/vq*/*; do
				[ -f "$f" ] && echo "$f=$(cat "$f")"
			done
			for f in queues/vq*/statistics/*; do
				[ -f "$f" ] && echo "$f=$(cat "$f")"
			done
		fi
	) | sort
}

# The tunables in sysfs, to show that a failed command changed nothing.
tunables() {
	local f

	for f in busypoll_us zerocopy zcopy_min_len metamap; do
		printf '%s=%s ' "$f" "$(cat "$SYS/$1/$f")"
	done
}

# Run ARGS with a stable view: OUT holds its stdout taken while the sysfs
# files of DEV stayed the same, and DUMP those files.  Counters only move
# with traffic, but the stack may still send into the TAP now and then.
stable() {	# stable DEV OUT DUMP [queues] -- ARGS...
	local dev=$1 out=$2 dump=$3 q=$4 try

	shift 5
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sysfs_dump "$dev" "$q" > "$dump.1"
		"$@" > "$out" || return 1
		sysfs_dump "$dev" "$q" > "$dump"
		cmp -s "$dump.1" "$dump" && return 0
		sleep 0.2
	done
	echo "sysfs of $dev never stood still"
	return 1
}

# ---- the device under test ------------------------------------------------

start_holder() {	# start_holder TAG ARGS...: sets hold_pid hold_dev hold_tap
	local tag=$1

	shift
	"$HOLD" "$@" > "$tmp/$tag.out" 2> "$tmp/$tag.err" &
	hold_pid=$!
	pids+=("$hold_pid")
	if ! wait_for 120 grep -q . "$tmp/$tag.out"; then
		echo "vhost_net_hold did not start:"
		cat "$tmp/$tag.err"
		return 1
	fi
	read -r hold_dev hold_tap < "$tmp/$tag.out"
	[ -n "$hold_dev" ] && [ -n "$hold_tap" ]
}

# No IPv6 chatter into the TAP while counters are compared.
quiet_tap() {
	local p=/proc/sys/net/ipv6/conf/$1/disable_ipv6

	[ -w "$p" ] && echo 1 > "$p"
	return 0
}

has_lines() { [ "$(wc -l < "$1")" -ge "$2" ]; }
tx_above() { [ "$(cat "$SYS/$dev/statistics/tx_packets")" -gt "$1" ]; }

traffic_stopped=
stop_traffic() {	# the holder A stops sending and prints its counts
	[ -n "$traffic_stopped" ] && return 0
	kill -USR1 "$pid_a"
	if ! wait_for 60 has_lines "$tmp/a.out" 2; then
		echo "vhost_net_hold did not report its counts:"
		cat "$tmp/a.err"
		return 1
	fi
	read -r _ held_pkts _ held_bytes < <(sed -n 2p "$tmp/a.out")
	traffic_stopped=1
	# Nothing polls after this: busy-poll back to the owner's choice.
	vc set dev "$dev" busypoll-us 0
}

# ---- tests ------------------------------------------------------------------

t_device_in_sysfs() {
	[ -d "$SYS/$dev" ] || { echo "no $SYS/$dev"; return 1; }
	[ "$(cat "$SYS/$dev/type")" = net ] || { echo "type $(cat "$SYS/$dev/type")"; return 1; }
	vc show dev "$dev" > "$tmp/show" || return 1
	head -n1 "$tmp/show" | grep -q "^$dev: type net " || { cat "$tmp/show"; return 1; }
}

t_card_command() {
	# Start from other values, so that the card really changes something.
	if [ "$(cat "$SYS/$dev/busypoll_us")" = 50 ] ||
	   [ "$(cat "$SYS/$dev/zerocopy")" = 1 ]; then
		vc set dev "$dev" busypoll-us 0 zerocopy off || return 1
	fi
	# The card, word for word (with the live device's name).
	vhostctl_out=$(vc set dev "$dev" busypoll-us 50 zerocopy on 2>&1)
	local rc=$?
	[ $rc = 0 ] && [ -z "$vhostctl_out" ] ||
		{ echo "status $rc: $vhostctl_out"; return 1; }
}

t_json_show_after_set() {
	vc -j show dev "$dev" > "$tmp/j" || return 1
	"$PY" -m json.tool "$tmp/j" > /dev/null || { cat "$tmp/j"; return 1; }
	[ "$(jget "$tmp/j" 'len(d)')" = 1 ] &&
	[ "$(jget "$tmp/j" 'd[0]["name"]')" = "$dev" ] &&
	[ "$(jget "$tmp/j" 'd[0]["busypoll_us"]')" = 50 ] &&
	[ "$(jget "$tmp/j" 'd[0]["zerocopy"]')" = true ] || { cat "$tmp/j"; return 1; }
}

t_sysfs_agrees_after_set() {
	local s=$SYS/$dev j=$tmp/j bad=0 k

	vc -j show dev "$dev" > "$j" || return 1
	[ "$(cat "$s/busypoll_us")" = 50 ] || { echo "busypoll_us $(cat "$s/busypoll_us")"; bad=1; }
	[ "$(cat "$s/zerocopy")" = 1 ] || { echo "zerocopy $(cat "$s/zerocopy")"; bad=1; }
	for k in busypoll_us zcopy_min_len num_queues owner_pid backend_ifindex \
		 backend_ifname; do
		[ "$(jget "$j" "d[0][\"$k\"]")" = "$(cat "$s/$k")" ] ||
			{ echo "$k: json $(jget "$j" "d[0][\"$k\"]") sysfs $(cat "$s/$k")"; bad=1; }
	done
	for k in zerocopy metamap; do
		[ "$(jget "$j" "int(d[0][\"$k\"])")" = "$(cat "$s/$k")" ] ||
			{ echo "$k differs"; bad=1; }
	done
	[ "$(jget "$j" '"0x%016x" % d[0]["features"]')" = "$(cat "$s/features")" ] ||
		{ echo "features differ"; bad=1; }
	[ "$(jget "$j" 'd[0]["owner_pid"]')" = "$pid_a" ] || { echo "owner_pid not $pid_a"; bad=1; }
	[ "$(jget "$j" 'd[0]["backend_ifname"]')" = "$tap" ] || { echo "backend not $tap"; bad=1; }
	[ "$(jget "$j" 'd[0]["backend_ifindex"]')" = "$(cat "/sys/class/net/$tap/ifindex")" ] ||
		{ echo "backend_ifindex"; bad=1; }
	return $bad
}

t_traffic_after_set() {
	local a b

	a=$(cat "$SYS/$dev/statistics/tx_packets")
	wait_for 30 tx_above "$a" ||
		{ echo "tx_packets stuck at $a"; return 1; }
	b=$(cat "$SYS/$dev/statistics/tx_packets")
	echo "tx_packets $a -> $b"
}

t_json_matches_text() {
	vc show dev "$dev" > "$tmp/t" && vc -j show dev "$dev" > "$tmp/j" || return 1
	h show_text "$tmp/t" "$tmp/j"
}

t_pretty_json_is_json_tool() {
	vc -j show dev "$dev" > "$tmp/j" && vc -j -p show dev "$dev" > "$tmp/p" || return 1
	"$PY" -m json.tool "$tmp/j" > "$tmp/jt" || return 1
	diff "$tmp/jt" "$tmp/p"
}

t_dev_by_tap_name() {
	vc -j show dev "$tap" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[x["name"] for x in d]')" = "[\"$dev\"]" ] || { cat "$tmp/j"; return 1; }
	vc show "$tap" > "$tmp/t" || return 1
	head -n1 "$tmp/t" | grep -q "^$dev: " || { cat "$tmp/t"; return 1; }
	vc stats "$tap" > "$tmp/t" || return 1
	head -n1 "$tmp/t" | grep -qx "$dev:" || { cat "$tmp/t"; return 1; }
}

t_set_by_tap_name() {
	local old

	old=$(cat "$SYS/$dev/zcopy_min_len")
	vc set dev "$tap" zcopy-min-len 300 || return 1
	[ "$(cat "$SYS/$dev/zcopy_min_len")" = 300 ] || { echo "zcopy_min_len not 300"; return 1; }
	vc set "$tap" zcopy-min-len "$old" || return 1
	[ "$(cat "$SYS/$dev/zcopy_min_len")" = "$old" ]
}

t_holder_counts_equal_stats() {
	stop_traffic || return 1
	echo "vhost_net_hold: tx_packets $held_pkts tx_bytes $held_bytes"
	[ "$held_pkts" -gt 0 ] || { echo "nothing sent"; return 1; }
	[ "$(cat "$SYS/$dev/statistics/tx_packets")" = "$held_pkts" ] &&
	[ "$(cat "$SYS/$dev/statistics/tx_bytes")" = "$held_bytes" ] ||
		{ echo "sysfs: tx_packets $(cat "$SYS/$dev/statistics/tx_packets") tx_bytes $(cat "$SYS/$dev/statistics/tx_bytes")"; return 1; }
	vc -j stats dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" 'd[0]["stats"]["tx_packets"]')" = "$held_pkts" ] &&
	[ "$(jget "$tmp/j" 'd[0]["stats"]["tx_bytes"]')" = "$held_bytes" ] || { cat "$tmp/j"; return 1; }
}

t_stats_equal_sysfs() {
	stop_traffic || return 1
	stable "$dev" "$tmp/j" "$tmp/dump" "" -- vc -j stats dev "$dev" || return 1
	"$PY" -m json.tool "$tmp/j" > /dev/null || return 1
	h stats_sysfs "$tmp/j" "$tmp/dump"
}

t_stats_text_equals_json() {
	stop_traffic || return 1
	stable "$dev" "$tmp/t" "$tmp/dump" "" -- vc stats dev "$dev" || return 1
	vc -j stats dev "$dev" > "$tmp/j" || return 1
	vc stats dev "$dev" > "$tmp/t2" || return 1
	cmp -s "$tmp/t" "$tmp/t2" || { echo "counters moved, retry"; return 1; }
	h stats_text "$tmp/t" "$tmp/j"
}

t_queue_stats_equal_sysfs() {
	stop_traffic || return 1
	stable "$dev" "$tmp/j" "$tmp/dump" queues -- vc -j -s -s stats dev "$dev" || return 1
	h queues_sysfs "$tmp/j" "$tmp/dump" "$(cat "$SYS/$dev/num_queues")"
}

t_queue_sums_equal_device() {
	stop_traffic || return 1
	stable "$dev" "$tmp/j" "$tmp/dump" "" -- vc -j -s -s show dev "$dev" || return 1
	h queue_sums "$tmp/j"
}

# expect_error STATUS REGEX ARGS...: vhostctl ARGS fails with STATUS, one
# line on stderr matching REGEX, nothing on stdout, no tunable of dev changed
expect_error() {
	local want_rc=$1 re=$2 before after rc

	shift 2
	before=$(tunables "$dev")
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	after=$(tunables "$dev")
	echo "$* -> status $rc: $(cat "$tmp/err")"
	[ "$rc" = "$want_rc" ] || { echo "want status $want_rc"; return 1; }
	[ "$(wc -l < "$tmp/err")" = 1 ] && grep -Eq -- "$re" "$tmp/err" ||
		{ echo "want a message matching: $re"; return 1; }
	[ ! -s "$tmp/out" ] || { echo "stdout:"; cat "$tmp/out"; return 1; }
	[ "$before" = "$after" ] || { echo "changed: $before -> $after"; return 1; }
}

t_err_invalid_value() {
	expect_error 2 '^Invalid "busypoll-us" value "x"$' \
		vc set dev "$dev" busypoll-us x zerocopy off
}

t_err_duplicate() {
	expect_error 2 '^Duplicate argument "zerocopy"$' \
		vc set dev "$dev" zerocopy off zerocopy on
}

t_err_unknown_keyword() {
	expect_error 2 '^Unknown keyword "busypoll", try "vhostctl dev help"$' \
		vc set dev "$dev" busypoll 5
}

t_err_missing_value() {
	expect_error 2 '^Missing value for "busypoll-us"$' \
		vc set dev "$dev" zerocopy off busypoll-us
}

t_err_device_missing() {
	expect_error 2 '^Device name is missing$' vc set busypoll-us 5
}

t_err_on_off() {
	expect_error 2 '^Invalid "metamap" value "yes", expected "on" or "off"$' \
		vc set dev "$dev" metamap yes
}

t_err_cli_garbage() {
	expect_error 2 '^Object "sett" is unknown' vc sett dev "$dev" busypoll-us 5 &&
	expect_error 2 '^Command "sett" is unknown' vc dev sett "$dev" busypoll-us 5 &&
	expect_error 2 '^Unknown option "-x"' vc -x set dev "$dev" busypoll-us 5 &&
	expect_error 2 '^Nothing to set' vc set dev "$dev" &&
	expect_error 2 '^Duplicate argument "dev"' vc set dev "$dev" dev "$dev" metamap on
}

t_err_range_busypoll() {
	expect_error 1 '^Error: .+\.$' vc set dev "$dev" busypoll-us 1000001
}

t_err_range_zcopy_min_len() {
	expect_error 1 '^Error: .+\.$' vc set dev "$dev" zcopy-min-len 0 &&
	expect_error 1 '^Error: .+\.$' vc set dev "$dev" zcopy-min-len 65537
}

# One bad value in a request: none of the good ones is applied.
t_err_all_or_none() {
	expect_error 1 '^Error: .+\.$' \
		vc set dev "$dev" busypoll-us 7 zerocopy off zcopy-min-len 70000 metamap off
}

t_err_no_such_device() {
	expect_error 1 '^(Error: device not found\.|Cannot find device "vhost99999")$' \
		vc set dev vhost99999 busypoll-us 5 &&
	expect_error 1 '^(Error: device not found\.|Cannot find device "vhost99999")$' \
		vc -j show dev vhost99999
}

t_err_no_such_backend() {
	expect_error 1 '^Cannot find device "nosuchtap0"$' vc show dev nosuchtap0 &&
	expect_error 1 '^Cannot find device "nosuchtap0"$' vc set dev nosuchtap0 metamap on
}

t_err_unprivileged_set() {
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	expect_error 1 '^Error: Operation not permitted\.$' \
		vc_unpriv set dev "$dev" busypoll-us 5
}

t_unprivileged_show() {
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	vc_unpriv -j show dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" 'sorted(k for k in ("owner_pid", "backend_ifindex", "backend_ifname") if k in d[0])')" = "[]" ] ||
		{ echo "private attributes shown:"; cat "$tmp/j"; return 1; }
	[ "$(jget "$tmp/j" 'd[0]["busypoll_us"]')" = "$(cat "$SYS/$dev/busypoll_us")" ] ||
		{ cat "$tmp/j"; return 1; }
	vc_unpriv show dev "$dev" | head -n1 | grep -qx "$dev: type net" || return 1
	expect_error 1 "^Cannot find device \"$tap\" \\(backend interfaces are only shown to CAP_NET_ADMIN\\)$" \
		vc_unpriv show dev "$tap"
}

monitor_started=
start_monitors() {
	local end=$((SECONDS + 60)) bp

	[ -n "$monitor_started" ] && return 0
	# Not through vc(): $! must be vhostctl itself, not a subshell.
	"$VHOSTCTL" monitor > "$tmp/mon.txt" 2> "$tmp/mon.err" &
	mon_pid=$!
	"$VHOSTCTL" -j monitor > "$tmp/mon.json" 2> "$tmp/monj.err" &
	monj_pid=$!
	pids+=("$mon_pid" "$monj_pid")
	monitor_started=1
	# Both are listening once both have seen a change event of ours.
	bp=$(cat "$SYS/$dev/busypoll_us")
	until grep -q "^\[change\] $dev: " "$tmp/mon.txt" &&
	      grep -q "\"event\":\"change\",\"id\":[0-9]*,\"name\":\"$dev\"" "$tmp/mon.json"; do
		[ "$SECONDS" -ge "$end" ] && { echo "monitors never saw a change"; return 1; }
		vc set dev "$dev" busypoll-us "$bp" || return 1
		sleep 0.3
	done
	mon_busypoll=$bp
}

t_monitor_sees_change() {
	start_monitors || return 1
	grep "^\[change\] $dev: " "$tmp/mon.txt" | tail -n1 |
		grep -q " busypoll-us $mon_busypoll " || { cat "$tmp/mon.txt"; return 1; }
}

t_monitor_sees_add_del() {
	local pid_b

	start_monitors || return 1
	start_holder b -n 0 || return 1
	dev_b=$hold_dev
	pid_b=$hold_pid
	[ "$dev_b" != "$dev" ] || { echo "two devices named $dev"; return 1; }
	wait_for 30 grep -q "^\[add\] $dev_b: type net " "$tmp/mon.txt" ||
		{ echo "no add event:"; cat "$tmp/mon.txt"; return 1; }
	kill -TERM "$pid_b"
	wait "$pid_b" || { echo "vhost_net_hold -n 0 failed"; cat "$tmp/b.err"; return 1; }
	wait_for 30 grep -q "^\[del\] $dev_b: type net" "$tmp/mon.txt" ||
		{ echo "no del event:"; cat "$tmp/mon.txt"; return 1; }
	cat "$tmp/mon.txt"
}

t_monitor_json_events() {
	[ -n "${dev_b:-}" ] || { echo "no second device"; return 1; }
	wait_for 30 grep -q "\"event\":\"del\",\"id\":[0-9]*,\"name\":\"$dev_b\"" "$tmp/mon.json" ||
		{ cat "$tmp/mon.json"; return 1; }
	cat "$tmp/mon.json"
	h monitor_json "$tmp/mon.json" "$dev" "$dev_b" "$mon_busypoll"
}

t_monitor_exits_on_sigterm() {
	local rc1 rc2

	[ -n "$monitor_started" ] || return 1
	kill -TERM "$mon_pid" "$monj_pid"
	wait "$mon_pid"
	rc1=$?
	wait "$monj_pid"
	rc2=$?
	cat "$tmp/mon.err" "$tmp/monj.err"
	[ "$rc1" = 0 ] && [ "$rc2" = 0 ] || { echo "monitor exit status $rc1 $rc2"; return 1; }
	[ ! -s "$tmp/mon.err" ] && [ ! -s "$tmp/monj.err" ]
}

t_device_gone_after_close() {
	[ -n "${dev_b:-}" ] || { echo "no second device"; return 1; }
	wait_for 10 [ ! -e "$SYS/$dev_b" ] || { echo "$SYS/$dev_b still there"; return 1; }
	expect_error 1 '^(Error: device not found\.|Cannot find device)' vc show dev "$dev_b"
}

t_dump_lists_every_device() {
	local want got

	vc -j show > "$tmp/j" || return 1
	got=$(jget "$tmp/j" '" ".join(sorted(x["name"] for x in d))')
	want=$(ls "$SYS" | sort | tr '\n' ' ' | sed 's/ $//')
	echo "netlink: $got; sysfs: $want"
	[ "$got" = "$want" ] && [[ " $got " == *" $dev "* ]]
}

tests=(
	device_in_sysfs
	card_command
	json_show_after_set
	sysfs_agrees_after_set
	traffic_after_set
	json_matches_text
	pretty_json_is_json_tool
	dev_by_tap_name
	set_by_tap_name
	holder_counts_equal_stats
	stats_equal_sysfs
	stats_text_equals_json
	queue_stats_equal_sysfs
	queue_sums_equal_device
	err_invalid_value
	err_duplicate
	err_unknown_keyword
	err_missing_value
	err_device_missing
	err_on_off
	err_cli_garbage
	err_range_busypoll
	err_range_zcopy_min_len
	err_all_or_none
	err_no_such_device
	err_no_such_backend
	err_unprivileged_set
	unprivileged_show
	monitor_sees_change
	monitor_sees_add_del
	monitor_json_events
	monitor_exits_on_sigterm
	device_gone_after_close
	dump_lists_every_device
)

echo "TAP version 13"
echo "1..${#tests[@]}"

all() {	# all VERDICT REASON: the same result for every test
	local i=0 t

	for t in "${tests[@]}"; do
		i=$((i + 1))
		echo "$1 $i $t # $2"
	done
}

why=
[ -n "$VHOSTCTL" ] || why="no vhostctl binary (make -C tools/vhostctl)"
[ -z "$why" ] && [ -z "$HOLD" ] && why="no vhost_net_hold (build the selftests)"
[ -z "$why" ] && [ -z "$PY" ] && why="no python3"
[ -z "$why" ] && [ ! -c /dev/vhost-net ] && why="no /dev/vhost-net"
[ -z "$why" ] && [ "$(id -u)" != 0 ] && why="must run as root"
if [ -n "$why" ]; then
	all ok "SKIP $why"
	exit $KSFT_SKIP
fi
if ! vc show > /dev/null 2> "$tmp/err"; then
	all ok "SKIP $(cat "$tmp/err")"
	exit $KSFT_SKIP
fi
echo "# vhostctl: $VHOSTCTL"
echo "# vhost_net_hold: $HOLD"

if ! start_holder a > "$tmp/setup" 2>&1; then
	sed 's/^/# /' "$tmp/setup"
	all "not ok" "setup failed"
	exit 1
fi
dev=$hold_dev tap=$hold_tap pid_a=$hold_pid
quiet_tap "$tap"
echo "# device $dev, backend $tap, owner $pid_a"

num=0 rc=0
for t in "${tests[@]}"; do
	num=$((num + 1))
	skip_reason=
	"t_$t" > "$tmp/diag" 2>&1
	r=$?
	if [ $r = 0 ]; then
		echo "ok $num $t"
	elif [ $r = $KSFT_SKIP ]; then
		echo "ok $num $t # SKIP $skip_reason"
	else
		sed 's/^/# /' "$tmp/diag"
		echo "not ok $num $t"
		rc=1
	fi
done

# The holder closes its device on SIGTERM and exits 0.
kill -TERM "$pid_a"
if ! wait "$pid_a"; then
	echo "# vhost_net_hold exited with an error:"
	sed 's/^/# /' "$tmp/a.err"
	rc=1
fi
exit $rc
