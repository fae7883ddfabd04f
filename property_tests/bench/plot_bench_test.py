#!/usr/bin/env python3
"""bench/plots/plot_bench.py's collapse of a compared kernel's launch variants into one line per
kernel (its fastest grid at each size). Stdlib unittest; no matplotlib needed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "plots"))
import plot_bench  # noqa: E402

# Seven variants of two kernels (more than MAX_VARIANT_LINES), beside our one-shot.
VARIANTS = [f"kernel_a {g}" for g in ("16x128", "1x256", "4x256", "32x512")] + \
           [f"kernel_b {g}" for g in ("16x128", "1x256", "4x256")]
COLUMNS = ["one-shot"] + [f"other v{i}" for i in range(len(VARIANTS))]


def table(medians_by_tokens, variants=VARIANTS):
    rows = []
    for tokens, medians in medians_by_tokens.items():
        graph = {c: ({"median": m, "p10": m - 0.5, "p90": m + 0.5} if m is not None else None)
                 for c, m in zip(COLUMNS, medians)}
        rows.append({"tokens": tokens, "hidden": 4096, "graph": graph})
    return {"columns": COLUMNS, "rows": rows, "compared_variants": variants}


class FastestGrid(unittest.TestCase):
    def test_one_line_per_kernel_holding_its_fastest_variant_at_each_size(self):
        data = table({1: [3.0, 9.0, 2.0, 7.0, 8.0, 6.0, 5.0, 4.0],
                      64: [6.0, 1.0, 9.0, 9.0, None, 9.0, 9.0, 2.5]})
        columns, series = plot_bench.bench_series(data, "t.json")
        a, b = "other: kernel_a (fastest grid)", "other: kernel_b (fastest grid)"
        self.assertEqual(columns, ["one-shot", a, b])
        self.assertEqual(series[4096]["one-shot"], [(1, 3.0, 2.5, 3.5), (64, 6.0, 5.5, 6.5)])
        # kernel_a: v1 (2.0) at 1 token, v0 (1.0) at 64; a refused variant (None) is no candidate.
        self.assertEqual(series[4096][a], [(1, 2.0, 1.5, 2.5), (64, 1.0, 0.5, 1.5)])
        self.assertEqual(series[4096][b], [(1, 4.0, 3.5, 4.5), (64, 2.5, 2.0, 3.0)])

    def test_few_variants_keep_their_own_lines(self):
        data = table({1: [3.0, 9.0, 2.0, 7.0, 8.0, 6.0, 5.0, 4.0]})
        data["compared_variants"] = VARIANTS[:6]
        data["columns"] = COLUMNS[:7]
        columns, series = plot_bench.bench_series(data, "t.json")
        self.assertEqual(columns, COLUMNS[:7])
        self.assertEqual(series[4096]["other v2"], [(1, 7.0, 6.5, 7.5)])

    def test_variant_names_without_a_grid_are_bad_input(self):
        data = table({1: [3.0, 9.0, 2.0, 7.0, 8.0, 6.0, 5.0, 4.0]}, variants=list(range(7)))
        with self.assertRaisesRegex(plot_bench.BadInput, "compared_variants"):
            plot_bench.bench_series(data, "t.json")


if __name__ == "__main__":
    unittest.main()
