"""Judge model files: the embedded GGUF assembles and passes the checks; bad paths give clear messages."""
import pytest

from engine.modelfiles import ModelError, describe_model, resolve_model_path


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
