"""Validation reports: every problem names its file, row and field, and says how to fix it.

A report counts every issue but keeps only a bounded number of them (so a million bad rows cost a few
hundred :class:`Issue` objects, not a million): up to :data:`MAX_ISSUES_PER_FILE` per file, at most
:data:`MAX_ISSUES_STORED` in all, and always the first issue of every file so that one broken file never hides
the problems of the others. ``ok`` and the error / warning counts are always exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

MAX_ISSUES_SHOWN = 200  # issues printed by format_text (and meant to be shown by a UI)
MAX_ISSUES_PER_FILE = 200  # issues kept per file
MAX_ISSUES_STORED = 2000  # issues kept in all (plus the first issue of every file)
MAX_FILES_SHOWN = 200  # "file: ..." lines printed by format_text


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
    issues: list[Issue] = field(default_factory=list)  # the issues kept (see the module docstring)
    counts: dict[str, int] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)  # file -> detected format
    error_count: int = 0  # every error found, kept or not
    warning_count: int = 0
    _per_file: dict[str, list[int]] = field(default_factory=dict, repr=False)  # file -> [kept, errors, warnings]

    def __post_init__(self) -> None:
        given, self.issues = list(self.issues), []
        for i in given:
            self.add(i)

    @property
    def errors(self) -> list[Issue]:
        """The errors kept (at most a few thousand); :attr:`error_count` is the exact number."""
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def issue_count(self) -> int:
        return self.error_count + self.warning_count

    def add(self, issue: Issue) -> None:
        stats = self._per_file.setdefault(issue.file, [0, 0, 0])
        if issue.severity == "error":
            self.error_count += 1
            stats[1] += 1
        else:
            self.warning_count += 1
            stats[2] += 1
        if stats[0] == 0 or (stats[0] < MAX_ISSUES_PER_FILE and len(self.issues) < MAX_ISSUES_STORED):
            self.issues.append(issue)
            stats[0] += 1

    def file_error_count(self, file: str) -> int:
        return self._per_file.get(file, [0, 0, 0])[1]

    def shown_issues(self, limit: int = MAX_ISSUES_SHOWN) -> list[Issue]:
        """At most ``limit`` issues, shared fairly between files (every file with issues gets its first ones
        before any file gets more), in the order they were found."""
        by_file: dict[str, list[Issue]] = {}
        for i in self.issues:
            by_file.setdefault(i.file, []).append(i)
        quota = {f: 0 for f in by_file}
        left = min(limit, len(self.issues))
        while left > 0:
            open_files = [f for f in by_file if quota[f] < len(by_file[f])]
            share = max(1, left // len(open_files))
            for f in open_files:
                take = min(share, len(by_file[f]) - quota[f], left)
                quota[f] += take
                left -= take
                if left == 0:
                    break
        taken = {f: 0 for f in by_file}
        out = []
        for i in self.issues:
            if taken[i.file] < quota[i.file]:
                taken[i.file] += 1
                out.append(i)
        return out

    def more_text(self, shown: int) -> str:
        """The "... and N more issues (M errors)" line for a display that showed ``shown`` issues ("" if none)."""
        shown_list = self.shown_issues(shown)
        rest = self.issue_count - len(shown_list)
        if rest <= 0:
            return ""
        rest_errors = self.error_count - sum(1 for i in shown_list if i.severity == "error")
        return f"... and {rest:,} more issue(s) ({rest_errors:,} error(s)) not shown; fix these and validate again"

    def format_text(self, limit: int = MAX_ISSUES_SHOWN) -> str:
        lines = []
        for f in self.files[:MAX_FILES_SHOWN]:
            lines.append(f"file: {f} [{self.formats.get(f, '?')}]")
        if len(self.files) > MAX_FILES_SHOWN:
            lines.append(f"... and {len(self.files) - MAX_FILES_SHOWN:,} more file(s)")
        if self.counts:
            lines.append("found: " + ", ".join(f"{v} {k}" for k, v in self.counts.items()))
        for i in self.shown_issues(limit):
            lines.append(i.format())
        more = self.more_text(limit)
        if more:
            lines.append(more)
        verdict = "OK" if self.ok else f"INVALID ({self.error_count:,} error(s)); nothing was imported"
        lines.append(f"result: {verdict}" + (f", {self.warning_count:,} warning(s)" if self.warning_count else ""))
        from engine.core import untrusted

        return "\n".join(untrusted.term(line) for line in lines)  # one line per entry, whatever the data holds


class DatasetInvalid(Exception):
    """Raised when input fails validation. Carries the full report; nothing has been written."""

    def __init__(self, report: ValidationReport):
        self.report = report
        errors = report.errors
        first = errors[0].format() if errors else "invalid input"
        more = f" (and {report.error_count - 1:,} more)" if report.error_count > 1 else ""
        super().__init__(first + more)
