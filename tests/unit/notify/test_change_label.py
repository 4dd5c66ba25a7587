"""The change reaches the alert: changed keys and config hash as bounded labels, values only redacted."""

from __future__ import annotations

from datetime import UTC, datetime

from acceptmon.ingest.families import finding_metrics
from acceptmon.model import ConfigDiff, Finding
from acceptmon.text.change import MAX_LABEL, change_label, change_lines, change_pairs

TS = datetime(2026, 1, 1, tzinfo=UTC)
DRAFT = ConfigDiff(
    changed=(
        ("speculative_draft_model_path", "/models/eagle3-v1", "/models/eagle3-v2"),
        ("draft.eagle_config.eagle_aux_hidden_state_layer_ids", [2, 30, 58], [-1, 2, 30]),
    )
)


def drop(diff: ConfigDiff | None, active: bool = True, run: str = "r2") -> Finding:
    return Finding(
        "acceptance_drop_after_change", "critical", "a", run, "r1", "x", TS, f"k{run}",
        diff=diff, active=active, config_hash="9c1d0e7a55aa0b11", before_accept_len=2.4, after_accept_len=1.57,
    )  # fmt: skip


def test_the_label_names_keys_only_and_stays_bounded() -> None:
    assert change_label(DRAFT) == (
        "speculative_draft_model_path, draft.eagle_config.eagle_aux_hidden_state_layer_ids"
    )
    assert change_label(None) == ""
    many = ConfigDiff(changed=tuple((f"key_number_{i:03d}", i, i + 1) for i in range(300)))
    label = change_label(many)
    assert len(label) <= MAX_LABEL and label.endswith("more") and label.startswith("key_number_000, ")
    assert str(300 - label.count(",") - 1) in label  # "+N more" counts what was left out


def test_values_are_shown_only_redacted() -> None:
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    diff = ConfigDiff(changed=(("model_loader_extra_config", f"--token {token}", "x"),))
    text = " ".join(change_lines(diff)) + repr(change_pairs(diff)) + change_label(diff)
    assert token not in text and "redacted" in text
    assert (
        change_lines(DRAFT)[1]
        == "draft.eagle_config.eagle_aux_hidden_state_layer_ids: [2, 30, 58] → [-1, 2, 30]"
    )


def test_finding_active_carries_change_and_hash_and_the_values_their_info_series() -> None:
    active, info, lengths, _ = list(finding_metrics([drop(DRAFT)], {}, {"a": "gpu-1"}, {}))
    assert {s.labels["when"]: s.value for s in lengths.samples} == {"before": 2.4, "after": 1.57}
    (sample,) = active.samples
    assert sample.labels["change"] == change_label(DRAFT)
    assert sample.labels["config_hash"] == "9c1d0e7a55aa0b11" and sample.value == 1.0
    got = {(s.labels["key"], s.labels["before"], s.labels["after"]) for s in info.samples}
    assert got == {
        ("speculative_draft_model_path", "/models/eagle3-v1", "/models/eagle3-v2"),
        ("draft.eagle_config.eagle_aux_hidden_state_layer_ids", "[2, 30, 58]", "[-1, 2, 30]"),
    }


def test_a_resolved_finding_keeps_its_labels_at_zero_and_drops_its_values() -> None:
    raised = {("acceptance_drop_after_change", "a", "critical"): 1}
    active, info, lengths, _ = list(finding_metrics([drop(DRAFT, active=False)], raised, {}, {}))
    (sample,) = active.samples
    assert sample.value == 0.0 and sample.labels["change"] == change_label(DRAFT)
    assert not info.samples and not lengths.samples
    # A firing finding's change wins over a resolved one of the same rule and source.
    other = ConfigDiff(changed=(("tp_size", 2, 4),))
    active, *_ = list(finding_metrics([drop(DRAFT, False, "r2"), drop(other, True, "r3")], raised, {}, {}))
    (sample,) = active.samples
    assert (sample.labels["change"], sample.value) == ("tp_size", 1.0)
