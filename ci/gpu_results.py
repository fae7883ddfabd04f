#!/usr/bin/env python3
"""Writes the GPU suite's figures as Markdown: one row per step of ci/gpu_suite.sh (its
command, exit code, time and the line of its log that says what it found), then every kill
table. Reads REPORTS (steps.txt, NAME.cmd, NAME.log, kill-table-*.md, build.txt: the build as
the suite saw it). Commands are shown as a user types them: mpirun -np N fusioncheck ...,
without the report paths. With --into FILE the
block replaces what lies between FILE's gpu_suite markers; else it goes to stdout.
Exit 2 on bad input (no steps, markers missing), 3 when the output cannot be written."""
import argparse
import datetime
import os
import re
import subprocess
import sys

BEGIN = "<!-- gpu_suite:begin -->"
END = "<!-- gpu_suite:end -->"
# The line of a step's log that states its result, by step kind (first match wins).
RESULT_LINES = [
    re.compile(r"^fusioncheck gpu smoke: \d+ cases passed.*"),
    re.compile(r"^\d+ ranks, mutant none, .*checked cases/s: .*"),
    re.compile(r"^(\d+ tests passed|\d+% tests passed).*"),
]


# Options that only name where a step's reports went: left out of the command shown.
REPORT_OPTIONS = {"--json", "--junit", "--out", "--replay-out", "--output-junit"}


def display_command(cmd):
    words = cmd.split()
    if len(words) >= 2 and words[0] == "fc_mpirun":  # ci/lib.sh's mpirun with its flags
        words = ["mpirun", "-np"] + words[1:]
    shown = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w in REPORT_OPTIONS:
            skip = True
        else:
            shown.append(os.path.basename(w) if re.search(r"/bin/[^/]+$", w) else w)
    return " ".join(shown)


def fail(code, message):
    print(f"gpu_results: {message}", file=sys.stderr)
    sys.exit(code)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def steps(reports):
    text = read(os.path.join(reports, "steps.txt"))
    rows = []
    for line in text.splitlines():
        m = re.match(r"^(passed|FAILED)\s+(\S+)\s+rc=(\S+)\s+expected=(\S+)\s+(\d+s)?", line)
        if m:
            rows.append({"verdict": m[1], "name": m[2], "rc": m[3], "seconds": m[5] or ""})
    if not rows:
        fail(2, f"{reports}/steps.txt: no steps recorded")
    return rows


def kill_table_line(lines):
    rows = [l for l in lines if re.match(r"^\d+ ranks, mutant ", l)]
    control = [l for l in rows if re.match(r"^\d+ ranks, mutant none,", l)]
    mutants = [l for l in rows if l not in control]
    killed = sum(1 for l in mutants if ": FAILED" in l)
    verdict = "control FAILED" if any(": FAILED" in l for l in control) else "control passed"
    return f"{killed} of {len(mutants)} mutant runs killed; {verdict}"


def result_line(name, log):
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    if name.startswith("kill-table-"):
        return kill_table_line(lines)
    for pattern in RESULT_LINES:
        for l in lines:
            if pattern.match(l):
                return l
    return lines[-1] if lines else "(no output)"


def build_description(build, reports):
    recorded = read(os.path.join(reports, "build.txt")).strip()
    if recorded:
        return recorded
    cache = read(os.path.join(build, "CMakeCache.txt"))
    archs = re.search(r"^CMAKE_CUDA_ARCHITECTURES:\w+=(.*)$", cache, re.M)
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                                check=False).stdout.strip()
    except OSError:
        commit = ""
    return f"`{build}` (CUDA architectures {archs[1] if archs else 'unknown'}), commit {commit or 'unknown'}"


def device():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, check=False).stdout
    except OSError:
        return "unknown GPU"
    names = [l.strip() for l in out.splitlines() if l.strip()]
    return f"{len(names)} x {names[0]}" if names else "unknown GPU"


def block(reports, build, date, gpu):
    out = [BEGIN, "", f"Measured {date} by `ci/gpu_suite.sh` on {gpu}; build {build}.", "",
           "| step | command | exit | time | result |", "| --- | --- | --- | --- | --- |"]
    for s in steps(reports):
        cmd = display_command(read(os.path.join(reports, s["name"] + ".cmd"))).replace("|", "\\|")
        res = result_line(s["name"], read(os.path.join(reports, s["name"] + ".log"))).replace("|", "\\|")
        exit_text = s["rc"] if s["verdict"] == "passed" else f"**{s['rc']}**"
        shown = f"`{cmd}`" if cmd else "-"
        out.append(f"| {s['name']} | {shown} | {exit_text} | {s['seconds']} | {res} |")
    for name in sorted(os.listdir(reports)):
        if name.startswith("kill-table-") and name.endswith(".md"):
            out += ["", f"### {name[:-3]}", "", read(os.path.join(reports, name)).strip()]
    out += ["", END]
    return "\n".join(out) + "\n"


def write_into(path, text):
    old = read(path)
    if BEGIN not in old or END not in old or old.index(BEGIN) > old.index(END):
        fail(2, f"{path}: no '{BEGIN}' ... '{END}' block to replace")
    new = old[: old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, path)
    except OSError as e:
        fail(3, f"{path}: {e.strerror}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reports")
    p.add_argument("--build", default="build/default")
    p.add_argument("--into", help="a Markdown file with the gpu_suite markers")
    p.add_argument("--date", default=datetime.date.today().isoformat())
    p.add_argument("--device", help="the GPU, as results.md names it (default: nvidia-smi)")
    a = p.parse_args()
    if not os.path.isdir(a.reports):
        fail(2, f"{a.reports}: not a folder")
    text = block(a.reports, build_description(a.build, a.reports), a.date, a.device or device())
    if a.into:
        write_into(a.into, text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
