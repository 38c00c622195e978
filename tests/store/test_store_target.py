"""`--db` as a file path or a shared store's URL, and the error a process without the shared extra gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.flows.store.target import parse_target


def test_a_path_is_a_file_and_a_ducklake_url_a_catalog_with_its_data_path(tmp_path: Path) -> None:
    assert parse_target(tmp_path / "e.duckdb").path == tmp_path / "e.duckdb"
    lake = parse_target("ducklake:postgres://ev:s3cret@db.internal:5432/evals?data_path=/mnt/evals/&sslmode=require")
    assert lake.shared and lake.path is None
    assert lake.catalog == "postgres:postgresql://ev:s3cret@db.internal:5432/evals?sslmode=require"
    assert lake.data_path == "/mnt/evals/"
    assert "s3cret" not in lake.label and "ev:***@db.internal" in lake.label
    keywords = parse_target("ducklake:postgres:dbname=evals host=db password=pw")
    assert keywords.catalog == "postgres:dbname=evals host=db password=pw" and keywords.data_path is None
    assert "pw" not in keywords.label.replace("password", "")


def test_a_ducklake_url_without_a_postgres_catalog_is_refused_with_the_form_to_use() -> None:
    with pytest.raises(ValueError, match=r"ducklake:postgres://USER@HOST:PORT/DBNAME\?data_path=FOLDER"):
        parse_target("ducklake:sqlite:meta.db")


def test_the_cli_without_the_shared_extra_says_what_to_install(tmp_path: Path) -> None:
    """Run as a user does: `evalduck runs --db ducklake:...` in a process whose duckdb has no extensions."""
    try:
        import duckdb_extension_ducklake  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("this environment has the shared extra (.venv-shared)")
    cli = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(cli), "--db", "ducklake:postgres://u@127.0.0.1:9/evals?data_path=/tmp/x/", "runs"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "evalduck[shared]" in done.stdout + done.stderr, done.stdout + done.stderr
