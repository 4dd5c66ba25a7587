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
Memory: one block's histogram and three numbers per stratum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from acceptmon.detect.stats import hist_median


class Swing:
    """Per load bucket: the block being filled, and the lowest and highest block medians."""

    __slots__ = ("blocks", "counts", "highs", "lows", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.blocks: dict[int, Counter[int]] = {}  # Counters: a batch's values are counted in C
        self.counts: dict[int, int] = {}
        #: bucket → the lowest block median (hundredths); → (the highest, blocks closed)
        self.lows: dict[int, float] = {}
        self.highs: dict[int, tuple[float, int]] = {}

    def add(self, bucket: int, value: int) -> None:
        if not self.size:
            return
        h = self.blocks.get(bucket)
        if h is None:
            h = self.blocks[bucket] = Counter()
        h[value] += 1
        n = self.counts[bucket] = self.counts.get(bucket, 0) + 1
        if n >= self.size:
            self._close(bucket)

    def extend(self, buckets: Sequence[int], values: Sequence[int]) -> None:
        """``add`` for each pair in turn: per bucket, its values in order, a block at a time.
        Buckets never meet (each has its own block, low and high), so going bucket by bucket
        leaves what going pair by pair does; a block this batch fills alone needs no
        histogram, only its median (the same order statistics, off the sorted values)."""
        size, blocks, counts = self.size, self.blocks, self.counts
        if not size:
            return
        lo, hi = (size + 1) // 2 - 1, size // 2
        groups: dict[int, list[int]] = {bucket: [] for bucket in dict.fromkeys(buckets)}
        # One pass: cheaper than a filtered copy of the column per bucket (there are several).
        for bucket, value in zip(buckets, values, strict=True):
            groups[bucket].append(value)
        for bucket, mine in groups.items():
            at, have = 0, counts.get(bucket, 0)
            while at < len(mine):
                take = min(size - have, len(mine) - at)
                if take == size:
                    block = sorted(mine[at : at + size])
                    self._level(bucket, (block[lo] + block[hi]) / 2)
                    at += size
                    continue
                h = blocks.get(bucket)
                if h is None:
                    h = blocks[bucket] = Counter()
                h.update(mine[at : at + take])  # counted at C speed
                at, have = at + take, have + take
                counts[bucket] = have
                if have >= size:
                    self._close(bucket)
                    have = 0

    def _close(self, bucket: int) -> None:
        del self.counts[bucket]
        self._level(bucket, hist_median(self.blocks.pop(bucket)))

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
