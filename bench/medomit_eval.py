"""MED-OMIT evaluation on the sample data's ground-truth manifest.

For every summary: the manifest's *dropped facts* (pertinent facts the summary left out) should be reported as
omitted; the pertinent facts that *other* summaries of the same case dropped but this summary states (all their
key terms are in its text) should not be. A reported omitted fact matches a manifest fact when its linked source
span overlaps the manifest's source span; only when no extracted fact lies on that span, when its text contains
one of the manifest's key terms (:func:`matches`).

Two pipelines are measured with the same code path (fact linking, scoring, aggregation):
  * model   — every LLM step answered by an embedded model (default: the 1.5B default judge; --model gemma3-270m
              for the smoke-test model);
  * oracle  — every LLM step answered from the manifest's truth (facts = the manifest's pertinent facts, all
              "critical", no DDx clusters, omitted iff a key term is missing from the summary): the pipeline's
              upper bound.
Besides recall and false reports it prints, per model: the share of extracted facts whose evidence span was found
in the notes, facts and differential diagnoses per case, and minutes per case. Results are kept in
bench/out/medomit_<model>.sqlite (an interrupted run resumes); --ship writes the model's MED-OMIT results as rows
the sample import stores (sample_data/medomit_results.jsonl), so the Case page shows them without a run.
Usage: python bench/medomit_eval.py [--oracle-only] [--cases N | --case-ids A,B] [--ctx 8192] [--model KEY]
                                    [--ship PATH]   (--ship merges: rows of summaries not run are kept)
"""
import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.llm import Capabilities, Generation, NextToken  # noqa: E402
from engine.data import load_paths  # noqa: E402
from engine.evidence.medomit import MedOmit, MedOmitResult, run_medomit  # noqa: E402
from engine.sample import SAMPLE_BUNDLE, load_manifest  # noqa: E402
from engine.data import Store  # noqa: E402


def pertinent_facts(manifest: dict, case_id: str) -> list[dict]:
    out, seen = [], set()
    for sid, e in manifest["summaries"].items():
        if e["case_id"] != case_id:
            continue
        for d in e["defects"]:
            if d["type"] == "dropped_fact" and d["source_span"] not in seen:
                seen.add(d["source_span"])
                out.append(d)
    return out


class OracleBackend:
    """Answers each MED-OMIT step from the manifest (upper bound of the pipeline); the omission question "does the
    summary state this fact?" is answered yes iff every key term of the fact is in the summary."""

    name = "oracle"
    capabilities = Capabilities(next_token=True)
    n_ctx = 1_000_000

    def __init__(self, manifest, ds):
        self.manifest, self.ds = manifest, ds
        self.by_text = {}

    def describe(self):
        return {"backend": "oracle", "model_file": "manifest truth"}

    def render(self, messages):
        return "\n".join(m["content"] for m in messages)

    def count_tokens(self, text):
        return len(text.split())

    def generate(self, prompt, schema, max_tokens, temperature, seed, want_logprobs):
        props = schema["properties"]
        if "facts" in props:
            note = [b for b in _blocks(prompt) if b.tag == "note"][-1]  # the prompt's fenced note
            nid, note_text = note.attrs["id"], note.body
            case = next(c for c in self.ds.cases if any(n.text == note_text for n in c.notes))
            facts = [d for d in pertinent_facts(self.manifest, case.case_id) if d["note_id"] == nid]
            for d in facts:
                self.by_text[d["source_span"]] = d
            out = {"facts": [{"fact": d["source_span"], "quote": d["source_span"]} for d in facts]}
        elif "diagnoses" in props:
            out = {"diagnoses": [{"name": "(no DDx in the manifest)", "likelihood": "possible", "reason": "-"}]}
        elif "clusters" in props:
            out = {"clusters": []}
        elif all("enum" in v and "critical" in v["enum"] for v in props.values()):
            out = {k: "critical" for k in props}
        else:
            blocks = {b.tag: b.body for b in _blocks(prompt)}
            summary = blocks["summary"].lower()
            lines = {f["id"]: f["fact"] for f in json.loads(blocks["facts"])}
            out = {}
            for fid in props:
                d = self.by_text[lines[fid]]
                gone = any(k.lower() not in summary for k in d["key_terms"])
                out[fid] = {"status": "omitted" if gone else "present", "explanation": "manifest key term check"}
        return Generation(json.dumps(out), 0, 0, 0.0, 0.0, "stop")


