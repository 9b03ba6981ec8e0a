"""``advisor dashboard`` really serves the app: the console command started as a process on a
free port answers Streamlit's health check and the app's page, until it is stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import duckdb
import pytest

from advisor import ratios
from tests.test_app_data import make_db

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_advisor_dashboard_serves_the_app_on_the_port_given(tmp_path):
    import httpx

    db = make_db(tmp_path / "d.duckdb", "gpu")
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert not ratios.cube_is_fresh(con)  # made without a refresh
    finally:
        con.close()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "ADVISOR_DB"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "advisor",
            "dashboard",
            "--db",
            str(db),
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).text
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert health == "ok", proc.stdout.read() if proc.poll() is not None else "no answer"
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert page.status_code == 200 and "<html" in page.text.lower()
        # the launcher rebuilt the stale summary tables in the file before serving
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert ratios.cube_is_fresh(con) and ratios.people_months_are_fresh(con)
        finally:
            con.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
