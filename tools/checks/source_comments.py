#!/usr/bin/env python3
"""Fails on a timing, a speed ratio or a machine name in a source comment.

Code comments keep the decision and point to the note that measured it
(docs/notes/); figures age with the machine, the compiler and the code, and
a comment cannot say when or where it was taken. Scans the C++ and CUDA
comments under the given folders (default: src, include) and prints each
offending line as path:line: text.

    python3 tools/checks/source_comments.py [DIR ...]
"""
import pathlib
import re
import sys

SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}

# What a measurement or a machine looks like in prose.
PATTERNS = [
    (r"\d\s*(?:ns|us|µs|ms)\b", "a time"),
    (r"\bns/el|\bns per\b|\bGB/s\b|\bTB/s\b", "a rate"),
    (r"\d(?:\.\d+)?\s*%", "a percentage"),
    (r"\d(?:\.\d+)?\s*x\s+(?:slower|faster)\b|\bx\d+\.\d+\b", "a speed ratio"),
    (r"\b(?:Xeon|EPYC|Zen\s*\d|Sapphire Rapids|Skylake|Ice Lake|Cascade Lake|"
     r"Genoa|Milan|Graviton|[AHB]100|H200|GH200)\b", "a machine"),
]
COMPILED = [(re.compile(p), what) for p, what in PATTERNS]


def comments(text):
    """(line number, comment text) for every // and /* */ comment, skipping
    string and character literals."""
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        elif c in "\"'":
            # A raw string R"(...)" holds no comments either.
            if c == '"' and i > 0 and text[i - 1] == "R":
                close = text.find("(", i)
                end = ")" + text[i + 1:close] + '"'
                j = text.find(end, close)
                j = n if j < 0 else j + len(end)
                line += text.count("\n", i, j)
                i = j
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def check(paths):
    bad = []
    for root in paths:
        for path in sorted(pathlib.Path(root).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for line, text in comments(path.read_text(encoding="utf-8")):
                for rx, what in COMPILED:
                    if rx.search(text):
                        bad.append("%s:%d: %s in a comment: %s" % (path, line, what,
                                                                  text.strip()))
                        break
    return bad


def main(argv):
    roots = argv[1:] or ["src", "include"]
    bad = check(roots)
    for b in bad:
        print(b)
    print("source_comments: %d comment lines with a figure or a machine in %s"
          % (len(bad), ", ".join(roots)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
