#!/usr/bin/env python3
"""Checks that docs/ holds only what its pages show, and that nothing points into docs/ at a
file that is not there.

    docs_refs.py ROOT [--exclude PATH]...

Files are those `git ls-files` lists when ROOT is a git work tree (tracked, or untracked and
not ignored), every file below ROOT otherwise.

1. Every file under ROOT/docs/ is named by a page: a Markdown file under docs/, or README.md
   or CONTRIBUTING.md at ROOT (a page naming itself does not count). A name is the path from
   the page's folder, from docs/, or from ROOT ("docs/..."); a folder named with a trailing
   "/" names every file below it, and a glob (replays/ours-*.json) every file it matches.
2. Every "docs/<path>" written in any text file under ROOT (sources, scripts, pages) names a
   file or folder that exists (a glob such as docs/replays/ours-*.json must match one), and
   so does every relative Markdown link of a page.
Prints one line per problem, then a summary; exit 0 clean, 1 problems, 2 bad input.
"""
import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys

REF = re.compile(r"(?<![\w/.-])docs/[\w./*-]*[\w/*]")
GLOB = re.compile(r"[\w./-]*[\w.-]\*[\w./*-]*|[\w./-]*\*[\w.-][\w./*-]*")
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)]*)?\)")
SKIP_DIRS = {".git", "build"}


def walk(root, sub=""):
    """The files under ROOT/SUB: those git lists (tracked, or untracked and not ignored) when
    ROOT is a git work tree, every file otherwise (.git and build/ left out)."""
    try:
        prefix = subprocess.run(["git", "-C", root, "rev-parse", "--show-prefix"], capture_output=True,
                                check=True, text=True).stdout.strip()
        if prefix:  # ROOT is a folder inside some other checkout: walk it instead
            raise OSError
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout.decode("utf-8", "replace").split("\0")
        return sorted({p for p in out if p and (not sub or p.startswith(sub + "/")) and os.path.isfile(os.path.join(root, p))})
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, names in os.walk(os.path.join(root, sub)):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            out += [os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/") for n in names]
        return sorted(out)


def read_text(path):
    with open(path, "rb") as f:
        data = f.read(2_000_000)
    return None if b"\0" in data[:8192] else data.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(prog="docs_refs")
    ap.add_argument("root")
    ap.add_argument("--exclude", action="append", default=[], help="a path under ROOT whose text is not read")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    if not os.path.isdir(os.path.join(root, "docs")):
        print(f"docs_refs: error: {a.root} has no docs/ folder", file=sys.stderr)
        return 2
    excludes = [os.path.relpath(os.path.abspath(e), root).replace(os.sep, "/").rstrip("/") for e in a.exclude]
    files = [f for f in walk(root) if not any(f == e or f.startswith(e + "/") for e in excludes)]
    docs = [f for f in walk(root, "docs")]
    pages = [f for f in docs if f.endswith(".md")] + [p for p in ("README.md", "CONTRIBUTING.md") if os.path.isfile(os.path.join(root, p))]
    problems = []

    # 1. every file under docs/ is named by some other page
    texts = {p: read_text(os.path.join(root, p)) or "" for p in pages}
    for f in docs:
        named = False
        for p, text in texts.items():
            if p == f:
                continue
            base = os.path.dirname(p)
            forms = {f, os.path.relpath(f, "docs").replace(os.sep, "/"), os.path.relpath(f, base or ".").replace(os.sep, "/")}
            folders = set()
            d = os.path.dirname(f)
            while d.startswith("docs/"):  # docs/ itself names nothing
                for form in (d, os.path.relpath(d, "docs"), os.path.relpath(d, base or ".")):
                    if form not in (".", ""):
                        folders.add(form.replace(os.sep, "/") + "/")
                d = os.path.dirname(d)
            if any(form in text for form in forms) or any(re.search(re.escape(x) + r"(?![\w*-]|\.\w)", text) for x in folders) \
                    or any(fnmatch.fnmatchcase(form, g) for g in GLOB.findall(text) for form in forms):
                named = True
                break
        if not named:
            problems.append(f"{f}: no page names it")

    # 2. what points into docs/ exists
    for f in files:
        text = read_text(os.path.join(root, f))
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in REF.finditer(line):
                target = m.group(0).rstrip(".")
                if not glob.glob(os.path.join(root, target)):
                    problems.append(f"{f}:{n}: {target} does not exist")
            if f.endswith(".md"):
                for m in LINK.finditer(line):
                    target = m.group(1)
                    if re.match(r"^[a-z]+:", target) or target.startswith("/"):
                        continue
                    if not os.path.exists(os.path.join(root, os.path.dirname(f), target)):
                        problems.append(f"{f}:{n}: link {target} does not exist")
    for p in problems:
        print(p)
    print(f"docs_refs: {len(docs)} files under docs/, {len(pages)} pages, {len(files)} files read, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
