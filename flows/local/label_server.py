"""The server behind `evalduck label RUN -s SCORER`: the labelling page (flows/report/label_page.py) and its two
calls on 127.0.0.1, each label stored in the results file the moment it is given. Like a Jupyter server, its
address carries a random token that every call must show, so another local user's process or a web page in the
same browser cannot read the cells or write labels."""

from __future__ import annotations

import hmac
import json
import secrets
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from evalduck.flows.report.label_page import PAGE
from evalduck.flows.store import Store
from evalduck.flows.store.labels import cells_to_label, forget_label, save_label
from evalduck.flows.store.queries import json_value

__all__ = ("LabelServer",)

_MAX_BODY = 64 * 1024


class LabelServer(ThreadingHTTPServer):
    """One run's cells of one scorer, labelled on ``scale``; ``url`` is the address to open (with its token)."""

    daemon_threads = True

    def __init__(self, store: Store, run_id: str, scorer_id: str, scale: list[float], labeller: str | None,
                 port: int = 0) -> None:
        self.store, self.run_id, self.scorer_id, self.scale, self.labeller = store, run_id, scorer_id, scale, labeller
        self.token = secrets.token_urlsafe(24)
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/?token={self.token}"

    def cells(self) -> dict[str, Any]:
        return {"run": self.run_id, "scorer": self.scorer_id, "scale": self.scale,
                "cells": [{**c, **{k: json_value(c[k]) for k in ("input", "output", "ground_truth")}}
                          for c in cells_to_label(self.store, self.run_id, self.scorer_id)]}

    def label(self, body: dict[str, Any]) -> None:
        """Store (or, with value null, clear) one cell's label; ValueError for a cell or value it does not take."""
        item_id, value = body.get("item_id"), body.get("value")
        if not isinstance(item_id, str) or not any(c["item_id"] == item_id for c in self.cells()["cells"]):
            raise ValueError(f"no scored cell of item {item_id!r} in this run")
        if value is None:
            forget_label(self.store, self.run_id, item_id, self.scorer_id)
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) not in self.scale:
            raise ValueError(f"a label is one of {self.scale}, got {value!r}")
        save_label(self.store, self.run_id, item_id, self.scorer_id, float(value), self.labeller)



class _Handler(BaseHTTPRequestHandler):
    server: LabelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the terminal shows the address
        pass

    def _allowed(self) -> bool:
        given = parse_qs(urlsplit(self.path).query).get("token", [""])[0]
        if hmac.compare_digest(given, self.server.token):
            return True
        self._send(HTTPStatus.FORBIDDEN, "text/plain", b"wrong or missing token: open the address evalduck printed")
        return False

    def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; "
                                                    "style-src 'unsafe-inline'")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._allowed():
            return
        route = urlsplit(self.path).path
        if route == "/":
            self._send(HTTPStatus.OK, "text/html", PAGE.encode())
        elif route == "/api/cells":
            self._send(HTTPStatus.OK, "application/json", json.dumps(self.server.cells(), default=str).encode())
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if not self._allowed():
            return
        if urlsplit(self.path).path != "/api/label":
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                raise ValueError("body too large")
            self.server.label(json.loads(self.rfile.read(length) or b"{}"))
        except (ValueError, json.JSONDecodeError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, "text/plain", str(exc).encode())
            return
        self._send(HTTPStatus.OK, "application/json", b'{"ok": true}')
