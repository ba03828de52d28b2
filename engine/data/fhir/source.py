"""The resources of a FHIR export, each with where it came from.

Two shapes are read: a ``Bundle`` in one JSON file (``collection``, ``searchset``, ``transaction``, ``batch`` or
``document``) and a Bulk Data export, one NDJSON file per resource type (``DocumentReference.ndjson``,
``Binary.ndjson``, ...; any subset). All the files given together form one :class:`Export`, so that a reference
from a document to a ``Binary`` or a ``PractitionerRole`` in another file resolves.

Only the resource types notes are built from are validated (:data:`USED_TYPES`, with the ``fhir.resources`` R4B
models); any other resource (Observation, Condition, ...) is counted and left alone. A problem names the file, the
entry (bundle) or the line (NDJSON) and the field path inside the resource.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from engine.data.files import UNREADABLE, InputRow, json_lines
from engine.data.strict_json import JsonProblem, json_type, short_text
from engine.data.validation import Issue, ValidationReport

FHIR_RELEASE = "FHIR R4 (4.0.1) or R4B (4.3.0) JSON"
USED_TYPES = ("DocumentReference", "Composition", "Binary", "Patient", "Encounter", "PractitionerRole",
              "QuestionnaireResponse")
BUNDLE_TYPES = ("collection", "searchset", "transaction", "batch", "document")
_MAX_ERRORS_PER_RESOURCE = 5
_REF_TAIL = re.compile(r"(?:^|/)([A-Z][A-Za-z]+)/([A-Za-z0-9\-.]{1,64})(?:/_history/[^/]+)?$")
_FHIR_HEAD = re.compile(r'"resourceType"\s*:\s*"([A-Z][A-Za-z]{1,63})"')


@dataclass
class ResourceRow(InputRow):
    """The row of a resource, with the FHIR field path each value of a note or summary came from (``text``,
    ``date``, ``note_type``, ...), so a problem found later names the field of the resource."""

    fields: dict[str, str] = field(default_factory=dict)

    def field_for(self, name: str) -> str:
        return self.fields.get(name, name)


@dataclass(frozen=True)
class Located:
    """One resource as read: the raw JSON object, its file, its entry (bundle) or record (NDJSON) number, its
    line (NDJSON), the bundle entry's ``fullUrl`` and the field-path prefix under which its problems are named."""

    resource: dict
    file: str
    row: int
    line: Optional[int] = None
    full_url: Optional[str] = None
    prefix: str = ""

    @property
    def rtype(self) -> str:
        t = self.resource.get("resourceType")
        return t if isinstance(t, str) else ""

    @property
    def rid(self) -> Optional[str]:
        i = self.resource.get("id")
        return i if isinstance(i, str) and i else None

    @property
    def label(self) -> str:
        """"DocumentReference/n1" (or the fullUrl when the resource has no id)."""
        return f"{self.rtype}/{self.rid}" if self.rid else (self.full_url or f"{self.rtype} (no id)")

    def input_row(self, **fields: str) -> ResourceRow:
        """The row of this resource; ``fields`` maps a value's name to its field path inside the resource."""
        return ResourceRow(self.row, self.line if self.line is not None else self.row, {},
                           {k: self.prefix + v for k, v in fields.items()})

    def issue(self, message: str, fld: str = "", hint: str = "", severity: str = "error") -> Issue:
        path = (self.prefix + fld) if fld else (self.prefix.rstrip(".") or None)
        return Issue(self.file, message, row=self.row, line=self.line, field=path or None, hint=hint,
                     severity=severity)


