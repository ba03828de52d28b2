"""Stigmatizing-language detector that needs no LLM.

The lexicon lives in ``engine/resources/stigma_lexicon.json``. Each entry has an id, a term (see that file's ``about``
for the term syntax), a category (credibility, disapproval, stereotyping, social_descriptor), a short source
reference and optionally a neutral ``suggest``. Clinicians can add entries at run time (``extra_entries``, a list
of dicts with the same fields); the lexicon version is a hash of every entry and of :data:`RULES_VERSION`, so it
changes whenever an entry or a rule changes and is kept with results.

Every lexicon match is a *candidate*. A candidate that a context rule clears is kept (``cleared_by`` names the
rule) so the near-misses can be shown; the others are *hits*. The rules, in the order they are tried:

``negated``
    A negation cue in the same clause, at most 6 words before the term: no, not, never, without, nor, denies /
    denied / deny / denying, any "...n't", "negative for" ("not drug-seeking", "no evidence of drug-seeking
    behavior", "denies being homeless"); or, after the term, "not" + observed / noted / seen / present / displayed /
    exhibited / evident / appreciated, or "absent" ("combative behaviour was not observed"). The clause ends at
    . ; : ! ? ( ) or a line break, at but / and / because / though / although / however / yet / so / which /
    whereas / while / except, and at a comma followed by a verb such as is / was / has ("denies chest pain, is
    noncompliant" still fires); a list joined by commas or "or" stays in the scope of its negation.
``patient_quote``
    The term is inside double quotation marks (straight or curly) that the sentence attributes to the patient: a
    speech verb (states, says, said, reports, tells, calls, describes, explains, admits, ...) or "per patient",
    "in his/her/their own words" before the quote whose subject is not another person (nurse, family, EMS, ...),
    or ", he/she/patient said" right after it. ``patient states "I'm an alcoholic"`` is cleared. A quotation the
    sentence does not attribute to the patient is *not* cleared: scare quotes imply disbelief, which the PDSQI-9
    counts as stigmatizing; such hits carry ``quoted=True``.
``not_the_patient``
    Entries marked ``patient_only`` (refuse / refused / refusal) count only for the patient refusing: when the
    nearest subject before the term in the clause is another agent (insurance, pharmacy, family, team, ...), or
    "by <agent>" follows ("coverage was refused by the insurer"), the candidate is cleared. "Declined" is not in
    the lexicon: it is the neutral wording the lexicon suggests in place of "refused" ("patient declined the flu
    vaccine" never fires).
``clinical_adjective``
    Entries marked ``noun_only`` (alcoholic, diabetic, epileptic, schizophrenic, homeless) fire only when the word
    labels a person: plural ("diabetics"), followed by a person noun ("diabetic patient", "alcoholic man"), by
    punctuation or the end of the line ("a known alcoholic."), or by a word that follows a noun (who, with, and,
    on, presenting, is, ...). Followed by any other word it is an adjective of a clinical noun and is cleared
    ("diabetic foot exam", "diabetic retinopathy", "diabetic diet", "alcoholic cirrhosis"). "non-diabetic" and
    "pre-diabetic" never match.
``clinical_use`` / ``billing_context`` / ``not_about_patient`` (per entry: ``clear_rule``)
    The entry's ``clear_prev`` words within 3 words before the term, or its ``clear_next`` word right after it
    (auxiliaries such as was / were / is skipped): "insurance claims", "claim was denied" (billing_context),
    "osteopathic manipulative treatment" (clinical_use), "physically demanding job" (not_about_patient), "has
    drunk" (clinical_use).

Clinical wording that simply is not in the lexicon never becomes a candidate: "denies chest pain", "alcohol /
substance / opioid use disorder", "medication adherence counselling", "adherence to therapy discussed", "lung
compliance", "reported penicillin allergy", "addiction medicine", "declined".

Where candidates overlap, the longest hit wins ("IV drug abuser" is one hit, entry drug_abuser); cleared
candidates are kept only where no hit overlaps them.

Carried forward or introduced (:func:`assess`): a summary hit is *carried* when a note of its case has a hit of
the same lexicon entry or the same word family (last word without its ending: "abuse" / "abuser", "refused" /
"refusal"), with the note id and span of each matching source hit; otherwise it is *introduced*. Cleared note
candidates do not count: a summary that writes "drug-seeking" where the note wrote "not drug-seeking" introduced
it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from engine.evidence.stigma._rules import RULES, context_rule, quotes_of
from engine.evidence.stigma._terms import LexiconError, compile_term, family_key
from engine.evidence.text import tokenize

LEXICON_PATH = Path(__file__).resolve().parents[2] / "resources" / "stigma_lexicon.json"
RULES_VERSION = "stigma-rules-1"  # bump when a context rule changes: the lexicon version changes with it

NOTES_ITEM = "stigmatizing_notes"  # PDSQI-9 item keys (engine.core.rubric)
SUMMARY_ITEM = "stigmatizing_summary"

CARRIED = "carried"
INTRODUCED = "introduced"

_ENTRY_FIELDS = {"id", "term", "category", "source", "suggest", "noun_only", "patient_only", "clear_prev",
                 "clear_next", "clear_rule"}


# --------------------------------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class LexiconEntry:
    id: str
    term: str
    category: str
    source: str = ""
    suggest: Optional[str] = None
    noun_only: bool = False
    patient_only: bool = False
    clear_prev: tuple[str, ...] = ()
    clear_next: tuple[str, ...] = ()
    clear_rule: str = "clinical_use"
    origin: str = "lexicon"  # "lexicon" (the data file) or "extra" (supplied at run time, e.g. from Settings)

    def canonical(self) -> dict[str, Any]:
        d = asdict(self)
        d["clear_prev"] = sorted(self.clear_prev)
        d["clear_next"] = sorted(self.clear_next)
        return d

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, categories: Iterable[str], origin: str) -> "LexiconEntry":
        if not isinstance(raw, Mapping):
            raise LexiconError(f"a lexicon entry must be an object with 'term' and 'category', not {raw!r}")
        unknown = set(raw) - _ENTRY_FIELDS
        if unknown:
            raise LexiconError(f"lexicon entry {raw.get('term')!r}: unknown field(s) {', '.join(sorted(unknown))}; "
                               f"allowed: {', '.join(sorted(_ENTRY_FIELDS))}")
        term = raw.get("term")
        if not isinstance(term, str) or not term.strip():
            raise LexiconError(f"lexicon entry {raw!r}: 'term' must be a non-empty word or phrase")
        term = " ".join(term.split())
        cats = tuple(categories)
        category = raw.get("category")
        if category not in cats:
            raise LexiconError(f"lexicon entry {term!r}: category {category!r} is not one of {', '.join(cats)}")
        eid = raw.get("id") or f"{'extra:' if origin == 'extra' else ''}{_slug(term)}"
        if not isinstance(eid, str):
            raise LexiconError(f"lexicon entry {term!r}: 'id' must be text")

        def words(key: str) -> tuple[str, ...]:
            v = raw.get(key) or ()
            if isinstance(v, str) or not all(isinstance(w, str) for w in v):
                raise LexiconError(f"lexicon entry {term!r}: {key!r} must be a list of words")
            return tuple(w.lower().replace("’", "'") for w in v)

        rule = raw.get("clear_rule") or "clinical_use"
        if rule not in RULES:
            raise LexiconError(f"lexicon entry {term!r}: clear_rule {rule!r} is not one of {', '.join(RULES)}")
        suggest = raw.get("suggest")
        entry = cls(id=eid, term=term, category=category, source=str(raw.get("source") or
                                                                        ("added by a clinician" if origin == "extra"
                                                                         else "")),
                    suggest=str(suggest) if suggest else None, noun_only=bool(raw.get("noun_only", False)),
                    patient_only=bool(raw.get("patient_only", False)), clear_prev=words("clear_prev"),
                    clear_next=words("clear_next"), clear_rule=rule, origin=origin)
        compile_term(term)  # raises LexiconError on a malformed term
        return entry


def _slug(term: str) -> str:
    return "_".join(tokenize(term, case="lower_text")) or "term"


# ------------------------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class StigmaHit:
    """One lexicon match: a hit when ``cleared_by`` is None, else a near-miss cleared by that rule."""

    start: int
    end: int
    text: str
    entry_id: str
    term: str
    category: str
    source: str = ""
    suggest: Optional[str] = None
    cleared_by: Optional[str] = None
    quoted: bool = False  # inside quotation marks (cleared when attributed to the patient)
    origin: str = "lexicon"

    @property
    def fires(self) -> bool:
        return self.cleared_by is None

    @property
    def family(self) -> str:
        return family_key(self.text)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StigmaScan:
    """Every candidate of one text: ``hits`` (fired) and ``cleared`` (near-misses), each in text order."""

    hits: tuple[StigmaHit, ...]
    cleared: tuple[StigmaHit, ...]
    lexicon_version: str

    @property
    def candidates(self) -> tuple[StigmaHit, ...]:
        return tuple(sorted(self.hits + self.cleared, key=lambda h: (h.start, h.end)))

    @property
    def has_stigma(self) -> bool:
        return bool(self.hits)


@dataclass(frozen=True)
class SourceMatch:
    """A note hit that a summary hit repeats."""

    note_id: str
    start: int
    end: int
    text: str
    entry_id: str


@dataclass(frozen=True)
class SummaryHit:
    hit: StigmaHit
    status: str  # CARRIED or INTRODUCED
    sources: tuple[SourceMatch, ...] = ()  # same entry first, then same word family; in note order

    @property
    def source(self) -> Optional[SourceMatch]:
        return self.sources[0] if self.sources else None


@dataclass(frozen=True)
class NoteHit:
    note_id: str
    hit: StigmaHit


@dataclass(frozen=True)
class SummaryStigma:
    """The detector's answer for one summary and the notes of its case."""

    summary_id: str
    case_id: str
    lexicon_version: str
    summary_hits: tuple[SummaryHit, ...]
    summary_cleared: tuple[StigmaHit, ...]
    note_hits: tuple[NoteHit, ...]
    note_cleared: tuple[NoteHit, ...] = field(default=())

    @property
    def hits(self) -> tuple[StigmaHit, ...]:
        return tuple(h.hit for h in self.summary_hits)

    @property
    def carried(self) -> tuple[SummaryHit, ...]:
        return tuple(h for h in self.summary_hits if h.status == CARRIED)

    @property
    def introduced(self) -> tuple[SummaryHit, ...]:
        return tuple(h for h in self.summary_hits if h.status == INTRODUCED)

    @property
    def notes_have_stigma(self) -> bool:
        return bool(self.note_hits)

    @property
    def summary_has_stigma(self) -> bool:
        return bool(self.summary_hits)

    @property
    def item_answers(self) -> dict[str, float]:
        """The two PDSQI-9 yes/no items as rating values (1.0 yes, 0.0 no)."""
        return {NOTES_ITEM: float(self.notes_have_stigma), SUMMARY_ITEM: float(self.summary_has_stigma)}

    def to_json(self) -> dict[str, Any]:
        def src(s: Optional[SourceMatch]):
            return asdict(s) if s else None

        return {
            "summary_id": self.summary_id, "case_id": self.case_id, "lexicon_version": self.lexicon_version,
            "items": self.item_answers, "notes_have_stigma": self.notes_have_stigma,
            "summary_has_stigma": self.summary_has_stigma,
            "n_carried": len(self.carried), "n_introduced": len(self.introduced),
            "hits": [{**h.hit.to_json(), "status": h.status, "source_hit": src(h.source),
                      "source_hits": [asdict(s) for s in h.sources]} for h in self.summary_hits],
            "cleared": [h.to_json() for h in self.summary_cleared],
            "note_hits": [{"note_id": n.note_id, **n.hit.to_json()} for n in self.note_hits],
            "note_cleared": [{"note_id": n.note_id, **n.hit.to_json()} for n in self.note_cleared],
        }


