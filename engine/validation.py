"""Validation reports: every problem names its file, row and field, and says how to fix it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Issue:
    file: str
    message: str
    row: Optional[int] = None  # 1-based data row / record (header excluded); None = whole file
    field: Optional[str] = None
    line: Optional[int] = None  # physical line in the file where the row starts, when known
    hint: str = ""
    severity: str = "error"  # "error" | "warning"

    def location(self) -> str:
        parts = [self.file]
        if self.row is not None:
            parts.append(f"row {self.row}" + (f" (line {self.line})" if self.line and self.line != self.row else ""))
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def format(self) -> str:
        text = f"{self.severity.upper()}: {self.location()}: {self.message}"
        if self.hint:
            text += f" — fix: {self.hint}"
        return text


@dataclass
class ValidationReport:
    files: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)  # file -> detected format

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, issue: Issue) -> None:
        self.issues.append(issue)

    def format_text(self) -> str:
        lines = []
        for f in self.files:
            lines.append(f"file: {f} [{self.formats.get(f, '?')}]")
        if self.counts:
            lines.append("found: " + ", ".join(f"{v} {k}" for k, v in self.counts.items()))
        for i in self.issues:
            lines.append(i.format())
        verdict = "OK" if self.ok else f"INVALID ({len(self.errors)} error(s)); nothing was imported"
        lines.append(f"result: {verdict}" + (f", {len(self.warnings)} warning(s)" if self.warnings else ""))
        return "\n".join(lines)


class DatasetInvalid(Exception):
    """Raised when input fails validation. Carries the full report; nothing has been written."""

    def __init__(self, report: ValidationReport):
        self.report = report
        first = report.errors[0].format() if report.errors else "invalid input"
        more = f" (and {len(report.errors) - 1} more)" if len(report.errors) > 1 else ""
        super().__init__(first + more)
