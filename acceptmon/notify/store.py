"""Pending messages on disk, one file each, so a crash loses none of them.

One file per message makes every state change a single atomic step: a new
message is a rename into place, a retry is a rename over it, a delivery is an
unlink. Each is followed by an fsync of the directory so it survives power
loss, not just a process kill. The directory never holds a webhook URL.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from acceptmon.statefiles import fsync_dir, private_subdir, read_private, remove_leftovers, write_private
from acceptmon.statefiles.strict import check

log = logging.getLogger("acceptmon.notify")

_PREFIX, _SUFFIX = "m-", ".json"
_LEDGER = "dedupe.json"


@dataclass(frozen=True, slots=True)
class Message:
    """A rendered payload waiting for delivery; times are wall-clock epoch seconds."""

    seq: int
    delivery_id: str
    key: str
    state: str
    body: dict[str, Any]
    enqueued_at: float
    attempts: int = 0
    next_at: float = 0.0


class MessageStore:
    def __init__(self, directory: Path) -> None:
        # Every level 0700 (``notify/`` used to be 0755), ours, and never a symlink.
        top = directory.parent.parent
        top.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.dir = private_subdir(top, directory.parent.name, directory.name)

    def load(self) -> tuple[list[Message], int]:
        """Pending messages by sequence, and how many files were unreadable.

        Unreadable files are renamed to ``*.corrupt`` so they are reported once
        and kept for inspection rather than retried forever.
        """
        messages, bad = [], 0
        for path in sorted(self.dir.glob(f"{_PREFIX}*{_SUFFIX}")):
            try:
                messages.append(check(Message(**json.loads(read_private(path).decode("utf-8")))))
            except (OSError, ValueError, TypeError):
                bad += 1
                self._quarantine(path)
        remove_leftovers(self.dir)
        return sorted(messages, key=lambda m: m.seq), bad

    def put(self, message: Message) -> None:
        self._write(self._path(message.seq), json.dumps(asdict(message), ensure_ascii=False))

    def remove(self, seq: int) -> None:
        self._path(seq).unlink(missing_ok=True)
        fsync_dir(self.dir)

    def load_ledger(self) -> dict[str, Any]:
        path = self.dir / _LEDGER
        try:
            data = json.loads(read_private(path).decode("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.warning("notify: dedupe state %s unreadable; starting afresh", path)
            return {}
        return data if isinstance(data, dict) else {}

    def save_ledger(self, data: dict[str, Any]) -> None:
        self._write(self.dir / _LEDGER, json.dumps(data, ensure_ascii=False))

    def _path(self, seq: int) -> Path:
        return self.dir / f"{_PREFIX}{seq:012d}{_SUFFIX}"

    def _write(self, path: Path, text: str) -> None:
        write_private(path, text.encode("utf-8"))

    def _quarantine(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.rename(path.with_suffix(".corrupt"))
