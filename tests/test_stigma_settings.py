"""Clinician stigmatizing-language lexicon entries: stored in the workspace (migration 7), validated
by engine.evidence.stigma.detector, part of the lexicon version, used by detection, the Lexicon page and the CLI."""
import json
import sqlite3

import pytest
from streamlit.testing.v1 import AppTest

from conftest import BUNDLE, FORMATS, ROOT
from engine.core import untrusted
from engine.data.loading import load_paths
from engine.core.models import Case, Note, Summary
from engine.data.settings import workspace_path
from engine.evidence.stigma.detector import INTRODUCED, LexiconError, assess, detect, lexicon_version, load_lexicon
from engine.evidence.stigma.entries import add_clinician_entry, workspace_entries
from engine.data.store import MIGRATIONS, SCHEMA_VERSION, Store, StoreError

TIMEOUT = 60


# ------------------------------------------------------------------------------------------------------ store


def test_round_trip_in_the_shape_load_lexicon_takes(store):
    assert store.stigma_entries() == [] and workspace_entries(store) == []
    added = add_clinician_entry(store, "  entitled ", "disapproval", suggest="asks for", source="unit guidance",
                                   added_by="dr a")
    assert added["entry_id"] >= 1 and added["term"] == "entitled" and added["active"] is True
    assert added["added_by"] == "dr a" and added["created_at"] and added["deactivated_at"] is None
    add_clinician_entry(store, "frail elderly", "stereotyping", noun_only=True)
    add_clinician_entry(store, "walked out", "disapproval", patient_only=True)
    entries = store.stigma_entries()
    assert entries == [
        {"term": "entitled", "category": "disapproval", "source": "unit guidance", "suggest": "asks for"},
        {"term": "frail elderly", "category": "stereotyping", "noun_only": True},
        {"term": "walked out", "category": "disapproval", "patient_only": True},
    ]
    assert workspace_entries(store) == entries
    lex = load_lexicon(entries)  # accepted as it is
    extras = [e for e in lex.entries if e.origin == "extra"]
    assert [e.term for e in extras] == ["entitled", "frail elderly", "walked out"]
    assert extras[1].noun_only and extras[2].patient_only and extras[0].suggest == "asks for"
    meta = store.stigma_entries(with_meta=True)
    assert [m["entry_id"] for m in meta] == sorted(m["entry_id"] for m in meta)
    assert {"entry_id", "added_by", "created_at", "active", "deactivated_at"} <= set(meta[0])


def test_deactivate_keeps_the_row_and_stops_using_it(store):
    e = add_clinician_entry(store, "entitled", "disapproval")
    gone = store.deactivate_stigma_entry(e["entry_id"])
    assert gone["active"] is False and gone["deactivated_at"]
    assert store.stigma_entries() == []
    (row,) = store.stigma_entries(active_only=False, with_meta=True)
    assert row["term"] == "entitled" and not row["active"]
    with pytest.raises(StoreError, match="already deactivated"):
        store.deactivate_stigma_entry(e["entry_id"])
    with pytest.raises(StoreError, match="no active clinician lexicon entry #999"):
        store.deactivate_stigma_entry(999)
    again = add_clinician_entry(store, "entitled", "disapproval")  # a deactivated term can be added again
    assert again["entry_id"] != e["entry_id"] and len(store.stigma_entries()) == 1


def test_migration_from_the_previous_schema_keeps_data(tmp_path):
    assert MIGRATIONS[-1].version == SCHEMA_VERSION >= 7
    path = tmp_path / "v6.sqlite"
    old = Store(path, migrate_to=6)
    assert old.schema_version() == 6
    ds, _ = load_paths([FORMATS / "dialogue.csv"], name="d")
    old.import_dataset(ds)
    old.put_embedding("m", "sentence", "c" * 64, 1, b"\0\0\0\0")
    with old.connect() as con:
        assert not con.execute("SELECT 1 FROM sqlite_master WHERE name='stigma_entries'").fetchone()
    new = Store(path)
    assert new.schema_version() == SCHEMA_VERSION
    assert new.load_dataset("d").content_hash() == ds.content_hash()
    assert new.get_embedding("m", "sentence", "c" * 64) == (1, b"\0\0\0\0", None)
    assert new.stigma_entries() == []
    add_clinician_entry(new, "entitled", "disapproval")
    assert Store(path).stigma_entries() == [{"term": "entitled", "category": "disapproval"}]


def test_one_active_row_per_term_even_without_the_check(store):
    add_clinician_entry(store, "entitled", "disapproval")
    with store.connect() as con, pytest.raises(sqlite3.IntegrityError):
        con.execute("INSERT INTO stigma_entries (term, category, created_at) VALUES ('Entitled', 'disapproval', 'x')")