def _oracle_next_token(self, messages, keep):
    summary = messages[1]["content"].lower()
    fact = re.search(r">(.*)</fact-", messages[3]["content"], re.S).group(1).strip()
    d = self.by_text.get(fact)
    keys = d["key_terms"] if d is not None else []
    if d is None:  # a part of a manifest fact (decided part by part): the key terms it holds
        d = next((x for x in self.by_text.values() if fact in x["source_span"]), None)
        keys = [k for k in d["key_terms"] if k.lower() in fact.lower()] if d is not None else []
    stated = all(k.lower() in summary for k in keys)
    return NextToken({"yes": 0.0 if stated else -20.0, "no": -20.0 if stated else 0.0}, 0, 0, 0.0)


OracleBackend.next_token = _oracle_next_token


def _blocks(prompt: str):
    """The fenced data blocks of a MED-OMIT prompt (engine.llm.prompt_fence)."""
    from engine.llm import read_blocks

    code = re.search(r'tags whose names end in "-([0-9a-f]{10})"', prompt).group(1)
    return read_blocks(prompt, code)


def on_span(f, d, case, regions=None) -> bool:
    """The fact's linked evidence (or the given ``regions``, (note id, start, end)) overlaps the manifest fact's
    source span."""
    spans = regions if regions is not None else [(f.note_id, f.start, f.end)] if f.start is not None else []
    text = case.note(d["note_id"]).text
    s = text.find(d["source_span"])
    return s >= 0 and any(nid == d["note_id"] and a < s + len(d["source_span"]) and s < b for nid, a, b in spans)


def matches(fact, res, d, case) -> bool:
    """A scored fact stands for a manifest fact when the regions its omission points to (the parts left out when the
    summary states it in part, else its evidence: ``FactScore.regions``) overlap the manifest's source span; only
    when no extracted fact lies on that span, a fact whose text (or left-out parts) names one of the manifest's key
    terms stands for it. (Matching by key term alone counted an omitted earlier value — "eGFR 38 in March" — as the
    omission of a stated later one.)"""
    f = res.fact(fact.fact_id)
    if any(on_span(g, d, case) for g in res.facts):
        return on_span(f, d, case, fact.regions(f))
    words = " ".join(m[0] for m in fact.missing) if fact.missing else f.text
    return any(k.lower() in words.lower() for k in d["key_terms"])


STATEMENT_LABELS = Path(__file__).resolve().parent.parent / "sample_data" / "medomit_statement_labels.json"


def statement_labels(path: Path = STATEMENT_LABELS) -> dict[tuple[str, str], set[str]]:
    """The manifest re-labelled at statement level: (summary id, a present fact's source span) -> the statements of
    that fact the summary leaves out in part (each entry quotes the note and the summary; see the file)."""
    if not path.is_file():
        return {}
    out: dict[tuple[str, str], set[str]] = {}
    for e in json.loads(path.read_text(encoding="utf-8"))["partly_omitted"]:
        out.setdefault((e["summary_id"], e["source_span"]), set()).add(e["statement"])
    return out


