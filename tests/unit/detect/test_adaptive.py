"""Adaptive speculation (the server moving its own steps) and smaller tree drafts (issue 23)."""

from __future__ import annotations

from dataclasses import replace

from acceptmon.detect import DROP, Detector
from acceptmon.model import ConfigDiff, ConfigSnapshot, Run, SpecConfig
from tests.support.detect import T0, Feed

ADAPTIVE = ConfigSnapshot(server_args={"speculative_adaptive": True})
STEPS = "args.speculative_num_steps"


def chain_len(alpha: float, k: int) -> float:
    return sum(alpha**i for i in range(k + 1))


def chain(k: int) -> SpecConfig:
    return SpecConfig(algorithm="EAGLE3", num_steps=k, eagle_topk=1, num_draft_tokens=k + 1)


def start(rid: str, prev: str | None = None, diff: ConfigDiff | None = None) -> Run:
    return Run("gpu-a", rid, T0, 0, ADAPTIVE, chain(3), prev, diff)


def steps(rid: str, prev: str, a: int, b: int) -> Run:
    diff = ConfigDiff(changed=((STEPS, a, b),))
    return Run("gpu-a", rid, T0, 0, ADAPTIVE, chain(b), prev, diff, "spec_params", f"steps {a} -> {b}")


def test_a_step_down_in_a_hard_stretch_is_not_the_change_a_drop_is_blamed_on() -> None:
    """Main raised a critical drop naming speculative_num_steps: the server's reaction as the cause."""
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(start("r1"))
    feed.decode(chain_len(0.7, 3), 300, sd=0.1)
    det.observe_run_start(steps("r2", "r1", 3, 1))
    found = feed.decode(chain_len(0.6, 1), 200, sd=0.05)  # a hard stretch: α −14%, accept len −32%
    det.observe_run_start(steps("r3", "r2", 1, 3))
    found = feed.decode(chain_len(0.7, 3), 200, sd=0.1)
    assert [f for f in found if f.severity == "critical"] == []


def test_a_worse_draft_under_adaptive_steps_is_found_on_per_token_acceptance() -> None:
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(start("r1"))
    feed.decode(chain_len(0.75, 3), 300, sd=0.1)
    draft = ConfigDiff(changed=(("args.speculative_draft_model_path", "/m/a", "/m/b"),))
    det.observe_run_start(start("r2", "r1", draft))
    det.observe_run_start(steps("r3", "r2", 3, 1))  # the controller swings at once
    feed.decode(chain_len(0.5, 1), 15, sd=0.05)
    det.observe_run_start(steps("r4", "r3", 1, 3))
    feed.decode(chain_len(0.5, 3), 15, sd=0.1)
    det.observe_run_start(steps("r5", "r4", 3, 1))
    found = feed.decode(chain_len(0.5, 1), 40, sd=0.05)
    drops = [f for f in found if f.rule == DROP]
    assert len(drops) == 1
    f = drops[0]
    assert (f.severity, f.run_id, f.baseline_run_id, f.measure) == (
        "critical",
        "r2",
        "r1",
        "per_token_acceptance",
    )
    assert f.changed_keys() == ["args.speculative_draft_model_path"]
    assert "steps" not in " ".join(f.changed_keys()) and "adaptive speculation" in f.summary


def test_adaptive_state_survives_a_checkpoint() -> None:
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(start("r1"))
    feed.decode(chain_len(0.7, 3), 300, sd=0.1)
    det.observe_run_start(steps("r2", "r1", 3, 1))
    feed.decode(chain_len(0.7, 1), 50, sd=0.05)
    again = Detector()
    again.restore(det.checkpoint())
    assert again.checkpoint() == det.checkpoint()


def tree(tokens: int, draft: str = "/m/a") -> SpecConfig:
    return SpecConfig(
        algorithm="EAGLE3", num_steps=5, eagle_topk=4, num_draft_tokens=tokens, draft_model_path=draft
    )


def _tree_change(after: float, diff: ConfigDiff) -> list[str]:
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(Run("gpu-a", "t1", T0, 0, None, tree(8)))
    feed.decode(3.4, 300, sd=0.15)
    det.observe_run_start(Run("gpu-a", "t2", T0, 0, None, tree(6), "t1", diff))
    found = feed.decode(after, 100, sd=0.15)
    return [f"{f.severity}: {f.summary}" for f in found if f.rule == DROP]


def test_fewer_tree_tokens_with_the_same_draft_is_a_warning_that_says_why() -> None:
    """Main: critical. 8 → 6 tokens, accept len −15%: the change explains it."""
    found = _tree_change(3.4 * 0.85, ConfigDiff(changed=(("args.speculative_num_draft_tokens", 8, 6),)))
    assert len(found) == 1 and found[0].startswith("warning: ")
    assert "fewer tokens with the same draft (8 → 6)" in found[0] and "up to 25%" in found[0]


def test_a_worse_draft_behind_fewer_tree_tokens_is_still_critical() -> None:
    tokens = ("args.speculative_num_draft_tokens", 8, 6)
    worse = ConfigDiff(changed=(tokens, ("args.speculative_draft_model_path", "/m/a", "/m/b")))
    assert [f[:9] for f in _tree_change(3.4 * 0.85 * 0.7, worse)] == ["critical:"]
    # the same draft, but far more than 8 → 6 tokens explains
    assert [f[:9] for f in _tree_change(3.4 * 0.6, ConfigDiff(changed=(tokens,)))] == ["critical:"]


def test_a_spec_params_segment_of_a_non_adaptive_run_switches_it_to_per_token() -> None:
    """An older start line without ``speculative_adaptive``: the first step change says it."""
    det = Detector()
    feed = Feed(det)
    plain = replace(start("r1"), config=None)
    det.observe_run_start(plain)
    feed.decode(chain_len(0.7, 3), 300, sd=0.1)
    det.observe_run_start(steps("r2", "r1", 3, 1))
    found = feed.decode(chain_len(0.7, 1), 200, sd=0.05)
    assert [f for f in found if f.severity == "critical"] == []
    status = det.status("gpu-a")
    assert status is not None and status.run_id == "r1"
