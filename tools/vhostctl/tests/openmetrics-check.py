#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check "vhostctl stats -o openmetrics" with a real OpenMetrics parser.

   openmetrics-check.py [--stats-json FILE] [--devices-json FILE] [FILE]

Parses FILE (default: stdin) with prometheus_client's OpenMetrics parser,
which fails on a syntax error, a missing "# EOF" or a family whose samples
are not together, then checks what the parser lets through: families named
vhost_<counter> (busy polling's time vhost_busypoll_seconds, unit seconds),
counters with _total samples and zcopy-pending a gauge, a HELP text each,
no sample twice, every sample labelled with what names its device (its
name, or its label or backend and queue pair).  With --devices-json (the
output of "vhostctl -j show"), each device's samples carry the labels the
rule gives it, computed here again from the devices: label, backend_ifname
and queue_pair (its rank by id among the devices on the same backend), and
name only for a device neither names, or two they cannot tell apart.  With
--stats-json too ("vhostctl -j stats" for the same objects and scope):
every counter there is exactly one sample here, with its value (seconds
for busy polling's nanoseconds) and its queue's labels.
Prints what is wrong and exits 1; exits 0 when all is well.
"""
import argparse
import json
import os
import re
import sys

GAUGES = ('zcopy-pending',)
DISTRO_PYTHON = '/usr/bin/python3'

try:
    from prometheus_client.openmetrics.parser import \
        text_string_to_metric_families
except ImportError:
    # A python3 of pyenv or a venv first in PATH: the distribution's has
    # the package scripts/install-deps installs.
    if (os.path.realpath(sys.executable) != os.path.realpath(DISTRO_PYTHON)
            and os.access(DISTRO_PYTHON, os.X_OK)
            and not os.environ.get('OPENMETRICS_CHECK_REEXEC')):
        os.environ['OPENMETRICS_CHECK_REEXEC'] = '1'
        os.execv(DISTRO_PYTHON, [DISTRO_PYTHON] + sys.argv)
    sys.exit('openmetrics-check: no prometheus_client in python3 '
             '(scripts/install-deps installs python3-prometheus-client)')


TIME = {'busypoll-ns': ('vhost_busypoll_seconds', 1e-9)}


def family_of(counter):
    if counter in TIME:
        return TIME[counter][0]
    return 'vhost_' + counter.replace('-', '_')


def identities(devices):
    """{device id: the labels that name it}, by the rule vhostctl follows."""
    def pair(d):
        b = d.get('backend-ifname')
        if b is None:
            return None
        return sum(1 for e in devices if e is not d and e.get('backend-ifname') == b
                   and e['id'] < d['id'])
    out = {}
    for d in devices:
        key = (d.get('label'), d.get('backend-ifname'), pair(d))
        twins = [e for e in devices if e is not d and
                 (e.get('label'), e.get('backend-ifname'), pair(e)) == key]
        labels = {}
        if (d.get('label') is None and d.get('backend-ifname') is None) or twins:
            labels['name'] = d['name']
        if d.get('label') is not None:
            labels['label'] = d['label']
        if d.get('backend-ifname') is not None:
            labels['backend_ifname'] = d['backend-ifname']
            labels['queue_pair'] = str(pair(d))
        out[d['id']] = labels
    return out


def identity(labels):
    return tuple(sorted((k, v) for k, v in labels.items()
                        if k not in ('queue_index', 'queue_type')))


def structure(families):
    """What the parser accepts but vhostctl must not print."""
    msgs, seen = [], set()
    for f in families:
        if not re.match(r'^vhost_[a-z0-9_]+$', f.name):
            msgs.append('family %s: not vhost_<counter>' % f.name)
        gauge = f.name in [family_of(g) for g in GAUGES]
        want_type = 'gauge' if gauge else 'counter'
        if f.type != want_type:
            msgs.append('family %s: type %s, want %s' % (f.name, f.type, want_type))
        if f.name == 'vhost_busypoll_seconds' and f.unit != 'seconds':
            msgs.append('family %s: unit %r, want seconds' % (f.name, f.unit))
        if not f.documentation.strip():
            msgs.append('family %s: no HELP text' % f.name)
        if not f.samples:
            msgs.append('family %s: no sample' % f.name)
        for s in f.samples:
            want = f.name if gauge else f.name + '_total'
            if s.name != want:
                msgs.append('sample %s in family %s, want %s' % (s.name, f.name, want))
            if not (re.match(r'^vhost[0-9]+$', s.labels.get('name', '')) or
                    'label' in s.labels or
                    ('backend_ifname' in s.labels and
                     re.match(r'^[0-9]+$', s.labels.get('queue_pair', '')))):
                msgs.append('sample %s%s: nothing names its device' % (s.name, s.labels))
            if s.timestamp is not None:
                msgs.append('sample %s%s: a timestamp (the textfile collector '
                            'refuses them)' % (s.name, s.labels))
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in seen:
                msgs.append('sample %s%s twice' % (s.name, s.labels))
            seen.add(key)
    return msgs


def sample_key(labels):
    return (identity(labels), labels.get('queue_index'))


def against_stats(families, stats, ids):
    """Every counter of "vhostctl -j stats" is one sample, with its value."""
    msgs, samples = [], {}
    for f in families:
        for s in f.samples:
            samples[(f.name, sample_key(s.labels))] = s
    want = set()
    for obj in stats:
        labels = dict(ids.get(obj['dev-id'], {'name': 'vhost%d' % obj['dev-id']}))
        if 'queue-index' in obj:
            labels['queue_index'] = str(obj['queue-index'])
        for k, v in obj.items():
            if k in ('dev-id', 'queue-index', 'queue-type'):
                continue
            key = (family_of(k), sample_key(labels))
            want.add(key)
            s = samples.get(key)
            if s is None:
                msgs.append('%s %s: not in the OpenMetrics output' % (k, labels))
                continue
            scale = TIME[k][1] if k in TIME else 1
            if abs(s.value - v * scale) > 1e-9 * max(1, abs(v * scale)):
                msgs.append('%s %s: %s, JSON says %s' % (k, labels, s.value, v))
            if s.labels.get('queue_type') != obj.get('queue-type'):
                msgs.append('%s %s: queue_type %r, JSON says %r'
                            % (k, labels, s.labels.get('queue_type'),
                               obj.get('queue-type')))
    for key in sorted(set(samples) - want, key=str):
        msgs.append('%s %s: not in the JSON' % key)
    return msgs


def against_devices(families, ids):
    """Each device's samples carry the labels that name it, no others."""
    msgs = []
    known = {identity(v) for v in ids.values()}
    for f in families:
        for s in f.samples:
            if identity(s.labels) not in known and 'name' not in s.labels:
                msgs.append('%s%s: no device of the JSON has these labels' % (s.name, s.labels))
    return msgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--stats-json')
    ap.add_argument('--devices-json')
    ap.add_argument('file', nargs='?', default='-')
    args = ap.parse_args()

    if args.file == '-':
        text = sys.stdin.read()
    else:
        with open(args.file) as f:
            text = f.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and others
        sys.exit('openmetrics-check: the parser refused it: %r' % e)
    msgs = structure(families)
    # The parser keeps one of two samples with the same labels: count them.
    lines = [ln for ln in text.split('\n') if ln and not ln.startswith('#')]
    parsed = sum(len(f.samples) for f in families)
    if len(lines) != parsed:
        msgs.append('%d sample lines, %d samples: some twice' % (len(lines), parsed))
    ids = {}
    if args.devices_json:
        with open(args.devices_json) as f:
            ids = identities(json.load(f))
        msgs += against_devices(families, ids)
    if args.stats_json:
        with open(args.stats_json) as f:
            msgs += against_stats(families, json.load(f), ids)
    for m in msgs:
        print('openmetrics-check: ' + m)
    if not msgs:
        print('openmetrics-check: %d families, %d samples' % (len(families), parsed))
    sys.exit(1 if msgs else 0)


if __name__ == '__main__':
    main()
