"""Which items of an omitted list fact a summary writes, read from its words (no model).

A fact decided whole may be a list: "CXR: cardiomegaly, bilateral interstitial edema, small bilateral pleural
effusions". A summary that writes "interstitial edema on chest radiograph" leaves out two of its three findings:
the fact is rightly omitted, but listed whole it reads as if the summary said nothing of it. :func:`list_items`
cuts such a fact after its list number and heading at commas and semicolons (outside brackets; a number's thousands comma is not a
cut); :func:`written_items` says which items the summary writes: an item is written when the summary repeats at
least :data:`WRITTEN_SHARE` of its content words and numbers
(:func:`engine.evidence.coverage.unit_coverage.lexical_set`), every number it gives and every key term it names
(:func:`engine.evidence.text.terms.missing_key_terms`, abbreviations read both ways), and the words it repeats are
two or more, or a key term or number (one common word, "day" of "day of", shows nothing). This explains a decision;
it decides nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

WRITTEN_SHARE = 0.5
_HEADING = re.compile(r"^\s*(?:(?:\d{1,2}[.)]|#\d{1,2}|[-*•])\s+)?(?:[A-Za-z][\w /&()-]{0,39}:\s+)?")


@dataclass(frozen=True)
class Item:
    text: str
    start: int  # offsets in the fact's text
    end: int


@dataclass(frozen=True)
class ItemsWritten:
    written: tuple[Item, ...]
    unwritten: tuple[Item, ...]

    @property
    def partly(self) -> bool:
        """Some items written and some not."""
        return bool(self.written) and bool(self.unwritten)


def list_items(text: str) -> list[Item]:
    """The items of a list fact (see the module docstring); [] when it is not a list of at least two items."""
    head = _HEADING.match(text)
    at = head.end() if head else 0
    cuts, depth = [], 0
    for i in range(at, len(text)):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]" and depth > 0:
            depth -= 1
        elif depth == 0 and c in ",;" and (i + 1 == len(text) or text[i + 1].isspace()):
            cuts.append(i)
    items = []
    for a, b in zip([at] + [c + 1 for c in cuts], cuts + [len(text)]):
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        core = piece.strip().rstrip(".;,")
        joined = re.match(r"(?:and|or)\s+", core, re.IGNORECASE)
        if joined:
            lead, core = lead + joined.end(), core[joined.end():]
        if core:
            items.append(Item(core, a + lead, a + lead + len(core)))
    return items if len(items) >= 2 else []


def written_items(fact_text: str, summary_text: str) -> ItemsWritten:
    """The fact's list items (:func:`list_items`) split into those ``summary_text`` writes and those it does not."""
    from engine.evidence.coverage import lexical_set
    from engine.evidence.text import key_terms, missing_key_terms, numbers

    said, said_numbers = lexical_set(summary_text), numbers(summary_text)
    written, unwritten = [], []
    for item in list_items(fact_text):
        words = lexical_set(item.text)
        if not words:
            continue
        keys, nums = key_terms(item.text), numbers(item.text)
        matched = words & said
        ok = (len(matched) / len(words) >= WRITTEN_SHARE and nums <= said_numbers
              and (len(matched) >= 2 or bool(keys) or bool(nums))  # one common word ("day") shows nothing
              and not missing_key_terms(item.text, summary_text, keys, skip_negated=False))
        (written if ok else unwritten).append(item)
    return ItemsWritten(tuple(written), tuple(unwritten))
