"""The session's user install of evalduck (user_install.py): built and installed once, for every test here."""

from __future__ import annotations

import pytest
from user_install import Installed, install


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """evalduck `pip install`ed from its wheel into a fresh venv outside the checkout (~10 s)."""
    return install(tmp_path_factory.mktemp("user-install"))
