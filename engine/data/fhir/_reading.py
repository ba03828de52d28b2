"""What reading the documents of one FHIR export gathers besides the notes, and how it is reported once.

* **Lost cases.** A case whose every document was refused (an error) or skipped (a PDF, a C-CDA that cannot be read,
  an entered-in-error document) gets no case. Its summaries would then be reported as "refers to unknown case",
  which points at the wrong place: instead, when the cause was an error already reported, the follow-on errors are
  left out (the case is marked rejected, so the cross-check counts them as not checked); when the cause was a skip,
  one error at the case's first summary names the document that was skipped and why. A lost case without a summary
  is a warning naming it and the cause. An export of which no document became a note or a summary, and none was
  refused, is an error saying what was skipped (an import of nothing is not stored as an empty dataset).
* **Text left out of HTML.** The content of ``script``, ``style`` and ``template`` elements is counted per document
  and reported in one warning naming the documents.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from engine.data._ehr_notes import PendingNote
from engine.data.fhir._narrative import Reduced
from engine.data.fhir.source import Export, Located
from engine.data.mapping import LoadOptions
from engine.data._readers import Collector
from engine.data.validation import Issue, ValidationReport

_SHOWN = 5


class Reading:
    """The state of reading one export's documents: the notes (``pending``), each case's target specialty, the
    summaries read (id, case, document), why the documents of a case did not become notes (``lost``: case id ->
    (first cause, whether an error was reported, the document)) and what the HTML reducer left out (``dropped``:
    document label -> what)."""

    def __init__(self, export: Export, report: ValidationReport, opts: LoadOptions, c: Collector,
                 counts: Counter) -> None:
        self.export, self.report, self.opts, self.c, self.counts = export, report, opts, c, counts
        self.wanted = {t.strip().lower() for t in opts.summary_types if t.strip()}
        self.pending: list[PendingNote] = []
        self.specialty: dict[str, str] = {}
        self.summaries: list[tuple[str, str, Located]] = []
        self.lost: dict[str, tuple[str, bool, Located]] = {}
        self.dropped: dict[str, Reduced] = {}
        self.errors_before = report.error_count

    def lose(self, case_id: Optional[str], doc: Located, cause: str, error: bool) -> None:
        """Remember why a document of ``case_id`` is no note (the first error wins over any skip)."""
        if not case_id:
            return
        first = self.lost.get(case_id)
        if first is None or (error and not first[1]):
            self.lost[case_id] = (cause, error, doc)

    def report_lost_cases(self) -> None:
        """See the module docstring: once per case, after the notes were added to the collector."""
        kind = "patient" if self.opts.case_by == "patient" else "encounter"
        told: set[str] = set()
        for sid, cid, doc in self.summaries:
            if cid in self.c.cases or cid not in self.lost or cid in told:
                continue
            told.add(cid)
            cause, error, _ = self.lost[cid]
            self.c.rejected_cases.add(cid)
            if not error:
                self.report.add(doc.issue(
                    f"summary {sid!r} is of {kind} {cid!r}, of whose documents none could be read as a note: "
                    f"{cause}", "subject",
                    hint="export the notes of this case as text (text/plain, HTML or a C-CDA document); SumCheck "
                         "does not read PDFs or images"))
        for cid, (cause, error, doc) in self.lost.items():
            if cid in self.c.cases or cid in told:
                continue
            if error:  # an error is reported: a summary of it in another file is no "unknown case" either
                self.c.rejected_cases.add(cid)
            else:
                self.report.add(doc.issue(f"{kind} {cid!r} has no document that could be read as a note ({cause}); "
                                          "no case is made for it", "subject", severity="warning",
                                          hint="export the notes of this case as text if it should be judged"))

    def report_nothing_read(self, fname: str) -> None:
        """An error when no document became a note or a summary and none was refused (every one was skipped): an
        import of nothing is refused rather than stored as an empty dataset."""
        if self.pending or self.summaries or self.report.error_count > self.errors_before or \
                any(error for _, error, _ in self.lost.values()):
            return
        skipped = ", ".join(f"{n:,} {what}" for what, n in self.counts.items() if what.startswith("skipped") and n)
        self.report.add(Issue(fname, f"no document of the export could be read as a note ({skipped or 'none'})",
                              hint="SumCheck reads notes as text (text/plain, HTML or a C-CDA document); export the "
                                   "notes as text, not as PDFs or images"))
        self.c.broken.update(("cases", "notes", "summaries"))

    def report_dropped(self, fname: str) -> None:
        if not self.dropped:
            return
        items = list(self.dropped.items())
        elements = sum(d.dropped_elements for _, d in items)
        chars = sum(d.dropped_chars for _, d in items)
        shown = ", ".join(f"{label} ({d.dropped_chars:,})" for label, d in items[:_SHOWN])
        more = f" and {len(items) - _SHOWN:,} more" if len(items) > _SHOWN else ""
        self.report.add(Issue(fname, f"script, style and template content ({elements:,} element(s), {chars:,} "
                                     f"characters) was left out of the text of {len(items):,} HTML document(s): "
                                     f"{shown}{more}", severity="warning",
                              hint="that content is code or layout, not note text; the rest of each document was "
                                   "read"))
