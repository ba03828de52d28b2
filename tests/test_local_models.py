"""GGUF models that Ollama and LM Studio keep on disk are found, with size and quantization read from the header."""
import json

from engine.llm.local_models import discover, read_gguf_metadata
from engine.llm.modelfiles import embedded_model_path
from fakes import tiny_gguf


def test_reads_the_embedded_models_header():
    meta = read_gguf_metadata(embedded_model_path())
    assert meta["general.architecture"].startswith("gemma3") and meta["general.file_type"] == 15  # Q4_K_M


def test_finds_ollama_blobs_through_manifests(tmp_path):
    root = tmp_path / "ollama"
    blob = root / "blobs" / "sha256-abc123"
    blob.parent.mkdir(parents=True)
    blob.symlink_to(embedded_model_path())  # a real GGUF, as `ollama pull` leaves it
    tiny_gguf(root / "blobs" / "sha256-def456", arch="llama", file_type=7)
    man = root / "manifests" / "registry.ollama.ai" / "library" / "gemma3" / "270m"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"layers": [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:zzz"},
        {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:abc123"}]}))
    other = root / "manifests" / "registry.ollama.ai" / "someone" / "llama-judge" / "latest"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                             "digest": "sha256:def456"}]}))
    (root / "manifests" / "registry.ollama.ai" / "library" / "broken").mkdir()
    (root / "manifests" / "registry.ollama.ai" / "library" / "broken" / "x").write_text("{not json")
    found = {m.name: m for m in discover(ollama=[root], lmstudio=[])}
    assert set(found) == {"gemma3:270m", "someone/llama-judge:latest"}
    g = found["gemma3:270m"]
    assert g.source == "Ollama" and g.quantization == "Q4_K_M" and g.architecture.startswith("gemma3")
    assert g.size_bytes > 100e6 and g.path.endswith("sha256-abc123")
    assert found["someone/llama-judge:latest"].quantization == "Q8_0"


def test_finds_lmstudio_files_and_skips_projectors_and_non_gguf(tmp_path):
    root = tmp_path / "lms"
    tiny_gguf(root / "lmstudio-community" / "Llama-3.1-8B-GGUF" / "Llama-3.1-8B-Instruct-Q4_K_M.gguf")
    tiny_gguf(root / "x" / "y" / "mmproj-model-f16.gguf")
    (root / "x" / "y" / "fake.gguf").write_bytes(b"not a gguf at all")
    found = discover(ollama=[], lmstudio=[root])
    assert [m.name for m in found] == ["lmstudio-community/Llama-3.1-8B-GGUF/Llama-3.1-8B-Instruct-Q4_K_M.gguf"]
    assert found[0].quantization == "Q4_K_M" and found[0].context_length == 131072 and "LM Studio" in found[0].label


def test_nothing_installed_is_an_empty_list(tmp_path):
    assert discover(ollama=[tmp_path / "none"], lmstudio=[tmp_path / "none"]) == []