# ------------------------------------------------------------------------------------------------ lexicon


class Lexicon:
    """The data-file entries plus any run-time extras, compiled; ``version`` identifies the whole set. ``scan`` keeps
    the scans (immutable) of the last ``SCAN_MEMO`` texts it read, so a page reading a dataset scans each note once."""

    SCAN_MEMO = 4096

    def __init__(self, entries: Sequence[LexiconEntry], categories: Mapping[str, str],
                 references: Mapping[str, str]):
        self.entries = tuple(entries)
        self.categories = dict(categories)
        self.references = dict(references)
        self._patterns = [(e, compile_term(e.term)) for e in self.entries]
        canon = json.dumps({"rules": RULES_VERSION, "entries": sorted(
            (e.canonical() for e in self.entries), key=lambda d: (d["id"], d["term"]))}, sort_keys=True)
        self.version = "lex-" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]
        self.scan: Callable[[str], StigmaScan] = lru_cache(maxsize=self.SCAN_MEMO)(self._scan)

    def __reduce__(self):  # pickled as its entries: the copy compiles its patterns and starts an empty memo
        return Lexicon, (self.entries, self.categories, self.references)

    @classmethod
    def load(cls, extra_entries: Iterable[Mapping[str, Any]] = (), path: Path = LEXICON_PATH) -> "Lexicon":
        base = _base_lexicon(str(path))
        if not extra_entries:
            return base
        entries = list(base.entries)
        ids = {e.id for e in entries}
        for raw in extra_entries:
            e = LexiconEntry.from_dict(raw, categories=base.categories, origin="extra")
            eid, n = e.id, 2
            if eid in ids and not eid.startswith("extra:"):
                eid = f"extra:{eid}"
            while eid in ids:
                eid, n = f"{e.id}-{n}", n + 1
            ids.add(eid)
            entries.append(LexiconEntry(**{**asdict(e), "id": eid}))
        return cls(entries, base.categories, base.references)

    def _scan(self, text: str) -> StigmaScan:
        cands: list[StigmaHit] = []
        quotes = quotes_of(text)
        for order, (e, pat) in enumerate(self._patterns):
            for m in pat.finditer(text):
                rule, quoted = context_rule(text, m.start(), m.end(), e, quotes)
                cands.append(StigmaHit(m.start(), m.end(), m.group(0), e.id, e.term, e.category, e.source,
                                       e.suggest, rule, quoted, e.origin))
        fired = _non_overlapping([c for c in cands if c.fires], [])
        cleared = _non_overlapping([c for c in cands if not c.fires], fired)
        return StigmaScan(tuple(sorted(fired, key=lambda h: h.start)), tuple(sorted(cleared, key=lambda h: h.start)),
                          self.version)


