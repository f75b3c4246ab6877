#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that src/server's folders are layers: a file includes headers and
calls functions of its own folder or of folders below it, never above.

    net < core < exchange < conn < h1, h2 < modules < (src/server itself)

h1/ and h2/ are side by side: neither reaches the other.  A call is an
identifier `hr__name(` whose definition (a non-static function) lives in
another folder.  Exits 1 with one line per breach; docs/architecture.md
draws the layers.  Usage: scripts/check_layers.py [ROOT]
"""
import os
import re
import sys

RANK = {"net": 0, "core": 1, "exchange": 2, "conn": 3, "h1": 4, "h2": 4,
        "modules": 5, "": 6}


def folder(rel):
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else ""


def allowed(src, dst):
    if src == dst:
        return True
    return RANK[dst] < RANK[src]


def code_of(text):
    """The text without comments and string literals (their places kept)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"',
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)) if not m.group(0).startswith('"') else '""',
                  text, flags=re.S)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    base = os.path.join(root, "src", "server")
    files = {}
    for dirpath, _, names in os.walk(base):
        for n in names:
            if n.endswith((".c", ".h")):
                p = os.path.join(dirpath, n)
                rel = os.path.relpath(p, base)
                with open(p, encoding="utf-8") as f:
                    files[rel] = f.read()
    unknown = sorted({folder(r) for r in files} - set(RANK))
    if unknown:
        print("check_layers: folders with no rank: " + ", ".join(unknown))
        return 1
    defs = {}
    defn = re.compile(r"^(?!static)[A-Za-z_][\w \*]*?\b(hr__\w+)\s*\([^;]*?\)\s*\{", re.M | re.S)
    for rel, text in files.items():
        if rel.endswith(".c"):
            for m in defn.finditer(text):
                defs.setdefault(m.group(1), rel)
    breaches = []
    inc = re.compile(r'^\s*#\s*include\s+"server/([^"]+)"', re.M)
    call = re.compile(r"\b(hr__\w+)\s*\(")
    for rel, text in sorted(files.items()):
        src = folder(rel)
        for m in inc.finditer(text):
            dst = folder(m.group(1))
            if dst not in RANK or not allowed(src, dst):
                breaches.append("%s includes server/%s" % (rel, m.group(1)))
        if not rel.endswith(".c"):
            continue
        seen = set()
        for m in call.finditer(code_of(text)):
            name = m.group(1)
            where = defs.get(name)
            if where is None or where == rel or name in seen:
                continue
            seen.add(name)
            if not allowed(src, folder(where)):
                breaches.append("%s calls %s (%s)" % (rel, name, where))
    for b in breaches:
        print("check_layers: " + b)
    if breaches:
        return 1
    print("check_layers: %d files in %d layers, no call or include upwards" %
          (len(files), len({folder(r) for r in files})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
