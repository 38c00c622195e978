"""evalduck installed the way a user installs it: a wheel built from a copy of this checkout, `pip install`ed
(not editable) into a fresh venv in a temporary folder outside the checkout (the ``installed`` fixture of
conftest.py, one per test session).

The wheel is installed with ``--no-deps``: its ~150 dependencies (~800 MB) are made importable from the
checkout's own environment by one ``.pth`` line per site-packages folder of this interpreter, and the
console scripts evalduck starts by path (``prefect``, beside ``sys.executable``) get wrappers with the new
venv's interpreter. A ``.pth`` path line adds that folder to ``sys.path`` without processing its own
``.pth`` files, so the checkout's editable evalduck (a finder installed by such a file) is not there; the
fixture checks that ``evalduck`` and both its subpackages import from the venv's site-packages, so what
the tests see is what the wheel holds (modules, SQL, report templates and charts).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
QUIET = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DO_NOT_TRACK": "1"}
# Console scripts of the dependencies that evalduck runs by path, beside its interpreter.
SCRIPTS = ("prefect",)
# Set by the test session or CI, never by a user's shell: a user's run starts the folder's own server.
NOT_A_USERS = ("CI", "EVALDUCK_EPHEMERAL", "PREFECT_API_URL", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
               "EVALDUCK_DB", "EVALDUCK_STATE_DIR", "EVALDUCK_CACHE_DIR", "EVALDUCK_JUDGE_MODEL")


@dataclass(frozen=True)
class Installed:
    """The user's venv: its interpreter and ``evalduck`` script, and where the wheel put the package."""

    venv: Path
    wheel: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def evalduck(self) -> str:
        return str(self.venv / "bin" / "evalduck")

    @property
    def site_packages(self) -> Path:
        return self.venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

    def env(self, prefect_home: Path) -> dict[str, str]:
        """A user's shell with this venv activated and a PREFECT_HOME of the test's own."""
        env = {k: v for k, v in os.environ.items() if k not in NOT_A_USERS}
        env.update(QUIET, VIRTUAL_ENV=str(self.venv), PREFECT_HOME=str(prefect_home),
                   PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
        return env


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


def build_wheel(scratch: Path) -> Path:
    """The wheel of a copy of the checkout (building in the checkout would leave build/ and egg-info there).
    With pip's build isolation: setuptools>=69 (pyproject's build requirement, from pip's cache after the
    first time) is newer than the one venvs come with."""
    source = scratch / "src"

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(shutil.ignore_patterns(".venv*", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                             ".evalduck", ".pytest_cache", ".hypothesis", "reports")(folder, names))
        return skipped | ({"tests", "bench"} & set(names) if Path(folder) == CHECKOUT else set())

    shutil.copytree(CHECKOUT, source, ignore=ignore)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(scratch), str(source)], scratch)
    (wheel,) = scratch.glob("evalduck-*.whl")
    return wheel


def _lend_dependencies(installed: Installed) -> None:
    """The checkout environment's packages, importable in the venv after its own (a ``.pth`` line each), and
    wrappers of the console scripts evalduck starts by path."""
    folders = [p for p in sys.path if p.rstrip("/").endswith("site-packages") and Path(p).is_dir()]
    (installed.site_packages / "_checkout_deps.pth").write_text("".join(f"{p}\n" for p in folders))
    for name in SCRIPTS:
        (entry,) = importlib.metadata.entry_points(group="console_scripts", name=name)
        script = installed.venv / "bin" / name
        script.write_text(f"#!{installed.python}\nimport sys\nfrom {entry.module} import {entry.attr}\n"
                          f"sys.exit({entry.attr}())\n")
        script.chmod(0o755)


WHERE = """\
import json, evalduck, evalduck.flows, evalduck.scorers, importlib.metadata as m
print(json.dumps({"files": [evalduck.__file__, evalduck.flows.__file__, evalduck.scorers.__file__],
                  "dist": str(m.distribution("evalduck").locate_file("evalduck"))}))
"""


def install(root: Path, wheel: Path) -> Installed:
    """``wheel`` `pip install`ed into a fresh venv in ``root``, outside the checkout (~5 s)."""
    assert not root.resolve().is_relative_to(CHECKOUT), f"{root} is inside the checkout {CHECKOUT}"
    installed = Installed(venv=root / "venv", wheel=wheel)
    _run([sys.executable, "-m", "venv", str(installed.venv)], root)
    _run([installed.python, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", str(wheel)], root)
    _lend_dependencies(installed)
    done = _run([installed.python, "-c", WHERE], root, installed.env(root / "prefect-home"))
    seen = json.loads(done.stdout)
    site = installed.site_packages.resolve()
    for path in [*seen["files"], seen["dist"]]:
        assert Path(path).resolve().is_relative_to(site), f"evalduck imported from {path}, not from {site}"
    return installed
