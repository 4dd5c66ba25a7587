"""Acceptance-regression detection: runs and samples in, findings out (pure, no I/O)."""

from acceptmon.detect.detector import Detector
from acceptmon.detect.findings import COLLAPSED, DRIFT, DROP, FLOOR, STALLED
from acceptmon.detect.settings import DetectSettings, Floor
from acceptmon.detect.source import SourceStatus

RULES = (DROP, COLLAPSED, FLOOR, DRIFT, STALLED)

__all__ = [
    "COLLAPSED",
    "DRIFT",
    "DROP",
    "FLOOR",
    "RULES",
    "STALLED",
    "DetectSettings",
    "Detector",
    "Floor",
    "SourceStatus",
]
