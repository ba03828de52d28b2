"""A throw-away local PostgreSQL server, for the test suite, the benchmarks and trying a team workspace on one
machine: ``initdb`` and ``pg_ctl`` from Debian's ``postgresql`` package, in a temporary folder, on a loopback port.

The superuser ``sumcheck`` gets a random password that only a password file (``PGPASSFILE``) holds, so the server
is reached exactly as a hospital's would be: ``postgresql://sumcheck@127.0.0.1:PORT/DATABASE`` with no password in
the address. Run as root, the server runs as the ``postgres`` user (PostgreSQL refuses to run as root).
"""
from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


class PgServerMissing(RuntimeError):
    """PostgreSQL's server programs are not installed."""


def pg_bin(name: str) -> str:
    """The newest installed PostgreSQL program ``name`` (``initdb``, ``pg_ctl``)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    path = found[-1] if found else shutil.which(name)
    if not path:
        raise PgServerMissing(f"PostgreSQL's {name} is not installed; 'make test' installs Debian's postgresql "
                              "package (apt-get install postgresql)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """A started server; :meth:`new_database` makes an empty database, :meth:`stop` removes everything."""

    def __init__(self, fast: bool = True):
        """``fast``: no fsync (a throw-away server; figures from it are not a durable server's)."""
        self.dir = Path(tempfile.mkdtemp(prefix="sumcheck-pg-"))
        self.port = free_port()
        self.password = secrets.token_hex(12)
        self.passfile = self.dir / "pgpass"
        self.passfile.write_text(f"127.0.0.1:{self.port}:*:sumcheck:{self.password}\n")
        self.passfile.chmod(0o600)
        pw = self.dir / "pw"
        pw.write_text(self.password + "\n")
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")
            shutil.chown(pw, "postgres")
        self.data = self.dir / "data"
        subprocess.run([*self.as_user, pg_bin("initdb"), "-D", str(self.data), "-U", "sumcheck", f"--pwfile={pw}",
                        "--auth-host=scram-sha-256", "--auth-local=trust", "--locale=C", "-E", "UTF8"],
                       check=True, capture_output=True)
        pw.unlink()
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir} "
                "-c max_connections=200")
        if fast:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        subprocess.run([*self.as_user, pg_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-l",
                        str(self.dir / "log"), "-w", "start"], check=True, capture_output=True)
        self.n = 0

    def url(self, db: str) -> str:
        return f"postgresql://sumcheck@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A fresh, empty database (C collation); returns its address."""
        import psycopg

        self.n += 1
        name = f"ws{self.n}"
        with psycopg.connect(self.url("postgres"), autocommit=True, passfile=str(self.passfile)) as con:
            con.execute(f"CREATE DATABASE {name} TEMPLATE template0 LOCALE 'C' ENCODING 'UTF8'")
        return self.url(name)

    def stop(self) -> None:
        subprocess.run([*self.as_user, pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
