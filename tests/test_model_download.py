"""“Get a judge model” against a local HTTP server standing in for the hub: progress, resume, sha256, disk check."""
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.model_download import CATALOG, CatalogEntry, DownloadError, download

BODY = b"GGUF" + bytes(range(256)) * 4000  # ~1 MB "model"
SHA = hashlib.sha256(BODY).hexdigest()
ENTRY = CatalogEntry("test", "Test judge", "org/test-GGUF", "test-Q4_K_M.gguf", 0.001, 0.1, "MIT")


def hub(body=BODY, sha=SHA, cut_after=None):
    """Answers HEAD/GET /{repo}/resolve/{rev}/{file} like the hub does for an LFS file (Range supported)."""
    state = {"gets": 0, "ranges": []}

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _headers(self, length, status=200, extra=()):
            self.send_response(status)
            self.send_header("X-Repo-Commit", "a" * 40)
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(length))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()

        def do_HEAD(self):
            if "/resolve/" not in self.path:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._headers(len(body))

        def do_GET(self):
            state["gets"] += 1
            start = 0
            rng = self.headers.get("Range")
            if rng:
                start = int(rng.split("=")[1].split("-")[0])
                state["ranges"].append(start)
            data = body[start:]
            if cut_after is not None and state["gets"] == 1:
                self._headers(len(data), 206 if rng else 200)
                self.wfile.write(data[:cut_after])  # the connection drops mid-file
                self.wfile.flush()
                self.close_connection = True
                return
            self._headers(len(data), 206 if rng else 200,
                          [("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")] if rng else [])
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state


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
