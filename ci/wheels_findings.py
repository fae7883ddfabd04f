#!/usr/bin/env python3
"""The findings of the shipped-wheels audit, and the check that each one is explained.

    ci/wheels_findings.py extract OUT            the findings (severity "finding") of the JSON
                                                 reports in OUT, one object per finding, as JSON
    ci/wheels_findings.py check --findings FILE --doc DOC [--drop-explanation N]

`check` reads the table under '## Explained findings' in DOC (docs/shipped_wheels.md): per
row, regexes in backticks for the wheel (full match on the wheel's file stem), the file inside
it (searched in the member path), the kernel (searched in the demangled name), the finding kind
and the architecture (full matches), then the reason. It prints `UNEXPLAINED: ...` for a finding
no row matches and `STALE: ...` for a row that matches no finding of a wheel the findings
cover, and exits 1 when there is either; 0 when every finding is explained. Exit 2 (one line)
on an unreadable or malformed input. --drop-explanation N leaves row N out (a negative control:
its findings must then be reported).
"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "audit"))
from explained_findings import MalformedTable, explanation_rows  # noqa: E402

HEADING = "## Explained findings"


def fail(message):
    print(f"wheels_findings.py: {message}", file=sys.stderr)
    sys.exit(2)


def extract(out):
    reports = sorted(pathlib.Path(out).glob("*.json"))
    reports = [r for r in reports if r.name != "findings.json"]
    if not reports:
        fail(f"no JSON report in {out}")
    found = []
    for path in reports:
        text = path.read_text()
        if not text.strip():
            continue  # an audit that ended with bad input: its stderr says why
        try:
            report = json.loads(text)
        except ValueError as e:
            fail(f"{path}: {e}")
        for f in report.get("files", []):
            member = f["path"].split(":", 1)[-1]
            for x in f.get("findings", []):
                if x.get("severity", "finding") != "finding":
                    continue  # a note does not fail the audit, so it needs no explanation
                found.append({"wheel": path.stem, "file": member, "kernel": x["kernel"],
                              "kind": x["kind"], "arch": x["arch"]})
    found.sort(key=lambda x: (x["wheel"], x["file"], x["kind"], x["arch"], x["kernel"]))
    return found


def explanations(doc_text):
    try:
        return explanation_rows(doc_text, HEADING, ("wheel", "file", "kernel", "kind", "arch"))
    except MalformedTable as e:
        fail(str(e))


def matches(row, x):
    return (row["wheel"].fullmatch(x["wheel"]) and row["file"].search(x["file"])
            and row["kernel"].search(x["kernel"]) and row["kind"].fullmatch(x["kind"])
            and row["arch"].fullmatch(x["arch"]))


def check(args):
    try:
        found = json.loads(pathlib.Path(args.findings).read_text())
        doc = pathlib.Path(args.doc).read_text()
    except (OSError, ValueError) as e:
        fail(str(e))
    if not isinstance(found, list) or any(not isinstance(x, dict) or
                                          {"wheel", "file", "kernel", "kind", "arch"} - x.keys()
                                          for x in found):
        fail(f"{args.findings}: not a list of findings (wheel, file, kernel, kind, arch)")
    rows = explanations(doc)
    if not rows:
        fail(f"{args.doc}: no rows under '{HEADING}'")
    if args.drop_explanation:
        if not 1 <= args.drop_explanation <= len(rows):
            fail(f"--drop-explanation {args.drop_explanation}: the doc has {len(rows)} rows")
        dropped = rows.pop(args.drop_explanation - 1)
        print(f"negative control: without explanation {args.drop_explanation}: {dropped['text']}")
    unexplained = 0
    for x in found:
        hit = [r for r in rows if matches(r, x)]
        for r in hit:
            r["hits"] += 1
        if not hit:
            unexplained += 1
            print(f"UNEXPLAINED: {x['wheel']} {x['file']} {x['kind']} {x['arch']} {x['kernel']}")
    wheels = {x["wheel"] for x in found}
    stale = [r for r in rows if r["hits"] == 0 and any(r["wheel"].fullmatch(w) for w in wheels)]
    if args.drop_explanation:
        stale = []
    for r in stale:
        print(f"STALE: explanation matches no finding: {r['text']}")
    if unexplained or stale:
        print(f"{unexplained} unexplained finding(s), {len(stale)} stale explanation(s): "
              f"explain them under '{HEADING}' in {args.doc}")
        return 1
    print(f"every finding is explained ({len(found)} finding(s), {len(rows)} explanation(s))")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("extract")
    p.add_argument("out")
    p = sub.add_parser("check")
    p.add_argument("--findings", required=True)
    p.add_argument("--doc", required=True)
    p.add_argument("--drop-explanation", type=int, default=0)
    args = parser.parse_args()
    if args.command == "extract":
        print(json.dumps(extract(args.out), indent=1))
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
