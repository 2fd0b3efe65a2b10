#!/usr/bin/python3
"""Checks that every #include of the project's own headers goes down the
layers (docs/ARCHITECTURE.md), never up or sideways, and that no two
folders include each other, directly or round a circle.

    check-layers.py [SOURCE_DIR]     exit 0 when every include is allowed,
                                     1 with one line per wrong include
    check-layers.py --self-test DIR  the check must refuse copies of DIR's
                                     sources with a wrong include put in

Headers are included by bare name ("tree.h"), so each is found by its
name under fs/ and formats/ (names are unique there; the script says so
when they are not). Run by ctest as layers.includes, so CI fails on a
wrong-way include."""

import os
import re
import sys

# From the bottom; each layer may include its own headers and those of
# the layers listed for it, nothing else.
ALLOWED = {
    "base": [],
    "codecs": ["base"],
    # source reads the Hub's JSON listings with codecs' JSON reader and
    # keys and checks the disk cache's blocks with its sha256.
    "source": ["base", "codecs"],
    "layout": ["base", "source", "codecs"],
    "driver": ["base", "source", "codecs", "layout"],
    "formats": ["base", "source", "codecs", "layout", "driver"],
    # Above the registry no driver is seen: fs/ reaches a format through
    # formats/registry.h and formats/layout only (mfs_formats keeps the
    # drivers' folders private, so such an include does not compile either).
    "fs": ["base", "source", "codecs", "layout", "formats"],
    "fuse": ["base", "source", "codecs", "layout", "formats", "fs"],
    "ls": ["base", "source", "codecs", "layout", "formats", "fs"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    """The folder a file is in (its unit for the circle check)."""
    return os.path.dirname(rel)


def layer_of(rel):
    """The layer of a file, by its path relative to the source dir."""
    parts = rel.split("/")
    if parts[0] == "formats":
        if len(parts) == 2:
            return "formats"
        if parts[1] in ("base", "source", "codecs", "layout"):
            return parts[1]
        return "driver"
    if parts[0] == "fs":
        if len(parts) > 2 and parts[1] in ("fuse", "ls"):
            return parts[1]
        return "fs"
    return None


def sources(root):
    for top in ("formats", "fs"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def find_cycle(graph):
    """A list of folders round a circle, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check(root):
    files = list(sources(root))
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    problems = []
    for name, rels in sorted(by_name.items()):
        if name.endswith(".h") and len(rels) > 1:
            problems.append("header %s is in more than one place: %s" % (name, ", ".join(rels)))
    folders = {}
    for rel in files:
        layer = layer_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            targets = by_name.get(os.path.basename(inc))
            if not targets:
                continue  # not one of ours
            # The one beside the includer first, as the compiler finds it.
            target = next((t for t in targets if folder_of(t) == folder_of(rel)), targets[0])
            tlayer = layer_of(target)
            if folder_of(target) != folder_of(rel):
                folders.setdefault(folder_of(rel), set()).add(folder_of(target))
            if tlayer == layer and (layer != "driver" or folder_of(target) == folder_of(rel)):
                continue
            if tlayer == "driver" and layer == "driver":
                problems.append("%s:%d: includes %s: one driver never includes another's header "
                                "(move what both need down, to formats/layout or formats/source)"
                                % (rel, line, target))
            elif tlayer == "driver" and layer in ("fs", "fuse", "ls"):
                problems.append("%s:%d: includes %s: above formats/registry.h no driver's header "
                                "is seen (reach the format through the registry, or move what is "
                                "needed down to formats/layout)" % (rel, line, target))
            elif tlayer not in ALLOWED[layer]:
                problems.append("%s:%d: includes %s (%s), above or beside %s: %s may include only %s"
                                % (rel, line, target, tlayer, layer, layer,
                                   ", ".join(ALLOWED[layer]) or "nothing of ours"))
    cycle = find_cycle(folders)
    if cycle:
        problems.append("folders include each other round a circle: " + " -> ".join(cycle))
    return problems


def self_test(root):
    """The check must find each planted wrong include in a copy of the
    sources (and nothing in the copy before): a check that cannot fail
    proves nothing."""
    import shutil
    import tempfile
    plants = [
        ("formats/layout/dtype.c", '#include "tree.h"\n', "up: layout into fs"),
        ("formats/base/err.c", '#include "doc.h"\n', "up: base into codecs"),
        ("formats/rten/rten.c", '#include "carton.h"\n', "sideways: one driver into another"),
        ("formats/source/local.c", '#include "model.h"\n', "up: source into layout"),
        ("fs/tree.c", '#include "ll.h"\n', "up: fs into fs/fuse"),
        ("fs/model.c", '#include "pickle.h"\n', "past the registry: fs into a driver"),
        ("fs/ls/ls_main.c", '#include "st_header.h"\n', "past the registry: ls into a driver"),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rel in sources(root):
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        if check(tmp):
            print("check-layers: self-test: the copy is refused before anything is planted")
            return 1
        for rel, text, what in plants:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as fh:
                orig = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + orig)
            found = check(tmp)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(orig)
            ok = any(p.startswith(rel + ":1:") for p in found)
            print("check-layers: self-test: %s (%s): %s" % (rel, what, "refused" if ok else "NOT refused"))
            failed += not ok
    print("%d passed, %d failed" % (len(plants) - failed, failed))
    return 1 if failed else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2])
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root)
    for p in problems:
        print("check-layers: " + p)
    if problems:
        print("check-layers: %d wrong include(s); the layers are in docs/ARCHITECTURE.md"
              % len(problems))
        return 1
    print("check-layers: every include goes down the layers, no circle between folders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
