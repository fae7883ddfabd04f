#!/usr/bin/env python3
"""PNG plots from the JSON of `fusioncheck gpu bench --json` and `gpu bench --wait-profile --json`.

    plot_bench.py IN.json OUT_DIR

A bench table gives OUT_DIR/<stem>_latency.png (latency against tokens, one panel per hidden
size, a line per kernel with its p10-p90 band) and OUT_DIR/<stem>_speedup.png (the unfused
path's latency over each fused kernel's, a compared kernel's over ours where it was timed, and our
one-shot without the poll bound over ours where that was timed: below 1, what the bound costs).
A wait profile gives OUT_DIR/<stem>.png: one heat map per rank, blocks x peers, of the time
spent polling each peer's slot. The wait profile of another kernel (`--wait-profile --kernel`,
per poll site) gives OUT_DIR/<stem>.png: one bar per rank, its call's time split into thread 0's
polls at each site (mean over the blocks that poll there) and the rest.
Bad input: one line on stderr, exit code 2.
"""
import json
import os
import sys

OURS = ("one-shot", "two-shot", "auto", "unfused")
UNBOUNDED = "one-shot unbounded polls"  # gpu bench's benchmark-only instance


class BadInput(Exception):
    pass


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON: {e.msg} at line {e.lineno}")
    if not isinstance(data, dict) or not ("rows" in data or "profile" in data):
        raise BadInput(f"{path}: neither a bench table (\"rows\") nor a wait profile (\"profile\")")
    return data


def need(obj, key, where):
    if not isinstance(obj, dict) or key not in obj:
        raise BadInput(f"{where}: missing \"{key}\"")
    return obj[key]


