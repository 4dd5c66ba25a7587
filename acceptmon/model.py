"""Boundary value types: one frozen type at each hop of the pipeline.

Everything that crosses a stage boundary is immutable so that stages can be
tested with plain tables and so a record can be replayed without surprises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

#: Rank labels of a scheduler line, in the order the log printed them,
#: e.g. (("dp", 0), ("tp", 2)). A tuple so records stay hashable.
Ranks = tuple[tuple[str, int], ...]

#: Extra key/value pairs a line carried that have no first-class field.
Extras = tuple[tuple[str, "float | int | str | bool"], ...]


@dataclass(frozen=True, slots=True)
class Position:
    """Where the next unread byte of a file is.

    ``identity`` names the file independent of its path (``dev:ino`` locally;
    a size-independent fingerprint of the first bytes over SFTP). ``offset`` is
    the byte just after the last complete line handed out, so it is safe to
    checkpoint once that line has been processed.
    """

    identity: str
    offset: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """Complete lines (without newlines) read from one file in one go.

    Lines travel in chunks rather than one object per line: the hot path
    handles a million lines a second, and checkpoints only ever need the
    position after the last line of a chunk. ``lineno`` is the 1-based number
    of the first line within its file (the raw file's: a container log's line
    of the first piece, however many pieces its messages were split in);
    ``end`` is where the file should be resumed once every line of the chunk
    has been processed. ``times`` is the container runtime's raw RFC 3339 time
    of each line (None for a plain file); ``errors`` counts (kind, n) of lines
    the source could not turn into lines (a damaged or overlong container record).
    ``text`` is ``"\n".join(lines)`` where the reader has that string already (the
    decoded bytes it split), so the bulk path searches it without joining the lines again.
    ``lines`` is a tuple, or where a scout sorted the chunk a ``sources.lines.Lines`` (that
    text, split only when read), equal to the tuple it stands for.
    """

    source: str
    lines: Sequence[str]
    lineno: int
    end: Position | None = None
    path: str = ""
    times: tuple[str | None, ...] | None = None
    errors: tuple[tuple[str, int], ...] = ()
    text: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Meta:
    """What every record knows about the line it came from."""

    source: str
    lineno: int
    ts: datetime | None
    ranks: Ranks = ()


@dataclass(frozen=True, slots=True)
class DecodeSample:
    """An SGLang ``Decode batch`` line: one logging interval of one rank.

    ``accept_len`` includes the bonus token (SGLang's definition since
    0.4.1.post7). ``accept_rate_printed`` is the raw printed value, whose
    meaning depends on the release; ``accept_rate`` is the normalised 0-1
    fraction of draft tokens accepted, filled in by the run tracker once the
    run's draft settings are known (``None`` until then).
    """

    meta: Meta
    running_req: int
    queue_req: int
    gen_throughput: float
    token_usage: float | None = None
    accept_len: float | None = None
    accept_rate_printed: float | None = None
    accept_rate: float | None = None
    graph: bool | None = None
    iteration: int | None = None
    repeated: int = 0
    extra: Extras = ()


@dataclass(frozen=True, slots=True)
class PrefillSample:
    """An SGLang ``Prefill batch`` line."""

    meta: Meta
    new_seq: int | None = None
    new_token: int | None = None
    cached_token: int | None = None
    running_req: int | None = None
    queue_req: int | None = None
    token_usage: float | None = None
    extra: Extras = ()


@dataclass(frozen=True, slots=True)
class SpecSample:
    """A vLLM spec-decode metrics line.

    ``cumulative`` is true for vLLM v0, whose counts run since start; v1
    counts cover one logging interval.
    """

    meta: Meta
    accept_rate: float | None
    accept_len: float | None
    accepted_tokens: int | None
    drafted_tokens: int | None
    per_position: tuple[float, ...] = ()
    num_spec_tokens: int | None = None
    cumulative: bool = False
    engine: int | None = None
    #: Which inference server wrote the line (``vllm``, ``lmdeploy``, ``llamacpp``); ``engine``
    #: above is vLLM's data-parallel engine index (LMDeploy's DP rank).
    engine_name: str = "vllm"
    #: A printed value did not fit the others (llama.cpp's ``mean len`` against its counts):
    #: the counts are kept, the line is counted as ``out_of_range``.
    suspect: bool = False


@dataclass(frozen=True, slots=True)
class ServerStart:
    """A ``server_args`` line: the resolved configuration of a new start."""

    meta: Meta
    args: dict[str, Any] = field(hash=False, compare=True)


@dataclass(frozen=True, slots=True)
class ServerReady:
    """``The server is fired up and ready to roll!``"""

    meta: Meta


@dataclass(frozen=True, slots=True)
class Shutdown:
    """A graceful stop (SIGTERM received, uvicorn shutdown)."""

    meta: Meta
    message: str


@dataclass(frozen=True, slots=True)
class Crash:
    """A scheduler/controller exception, SIGQUIT or watchdog timeout."""

    meta: Meta
    message: str


@dataclass(frozen=True, slots=True)
class PositionRates:
    """SGLang's per-position line (``Decode batch, #window: … | #lifetime: …``, after 0.5.23).

    Acceptance per draft position over the last interval (``window``) and since start
    (``lifetime``); a position beyond the adaptive budget is unobserved (None, printed nan).
    """

    meta: Meta
    window: tuple[float | None, ...]
    window_accept_len: float | None
    lifetime: tuple[float | None, ...] = ()
    lifetime_accept_len: float | None = None


@dataclass(frozen=True, slots=True)
class SpecParamsUpdate:
    """``Adaptive spec params updated: steps A -> B (ema_accept_len=X)``."""

    meta: Meta
    steps_before: int
    steps_after: int
    ema_accept_len: float | None


@dataclass(frozen=True, slots=True)
class RuntimeChange:
    """A change under a running server, without a restart: an online weight update
    (``kind="weight_update"``) or server args set at run time (``kind="config_override"``,
    ``changes`` the new values, redacted as they are parsed)."""

    meta: Meta
    kind: str
    changes: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)


#: Kinds of ``acceptmon_parse_errors_total{kind}``: a damaged or unreadable record,
#: a line over the splitter's length limit, a value outside its physical range,
#: a start line over its size cap, a record whose handling raised (contained), and a
#: line time ahead of the host clock (``runs.ahead``: its values count, its time does not),
#: a container runtime's record that is not in its file's format, and a container message
#: whose pieces passed the length limit (``sources.container``).
MALFORMED, OVERLONG, OUT_OF_RANGE, TOO_LARGE, EXCEPTION, TIME_AHEAD = (
    "malformed",
    "overlong",
    "out_of_range",
    "too_large",
    "exception",
    "time_ahead",
)
CONTAINER_MALFORMED, CONTAINER_OVERLONG = "container_malformed", "container_overlong"
PARSE_ERROR_KINDS = (
    MALFORMED,
    OVERLONG,
    OUT_OF_RANGE,
    TOO_LARGE,
    EXCEPTION,
    TIME_AHEAD,
    CONTAINER_MALFORMED,
    CONTAINER_OVERLONG,
)


@dataclass(frozen=True, slots=True)
class ParseError:
    """A line that looked like a record but could not be read safely."""

    meta: Meta
    reason: str
    kind: str = MALFORMED


Record = (
    DecodeSample
    | PrefillSample
    | SpecSample
    | ServerStart
    | ServerReady
    | Shutdown
    | Crash
    | SpecParamsUpdate
    | PositionRates
    | RuntimeChange
    | ParseError
)

RecordKind = Literal[
    "decode",
    "prefill",
    "spec",
    "server_args",
    "ready",
    "shutdown",
    "crash",
    "spec_params",
    "positions",
    "runtime_change",
    "error",
]

KIND: dict[type, RecordKind] = {
    DecodeSample: "decode",
    PrefillSample: "prefill",
    SpecSample: "spec",
    ServerStart: "server_args",
    ServerReady: "ready",
    Shutdown: "shutdown",
    Crash: "crash",
    SpecParamsUpdate: "spec_params",
    PositionRates: "positions",
    RuntimeChange: "runtime_change",
    ParseError: "error",
}


@dataclass(frozen=True, slots=True)
class SpecConfig:
    """The inference server's speculative-decoding config a run was started with (from server_args)."""

    algorithm: str | None = None
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None
    draft_model_path: str | None = None
    model_path: str | None = None
    decode_log_interval: int = 40

    #: Draft tokens proposed per verify round (bonus token excluded); derived.
    slots: int | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        slots = None
        if self.num_draft_tokens is not None and self.num_draft_tokens > 1:
            slots = self.num_draft_tokens - 1
        elif self.num_steps is not None and self.num_steps > 0:
            slots = self.num_steps
        object.__setattr__(self, "slots", slots)

    def draft_slots(self) -> int | None:
        """Draft tokens proposed per verify round (the bonus token excluded)."""
        return self.slots


