"""The one rule for naive log timestamps: wall time + the source's zone → aware time.

SGLang and vLLM print local wall-clock time without a zone. Reading it as UTC
puts every timestamp off by the host's offset, so each source has a zone (its
``timezone`` key, else the host's) and every parsed time is made aware here.

DST: a wall time that never happened (the spring-forward gap) is read with the
offset in force before the gap, i.e. moved forward by the gap's length; a wall
time that happened twice (the autumn fold) is the first occurrence, unless the
source's previous timestamp is already later than that, in which case the log
has moved on into the second occurrence. Both choices depend only on the lines.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LOCALTIME = "/etc/localtime"

log = logging.getLogger("acceptmon.time")


def zone(name: str) -> ZoneInfo:
    """An IANA zone by name; ``ValueError`` with a plain message if there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, IsADirectoryError) as exc:
        raise ValueError(f"unknown time zone {name!r} (expected an IANA name such as Europe/Berlin)") from exc


def zone_from_bytes(data: bytes, key: str | None = None) -> ZoneInfo:
    """A zone from TZif bytes (e.g. a remote host's /etc/localtime); ``ValueError`` if invalid."""

    try:
        return ZoneInfo.from_file(io.BytesIO(data), key=key)
    except (ValueError, OSError) as exc:
        raise ValueError("not a TZif time zone file") from exc


def zone_key_of_link(target: str) -> str | None:
    """``/usr/share/zoneinfo/Europe/Berlin`` → ``Europe/Berlin`` (a symlink target's zone name)."""
    marker = "zoneinfo/"
    at = target.rfind(marker)
    return target[at + len(marker) :] if at >= 0 else None


def host_zone() -> tzinfo:
    """This host's zone: ``TZ`` if it names a zone, else /etc/localtime, else UTC.

    A named zone rather than ``datetime.now().astimezone().tzinfo`` (a fixed
    offset), so that times across a DST change keep the right offset.
    """
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        try:
            return zone(tz) if not tz.startswith("/") else ZoneInfo.from_file(Path(tz).open("rb"))
        except (ValueError, OSError):
            pass
    try:
        key = zone_key_of_link(os.readlink(LOCALTIME))
        if key:
            return zone(key)
    except (OSError, ValueError):
        pass
    try:
        return zone_from_bytes(Path(LOCALTIME).read_bytes())
    except (OSError, ValueError):
        return UTC


def source_zone(name: str | None, remote: Callable[[str], bytes | None] | None = None) -> tzinfo:
    """A source's zone: its ``timezone`` key; else the remote host's /etc/localtime
    (``remote`` reads a file over the source's connection); else this host's.

    A remote host whose zone cannot be read is taken as UTC, with one WARNING.
    """
    if name:
        return zone(name)
    if remote is None:
        return host_zone()
    try:
        data = remote(LOCALTIME)
        if data:
            return zone_from_bytes(data, key=f"the remote {LOCALTIME}")
    except (OSError, ValueError):
        pass
    log.warning("cannot read the remote %s; reading its log times as UTC (set 'timezone:')", LOCALTIME)
    return UTC


def zone_name(tz: tzinfo) -> str:
    """A zone's name for messages and the API (``UTC``, ``Europe/Berlin``)."""
    key = getattr(tz, "key", None)
    return str(key) if key else str(datetime.now(tz).tzname() or tz)


#: Lines of several ranks may be out of order by this much without implying the fold's second pass.
_REORDER = 600.0


class LocalTime:
    """Turns one source's naive wall times into aware times, in line order."""

    __slots__ = ("_last", "zone")

    def __init__(self, tz: tzinfo = UTC) -> None:
        self.zone = tz
        self._last: float | None = None

    def aware(self, wall: datetime) -> datetime:
        """The aware time of a naive wall time of this source (aware input is kept).

        The result carries its fixed UTC offset rather than the zone: Python
        compares and subtracts times of one zone by wall time, fold ignored,
        which would put the fold's second pass before its first.
        """
        if wall.tzinfo is not None:
            return wall
        first = wall.replace(tzinfo=self.zone, fold=0)
        second = wall.replace(tzinfo=self.zone, fold=1)
        if first.utcoffset() == second.utcoffset():
            out = first
        elif first.astimezone(UTC).astimezone(self.zone).replace(tzinfo=None) != wall:
            out = first.astimezone(UTC).astimezone(self.zone)  # in a gap: forward by its length
        elif self._last is not None and self._last - first.timestamp() > _REORDER:
            out = second  # the fold's second pass: the log already went past the first
        else:
            out = first
        self._last = out.timestamp()
        return out.replace(tzinfo=timezone(out.utcoffset() or timedelta(0)), fold=0)


def aware(wall: datetime, tz: tzinfo = UTC) -> datetime:
    """One naive wall time in ``tz`` (first occurrence in a fold); aware input is kept."""
    return LocalTime(tz).aware(wall)


#: How far a year-less vLLM timestamp may lie after the file's mtime (clock skew, buffering).
YEAR_SLACK = timedelta(days=1)
