"""A request head as the reactor parses it, and the credentials of a Basic ``Authorization``."""

from __future__ import annotations

import base64
import http.client
import io
from dataclasses import dataclass
from email.message import Message
from typing import Literal
from urllib.parse import parse_qs

#: ok (verified, or not needed), verify (needs a bcrypt check), denied (401), throttled (429)
Auth = Literal["ok", "verify", "denied", "throttled"]


@dataclass(slots=True)
class Request:
    """A parsed request head and what the reactor decided about its credentials."""

    method: str = ""
    target: str = ""
    version: str = ""
    headers: Message | None = None  # None: a malformed head, answered 400
    auth: Auth = "denied"  # until the reactor's classification says otherwise
    credentials: tuple[str, str] = ("", "")

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0].rstrip("/") or "/"

    @property
    def query(self) -> dict[str, list[str]]:
        """The query string's parameters (``?source=a&source=b``), decoded."""
        return parse_qs(self.target.partition("?")[2])


def parse(head: bytes) -> Request:
    line, _, fields = head.partition(b"\r\n")
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        return Request()
    try:
        headers = http.client.parse_headers(io.BytesIO(fields + b"\r\n\r\n"))
    except http.client.HTTPException:
        return Request()
    return Request(parts[0], parts[1], parts[2], headers)


def credentials(headers: Message) -> tuple[str, str] | None:
    """``(user, password)`` from a Basic ``Authorization`` header, None if absent or malformed
    (non-ASCII or non-UTF-8 bytes included: a 401, never a dropped connection)."""
    scheme, _, token = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except ValueError:  # binascii.Error, UnicodeDecodeError, non-ASCII str
        return None
    return (user, password) if sep else None