# ------------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("term, category, message", [
    ("", "disapproval", "the term is empty"),
    ("   ", "disapproval", "the term is empty"),
    ("entitled", "rudeness", "category 'rudeness' is not a lexicon category; choose one of credibility"),
    ("entitled", "", "is not a lexicon category"),
    ("rude (very", "disapproval", "unbalanced '\\('"),
    ("* rude", "disapproval", "'\\*' must stand alone"),
    ("x" * 201, "disapproval", "shorten it to at most 200"),
])
def test_invalid_entries_are_refused_with_a_reason(store, term, category, message):
    with pytest.raises(LexiconError, match=message):
        add_clinician_entry(store, term, category)
    assert store.stigma_entries(active_only=False) == []


@pytest.mark.parametrize("term", ["combative", "Combative", "claims", "frequent flier", "drug-seeking", "drug seeking",
                                  "homeless"])
def test_duplicates_of_a_built_in_term_are_refused(store, term):
    with pytest.raises(LexiconError, match="already in the built-in lexicon .*there is no need to add it"):
        add_clinician_entry(store, term, "disapproval")
    assert store.stigma_entries() == []


def test_duplicates_of_a_clinician_term_are_refused(store):
    add_clinician_entry(store, "entitled", "disapproval")
    for term in ("entitled", "ENTITLED", " entitled  "):
        with pytest.raises(LexiconError, match="already a clinician entry .*deactivate that entry first"):
            add_clinician_entry(store, term, "credibility")
    add_clinician_entry(store, "rude(|ly)", "disapproval")
    with pytest.raises(LexiconError, match="already a clinician entry"):
        add_clinician_entry(store, "rudely", "disapproval")  # the pattern already finds it
    assert len(store.stigma_entries()) == 2


# ---------------------------------------------------------------------------------------- version and detection


def test_the_lexicon_version_changes_after_an_add_and_after_a_deactivate(store):
    v0 = lexicon_version(workspace_entries(store))
    assert v0 == lexicon_version()
    e = add_clinician_entry(store, "entitled", "disapproval")
    v1 = lexicon_version(workspace_entries(store))
    assert v1 != v0
    f = add_clinician_entry(store, "demands opioids", "credibility")
    v2 = lexicon_version(workspace_entries(store))
    assert v2 not in (v0, v1)
    store.deactivate_stigma_entry(f["entry_id"])
    assert lexicon_version(workspace_entries(store)) == v1  # the same entries: the same version
    store.deactivate_stigma_entry(e["entry_id"])
    assert lexicon_version(workspace_entries(store)) == v0


def test_a_clinician_term_fires_afterwards(store):
    text = "Patient is entitled and asked for a private room."
    assert not detect(text, workspace_entries(store)).hits
    add_clinician_entry(store, "entitled", "disapproval", suggest="asked for", source="unit guidance")
    (hit,) = detect(text, workspace_entries(store)).hits
    assert (hit.text, hit.category, hit.origin, hit.suggest, hit.source) == ("entitled", "disapproval", "extra",
                                                                            "asked for", "unit guidance")
    assert text[hit.start:hit.end] == "entitled"
    assert detect("Patient is not entitled to a refund.", workspace_entries(store)).cleared  # context rules apply
    case = Case("c1", "Internal Medicine", (Note("1", "Admitted for chest pain."),))
    r = assess(case, Summary("c1-s1", "c1", text), extra_entries=workspace_entries(store))
    assert [h.status for h in r.summary_hits] == [INTRODUCED]
    assert r.lexicon_version == lexicon_version(workspace_entries(store)) != lexicon_version()


def test_the_flags_reach_the_detector(store):
    add_clinician_entry(store, "frail", "stereotyping", noun_only=True)
    add_clinician_entry(store, "walked out", "disapproval", patient_only=True)
    extra = workspace_entries(store)
    assert detect("A frail admitted from home.", extra).hits
    assert not detect("Frail appearance noted.", extra).hits  # an adjective of a clinical noun
    assert detect("He walked out before discharge.", extra).hits
    assert not detect("The pharmacy walked out on the contract.", extra).hits  # another agent


# ------------------------------------------------------------------------------------------------------- CLI


def test_the_cli_uses_the_workspace_entries(capsys, tmp_path):
    from engine.cli import main

    args = ["stigma", str(BUNDLE), "--summary", "pulm-01-s2"]
    assert main(args) == 0
    (before,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {h["text"] for h in before["hits"]} == {"claims"} and before["lexicon_version"] == lexicon_version()
    ws = Store(workspace_path())
    add_clinician_entry(ws, "smells", "disapproval", source="ward list")
    assert main(args) == 0
    (after,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert {h["text"] for h in after["hits"]} == {"claims", "smells"}
    smells = next(h for h in after["hits"] if h["text"] == "smells")
    assert smells["origin"] == "extra" and smells["source"] == "ward list"
    assert after["lexicon_version"] == lexicon_version(workspace_entries(ws)) != lexicon_version()
    extra = tmp_path / "extra.json"  # --extra-lexicon adds to the workspace entries
    extra.write_text(json.dumps([{"term": "cheerful", "category": "disapproval"}]))
    assert main([*args, "--extra-lexicon", str(extra)]) == 0
    (both,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert both["lexicon_version"] == lexicon_version([*workspace_entries(ws), {"term": "cheerful",
                                                                                "category": "disapproval"}])
    ws.deactivate_stigma_entry(1)
    assert main(args) == 0
    (gone,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert gone["lexicon_version"] == lexicon_version() and {h["text"] for h in gone["hits"]} == {"claims"}


# ---------------------------------------------------------------------------------------------- Lexicon page


def _page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "lexicon.py"), default_timeout=TIMEOUT)
    at.run()
    return _ok(at)


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at: AppTest) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "success", "info", "warning", "error")
                     for e in getattr(at, kind))


