"""Whether a process of this machine is still running, for work and files that name the process that owns them."""
from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True while process ``pid`` runs (this process always does); a process that has ended but was not yet
    collected by its parent (a zombie, on Linux) counts as gone. A process of another user counts as running."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
