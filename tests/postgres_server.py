"""A real PostgreSQL server for the journal tests: the one CI started, or a throwaway one of our own.

`.ci/run` starts a server and exports ``TINYTOOLS_POSTGRES_DSN``; without it, the tests start one
from the machine's server binaries (Debian's ``postgresql`` package: ``/usr/lib/postgresql/*/bin``)
in a private directory under ``/tmp``, listening on a unix socket only, and stop it at the end of
the session. PostgreSQL refuses to run as root, so under root its tools run as the ``postgres``
user. Each test gets a schema of its own (`schema_dsn`), so tests never see each other's tables.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

DSN_ENV = "TINYTOOLS_POSTGRES_DSN"


def server_binaries() -> str | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, newest version first."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda path: int(Path(path).parent.name) if Path(path).parent.name.isdigit() else 0,
        reverse=True,
    )
    for folder in found:
        if all(os.access(os.path.join(folder, tool), os.X_OK) for tool in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


class ThrowawayServer:
    """initdb, then pg_ctl start, in a fresh directory; a unix socket only, so no port can clash."""

    def __init__(self, binaries: str) -> None:
        self.binaries = binaries
        self.as_root = os.geteuid() == 0
        self.dir = tempfile.mkdtemp(prefix="tt-pg-", dir="/tmp")  # short: socket paths are at most 107 bytes
        if self.as_root:
            owner = pwd.getpwnam("postgres")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.started = False

    def _tool(self, tool: str, *args: str) -> None:
        command = [os.path.join(self.binaries, tool), *args]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, cwd="/", capture_output=True, text=True)
        if done.returncode:
            log = Path(self.log).read_text()[-3000:] if os.path.exists(self.log) else ""
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}{log}")

    def start(self) -> str:
        self._tool("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--no-locale", "-E", "UTF8", "-N")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(
                f"listen_addresses = ''\nunix_socket_directories = '{self.dir}'\n"
                "fsync = off\nfull_page_writes = off\nsynchronous_commit = on\n"
                "client_connection_check_interval = 100ms\nmax_connections = 200\n"
            )
        self._tool("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "start")
        self.started = True
        self._tool("createdb", "-h", self.dir, "-U", "postgres", "tinytools")
        return f"host={self.dir} dbname=tinytools user=postgres"

    def stop(self) -> None:
        if self.started:
            self.started = False
            with contextlib.suppress(RuntimeError):
                self._tool("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def schema_dsn(dsn: str) -> str:
    """A fresh schema on the server of ``dsn``, as a DSN whose tables land in it."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{dsn} options='-csearch_path={schema}'"