@dataclass
class Export:
    """All resources of the files read together, indexed for reference resolution."""

    resources: list[Located] = field(default_factory=list)
    ignored: Counter = field(default_factory=Counter)  # resource type -> count of resources not used
    _index: dict[str, Located] = field(default_factory=dict)
    _other_types: dict[str, str] = field(default_factory=dict)  # reference key -> type, for the resources not used

    def add(self, loc: Located, report: ValidationReport) -> None:
        if loc.rtype not in USED_TYPES:
            self.ignored[loc.rtype or "(no resourceType)"] += 1
            for k in (f"{loc.rtype}/{loc.rid}" if loc.rid else None, loc.full_url):
                if k and loc.rtype:
                    self._other_types.setdefault(k, loc.rtype)
            return
        keys = [k for k in (f"{loc.rtype}/{loc.rid}" if loc.rid else None, loc.full_url) if k]
        for k in keys:
            first = self._index.get(k)
            if first is not None and first is not loc:
                report.add(loc.issue(f"{loc.label} appears twice (first in {first.file} "
                                     f"{'entry' if first.line is None else 'line'} {first.line or first.row})",
                                     "id", hint="export each resource once"))
                return
        for k in keys:
            self._index[k] = loc
        self.resources.append(loc)

    def of_type(self, rtype: str) -> list[Located]:
        return [r for r in self.resources if r.rtype == rtype]

    def resolve(self, ref: object, within: Optional[Located] = None) -> Optional[Located]:
        """The resource a reference string points to: a ``fullUrl`` (``urn:uuid:...``), ``Type/id`` (relative,
        absolute or versioned) or ``#id`` (a resource contained in ``within``); None when it is not in the export."""
        if not isinstance(ref, str) or not ref:
            return None
        if ref.startswith("#") and within is not None:
            for i, c in enumerate(within.resource.get("contained") or []):
                if isinstance(c, dict) and c.get("id") == ref[1:]:
                    return Located(c, within.file, within.row, within.line, None, f"{within.prefix}contained[{i}].")
            return None
        hit = self._index.get(ref)
        if hit is not None:
            return hit
        m = _REF_TAIL.search(ref)
        return self._index.get(f"{m.group(1)}/{m.group(2)}") if m else None

    def type_of(self, ref: object, within: Optional[Located] = None) -> Optional[str]:
        """The resource type a reference points to when the export holds the resource (used or not)."""
        hit = self.resolve(ref, within)
        if hit is not None:
            return hit.rtype
        return self._other_types.get(ref) if isinstance(ref, str) else None


def reference_type(ref: object, declared: object = None) -> Optional[str]:
    """The resource type a reference names ("Patient/p1" -> "Patient"), else its declared ``Reference.type`` (a
    type name or its StructureDefinition url); None when neither says."""
    m = _REF_TAIL.search(ref) if isinstance(ref, str) else None
    if m:
        return m.group(1)
    if isinstance(declared, str) and declared.strip():
        return declared.strip().rstrip("/").rsplit("/", 1)[-1] or None
    return None


def reference_id(ref: object) -> Optional[str]:
    """The id part of a reference ("Patient/p1" -> "p1", "urn:uuid:abc" -> "abc"); None when there is none."""
    if not isinstance(ref, str) or not ref:
        return None
    m = _REF_TAIL.search(ref)
    if m:
        return m.group(2)
    if ref.startswith("urn:uuid:") or ref.startswith("urn:oid:"):
        return ref[9:] or None
    return None


def validate(loc: Located, report: ValidationReport) -> bool:
    """Check one used resource against its ``fhir.resources`` R4B model; each problem (at most five) becomes an
    issue naming the field path. True when it is valid."""
    from fhir.resources.R4B import get_fhir_model_class
    from pydantic import ValidationError

    try:
        model = get_fhir_model_class(loc.rtype)
    except (KeyError, ValueError):
        report.add(loc.issue(f"unknown FHIR resource type {short_text(loc.rtype)!r}", "resourceType",
                             hint=f"SumCheck reads {FHIR_RELEASE}"))
        return False
    try:
        model.model_validate(loc.resource)
    except ValidationError as exc:
        errs = exc.errors(include_input=False, include_url=False)
        for e in errs[:_MAX_ERRORS_PER_RESOURCE]:
            path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in e.get("loc", ())).replace(".[", "[")
            msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
            report.add(loc.issue(f"{loc.label} is not valid {loc.rtype}: {short_text(msg, 200)}", path,
                                 hint=_hint_for(e.get("type", ""), path)))
        if len(errs) > _MAX_ERRORS_PER_RESOURCE:
            report.add(loc.issue(f"{loc.label}: {len(errs) - _MAX_ERRORS_PER_RESOURCE} more problem(s) not shown"))
        return False
    except (RecursionError, ValueError, TypeError) as exc:
        report.add(loc.issue(f"{loc.label} cannot be read as {loc.rtype}: {short_text(str(exc), 200)}",
                             hint=f"SumCheck reads {FHIR_RELEASE}"))
        return False
    return True


def _hint_for(kind: str, path: str) -> str:
    if kind == "base64_decode" or path.endswith(".data"):
        return "the attachment's data must be base64; export the document again"
    if kind in ("extra_forbidden",):
        return f"this field is not part of the resource in {FHIR_RELEASE}; check the FHIR release of the export"
    if kind == "missing":
        return "the field is required by FHIR; export the resource again"
    return f"correct the field (SumCheck reads {FHIR_RELEASE})"


