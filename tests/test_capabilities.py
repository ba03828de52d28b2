"""Backends declare what they can do (engine.llm.backends.Capabilities) and callers act on the declaration: several
summaries in flight only for a backend that says it is concurrent, a run plan in tokens only for one with an
in-process tokenizer, and a CLI flag that would do nothing is refused with a message."""
import re
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import BUNDLE, ROOT
from engine.llm.backends import Capabilities
from engine.llm.llama import LlamaCppBackend
from engine.llm.http_backend import OpenAIHTTPBackend
from engine.judge.runner import Judge, run_batch
from engine.judge.results import JudgeParams
from engine.data.loading import load_paths
from fakes import SlowFake


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE], name="sample")[0]


def test_the_real_backends_declare_their_capabilities():
    http = OpenAIHTTPBackend.capabilities
    assert http.concurrent and not http.tokenizer and not http.saved_prefix
    assert isinstance(LlamaCppBackend.capabilities, property)  # its reuse batch comes from the loaded context


def test_a_backend_declared_concurrent_gets_several_summaries_at_once(ds):
    ids = [s.summary_id for s in ds.summaries[:6]]
    sequential = SlowFake()
    list(run_batch(Judge(sequential, "sha", JudgeParams(n_samples=1)), ds, ids, concurrency=4))
    concurrent = SlowFake()
    concurrent.capabilities = replace(Capabilities(), concurrent=True)
    results = list(run_batch(Judge(concurrent, "sha", JudgeParams(n_samples=1)), ds, ids, concurrency=4))
    assert sequential.max_active == 1 and concurrent.max_active > 1
    assert [r.summary_id for r in results] == ids  # the order of the request, whatever finished first


def test_a_run_is_planned_in_tokens_only_with_a_declared_tokenizer(ds):
    from engine.core.jobs import Job
    from engine.judge.runner import plan_job

    ids = [s.summary_id for s in ds.summaries[:2]]
    plain = SlowFake()
    job = Job("plain", len(ids), lambda job: None)
    plan_job(job, Judge(plain, "sha", JudgeParams(n_samples=1)), ds, ids, None, "sample")
    assert job._work is None  # no plan: the estimate extrapolates

    class Tokenizing(SlowFake):
        capabilities = Capabilities(tokenizer=True, reuse_batch=8)

        def tokenize(self, text):
            return text.split()

    tok = Tokenizing()
    job = Job("tok", len(ids), lambda job: None)
    plan_job(job, Judge(tok, "sha", JudgeParams(n_samples=1)), ds, ids, None, "sample")
    assert job._work is not None and len(job._work) == 2 and all(w > 0 for w in job._work)


def test_omissions_refuses_a_concurrency_it_would_not_use(tmp_path, capsys):
    from engine.cli import main

    rc = main(["--workspace", str(tmp_path / "w.sqlite"), "omissions", str(BUNDLE), "--method", "medomit",
               "--concurrency", "4"])
    assert rc == 2
    assert "--concurrency applies to 'judge' only" in capsys.readouterr().err


def test_no_caller_probes_a_backend_or_a_signature():
    """Capabilities are read from the declaration: no getattr on a backend, no inspect.signature in the engine."""
    offenders = []
    for path in [*(ROOT / "engine").rglob("*.py"), *(ROOT / "components").glob("*.py"), *(ROOT / "pages").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for pattern in (r"getattr\([^)]*backend", r"inspect\.signature", r"hasattr\([^)]*backend"):
            offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert offenders == []


def test_every_fake_backend_declares_capabilities():
    import fakes

    backends = [v for v in vars(fakes).values() if isinstance(v, type) and hasattr(v, "generate")]
    assert len(backends) >= 6
    assert all(isinstance(b.capabilities, Capabilities) for b in backends), backends
    assert Path(fakes.__file__).name == "fakes.py"