def manifest_figures(res, ds, manifest, omitted_ids=None, partial=None) -> tuple[int, int, int, int, list[float]]:
    """(dropped facts reported, dropped facts, present facts wrongly reported, present facts, weights of the
    reported dropped facts) for one complete result. ``omitted_ids``: judge another decision on the same facts (the
    fact ids it reported omitted) instead of the result's own. ``partial`` (:func:`statement_labels`): a statement of
    a present fact that the summary leaves out in part is not a wrong report of that fact (its other statements
    still are)."""
    case = ds.case(res.case_id)
    summary_text = ds.summary(res.summary_id).text.lower()
    own = [d for d in manifest["summaries"][res.summary_id]["defects"] if d["type"] == "dropped_fact"]
    others = [d for d in pertinent_facts(manifest, res.case_id)
              if d not in own and all(k.lower() in summary_text for k in d["key_terms"])]
    if omitted_ids is None:
        reported = res.omitted
    else:
        unlinked = {f.fact_id for f in res.not_found}
        # another decision's reports point at whole facts (this result's left-out parts are its own decision's)
        reported = [replace(s, missing=[]) for s in res.scores if s.fact_id in set(omitted_ids)
                    and s.fact_id not in unlinked]
    detected, weights = 0, []
    for d in own:
        hits = [s for s in reported if matches(s, res, d, case)]
        if hits:
            detected += 1
            weights.append(max(s.score for s in hits))
    partial = partial or {}
    false_reports = sum(1 for d in others if any(
        matches(s, res, d, case) and res.fact(s.fact_id).text not in partial.get((res.summary_id, d["source_span"]),
                                                                                  ())
        for s in reported))
    return detected, len(own), false_reports, len(others), weights


PER_SUMMARY_STEPS = ("omissions", "summary DDx")


def cost_per_case(results) -> dict[str, dict[str, float]]:
    """Seconds per step and case (MedOmitResult.seconds_by_step): the case-level steps counted once (the
    summaries of a case share them), the per-summary steps summed over its summaries. Cases whose steps carry
    no model time (rows made before steps were timed, the oracle) are left out."""
    out: dict[str, dict[str, float]] = {}
    for r in results:
        t = r.seconds_by_step()
        c = out.setdefault(r.case_id, {})
        for k, v in t.items():
            c[k] = c.get(k, 0.0) + v if k in PER_SUMMARY_STEPS else max(c.get(k, 0.0), v)
    return {cid: c for cid, c in out.items() if sum(v for k, v in c.items() if k not in PER_SUMMARY_STEPS) >= 1.0}


def merge_shipped(path: Path, rows: list[str]) -> int:
    """Write ``rows`` to ``path``, keeping the rows of summaries this run did not touch (in file order, then the new
    ones). Returns how many old rows were kept, so cases can be run one at a time and shipped as they finish."""
    new = {json.loads(r)["summary_id"]: r for r in rows}
    old = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.exists() else []
    kept = [x for x in old if json.loads(x)["summary_id"] not in new]
    path.write_text("\n".join(kept + list(new.values())) + "\n", encoding="utf-8")
    return len(kept)


def run_pipeline(mo, ds, sids, store_path):
    """The whole pipeline, every step through the store at ``store_path`` (an interrupted run resumes)."""
    store = Store(store_path)
    if "eval" not in store.dataset_names():
        store.import_dataset(ds, name="eval")
    mo.cache = store
    yield from run_medomit(mo, ds, sids, store=store, dataset_name="eval")


def decided_again(mo, ds, sids, shipped: Path):
    """The shipped results' facts, differential, importance and clusters, decided again with today's decision."""
    rows = {json.loads(x)["summary_id"]: json.loads(x) for x in shipped.read_text(encoding="utf-8").splitlines()
            if x.strip()}
    for sid in sids:
        if sid not in rows:
            print(f"  {sid}: no shipped row", file=sys.stderr)
            continue
        old = MedOmitResult._from_json(rows[sid]["result"])
        s = ds.summary(sid)
        t0 = time.perf_counter()
        res = mo.decide_again(old, ds.case(s.case_id), s) if old.status == "complete" else old
        print(f"  {sid}: {len(res.scores)} facts decided in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
              flush=True)
        yield res


