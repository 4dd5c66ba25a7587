"""Read a server's SSH identification ourselves, bounded in bytes and time, before paramiko does.

paramiko reads the identification line by appending 128-byte reads to a buffer and
rescanning all of it for a newline, for up to 100 lines: a peer streaming one line
without end (or lines forever before ``SSH-``) kept a core busy and the buffer growing
for the whole connect timeout, on every reconnect. RFC 4253 4.2 allows lines before the
identification and caps the identification at 255 bytes; we allow ``MAX_BANNER_BYTES``
in all, within the connect timeout, then give paramiko a socket that serves the
identification line (and whatever followed it) again before reading on.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

#: Bytes a server may send before its identification line ends (lines before it included).
MAX_BANNER_BYTES = 16 * 1024
#: The error kind (``acceptmon_source_errors_total{kind}``) of a peer that never identifies.
BANNER = "banner"


class Sock(Protocol):
    """A connected socket, or a jump host's channel."""

    def recv(self, n: int, /) -> bytes: ...

    def settimeout(self, value: float | None, /) -> None: ...


class BannerError(Exception):
    """No SSH identification within the bounds (``kind``: banner), or the peer closed first."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def read_identification(sock: Sock, timeout: float, max_bytes: int = MAX_BANNER_BYTES) -> bytes:
    """Everything from the start of the ``SSH-`` line on (that line complete, with what followed it).

    Raises ``BannerError`` after ``max_bytes`` without one, after ``timeout`` seconds, or
    when the peer closes first (``unreachable``, as a refused connection is).
    """
    deadline = time.monotonic() + timeout
    buf = bytearray()
    line = 0  # where the current line starts
    while True:
        end = buf.find(b"\n", line)
        while end >= 0:
            if buf.startswith(b"SSH-", line):
                return bytes(buf[line:])
            line = end + 1
            end = buf.find(b"\n", line)
        if len(buf) >= max_bytes:
            raise BannerError(
                BANNER, f"sent {len(buf)} bytes without an SSH identification line (not an SSH server?)"
            )
        left = deadline - time.monotonic()
        if left <= 0:
            raise BannerError(BANNER, f"sent no SSH identification line within {timeout:g} s")
        sock.settimeout(left)
        try:
            data = sock.recv(min(4096, max_bytes - len(buf)))
        except TimeoutError:
            raise BannerError(BANNER, f"sent no SSH identification line within {timeout:g} s") from None
        if not data:
            raise BannerError("unreachable", "closed the connection before identifying itself")
        buf += data


class Replay:
    """``sock`` with ``head`` (bytes already read from it) served first; everything else passes through."""

    def __init__(self, sock: Any, head: bytes) -> None:
        self._sock = sock
        self._head = head

    def recv(self, n: int) -> bytes:
        if self._head:
            out, self._head = self._head[:n], self._head[n:]
            return out
        return bytes(self._sock.recv(n))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)
