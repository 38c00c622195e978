"""The light install: ``pip install evalduck`` brings what runs evals locally; Dask and the test tools are
extras. Checked on a wheel built from the checkout (its METADATA is what pip resolves), and the dask runner
without the extra is checked through the real CLI with those modules made unimportable."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
NOT_IN_BASE = {"dask", "distributed", "prefect-dask", "playwright", "ipykernel", "hypothesis", "pytest", "duckdb-cli"}


@pytest.fixture(scope="module")
def requires(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Requires-Dist of the built wheel, by extra ('' for the base): project names, normalised."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(CHECKOUT, source, ignore=shutil.ignore_patterns(
        ".venv*", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", "node_modules", ".evalduck"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp.glob("evalduck-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        meta = email.message_from_bytes(zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))))
    by_extra: dict[str, set[str]] = {}
    for req in meta.get_all("Requires-Dist") or []:
        name = re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0].lower().replace("_", "-")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        by_extra.setdefault(extra.group(1) if extra else "", set()).add(name)
    return by_extra


def test_base_install_has_no_dask_and_no_test_tools(requires: dict[str, set[str]]) -> None:
    assert {"prefect", "duckdb", "litellm", "typer", "vl-convert-python", "jinja2"} <= requires[""]
    assert not requires[""] & NOT_IN_BASE


def test_dask_extra_brings_dask_and_dev_brings_it_too(requires: dict[str, set[str]]) -> None:
    assert {"prefect-dask", "distributed"} <= requires["dask"]
    assert "evalduck" in requires["dev"]  # evalduck[dask]: the suite tests the dask runner
    assert {"pytest", "playwright", "ipykernel", "hypothesis"} <= requires["dev"]


BLOCK = '''\
import sys
for _name in ("distributed", "prefect_dask", "dask"):
    sys.modules[_name] = None  # import raises ImportError, as without the extra
'''


def test_dask_runner_without_the_extra_says_so_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCK)
    shutil.copy(CHECKOUT / "datasets" / "demo.jsonl", tmp_path / "demo.jsonl")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "block"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DO_NOT_TRACK": "1"}
    cli = Path(sys.executable).with_name("evalduck")
    done = subprocess.run([str(cli), "run", "demo.jsonl", "--runner", "dask"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'evalduck[dask]'" in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / ".evalduck").exists() and "prefect" not in done.stderr.lower()
