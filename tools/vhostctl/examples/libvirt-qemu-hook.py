#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""libvirt hook: label a domain's vhost devices, apply its settings.

Installed as /etc/libvirt/hooks/qemu.d/vhostctl (libvirt 6.5 and later run
every script there, beside the administrator's own /etc/libvirt/hooks/qemu;
libvirtd reads the directory when it starts).  libvirt runs it as
"vhostctl DOMAIN OPERATION SUBOPERATION EXTRA" with the domain's XML on
stdin.  When a domain has started (and when libvirtd reconnects to a
running one), every vhost device its QEMU owns is labelled with the
domain's name, in one request:

    vhostctl set owner PID label DOMAIN

PID is QEMU's, from libvirt's /run/libvirt/qemu/DOMAIN.pid.  At "started"
QEMU has opened its vhost devices and owns them, but none has a backend:
QEMU attaches a NIC's TAP to its devices only when the guest's virtio-net
driver comes up, so the TAPs cannot select them yet.  Without a pid file
the devices are selected by the domain's TAPs (<interface><target
dev='vnet3'/>), which matches only once the guest's driver is up.

Then each line of the domain's settings file, /etc/vhostctl/domains/DOMAIN
(# comments, blank lines ignored), is applied to all its devices at once:

    busypoll-us 50 zerocopy on    ->    vhostctl set label DOMAIN busypoll-us 50 zerocopy on

Settings stay with a device when its backend comes, so they hold once the
guest's driver is up.  A label is printable ASCII: a domain whose name is
not (libvirt allows any UTF-8) is not labelled, and each line of its
settings file is applied with the label's selector replaced by the
owner's (or the TAPs').

A NIC hot-plugged later (virsh attach-device) runs no hook: QEMU opens its
devices then, and the udev rule 61-vhost-libvirt.rules runs

    vhostctl --device vhostN

for a device that got its owner, a user of libvirt-qemu, and no label: if
the owner is a domain's QEMU (a pid file of /run/libvirt/qemu names it),
that one device gets the domain's label and settings as above.

Each request applies to every device it selects, all values or none.  A
failure is logged and the hook goes on: a tuning that cannot be applied
does not stop the domain.  VHOSTCTL, VHOSTCTL_DOMAINS, VHOSTCTL_LIBVIRT_RUN
and VHOSTCTL_SYSFS override the program, the settings directory, libvirt's
run directory and /sys/class/vhost (for tests).  See vhostctl(8).
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

VHOSTCTL = os.environ.get('VHOSTCTL', '/usr/sbin/vhostctl')
DOMAINS = os.environ.get('VHOSTCTL_DOMAINS', '/etc/vhostctl/domains')
LIBVIRT_RUN = os.environ.get('VHOSTCTL_LIBVIRT_RUN', '/run/libvirt/qemu')
SYSFS = os.environ.get('VHOSTCTL_SYSFS', '/sys/class/vhost')


def log(msg):
    print('vhostctl hook: %s' % msg, file=sys.stderr)


def run(args):
    r = subprocess.run([VHOSTCTL] + args, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode:
        log('vhostctl %s: %s' % (' '.join(args), r.stderr.strip()))
    return r.returncode == 0


def taps(xml):
    """The TAPs of the domain's network interfaces, in order."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return []
    out = []
    for iface in root.iter('interface'):
        target = iface.find('target')
        if target is not None and target.get('dev'):
            out.append(target.get('dev'))
    return out


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def qemu_pid(domain):
    """The pid of the domain's QEMU, from libvirt's pid file, or None."""
    if '/' in domain or domain.startswith('.'):
        return None
    return read_int(os.path.join(LIBVIRT_RUN, domain + '.pid'))


def owns_devices(pid):
    """Whether pid owns a vhost device."""
    try:
        names = os.listdir(SYSFS)
    except OSError:
        return False
    return any(read_int(os.path.join(SYSFS, n, 'owner_pid')) == pid
               for n in names)


def domain_of(pid):
    """The domain whose QEMU is pid, from libvirt's pid files, or None."""
    try:
        names = os.listdir(LIBVIRT_RUN)
    except OSError:
        return None
    for name in sorted(names):
        if name.endswith('.pid') and \
           read_int(os.path.join(LIBVIRT_RUN, name)) == pid:
            return name[:-len('.pid')]
    return None


def settings(domain):
    """The lines of the domain's settings file, each a list of words."""
    path = os.path.join(DOMAINS, domain)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return []
    out = []
    for line in lines:
        words = line.split('#', 1)[0].split()
        if words:
            out.append(words)
    return out


def apply(domain, selectors):
    """Label the devices selectors name and apply the settings: ok?"""
    ok = True
    labelled = False
    if not all(' ' <= c <= '~' for c in domain):
        for words in settings(domain):
            for sel in selectors:
                ok &= run(['set'] + sel + words)
        return ok
    for sel in selectors:
        if run(['set'] + sel + ['label', domain]):
            labelled = True
        else:
            ok = False
    for words in settings(domain) if labelled else []:
        ok &= run(['set', 'label', domain] + words)
    return ok


def device(name):
    """udev: one device that got its owner (a hot-plugged NIC's)."""
    if not name.startswith('vhost') or not name[5:].isdigit():
        log('%s: not a vhost device' % name)
        return 1
    pid = read_int(os.path.join(SYSFS, name, 'owner_pid'))
    domain = domain_of(pid) if pid else None
    if domain is None:
        return 0
    if not apply(domain, [['dev', name]]):
        log('%s: %s: some settings were not applied' % (domain, name))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == '--device':
        return device(argv[2])
    if len(argv) < 3:
        return 0
    domain, op = argv[1], argv[2]
    if op not in ('started', 'reconnect'):
        return 0
    xml = sys.stdin.read()
    pid = qemu_pid(domain)
    if pid:
        # A domain without a vhost NIC owns no device: nothing to do.
        if not owns_devices(pid):
            return 0
        selectors = [['owner', str(pid)]]
    else:
        selectors = [['dev', tap] for tap in taps(xml)]
    if selectors and not apply(domain, selectors):
        log('%s: some settings were not applied' % domain)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
