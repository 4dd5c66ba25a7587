"""An inference server's logger for the torture test: numbered Decode lines at a steady rate.

``python torture_writer.py LOG RATE`` appends SGLang startup lines, then
Decode lines carrying ``#seq: N`` (an extra integer field the parser keeps),
in small batches paced to RATE lines/s, until SIGTERM; then it prints how
many Decode lines it wrote and exits 0. Like Python's WatchedFileHandler it
reopens LOG when another file appears at the path (logrotate ``create``);
under ``copytruncate`` it keeps its ``O_APPEND`` descriptor. Each batch is
one ``write`` of whole lines, so a file never ends mid-line once the write
returns.

Accept len and ``#running-req`` vary with the sequence number, so the
agent's histogram and verify-round totals fingerprint exactly which lines it
counted, not just how many.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import datetime, timedelta
from types import FrameType

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from acceptmon.testing import synth

#: Accept lens chosen on histogram bounds and exact in binary, so sums compare exactly.
ACCEPT_LENS = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0)
BATCH_SECONDS = 0.005


def accept_len(seq: int) -> float:
    return ACCEPT_LENS[seq % len(ACCEPT_LENS)]


def running(seq: int) -> int:
    return 1 + seq % 47


def decode(seq: int, ts: datetime) -> str:
    return f"{synth.decode_line(ts, accept_len(seq), running(seq))}, #seq: {seq}\n"


def open_log(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def reopen_if_rotated(path: str, fd: int) -> int:
    """Follow a new file at the path; while the path is missing keep the old one (logrotate creates it)."""
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return fd
    mine = os.fstat(fd)
    if (at_path.st_dev, at_path.st_ino) == (mine.st_dev, mine.st_ino):
        return fd
    os.close(fd)
    return open_log(path)


def main(path: str, rate: float) -> int:
    stop = False

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    start = datetime.now().replace(microsecond=0)
    fd = open_log(path)
    os.write(fd, "".join(f"{line}\n" for line in synth.startup(start - timedelta(minutes=1), 1)).encode())
    seq = 0
    began = time.monotonic()
    while not stop:
        due = int((time.monotonic() - began) * rate)
        if due > seq:
            fd = reopen_if_rotated(path, fd)
            ts = datetime.now().replace(microsecond=0)
            os.write(fd, "".join(decode(n, ts) for n in range(seq, due)).encode())
            seq = due
        time.sleep(BATCH_SECONDS)  # pacing the workload, not synchronisation
    os.close(fd)
    print(seq, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
