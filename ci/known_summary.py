#!/usr/bin/env python3
"""Sums up the known findings of a GPU suite run: reads the JSON reports of REPORTS
(smoke-*.json, check-*.json, kill-table-*.json) and prints one line, "N known findings
reproduced, M new", then a line per reproduced id and per report with a new finding. New
findings in a kill table count only on its control rows (a killed mutant is not one).
Exit 0 (it only reports; the steps' exit codes decide the suite), 2 when REPORTS is no folder
or a report is not JSON."""
import glob
import json
import os
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"known_summary: {path}: {e}", file=sys.stderr)
        sys.exit(2)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: known_summary.py REPORTS_DIR", file=sys.stderr)
        return 2
    reports = sys.argv[1]
    reproduced = {}  # id -> reports it was reproduced in
    new = []
    for path in sorted(glob.glob(os.path.join(reports, "smoke-*.json"))):
        for case in load(path):
            outcome = case.get("outcome", "")
            if outcome.startswith("known "):
                reproduced.setdefault(outcome[len("known "):], set()).add(os.path.basename(path))
            elif outcome == "fail":
                new.append(os.path.basename(path))
    for pattern in ("check-*.json", "kill-table-*.json"):
        for path in sorted(glob.glob(os.path.join(reports, pattern))):
            data = load(path)
            runs = data if isinstance(data, list) else [data]
            for run in runs:
                for t in run.get("known_findings", []):
                    if t.get("state") == "known":
                        reproduced.setdefault(t["id"], set()).add(os.path.basename(path))
                if run.get("new_finding") and run.get("mutant", "none") == "none":
                    new.append(os.path.basename(path))
    new = sorted(set(new))
    print(f"gpu_suite: {len(reproduced)} known findings reproduced, {len(new)} new")
    for fid in sorted(reproduced):
        print(f"  known {fid}: {', '.join(sorted(reproduced[fid]))}")
    for name in new:
        print(f"  NEW finding in {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