def _add(at: AppTest, term: str, category: str, **fields) -> AppTest:
    at.text_input(key="stig_term").input(term)
    at.selectbox(key="stig_category").select(category)
    for key, value in fields.items():
        w = at.checkbox(key=key) if isinstance(value, bool) else at.text_input(key=key)
        (w.check() if value else w.uncheck()) if isinstance(value, bool) else w.input(value)
    next(b for b in at.button if b.label == "Add entry").click()
    return _ok(at.run())


def _table(at: AppTest):
    return next(d.value for d in at.dataframe if "term" in d.value.columns)


def test_settings_adds_lists_and_deactivates_an_entry():
    at = _page()
    text = _text(at)
    v0 = lexicon_version()
    assert at.title[0].value == "Stigmatizing-language lexicon"
    assert untrusted.md(v0) in text and "Stigmatizing language" in text  # built-in version, README section
    base = load_lexicon()
    for cat in base.categories:
        n = sum(e.category == cat for e in base.entries)
        assert f"**{untrusted.md(cat)}** ({n})" in text
    assert "No clinician entries yet" in text
    assert [o.split(":")[0] for o in at.selectbox(key="stig_category").options] == list(base.categories)
    assert {c.label for c in at.checkbox} >= {
        "Only as a noun for a person (\"diabetics\", not \"diabetic foot exam\")",
        "Only when the patient does it (not an insurer, a pharmacy or the family)"}
    assert "recomputed" in text

    _add(at, "entitled", "disapproval", stig_suggest="asked for", stig_note="unit guidance", stig_added_by="dr a",
         stig_patient_only=True)
    ws = Store(workspace_path())
    v1 = lexicon_version(workspace_entries(ws))
    assert v1 != v0
    assert ws.stigma_entries() == [{"term": "entitled", "category": "disapproval", "source": "unit guidance",
                                    "suggest": "asked for", "patient_only": True}]
    text = _text(at)
    assert at.success and untrusted.md(v1) in at.success[0].value and "entitled" in at.success[0].value
    assert f"**Lexicon version in use:** {untrusted.md(v1)}" in text
    df = _table(at)
    row = df.iloc[0]
    assert (row["term"], row["category"], row["suggest"], row["source / note"], row["added by"], row["status"]) == \
        ("entitled", "disapproval", "asked for", "unit guidance", "dr a", "active")
    assert row["only when the patient does it"] == "yes" and row["only as a noun for a person"] == "no"  # the display rule
    assert at.text_input(key="stig_term").value == ""  # the form is cleared after an add

    _add(at, "combative", "disapproval")  # a built-in term: refused, the page keeps running
    assert at.error and "already in the built\\-in lexicon" in at.error[0].value
    _add(at, "", "disapproval")
    assert at.error and "the term is empty" in at.error[0].value
    assert len(_table(at)) == 1 and len(ws.stigma_entries()) == 1

    at.selectbox(key="stig_deactivate").select(1)
    next(b for b in at.button if b.label == "Deactivate").click()
    _ok(at.run())
    assert ws.stigma_entries() == []
    assert untrusted.md(v0) in at.success[0].value
    assert f"**Lexicon version in use:** {untrusted.md(v0)}" in _text(at)
    assert _table(at).iloc[0]["status"].startswith("deactivated")


def test_settings_shows_hostile_terms_escaped():
    at = _page()
    term = "[click](https://evil.example) <b>x</b> :red[loud]"
    _add(at, term, "disapproval", stig_note="<img src=x onerror=alert(1)>")
    (entry,) = Store(workspace_path()).stigma_entries()
    assert entry["term"] == term
    msg = at.success[0].value
    assert untrusted.md(term) in msg and "[click](" not in msg and "<b>" not in msg
    row = _table(at).iloc[0]
    assert row["term"] == term and row["source / note"] == "<img src=x onerror=alert(1)>"  # cells are verbatim
    bad = "**loud** [x](https://evil.example)"
    _add(at, bad, "disapproval")  # '*' must stand alone: refused, the message shows the term escaped
    err = at.error[0].value
    assert "must stand alone" in err and "**loud**" not in err and untrusted.md(repr(bad)) in err