def is_fhir_json(obj: object) -> bool:
    """A parsed JSON file is a FHIR resource (a Bundle or a single resource) rather than a case file."""
    return isinstance(obj, dict) and isinstance(obj.get("resourceType"), str) and "notes" not in obj


def unparsed_fhir(path: Path, text: str, problem: JsonProblem, report: ValidationReport) -> Optional[str]:
    """When a JSON file that cannot be parsed begins as a FHIR resource does (``"resourceType": "Bundle"`` before
    any case key), report the problem as the FHIR file's and return its format label; else None."""
    head = text[:65536]
    m = _FHIR_HEAD.search(head)
    if m is None or '"notes"' in head[:m.start()]:
        return None
    rtype = m.group(1)
    label = f"FHIR {rtype}" + (" (cannot be parsed)" if rtype == "Bundle" else " resource (cannot be parsed)")
    report.add(Issue(str(path), f"the FHIR {rtype} cannot be read: {problem}", line=problem.line,
                     hint=problem.hint or f"export the data again as {FHIR_RELEASE}"))
    return label


def read_bundle(path: Path, obj: object, report: ValidationReport, export: Export) -> bool:
    """Add the resources of a parsed JSON file: a Bundle, or one resource on its own. False when the file fails."""
    fname = str(path)
    if not isinstance(obj, dict) or not isinstance(obj.get("resourceType"), str):
        report.add(Issue(fname, f"is not a FHIR resource (a JSON {json_type(obj)} without 'resourceType')",
                         field="resourceType", hint=f"export the notes as {FHIR_RELEASE}"))
        return False
    if obj["resourceType"] != "Bundle":
        export.add(Located(obj, fname, 1), report)
        return True
    btype = obj.get("type")
    if btype not in BUNDLE_TYPES:
        report.add(Issue(fname, f"bundle type {short_text(str(btype))!r} is not read", field="type",
                         hint=f"export a Bundle of type {', '.join(BUNDLE_TYPES)}, or a Bulk Data NDJSON export"))
        return False
    entries = obj.get("entry", [])
    if not isinstance(entries, list):
        report.add(Issue(fname, f"'entry' must be a list, not {json_type(entries)}", field="entry"))
        return False
    ok = True
    for i, e in enumerate(entries):
        res = e.get("resource") if isinstance(e, dict) else None
        if not isinstance(res, dict):
            if isinstance(e, dict) and "request" in e and "resource" not in e:
                continue  # a transaction's DELETE / GET entry carries no resource
            report.add(Issue(fname, f"entry {i + 1} holds no resource object", row=i + 1,
                             field=f"entry[{i}].resource", hint="every entry needs a 'resource'"))
            ok = False
            continue
        url = e.get("fullUrl")
        export.add(Located(res, fname, i + 1, None, url if isinstance(url, str) else None,
                           f"entry[{i}].resource."), report)
    return ok


def read_ndjson_file(path: Path, text: str, report: ValidationReport, export: Export) -> bool:
    """Add the resources of one Bulk Data NDJSON file (one resource per line). A file named after a resource type
    must hold only that type. False when the file fails."""
    fname = str(path)
    expected = path.name.split(".")[0]
    expected = expected if expected[:1].isupper() and expected.isalpha() else None
    ok, number = True, 0
    for number, lineno, obj in json_lines(fname, text.split("\n"), report):
        if obj is UNREADABLE:
            ok = False
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("resourceType"), str):
            report.add(Issue(fname, f"line is not a FHIR resource (a JSON {json_type(obj)} without 'resourceType')",
                             row=number, line=lineno, field="resourceType",
                             hint="a Bulk Data file holds one resource object per line"))
            ok = False
            continue
        if expected and obj["resourceType"] != expected:
            report.add(Issue(fname, f"holds a {short_text(obj['resourceType'])} resource in a file of "
                                    f"{expected} resources", row=number, line=lineno, field="resourceType",
                             hint=f"a Bulk Data export writes each type to its own file; move it to "
                                  f"{short_text(obj['resourceType'])}.ndjson"))
            ok = False
            continue
        export.add(Located(obj, fname, number, lineno), report)
    if number == 0:
        report.add(Issue(fname, "file is empty", hint="export the data again"))
        return False
    return ok
