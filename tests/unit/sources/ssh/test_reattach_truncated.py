"""After a reconnect a handle finds its own file again: not its copy, and not lost to a rotation.

``ReattachingHandle`` finds its file again by the first bytes it saw. When the
file was truncated in place (copytruncate) and refilled, those bytes are its
copy's: the follower then hands the handle to a new stream for the new content,
and after a reconnect the handle reopened the copy, so that stream read the old
content again from its start (260 duplicates in the SSH no-loss test, once).
"""

from __future__ import annotations

from collections.abc import Callable

from acceptmon.sources.ssh.reattach import ReattachingFS
from acceptmon.sources.tail.fs import DirEntry, Handle
from tests.support.fakefs import FakeFS

LOG = "/var/log/app.log"


def _opened(fake: FakeFS) -> tuple[ReattachingFS, Handle]:
    """A log of 50 lines, open through a ``ReattachingFS`` over ``fake``."""
    fake.mkdir("/var/log")
    fs = ReattachingFS()
    fs.bind(fake, lambda: not fake.down)
    fake.append(LOG, *(f"old {i}" for i in range(50)))
    return fs, fs.open(LOG)


def _reconnect(fake: FakeFS, fs: ReattachingFS) -> None:
    fake.generation += 1  # the connection drops: every server-side handle dies
    fs.reconnected()


def test_after_a_truncation_the_handle_follows_its_file_not_the_copy() -> None:
    fake = FakeFS()
    fs, h = _opened(fake)
    assert h.read_at(0, 8) == b"old 0\nol"
    fake.copytruncate(LOG, f"{LOG}.1")
    fake.append(LOG, "new 0", "new 1")
    assert h.size() == 12  # still bound to the truncated file
    assert h.read_at(0, 1024) == b"new 0\nnew 1\n"
    _reconnect(fake, fs)
    fake.append(LOG, "new 2")
    assert h.read_at(0, 1024) == b"new 0\nnew 1\nnew 2\n"


def test_a_handle_reopened_after_a_reconnect_still_prefers_the_content_it_read() -> None:
    fake = FakeFS()
    fs, h = _opened(fake)
    assert h.read_at(0, 1024).startswith(b"old 0\n")
    _reconnect(fake, fs)
    fake.copytruncate(LOG, f"{LOG}.1")  # while the connection was down
    fake.append(LOG, "new 0")
    assert h.read_at(0, 6) == b"old 0\n"  # found in the copy: the content it was reading


class RotatingOnListing(FakeFS):
    """logrotate renames the log right after a listing was taken (``rotate_after_listing``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rotate_after_listing = False

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        found = super().listdir(path, want)
        if self.rotate_after_listing:
            self.rotate_after_listing = False
            self.rename(LOG, f"{LOG}.1")
            self.append(LOG, "new 0")
        return found


def test_a_rotation_between_listing_and_opening_does_not_lose_the_file() -> None:
    fake = RotatingOnListing()
    fs, h = _opened(fake)
    assert h.read_at(0, 6) == b"old 0\n"
    _reconnect(fake, fs)
    fake.rotate_after_listing = True
    assert h.read_at(0, 6) == b"old 0\n"
