#!/usr/bin/env python3
"""check_sections.py - the section tags of gpudl.h and gpudl_kernels.cu agree.

The manual at the top of gpudl.h lists the sections (SECTIONS: a name, what
it holds, and where it lives: D the declarations, I the implementation, K
gpudl_kernels.cu). Each place must carry exactly the tags the list gives it,
in the list's order, as lines of the one form

    /* >>name ------------------------------------------------------ */

(79 columns in all), and ">>" followed by a name must appear
nowhere else, so that grepping for a tag finds a section and nothing else.
Prints "ok      sections ..." or one line per fault and exits 1.

Usage: tools/check_sections.py [--root DIR]
"""
import argparse
import os
import re
import sys

TAG = re.compile(r'^/\* >>([a-z][a-z0-9-]*) -+ \*/$')
MENTION = re.compile(r'>>[a-z]')


def parse_index(lines):
    """The SECTIONS list of the manual: [(name, set of places)]."""
    out, inside = [], False
    for line in lines:
        if line.strip() == 'SECTIONS':
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            m = re.match(r'^ {9}([a-z][a-z0-9-]*) +.*?((?: [DIK])+)$', line)
            if m:
                out.append((m.group(1), set(m.group(2).split())))
    return out


def tags(lines, path, first, last, faults):
    """The tags in lines[first:last], checking that every '>>name' is a proper tag line."""
    found = []
    for i in range(first, last):
        line = lines[i]
        m = TAG.match(line)
        if m:
            if len(line) != 79:
                faults.append('%s:%d: tag >>%s is %d columns wide, want 79 (pad the dashes)' % (path, i + 1, m.group(1), len(line)))
            found.append((m.group(1), i + 1))
        elif MENTION.search(line):
            faults.append('%s:%d: ">>" and a name outside a tag line (grep for the tag would find it): %s'
                          % (path, i + 1, line.strip()[:80]))
    return found


def compare(place, want, found, faults):
    got = [name for name, _ in found]
    if got == want:
        return
    for k in range(max(len(want), len(got))):
        w = want[k] if k < len(want) else None
        g = found[k] if k < len(found) else None
        if g is None or w != g[0]:
            after = ('after >>' + want[k - 1]) if k else 'first'
            if w is None:
                faults.append('%s: tag >>%s at line %d is not in the SECTIONS list for this place' % (place, g[0], g[1]))
            elif g is None:
                faults.append('%s: tag >>%s is missing (%s)' % (place, w, after))
            elif w not in got:
                faults.append('%s: tag >>%s is missing (%s; found >>%s at line %d)' % (place, w, after, g[0], g[1]))
            else:
                faults.append('%s: tag >>%s is out of order: the list wants >>%s %s, line %d has >>%s'
                              % (place, g[0], w, after, g[1], g[0]))
            return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    a = ap.parse_args()
    h_path, k_path = os.path.join(a.root, 'gpudl.h'), os.path.join(a.root, 'gpudl_kernels.cu')
    h = open(h_path).read().split('\n')
    k = open(k_path).read().split('\n')
    faults = []
    index = parse_index(h)
    if not index:
        print('FAIL    sections: no SECTIONS list in the manual of gpudl.h')
        return 1
    names = [n for n, _ in index]
    for n in set(names):
        if names.count(n) > 1:
            faults.append('gpudl.h: SECTIONS lists %s twice' % n)
    try:
        split = h.index('#ifdef GPUDL_IMPLEMENTATION')
    except ValueError:
        print('FAIL    sections: gpudl.h has no "#ifdef GPUDL_IMPLEMENTATION" line')
        return 1
    start = next(i for i, line in enumerate(h) if line.strip() == '*/')   # the manual's own lines are free text
    places = [('gpudl.h (declarations)', 'D', tags(h, 'gpudl.h', start, split, faults)),
              ('gpudl.h (implementation)', 'I', tags(h, 'gpudl.h', split, len(h), faults)),
              ('gpudl_kernels.cu', 'K', tags(k, 'gpudl_kernels.cu', 0, len(k), faults))]
    for place, flag, found in places:
        compare(place, [n for n, where in index if flag in where], found, faults)
    if faults:
        for f in faults:
            print('FAIL    sections: ' + f)
        return 1
    print('ok      sections: %d in the list; %d in the declarations, %d in the implementation, %d in the kernels, in order'
          % (len(index), len(places[0][2]), len(places[1][2]), len(places[2][2])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
