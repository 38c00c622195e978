"""A real PostgreSQL for the shared-store tests: Debian's server binaries, a cluster in a temp folder, run as a
user process on a free loopback port, stopped by its pid.

PostgreSQL refuses to run as root, so under root (CI containers) the cluster belongs to the `postgres` user
(Debian's package creates it; else `nobody`) and its commands run through `setpriv`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ("postgres_bindir", "require_shared", "postgres_server")


def postgres_bindir() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


def require_shared() -> Path:
    """The PostgreSQL bin folder, after checking this interpreter can use the shared store at all.

    Skipped with the reason outside `make test-shared`; a failure under it (EVALDUCK_REQUIRE_SHARED=1) or CI,
    like EVALDUCK_REQUIRE_BROWSER."""
    required = os.environ.get("EVALDUCK_REQUIRE_SHARED") == "1"
    try:
        import duckdb_extension_ducklake  # noqa: F401
    except ImportError:
        reason = ("the shared store needs duckdb 1.5.5 and its extension wheels: run `make test-shared` "
                  "(.venv-shared, evalduck[shared])")
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    bindir = postgres_bindir()
    if bindir is None:
        reason = "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
        if required or os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return bindir


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _demote() -> list[str]:
    """The command prefix that runs PostgreSQL as an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return []
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return ["setpriv", f"--reuid={name}", f"--regid={pwd.getpwnam(name).pw_gid}", "--clear-groups"]
    raise RuntimeError("running as root and no `postgres` or `nobody` user to run PostgreSQL as")


@contextmanager
def postgres_server(databases: tuple[str, ...] = ("evals",)) -> Iterator[str]:
    """A running server; yields its base URL `postgresql://postgres@127.0.0.1:PORT` (trust auth, loopback).

    Its cluster is a fresh folder under the system temp folder (pytest's are private to root, which the
    server's user could not enter), removed afterwards."""
    bindir = require_shared()
    root = Path(tempfile.mkdtemp(prefix="evalduck-pg-"))
    prefix = _demote()
    if prefix:
        user = prefix[1].split("=", 1)[1]
        os.chown(root, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    data = root / "data"
    _run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
    port = _free_port()
    options = f"-k {root} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    _run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"),
          "-w", "-t", "120", "start"])
    pid = int((data / "postmaster.pid").read_text().split()[0])
    url = f"postgresql://postgres@127.0.0.1:{port}"
    try:
        for name in databases:
            _run(["psql", f"{url}/postgres", "-qc", f"CREATE DATABASE {name}"])
        yield url
    finally:
        os.kill(pid, signal.SIGINT)  # "fast" shutdown: ends the sessions, stops the server
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