@dataclass(frozen=True, slots=True)
class ConfigDiff:
    """Keys (dotted paths) that differ between two config snapshots."""

    changed: tuple[tuple[str, Any, Any], ...] = ()
    added: tuple[tuple[str, Any], ...] = ()
    removed: tuple[tuple[str, Any], ...] = ()
    #: Parts of the config that could not be compared: ``("draft",)`` when a draft model's
    #: config.json was not read on one side, so a change inside it cannot be seen.
    unread: tuple[str, ...] = ()

    def keys(self) -> list[str]:
        return [k for k, *_ in self.changed] + [k for k, _ in self.added] + [k for k, _ in self.removed]

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """Server args (minus per-start noise) plus the draft model's config.json."""

    server_args: dict[str, Any] = field(hash=False)
    draft_config: dict[str, Any] | None = field(default=None, hash=False)
    watched: dict[str, Any] = field(default_factory=dict, hash=False)
    hash: str = ""
    #: What changed under the running server since its start (online weight updates).
    runtime: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class Run:
    """One server lifetime (or config segment) on one source."""

    source: str
    run_id: str
    started: datetime | None
    started_lineno: int
    config: ConfigSnapshot | None
    spec: SpecConfig
    previous_run_id: str | None = None
    diff: ConfigDiff | None = None
    #: What opened it: "start" (a start line), "log" (the log began mid-run), or a segment
    #: of a running server: "weight_update", "config_override", "spec_params", "watched".
    kind: str = "start"
    #: The opening line's words, e.g. "Update weights end." (empty for a start).
    reason: str = ""


