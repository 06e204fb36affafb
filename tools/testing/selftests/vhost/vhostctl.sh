#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vhostctl(8) against the live vhost admin plane, as root: the card's command
# on a device with traffic, show/stats/queue show against sysfs, against the
# traffic generator's own counts and against the kernel's YNL cli.py, text
# against JSON, a device named by its id and by its TAP, every error path
# (status, message, nothing changed), callers without CAP_NET_ADMIN,
# monitor seeing devices come, change and go (-t: stamped), rates over
# intervals of traffic the holder sends (stats -i), the OpenMetrics output
# through a real parser (tests/openmetrics-check.py, prometheus_client's),
# batches (-b) that stop at a failed line, and namespaces: -n NETNS
# selecting another namespace's devices, the host's vhost policy (refused in
# a namespace of the host's own; in a tenant's, a namespace owned by a user
# namespace of uid 65534, what the host grants is what its root may set, and
# nothing a refusal touches changes).  KTAP on stdout.
#
# Programs: $VHOSTCTL, else tools/vhostctl/vhostctl of the source tree this
# script is in, else vhostctl in $PATH; $VHOST_NET_HOLD, else vhost_net_hold
# in the current directory (the selftests' build directory) or next to this
# script; $YNL_CLI (tools/net/ynl/cli.py of a 6.12 tree), else the one of
# build/linux, with $YNL_SPEC and $YNL_SCHEMA; $OM_CHECK, else
# tools/vhostctl/tests/openmetrics-check.py of the source tree.
#
#   vhostctl.sh [-t TEST]...     run only these tests (the others: SKIP)
set -u

selected=" "
while getopts "t:" opt; do
	case $opt in
	t) selected+="$OPTARG " ;;
	*) echo "usage: $0 [-t TEST]..." >&2; exit 2 ;;
	esac
done

here=$(cd "$(dirname "$0")" && pwd)
. "$here/vhost_lib.sh"
top=$(cd "$here/../../../.." && pwd)
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
# The frame length of the main holder's traffic (vhost_net_hold -s), and
# its pause between batches of 32 (-i): enough for counters that move,
# little enough to leave the guest's CPUs to the commands under test
# (at the holder's default 1 ms, the suite took 10% longer).
HOLD_FRAME=64
HOLD_USEC=20000
YNL_CLI=${YNL_CLI:-$top/build/linux/tools/net/ynl/cli.py}
YNL_SPEC=${YNL_SPEC:-$top/Documentation/netlink/specs/vhost.yaml}
YNL_SCHEMA=${YNL_SCHEMA:-$(dirname "$YNL_CLI")/../../../Documentation/netlink/genetlink.yaml}
PY=$(command -v python3)
OM_CHECK=${OM_CHECK:-$top/tools/vhostctl/tests/openmetrics-check.py}
PROMTOOL=${PROMTOOL:-$top/build/tools/promtool}
SETPRIV=$(command -v setpriv)
SYS=/sys/class/vhost
NETNS_DIR=/var/run/netns
# The namespaces of the policy tests: one of the host's own (ip netns add),
# one of a tenant's (its user namespace's root is uid 65534)
HNS=vhctl-host-$$
TNS=vhctl-tenant-$$

