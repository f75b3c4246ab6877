#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the user documentation (README.md and docs/*.md) against the code:

- every public name it cites (hr_...) is declared in a public header
  (include/hroute.h, include/hroute/*.h), and every internal one (hr__...,
  in the contributors' pages) in src/; a name ending in `_` (hr_stream_*)
  is a prefix some declared name has;
- every `type.field` it cites (hr_server_options_t.max_body_bytes, ...)
  names a field of that structure, and every option it names alone
  (`body_timeout_ms`, `write_high_water_bytes`, ...) a field or parameter
  in a public header;
- every file or folder it points to (src/..., tests/..., bench/...,
  examples/..., scripts/..., docs/..., include/..., tools/...) exists, and
  every relative Markdown link resolves.

Exits 1 with one line per stale reference.  Usage: scripts/check_docs.py [ROOT]
"""
import glob
import os
import re
import sys


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    headers = [os.path.join(root, "include", "hroute.h")] + sorted(
        glob.glob(os.path.join(root, "include", "hroute", "*.h")))
    api = ""
    for h in headers:
        with open(h, encoding="utf-8") as f:
            api += f.read() + "\n"
    # Comments out, so that a name only mentioned in a comment does not count.
    code = re.sub(r"/\*.*?\*/", " ", api, flags=re.S)
    code = re.sub(r"//[^\n]*", " ", code)
    names = set(re.findall(r"\bhr_[a-z0-9_]+\b", code))
    internal = set()
    for f in glob.glob(os.path.join(root, "src", "**", "*.[ch]"), recursive=True):
        with open(f, encoding="utf-8") as fh:
            internal |= set(re.findall(r"\bhr__[a-z0-9_]+\b", fh.read()))
    idents = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", code))  # fields, parameters
    structs = {}
    for m in re.finditer(r"typedef struct\s+\w*\s*\{(.*?)\}\s*(hr_[a-z0-9_]+_t)\s*;", code, re.S):
        fields = set(re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?::\s*\d+)?\s*[;,]", m.group(1)))
        fields |= set(re.findall(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", m.group(1)))
        structs[m.group(2)] = fields
    # Folders the tree ignores hold what runs write (bench/results/): not checked.
    ignored = []
    gi = os.path.join(root, ".gitignore")
    if os.path.exists(gi):
        with open(gi, encoding="utf-8") as f:
            ignored = [l.strip().strip("/") + "/" for l in f
                       if l.startswith("/") and l.strip().endswith("/")]
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    bad = []
    for page in pages:
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for lineno, line in enumerate(text.split("\n"), 1):
            for n in re.findall(r"\bhr_[a-z0-9_]+", line):
                known = internal if n.startswith("hr__") else names
                if n.endswith("_"):
                    found = any(k.startswith(n) for k in known)
                else:
                    found = n in known
                if not found:
                    where = "src/" if n.startswith("hr__") else "include/"
                    bad.append("%s:%d: %s is not declared in %s" % (rel, lineno, n, where))
            for t, fld in re.findall(r"\b(hr_[a-z0-9_]+_t)\.([a-z_][a-z0-9_]*)", line):
                if t in structs and fld not in structs[t]:
                    bad.append("%s:%d: %s has no field %s" % (rel, lineno, t, fld))
            contributors = rel in ("docs/architecture.md", "docs/concurrency.md")
            for o in [] if contributors else re.findall(r"`([a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:ms|bytes|rate|fields|connections|streams|mark))`", line):
                if o not in idents and not any(o in f for f in structs.values()):
                    bad.append("%s:%d: option %s is no field of a public structure" % (rel, lineno, o))
            for p in re.findall(r"`((?:src|tests|bench|examples|scripts|docs|include|tools)/[^`\s*{}<>]*)`",
                                line):
                p = p.rstrip(".,:;)")
                p = re.sub(r"\s.*$", "", p)
                if re.search(r"[A-Z]{3,}", p) or any(p.startswith(i) for i in ignored):
                    continue  # a placeholder (tests/mutants/NAME.patch), or a run's output
                if p and not glob.glob(os.path.join(root, p)):
                    bad.append("%s:%d: %s does not exist" % (rel, lineno, p))
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue
                if not os.path.exists(os.path.join(os.path.dirname(page), target)):
                    bad.append("%s:%d: link to %s does not resolve" % (rel, lineno, target))
    sys.stdout.write("".join("check_docs: %s\n" % b for b in bad))
    if bad:
        return 1
    print("check_docs: %d pages, every name, field, path and link found" % len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
