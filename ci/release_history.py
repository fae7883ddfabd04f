#!/usr/bin/env python3
"""Releases of one PyPI package for the audit across releases (ci/audit_releases.sh).

    ci/release_history.py versions PACKAGE COUNT [--index-json FILE]
        the last COUNT final releases (no pre-releases, none yanked) that have a Linux x86_64
        wheel, oldest first, one per line; --index-json reads PyPI's JSON of the package from
        FILE instead of https://pypi.org/pypi/PACKAGE/json (tests)
    ci/release_history.py summary DIFF_JSON
        a Markdown table of `fusioncheck audit --diff-releases --json`: per step the kernels
        in both releases, gone and new, codes added or dropped, notes, findings; then each
        finding on a line
    ci/release_history.py check --diff DIFF_JSON --doc DOC [--drop-explanation N]
        every finding of the diff must match a row of the table under
        '## Explained release-diff findings' in DOC: regexes in backticks for the step
        ("FROM -> TO", full match), the kernel (searched in the demangled name), the
        architecture (full match) and the lost class (full match), then the reason.
        Prints UNEXPLAINED for a finding no row matches and STALE for a row that matches no
        finding of a step the diff covers; exit 1 on either, 0 when all are explained.
        --drop-explanation N leaves row N out (a negative control).

Exit 2 with one line on unreadable or malformed input. Stdlib only.
"""
import argparse
import json
import pathlib
import re
import sys
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "audit"))
from explained_findings import MalformedTable, explanation_rows  # noqa: E402

HEADING = "## Explained release-diff findings"
FIELDS = ["step", "kernel", "arch", "lost"]
FINAL_RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*(\.post[0-9]+)?")


def fail(message):
    print(f"release_history.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        fail(f"{path}: {e}")


def version_key(version):
    """2.28.3 < 2.28.10 < 2.28.10.post1 < 2.29.0"""
    release, _, post = version.partition(".post")
    return [int(x) for x in release.split(".")] + [int(post) if post else -1]


def versions(package, count, index_json):
    if index_json:
        index = read_json(index_json)
    else:
        url = f"https://pypi.org/pypi/{package}/json"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                index = json.load(response)
        except Exception as e:  # noqa: BLE001 - any failure of the index is one line
            fail(f"{url}: {e}")
    releases = index.get("releases") if isinstance(index, dict) else None
    if not isinstance(releases, dict):
        fail(f"{package}: the index has no releases")
    found = []
    for version, files in releases.items():
        if not FINAL_RELEASE.fullmatch(version) or not isinstance(files, list):
            continue
        wheels = [f for f in files if isinstance(f, dict) and not f.get("yanked")
                  and str(f.get("filename", "")).endswith(".whl")
                  and "x86_64" in str(f.get("filename", ""))]
        if wheels:
            found.append(version)
    if not found:
        fail(f"{package}: no final release with a Linux x86_64 wheel")
    for version in sorted(found, key=version_key)[-count:]:
        print(version)


def load_steps(path):
    steps = read_json(path)
    if not isinstance(steps, list) or not all(isinstance(s, dict) and "from" in s and "to" in s
                                              for s in steps):
        fail(f"{path}: not the JSON of `fusioncheck audit --diff-releases`")
    return steps


def findings_of(steps):
    """(step label, change) for every lost wait, fence or acquire."""
    return [(f"{s['from']} -> {s['to']}", c) for s in steps for c in s.get("changes", [])
            if c.get("severity") == "finding"]


def summary(path):
    steps = load_steps(path)
    print("| from → to | kernels in both | gone | new | codes added or dropped "
          "| changed (notes) | findings |")
    print("|---|---|---|---|---|---|---|")
    for s in steps:
        changes = s.get("changes", [])
        found = sum(1 for c in changes if c.get("severity") == "finding")
        print(f"| {s['from']} → {s['to']} | {s.get('matched_kernels', 0)} | "
              f"{len(s.get('gone', []))} | {len(s.get('added', []))} | "
              f"{len(s.get('codes_changed', []))} | {len(changes) - found} | {found} |")
    found = findings_of(steps)
    print()
    print(f"Findings (a lost wait, fence or acquire): {len(found)}")
    for step, c in found:
        print(f"- {step}: `{c['kernel']}` [{c['arch']} {c['source']}] lost "
              f"{', '.join(c.get('lost', []))}")


def check(path, doc, drop):
    steps = load_steps(path)
    try:
        rows = explanation_rows(pathlib.Path(doc).read_text(), HEADING, FIELDS)
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{doc}: {e}")
    except MalformedTable as e:
        fail(f"{doc}: {e}")
    if drop is not None:
        if not 1 <= drop <= len(rows):
            fail(f"--drop-explanation {drop}: the table has {len(rows)} rows")
        del rows[drop - 1]
    unexplained = 0
    for step, c in findings_of(steps):
        for lost in c.get("lost", []):
            if not lost.startswith(("griddep.wait", "fence")) and "acquire" not in lost:
                continue  # the change's other losses are notes
            match = [r for r in rows if r["step"].fullmatch(step) and r["kernel"].search(
                c["kernel"]) and r["arch"].fullmatch(c["arch"]) and r["lost"].fullmatch(lost)]
            for r in match:
                r["hits"] += 1
            if not match:
                unexplained += 1
                print(f"UNEXPLAINED: {step}: {c['kernel']} [{c['arch']}] lost {lost}")
    covered = {f"{s['from']} -> {s['to']}" for s in steps}
    stale = [r for r in rows if r["hits"] == 0 and any(r["step"].fullmatch(s) for s in covered)]
    for r in stale:
        print(f"STALE: {r['text']}")
    total = len(findings_of(steps))
    print(f"release_history.py: {total} finding(s), {unexplained} lost class(es) unexplained, "
          f"{len(stale)} stale row(s)")
    sys.exit(1 if unexplained or stale else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("versions")
    v.add_argument("package")
    v.add_argument("count", type=int)
    v.add_argument("--index-json")
    s = sub.add_parser("summary")
    s.add_argument("diff")
    c = sub.add_parser("check")
    c.add_argument("--diff", required=True)
    c.add_argument("--doc", required=True)
    c.add_argument("--drop-explanation", type=int)
    args = parser.parse_args()
    if args.command == "versions":
        if args.count < 2:
            fail(f"COUNT {args.count}: a diff needs two releases or more")
        versions(args.package, args.count, args.index_json)
    elif args.command == "summary":
        summary(args.diff)
    else:
        check(args.diff, args.doc, args.drop_explanation)


if __name__ == "__main__":
    main()
