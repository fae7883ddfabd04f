"""The rewrite that holds a block at a synchronisation exit (adapters/flashinfer/cmake/sync_delay.cmake):
one hook after each block or cluster barrier and before each poll loop, on the same line, and the
sites it reports are the lines the hooks are on; nothing else changes.

usage: sync_delay_test.py CMAKE SCRIPT PINNED_MOE_HEADER
"""
import pathlib
import re
import sys
import unittest

from cmake_rewrite import run_rewrite

HOOK = "FUSIONCHECK_SYNC_DELAY(__LINE__);"
RANK_HOOK = "FUSIONCHECK_SYNC_DELAY_RANK(__LINE__, params.rank);"  # in a kernel body
AFTER = re.compile(r"__syncthreads\(\);|cluster\.sync\(\);|barrier\.sync\(\);")
BEFORE = re.compile(r"while \(\*reinterpret_cast<int volatile\*>\(counter_ptr\) != gridDim\.x\) \{")
POLL = re.compile(r"while \(!done\) \{")


def rewrite(cmake, script, header_text):
    """(the site lines the script reports, the rewritten text)."""
    printed, out = run_rewrite(cmake, script, header_text)
    found = re.search(r"sync delay sites: (\d+) \(lines ([0-9 ]*)\)", printed)
    if found is None:
        raise AssertionError(f"no 'sync delay sites' line: {printed!r}")
    lines = [int(n) for n in found.group(2).split()]
    if len(lines) != int(found.group(1)):
        raise AssertionError(f"site count and lines disagree: {found.group(0)!r}")
    return lines, out


class SyncDelayRewrite(unittest.TestCase):
    cmake = script = pinned = None

    def check_rewrite(self, text):
        lines, out = rewrite(self.cmake, self.script, text)
        expected = len(AFTER.findall(text)) + len(BEFORE.findall(text))
        polls = len(POLL.findall(text))
        self.assertEqual(len(lines), expected + polls)
        self.assertEqual(out.count(HOOK), expected)
        self.assertEqual(out.count(RANK_HOOK), polls)
        self.assertEqual(out.count("\n"), text.count("\n"), "a site must keep its line")
        hooked = [n for n, line in enumerate(out.split("\n"), 1)
                  for _ in range(line.count("FUSIONCHECK_SYNC_DELAY"))]
        self.assertEqual(lines, hooked, "a reported site is not where its hook is")
        self.assertEqual(out.replace(" " + HOOK, "").replace(HOOK + " ", "")
                         .replace(RANK_HOOK + " ", ""), text)
        return lines, out

    def test_pinned_header_has_every_kind_of_exit(self):
        text = pathlib.Path(self.pinned).read_text()
        lines, out = self.check_rewrite(text)
        rows = out.split("\n")
        for form in ("__syncthreads();", "cluster.sync();", "while (!done) {",
                     "while (*reinterpret_cast<int volatile*>(counter_ptr) != gridDim.x) {"):
            self.assertTrue(any(form in rows[n - 1] for n in lines), f"no site at {form}")

    def test_hooks_go_after_barriers_and_before_polls(self):
        text = ("  __syncthreads();\n  x = 1;\n    cluster.sync();\n"
                "  bool done = false;\n  while (!done) {\n  }\n")
        lines, out = self.check_rewrite(text)
        self.assertEqual(lines, [1, 3, 5])
        self.assertIn("  __syncthreads(); " + HOOK + "\n", out)
        self.assertIn("  " + RANK_HOOK + " while (!done) {\n", out)

    def test_header_without_exits_reports_none(self):
        text = "int f() { while (n > 0) { --n; } return n; }\n"
        lines, out = self.check_rewrite(text)
        self.assertEqual(lines, [])
        self.assertEqual(out, text)


if __name__ == "__main__":
    (SyncDelayRewrite.cmake, SyncDelayRewrite.script,
     SyncDelayRewrite.pinned) = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1])