Severity = Literal["critical", "warning", "info"]


@dataclass(frozen=True, slots=True)
class Finding:
    """A detector's verdict about one source, deduplicated by ``key``."""

    rule: str
    severity: Severity
    source: str
    run_id: str
    baseline_run_id: str | None
    summary: str
    first_seen: datetime | None
    key: str
    before_accept_len: float | None = None
    after_accept_len: float | None = None
    before_accept_rate: float | None = None
    after_accept_rate: float | None = None
    before_ci: tuple[float, float] | None = None
    after_ci: tuple[float, float] | None = None
    before_n: int = 0
    after_n: int = 0
    p_value: float | None = None
    diff: ConfigDiff | None = None
    active: bool = True
    resolved_at: datetime | None = None
    #: The user's per-source labels (``labels:`` in the config), sorted by name.
    labels: tuple[tuple[str, str], ...] = ()
    #: Where and what: the host the log is on, and the models of the run.
    host: str = ""
    model: str | None = None
    draft_model: str | None = None
    #: Acceptance when the finding resolved (what the RESOLVED message reports).
    now_accept_len: float | None = None
    now_accept_rate: float | None = None
    #: The inference server of the source (``sglang``, ``vllm``, ``llamacpp``, ``lmdeploy``), if known.
    engine: str = ""
    #: The kind and reason of the run the finding is about (``Run.kind``, ``Run.reason``).
    run_kind: str = ""
    run_reason: str = ""
    #: What a drop was measured in: "accept_len", or "per_token_acceptance" (α, solved from accept
    #: len under the chain model) when the draft's length changed; the CIs, p-value and counts are
    #: of that measure. ``measure_note`` says why (and when a tree draft made α incomparable).
    measure: str = "accept_len"
    measure_note: str = ""
    before_per_token: float | None = None
    after_per_token: float | None = None
    #: The hash of the config of the run the finding is about (the agent fills it in), so
    #: alerts from hosts that rolled out one config group together.
    config_hash: str = ""
    #: A drop's estimated decode tokens lost since first seen (``detect.cost``), None if unknown.
    tokens_lost: float | None = None

    def changed_keys(self) -> list[str]:
        return self.diff.keys() if self.diff else []
