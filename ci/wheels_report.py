#!/usr/bin/env python3
"""The audit of shipped wheels as Markdown: per wheel, the findings by file and kind, and the
communication kernels (allreduce, Lamport, custom and MNNVL allreduce, NCCL's device and
symmetric kernels) with their synchronisation classes on each architecture read.

    ci/wheels_report.py OUT       OUT holds the JSON reports of ci/audit_wheels.sh

Prints to stdout; exit 2 (one line) when OUT holds no report or one cannot be read.
"""
import collections
import json
import pathlib
import re
import sys

COMM = re.compile(r"allreduce|all_reduce|AllReduce|lamport|Lamport|cross_device_reduce|"
                  r"mnnvl|twoshot|oneshot|ncclDevKernel|ncclSymk", re.IGNORECASE)
SHOWN_PER_FILE = 12  # comm kernels listed per file; the rest are counted


def short(name, width=110):
    name = name.split("(")[0] if "(" in name else name
    return name if len(name) <= width else name[: width - 1] + "…"


def sync_text(code):
    return " ".join(sorted(code.get("sync", {}))) or "–"


def wheel_section(path):
    lines = [f"### {path.stem}", ""]
    text = path.read_text()
    if not text.strip():  # the audit ended with bad input: its stderr says why
        return lines + ["No report (the audit ended with bad input).", ""]
    report = json.loads(text)
    kinds = collections.Counter()
    for f in report.get("files", []):
        member = f["path"].split(":", 1)[-1]
        for x in f.get("findings", []):
            kinds[(member, x["kind"], x.get("severity", "finding"))] += 1
    if kinds:
        lines += ["| file | kind | severity | count |", "|---|---|---|---|"]
        lines += [f"| `{m}` | `{k}` | {s} | {n} |" for (m, k, s), n in sorted(kinds.items())]
    else:
        lines.append("No findings and no notes.")
    lines.append("")
    for f in report.get("files", []):
        member = f["path"].split(":", 1)[-1]
        comm = [k for k in f.get("kernels", []) if COMM.search(k["name"])]
        if not comm:
            continue
        unread = ", ".join(f.get("archs_not_read", [])) or "none"
        lines += [f"`{member}`: {len(comm)} comm kernels (architectures not read: {unread})", "",
                  "| kernel | PDL | SASS sync classes per architecture |", "|---|---|---|"]
        for k in comm[:SHOWN_PER_FILE]:
            per_arch = "; ".join(f"{c['arch']}: {sync_text(c)}" for c in k["code"]
                                 if c["source"] == "SASS")
            lines.append(f"| `{short(k['name'])}` | {'yes' if k.get('pdl') else 'no'} | {per_arch} |")
        if len(comm) > SHOWN_PER_FILE:
            lines.append(f"| … {len(comm) - SHOWN_PER_FILE} more | | |")
        lines.append("")
    return lines


def main():
    if len(sys.argv) != 2:
        print("usage: ci/wheels_report.py OUT", file=sys.stderr)
        return 2
    out = pathlib.Path(sys.argv[1])
    reports = sorted(out.glob("*.json"))
    if not reports:
        print(f"wheels_report.py: no JSON report in {out}", file=sys.stderr)
        return 2
    lines = []
    for path in reports:
        try:
            lines += wheel_section(path)
        except (OSError, ValueError, KeyError) as e:
            print(f"wheels_report.py: {path}: {e}", file=sys.stderr)
            return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
