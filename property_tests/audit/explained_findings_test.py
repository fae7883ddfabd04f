#!/usr/bin/env python3
"""audit/explained_findings.py: the table parser both audit reports use. Stdlib unittest."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "audit"))
from explained_findings import MalformedTable, explanation_rows, split_row  # noqa: E402

FIELDS = ("wheel", "kernel", "kind")
DOC = """# A doc

## Other table
| wheel | kernel | kind | why |
|---|---|---|---|
| `elsewhere` | `x` | `y` | not this table |

## Explained findings

| wheel | kernel | kind | why |
|---|---|---|---|
| `wheela-1\\.0` | `foo\\|bar` | `empty-body` | a stub |
| `wheelb-.*` | `baz` | `sync-differs.*` | by design |

## After the table
| `wheelc` | `q` | `r` | outside again |
"""


class ExplanationRows(unittest.TestCase):
    def test_rows_of_the_heading_only_with_their_regexes(self):
        rows = explanation_rows(DOC, "## Explained findings", FIELDS)
        self.assertEqual([r["text"] for r in rows],
                         ["`wheela-1\\.0` | `foo|bar` | `empty-body`",
                          "`wheelb-.*` | `baz` | `sync-differs.*`"])
        self.assertTrue(rows[0]["wheel"].fullmatch("wheela-1.0"))
        self.assertFalse(rows[0]["wheel"].fullmatch("wheela-100"))
        # "\|" in a cell is the regex's alternation, not a cell boundary.
        self.assertTrue(rows[0]["kernel"].fullmatch("bar"))
        self.assertTrue(rows[1]["kind"].fullmatch("sync-differs-between-archs"))
        self.assertEqual({r["hits"] for r in rows}, {0})

    def test_another_heading_gives_its_own_rows(self):
        rows = explanation_rows(DOC, "## Other table", FIELDS)
        self.assertEqual(len(rows), 1)
        self.assertTrue(rows[0]["wheel"].fullmatch("elsewhere"))

    def test_no_such_heading_gives_no_rows(self):
        self.assertEqual(explanation_rows(DOC, "## Missing", FIELDS), [])

    def test_a_row_without_its_reason_is_refused(self):
        doc = "## Explained findings\n| `a` | `b` | `c` |\n"
        with self.assertRaisesRegex(MalformedTable, "needs 4 cells"):
            explanation_rows(doc, "## Explained findings", FIELDS)

    def test_a_regex_that_does_not_compile_is_refused(self):
        doc = "## Explained findings\n| `a(` | `b` | `c` | why |\n"
        with self.assertRaisesRegex(MalformedTable, "bad regex"):
            explanation_rows(doc, "## Explained findings", FIELDS)

    def test_split_row_keeps_escaped_bars(self):
        self.assertEqual(split_row("| a\\|b | c |"), ["a|b", "c"])


if __name__ == "__main__":
    unittest.main()