tmp=$(mktemp -d)
pids=()
cleanup() {
	local p

	for p in "${pids[@]}"; do
		kill -TERM "$p" 2> /dev/null
	done
	wait 2> /dev/null
	[ -d "$tmp/tsys" ] && umount "$tmp/tsys" 2> /dev/null
	for p in "$HNS" "$TNS"; do
		[ -e "$NETNS_DIR/$p" ] && ip netns del "$p" 2> /dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

vc() { "$VHOSTCTL" "$@"; }
# vhostctl without CAP_NET_ADMIN (still root otherwise)
vc_unpriv() {
	"$SETPRIV" --inh-caps=-net_admin --bounding-set=-net_admin -- \
		"$VHOSTCTL" "$@"
}
# the kernel's own YNL client, JSON out
# (checked against its schema once: that is slow under TCG)
ynl_checked=
ynl() {
	local schema=(--no-schema)

	[ -z "$ynl_checked" ] && schema=(--schema "$YNL_SCHEMA") && ynl_checked=1
	"$PY" "$YNL_CLI" --spec "$YNL_SPEC" "${schema[@]}" --output-json "$@"
}

# Python helpers: JSON queries and the comparisons with sysfs and text.
cat > "$tmp/h.py" << 'EOF2'
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

def pairs(tokens, what):
    if len(tokens) % 2:
        raise SystemExit('%s: odd number of words: %s' % (what, tokens))
    return {tokens[i]: tokens[i + 1] for i in range(0, len(tokens), 2)}

def fail(msgs):
    for m in msgs:
        print(m)
    sys.exit(1 if msgs else 0)

# The text of "dev show": the keyword that sets admin-busypoll-us, on/off
TEXT_KEY = {'admin-busypoll-us': 'busypoll-us'}
ON_OFF = ('zerocopy',)
# The metadata mode: by name in JSON and text, by number in sysfs
METAMAP_NUM = {'off': '0', 'map': '1', 'batch': '2'}

def dev_text_value(k, v):
    if k in ON_OFF:
        return {0: 'off', 1: 'on'}[v]
    if k == 'features':
        return '0x%016x' % v
    return str(v)

def cmd_show_text(text_path, json_path):
    """'dev show' text against '-j dev show' of the same single device"""
    lines = open(text_path).read().split('\n')
    d = load(json_path)
    if len(d) != 1:
        fail(['%d devices in JSON' % len(d)])
    d = d[0]
    head = lines[0].split()
    msgs = []
    if head[0] != d['name'] + ':':
        msgs.append('header %r, name %r' % (head[0], d['name']))
    text = pairs(head[1:] + ' '.join(lines[1:]).split(), 'text')
    want = {TEXT_KEY.get(k, k): dev_text_value(k, v) for k, v in d.items()
            if k not in ('id', 'name')}
    if text != want:
        msgs.append('text %s\njson %s' % (text, want))
    fail(msgs)

def cmd_sysfs_dev(json_path, dump_path):
    """every attribute of '-j dev show' against its sysfs file"""
    d = load(json_path)[0]
    sysfs = sysdump(dump_path)
    msgs = []
    for k, v in d.items():
        if k in ('id', 'name'):
            continue
        f = k.replace('-', '_')
        if k == 'features':
            want = '0x%016x' % v
        elif k == 'metamap':
            want = METAMAP_NUM.get(v, 'unknown mode %r' % v)
        else:
            want = str(v)
        if sysfs.get(f) != want:
            msgs.append('%s: netlink %s, sysfs %s %r' % (k, want, f, sysfs.get(f)))
    for f in ('type', 'owner_pid', 'backend_ifindex', 'backend_ifname',
              'features', 'num_queues', 'admin_busypoll_us', 'zerocopy',
              'zcopy_min_len', 'metamap'):
        if f.replace('_', '-') not in d:
            msgs.append('%s in sysfs (%r), not in JSON' % (f, sysfs.get(f)))
    fail(msgs)

def cmd_stats_text(text_path, json_path):
    """'dev stats' text against '-j dev stats' (device scope)"""
    lines = open(text_path).read().split('\n')
    d = load(json_path)
    msgs = []
    if len(d) != 1:
        fail(['%d replies' % len(d)])
    d = d[0]
    if lines[0] != 'vhost%d:' % d['dev-id']:
        msgs.append('header %r, dev-id %d' % (lines[0], d['dev-id']))
    text = pairs(' '.join(lines[1:]).split(), 'text')
    want = {k: str(v) for k, v in d.items() if k != 'dev-id'}
    if text != want:
        msgs.append('text %s\njson %s' % (text, want))
    fail(msgs)

def cmd_queue_stats_text(text_path, json_path):
    """'stats scope queue' text against its JSON"""
    lines = open(text_path).read().rstrip('\n').split('\n')
    js = load(json_path)
    msgs = []
    if lines[0] != 'vhost%d:' % js[0]['dev-id']:
        msgs.append('header %r' % lines[0])
    blocks, cur = [], None
    for line in lines[1:]:
        if line.startswith('    queue '):
            w = line.split()
            cur = {'queue-index': int(w[1].rstrip(':')), 'queue-type': w[3],
                   'dev-id': js[0]['dev-id']}
            blocks.append(cur)
        elif line.startswith('        ') and cur is not None:
            cur.update({k: int(v) for k, v in
                        pairs(line.split(), 'counters').items()})
        else:
            msgs.append('line %r' % line)
    if blocks != js:
        msgs.append('text %s\njson %s' % (blocks, js))
    fail(msgs)

def rate_lines(path, n):
    """the JSON arrays of 'stats -j -i', one per interval"""
    lines = open(path).read().rstrip('\n').split('\n')
    if len(lines) != int(n):
        fail(['%d intervals printed, %s asked for' % (len(lines), n)])
    return [json.loads(line) for line in lines]

def cmd_rates(path, n, pkts0, pkts1, frame):
    """'stats -j -i 1 -c N' of one device sending frames of `frame` bytes
    all along, between two sysfs reads of tx_packets: each interval's TX
    rate positive, their sum at most what was sent in between (an interval
    lasts at least its second), bytes per packet those of the frames sent
    (not the sysfs window's average: tx_packets and tx_bytes are two reads,
    and frames sent between them skew it); the gauge an integer"""
    msgs, total = [], 0
    sent = int(pkts1) - int(pkts0)
    size = int(frame)
    for i, objs in enumerate(rate_lines(path, n)):
        if len(objs) != 1:
            msgs.append('interval %d: %d objects' % (i, len(objs)))
            continue
        r = objs[0]
        if not r.get('tx-packets', 0) > 0:
            msgs.append('interval %d: tx-packets %r' % (i, r.get('tx-packets')))
            continue
        total += r['tx-packets']
        # both rates rounded to 0.01/s: bytes per packet within 1%
        if abs(r.get('tx-bytes', -1) / r['tx-packets'] - size) > size * 0.01:
            msgs.append('interval %d: tx-bytes %r for %r packets of %r bytes'
                        % (i, r.get('tx-bytes'), r['tx-packets'], size))
        if not isinstance(r.get('zcopy-pending'), int) or r['zcopy-pending'] < 0:
            msgs.append('interval %d: zcopy-pending %r' % (i, r.get('zcopy-pending')))
    if total > sent + 0.01 * int(n):
        msgs.append('%s packets per second in all, %d sent in the meantime'
                    % (total, sent))
    fail(msgs)

def cmd_rates_idle(path, n, stats_path):
    """'stats -j -i 1 -c N scope queue' of a device that sends nothing: its
    queues each interval, TX at 0/s, zcopy-pending as 'stats -j' has it"""
    st = load(stats_path)
    msgs = []
    for i, objs in enumerate(rate_lines(path, n)):
        if [o['queue-index'] for o in objs] != [o['queue-index'] for o in st]:
            msgs.append('interval %d: queues %s' % (i, [o.get('queue-index') for o in objs]))
        for o, s in zip(objs, st):
            for k, v in o.items():
                if k == 'zcopy-pending' and v != s.get(k):
                    msgs.append('interval %d: zcopy-pending %r, stats %r' % (i, v, s.get(k)))
                elif k.startswith(('tx-', 'zcopy-')) and k != 'zcopy-pending' and v != 0:
                    msgs.append('interval %d queue %d: %s %r/s' % (i, o['queue-index'], k, v))
            if set(o) != set(s):
                msgs.append('interval %d: keys %s, stats %s' % (i, sorted(o), sorted(s)))
    fail(msgs)

def cmd_stats_sysfs(json_path, dump_path):
    """device counters against statistics/: every reported one equal, the
    others read 0"""
    d = load(json_path)
    if len(d) != 1:
        fail(['%d replies' % len(d)])
    st = {k.replace('-', '_'): v for k, v in d[0].items() if k != 'dev-id'}
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

QUEUE_ATTRS = ('type', 'num', 'owner_busypoll_us', 'busypoll_us',
               'metamap_valid', 'worker_pid', 'busypoll_source')

def queue_files(sysfs, i):
    p = 'queues/vq%d/' % i
    return {k[len(p):]: v for k, v in sysfs.items() if k.startswith(p)}

def cmd_queues_sysfs(json_path, dump_path, num_queues, admin_bp):
    """'-j queue show' against queues/vqN/, effective busy-poll time"""
    qs = load(json_path)
    sysfs = sysdump(dump_path)
    msgs = []
    if [q['index'] for q in qs] != list(range(int(num_queues))):
        msgs.append('queues %s, num-queues %s' % ([q['index'] for q in qs],
                                                 num_queues))
    for q in qs:
        files = queue_files(sysfs, q['index'])
        for k in QUEUE_ATTRS:
            v = q.get(k.replace('_', '-'))
            if str(v) != files.get(k):
                msgs.append('vq%d/%s: netlink %s sysfs %s' %
                            (q['index'], k, v, files.get(k)))
        if q['busypoll-us'] != max(q['owner-busypoll-us'], int(admin_bp)):
            msgs.append('vq%d: busypoll-us %d, owner %d, admin %s' %
                        (q['index'], q['busypoll-us'], q['owner-busypoll-us'],
                         admin_bp))
        if q['type'] != ('rx', 'tx')[q['index'] % 2]:
            msgs.append('vq%d: type %s' % (q['index'], q['type']))
    fail(msgs)

def cmd_queue_text(text_path, json_path):
    """'queue show' text against its JSON"""
    lines = open(text_path).read().rstrip('\n').split('\n')
    qs = load(json_path)
    msgs = []
    if len(lines) != len(qs):
        fail(['%d lines, %d queues' % (len(lines), len(qs))])
    for line, q in zip(lines, qs):
        w = line.split()
        if w[:3] != ['vhost%d' % q['dev-id'], 'queue', '%d:' % q['index']]:
            msgs.append('line %r' % line)
            continue
        text = pairs(w[3:], 'text')
        want = {k: str(v) for k, v in q.items() if k not in ('dev-id', 'index')}
        want['metamap-valid'] = {0: 'no', 1: 'yes'}[q['metamap-valid']]
        if text != want:
            msgs.append('text %s\njson %s' % (text, want))
    fail(msgs)

def cmd_queue_stats_sysfs(json_path, dump_path, num_queues):
    """'-j stats scope queue' against the counters in queues/vqN/"""
    js = load(json_path)
    sysfs = sysdump(dump_path)
    msgs = []
    if [s['queue-index'] for s in js] != list(range(int(num_queues))):
        msgs.append('queues %s' % [s['queue-index'] for s in js])
    for s in js:
        files = {k: v for k, v in queue_files(sysfs, s['queue-index']).items()
                 if k not in QUEUE_ATTRS}
        st = {k.replace('-', '_'): str(v) for k, v in s.items()
              if k not in ('dev-id', 'queue-index', 'queue-type')}
        if st != files:
            msgs.append('vq%d:\nnetlink %s\nsysfs   %s' % (s['queue-index'], st, files))
        zc = 'zcopy_sent' in st
        if zc != (s['queue-type'] == 'tx'):
            msgs.append('vq%d: zero-copy counters on a %s queue: %s' %
                        (s['queue-index'], s['queue-type'], zc))
    fail(msgs)

def cmd_queue_sums(dev_path, queue_path):
    d = load(dev_path)[0]
    qs = load(queue_path)
    msgs = []
    for k, v in d.items():
        if k == 'dev-id':
            continue
        s = sum(q.get(k, 0) for q in qs)
        if s != v:
            msgs.append('%s: device %d, sum of queues %d' % (k, v, s))
    fail(msgs)

def cmd_nested(show_path, stats_path, qstats_path, queues_path):
    """'-s -s dev show' holds what stats, stats scope queue and queue show say"""
    d = load(show_path)[0]
    st = load(stats_path)[0]
    qst = load(qstats_path)
    qs = load(queues_path)
    msgs = []
    if d.get('stats') != {k: v for k, v in st.items() if k != 'dev-id'}:
        msgs.append('stats %s\nwant %s' % (d.get('stats'), st))
    want = []
    for q, s in zip(qs, qst):
        q = dict(q)
        q['stats'] = {k: v for k, v in s.items()
                      if k not in ('dev-id', 'queue-index', 'queue-type')}
        want.append(q)
    if d.get('queues') != want:
        msgs.append('queues %s\nwant %s' % (d.get('queues'), want))
    fail(msgs)

def cmd_same(a, b):
    """two JSON listings hold the same objects (in the same order)"""
    x, y = load(a), load(b)
    if x != y:
        fail(['%s\n%s' % (x, y)])

def cmd_same_one(a, b):
    """a listing of one object, and that object"""
    x, y = load(a), load(b)
    if x != [y]:
        fail(['%s\n%s' % (x, y)])

def cmd_monitor_json(path, dev, dev_b, zcl):
    ev = []
    msgs = []
    for n, line in enumerate(open(path)):
        try:
            ev.append(json.loads(line))
        except ValueError as e:
            msgs.append('line %d: %s: %r' % (n + 1, e, line))
    names = [(e.get('event'), e.get('name')) for e in ev]
    for e in ev:
        if 'owner-pid' in e:
            msgs.append('owner-pid in a notification: %s' % e)
        if e.get('event') not in ('add', 'del', 'change'):
            msgs.append('event %r' % e.get('event'))
    ch = [e for e in ev if e.get('event') == 'change' and e.get('name') == dev]
    if not ch or ch[-1].get('zcopy-min-len') != int(zcl):
        msgs.append('no change event of %s with zcopy-min-len %s' % (dev, zcl))
    if ('add', dev_b) not in names or ('del', dev_b) not in names or \
       names.index(('add', dev_b)) > names.index(('del', dev_b)):
        msgs.append('no add then del of %s: %s' % (dev_b, names))
    fail(msgs)

globals()['cmd_' + sys.argv[1].replace('-', '_')](*sys.argv[2:])
EOF2
h() { "$PY" "$tmp/h.py" "$@"; }
# jget FILE FILTER: jq -c -r (jq starts much faster than python under TCG)
jget() { jq -c -r "$2" "$1"; }
# sysv PATH: a sysfs file under $SYS, read without a process
sysv() { local v; read -r v < "$SYS/$1" && echo "$v"; }

# "relpath=value" of the sysfs files of a device we compare: all of them,
# or (queue-attrs) those of its queues that are not counters
sysfs_dump() {	# sysfs_dump DEV [queue-attrs]
	local files='* statistics/* queues/vq*/*' f v

	[ "${2:-}" = queue-attrs ] &&
		files='queues/vq*/type queues/vq*/num queues/vq*/owner_busypoll_us
		       queues/vq*/busypoll_us queues/vq*/metamap_valid
		       queues/vq*/worker_pid queues/vq*/busypoll_source'
	(
		cd "$SYS/$1" || exit 1
		for f in $files; do
			[ -f "$f" ] && read -r v < "$f" && echo "$f=$v"
		done
	) | sort
}

# The tunables in sysfs, to show that a failed command changed nothing
# (read without a process: each fork costs about 0.1 s under TCG).
tunables() {
	local f v

	for f in admin_busypoll_us zerocopy zcopy_min_len metamap; do
		read -r v < "$SYS/$1/$f"
		printf '%s=%s ' "$f" "$v"
	done
}

# Run ARGS with a stable view: OUT holds its stdout taken while the sysfs
# files of DEV stayed the same, and DUMP those files.  Counters only move
# with traffic, but the stack may still send into the TAP now and then.
stable() {	# stable DEV[:queue-attrs] OUT DUMP -- ARGS...
	local dev=${1%:*} what= out=$2 dump=$3 try

	[[ $1 == *:* ]] && what=${1#*:}
	shift 4
	for try in 1 2 3 4 5 6 7 8 9 10; do
		sysfs_dump "$dev" $what > "$dump.1"
		"$@" > "$out" || return 1
		sysfs_dump "$dev" $what > "$dump"
		cmp -s "$dump.1" "$dump" && return 0
		sleep 0.2
	done
	echo "sysfs of $dev never stood still"
	return 1
}

# Two commands whose outputs must agree: retried while counters move.
agree() {	# agree CHECK A_OUT B_OUT -- A_CMD... -- B_CMD...
	local check=$1 a=$2 b=$3 try i

	shift 4
	for ((i = 1; i <= $#; i++)); do
		[ "${!i}" = -- ] && break
	done
	for try in 1 2 3 4 5; do
		"${@:1:i-1}" > "$a" || return 1
		"${@:i+1}" > "$b" || return 1
		"${@:1:i-1}" > "$a.2" || return 1
		cmp -s "$a" "$a.2" && break
		sleep 0.2
	done
	h "$check" "$a" "$b"
}

# ---- the device under test ------------------------------------------------

# hold_in: a command the holder runs under (nsenter into a namespace)
start_holder() {	# start_holder TAG ARGS...: sets hold_pid hold_dev hold_tap
	local tag=$1

	shift
	# shellcheck disable=SC2086
	${hold_in:-} "$HOLD" "$@" > "$tmp/$tag.out" 2> "$tmp/$tag.err" &
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
tx_above() { [ "$(sysv "$dev/statistics/tx_packets")" -gt "$1" ]; }

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

# ---- tests: show and set ----------------------------------------------------

t_device_in_sysfs() {
	[ -d "$SYS/$dev" ] || { echo "no $SYS/$dev"; return 1; }
	[ "$(sysv "$dev/type")" = net ] || { echo "type $(sysv "$dev/type")"; return 1; }
	vc show dev "$dev" > "$tmp/show" || return 1
	head -n1 "$tmp/show" | grep -q "^$dev: type net " || { cat "$tmp/show"; return 1; }
}

t_card_command() {
	# Start from other values, so that the card really changes something.
	if [ "$(sysv "$dev/admin_busypoll_us")" = 50 ] ||
	   [ "$(sysv "$dev/zerocopy")" = 1 ]; then
		vc set dev "$dev" busypoll-us 0 zerocopy off || return 1
	fi
	tx_before_card=$(sysv "$dev/statistics/tx_packets")
	# The card, word for word (with the live device's name).
	vhostctl_out=$(vc set dev "$dev" busypoll-us 50 zerocopy on 2>&1)
	local rc=$?
	[ $rc = 0 ] && [ -z "$vhostctl_out" ] ||
		{ echo "status $rc: $vhostctl_out"; return 1; }
	[ "$(sysv "$dev/admin_busypoll_us")" = 50 ] &&
	[ "$(sysv "$dev/zerocopy")" = 1 ] ||
		{ echo "sysfs: $(tunables "$dev")"; return 1; }
}

t_traffic_during_card() {
	# The card ran on a device with traffic: TX before it, and after.
	[ "${tx_before_card:-0}" -gt 0 ] || { echo "no traffic before the card"; return 1; }
	wait_for 30 tx_above "$(sysv "$dev/statistics/tx_packets")" ||
		{ echo "tx_packets stuck"; return 1; }
	echo "tx_packets $tx_before_card before the card, $(sysv "$dev/statistics/tx_packets") now"
}

t_json_show_after_set() {
	vc -j show dev "$dev" > "$tmp/j" || return 1
	"$PY" -m json.tool "$tmp/j" > /dev/null || { cat "$tmp/j"; return 1; }
	[ "$(jget "$tmp/j" 'length')" = 1 ] &&
	[ "$(jget "$tmp/j" '.[0].name')" = "$dev" ] &&
	[ "$(jget "$tmp/j" '.[0]."admin-busypoll-us"')" = 50 ] &&
	[ "$(jget "$tmp/j" '.[0].zerocopy')" = 1 ] &&
	[ "$(jget "$tmp/j" '.[0] | has("busypoll-us")')" = false ] || { cat "$tmp/j"; return 1; }
	vc show dev "$dev" | sed -n 3p | grep -q '^    busypoll-us 50 zerocopy on ' ||
		{ vc show dev "$dev"; return 1; }
}

t_sysfs_agrees_after_set() {
	local j=$tmp/j bad=0

	vc -j show dev "$dev" > "$j" || return 1
	sysfs_dump "$dev" > "$tmp/dump" || return 1
	h sysfs_dev "$j" "$tmp/dump" || bad=1
	[ "$(jget "$j" '.[0]."owner-pid"')" = "$pid_a" ] || { echo "owner-pid not $pid_a"; bad=1; }
	[ "$(jget "$j" '.[0]."backend-ifname"')" = "$tap" ] || { echo "backend not $tap"; bad=1; }
	[ "$(jget "$j" '.[0]."backend-ifindex"')" = "$(sysv "../net/$tap/ifindex")" ] ||
		{ echo "backend-ifindex"; bad=1; }
	[ "$(jget "$j" '.[0] | has("backend-netnsid")')" = false ] ||
		{ echo "backend-netnsid for a TAP in the same namespace"; bad=1; }
	[ "$(jget "$j" '.[0].id')" = "${dev#vhost}" ] || { echo "id of $dev"; bad=1; }
	return $bad
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

ynl_ok() {	# the kernel tree's YNL client: make check always has it
	[ -f "$YNL_CLI" ] && [ -f "$YNL_SCHEMA" ] ||
		{ echo "no $YNL_CLI or $YNL_SCHEMA"; return 1; }
}

t_show_equals_ynl_cli() {
	ynl_ok || return 1
	agree same "$tmp/a" "$tmp/b" -- vc -j show -- ynl --dump dev-get || return 1
	# cli.py prints a do's reply as an object, vhostctl a list of one
	agree same_one "$tmp/a" "$tmp/b" -- vc -j show dev "$dev" -- \
		ynl --do dev-get --json "{\"name\": \"$dev\"}"
}

t_dev_by_tap_name() {
	vc -j show dev "$tap" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[].name]')" = "[\"$dev\"]" ] || { cat "$tmp/j"; return 1; }
	vc show "$tap" > "$tmp/t" || return 1
	head -n1 "$tmp/t" | grep -q "^$dev: " || { cat "$tmp/t"; return 1; }
	vc stats "$tap" > "$tmp/t" || return 1
	head -n1 "$tmp/t" | grep -qx "$dev:" || { cat "$tmp/t"; return 1; }
	vc -j queue show "$tap" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[]."dev-id"] | unique')" = "[${dev#vhost}]" ] ||
		{ cat "$tmp/j"; return 1; }
}

t_dev_by_id() {
	local id=${dev#vhost}

	vc -j show dev "$id" > "$tmp/a" && vc -j show "$dev" > "$tmp/b" || return 1
	h same "$tmp/a" "$tmp/b" || return 1
	vc -j queue show "$id" index 0 > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[] | [."dev-id", .index]]')" = "[[$id,0]]" ] ||
		{ cat "$tmp/j"; return 1; }
}

t_set_by_tap_name() {
	local old

	old=$(sysv "$dev/zcopy_min_len")
	vc set dev "$tap" zcopy-min-len 300 || return 1
	[ "$(sysv "$dev/zcopy_min_len")" = 300 ] || { echo "zcopy_min_len not 300"; return 1; }
	vc set "$tap" zcopy-min-len "$old" || return 1
	[ "$(sysv "$dev/zcopy_min_len")" = "$old" ]
}

# ---- tests: a virtual machine's NIC, by its TAP and by label ---------------

# A multiqueue NIC as QEMU sets it up: PAIRS devices on the multiqueue TAP
# named TAP, owned by one holder.  Sets mq_pid mq_devs (space-separated).
start_mq() {	# start_mq TAG TAP PAIRS
	start_holder "$1" -m "$2" -q "$3" || return 1
	mq_pid=$hold_pid
	mq_devs=${hold_dev//,/ }
	[ "$hold_tap" = "$2" ] && [ "$(echo "$mq_devs" | wc -w)" = "$3" ] ||
		{ echo "holder printed: $(cat "$tmp/$1.out")"; return 1; }
}

stop_mq() {
	kill -TERM "$mq_pid" 2> /dev/null
	wait "$mq_pid" 2> /dev/null
	return 0
}

# every device of mq_devs has sysfs FILE = VALUE
mq_all() {	# mq_all FILE VALUE
	local d

	for d in $mq_devs; do
		[ "$(sysv "$d/$1")" = "$2" ] ||
			{ echo "$d: $1 is '$(sysv "$d/$1")', want '$2'"; return 1; }
	done
}

# One set by the TAP's name sets each queue pair's device, all or none;
# the label set with it selects them, as does their owner; show, stats and
# queue show by TAP list them all, each queue with its worker, a thread of
# the owner.
t_mq_tap_set_by_tap_label_owner() {
	local mqtap=vhmq$$ n w sel other r=0

	start_mq mq "$mqtap" 4 || return 1
	other=$(sysv "$dev/zcopy_min_len")
	vc set dev "$mqtap" busypoll-us 33 label vm-mq || { stop_mq; return 1; }
	mq_all admin_busypoll_us 33 && mq_all label vm-mq || r=1
	# a refused value: none changed
	expect_state=tunables expect_error 1 '^Error: ' \
		vc set dev "$mqtap" busypoll-us 44 zcopy-min-len 10 || r=1
	mq_all admin_busypoll_us 33 || r=1
	vc set label vm-mq zcopy-min-len 1000 || r=1
	mq_all zcopy_min_len 1000 || r=1
	[ "$(sysv "$dev/zcopy_min_len")" = "$other" ] ||
		{ echo "$dev changed by another VM's label"; r=1; }
	vc set owner "$mq_pid" zcopy-min-len 1200 || r=1
	mq_all zcopy_min_len 1200 || r=1
	for sel in "dev $mqtap" "label vm-mq" "owner $mq_pid"; do
		# shellcheck disable=SC2086
		n=$(vc -j show $sel | jq length)
		[ "$n" = 4 ] || { echo "show $sel: $n devices"; r=1; }
		# shellcheck disable=SC2086
		n=$(vc -j stats $sel | jq length)
		[ "$n" = 4 ] || { echo "stats $sel: $n replies"; r=1; }
	done
	vc show dev "$mqtap" | grep -c ' label vm-mq$' | grep -qx 4 ||
		{ vc show dev "$mqtap"; r=1; }
	vc -j queue show dev "$mqtap" > "$tmp/mq-queues" || r=1
	n=$(jq length < "$tmp/mq-queues")
	[ "$n" = 8 ] || { echo "queue show: $n queues"; r=1; }
	for w in $(jq '.[]["worker-pid"]' < "$tmp/mq-queues"); do
		[ -e "/proc/$mq_pid/task/$w" ] ||
			{ echo "worker $w is no thread of $mq_pid"; r=1; }
	done
	n=$(jq '[.[]["worker-pid"]] | unique | length' < "$tmp/mq-queues")
	[ "$n" = 4 ] || { echo "$n workers for 4 devices"; r=1; }
	# "" takes the label away
	vc set dev "$mqtap" label "" || r=1
	mq_all label "" || r=1
	expect_error 1 '^Error: device not found\.$' vc show label vm-mq || r=1
	stop_mq
	return "$r"
}

# The shipped udev rule, run by a real systemd-udevd (the VMM's uid made
# root's, the holders'): the devices of a TAP it matches get its setting
# within a second of SET_BACKEND, another device keeps the default; so
# does the device of an unprivileged user (uid 65534) of the host whose
# TAP, of a matching name, is in a namespace of its own (vhost_net_hold
# -u), whose uevents say so.
t_udev_rule_applies() {
	local udevd rules=/run/udev/rules.d pfx=vhud$$ t0 ok n default r=0
	local rule=$top/tools/vhostctl/examples/60-vhost-tuning.rules

	udevd=$(command -v systemd-udevd || echo /lib/systemd/systemd-udevd)
	[ -x "$udevd" ] || { echo "no systemd-udevd"; return 1; }
	[ -f "$rule" ] || { echo "no $rule"; return 1; }
	mkdir -p "$rules" /run/udev || return 1
	sed -e "s|web01-\*|$pfx-*|" -e "s|/usr/sbin/vhostctl|$VHOSTCTL|" \
		-e 's|ENV{VHOST_OWNER_UID}=="64055"|ENV{VHOST_OWNER_UID}=="0"|' \
		"$rule" > "$rules/60-vhost-tuning-test.rules"
	grep -q 'VHOST_OWNER_UID}=="0"' "$rules/60-vhost-tuning-test.rules" ||
		{ echo "the rule matches no owner uid"; return 1; }
	"$udevd" > "$tmp/udevd.log" 2>&1 &
	udevd_pid=$!
	pids+=("$udevd_pid")
	wait_for 30 udevadm control --ping ||
		{ echo "udevd did not start:"; cat "$tmp/udevd.log"; r=1; }
	default=$(cat /sys/module/vhost_admin/parameters/busypoll_us)
	[ "$default" != 50 ] || { echo "the default is the rule's value"; r=1; }
	t0=$(date +%s.%N)
	[ "$r" = 0 ] && start_mq ud "$pfx-n0" 2 || r=1
	if [ "$r" = 0 ]; then
		# the holder printed after SET_BACKEND: one second from then
		ok=
		for n in $(seq 20); do
			mq_all admin_busypoll_us 50 > /dev/null && ok=1 && break
			sleep 0.05
		done
		echo "rule applied $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s after the holder started"
		[ -n "$ok" ] || { mq_all admin_busypoll_us 50; r=1; }
		stop_mq
		# an unprivileged user's device on its own TAP of that name
		if start_holder us -m "$pfx-x" -u; then
			udevadm settle -t 10
			sleep 1
			[ "$(sysv "$hold_dev/admin_busypoll_us")" = "$default" ] ||
				{ echo "$hold_dev (uid 65534, TAP $hold_tap in its namespace): busypoll $(sysv "$hold_dev/admin_busypoll_us")"; r=1; }
			udevadm info "/sys/class/vhost/$hold_dev" > "$tmp/us.info"
			grep -qx 'E: VHOST_BACKEND_NETNS=other' "$tmp/us.info" &&
				grep -qx 'E: VHOST_OWNER_UID=65534' "$tmp/us.info" ||
				{ echo "udev's properties of $hold_dev:"; cat "$tmp/us.info"; r=1; }
			kill -TERM "$hold_pid"
			wait "$hold_pid"
		else
			r=1
		fi
		# a device of a TAP the rule does not match, while udevd runs
		if start_holder nm -n 0; then
			udevadm settle -t 10
			sleep 1
			[ "$(sysv "$hold_dev/admin_busypoll_us")" = "$default" ] ||
				{ echo "$hold_dev (backend $hold_tap): busypoll $(sysv "$hold_dev/admin_busypoll_us")"; r=1; }
			kill -TERM "$hold_pid"
			wait "$hold_pid"
		else
			r=1
		fi
	fi
	kill -TERM "$udevd_pid"
	wait "$udevd_pid" 2> /dev/null
	rm -f "$rules/60-vhost-tuning-test.rules"
	return "$r"
}

# The shipped libvirt hook, against a domain XML.  Without libvirt's pid
# file, at "started" it labels the devices of the domain's TAPs (not of its
# disks) with the domain's name and applies the domain's settings file to
# them; at "stopped", nothing.  With the pid file it selects the devices
# QEMU owns (the order QEMU runs in, devices owned before any backend, is
# check-migration's); "--device vhostN", as the udev rule runs it for a
# hot-plugged NIC, does the same for that one device of a domain's QEMU,
# and nothing for a device whose owner is no domain's.
t_libvirt_hook() {
	local hook=$top/tools/vhostctl/examples/libvirt-qemu-hook.py
	local hktap=vhhk$$ other utf8 d r=0
	local env=(VHOSTCTL="$VHOSTCTL" VHOSTCTL_DOMAINS="$tmp/domains"
		   VHOSTCTL_LIBVIRT_RUN="$tmp/libvirt-run")

	[ -x "$hook" ] || { echo "no $hook"; return 1; }
	start_mq hk "$hktap" 2 || return 1
	other=$(sysv "$dev/label")
	mkdir -p "$tmp/domains" "$tmp/libvirt-run"
	printf '# web-hook tuning\nbusypoll-us 42 zcopy-min-len 2048\n\nmetamap batch # read-ahead\n' \
		> "$tmp/domains/web-hook"
	cat > "$tmp/domain.xml" <<-EOF
	<domain type='kvm'>
	  <name>web-hook</name>
	  <devices>
	    <disk type='file' device='disk'><target dev='vda' bus='virtio'/></disk>
	    <interface type='ethernet'>
	      <target dev='$hktap'/>
	      <model type='virtio'/>
	      <driver name='vhost' queues='2'/>
	    </interface>
	  </devices>
	</domain>
	EOF
	env "${env[@]}" "$hook" web-hook stopped end - < "$tmp/domain.xml" || r=1
	mq_all label "" || r=1
	env "${env[@]}" "$hook" web-hook started begin - \
		< "$tmp/domain.xml" 2> "$tmp/hook.err" || r=1
	[ ! -s "$tmp/hook.err" ] || { cat "$tmp/hook.err"; r=1; }
	mq_all label web-hook && mq_all admin_busypoll_us 42 &&
		mq_all zcopy_min_len 2048 && mq_all metamap 2 || r=1
	[ "$(sysv "$dev/label")" = "$other" ] || { echo "$dev labelled"; r=1; }
	# a name that cannot be a label (libvirt allows UTF-8): the settings
	# reach the TAPs' devices one by one, the label stays
	utf8=$(printf 'w\303\251b-hook')
	printf 'busypoll-us 43\n' > "$tmp/domains/$utf8"
	env "${env[@]}" "$hook" "$utf8" started begin - \
		< "$tmp/domain.xml" 2> "$tmp/hook.err" || r=1
	[ ! -s "$tmp/hook.err" ] || { cat "$tmp/hook.err"; r=1; }
	mq_all label web-hook && mq_all admin_busypoll_us 43 || r=1
	# libvirt's pid file names the owner: its devices, by owner, not TAP
	vc set dev "$hktap" label "" busypoll-us 0 || r=1
	echo "$mq_pid" > "$tmp/libvirt-run/web-hook.pid"
	printf 'busypoll-us 44\n' > "$tmp/domains/web-hook"
	env "${env[@]}" "$hook" web-hook started begin - < /dev/null \
		2> "$tmp/hook.err" || r=1
	[ ! -s "$tmp/hook.err" ] || { cat "$tmp/hook.err"; r=1; }
	mq_all label web-hook && mq_all admin_busypoll_us 44 || r=1
	# udev's --device: one device of the domain's QEMU, not its sibling;
	# a device of no domain (the main holder's) is left alone
	vc set dev "$hktap" label "" busypoll-us 0 || r=1
	d=${mq_devs%% *}
	env "${env[@]}" "$hook" --device "$d" 2> "$tmp/hook.err" || r=1
	env "${env[@]}" "$hook" --device "$dev" 2>> "$tmp/hook.err" || r=1
	[ ! -s "$tmp/hook.err" ] || { cat "$tmp/hook.err"; r=1; }
	[ "$(sysv "$d/label")" = web-hook ] &&
		[ "$(sysv "$d/admin_busypoll_us")" = 44 ] ||
		{ echo "$d: label '$(sysv "$d/label")', busy poll $(sysv "$d/admin_busypoll_us")"; r=1; }
	[ "$(sysv "${mq_devs##* }/label")" = "" ] || { echo "${mq_devs##* } labelled"; r=1; }
	[ "$(sysv "$dev/label")" = "$other" ] || { echo "$dev labelled"; r=1; }
	stop_mq
	return "$r"
}

# status on the test kernel, where the feature is built in: active, exit
# 0; its device count is what show lists, split by mode as sysfs has
# them; the defaults and the policy are show's; JSON parses; OpenMetrics
# through prometheus_client's parser, as a scraper reads it.
t_status() {
	local out n modes st

	out=$(vc status) || { echo "exit $?: $out"; return 1; }
	[ "$(echo "$out" | head -n 1)" = "state active: built into the kernel" ] ||
		{ echo "$out"; return 1; }
	echo "$out" | grep -qx "module vhost_net built-in" || { echo "$out"; return 1; }
	[ "$(echo "$out" | sed -n 's/^metamap-default //p')" = \
	  "$(cat /sys/module/vhost_metamap/parameters/mode)" ] ||
		{ echo "$out"; return 1; }
	[ "$(echo "$out" | sed -n 's/^defaults //p')" = "$(vc show defaults)" ] &&
		[ "$(echo "$out" | sed -n 's/^policy //p')" = "$(vc show policy)" ] ||
		{ echo "$out"; vc show defaults; vc show policy; return 1; }
	n=$(vc -j show | jq length)
	modes=$(for d in "$SYS"/vhost*; do cat "$d/metamap"; done | sort | uniq -c |
		awk '{ printf "%s:%s ", $2, $1 }')
	st=$(vc -j status) || { echo "exit $?: $st"; return 1; }
	echo "$st" | jq -e --argjson n "$n" \
		'.state == "active" and .devices == $n and
		 ([.["devices-by-metamap"][]] | add) == $n and
		 (.defaults | type) == "object" and (.policy | type) == "object" and
		 ([.modules[] | select(.name == "vhost_admin")][0].loaded == "built-in")' \
		> /dev/null || { echo "$st (show lists $n; sysfs modes $modes)"; return 1; }
	vc -o openmetrics status > "$tmp/status.om" || return 1
	"$PY" - "$tmp/status.om" "$n" <<-'EOF' || { cat "$tmp/status.om"; return 1; }
	import sys
	from prometheus_client.openmetrics.parser import text_string_to_metric_families
	fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
	info = fams["vhost_status"]
	assert info.type == "info", info.type
	assert info.samples[0].labels["state"] == "active", info.samples
	total = sum(s.value for s in fams["vhost_devices"].samples)
	assert total == int(sys.argv[2]), (total, sys.argv[2])
	EOF
}

t_set_by_id() {
	vc set "${dev#vhost}" metamap off || return 1
	[ "$(sysv "$dev/metamap")" = 0 ] || { echo "metamap not 0"; return 1; }
	vc set dev "${dev#vhost}" metamap batch || return 1
	[ "$(sysv "$dev/metamap")" = 2 ] || { echo "metamap not 2"; return 1; }
	vc set dev "${dev#vhost}" metamap on || return 1
	[ "$(sysv "$dev/metamap")" = 1 ] || { echo "metamap not 1"; return 1; }
}

# -b: the lines before a failed one run, it is named, the ones after do not
t_batch() {
	local zcl rc

	zcl=$(sysv "$dev/zcopy_min_len")
	printf '# a batch\nset dev %s zcopy-min-len 512\nshow dev %s\n\nstats dev %s -i 1 -c 1\nset dev %s metamap maybe\nset dev %s zcopy-min-len 1024\n' \
		"$dev" "$tap" "$dev" "$dev" "$dev" > "$tmp/batch"
	vc -b "$tmp/batch" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	echo "status $rc"
	cat "$tmp/out" "$tmp/err"
	[ "$rc" = 2 ] || return 1
	[ "$(cat "$tmp/err")" = "Invalid \"metamap\" value \"maybe\", expected \"off\", \"batch\" or \"map\"
Command failed $tmp/batch:6" ] || return 1
	[ "$(sysv "$dev/zcopy_min_len")" = 512 ] ||
		{ echo "zcopy_min_len $(sysv "$dev/zcopy_min_len")"; return 1; }
	grep -q "^$dev: type net " "$tmp/out" && [ "$(grep -c "^$dev:\$" "$tmp/out")" = 1 ] ||
		return 1
	# the kernel refuses line 1: status 1; -f goes on with line 2; stdin
	printf 'set dev %s zcopy-min-len 100\nset dev %s zcopy-min-len %s\n' \
		"$dev" "$dev" "$zcl" | vc -f -b - > "$tmp/out" 2> "$tmp/err"
	rc=$?
	echo "status $rc"
	cat "$tmp/out" "$tmp/err"
	[ "$rc" = 1 ] && [ "$(sed -n 2p "$tmp/err")" = "Command failed -:1" ] &&
	grep -q '^Error: ' "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 2 ] &&
	[ "$(sysv "$dev/zcopy_min_len")" = "$zcl" ]
}

# ---- tests: queues ----------------------------------------------------------

# The admin's time above the owner's (0): a queue's two busy-poll times differ.
admin_above_owner() {
	[ "$(sysv "$dev/admin_busypoll_us")" = 50 ] || vc set dev "$dev" busypoll-us 50
}

t_queue_show_equals_sysfs() {
	admin_above_owner || return 1
	# with traffic: the queues' counters move, their attributes do not
	stable "$dev:queue-attrs" "$tmp/j" "$tmp/dump" -- \
		vc -j queue show dev "$dev" || return 1
	h queues_sysfs "$tmp/j" "$tmp/dump" "$(sysv "$dev/num_queues")" \
		"$(sysv "$dev/admin_busypoll_us")"
}

t_queue_busypoll_follows_admin() {
	# effective = max(owner, admin): the admin's 50, then the owner's 0
	vc set dev "$dev" busypoll-us 70 || return 1
	vc -j queue show dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[]."busypoll-us"]')" = "[70,70]" ] &&
	[ "$(jget "$tmp/j" '[.[]."owner-busypoll-us"]')" = "[0,0]" ] ||
		{ cat "$tmp/j"; return 1; }
	[ "$(sysv "$dev/queues/vq1/busypoll_us")" = 70 ] || return 1
	vc set dev "$dev" busypoll-us 50 || return 1
	vc -j queue show dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[]."busypoll-us"]')" = "[50,50]" ] ||
		{ cat "$tmp/j"; return 1; }
}

t_queue_text_equals_json() {
	admin_above_owner || return 1
	vc queue show dev "$dev" > "$tmp/t" && vc -j queue show dev "$dev" > "$tmp/j" ||
		return 1
	cat "$tmp/t"
	h queue_text "$tmp/t" "$tmp/j"
}

t_queue_show_index() {
	vc -j queue show dev "$dev" index 1 > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[] | [.index, .type]]')" = '[[1,"tx"]]' ] ||
		{ cat "$tmp/j"; return 1; }
	vc queue show dev "$dev" index 0 > "$tmp/t" || return 1
	[ "$(wc -l < "$tmp/t")" = 1 ] && grep -q "^$dev queue 0: type rx num " "$tmp/t" ||
		{ cat "$tmp/t"; return 1; }
}

t_queue_show_all() {
	vc -j queue show > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" "[.[] | select(.\"dev-id\" == ${dev#vhost})] | length")" = \
	  "$(sysv "$dev/num_queues")" ] || { cat "$tmp/j"; return 1; }
}

t_queue_equals_ynl_cli() {
	ynl_ok || return 1
	admin_above_owner || return 1
	agree same "$tmp/a" "$tmp/b" -- vc -j queue show dev "$dev" -- \
		ynl --dump queue-get --json "{\"dev-id\": ${dev#vhost}}"
}

# ---- tests: rates (traffic running) -------------------------------------------

t_stats_interval_rates() {
	local p0 p1 b0 b1

	[ -z "$traffic_stopped" ] || { echo "the traffic stopped before"; return 1; }
	p0=$(sysv "$dev/statistics/tx_packets")
	vc -j stats dev "$dev" -i 1 -c 2 > "$tmp/r" || return 1
	p1=$(sysv "$dev/statistics/tx_packets")
	cat "$tmp/r"
	echo "sysfs: tx_packets $p0 -> $p1; frames of $HOLD_FRAME bytes"
	h rates "$tmp/r" 2 "$p0" "$p1" "$HOLD_FRAME" || return 1
	# the text: the same blocks as stats, twice
	vc stats dev "$dev" -i 1 -c 2 > "$tmp/t" || return 1
	cat "$tmp/t"
	[ "$(grep -c "^$dev:\$" "$tmp/t")" = 2 ] &&
	grep -Eq '^    rx-packets [0-9.]+ rx-bytes [0-9.]+ tx-packets [0-9.]+ ' "$tmp/t"
}

# ---- tests: statistics (traffic stopped) ------------------------------------

t_holder_counts_equal_stats() {
	stop_traffic || return 1
	echo "vhost_net_hold: tx_packets $held_pkts tx_bytes $held_bytes"
	[ "$held_pkts" -gt 0 ] || { echo "nothing sent"; return 1; }
	[ "$(sysv "$dev/statistics/tx_packets")" = "$held_pkts" ] &&
	[ "$(sysv "$dev/statistics/tx_bytes")" = "$held_bytes" ] ||
		{ echo "sysfs: tx_packets $(sysv "$dev/statistics/tx_packets") tx_bytes $(sysv "$dev/statistics/tx_bytes")"; return 1; }
	vc -j stats dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '.[0]."tx-packets"')" = "$held_pkts" ] &&
	[ "$(jget "$tmp/j" '.[0]."tx-bytes"')" = "$held_bytes" ] || { cat "$tmp/j"; return 1; }
	vc -j stats dev "$dev" scope queue > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[] | select(."queue-type" == "tx") | ."tx-packets"]')" = \
	  "[$held_pkts]" ] || { cat "$tmp/j"; return 1; }
}

t_stats_equal_sysfs() {
	stop_traffic || return 1
	stable "$dev" "$tmp/j" "$tmp/dump" -- vc -j stats dev "$dev" || return 1
	"$PY" -m json.tool "$tmp/j" > /dev/null || return 1
	h stats_sysfs "$tmp/j" "$tmp/dump"
}

t_stats_text_equals_json() {
	stop_traffic || return 1
	agree stats_text "$tmp/t" "$tmp/j" -- vc stats dev "$dev" -- \
		vc -j stats dev "$dev" || return 1
	cat "$tmp/t"
	agree queue_stats_text "$tmp/t" "$tmp/j" -- vc stats dev "$dev" scope queue -- \
		vc -j stats dev "$dev" scope queue || return 1
	cat "$tmp/t"
	# -s -s is scope queue
	vc -s -s stats dev "$dev" > "$tmp/t2" || return 1
	cmp "$tmp/t" "$tmp/t2"
}

t_queue_stats_equal_sysfs() {
	stop_traffic || return 1
	stable "$dev" "$tmp/j" "$tmp/dump" -- vc -j stats dev "$dev" scope queue || return 1
	h queue_stats_sysfs "$tmp/j" "$tmp/dump" "$(sysv "$dev/num_queues")"
}

t_queue_sums_equal_device() {
	stop_traffic || return 1
	agree queue_sums "$tmp/a" "$tmp/b" -- vc -j stats dev "$dev" -- \
		vc -j stats dev "$dev" scope queue
}

t_show_s_s_holds_everything() {
	stop_traffic || return 1
	stable "$dev" "$tmp/s" "$tmp/dump" -- vc -j -s -s show dev "$dev" || return 1
	vc -j stats dev "$dev" > "$tmp/st" && vc -j stats dev "$dev" scope queue > "$tmp/qst" &&
		vc -j queue show dev "$dev" > "$tmp/qs" || return 1
	h nested "$tmp/s" "$tmp/st" "$tmp/qst" "$tmp/qs" || return 1
	vc -s -s show dev "$dev" > "$tmp/t" || return 1
	grep -q '^    statistics:$' "$tmp/t" && grep -q "^    queue 1: type tx " "$tmp/t" ||
		{ cat "$tmp/t"; return 1; }
}

t_stats_equal_ynl_cli() {
	ynl_ok || return 1
	stop_traffic || return 1
	agree same "$tmp/a" "$tmp/b" -- vc -j stats -- ynl --dump stats-get || return 1
	agree same "$tmp/a" "$tmp/b" -- vc -j stats scope queue -- \
		ynl --dump stats-get --json '{"scope": ["queue"]}'
}

t_stats_interval_idle() {
	stop_traffic || return 1
	vc -j stats dev "$dev" scope queue > "$tmp/j" || return 1
	vc -j stats dev "$dev" scope queue -i 1 -c 2 > "$tmp/r" || return 1
	cat "$tmp/r"
	h rates_idle "$tmp/r" 2 "$tmp/j"
}

# stats -i without -c: until SIGINT, then status 0 and nothing on stderr
t_stats_interval_sigint() {
	local pid rc

	"$VHOSTCTL" stats dev "$dev" -i 1 > "$tmp/i.out" 2> "$tmp/i.err" &
	pid=$!
	pids+=("$pid")
	wait_for 30 grep -q "^$dev:\$" "$tmp/i.out" ||
		{ echo "no interval printed"; kill -KILL "$pid"; return 1; }
	kill -INT "$pid"
	wait "$pid"
	rc=$?
	cat "$tmp/i.out" "$tmp/i.err"
	[ "$rc" = 0 ] && [ ! -s "$tmp/i.err" ] || { echo "status $rc"; return 1; }
}

# The OpenMetrics output parsed by prometheus_client's parser, its values
# those of -j, its labels the device's (retried while counters move).
t_stats_openmetrics() {
	local scope try

	stop_traffic || return 1
	vc -j show dev "$dev" > "$tmp/d" || return 1
	for scope in device queue; do
		for try in 1 2 3 4 5; do
			vc -o openmetrics stats dev "$dev" scope "$scope" > "$tmp/om" &&
			vc -j stats dev "$dev" scope "$scope" > "$tmp/j" || return 1
			"$OM_CHECK" --stats-json "$tmp/j" --devices-json "$tmp/d" \
				"$tmp/om" > "$tmp/omc" 2>&1 && break
			sleep 0.2
		done
		cat "$tmp/omc"
		[ "$try" != 5 ] || { cat "$tmp/om"; return 1; }
	done
	# named by backend and queue pair (and label), not by vhostN
	grep -Eq "^vhost_tx_packets_total\{(label=\"[^\"]*\",)?backend_ifname=\"$tap\",queue_pair=\"0\",queue_index=\"1\",queue_type=\"tx\"\} " \
		"$tmp/om" || { cat "$tmp/om"; return 1; }
	# every device
	vc -j show > "$tmp/d" && vc stats -o openmetrics > "$tmp/om" &&
		"$OM_CHECK" --devices-json "$tmp/d" "$tmp/om" &&
		[ "$(tail -n1 "$tmp/om")" = "# EOF" ] || return 1
	# as the textfile timer writes it for node_exporter: what promtool
	# takes without a problem, status and counters
	[ -x "$PROMTOOL" ] || { echo "no promtool at $PROMTOOL (scripts/install-deps)"; return 1; }
	{ vc -o prometheus status && vc -o prometheus stats; } > "$tmp/prom" || return 1
	"$PROMTOOL" check metrics < "$tmp/prom" || { cat "$tmp/prom"; return 1; }
	grep -q '^vhost_status_info{state="active",' "$tmp/prom" &&
		grep -q '^# TYPE vhost_tx_packets_total counter$' "$tmp/prom" &&
		! grep -q '^# EOF' "$tmp/prom" || { cat "$tmp/prom"; return 1; }
}

# A VM restarted (its devices closed, new ones opened on the TAP of the
# same name, labelled again): new vhostN names, the same OpenMetrics
# series, so a Prometheus server keeps one series per queue, not one per
# boot of the VM.
om_series() {	# the series of the TAP's devices, without their values
	vc -o openmetrics stats dev "$1" scope queue | grep -v '^#' |
		sed 's/} .*/}/' | sort
}

t_metrics_stable_across_recreation() {
	local rctap=vhrc$$ names1 names2 other r=0

	start_mq rc1 "$rctap" 2 || return 1
	vc set dev "$rctap" label vm-rc || { stop_mq; return 1; }
	names1=$(vc -j show dev "$rctap" | jq -c '[.[].name]')
	om_series "$rctap" > "$tmp/series1" || r=1
	stop_mq
	# another device opened meanwhile takes an id the next ones skip
	start_holder rcx -n 0 || return 1
	other=$hold_pid
	start_mq rc2 "$rctap" 2 || return 1
	vc set dev "$rctap" label vm-rc || r=1
	names2=$(vc -j show dev "$rctap" | jq -c '[.[].name]')
	om_series "$rctap" > "$tmp/series2" || r=1
	stop_mq
	kill -TERM "$other"
	wait "$other"
	echo "before: $names1, after: $names2"
	[ "$names1" != "$names2" ] || { echo "the same device names"; r=1; }
	[ "$(wc -l < "$tmp/series1")" -ge 8 ] || { cat "$tmp/series1"; r=1; }
	! grep -Eq '[{,]name="' "$tmp/series1" ||
		{ echo "series named by device"; r=1; }
	diff "$tmp/series1" "$tmp/series2" || r=1
	head -n 2 "$tmp/series1"
	return "$r"
}

# ---- tests: errors ------------------------------------------------------------

# expect_error STATUS REGEX ARGS...: vhostctl ARGS fails with STATUS, one
# line on stderr matching REGEX, nothing on stdout, no tunable of dev changed
# (or nothing $expect_state prints, when set)
expect_error() {
	local want_rc=$1 re=$2 state=${expect_state:-tunables} before after rc err=()

	shift 2
	before=$($state "$dev")
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	after=$($state "$dev")
	# one line, newline-terminated (what wc -l counted as 1)
	mapfile err < "$tmp/err"
	echo "$* -> status $rc: ${err[*]%$'\n'}"
	[ "$rc" = "$want_rc" ] || { echo "want status $want_rc"; return 1; }
	[ "${#err[@]}" = 1 ] && [[ ${err[0]} == *$'\n' ]] &&
		[[ ${err[0]%$'\n'} =~ $re ]] ||
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
		vc set dev "$dev" busypoll 5 &&
	expect_error 2 '^Unknown keyword "admin-busypoll-us", try "vhostctl dev help"$' \
		vc set dev "$dev" admin-busypoll-us 5
}

t_err_missing_value() {
	expect_error 2 '^Missing value for "busypoll-us"$' \
		vc set dev "$dev" zerocopy off busypoll-us
}

t_err_device_missing() {
	expect_error 2 '^Device name is missing$' vc set busypoll-us 5
}

t_err_on_off() {
	expect_error 2 '^Invalid "zerocopy" value "yes", expected "on" or "off"$' \
		vc set dev "$dev" zerocopy yes &&
	expect_error 2 '^Invalid "metamap" value "yes", expected "off", "batch" or "map"$' \
		vc set dev "$dev" metamap yes
}

t_err_cli_garbage() {
	expect_error 2 '^Object "sett" is unknown' vc sett dev "$dev" busypoll-us 5 &&
	expect_error 2 '^Command "sett" is unknown' vc dev sett "$dev" busypoll-us 5 &&
	expect_error 2 '^Unknown option "-x"' vc -x set dev "$dev" busypoll-us 5 &&
	expect_error 2 '^Nothing to set' vc set dev "$dev" &&
	expect_error 2 '^Duplicate argument "dev"' vc set dev "$dev" dev "$dev" metamap on &&
	expect_error 2 '^Invalid device id "99999999999"$' vc set dev 99999999999 metamap on &&
	expect_error 2 '^Invalid "scope" value "queues"' vc stats dev "$dev" scope queues &&
	expect_error 2 '^Argument "index" needs a device' vc queue show index 1 &&
	expect_error 2 '^Invalid "index" value "tx"$' vc queue show dev "$dev" index tx
}

# Range errors name the keyword and its bounds (the kernel's extended
# ACK names the attribute).
t_err_range_busypoll() {
	expect_error 1 '^Error: integer out of range \(busypoll-us: 0 to 1000000\)\.$' \
		vc set dev "$dev" busypoll-us 1000001
}

t_err_range_zcopy_min_len() {
	expect_error 1 '^Error: integer out of range \(zcopy-min-len: 256 to 65536\)\.$' \
		vc set dev "$dev" zcopy-min-len 0 &&
	expect_error 1 '^Error: integer out of range \(zcopy-min-len: 256 to 65536\)\.$' \
		vc set dev "$dev" zcopy-min-len 65537
}

# One bad value in a request: none of the good ones is applied.
t_err_all_or_none() {
	expect_error 1 '^Error: .+\.$' \
		vc set dev "$dev" busypoll-us 7 zerocopy off zcopy-min-len 70000 metamap off &&
	expect_error 1 '^Error: .+\.$' \
		vc set dev "$tap" busypoll-us 1000001 metamap off
}

t_err_no_such_device() {
	expect_error 1 '^Error: device not found\.$' vc set dev vhost99999 busypoll-us 5 &&
	expect_error 1 '^Error: device not found\.$' vc set dev 99999 busypoll-us 5 &&
	expect_error 1 '^Error: device not found\.$' vc -j show dev vhost99999 &&
	expect_error 1 '^Error: device not found\.$' vc stats dev 99999 &&
	expect_error 1 '^Error: device not found\.$' vc queue show dev 99999
}

t_err_no_such_queue() {
	expect_error 1 '^Error: no such queue\.$' vc queue show dev "$dev" index 99
}

t_err_no_such_backend() {
	expect_error 1 '^Error: device not found\.$' vc show dev nosuchtap0 &&
	expect_error 1 '^Error: device not found\.$' vc set dev nosuchtap0 metamap on &&
	expect_error 1 '^Error: device not found\.$' vc set dev lo metamap on
}

# ---- tests: without CAP_NET_ADMIN ---------------------------------------------

t_err_unprivileged_set() {
	# dev-set is uns-admin-perm: the genetlink core refuses, no message
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	expect_error 1 '^Error: Operation not permitted\.$' \
		vc_unpriv set dev "$dev" busypoll-us 5 &&
	expect_error 1 '^Error: Operation not permitted\.$' \
		vc_unpriv set dev "$tap" metamap off &&
	expect_error 1 '^Error: Operation not permitted\.$' \
		vc_unpriv set policy grant none
}

t_unprivileged_set_is_eperm() {
	# The errno under the kernel's message: EPERM, from the syscall trace.
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	command -v strace > /dev/null || { skip_reason="no strace"; return $KSFT_SKIP; }
	"$SETPRIV" --inh-caps=-net_admin --bounding-set=-net_admin -- \
		strace -e trace=recvfrom,recvmsg,recv -e abbrev=none -s 0 -o "$tmp/strace" \
		"$VHOSTCTL" set dev "$dev" busypoll-us 5 2> /dev/null
	grep -q 'error=-EPERM' "$tmp/strace" || { grep -i err "$tmp/strace"; return 1; }
}

t_unprivileged_show() {
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	vc_unpriv -j show dev "$dev" > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[0] | keys[] | select(startswith("backend") or . == "owner-pid")]')" \
	  = "[]" ] ||
		{ echo "private attributes shown:"; cat "$tmp/j"; return 1; }
	[ "$(jget "$tmp/j" '.[0]."admin-busypoll-us"')" = "$(sysv "$dev/admin_busypoll_us")" ] ||
		{ cat "$tmp/j"; return 1; }
	vc_unpriv show dev "$dev" | head -n1 | grep -qx "$dev: type net" || return 1
	vc_unpriv -j show > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" '[.[] | keys[] | select(startswith("backend") or . == "owner-pid")]')" \
	  = "[]" ] ||
		{ echo "private attributes in the dump:"; cat "$tmp/j"; return 1; }
	# Named by its TAP, the device still shows no backend and no owner.
	if vc_unpriv -j show dev "$tap" > "$tmp/j" 2> "$tmp/err"; then
		[ "$(jget "$tmp/j" '[.[] | keys[] | select(startswith("backend") or . == "owner-pid")]')" = "[]" ] ||
			{ cat "$tmp/j"; return 1; }
	else
		cat "$tmp/err"
	fi
}

t_unprivileged_monitor() {
	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	expect_error 1 '^Error: cannot join the "monitor" multicast group: Operation not permitted\.$' \
		vc_unpriv monitor
}

# The read-only group: joined without CAP_NET_ADMIN, it hears devices come,
# change (with their label) and go, without their backend; the same caller
# reads counters and is refused any change.
t_unprivileged_watch() {
	local wpid r=0 wdev

	[ -n "$SETPRIV" ] || { skip_reason="no setpriv"; return $KSFT_SKIP; }
	"$SETPRIV" --inh-caps=-net_admin --bounding-set=-net_admin -- \
		"$VHOSTCTL" -j monitor watch > "$tmp/watch" 2> "$tmp/watch.err" &
	wpid=$!
	sleep 1
	start_holder w -n 0 || { kill "$wpid"; return 1; }
	wdev=$hold_dev
	vc set dev "$wdev" label watched || r=1
	kill -TERM "$hold_pid"
	wait "$hold_pid"
	wait_for 30 grep -q "\"event\":\"del\",\"id\":${wdev#vhost}," "$tmp/watch" ||
		{ echo "no del event"; r=1; }
	kill -TERM "$wpid"
	wait "$wpid" || { cat "$tmp/watch.err"; r=1; }
	cat "$tmp/watch"
	grep -q "\"event\":\"add\",\"id\":${wdev#vhost}," "$tmp/watch" || { echo "no add"; r=1; }
	grep -q '"label":"watched"' "$tmp/watch" || { echo "no label change"; r=1; }
	! grep -q backend "$tmp/watch" || { echo "backend in watch"; r=1; }
	vc_unpriv -j stats dev "$dev" > /dev/null || { echo "stats refused"; r=1; }
	expect_error 1 '^Error: Operation not permitted\.$' \
		vc_unpriv set dev "$dev" busypoll-us 1 || r=1
	return "$r"
}

# ---- tests: monitor -------------------------------------------------------------

monitor_started=
start_monitors() {
	local end=$((SECONDS + 60)) zcl v=301

	[ -n "$monitor_started" ] && return 0
	# Not through vc(): $! must be vhostctl itself, not a subshell.
	"$VHOSTCTL" monitor > "$tmp/mon.txt" 2> "$tmp/mon.err" &
	mon_pid=$!
	"$VHOSTCTL" -j monitor > "$tmp/mon.json" 2> "$tmp/monj.err" &
	monj_pid=$!
	pids+=("$mon_pid" "$monj_pid")
	monitor_started=1
	# Both are listening once both have seen a change of ours; only real
	# changes are notified, so the value alternates.
	zcl=$(sysv "$dev/zcopy_min_len")
	until grep -q "^\[change\] $dev: " "$tmp/mon.txt" &&
	      grep -q "\"event\":\"change\",\"id\":[0-9]*,\"name\":\"$dev\"" "$tmp/mon.json"; do
		[ "$SECONDS" -ge "$end" ] && { echo "monitors never saw a change"; return 1; }
		[ "$v" = 301 ] && v=302 || v=301
		vc set dev "$dev" zcopy-min-len "$v" || return 1
		sleep 0.3
	done
	vc set dev "$dev" zcopy-min-len "$zcl" || return 1
	mon_zcl=$zcl
	wait_for 10 grep -q "^\[change\] $dev: .* zcopy-min-len $zcl " "$tmp/mon.txt"
}

t_monitor_sees_change() {
	start_monitors || { cat "$tmp/mon.txt" "$tmp/mon.err"; return 1; }
	vc set dev "$dev" busypoll-us 33 || return 1
	wait_for 10 grep -q "^\[change\] $dev: .* busypoll-us 33 " "$tmp/mon.txt" ||
		{ cat "$tmp/mon.txt"; return 1; }
	grep "^\[change\] $dev: " "$tmp/mon.txt" | tail -n1
	vc set dev "$dev" busypoll-us 0
}

last_change_has() {	# last_change_has WORDS: the last change event of dev
	grep "^\[change\] $dev: " "$tmp/mon.txt" | tail -n1 | grep -q " $1 "
}

t_monitor_no_event_without_change() {
	local n

	start_monitors || return 1
	wait_for 10 last_change_has "busypoll-us 0" || { cat "$tmp/mon.txt"; return 1; }
	n=$(grep -c "^\[change\] $dev: " "$tmp/mon.txt")
	vc set dev "$dev" busypoll-us 0 zcopy-min-len "$mon_zcl" || return 1
	sleep 1
	[ "$(grep -c "^\[change\] $dev: " "$tmp/mon.txt")" = "$n" ] ||
		{ echo "a set that changed nothing was notified:"; tail -n2 "$tmp/mon.txt"; return 1; }
}

t_monitor_sees_add_del() {
	local pid_b

	start_monitors || return 1
	start_holder b -n 0 || return 1
	dev_b=$hold_dev
	tap_b=$hold_tap
	pid_b=$hold_pid
	[ "$dev_b" != "$dev" ] || { echo "two devices named $dev"; return 1; }
	wait_for 30 grep -q "^\[add\] $dev_b: type net " "$tmp/mon.txt" ||
		{ echo "no add event:"; cat "$tmp/mon.txt"; return 1; }
	# its owner and backend arrive after the open: a change with the TAP
	wait_for 30 grep -q "^\[change\] $dev_b: .*backend-ifname $tap_b " "$tmp/mon.txt" ||
		{ echo "no change event with the backend:"; cat "$tmp/mon.txt"; return 1; }
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
	h monitor_json "$tmp/mon.json" "$dev" "$dev_b" "$mon_zcl"
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

# monitor -t, text and JSON: every event stamped with the time it was read
t_monitor_timestamps() {
	local end=$((SECONDS + 60)) zcl v=301 pid pidj ts now t rc1 rc2
	local re='^\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}[+-][0-9]{2}:[0-9]{2}\] '

	"$VHOSTCTL" monitor -t > "$tmp/mont.txt" 2> "$tmp/mont.err" &
	pid=$!
	"$VHOSTCTL" -t -j monitor > "$tmp/mont.json" 2> "$tmp/montj.err" &
	pidj=$!
	pids+=("$pid" "$pidj")
	zcl=$(sysv "$dev/zcopy_min_len")
	until grep -q "\] \[change\] $dev: " "$tmp/mont.txt" &&
	      grep -q "\"event\":\"change\",\"id\":[0-9]*,\"name\":\"$dev\"" "$tmp/mont.json"; do
		[ "$SECONDS" -ge "$end" ] && { echo "monitors never saw a change"; break; }
		[ "$v" = 301 ] && v=302 || v=301
		vc set dev "$dev" zcopy-min-len "$v" || break
		sleep 0.3
	done
	vc set dev "$dev" zcopy-min-len "$zcl"
	now=$(date +%s)
	kill -TERM "$pid" "$pidj"
	wait "$pid"
	rc1=$?
	wait "$pidj"
	rc2=$?
	cat "$tmp/mont.txt" "$tmp/mont.json" "$tmp/mont.err" "$tmp/montj.err"
	[ "$rc1" = 0 ] && [ "$rc2" = 0 ] || { echo "exit status $rc1 $rc2"; return 1; }
	[ -s "$tmp/mont.txt" ] && [ -s "$tmp/mont.json" ] || return 1
	! grep -Evq "$re\[(add|del|change)\] vhost[0-9]+: " "$tmp/mont.txt" ||
		{ echo "a line without its stamp"; return 1; }
	jq -r .timestamp "$tmp/mont.json" > "$tmp/ts" || return 1
	while read -r ts; do
		[[ "[$ts] " =~ $re ]] || { echo "timestamp \"$ts\""; return 1; }
		t=$(date -d "$ts" +%s) || return 1
		[ $((now - t)) -ge 0 ] && [ $((now - t)) -le 120 ] ||
			{ echo "timestamp $ts, now $(date -Iseconds)"; return 1; }
	done < "$tmp/ts"
	[ "$(jq -c '[.event, .name]' "$tmp/mont.json" | tail -n1)" = "[\"change\",\"$dev\"]" ]
}

t_device_gone_after_close() {
	[ -n "${dev_b:-}" ] || { echo "no second device"; return 1; }
	wait_for 10 [ ! -e "$SYS/$dev_b" ] || { echo "$SYS/$dev_b still there"; return 1; }
	expect_error 1 '^Error: device not found\.$' vc show dev "$dev_b" &&
	expect_error 1 '^Error: device not found\.$' vc stats dev "${dev_b#vhost}"
}

t_dump_lists_every_device() {
	local want got

	vc -j show > "$tmp/j" || return 1
	got=$(jget "$tmp/j" '[.[].name] | sort | join(" ")')
	want=$(ls "$SYS" | sort | tr '\n' ' ' | sed 's/ $//')
	echo "netlink: $got; sysfs: $want"
	[ "$got" = "$want" ] && [[ " $got " == *" $dev "* ]] || return 1
	vc -j stats > "$tmp/j" || return 1
	got=$(jget "$tmp/j" '[.[] | "vhost\(."dev-id")"] | sort | join(" ")')
	[ "$got" = "$want" ] || { echo "stats: $got"; return 1; }
}

# ---- tests: namespaces and the host's vhost policy ----------------------------

NS_POLICY_RE='^Error: this network namespace is administered from the initial user namespace: no vhost policy applies\.$'
not_granted() { echo "^Error: $1 not granted to this network namespace by the host's vhost policy\\.\$"; }

t_policy_show() {
	# The initial namespace: the host's own, nothing granted, no policy.
	vc show policy > "$tmp/t" && vc policy show > "$tmp/t2" &&
		vc -j show policy > "$tmp/j" || return 1
	cat "$tmp/t" "$tmp/j"
	[ "$(cat "$tmp/t")" = "grant none busypoll-us-max 0 tenant no" ] &&
	cmp -s "$tmp/t" "$tmp/t2" &&
	[ "$(jget "$tmp/j" .)" = '{"grants":[],"busypoll-us-max":0,"tenant":0}' ] || return 1
	vc -j -p show policy > "$tmp/p" || return 1
	[ "$(jget "$tmp/p" .)" = "$(cat "$tmp/j")" ] && [ "$(wc -l < "$tmp/p")" = 5 ] ||
		{ cat "$tmp/p"; return 1; }
	# anyone may read it
	[ -n "$SETPRIV" ] || return 0
	vc_unpriv -j show policy > "$tmp/u" && cmp "$tmp/j" "$tmp/u"
}

plain_ns() {	# a network namespace of the host's: ip netns add
	[ -e "$NETNS_DIR/$HNS" ] || ip netns add "$HNS"
}

t_policy_set_refused_in_host_ns() {
	plain_ns || return 1
	expect_error 1 "$NS_POLICY_RE" vc set policy grant zerocopy &&
	expect_error 1 "$NS_POLICY_RE" vc -n "$HNS" set policy grant all busypoll-us-max 50 ||
		return 1
	vc -n "$HNS" show policy > "$tmp/t" || return 1
	[ "$(cat "$tmp/t")" = "grant none busypoll-us-max 0 tenant no" ] ||
		{ cat "$tmp/t"; return 1; }
}

t_netns_missing() {
	expect_error 1 '^Error: cannot open network namespace "vhctl-nosuch": No such file or directory\.$' \
		vc -n vhctl-nosuch set policy grant none
}

# The tenant: uid 65534 makes a user namespace and a network namespace (owned
# by that user namespace), kept by a sleep, named $TNS; the host runs a
# device there (a VMM of the host's that opened /dev/vhost-net in it).
tenant_pid= tdev= ttap= towner=
tenant() {	# vhostctl as the tenant: root of its user namespace, in its netns
	nsenter --user --net --target "$tenant_pid" -- "$VHOSTCTL" "$@"
}
new_userns() { [ "$(readlink "/proc/$tenant_pid/ns/user")" != "$(readlink /proc/self/ns/user)" ]; }

setup_tenant() {
	[ -n "$tdev" ] && return 0
	[ -n "$SETPRIV" ] || { echo "no setpriv"; return 1; }
	"$SETPRIV" --reuid=65534 --regid=65534 --clear-groups -- \
		unshare --user --map-root-user --net sleep 600 2> "$tmp/unshare.err" &
	tenant_pid=$!
	pids+=("$tenant_pid")
	wait_for 30 new_userns || { echo "no user namespace:"; cat "$tmp/unshare.err"; return 1; }
	ip netns attach "$TNS" "$tenant_pid" || return 1
	# a sysfs mounted from the tenant's namespace shows its devices
	mkdir -p "$tmp/tsys" && nsenter --net="$NETNS_DIR/$TNS" mount -t sysfs sysfs "$tmp/tsys" ||
		return 1
	# the tenant's root is uid 65534, with no capability outside
	[ "$(awk '{ print $1, $2, $3 }' "/proc/$tenant_pid/uid_map")" = "0 65534 1" ] ||
		{ cat "/proc/$tenant_pid/uid_map"; return 1; }
	[ "$(nsenter --user --net --target "$tenant_pid" -- id -u)" = 0 ] || return 1
	hold_in="nsenter --net=$NETNS_DIR/$TNS" start_holder t -n 0 || return 1
	tdev=$hold_dev ttap=$hold_tap towner=$hold_pid
	echo "tenant: pid $tenant_pid, namespace $TNS, device $tdev, backend $ttap, owner $towner"
}

# A sysfs file of the tenant's device, read without a process
tsysv() { local v; read -r v < "$tmp/tsys/class/vhost/$tdev/$1" && echo "$v"; }

# The tenant's device as the host reads it back: netlink, then sysfs
tdev_state() {
	local f

	vc -n "$TNS" -j show dev "$tdev" || return 1
	for f in admin_busypoll_us zerocopy zcopy_min_len metamap; do
		printf '%s=%s ' "$f" "$(tsysv "$f")"
	done
}

t_netns_selects_devices() {
	setup_tenant || return 1
	vc -n "$TNS" -j show > "$tmp/j" || return 1
	cat "$tmp/j"
	# ids are per namespace: the first device of a new one is vhost0
	[ "$tdev" = vhost0 ] || { echo "first device of $TNS: $tdev"; return 1; }
	[ "$(jget "$tmp/j" '[.[] | [.name, ."backend-ifname", ."owner-pid"]]')" = \
	  "[[\"$tdev\",\"$ttap\",$towner]]" ] || return 1
	# the initial namespace does not see it (names may be the same there:
	# the owner's pid tells them apart)
	vc -j show > "$tmp/j" || return 1
	[ "$(jget "$tmp/j" "[.[] | select(.\"owner-pid\" == $towner)] | length")" = 0 ] ||
		{ cat "$tmp/j"; return 1; }
	# set through -n: that namespace's device, not a namesake here
	vc -n "$TNS" set dev "$tdev" zcopy-min-len 512 || return 1
	[ "$(vc -n "$TNS" -j show dev "$tdev" | jq '.[0]."zcopy-min-len"')" = 512 ] &&
	[ "$(tsysv zcopy_min_len)" = 512 ] || return 1
	if [ -e "$SYS/$tdev" ]; then
		[ "$(sysv "$tdev/zcopy_min_len")" != 512 ] ||
			{ echo "$tdev here changed"; return 1; }
	fi
	vc -n "$TNS" set dev "$tdev" zcopy-min-len 256
}

# Defaults set in a namespace (-n): shown there, not here; a device owned
# there gets them, one owned here does not.
t_defaults_in_a_netns() {
	local busy r=0

	[ -e "$NETNS_DIR/$HNS" ] || ip netns add "$HNS" || return 1
	busy=$(cat /sys/module/vhost_admin/parameters/busypoll_us)
	vc -n "$HNS" set defaults busypoll-us 77 zcopy-min-len 4096 || return 1
	[ "$(vc -n "$HNS" show defaults)" = "busypoll-us 77 zcopy-min-len 4096" ] ||
		{ vc -n "$HNS" show defaults; r=1; }
	[ "$(vc -n "$HNS" -j show defaults)" = '{"admin-busypoll-us":77,"zcopy-min-len":4096}' ] ||
		{ vc -n "$HNS" -j show defaults; r=1; }
	[ -z "$(vc show defaults)" ] || { vc show defaults; r=1; }
	expect_error 1 '^Error: integer out of range \(busypoll-us: 0 to 1000000\)\.$' \
		vc -n "$HNS" set defaults busypoll-us 2000000 || r=1
	hold_in="ip netns exec $HNS" start_holder dn -n 0 || return 1
	[ "$(vc -n "$HNS" -j show dev "$hold_dev" |
	     jq -c '.[0] | [."admin-busypoll-us", ."zcopy-min-len"]')" = \
	  "[77,4096]" ] || { vc -n "$HNS" show dev "$hold_dev"; r=1; }
	kill -TERM "$hold_pid"
	wait "$hold_pid"
	start_holder dh -n 0 || return 1
	[ "$(sysv "$hold_dev/admin_busypoll_us")" = "$busy" ] ||
		{ echo "$hold_dev here: busypoll $(sysv "$hold_dev/admin_busypoll_us")"; r=1; }
	kill -TERM "$hold_pid"
	wait "$hold_pid"
	return "$r"
}

t_tenant_show_policy() {
	setup_tenant || return 1
	tenant show policy > "$tmp/t" && tenant -j show policy > "$tmp/j" &&
		vc -n "$TNS" -j show policy > "$tmp/h" || return 1
	cat "$tmp/t"
	[ "$(cat "$tmp/t")" = "grant none busypoll-us-max 0 tenant yes" ] &&
	[ "$(jget "$tmp/j" .)" = '{"grants":[],"busypoll-us-max":0,"tenant":1}' ] &&
	cmp "$tmp/j" "$tmp/h"
}

t_tenant_set_refused() {
	setup_tenant || return 1
	tdev_state
	# nothing granted: any tunable is refused, the whole request (the
	# device named by its TAP, as the tenant's CAP_NET_ADMIN allows)
	expect_state=tdev_state expect_error 1 "$(not_granted zerocopy)" \
		tenant set dev "$tdev" zerocopy on &&
	expect_state=tdev_state expect_error 1 "$(not_granted admin-busypoll-us)" \
		tenant set dev "$ttap" busypoll-us 10 zerocopy on
}

t_tenant_set_after_grant() {
	setup_tenant || return 1
	vc -n "$TNS" set dev "$tdev" zerocopy off || return 1
	vc -n "$TNS" set policy grant zerocopy > "$tmp/out" 2>&1 || { cat "$tmp/out"; return 1; }
	[ ! -s "$tmp/out" ] || { cat "$tmp/out"; return 1; }
	[ "$(tenant show policy)" = "grant zerocopy busypoll-us-max 0 tenant yes" ] ||
		{ tenant show policy; return 1; }
	tenant set dev "$tdev" zerocopy on || return 1
	[ "$(vc -n "$TNS" -j show dev "$tdev" | jq '.[0].zerocopy')" = 1 ] &&
	[ "$(tsysv zerocopy)" = 1 ] || { tdev_state; return 1; }
	# one tunable not granted: none of the request is applied
	expect_state=tdev_state expect_error 1 "$(not_granted metamap)" \
		tenant set dev "$tdev" zerocopy off metamap off
}

# The example of vhost-admin.rst: busy polling up to 50 us.
t_tenant_busypoll_bound() {
	setup_tenant || return 1
	vc -n "$TNS" set policy grant busypoll-us,zerocopy busypoll-us-max 50 || return 1
	[ "$(vc -n "$TNS" -j show policy | jq -c .)" = \
	  '{"grants":["admin-busypoll-us","zerocopy"],"busypoll-us-max":50,"tenant":1}' ] ||
		{ vc -n "$TNS" -j show policy; return 1; }
	tenant set dev "$tdev" busypoll-us 40 || return 1
	[ "$(tsysv admin_busypoll_us)" = 40 ] || return 1
	expect_state=tdev_state expect_error 1 \
		"^Error: admin-busypoll-us above 50, the bound of the host's vhost policy here\\.\$" \
		tenant set dev "$tdev" busypoll-us 100 zerocopy off || return 1
	[ "$(vc -n "$TNS" -j show dev "$tdev" |
	     jq -c '.[0] | [."admin-busypoll-us", .zerocopy]')" = "[40,1]" ]
}

t_tenant_withdrawn_grant_keeps_values() {
	setup_tenant || return 1
	vc -n "$TNS" set policy grant none busypoll-us-max 0 || return 1
	[ "$(vc -n "$TNS" -j show dev "$tdev" |
	     jq -c '.[0] | [."admin-busypoll-us", .zerocopy]')" = "[40,1]" ] ||
		{ tdev_state; return 1; }
	expect_state=tdev_state expect_error 1 "$(not_granted zerocopy)" \
		tenant set dev "$tdev" zerocopy off || return 1
	# the host may set anything there
	vc -n "$TNS" set dev "$tdev" zerocopy off busypoll-us 0 metamap batch || return 1
	[ "$(tsysv zerocopy) $(tsysv admin_busypoll_us) $(tsysv metamap)" = "0 0 2" ] ||
		{ tdev_state; return 1; }
}

t_tenant_cannot_set_policy() {
	setup_tenant || return 1
	expect_error 1 '^Error: Operation not permitted\.$' tenant set policy grant all &&
	[ "$(tenant show policy)" = "grant none busypoll-us-max 0 tenant yes" ] ||
		{ tenant show policy; return 1; }
	# nor enter a namespace of the host's to act there
	plain_ns || return 1
	expect_error 1 "^Error: setting the network namespace \"$HNS\" failed: Operation not permitted\\.\$" \
		tenant -n "$HNS" show policy
}

# What the apply tests change: defaults of $HNS and $TNS, $TNS's policy
ns_state() {
	echo "host: $(vc -n "$HNS" show defaults)"
	echo "tenant: $(vc -n "$TNS" show defaults) / $(vc -n "$TNS" show policy)"
}

ns_reset() {
	vc -n "$HNS" set defaults unset all && vc -n "$TNS" set defaults unset all &&
	vc -n "$TNS" set policy grant none busypoll-us-max 0
}

# unset removes defaults (the others stay), in the request that sets
# others; removing one needs what setting it needs.
t_defaults_unset() {
	local r=0

	plain_ns && setup_tenant || return 1
	vc -n "$HNS" set defaults busypoll-us 5 zcopy-min-len 512 metamap batch || return 1
	vc -n "$HNS" set defaults zerocopy on unset busypoll-us,metamap || return 1
	[ "$(vc -n "$HNS" show defaults)" = "zerocopy on zcopy-min-len 512" ] ||
		{ vc -n "$HNS" show defaults; r=1; }
	[ "$(vc -n "$HNS" -j show defaults)" = '{"zerocopy":1,"zcopy-min-len":512}' ] ||
		{ vc -n "$HNS" -j show defaults; r=1; }
	# a device owned there gets what is left, the module's busy polling
	hold_in="ip netns exec $HNS" start_holder du -n 0 || return 1
	[ "$(vc -n "$HNS" -j show dev "$hold_dev" |
	     jq -c '.[0] | [."admin-busypoll-us", .zerocopy, ."zcopy-min-len"]')" = \
	  "[$(cat /sys/module/vhost_admin/parameters/busypoll_us),1,512]" ] ||
		{ vc -n "$HNS" -j show dev "$hold_dev"; r=1; }
	kill -TERM "$hold_pid"
	wait "$hold_pid"
	vc -n "$HNS" set defaults unset all || return 1
	[ -z "$(vc -n "$HNS" show defaults)" ] || { vc -n "$HNS" show defaults; r=1; }
	# a tenant removes only what the host grants it
	vc -n "$TNS" set defaults zerocopy on busypoll-us 10 &&
		vc -n "$TNS" set policy grant busypoll-us busypoll-us-max 50 || return 1
	expect_state=ns_state expect_error 1 \
		"$(not_granted "defaults-unset names a tunable")" \
		tenant set defaults unset zerocopy,busypoll-us || r=1
	tenant set defaults unset busypoll-us || r=1
	[ "$(vc -n "$TNS" show defaults)" = "zerocopy on" ] || { ns_state; r=1; }
	ns_reset || r=1
	return "$r"
}

# apply: every line checked, and each namespace read, before anything is
# sent; what the kernel refuses undoes the lines before it.
t_apply() {
	local f=$tmp/apply.conf r=0

	plain_ns && setup_tenant && ns_reset || return 1
	# a line that does not parse, the third: nothing sent
	printf '%s\n' "-n $HNS set defaults busypoll-us 20" "  # tuned" \
		"-n $TNS set policy grant zerocopy,bogus" > "$f"
	expect_state=ns_state expect_error 2 \
		"^$f:3: Invalid \"grant\" value \"zerocopy,bogus\", .*; nothing applied\\.\$" \
		vc apply "$f" || r=1
	printf '%s\n' "-n $HNS set defaults busypoll-us 20" "-n $HNS set dev vhost0 zerocopy on" \
		> "$f"
	expect_state=ns_state expect_error 2 "^$f:2: Not a line of an apply file, " \
		vc apply "$f" || r=1
	# no policy in a namespace of the host's: refused before sending
	printf '%s\n' "-n $HNS set defaults busypoll-us 20" "-n $HNS set policy grant all" > "$f"
	expect_state=ns_state expect_error 1 \
		"^$f:2: no vhost policy applies in network namespace \"$HNS\", its administrators are the host's; nothing applied\\.\$" \
		vc apply "$f" || r=1
	# a namespace that does not exist
	printf '%s\n' "-n $HNS set defaults busypoll-us 20" \
		"-n vhctl-nosuch set defaults zerocopy on" > "$f"
	expect_state=ns_state expect_error 1 \
		'^Error: cannot open network namespace "vhctl-nosuch": No such file or directory\.$' \
		vc apply "$f" || r=1
	# all of it, in three namespaces' worth of lines
	printf '%s\n' "# the host's defaults, a tenant's grant" \
		"-n $HNS set defaults busypoll-us 20 zerocopy on" \
		"-n $TNS set policy grant zerocopy,busypoll-us busypoll-us-max 30" \
		"-n $TNS set defaults zerocopy on" > "$f"
	vc apply check "$f" || r=1
	[ "$(ns_state)" = \
	  "$(printf 'host: \ntenant:  / grant none busypoll-us-max 0 tenant yes')" ] ||
		{ echo "apply check changed:"; ns_state; r=1; }
	vc apply "$f" > "$tmp/out" 2>&1 || { cat "$tmp/out"; return 1; }
	[ ! -s "$tmp/out" ] || { cat "$tmp/out"; r=1; }
	[ "$(ns_state)" = "$(printf 'host: busypoll-us 20 zerocopy on\ntenant: zerocopy on / grant busypoll-us,zerocopy busypoll-us-max 30 tenant yes')" ] ||
		{ ns_state; r=1; }
	# the tenant's own file (on stdin: it cannot read ours): line 2 is
	# above the bound, line 1 (zerocopy, busypoll-us without a default
	# before) is undone
	printf '%s\n' "set defaults zerocopy off busypoll-us 25" "set defaults busypoll-us 40" \
		> "$f"
	tenant apply - < "$f" > "$tmp/out" 2> "$tmp/err"
	[ $? = 1 ] || { echo "want status 1"; r=1; }
	cat "$tmp/err"
	[ "$(cat "$tmp/err")" = "$(printf '%s\n' \
		"Error: admin-busypoll-us above 30, the bound of the host's vhost policy here." \
		"Command failed -:2: the lines before it undone, nothing applied.")" ] || r=1
	[ "$(vc -n "$TNS" show defaults)" = "zerocopy on" ] || { ns_state; r=1; }
	# the same, one line: applied
	tenant apply - <<< "set defaults zerocopy off busypoll-us 25" || r=1
	[ "$(vc -n "$TNS" show defaults)" = "busypoll-us 25 zerocopy off" ] || { ns_state; r=1; }
	ns_reset || r=1
	return "$r"
}

tests=(
	device_in_sysfs
	card_command
	traffic_during_card
	json_show_after_set
	sysfs_agrees_after_set
	json_matches_text
	pretty_json_is_json_tool
	show_equals_ynl_cli
	dev_by_tap_name
	dev_by_id
	set_by_tap_name
	mq_tap_set_by_tap_label_owner
	udev_rule_applies
	libvirt_hook
	status
	set_by_id
	batch
	queue_show_equals_sysfs
	queue_busypoll_follows_admin
	queue_text_equals_json
	queue_show_index
	queue_show_all
	queue_equals_ynl_cli
	stats_interval_rates
	holder_counts_equal_stats
	stats_equal_sysfs
	stats_text_equals_json
	queue_stats_equal_sysfs
	queue_sums_equal_device
	show_s_s_holds_everything
	stats_equal_ynl_cli
	stats_interval_idle
	stats_interval_sigint
	stats_openmetrics
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
	err_no_such_queue
	err_no_such_backend
	err_unprivileged_set
	unprivileged_set_is_eperm
	unprivileged_show
	unprivileged_monitor
	unprivileged_watch
	monitor_sees_change
	monitor_no_event_without_change
	monitor_sees_add_del
	monitor_json_events
	monitor_exits_on_sigterm
	monitor_timestamps
	device_gone_after_close
	dump_lists_every_device
	policy_show
	policy_set_refused_in_host_ns
	netns_missing
	netns_selects_devices
	defaults_in_a_netns
	tenant_show_policy
	tenant_set_refused
	tenant_set_after_grant
	tenant_busypoll_bound
	tenant_withdrawn_grant_keeps_values
	tenant_cannot_set_policy
	defaults_unset
	apply
	metrics_stable_across_recreation
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
[ -z "$why" ] && ! command -v jq > /dev/null && why="no jq"
[ -z "$why" ] && [ ! -c /dev/vhost-net ] && why="no /dev/vhost-net"
[ -z "$why" ] && [ "$(id -u)" != 0 ] && why="must run as root"
# What the tests need is what the project builds and installs: missing,
# or a vhostctl that cannot show, it fails every test, never skips them.
if [ -n "$why" ]; then
	all "not ok" "$why"
	exit 1
fi
if ! vc show > /dev/null 2> "$tmp/err"; then
	all "not ok" "vhostctl show: $(head -n 1 "$tmp/err")"
	exit 1
fi
echo "# vhostctl: $VHOSTCTL"
echo "# vhost_net_hold: $HOLD"

if ! start_holder a -s "$HOLD_FRAME" -i "$HOLD_USEC" > "$tmp/setup" 2>&1; then
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
	if [ "$selected" != " " ] && [[ $selected != *" $t "* ]]; then
		echo "ok $num $t # SKIP not selected"
		continue
	fi
	skip_reason=
	start=$SECONDS
	"t_$t" > "$tmp/diag" 2>&1
	r=$?
	[ -n "${VHOSTCTL_SH_TIMES:-}" ] && echo "# $t: $((SECONDS - start)) s"
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
