"""The ``engine`` label: from the latest acceptance record, kept in the checkpoint, on every store series."""

from __future__ import annotations

from datetime import UTC, datetime

from acceptmon.ingest.families import finding_metrics
from acceptmon.metrics.collect import STORE_CATALOGUE, render
from acceptmon.metrics.store import SourceStats, Store
from acceptmon.model import Finding, Meta, SpecSample
from acceptmon.notify.payload import finding_payload

TS = datetime(2026, 1, 1, tzinfo=UTC)


def test_store_series_name_the_engine_and_it_survives_a_checkpoint() -> None:
    store = Store()
    store.spec(SpecSample(Meta("a", 1, TS), 0.5, 2.0, 5, 10, engine_name="lmdeploy"))
    assert store.stats("a").engine == "lmdeploy"
    assert 'acceptmon_spec_accepted_tokens_total{engine="lmdeploy",source="a"} 5.0' in render(store)
    restored = SourceStats.from_dict(store.stats("a").to_dict())
    assert restored.engine == "lmdeploy"
    assert SourceStats.from_dict({**store.stats("a").to_dict(), "engine": "bogus"}).engine == ""
    assert all(m.labels[:2] == ("source", "engine") for m in STORE_CATALOGUE)


def test_findings_carry_the_engine_in_payload_and_gauge() -> None:
    f = Finding("acceptance_drop_after_change", "critical", "a", "r2", "r1", "x", TS, "k", engine="llamacpp")
    assert finding_payload(f)["engine"] == "llamacpp"
    assert finding_payload(Finding("r", "info", "a", "r1", None, "x", TS, "k"))["engine"] is None
    active = next(finding_metrics([f], {}, {"a": "gpu-1"}, {"a": "llamacpp"}))
    sample = active.samples[0]
    assert sample.labels["engine"] == "llamacpp" and sample.labels["host"] == "gpu-1" and sample.value == 1.0
