"""Rendering rows of figures as the stdout table and the Markdown tables of docs/benchmarks.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SUBJECTS = ("stratus", "floor", "awslabs", "sdk", "fastmcp", "rmsl")
LABELS = {
    "stratus": "Stratus",
    "floor": "floor",
    "awslabs": "awslabs",
    "sdk": "SDK",
    "fastmcp": "FastMCP",
    "rmsl": "run-mcp-servers",
    "adapter": "adapter alone",
    "stratus-emf": "Stratus, emf",
    "stratus-stateless": "Stratus, 2026-07-28",
}


def references(subjects: Sequence[str]) -> tuple[str, ...]:
    """The subjects Stratus's figure is divided by: every column but Stratus's own."""
    return tuple(subject for subject in subjects if subject != "stratus")


def header(subjects: Sequence[str] = SUBJECTS) -> tuple[str, ...]:
    return (
        "figure",
        *(LABELS[subject] for subject in subjects),
        *(f"Stratus/{LABELS[reference]}" for reference in references(subjects)),
        "target",
        "verdict",
    )


@dataclass(frozen=True)
class Row:
    """One figure for the subjects, with its ratios and (when it has one) its target and verdict."""

    figure: str
    values: Mapping[str, float | str | None]
    digits: int = 1
    ratios: bool = True
    target: str = ""
    verdict: str = ""

    def ratio(self, reference: str) -> float | None:
        mine, theirs = self.values.get("stratus"), self.values.get(reference)
        if not self.ratios or not isinstance(mine, float | int) or not isinstance(theirs, float | int) or not theirs:
            return None
        return mine / theirs

    def cells(self, subjects: Sequence[str] = SUBJECTS) -> list[str]:
        def number(value: float | str | None) -> str:
            if isinstance(value, str):
                return value
            return "n/a" if value is None else f"{value:,.{self.digits}f}"

        def times(value: float | None) -> str:
            return "" if value is None else f"{value:.2f}x"

        values = [number(self.values.get(subject)) for subject in subjects]
        return [
            self.figure,
            *values,
            *(times(self.ratio(reference)) for reference in references(subjects)),
            self.target,
            self.verdict,
        ]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def text_table(rows: Sequence[Sequence[str]], subjects: Sequence[str] = SUBJECTS) -> str:
    columns = header(subjects)
    table = [list(columns), *[list(row) for row in rows]]
    widths = [max(len(row[column]) for row in table) for column in range(len(columns))]
    lines = []
    for index, row in enumerate(table):
        cells = [
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def markdown_table(rows: Sequence[Sequence[str]], subjects: Sequence[str] = SUBJECTS) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    columns = header(subjects)
    align = ["---", *["---:"] * (len(columns) - 3), "---", "---"]
    return "\n".join([line(columns), line(align), *[line(row) for row in rows]])