def number(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{where}: {json.dumps(value)} is not a number")
    return value


def bench_series(data, path):
    """{hidden: {column: [(tokens, median, p10, p90)]}} from the rows' graph timings."""
    columns = need(data, "columns", path)
    rows = need(data, "rows", path)
    if not isinstance(rows, list) or not rows:
        raise BadInput(f"{path}: \"rows\" is empty")
    series = {}
    for i, row in enumerate(rows):
        where = f"{path}: rows[{i}]"
        tokens, hidden, graph = need(row, "tokens", where), need(row, "hidden", where), need(row, "graph", where)
        for c in columns:
            g = graph.get(c)
            if g is None:
                continue  # refused at this size
            at = f"{where}.graph.{c}"
            point = (number(tokens, f"{where}.tokens"),) + tuple(number(need(g, k, at), f"{at}.{k}")
                                                                 for k in ("median", "p10", "p90"))
            series.setdefault(hidden, {}).setdefault(c, []).append(point)
    if not series:
        raise BadInput(f"{path}: no column was timed at any size (every one refused)")
    return fastest_grid(data, columns, series, path)


# More launch variants of a compared kernel than this: one line per kernel of it, its fastest
# grid at each size (a figure of 19 lines is unreadable; the JSON keeps every column).
MAX_VARIANT_LINES = 6


def fastest_grid(data, columns, series, path):
    """Collapses the compared kernel's launch-variant columns ("<kernel> v<i>", named in
    "compared_variants" as "<kernel name> <blocks>x<threads>") into one column per kernel name:
    at each size the variant of the smallest median, its own p10 and p90."""
    variants = data.get("compared_variants") or []
    if len(variants) <= MAX_VARIANT_LINES:
        return columns, series
    if not all(isinstance(v, str) and " " in v for v in variants):
        raise BadInput(f"{path}: \"compared_variants\" is not a list of \"<kernel> <grid>\" names")
    group_of = {}
    for c in columns:
        head, _, index = c.rpartition(" v")
        if head and index.isdigit() and int(index) < len(variants):
            group_of[c] = f"{head}: {variants[int(index)].rsplit(' ', 1)[0]} (fastest grid)"
    merged_columns = [c for c in columns if c not in group_of]
    for g in group_of.values():
        if g not in merged_columns:
            merged_columns.append(g)
    merged = {}
    for hidden, by_column in series.items():
        best = {}
        for c, points in by_column.items():
            target = group_of.get(c, c)
            for p in points:
                key = (target, p[0])
                if target == c or key not in best or p[1] < best[key][1]:
                    best[key] = p
        for (target, _), p in sorted(best.items()):
            merged.setdefault(hidden, {}).setdefault(target, []).append(p)
    return merged_columns, merged


def plot_bench(data, path, out_dir, plt):
    columns, series = bench_series(data, path)
    stem = os.path.splitext(os.path.basename(path))[0]
    hiddens = sorted(series)
    trigger = f", PDL trigger {data['trigger']}" if data.get("trigger") == "early" else ""
    computed = "allreduce alone" if data.get("pattern") == "allreduce" else "residual + RMSNorm"
    subtitle = (f"{data.get('setup', '')}\nbf16 {computed}, per call from CUDA graphs (median, p10-p90)"
                f"{trigger}")

    def draw_latency(ax, hidden):
        for c in columns:
            pts = sorted(series[hidden].get(c, []))
            if not pts:
                continue
            t = [p[0] for p in pts]
            line, = ax.plot(t, [p[1] for p in pts], marker="o", ms=3, label=c)
            ax.fill_between(t, [p[2] for p in pts], [p[3] for p in pts], color=line.get_color(), alpha=0.2)
        ax.set_yscale("log")
        ax.set_ylabel("latency per call (us)")

    def draw_speedup(ax, hidden):
        med = {c: dict((p[0], p[1]) for p in series[hidden].get(c, [])) for c in columns}
        ratios = [(f"unfused / {c}", "unfused", c) for c in ("one-shot", "two-shot", "auto")]
        # Another kernel's column over ours on the same path ("<kernel> [v<i>] two-shot"), or over
        # our automatic choice where it names no path of ours (a launch variant, "<kernel> v<i>").
        for c in columns:
            if c not in OURS + (UNBOUNDED,):
                path = c.rsplit(" ", 1)[-1]
                path = path if path in OURS else "auto"
                ratios.append((f"{c} / ours {path}", c, path))
        ratios.append((f"{UNBOUNDED} / one-shot (bound's cost)", UNBOUNDED, "one-shot"))
        for label, num, den in ratios:
            t = sorted(x for x in set(med.get(num, {})) & set(med.get(den, {})) if med[den][x] > 0)
            if t:
                ax.plot(t, [med[num][x] / med[den][x] for x in t], marker="o", ms=3, label=label)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(2.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("speed-up (x), > 1: ours faster")

    written = []
    for name, draw in (("latency", draw_latency), ("speedup", draw_speedup)):
        fig, axes = plt.subplots(1, len(hiddens), figsize=(6.5 * len(hiddens), 4.8), squeeze=False)
        for ax, hidden in zip(axes[0], hiddens):
            draw(ax, hidden)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tokens")
            ax.set_title(f"hidden {hidden}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(subtitle, fontsize=9)
        fig.tight_layout()
        written.append(os.path.join(out_dir, f"{stem}_{name}.png"))
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


def row_values(block, where):
    return list(need(block, "poll_us_by_peer", where)) + [need(block, "work_us", where)]


def plot_profile(data, path, out_dir, plt):
    profile = need(data, "profile", path)
    ranks = need(data, "ranks", path)
    if not isinstance(profile, list) or len(profile) != ranks:
        raise BadInput(f"{path}: \"profile\" has {len(profile) if isinstance(profile, list) else 'no'} ranks, "
                       f"\"ranks\" says {ranks}")
    grids, works = [], []
    for r, entry in enumerate(profile):
        blocks = need(entry, "blocks", f"{path}: profile[{r}]")
        if not blocks:
            raise BadInput(f"{path}: profile[{r}] has no blocks")
        grid = [need(b, "poll_us_by_peer", f"{path}: profile[{r}].blocks") for b in blocks]
        if any(len(row) != ranks for row in grid):
            raise BadInput(f"{path}: profile[{r}]: a block's poll_us_by_peer does not have {ranks} peers")
        grids.append(grid)
        for b in blocks:
            for v in row_values(b, f"{path}: profile[{r}].blocks"):
                number(v, f"{path}: profile[{r}].blocks")
        works.append(sum(need(b, "work_us", path) for b in blocks) / len(blocks))
    top = max(max(max(row) for row in g) for g in grids) or 1.0
    fig, axes = plt.subplots(1, ranks, figsize=(3.0 + 2.8 * ranks, 4.6), squeeze=False)
    for r, ax in enumerate(axes[0]):
        image = ax.imshow(grids[r], aspect="auto", cmap="magma", vmin=0.0, vmax=top, interpolation="nearest")
        ax.set_xticks(range(ranks))
        ax.set_xlabel("peer whose slot it polled")
        if r == 0:
            ax.set_ylabel("block")
        ax.set_title(f"rank {r}\nwork {works[r]:.2f} us / block", fontsize=9)
    fig.colorbar(image, ax=list(axes[0]), label="polling (us per call)")
    delay = (f"rank {data.get('delay_rank')} starts {data.get('delay_us')} us late"
             if data.get("delay_rank", -1) >= 0 else "no injected delay")
    fig.suptitle(f"one-shot wait profile, {data.get('tokens')} x {data.get('hidden')}, "
                 f"mean of {data.get('calls')} calls; {delay}\n{data.get('setup', '')}", fontsize=9, y=1.06)
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(out_dir, f"{stem}.png")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [out]


def poll_sites(data, path):
    """Per rank: (call_us, [(line, mean_us)]), checked."""
    profile = need(data, "profile", path)
    ranks = need(data, "ranks", path)
    if not isinstance(profile, list) or len(profile) != ranks:
        raise BadInput(f"{path}: \"profile\" has {len(profile) if isinstance(profile, list) else 'no'} ranks, "
                       f"\"ranks\" says {ranks}")
    out = []
    for r, entry in enumerate(profile):
        where = f"{path}: profile[{r}]"
        call = number(need(entry, "call_us", where), f"{where}.call_us")
        sites = need(entry, "sites", where)
        if not isinstance(sites, list):
            raise BadInput(f"{where}: \"sites\" is not a list")
        out.append((call, [(need(s, "line", f"{where}.sites"),
                            number(need(s, "mean_us", f"{where}.sites"), f"{where}.sites.mean_us"))
                           for s in sites]))
    return out


def plot_poll_sites(data, path, out_dir, plt):
    ranks = poll_sites(data, path)
    lines = sorted({line for _, sites in ranks for line, _ in sites})
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9.0, 1.6 + 0.5 * len(ranks)))
    for r, (call, sites) in enumerate(ranks):
        left = 0.0
        for line, mean in sites:
            i = lines.index(line)
            ax.barh(r, mean, left=left, color=colours(i % 10),
                    label=f"polls at line {line}")
            left += mean
        ax.barh(r, max(0.0, call - left), left=left, color="0.8", label="rest of the call" if r == 0 else None)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([f"rank {r}" for r in range(len(ranks))])
    ax.invert_yaxis()
    ax.set_xlabel("us per call (thread 0; the call between events around its launch)")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7, ncol=4, loc="upper center",
              bbox_to_anchor=(0.5, -0.3))
    delay = (f"rank {data.get('delay_rank')} starts {data.get('delay_us')} us late"
             if data.get("delay_rank", -1) >= 0 else "no injected delay")
    ax.set_title(f"{data.get('variant_name', data.get('kernel'))}, {data.get('tokens')} x "
                 f"{data.get('hidden')}, mean of {data.get('calls')} calls; {delay}\n"
                 f"lines of {data.get('source', 'its header')}", fontsize=9)
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(out_dir, f"{stem}.png")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [out]