@lru_cache(maxsize=4)
def _base_lexicon(path: str) -> Lexicon:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    cats = raw["categories"]
    entries = [LexiconEntry.from_dict(r, categories=cats, origin="lexicon") for r in raw["entries"]]
    dup = {e.id for e in entries if sum(x.id == e.id for x in entries) > 1}
    if dup:
        raise LexiconError(f"{path}: duplicate entry id(s) {', '.join(sorted(dup))}")
    return Lexicon(entries, cats, raw.get("references", {}))


def load_lexicon(extra_entries: Iterable[Mapping[str, Any]] = ()) -> Lexicon:
    return Lexicon.load(tuple(extra_entries))


def lexicon_version(extra_entries: Iterable[Mapping[str, Any]] = ()) -> str:
    return Lexicon.load(tuple(extra_entries)).version


def detect(text: str, extra_entries: Iterable[Mapping[str, Any]] = ()) -> StigmaScan:
    """Hits and near-misses of the lexicon (plus ``extra_entries``) in ``text``."""
    return Lexicon.load(tuple(extra_entries)).scan(text)


def _non_overlapping(cands: list[StigmaHit], taken: list[StigmaHit]) -> list[StigmaHit]:
    """Longest first (then earliest, then data-file entries before extras); drops what overlaps a kept one."""
    kept: list[StigmaHit] = []
    for c in sorted(cands, key=lambda h: (-(h.end - h.start), h.start, h.origin != "lexicon")):
        if any(c.start < k.end and k.start < c.end for k in (*taken, *kept)):
            continue
        kept.append(c)
    return kept


