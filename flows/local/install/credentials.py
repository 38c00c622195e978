"""The credentials of a Prefect server evalduck starts, as a Jupyter server has its token.

Such a server listens on 127.0.0.1, where every local user can reach it, and its worker runs whatever flow run
it is given (a `module:function` target included) as the user who started it. So it gets basic auth
(`PREFECT_SERVER_API_AUTH_STRING`): a random string per folder, kept in a file only this user can read
(``<state dir>/private/prefect-auth``, 0600 in a 0700 folder, both checked), given to every client evalduck
starts as `PREFECT_API_AUTH_STRING`, and pasted once into the UI's login prompt. A server the user names
(PREFECT_API_URL, a profile) keeps its own settings.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx

from evalduck.flows.local.install.state import ServeError

__all__ = (
    "auth_path", "folder_auth", "new_auth", "client_env", "server_env", "client_auth", "authenticates", "login_hint",
)

USER = "evalduck"


def auth_path(state_dir: Path) -> Path:
    """Where the folder keeps its server's basic-auth string (private/, only this user's)."""
    return state_dir / "private" / "prefect-auth"


def new_auth() -> str:
    """A fresh ``user:password`` for basic auth."""
    return f"{USER}:{secrets.token_urlsafe(32)}"


def _check_private(path: Path, kind: int) -> None:
    """Refuse ``path`` unless it is this user's, of ``kind`` (no symlink), and nobody else may read or write it."""
    info = os.lstat(path)
    what = "folder" if kind == stat.S_IFDIR else "file"
    if stat.S_IFMT(info.st_mode) != kind:
        raise ServeError(f"{path} is not a {what} (a symlink?): remove it, and evalduck makes a new one")
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ServeError(f"{path} (mode {stat.S_IMODE(info.st_mode):o}, owner uid {info.st_uid}) could be read or "
                         f"replaced by another user: remove it (`evalduck stop` first), and evalduck makes a new one")


def folder_auth(state_dir: Path, create: bool = True) -> str | None:
    """This folder's auth string, made on first use (``create``); None when there is none and ``create`` is
    false. A file or folder another user could read or replace is refused (ServeError), never used."""
    path = auth_path(state_dir)
    try:
        path.parent.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path.parent, 0o700)
        _check_private(path.parent, stat.S_IFDIR)
        if create:
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "w") as out:
                    out.write(new_auth() + "\n")
        elif not os.path.lexists(path):
            return None
        _check_private(path, stat.S_IFREG)
        auth = path.read_text().strip()
    except OSError as exc:
        raise ServeError(f"cannot keep the local Prefect server's credentials in {path}: {exc}") from exc
    if ":" not in auth:
        raise ServeError(f"{path} holds no `user:password`: remove it (`evalduck stop` first), and evalduck makes a new one")
    return auth


def client_env(auth: str | None) -> dict[str, str]:
    """What a client process (worker, deploy step) needs to talk to the server; nothing for a server the user named."""
    return {"PREFECT_API_AUTH_STRING": auth} if auth else {}


def server_env(auth: str) -> dict[str, str]:
    """The server's side of ``auth``: the variable Prefect's server checks requests against."""
    return {"PREFECT_SERVER_API_AUTH_STRING": auth}


@contextlib.contextmanager
def client_auth(auth: str | None) -> Iterator[None]:
    """Within the block this process's Prefect clients send ``auth`` (nothing changes for None)."""
    if not auth:
        yield
        return
    from prefect.settings import PREFECT_API_AUTH_STRING, temporary_settings

    with temporary_settings(updates={PREFECT_API_AUTH_STRING: auth}):
        yield


def authenticates(api_url: str, auth: str, timeout: float = 2.0) -> bool:
    """True when the server at ``api_url`` refuses a request without credentials and accepts ``auth``: it was
    started with this folder's credentials (the UI checks a login with the same route)."""
    url = f"{api_url.rstrip('/')}/admin/version"
    token = base64.b64encode(auth.encode()).decode()
    try:
        with httpx.Client(timeout=timeout) as client:  # one connection for both requests
            if client.get(url).status_code != 401:
                return False
            return client.get(url, headers={"Authorization": f"Basic {token}"}).status_code == 200
    except httpx.HTTPError:
        return False


def login_hint(state_dir: Path) -> str:
    """How to log in to the UI once (it asks for the string and keeps it in the browser)."""
    path = auth_path(state_dir)
    return f"the UI asks once for the string in {path} (`cat {path}`)"