def plot_steps(data, path, out_dir, plt):
    """Thread 0's time per kernel step, one stacked bar per rank (profiles that record steps)."""
    steps = data.get("steps")
    if steps is None:
        return []
    if not isinstance(steps, list) or not steps:
        raise BadInput(f"{path}: \"steps\" is not a list of step names")
    durations = []
    for r, entry in enumerate(need(data, "profile", path)):
        blocks = need(entry, "blocks", f"{path}: profile[{r}]")
        mean = [0.0] * len(steps)
        for b in blocks:
            ends = need(b, "step_end_us", f"{path}: profile[{r}].blocks")
            if not isinstance(ends, list) or len(ends) != len(steps):
                raise BadInput(f"{path}: profile[{r}]: a block's step_end_us does not have {len(steps)} entries")
            for i, v in enumerate(ends):
                number(v, f"{path}: profile[{r}].blocks")
                mean[i] += (v - (ends[i - 1] if i > 0 else 0.0)) / len(blocks)
        durations.append(mean)
    fig, ax = plt.subplots(figsize=(9.0, 1.2 + 0.55 * len(durations)))
    colours = plt.get_cmap("tab10")
    for r, mean in enumerate(durations):
        left = 0.0
        for i, d in enumerate(mean):
            ax.barh(r, d, left=left, color=colours(i % 10), label=steps[i] if r == 0 else None)
            left += d
    ax.set_yticks(range(len(durations)))
    ax.set_yticklabels([f"rank {r}" for r in range(len(durations))])
    ax.invert_yaxis()
    ax.set_xlabel("us from the kernel's start (thread 0, mean over blocks and calls)")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    ax.set_title(f"one-shot steps, {data.get('tokens')} x {data.get('hidden')}", fontsize=9)
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(out_dir, f"{stem}_steps.png")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [out]


def main(argv):
    if len(argv) != 3:
        raise BadInput("usage: plot_bench.py IN.json OUT_DIR")
    path, out_dir = argv[1], argv[2]
    data = load(path)
    if not os.path.isdir(out_dir):
        raise BadInput(f"{out_dir}: not a folder")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BadInput("matplotlib is not installed (Debian: python3-matplotlib; run ci/install_deps.sh)")
    if "profile" in data and "kernel" in data:
        written = plot_poll_sites(data, path, out_dir, plt)
    elif "profile" in data:
        written = plot_profile(data, path, out_dir, plt) + plot_steps(data, path, out_dir, plt)
    else:
        written = plot_bench(data, path, out_dir, plt)
    for f in written:
        print(f)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except BadInput as e:
        print(f"plot_bench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except (TypeError, ValueError, AttributeError, KeyError) as e:  # a value of the wrong kind
        print(f"plot_bench: error: {sys.argv[1]}: malformed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