def relinked(mo, ds, sids, shipped: Path):
    """The shipped results with the facts today's linking places weighed (engine.evidence.medomit.relink): only
    their importance and clusters are asked, once per case, and every summary is decided again."""
    from engine.evidence.medomit import relink_case

    rows = {json.loads(x)["summary_id"]: json.loads(x) for x in shipped.read_text(encoding="utf-8").splitlines()
            if x.strip()}
    by_case: dict[str, list] = {}
    for sid in sids:
        if sid in rows:
            s = ds.summary(sid)
            by_case.setdefault(s.case_id, []).append((s, MedOmitResult._from_json(rows[sid]["result"])))
    for cid, pairs in by_case.items():
        t0 = time.perf_counter()
        out = relink_case(mo, ds.case(cid), pairs)
        n = len(out[0].provenance.get("relinked_facts", [])) if out else 0
        g = len(out[0].provenance.get("passage_facts", [])) if out else 0
        print(f"  {cid}: {n} facts newly linked, {g} passages added, {len(out)} summaries decided in "
              f"{time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
        yield from out


def evaluate(label, mo, ds, manifest, case_ids, results_of, ship=None):
    """``results_of(mo, ds, summary_ids)`` yields the results to measure (a full run, or decided again)."""
    model_id = mo.model_id
    dropped = detected = present = false_reports = false_partial = incomplete = 0
    partial = statement_labels()
    weights = []
    per_case: dict[str, dict] = {}
    t0 = time.perf_counter()
    sids = [s.summary_id for s in ds.summaries if s.case_id in case_ids]
    results = []
    for res in results_of(mo, ds, sids):
        results.append(res)
        pc = per_case.setdefault(res.case_id, {"t_end": time.perf_counter()})
        pc["t_end"] = time.perf_counter()
        if res.facts:
            pc["facts"] = len(res.facts)
            pc["linked"] = sum(1 for f in res.facts if f.link != "unlinked")
            pc["ddx"] = len(res.ddx)
        if res.status != "complete":
            incomplete += 1
            own = [d for d in manifest["summaries"][res.summary_id]["defects"] if d["type"] == "dropped_fact"]
            dropped += len(own)
            continue
        det, n_own, fr, n_present, w = manifest_figures(res, ds, manifest)
        detected, dropped, false_reports, present = detected + det, dropped + n_own, false_reports + fr, present + n_present
        false_partial += manifest_figures(res, ds, manifest, partial=partial)[2]
        weights += w
    secs = time.perf_counter() - t0
    print(f"[{label}] {len(sids)} summaries in {secs:.0f} s ({secs / 60 / max(1, len(case_ids)):.1f} min per case, "
          f"steps found in the store not re-run); incomplete runs: {incomplete}")
    facts = sum(p.get("facts", 0) for p in per_case.values())
    linked = sum(p.get("linked", 0) for p in per_case.values())
    if facts:
        print(f"[{label}] extracted facts whose evidence span was found in the notes: {linked}/{facts} "
              f"({linked / facts:.0%}); per case: facts " + ", ".join(str(p.get("facts", 0)) for p in per_case.values())
              + "; differential diagnoses " + ", ".join(str(p.get("ddx", 0)) for p in per_case.values()))
    cost = cost_per_case(results)
    if cost:
        steps = sorted({k for c in cost.values() for k in c})
        print(f"[{label}] model minutes per case from scratch, by step (each step's time when it ran, cached or not; "
              "case-level steps once per case, the omissions and the summary's differential per summary):")
        for cid, c in cost.items():
            print(f"    {cid}: total {sum(c.values()) / 60:.1f} min — " +
                  ", ".join(f"{k} {c.get(k, 0.0) / 60:.1f}" for k in steps))
    done = [r for r in results if r.status == "complete"]
    if done:
        scored = [x for r in done for x in r.scores]
        print(f"[{label}] facts decided: {len(scored)}, reported omitted {sum(x.omitted for x in scored)} "
              f"({sum(x.omitted for x in scored) / max(1, len(scored)):.0%}); the model was asked for "
              f"{sum(x.p_stated is not None for x in scored)} (the others' coverage decides)")
    print(f"[{label}] injected dropped facts reported as omitted: {detected}/{dropped} "
          f"({detected / dropped:.0%})" + (f"; their weights: mean {sum(weights) / len(weights):.2f}, "
                                            f"values {sorted(set(weights))}" if weights else ""))
    print(f"[{label}] present pertinent facts wrongly reported as omitted: {false_reports}/{present} "
          f"({false_reports / present:.0%}); with the statement-level labels ({STATEMENT_LABELS.name}: a statement "
          f"the summary leaves out in part is not a wrong report): {false_partial}/{present}" if present else
          f"[{label}] no present pertinent facts to test")
    if ship:
        from engine.evidence.medomit import result_key

        rows = []
        for res in results:
            s = ds.summary(res.summary_id)
            rows.append(json.dumps({"method": "medomit", "summary_id": res.summary_id, "status": res.status,
                                    "cache_key": result_key(model_id, ds.case(s.case_id), s, mo.decision, mo.gaps,
                                                            mo.facts),
                                    "result": res.to_json()}, sort_keys=True))
        kept = merge_shipped(Path(ship), rows)
        print(f"[{label}] {len(rows)} MED-OMIT results written to {ship} ({kept} rows of other summaries kept)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle-only", action="store_true")
    ap.add_argument("--cases", type=int, default=0, help="only the first N cases (0 = all)")
    ap.add_argument("--case-ids", default="", help="only these cases (comma-separated ids)")
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model key")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--ship", help="write the model's results as shipped sample rows to this file")
    ap.add_argument("--facts", default="model", help="the fact source of the model's run "
                    "(engine.evidence.medomit.facts: model, statements)")
    ap.add_argument("--relink", default="", metavar="ROWS",
                    help="the shipped rows with the facts today's linking places and the passages no fact covers "
                         "weighed (their importance, and the linked facts' clusters, asked once per case), every "
                         "summary decided again")
    ap.add_argument("--decide-again", default="", metavar="ROWS",
                    help="take facts, differential, importance and clusters from these shipped rows and run only "
                         "today's omission decision")
    args = ap.parse_args()
    ds, _ = load_paths([SAMPLE_BUNDLE], name="eval")
    manifest = load_manifest()
    case_ids = [c.case_id for c in ds.cases][: args.cases or None]
    if args.case_ids:
        wanted = [c.strip() for c in args.case_ids.split(",") if c.strip()]
        unknown = sorted(set(wanted) - set(case_ids))
        if unknown:
            ap.error(f"unknown case ids: {', '.join(unknown)}")
        case_ids = [c for c in case_ids if c in wanted]
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    from engine.evidence import Embedder

    emb = Embedder()
    with tempfile.TemporaryDirectory() as tmp:
        evaluate("oracle pipeline check (true by construction, not a result)",
                 MedOmit(OracleBackend(manifest, ds), "oracle", embedder=emb, facts="model"), ds, manifest, case_ids,
                 lambda mo, d, sids: run_pipeline(mo, d, sids, Path(tmp) / "o.sqlite"))
    if not args.oracle_only:
        from engine.judge import open_llama_backend
        from engine.llm import EMBEDDED

        be, sha = open_llama_backend("", n_ctx=args.ctx, n_threads=args.threads, embedded_key=args.model)
        if args.decide_again or args.relink:  # the closed questions' answers are kept on disk (asks only new ones)
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from verify_bench import CachedAnswers

            be = CachedAnswers(be, sha, out / "omit_answers.jsonl")
            be.generate = be.b.generate
        mo = MedOmit(be, sha, embedder=emb, facts=args.facts)
        if args.relink:
            of = lambda m, d, sids: relinked(m, d, sids, Path(args.relink))  # noqa: E731
        elif args.decide_again:
            of = lambda m, d, sids: decided_again(m, d, sids, Path(args.decide_again))  # noqa: E731
        else:
            of = lambda m, d, sids: run_pipeline(m, d, sids, out / f"medomit_{args.model}.sqlite")  # noqa: E731
        label = EMBEDDED[args.model].short_label + ("" if args.facts == "model" else f", facts: {args.facts}")
        evaluate(label, mo, ds, manifest, case_ids, of, args.ship)


if __name__ == "__main__":
    main()
