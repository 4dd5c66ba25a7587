"""Diff composition, keys, summaries and the bounded finding book."""

from __future__ import annotations

from datetime import datetime

import pytest

from acceptmon.detect.compare import Comparison, Level
from acceptmon.detect.findings import DROP, NO_CHANGE, Book, change_key, compose, drop_finding, source_key
from acceptmon.model import ConfigDiff, Finding, Run, SpecConfig

K = "draft.eagle_config.eagle_aux_hidden_state_layer_ids"


@pytest.mark.parametrize(
    ("diffs", "want"),
    [
        pytest.param([None, ConfigDiff()], None, id="nothing changed"),
        pytest.param([ConfigDiff(changed=((K, 1, 2),))], ConfigDiff(changed=((K, 1, 2),)), id="one change"),
        pytest.param(
            [ConfigDiff(changed=((K, 1, 2),)), ConfigDiff(changed=((K, 2, 3),))],
            ConfigDiff(changed=((K, 1, 3),)),
            id="chained: first old, last new",
        ),
        pytest.param(
            [ConfigDiff(changed=((K, 1, 2),)), None, ConfigDiff(changed=((K, 2, 1),))],
            None,
            id="changed back",
        ),
        pytest.param(
            [ConfigDiff(added=(("a", 1),)), ConfigDiff(removed=(("a", 1),))], None, id="added then removed"
        ),
        pytest.param(
            [ConfigDiff(removed=(("a", 1),)), ConfigDiff(added=(("a", 2),))],
            ConfigDiff(changed=(("a", 1, 2),)),
            id="removed then re-added differently",
        ),
        pytest.param(
            [ConfigDiff(added=(("a", 1),)), ConfigDiff(changed=(("a", 1, 5),), removed=(("b", 0),))],
            ConfigDiff(added=(("a", 5),), removed=(("b", 0),)),
            id="added then changed",
        ),
    ],
)
def test_compose(diffs, want):
    assert compose(diffs) == want


def _cmp(before: float, after: float) -> Comparison:
    return Comparison(
        Level(before, before - 0.01, before + 0.01),
        Level(after, after - 0.05, after + 0.05),
        1e-9,
        500,
        30,
        2,
    )


def _run(rid: str, prev: str | None = None) -> Run:
    return Run("gpu-a", rid, None, 0, None, SpecConfig(num_steps=3, num_draft_tokens=4), prev)


def test_drop_finding_names_the_changed_key_and_the_numbers():
    f = drop_finding(_run("B", "A"), _run("A"), _cmp(2.41, 1.57), ConfigDiff(changed=((K, 1, 2),)), (3, 3))
    assert f.key == change_key("gpu-a", "A", "B") == f"{DROP}:gpu-a:A->B"
    assert (f.severity, f.baseline_run_id, f.run_id) == ("critical", "A", "B")
    assert f.before_accept_rate == pytest.approx(0.47) and f.after_accept_rate == pytest.approx(0.19)
    assert f.summary == (
        f"accept len on gpu-a fell 35% after a config change to {K}: median 2.41 → 1.57 "
        "(accept rate 0.47 → 0.19), p = 1.0e-09 over 500 vs 30 intervals"
    )


def test_drop_finding_without_a_visible_change_says_so():
    f = drop_finding(_run("B", "A"), _run("A"), _cmp(2.4, 2.0), None, (None, None))
    assert NO_CHANGE in f.summary
    assert "accept rate" not in f.summary and f.before_accept_rate is None
    assert NO_CHANGE == "a restart with no config change visible in server_args or draft config.json"


def test_long_diffs_are_abbreviated():
    diff = ConfigDiff(changed=tuple((f"k{i}", 0, 1) for i in range(5)))
    f = drop_finding(_run("B", "A"), _run("A"), _cmp(2.4, 2.0), diff, (3, 3))
    assert "k0, k1, k2 and 2 more" in f.summary


def _finding(key: str) -> Finding:
    return Finding("r", "warning", "gpu-a", "B", None, "s", None, key)


def test_book_keeps_keys_stable_and_caps_resolved_findings():
    t1, t2 = datetime(2025, 1, 1, 1), datetime(2025, 1, 1, 2)
    book = Book(max_resolved=2)
    for k in "abcd":
        book.fire(_finding(k), t1)
    for k in "abc":
        book.resolve(k, t2)
    assert [(f.key, f.active) for f in book.all()] == [("b", False), ("c", False), ("d", True)]
    assert book.all()[0].resolved_at == t2
    book.fire(_finding("b"), t2)  # re-opened: same key, fresh episode
    again = next(f for f in book.all() if f.key == "b")
    assert (again.active, again.first_seen, again.resolved_at) == (True, t2, None)
    assert book.active_keys("r") == ["d", "b"]
    assert not book.active("c") and book.active("d")


def test_source_keys():
    assert source_key("log_stalled", "gpu-a") == "log_stalled:gpu-a"
    assert source_key("acceptance_drift", "gpu-a", "B") == "acceptance_drift:gpu-a:B"


def test_pending_diffs_stay_bounded_in_a_crash_loop() -> None:
    from acceptmon.detect.settings import DetectSettings
    from acceptmon.detect.source import MAX_PENDING, SourceState
    from acceptmon.model import ConfigDiff, Run, SpecConfig

    state = SourceState("s", DetectSettings())
    for i in range(200):
        diff = ConfigDiff(changed=(("args.x", i, i + 1),))
        state.start_run(Run("s", f"r{i + 2}", None, i, None, SpecConfig(), f"r{i + 1}", diff))
    assert len(state.pending) <= MAX_PENDING + 1
    from acceptmon.detect.findings import compose

    net = compose(state.pending)
    assert net is not None and net.changed == (("args.x", 0, 200),)
