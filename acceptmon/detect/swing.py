"""How far a run's prompt mix swung acceptance on its own: the range it sustained.

A server whose prompt mix moves acceptance ±15% for hours would page at every
restart without a config change if the new run were judged against the last
window of the old one alone: the window may have caught a high, the new run a
low. So each load stratum's intervals are cut into blocks of ``size`` and the
lowest and highest block medians are kept. The run's swing is the smallest
low/high ratio of any stratum that sustained two blocks or more: measured
within one stratum so that load does not pass for a swing, and taken as a
ratio so that it carries over to strata where the swing was not seen (a mix
that swung by day may swing at night). The last window may sit at the high,
so a plain restart must fall below the window's level times that ratio.
Memory: one block's values and three numbers per stratum.
"""

from __future__ import annotations

from collections.abc import Sequence


class Swing:
    """Per load bucket: the block being filled, and the lowest and highest block medians."""

    __slots__ = ("blocks", "highs", "lows", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        #: bucket → the values of its block being filled, in order (fewer than ``size``)
        self.blocks: dict[int, list[int]] = {}
        #: bucket → the lowest block median (hundredths); → (the highest, blocks closed)
        self.lows: dict[int, float] = {}
        self.highs: dict[int, tuple[float, int]] = {}

    def add(self, bucket: int, value: int) -> None:
        if not self.size:
            return
        block = self.blocks.setdefault(bucket, [])
        block.append(value)
        if len(block) >= self.size:
            del self.blocks[bucket]
            self._close(bucket, block)

    def extend(self, buckets: Sequence[int], values: Sequence[int]) -> None:
        """``add`` for each pair in turn: per bucket, its values in order, a block at a time.
        Buckets never meet (each has its own block, low and high), so going bucket by bucket
        leaves what going pair by pair does; a block's median is read off its sorted values."""
        size, blocks = self.size, self.blocks
        if not size:
            return
        groups: dict[int, list[int]] = {bucket: [] for bucket in dict.fromkeys(buckets)}
        # One pass: cheaper than a filtered copy of the column per bucket (there are several).
        for bucket, value in zip(buckets, values, strict=True):
            groups[bucket].append(value)
        for bucket, mine in groups.items():
            held = blocks.pop(bucket, None)
            if held:
                mine[:0] = held
            at, n = 0, len(mine)
            while n - at >= size:
                self._close(bucket, mine[at : at + size])
                at += size
            if at < n:
                blocks[bucket] = mine[at:]

    def _close(self, bucket: int, block: list[int]) -> None:
        """A full block: its median (``median_ci``'s, off the sorted values) is a level."""
        block.sort()
        n = len(block)
        self._level(bucket, (block[(n + 1) // 2 - 1] + block[n // 2]) / 2)

    def _level(self, bucket: int, level: float) -> None:
        """A closed block's median: the bucket's lowest and highest so far."""
        low = self.lows.get(bucket)
        high, closed = self.highs.get(bucket, (level, 0))
        self.lows[bucket] = level if low is None else min(low, level)
        self.highs[bucket] = (max(high, level), closed + 1)

    def ratio(self) -> float:
        """The smallest low/high of any bucket with two blocks or more: ≤ 1, and 1 when unknown."""
        out = 1.0
        for bucket, (high, closed) in self.highs.items():
            if closed >= 2 and high > 0:
                out = min(out, self.lows[bucket] / high)
        return out
