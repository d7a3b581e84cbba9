#!/usr/bin/env python3
# avattention — attention for media pipelines
# Copyright (C) 2026 The avattention authors
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Warnings as errors for the reference manual (docs/reference/meson.build).

gtkdoc-strict.py TOOL [ARG ...]
    Runs the gtk-doc tool TOOL (gtkdoc-scan, -scangobj, -mkdb, -mkhtml or
    -fixxref) with its arguments and passes its output on.  Fails when the
    tool fails or says anything that is a warning: gtk-doc's
    "FILE:LINE: warning: ...", a compiler warning or error while
    gtkdoc-scangobj builds its scanner, a GLib or GStreamer warning or
    critical while the scanner runs, an xsltproc or XInclude error.  The
    one exception: gtkdoc-fixxref's "no link for" a GLib or GStreamer
    symbol, whose gtk-doc index is not installed.

gtkdoc-strict.py --check GTKDOC_CHECK DOC_DIR MODULE MAIN_FILE STAMP
    Runs gtkdoc-check (the program GTKDOC_CHECK) in DOC_DIR, the folder
    the reference is built in.  It fails when a listed symbol has no
    documentation or documents some of its parameters only, when
    MODULE-sections.txt lists a symbol without a declaration, when a
    declaration of the scanned headers is missing from MODULE-sections.txt,
    or when MAIN_FILE leaves a generated page out.  This script adds: a
    property or signal of the scanned element types without a gtk-doc
    comment of its own (gtk-doc would take the short blurb of
    gst-inspect-1.0 for it) fails too.  The lists that say which are
    printed then.  Writes STAMP when all is well.
"""
import os
import re
import subprocess
import sys

WARNING = re.compile(
    r": warning: |: error: |WARNING \*\*|CRITICAL \*\*|parser error"
    r"|validity error|XInclude error|failed to load",
    re.IGNORECASE)
# gtkdoc-fixxref's link it could not make, and the symbol's id
NO_LINK = re.compile(r': warning: no link for: "([^"]*)"')
# Links to GLib's and GStreamer's own symbols (GstBuffer, GBytes,
# gst_buffer_copy ...) stay unresolved where their gtk-doc indices are not
# installed (GStreamer publishes its reference with hotdoc): not an error.
# A link to a symbol of ours that does not resolve, or to anything else,
# is.
EXTERNAL_ID = re.compile(r'^(Gst|GST-|gst-|G[A-Z]|g-)')
OUR_ID = re.compile(r'^(GstAv|GST-AV-|gst-av-|gst-buffer-(add|get)-av-)')


def is_external_link(line):
    m = NO_LINK.search(line)
    return bool(m and EXTERNAL_ID.match(m.group(1))
                and not OUR_ID.match(m.group(1)))


def run_tool(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
    lines = proc.stdout.decode('utf-8', errors='replace').splitlines()
    external = [line for line in lines if is_external_link(line)]
    lines = [line for line in lines if not is_external_link(line)]
    name = os.path.basename(argv[0])
    for line in lines:
        print(line)
    if external:
        print(f'gtkdoc-strict: {name}: {len(external)} links to GLib and '
              'GStreamer symbols left as text (their gtk-doc indices are not '
              'installed)')
    warnings = [line for line in lines if WARNING.search(line)]
    if proc.returncode != 0:
        print(f'gtkdoc-strict: {name} failed (exit status {proc.returncode})')
        return 1
    if warnings:
        print(f'gtkdoc-strict: {name}: {len(warnings)} warning(s), which '
              'fail the docs (warnings are errors):')
        for line in warnings:
            print('  ' + line)
        return 1
    return 0


def undocumented_properties(doc_dir, module):
    """The properties and signals gtkdoc-scangobj found (MODULE.args,
    MODULE.signals) that no gtk-doc comment of the sources in DOC_DIR
    documents.  (gtkdoc-mkdb takes the blurb for a property without one,
    and gtkdoc-check does not count it.)"""
    found = []
    for suffix in ('args', 'signals'):
        try:
            with open(os.path.join(doc_dir, f'{module}.{suffix}'),
                      encoding='utf-8') as f:
                found += re.findall(r'<NAME>([^<]+)</NAME>', f.read())
        except OSError:
            pass
    documented = set()
    for name in os.listdir(doc_dir):
        if name.endswith(('.c', '.h')):
            with open(os.path.join(doc_dir, name), encoding='utf-8') as f:
                documented.update(re.findall(
                    r'^\s*/?\*\*?\s*(\w+::?[\w-]+):\s*$', f.read(), re.M))
    # MODULE.args names a property Type::name, a comment Type:name
    return [n for n in found if n not in documented
            and n.replace('::', ':', 1) not in documented]


def check(gtkdoc_check, doc_dir, module, main_file, stamp):
    env = dict(os.environ, DOC_MODULE=module, DOC_MAIN_SGML_FILE=main_file,
               BUILDDIR='.')
    proc = subprocess.run([gtkdoc_check], cwd=doc_dir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)
    sys.stdout.write(proc.stdout.decode('utf-8', errors='replace'))
    missing = undocumented_properties(doc_dir, module)
    if missing:
        print(f'gtkdoc-strict: {len(missing)} properties or signals without '
              'a gtk-doc comment (Type:property: or Type::signal:):')
        for name in missing:
            print('  ' + name)
        if proc.returncode == 0:
            return 1
    if proc.returncode != 0:
        for suffix in ('undocumented', 'undeclared', 'unused'):
            path = os.path.join(doc_dir, f'{module}-{suffix}.txt')
            try:
                with open(path, encoding='utf-8') as f:
                    text = f.read().strip()
            except OSError:
                continue
            if suffix == 'undocumented':
                # the list follows the coverage lines
                text = text.partition('\n\n\n')[2].strip()
            if text:
                print(f'--- {path}:')
                print(text)
        print('gtkdoc-strict: gtkdoc-check failed: document each symbol '
              'and property listed above (a gtk-doc comment in the source), '
              f'and list every declaration in {module}-sections.txt')
        return 1
    with open(stamp, 'w', encoding='utf-8') as f:
        f.write('gtkdoc-check passed\n')
    return 0


def main(argv):
    if len(argv) == 7 and argv[1] == '--check':
        return check(*argv[2:])
    if len(argv) >= 2 and not argv[1].startswith('-'):
        return run_tool(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
