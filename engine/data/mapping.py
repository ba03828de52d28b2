"""What the input formats' columns mean: the bundle tables' columns, the dialogue CSV's, the case JSON's keys, and
the column mapping of wide rating exports (REDCap and survey tools) with its aliases.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from engine.core import ITEM_KEYS, reserved_rater_problem
from engine.data.files import InputRow, read_text_file
from engine.data.strict_json import JsonProblem, json_type, loads_strict
from engine.data.validation import ValidationReport


TABLE_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # table: (required columns, optional columns)
    "cases": (("case_id", "target_specialty"), ()),
    "notes": (("case_id", "note_id", "text"), ("date", "note_type", "author_specialty")),
    "summaries": (("summary_id", "case_id", "text"), ("generator_model", "quality_group", "prompt_variant")),
    "ratings": (("summary_id", "rater_id", "item", "value"), ("rater_group",)),
}


DIALOGUE_COLUMNS = ("encounter_id", "dialogue", "note")
# Other names a dialogue CSV's columns go by (MTS-Dialog, ACI-BENCH and hand-made exports): a file with two of the
# three roles is read as a dialogue CSV, and a role found under another name is reported with the rename that fixes it.
DIALOGUE_ALIASES = {
    "encounter_id": ("id", "encounter", "conversation_id", "dialogue_id", "visit_id", "case_id", "file", "ID"),
    "dialogue": ("transcript", "conversation", "dialog", "src", "source", "section_text_dialogue"),
    "note": ("summary", "clinical_note", "note_text", "soap_note", "tgt", "target", "section_text"),
}


def dialogue_roles(header: Sequence[str]) -> dict[str, str]:
    """The columns of ``header`` that play a dialogue CSV's roles (role -> column; the exact name first, then an
    alias, case-insensitively)."""
    low = {h.strip().lower(): h for h in header}
    out = {}
    for role in DIALOGUE_COLUMNS:
        for name in (role, *DIALOGUE_ALIASES[role]):
            if name.lower() in low:
                out[role] = low[name.lower()]
                break
    return out
CASE_JSON_KEYS_REQUIRED = ("target_specialty", "notes")
CASE_JSON_KEYS_OPTIONAL = ("case_id", "summary", "summary_id", "summaries", "generator_model", "quality_group",
                           "prompt_variant")


SUMMARY_OBJ_KEYS = ("summary_id", "text", "generator_model", "quality_group", "prompt_variant")
NOTE_OBJ_KEYS = ("text", "date", "note_type", "author_specialty")
ID_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")


# Columns that survey tools add and that carry no rating.
SURVEY_META_RE = re.compile(r"^(redcap_.*|.*_complete|.*timestamp.*|record_id_dag|survey_.*)$", re.IGNORECASE)


_ITEM_ALIASES: dict[str, tuple[str, ...]] = {
    "cited": ("cited", "citation", "citations", "pdsqi_cited", "pdsqi_1"),
    "accurate": ("accurate", "accuracy", "pdsqi_accurate", "pdsqi_2"),
    "thorough": ("thorough", "thoroughness", "pdsqi_thorough", "pdsqi_3"),
    "useful": ("useful", "usefulness", "pdsqi_useful", "pdsqi_4"),
    "organized": ("organized", "organised", "organization", "pdsqi_organized", "pdsqi_5"),
    "comprehensible": ("comprehensible", "comprehension", "pdsqi_comprehensible", "pdsqi_6"),
    "succinct": ("succinct", "succinctness", "pdsqi_succinct", "pdsqi_7"),
    "abstraction": ("abstraction", "abstraction_needed", "need_abstraction", "pdsqi_abstraction", "pdsqi_8"),
    "synthesized": ("synthesized", "synthesised", "synthesis", "pdsqi_synthesized", "pdsqi_8b"),
    "stigmatizing_notes": ("stigmatizing_notes", "stigma_notes", "stigmatizing_note", "pdsqi_stigma_notes",
                           "pdsqi_stigmatizing_notes", "pdsqi_9a"),
    "stigmatizing_summary": ("stigmatizing_summary", "stigma_summary", "pdsqi_stigma_summary",
                             "pdsqi_stigmatizing_summary", "pdsqi_9b"),
}


_SUMMARY_ALIASES = ("summary_id", "record_id", "record", "summary")
_RATER_ALIASES = ("rater_id", "rater", "evaluator", "reviewer", "redcap_data_access_group")
_GROUP_ALIASES = ("rater_group", "group", "seniority")


@dataclass
class RatingsMapping:
    """The column mapping, one for every loader. Editable by the user (Data page, or ``--mapping file.json``).

    For every file (bundle tables, dialogue CSV, wide ratings CSV, JSONL, and the top-level keys of case JSON):
    ``rename`` maps a column (key) of the file to the name SumCheck expects (``{"transcript": "dialogue"}``) and
    columns in ``ignore`` are dropped before the file is read. For a wide ratings CSV, ``items`` maps a PDSQI-9
    item key to a column name and ``summary_col`` / ``rater_col`` / ``rater_group_col`` name the id columns; any
    other column that is not survey metadata is reported as unknown.
    """

    summary_col: str = ""
    rater_col: str = ""
    rater_group_col: str = ""
    items: dict[str, str] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    default_rater_group: str = "unknown"
    rename: dict[str, str] = field(default_factory=dict)

    def problems(self, header: Optional[Sequence[str]] = None) -> list[tuple[str, str]]:
        """Collisions of the mapping as a whole, as (field, message): two renames onto one name, a column both
        renamed and ignored, one column mapped to two items or to an item and an id, and — given a file's
        ``header`` (or a case JSON object's keys) — a rename onto a column the file already has, which would
        overwrite it. Checked before any row is read."""
        out: list[tuple[str, str]] = []
        targets: dict[str, list[str]] = {}
        for src, dst in self.rename.items():
            targets.setdefault(dst, []).append(src)
        for dst, srcs in targets.items():
            if len(srcs) > 1:
                out.append((dst, f"rename maps {', '.join(repr(x) for x in srcs)} all onto {dst!r}: only one column "
                                 "can become it"))
        for src in self.rename:
            if src in self.ignore:
                out.append((src, f"column {src!r} is both renamed (to {self.rename[src]!r}) and ignored"))
        uses: dict[str, list[str]] = {}
        for key, col in self.items.items():
            uses.setdefault(col, []).append(f"item {key!r}")
        for attr in ("summary_col", "rater_col", "rater_group_col"):
            col = getattr(self, attr)
            if col:
                uses.setdefault(col, []).append(attr)
        for col, what in uses.items():
            if len(what) > 1:
                out.append((col, f"column {col!r} is mapped twice ({' and '.join(what)})"))
        if header is not None:
            present = set(header)
            for src, dst in self.rename.items():
                if src in present and dst in present and dst != src and dst not in self.rename and dst not in self.ignore:
                    out.append((dst, f"rename {src!r} -> {dst!r}: the file already has a column {dst!r}, which would "
                                     "be overwritten"))
        return out

    def apply(self, header: Sequence[str], rows: list["InputRow"]) -> tuple[list[str], list["InputRow"]]:
        """``header`` and ``rows`` with ignored columns dropped and renamed columns renamed."""
        if not self.ignore and not self.rename:
            return list(header), rows
        drop = set(self.ignore)
        new_header = [self.rename.get(h, h) for h in header if h not in drop]
        if not drop and not self.rename:
            return new_header, rows
        for row in rows:
            row.values = {self.rename.get(k, k): v for k, v in row.values.items() if k not in drop}
        return new_header, rows

    def apply_keys(self, obj: object) -> object:
        """The same for the top-level keys of a case JSON object."""
        if not isinstance(obj, dict) or (not self.ignore and not self.rename):
            return obj
        return {self.rename.get(k, k): v for k, v in obj.items() if k not in set(self.ignore)}

    @classmethod
    def guess(cls, header: Sequence[str]) -> "RatingsMapping":
        low = {h.strip().lower(): h for h in header}

        def pick(aliases: Iterable[str]) -> str:
            for a in aliases:
                if a in low:
                    return low[a]
            return ""

        items = {}
        for key, aliases in _ITEM_ALIASES.items():
            col = pick(aliases)
            if col:
                items[key] = col
        return cls(pick(_SUMMARY_ALIASES), pick(_RATER_ALIASES), pick(_GROUP_ALIASES), items)

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> "RatingsMapping":
        """Read a mapping file. Raises :class:`ValueError` naming the file and the key for any problem (unreadable
        file, invalid JSON, wrong shape, wrong types, unknown keys or items, a reserved rater group)."""
        fname = str(path)
        report = ValidationReport()
        text = read_text_file(Path(path), report)
        if text is None:
            raise ValueError(f"mapping file {report.errors[0].format().split(': ', 1)[1]}")
        try:
            data = loads_strict(text)
        except JsonProblem as exc:
            raise ValueError(f"mapping file {fname}: {exc}") from None
        return cls.from_dict(data, fname)

    @classmethod
    def from_dict(cls, data: object, source: str = "mapping") -> "RatingsMapping":
        """Build a mapping from parsed JSON, checking its shape; :class:`ValueError` names ``source`` and the key."""
        example = '{"summary_col": "record_id", "rater_col": "rater", "items": {"accurate": "q2"}, "ignore": ["notes"]}'
        if not isinstance(data, dict):
            raise ValueError(f"mapping file {source} must hold one JSON object such as {example}, "
                             f"not {json_type(data)}")
        known = ("summary_col", "rater_col", "rater_group_col", "items", "ignore", "default_rater_group", "rename")
        unknown = [k for k in data if k not in known]
        if unknown:
            raise ValueError(f"mapping file {source}: unknown key(s) {', '.join(repr(k) for k in unknown)}; "
                             f"allowed keys: {', '.join(known)}")
        out: dict = {}
        for key in ("summary_col", "rater_col", "rater_group_col", "default_rater_group"):
            v = data.get(key)
            if v is None:
                continue
            if not isinstance(v, str):
                raise ValueError(f"mapping file {source}: key '{key}' must be a column name (text), "
                                 f"not {json_type(v)}")
            out[key] = v.strip()
        items = data.get("items", {})
        if items is None:
            items = {}
        if not isinstance(items, dict):
            raise ValueError(f"mapping file {source}: key 'items' must be an object {{item: column}} such as "
                             f'{{"accurate": "q2"}}, not {json_type(items)}')
        bad = [k for k in items if k not in ITEM_KEYS]
        if bad:
            raise ValueError(f"mapping file {source}: key 'items' names unknown PDSQI-9 item(s) "
                             f"{', '.join(repr(k) for k in bad)}; known: {', '.join(ITEM_KEYS)}")
        for k, v in items.items():
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"mapping file {source}: key 'items.{k}' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["items"] = {k: v.strip() for k, v in items.items()}
        ignore = data.get("ignore", [])
        if ignore is None:
            ignore = []
        if not isinstance(ignore, list):
            raise ValueError(f"mapping file {source}: key 'ignore' must be a list of column names such as "
                             f'["notes"], not {json_type(ignore)}')
        for i, v in enumerate(ignore):
            if not isinstance(v, str):
                raise ValueError(f"mapping file {source}: key 'ignore[{i}]' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["ignore"] = [v.strip() for v in ignore]
        rename = data.get("rename", {})
        if rename is None:
            rename = {}
        if not isinstance(rename, dict):
            raise ValueError(f"mapping file {source}: key 'rename' must be an object {{file column: expected name}} "
                             f'such as {{"transcript": "dialogue"}}, not {json_type(rename)}')
        for k, v in rename.items():
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"mapping file {source}: key 'rename.{k}' must be a column name (text), "
                                 f"not {json_type(v)}")
        out["rename"] = {k.strip(): v.strip() for k, v in rename.items()}
        group = out.get("default_rater_group")
        if group is not None:
            if not group:
                out.pop("default_rater_group")
            else:
                problem = reserved_rater_problem("", group)
                if problem:
                    raise ValueError(f"mapping file {source}: key 'default_rater_group': {problem[1]}; "
                                     "use the raters' own group (e.g. junior, senior)")
                out["default_rater_group"] = group.lower()
        return cls(**out)

    def merged_over(self, guess: "RatingsMapping") -> "RatingsMapping":
        """This mapping, with blanks filled from ``guess`` (an explicit mapping wins)."""
        return RatingsMapping(
            self.summary_col or guess.summary_col,
            self.rater_col or guess.rater_col,
            self.rater_group_col or guess.rater_group_col,
            {**guess.items, **self.items},
            list(self.ignore),
            self.default_rater_group if self.default_rater_group != "unknown" else guess.default_rater_group,
            dict(self.rename),
        )


@dataclass
class LoadOptions:
    mapping: Optional[RatingsMapping] = None
    default_specialty: str = "Unspecified"
    default_rater_group: str = "unknown"
    max_file_mb: Optional[float] = None  # per-file size limit; None = SUMCHECK_MAX_FILE_MB / the setting / 200
    # FHIR and MIMIC-IV-Note exports (engine.data.fhir, engine.data._mimic):
    summary_types: tuple[str, ...] = ()  # document type/category codes ("code" or "system|code") that mark summaries
    case_by: str = "patient"  # FHIR: one case per "patient" or per "encounter"
    hold_out_types: tuple[str, ...] = ()  # note types kept out of the source notes, imported as reference summaries
    summaries_file: Optional[str] = None  # summaries keyed by case, admission, patient, encounter or note id
