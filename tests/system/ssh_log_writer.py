"""Append numbered Decode lines to a log and rotate it, like an inference server plus logrotate.

Run as a separate process by the SSH system tests:
``python ssh_log_writer.py LOG STOPFILE COUNTFILE RATE ROTATE_EVERY``. It
rotates itself between two writes (alternating rename+create and
copytruncate), so no line is lost by the rotation; whatever the reader
misses is the reader's fault. Older rotations are gzipped (readers must skip them).
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import time

KEEP = 8


def line(n: int) -> bytes:
    return (
        f"[2025-06-01 12:00:00 TP0] Decode batch. #running-req: 8, #token: 4096, token usage: 0.05, "
        f"accept len: 3.21, gen throughput (token/s): 812.50, #queue-req: 0, seq={n}\n"
    ).encode()


def open_log(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def shift(path: str) -> None:
    oldest = f"{path}.{KEEP}"
    if os.path.exists(oldest):
        with open(oldest, "rb") as src, gzip.open(f"{oldest}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(oldest)
    for i in range(KEEP - 1, 0, -1):
        if os.path.exists(f"{path}.{i}"):
            os.replace(f"{path}.{i}", f"{path}.{i + 1}")


def rotate(path: str, fd: int, copytruncate: bool) -> int:
    shift(path)
    if copytruncate:
        shutil.copyfile(path, f"{path}.1")
        os.ftruncate(fd, 0)
        return fd
    os.rename(path, f"{path}.1")
    os.close(fd)
    return open_log(path)


def main(path: str, stop_file: str, count_file: str, rate: float, rotate_every: int) -> None:
    fd = open_log(path)
    n = 0
    due = time.monotonic()
    while not os.path.exists(stop_file):
        n += 1
        os.write(fd, line(n))
        if rotate_every and n % rotate_every == 0:
            fd = rotate(path, fd, copytruncate=(n // rotate_every) % 2 == 0)
        due += 1.0 / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # pacing the writer, not synchronisation
    os.close(fd)
    with open(count_file + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(count_file + ".tmp", count_file)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
