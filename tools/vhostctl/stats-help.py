#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The HELP texts of "vhostctl stats -o openmetrics", from the spec.

   stats-help.py SPEC > generated/vhost-stats-help.h

Writes a C table of the stats attribute set's attributes, each with the
first sentence of its doc on one line: the counters' definitions stay in
the family's spec, the one place they are written.
"""
import re
import sys

import yaml


def c_string(s):
    out = []
    for ch in s:
        if ch in '\\"':
            out.append('\\' + ch)
        elif ' ' <= ch <= '~':
            out.append(ch)
        else:
            out.extend('\\%03o' % b for b in ch.encode())
    return '"' + ''.join(out) + '"'


def first_sentence(doc):
    """One line; no double quote nor backslash, which OpenMetrics escapes in
    HELP and the text format node_exporter's textfile collector reads may
    not: the line then reads the same in both."""
    doc = ' '.join(doc.split()).replace('"', "'").replace('\\', '/')
    m = re.match(r'(.*?\.)(\s|$)', doc)
    return m.group(1) if m else doc


def main():
    with open(sys.argv[1]) as f:
        spec = yaml.safe_load(f)
    stats = [s for s in spec['attribute-sets'] if s['name'] == 'stats']
    if len(stats) != 1:
        sys.exit('%s: no attribute set "stats"' % sys.argv[1])
    print('/* SPDX-License-Identifier: GPL-2.0 */')
    print('/* Made by stats-help.py from %s: do not edit. */'
          % sys.argv[1].split('/')[-1])
    print('static const struct {')
    print('\tconst char *name, *help;')
    print('} vh_stats_help[] = {')
    for a in stats[0]['attributes']:
        if 'doc' in a:
            print('\t{ %s,\n\t  %s },' % (c_string(a['name']),
                                        c_string(first_sentence(a['doc']))))
    print('};')


if __name__ == '__main__':
    main()
