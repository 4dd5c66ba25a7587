"""SGLang's changes under a running server, and vLLM's start lines, as the line parser reads them."""

from __future__ import annotations

from datetime import datetime

import pytest

from acceptmon.model import TOO_LARGE, ParseError, RuntimeChange, ServerStart
from acceptmon.parse.line import LineParser
from acceptmon.testing import changes

T0 = datetime(2026, 3, 2, 9, 0, 0)


def _parse(line: str) -> object:
    return LineParser("s", year=2026).parse(line, 7)


def test_the_end_of_a_weight_update_is_a_change_and_its_begin_is_not() -> None:
    begin, _, end, _ = changes.weight_update(T0)
    assert _parse(begin) is None
    record = _parse(end)
    assert isinstance(record, RuntimeChange) and record.kind == "weight_update"
    assert record.meta.ranks == (("tp", 0),) and record.meta.lineno == 7


def test_overrides_are_read_and_redacted() -> None:
    record = _parse(
        changes.context_override(T0, speculative_accept_threshold_single=0.5, hf_token="hf_abcdefghijk")
    )
    assert isinstance(record, RuntimeChange) and record.kind == "config_override"
    assert record.changes["speculative_accept_threshold_single"] == 0.5
    assert str(record.changes["hf_token"]).startswith("<redacted:")
    line = "[2026-03-02 09:00:00 TP0] Global server args updated! get_global_server_args()=ServerArgs(speculative_accept_threshold_acc=0.3)"
    record = _parse(line)
    assert isinstance(record, RuntimeChange) and record.kind == "global_args"
    assert record.changes == {"speculative_accept_threshold_acc": 0.3}


@pytest.mark.parametrize(
    "line",
    [
        "[2026-03-02 09:00:00 TP0] Config updated via context override: {'a': ",
        "[2026-03-02 09:00:00 TP0] Global server args updated! nothing here",
        "(APIServer pid=7) INFO 03-02 09:00:00 [utils.py:326] non-default args: {'model': ",
        "INFO 03-02 09:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) without config",
    ],
)
def test_damaged_lines_are_counted_errors(line: str) -> None:
    assert isinstance(_parse(line), ParseError)


def test_a_huge_start_line_is_too_large() -> None:
    record = _parse(changes.non_default_args_line(T0, junk="x" * 300_000))
    assert isinstance(record, ParseError) and record.kind == TOO_LARGE


def test_a_request_dump_quoting_a_marker_is_not_a_change() -> None:
    parser = LineParser("s", year=2026)
    assert (
        parser.parse("[2026-03-02 09:00:00] Receive: obj=GenerateReqInput(text='Update weights end.')", 1)
        is None
    )


def test_vllm_start_lines() -> None:
    v1 = _parse(changes.non_default_args_line(T0, api_key=["sk-live-0123456789abcdef"]))
    assert isinstance(v1, ServerStart) and v1.meta.ts is not None and v1.meta.ts.month == 3
    assert v1.args["speculative_config"]["num_speculative_tokens"] == 3
    assert "sk-live" not in repr(v1.args)
    v0 = _parse(changes.engine_config_line(T0, "ibm-fms/llama3-8b-accelerator", 5))
    assert isinstance(v0, ServerStart)
    assert v0.args["speculative_config"] == {
        "draft_model": "ibm-fms/llama3-8b-accelerator",
        "num_spec_tokens": 5,
    }
    assert v0.args["served_model_name"] == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert v0.args["mm_processor_kwargs"] is None  # the format's closing parenthesis is dropped
