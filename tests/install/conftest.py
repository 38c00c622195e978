"""The session's user install of evalduck (user_install.py): its wheel built once, installed once."""

from __future__ import annotations

from pathlib import Path

import pytest
from user_install import Installed, build_wheel, install


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of this checkout, built once for the session's installs."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """An evalduck `pip install`ed from that wheel, not editable, into a fresh venv outside the checkout."""
    return install(tmp_path_factory.mktemp("user-install"), wheel)
