#!/usr/bin/env python3
"""Fails when a file of the repository speaks of how the project was made instead of what it is.

    process_words.py ROOT [--exclude PATH]... [--min-files N]

Scans the file names and the text of every file under ROOT: the files `git ls-files` lists
(tracked, plus untracked ones that are not ignored) when ROOT is a git work tree, every file
below ROOT otherwise (.git and build/ left out). Prints one line per hit,
`path:line: rule: text`, then a summary; exit 0 clean, 1 hits, 2 bad input.

The rules (CONTRIBUTING.md, "Words about the process") are the RULES table below. An issue or
pull-request number is a fact about an upstream project when it names that project: on the
same line (a name from UPSTREAM, "upstream", or owner/repo#N), or by living in a file about
that project (adapters/<project>/, docs/<project>*.md). Words about an earlier state are a
fact when the line names an upstream project or one of its releases (a dotted version), or
lives in a file about that project.
"""
import argparse
import os
import re
import subprocess
import sys

UPSTREAM = r"(flashinfer|tensorrt-llm|trt-llm|nccl|vllm|sglang|cutlass|pytorch|cuda|rapidcheck|googletest|eigen|openmpi|cmake|upstream)"
UPSTREAM_LINE = re.compile(UPSTREAM, re.I)
# Projects whose history a line may tell (not CUDA or CMake: "the CUDA kernel" is ours).
HISTORY_LINE = re.compile(r"(flashinfer|tensorrt-llm|trt-llm|nccl|vllm|sglang|pytorch|pypi|upstream)", re.I)
RELEASE = re.compile(r"\b\d+\.\d+\.\d+\b")
UPSTREAM_FILE = re.compile(r"(^|/)adapters/[^/]+/|(^|/)docs/(flashinfer|tensorrt|nccl|vllm|sglang)[^/]*$", re.I)

# (rule, pattern, exemption): exemption "project" = the line or file names an upstream project;
# "history" = the line names an upstream project or release.
RULES = [
    ("work period", re.compile(r"\bsessions?[ _-]?\d+|\b(first|second|third|fourth|fifth|this|that|previous|next|"
                               r"earlier|later|last|same|each|every|one|another)\s+sessions?\b|\bsession's\b|"
                               r"\bsessions\b|\brounds?[ _-]?\d+\b(?!\s*(ms|us|µs|s|ns|calls|cases|tokens)\b)", re.I), None),
    ("issue number", re.compile(r"\b(issues?|tickets?|bugs?)\s+#?\d+|(^|[\s(\[])#\d+\b|\bPRs?\s*#?\d+|"
                                r"\bpull requests?\s+#?\d+", re.I), "project"),
    ("lent machine", re.compile(r"\blen(t|ds?|ding)\b|\b(we|they)\s+(were|got)\s+given\b|"
                                r"\b(machine|gpu|h200|device|host)s?\s+(we|that)\s+(were|was)\s+given\b", re.I), None),
    ("review", re.compile(r"\bfound\s+(by|in|during|on)\s+(a\s+|the\s+)?review|\breview(ers?)?\s+found\b|"
                          r"\breviewers?\b|\bafter\s+(a\s+|the\s+)?review\b", re.I), None),
    ("earlier state", re.compile(r"\bpreviously\b|\b(it|this|they|we|which|that)\s+(once\s+)?used\s+to\b|\bused\s+to\s+be\b|"
                                 r"\bno\s+longer\b|\b(earlier|previous|first|old|older)\s+(version|build|code|form|layout|"
                                 r"generator|draft)s?\b|\bbefore\s+this\s+change\b|\bnow\s+(does|also)\b|"
                                 r"\bwas\s+changed\s+to\b|\bhas\s+been\s+(changed|replaced|removed|rewritten)\b", re.I), "history"),
]

SKIP_DIRS = {".git", "build"}


def list_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        inside = subprocess.run(["git", "-C", root, "rev-parse", "--show-prefix"], capture_output=True,
                                check=True, text=True).stdout.strip()
        if inside:  # ROOT is a folder inside some other checkout: walk it instead
            raise OSError
        return sorted({p for p in out.decode("utf-8", "replace").split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/"))
        return sorted(files)


def exempt(kind, path, line):
    if kind == "project":
        return bool(UPSTREAM_LINE.search(line) or UPSTREAM_FILE.search(path) or re.search(r"\w/[\w.-]+#\d+", line))
    if kind == "history":
        return bool(HISTORY_LINE.search(line) or RELEASE.search(line) or UPSTREAM_FILE.search(path))
    return False


def scan_text(path, text):
    hits = []
    for rule, pattern, kind in RULES:
        if pattern.search(path) and not exempt(kind, path, path):
            hits.append(f"{path}:0: {rule}: file name")
    for n, line in enumerate(text.splitlines(), 1):
        for rule, pattern, kind in RULES:
            if pattern.search(line) and not exempt(kind, path, line):
                hits.append(f"{path}:{n}: {rule}: {line.strip()[:160]}")
    return hits


def main():
    ap = argparse.ArgumentParser(prog="process_words")
    ap.add_argument("root")
    ap.add_argument("--exclude", action="append", default=[], help="a path under ROOT to leave out (file or folder)")
    ap.add_argument("--min-files", type=int, default=1, help="fail when fewer files are scanned (a wrong ROOT)")
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        print(f"process_words: error: {a.root} is not a folder", file=sys.stderr)
        return 2
    root = os.path.abspath(a.root)
    excludes = [os.path.relpath(os.path.abspath(e), root).replace(os.sep, "/").rstrip("/") for e in a.exclude]
    hits, scanned = [], 0
    for rel in list_files(root):
        if any(rel == e or rel.startswith(e + "/") for e in excludes):
            continue
        full = os.path.join(root, rel)
        if not os.path.isfile(full):  # listed by git but deleted in the work tree
            continue
        scanned += 1
        with open(full, "rb") as f:
            data = f.read(2_000_000)
        text = "" if b"\0" in data[:8192] else data.decode("utf-8", "replace")  # binary: the name only
        hits += scan_text(rel, text)
    for h in hits:
        print(h)
    print(f"process_words: {scanned} files scanned, {len(hits)} hits")
    if scanned < a.min_files:
        print(f"process_words: error: too few files scanned ({scanned} < {a.min_files})", file=sys.stderr)
        return 2
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
