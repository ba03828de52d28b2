"""“Get a judge model” against a local HTTP server standing in for the hub: progress, resume, sha256, disk check."""

import pytest

from engine.llm.model_download import CATALOG, CatalogEntry, DownloadError, download
from fakes import BODY, SHA, hub

ENTRY = CatalogEntry("test", "Test judge", "org/test-GGUF", "test-Q4_K_M.gguf", 0.001, 0.1, "MIT")


def test_downloads_with_progress_and_checks_sha(tmp_path):
    srv, _ = hub()
    seen = []
    try:
        d = download(ENTRY, tmp_path, endpoint=f"http://127.0.0.1:{srv.server_port}",
                     progress=lambda done, total: seen.append((done, total)))
    finally:
        srv.shutdown()
    assert d.sha256 == SHA and d.size_bytes == len(BODY)
    assert open(d.path, "rb").read() == BODY
    assert seen and seen[-1][0] == len(BODY)


def test_wrong_sha_is_refused_and_deleted(tmp_path):
    srv, _ = hub(sha="0" * 64)
    try:
        with pytest.raises(DownloadError, match="does not match"):
            download(ENTRY, tmp_path, endpoint=f"http://127.0.0.1:{srv.server_port}")
    finally:
        srv.shutdown()
    assert not (tmp_path / ENTRY.filename).exists()


def test_too_little_disk_is_refused_before_downloading(tmp_path):
    srv, state = hub()
    try:
        with pytest.raises(DownloadError, match="free"):
            download(ENTRY, tmp_path, endpoint=f"http://127.0.0.1:{srv.server_port}", disk_free=lambda p: 1000)
    finally:
        srv.shutdown()
    assert state["gets"] == 0


def test_interrupted_download_resumes(tmp_path):
    # an earlier run stopped after 300 kB (app closed, network lost): the next press asks only for the rest
    (tmp_path / (ENTRY.filename + ".part")).write_bytes(BODY[:300_000])
    srv, state = hub()
    try:
        d = download(ENTRY, tmp_path, endpoint=f"http://127.0.0.1:{srv.server_port}")
    finally:
        srv.shutdown()
    assert d.sha256 == SHA and open(d.path, "rb").read() == BODY
    assert state["ranges"] == [300_000]


def test_connection_dropped_mid_file_still_completes(tmp_path):
    srv, state = hub(cut_after=300_000)
    try:
        d = download(ENTRY, tmp_path, endpoint=f"http://127.0.0.1:{srv.server_port}")
    finally:
        srv.shutdown()
    assert d.sha256 == SHA and state["gets"] == 2  # the client retried once and the file is whole


def test_unreachable_hub_says_so(tmp_path):
    with pytest.raises(DownloadError, match="cannot reach"):
        download(ENTRY, tmp_path, endpoint="http://127.0.0.1:9")


def test_catalog_is_instruction_tuned_ggufs():
    assert len(CATALOG) >= 4 and all(e.filename.endswith(".gguf") and e.licence for e in CATALOG)
