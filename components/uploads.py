"""Private, short-lived copies of uploaded files (the loader reads paths; uploads are PHI).

Every copy lives in its own ``sumcheck-upload-<pid>-*`` folder in the system temp folder, created 0700 with
files 0600, and is removed as soon as the script run that made it has validated / imported it (success or
failure), at interpreter exit, and, for folders a killed server left behind, by :func:`sweep_stale` at start.
No Streamlit here: the Data page calls :func:`private_copies` around one script run.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Optional

from engine.core import pid_alive

PREFIX = "sumcheck-upload-"

_live: set[str] = set()
_lock = threading.Lock()
_swept = False


def _safe_name(name: str) -> str:
    base = Path(str(name).replace("\\", "/")).name
    return base if base not in ("", ".", "..") else "upload"


def write_private(files: Iterable[tuple[str, bytes]], tmp_root: Optional[str] = None) -> tuple[Path, list[str]]:
    """Copy (name, bytes) pairs into a new private folder; returns the folder and the file paths (in order)."""
    with _lock:  # a sweep in another session's thread never sees it unregistered
        folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=tmp_root))  # mkdtemp: mode 0700
        _live.add(str(folder))
    try:
        os.chmod(folder, 0o700)
        paths: list[str] = []
        for name, data in files:
            target = folder / _safe_name(name)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(target, 0o600)
            paths.append(str(target))
    except BaseException:
        remove(folder)
        raise
    return folder, paths


def remove(folder: Path | str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    with _lock:
        _live.discard(str(folder))


@contextmanager
def private_copies(files: Iterable[tuple[str, bytes]], tmp_root: Optional[str] = None) -> Iterator[list[str]]:
    """Paths of private copies of ``files``, deleted when the block ends (normally, by an error, or by
    Streamlit's stop / rerun)."""
    folder, paths = write_private(files, tmp_root)
    try:
        yield paths
    finally:
        remove(folder)


def sweep_stale(tmp_root: Optional[str] = None) -> list[str]:
    """Remove ``sumcheck-upload-*`` folders owned by this user that no running process of ours holds: those of
    dead processes (a killed server) and those of older versions (no pid in the name). Returns what went."""
    root = Path(tmp_root or tempfile.gettempdir())
    gone = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return gone
    for p in entries:
        if not p.name.startswith(PREFIX):
            continue
        try:
            st = p.lstat()
        except OSError:
            continue
        if not p.is_dir() or p.is_symlink() or st.st_uid != os.getuid():
            continue
        rest = p.name[len(PREFIX):]
        pid_part = rest.split("-", 1)[0]
        with _lock:
            if pid_part.isdigit() and "-" in rest and pid_alive(int(pid_part)):
                if int(pid_part) != os.getpid() or str(p) in _live:
                    continue  # another live process's, or one of ours in use
            shutil.rmtree(p, ignore_errors=True)
        gone.append(str(p))
    return gone


def sweep_once() -> None:
    """:func:`sweep_stale` once per process (the app calls it on every run; only the first does anything)."""
    global _swept
    with _lock:
        if _swept:
            return
        _swept = True
    sweep_stale()


@atexit.register
def _remove_all() -> None:
    with _lock:
        live = list(_live)
    for folder in live:
        shutil.rmtree(folder, ignore_errors=True)