# ------------------------------------------------------------------------------------ word family + carried


def scan_notes(case, lexicon: Lexicon) -> list[tuple[str, StigmaScan]]:
    """(note id, scan) for every note of a case (reuse across the case's summaries)."""
    return [(n.note_id, lexicon.scan(n.text)) for n in case.notes]


def assess(case, summary, *, extra_entries: Iterable[Mapping[str, Any]] = (), lexicon: Optional[Lexicon] = None,
           note_scans: Optional[list[tuple[str, StigmaScan]]] = None) -> SummaryStigma:
    """The detector's answer for one summary (``engine.core.models.Summary``) and its case's notes: hits, carried
    forward or introduced, and the two PDSQI-9 items."""
    lex = lexicon or Lexicon.load(tuple(extra_entries))
    notes = note_scans if note_scans is not None else scan_notes(case, lex)
    scan = lex.scan(summary.text)
    note_hits = [NoteHit(nid, h) for nid, sc in notes for h in sc.hits]
    out = []
    for h in scan.hits:
        same = [n for n in note_hits if n.hit.entry_id == h.entry_id]
        similar = [n for n in note_hits if n.hit.entry_id != h.entry_id and n.hit.family == h.family]
        sources = tuple(SourceMatch(n.note_id, n.hit.start, n.hit.end, n.hit.text, n.hit.entry_id)
                        for n in same + similar)
        out.append(SummaryHit(h, CARRIED if sources else INTRODUCED, sources))
    return SummaryStigma(summary.summary_id, summary.case_id, lex.version, tuple(out), scan.cleared,
                         tuple(note_hits), tuple(NoteHit(nid, h) for nid, sc in notes for h in sc.cleared))


def assess_dataset(ds, summary_ids: Optional[Iterable[str]] = None,
                   extra_entries: Iterable[Mapping[str, Any]] = ()) -> list[SummaryStigma]:
    """:func:`assess` for the given summaries of a dataset (all by default); notes are scanned once per case."""
    lex = Lexicon.load(tuple(extra_entries))
    ids = list(summary_ids) if summary_ids is not None else [s.summary_id for s in ds.summaries]
    cache: dict[str, list[tuple[str, StigmaScan]]] = {}
    out = []
    for sid in ids:
        s = ds.summary(sid)
        if s.case_id not in cache:
            cache[s.case_id] = scan_notes(ds.case(s.case_id), lex)
        out.append(assess(ds.case(s.case_id), s, lexicon=lex, note_scans=cache[s.case_id]))
    return out


