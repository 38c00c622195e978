"""The folder server's credentials (flows/local/install/credentials.py): made once, readable by this user only, and
refused, never used, where another user could read or replace them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalduck.flows.local.install import ServeError, auth_path, folder_auth


def test_made_once_for_this_user_only(tmp_path: Path) -> None:
    assert folder_auth(tmp_path, create=False) is None
    auth = folder_auth(tmp_path)
    assert auth is not None and auth.startswith("evalduck:") and len(auth.split(":", 1)[1]) >= 40
    assert folder_auth(tmp_path) == auth == folder_auth(tmp_path, create=False)
    path = auth_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert folder_auth(tmp_path / "other") != auth  # one per folder


@pytest.mark.parametrize("loosen", ["folder", "file", "symlink"])
def test_credentials_others_could_reach_are_refused(tmp_path: Path, loosen: str) -> None:
    folder_auth(tmp_path)
    path = auth_path(tmp_path)
    if loosen == "folder":
        path.parent.chmod(0o755)
    elif loosen == "file":
        path.chmod(0o644)
    else:
        (tmp_path / "elsewhere").write_text("evalduck:known\n")
        path.unlink()
        os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(ServeError, match=str(path.parent if loosen == "folder" else path)):
        folder_auth(tmp_path)
