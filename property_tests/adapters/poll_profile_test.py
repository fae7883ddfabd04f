"""The rewrite that times FlashInfer's PCIe polls (adapters/flashinfer/cmake/poll_profile.cmake):
every poll loop of the two known forms opens a timer on its own line, nothing else changes.

usage: poll_profile_test.py CMAKE SCRIPT PINNED_HEADER
"""
import pathlib
import re
import sys
import unittest

from cmake_rewrite import run_rewrite

SPIN = re.compile(r"while \(true\) \{")
BARRIER = re.compile(r"while \(!generation_reached\(([^;{]*)\)\) \{")


def rewrite(cmake, script, header_text):
    """(sites the script reports, the rewritten text)."""
    printed, out = run_rewrite(cmake, script, header_text)
    found = re.search(r"poll sites: (\d+)", printed)
    if found is None:
        raise AssertionError(f"no 'poll sites' line: {printed!r}")
    return int(found.group(1)), out


class PollProfileRewrite(unittest.TestCase):
    cmake = script = pinned = None

    def check_rewrite(self, text):
        sites, out = rewrite(self.cmake, self.script, text)
        expected = len(SPIN.findall(text)) + len(BARRIER.findall(text))
        self.assertEqual(sites, expected)
        self.assertEqual(out.count("FUSIONCHECK_POLL_TIMER"), expected)
        self.assertEqual(out.count("\n"), text.count("\n"), "a site must keep its line")
        self.assertFalse(SPIN.search(out) or BARRIER.search(out), "a poll loop left untimed")
        # Outside the rewritten loop heads, the text is the original's.
        strip = lambda t: re.sub(r"(while|for) \(.*\) \{", "", t)
        self.assertEqual(strip(out), strip(text))
        return sites, out

    def test_pinned_header_has_timed_polls(self):
        sites, _ = self.check_rewrite(pathlib.Path(self.pinned).read_text())
        self.assertGreater(sites, 0)

    def test_both_forms_become_timed_for_loops(self):
        text = ("a;\n  while (true) {\n    if (x) break;\n  }\n"
                "  while (!generation_reached(load_acquire_i32(slot), flag)) {\n  }\n")
        sites, out = self.check_rewrite(text)
        self.assertEqual(sites, 2)
        self.assertIn("  for (FUSIONCHECK_POLL_TIMER;;) {\n    if (x) break;", out)
        self.assertIn("for (FUSIONCHECK_POLL_TIMER; !generation_reached("
                      "load_acquire_i32(slot), flag);) {", out)

    def test_header_without_polls_reports_none(self):
        text = "int f() { while (n > 0) { --n; } return n; }\n"
        sites, out = self.check_rewrite(text)
        self.assertEqual(sites, 0)
        self.assertEqual(out, text)


if __name__ == "__main__":
    (PollProfileRewrite.cmake, PollProfileRewrite.script,
     PollProfileRewrite.pinned) = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1])
