"""TSDB blocks made by promtool beside the reading, one OpenMetrics part after another.

``promtool tsdb create-blocks-from openmetrics`` reads its whole file once per block range,
and ran only after every log was read: a third of backfill's extra time on a day of logs.
History is written in parts instead (``parts.Parts``), and each finished part is turned into
blocks by one promtool child at a time while the logs are read on: the reading takes one
core, promtool the machine's next one (``GOMAXPROCS=1`` while the reading goes on, so that
it does not take the reader's too; after it, all it can). Niced while the logs are read:
the reading's scout (``ingest/scout.py``) takes that next core too, and promtool beside both
slowed the reading; niced, it takes what they leave (on a machine busy with other work, more
of it waits for the end: measured on the bench log, backfill took 1.4% less time, 5 rounds
of 6). The first failure is kept, and no promtool starts
after it; ``stop`` kills the one running (an error or Ctrl-C leaves no child behind).
"""

from __future__ import annotations

import os
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from acceptmon.children import BESIDE_NICE
from acceptmon.text.printable import printable

#: The longest TSDB block written (promtool's default is 2 h; it rounds this down to 18 h).
BLOCK = "24h"


@contextmanager
def beside(
    promtool: str | None, out: Path, shown: Callable[[int, int], None] | None = None
) -> Iterator[Blocks | None]:
    """Blocks made into ``out`` beside the reading (None without promtool); on leaving, no
    promtool is left running, whatever ended the reading."""
    if promtool is None:
        yield None
        return
    blocks = Blocks(promtool, out, shown)
    try:
        yield blocks
    finally:
        blocks.stop()


class Blocks:
    """promtool on each part handed over (``add``), in order, in a child process."""

    def __init__(self, promtool: str, out: Path, shown: Callable[[int, int], None] | None = None) -> None:
        """``shown``: told (parts done, parts handed over) as they change (the progress bar)."""
        self._promtool, self._out, self._shown = promtool, out, shown
        self._todo: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._stopped = False
        #: Whether the logs are still being read (promtool then gets one core).
        self.reading = True
        #: Why some blocks were not written (the first failure), or None.
        self.problem: str | None = None
        self.added = self.done = 0
        # Started with the first part: until then this process has no other thread, so
        # the reading can fork its scout (``ingest/scout.py``; forking beside a thread is unsafe).
        self._thread = threading.Thread(target=self._work, name="promtool", daemon=True)

    def add(self, part: Path) -> None:
        self.added += 1
        self._show()
        self._todo.put(part)
        if self._thread.ident is None:
            self._thread.start()

    def finish(self) -> str | None:
        """Wait for every part handed over; why some blocks were not written, or None."""
        self.reading = False
        self._end()
        return self.problem

    def stop(self) -> None:
        """Start no more promtool, and end the one running (an error or Ctrl-C)."""
        with self._lock:
            self._stopped = True
            if self._child is not None:
                self._child.kill()
        self._end()

    def _end(self) -> None:
        """The worker told to end after the parts handed over, and waited for (if started)."""
        self._todo.put(None)
        if self._thread.ident is not None:
            self._thread.join()

    def _work(self) -> None:
        while (part := self._todo.get()) is not None:
            if self.problem is None and not self._stopped:
                self.problem = self._run(part)
            self.done += 1
            self._show()

    def _run(self, part: Path) -> str | None:
        cmd = [
            self._promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            # Not listing the blocks: that opens every block in the directory, each part's more
            # (promtool ≥ 2.28; --max-block-duration wants 2.29 anyway).
            "--quiet",
            # Day-long blocks: fewer blocks to write, and for Prometheus to compact later.
            f"--max-block-duration={BLOCK}",
            str(part),
            str(self._out),
        ]
        with tempfile.TemporaryFile() as said:  # a file, not a pipe: nothing to drain meanwhile
            with self._lock:
                if self._stopped:  # nothing more is wanted
                    return None
                try:
                    self._out.mkdir(parents=True, exist_ok=True)
                    reading = self.reading  # then one core: the reader has the other
                    child = self._child = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=said,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, "GOMAXPROCS": "1"} if reading else None,
                    )
                except OSError as exc:
                    return f"cannot run promtool: {exc.strerror or exc}"
                if reading:  # the reading (and its scout) first: promtool takes what they leave
                    with suppress(OSError):
                        os.setpriority(os.PRIO_PROCESS, child.pid, BESIDE_NICE)
            status = child.wait()
            with self._lock:
                self._child = None
            if status == 0:
                return None
            said.seek(0)
            last = said.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            return f"promtool failed on {part.name}: {printable(last[0] if last else f'exit {status}')}"

    def _show(self) -> None:
        if self._shown is not None:
            self._shown(self.done, self.added)
