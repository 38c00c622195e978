"""The one import name: evalduck is ``evalduck`` and nothing else at the top level, so a project with
``flows/`` and ``scorers/`` packages of its own (common in Prefect projects) keeps them. Run in a subprocess
from a folder outside this checkout, as a user's script runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def test_user_packages_named_flows_and_scorers_stay_theirs(tmp_path: Path) -> None:
    for name in ("flows", "scorers"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"MINE = {name!r}\n")
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent("""\
        import json, sys
        import evalduck.scorers
        pure = "prefect" not in sys.modules
        from evalduck import create_tone_scorer, run_evals, RunOptions
        import flows, scorers
        score = create_tone_scorer().run(input="Great!", output="Great!").score
        print(json.dumps({"pure": pure, "flows": flows.MINE, "scorers": scorers.MINE, "score": score,
                          "run_evals": run_evals.__module__, "options": RunOptions.__module__}))
    """))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"pure": True, "flows": "flows", "scorers": "scorers", "score": 1.0,
                    "run_evals": "evalduck.flows.eval_flow", "options": "evalduck.flows.config"}


def test_nothing_but_evalduck_at_the_top_level() -> None:
    """The installed distribution's top-level names (from its metadata's file list)."""
    code = ("import importlib.metadata as m, json; files = m.distribution('evalduck').files or []; "
            "print(json.dumps(sorted({f.parts[0] for f in files if not f.parts[0].endswith(('.dist-info', '.pth'))"
            " and not f.parts[0].startswith(('__editable__', '__pycache__'))})))")
    done = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # An editable install lists only its finder and its __pycache__; a wheel lists evalduck/ and bin/.
    assert set(json.loads(done.stdout)) <= {"evalduck", "..", "bin"}


def test_every_package_folder_is_installed(tmp_path: Path) -> None:
    """A wheel built from the checkout holds every package folder under evalduck/, with its data files."""
    source = tmp_path / "src"  # a copy: building in the checkout would leave a build/ folder there
    top_only = {"tests", "bench", "docs", "datasets"}  # flows/inputs/datasets/ is a package: skip these at the top only

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(shutil.ignore_patterns(".venv*", ".git", "build", "*.egg-info", "__pycache__", ".evalduck")(folder, names))
        return skipped | (top_only & set(names) if Path(folder) == CHECKOUT else set())

    shutil.copytree(CHECKOUT, source, ignore=ignore)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("evalduck-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"evalduck"}
    for folder in ("flows", "scorers"):
        for init in (CHECKOUT / folder).rglob("__init__.py"):
            rel = init.relative_to(CHECKOUT).as_posix()
            assert f"evalduck/{rel}" in names, rel
    assert "evalduck/flows/store/macros.sql" in names and "evalduck/flows/report/html/templates/report.html.j2" in names


def test_nothing_in_the_checkout_imports_the_old_names() -> None:
    """Code, strings and docs say ``evalduck.flows`` / ``evalduck.scorers``: a bare ``from flows import`` in a
    script a test writes still works when it runs in the checkout's root (its folders are on sys.path there),
    and fails in a user's folder, so it must not appear anywhere (this file's own check above excepted)."""
    import re

    old = re.compile(r"(?<![\w.])(?:from\s+(?:flows|scorers)(?:\.\w+)*\s+import\b|import\s+(?:flows|scorers)\b(?!\.\w))")
    found = []
    for path in sorted(CHECKOUT.rglob("*")):
        rel = path.relative_to(CHECKOUT)
        if (rel.parts[0].startswith((".venv", ".git", "build")) or path.suffix not in {".py", ".md", ".yaml", ".toml", ".ipynb"}
                or path == Path(__file__).resolve()):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if old.search(line) and "from evalduck import" not in line:
                found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
