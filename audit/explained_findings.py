"""The table of explained audit findings in a Markdown document, shared by the audit reports
(ci/wheels_findings.py, property_tests/audit/flashinfer/fi_audit_report.py). Stdlib only.

A table under a `## ` heading: its first row names the columns; each further row holds one
regex in backticks per matched field, then the reason. A regex writes its alternatives as
`\\|` (Markdown's escaped bar).
"""
import re


class MalformedTable(ValueError):
    """A row of the table is short or holds a regex that does not compile."""


def split_row(line):
    """The cells of a Markdown table row, split on unescaped bars, "\\|" unescaped."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def explanation_rows(doc_text, heading, fields):
    """Rows of the table under `heading` ("## Explained findings"): per row a dict with one
    compiled regex per name in `fields` (the first cells, in order), "text" (those cells
    joined, for messages) and "hits" (0, for the caller's counting). The header row, whose
    first cell is fields[0], is skipped; a row needs a reason cell after the fields."""
    rows, inside = [], False
    for line in doc_text.splitlines():
        if line.startswith("## "):
            inside = line.strip() == heading
            continue
        if not inside or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = split_row(line)
        if cells[0] == fields[0]:
            continue
        if len(cells) < len(fields) + 1:
            raise MalformedTable(f"an explanation row needs {len(fields) + 1} cells: {line}")
        try:
            regexes = [re.compile(c.strip("`")) for c in cells[:len(fields)]]
        except re.error as e:
            raise MalformedTable(f"bad regex in {line}: {e}") from None
        row = dict(zip(fields, regexes))
        row.update({"text": " | ".join(cells[:len(fields)]), "hits": 0})
        rows.append(row)
    return rows
