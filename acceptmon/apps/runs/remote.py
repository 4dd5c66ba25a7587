"""``acceptmon runs --from URL``: a running agent's runs (``/api/runs``) and verdicts
(``/api/verdict``), printed by the same renderer as a log's, so the CLI and the agent agree on
the change that opened each run.

Credentials: ``ACCEPTMON_API_TOKEN=USER:PASSWORD`` (or ``https://USER:PASSWORD@host``) is sent
as HTTP basic auth, what an agent with ``basic_auth_users`` in its web config asks for. They
are never printed: every message names the URL without them.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from acceptmon.detect.runstats import RunStats
from acceptmon.detect.verdict import Verdict
from acceptmon.model import Run, SpecConfig
from acceptmon.text.printable import printable

#: Seconds to wait for the agent (it answers after catching up, bounded).
TIMEOUT = 30.0
#: Bytes read at most per answer: a wrong URL must not fill memory.
MAX_BYTES = 64 << 20


class RemoteError(Exception):
    """The agent could not be asked or its answer read (the message names no credential)."""


@dataclass(frozen=True, slots=True)
class Agent:
    url: str  # without credentials: what messages show
    auth: str | None  # the Authorization header value


def agent(url: str) -> Agent:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RemoteError(f"--from wants http(s)://host:port of an agent, not {_shown(url)!r}")
    creds = os.environ.get("ACCEPTMON_API_TOKEN") or ""
    if parts.username is not None:
        creds = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc += f":{parts.port}" if parts.port else ""
    bare = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    auth = "Basic " + base64.b64encode(creds.encode()).decode() if creds else None
    return Agent(bare, auth)


def _shown(url: str) -> str:
    """``url`` without any ``user:password@`` (for messages)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def fetch(where: Agent, path: str, sources: list[str]) -> Any:
    """``path``'s JSON, kept to ``sources`` (all when empty)."""
    query = urllib.parse.urlencode([("source", s) for s in sources])
    request = urllib.request.Request(where.url + path + (f"?{query}" if query else ""))
    if where.auth:
        request.add_header("Authorization", where.auth)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            body = answer.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        hint = " (set ACCEPTMON_API_TOKEN=USER:PASSWORD)" if exc.code == 401 else ""
        raise RemoteError(f"{where.url}{path}: HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise RemoteError(f"cannot reach {where.url}: {reason}") from None
    if len(body) > MAX_BYTES:
        raise RemoteError(f"{where.url}{path}: answer larger than {MAX_BYTES >> 20} MiB")
    try:
        return json.loads(body)
    except ValueError:
        raise RemoteError(f"{where.url}{path}: not JSON (is this an acceptmon agent?)") from None


class RemoteRun(RunStats):
    """A row of ``/api/runs`` as the table renderer reads a run: its numbers and words as the
    agent computed them."""

    def __init__(self, row: dict[str, Any]) -> None:
        started = _time(row.get("started"))
        settings = {k: v for k, v in (row.get("settings") or {}).items() if k in _SPEC}
        run = Run(
            str(row.get("source")),
            str(row.get("run_id")),
            started,
            0,
            None,
            SpecConfig(**settings),
            kind=str(row.get("kind") or "start"),
            reason=str(row.get("reason") or ""),
        )
        lasted = row.get("duration_s")
        end = started + timedelta(seconds=lasted) if started and isinstance(lasted, int | float) else None
        super().__init__(run, last_ts=end)
        self.row = row

    @property
    def intervals(self) -> int:
        return int(self.row.get("intervals") or 0)

    def median(self) -> tuple[float, float, float] | None:
        m, ci = self.row.get("accept_len_median"), self.row.get("accept_len_ci")
        return None if m is None or not ci else (float(m), float(ci[0]), float(ci[1]))

    def accept_rate(self) -> float | None:
        rate = self.row.get("accept_rate")
        return None if rate is None else float(rate)

    def change(self) -> str:
        return str(self.row.get("change") or "unknown (the agent did not say)")


_SPEC = ("algorithm", "num_steps", "eagle_topk", "num_draft_tokens", "draft_model_path")


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class SaidVerdict(Verdict):
    """``/api/verdict``'s verdict, in its own words (the agent's, cost included)."""

    said: str = ""

    def words(self) -> str:
        return self.said


def said_verdict(doc: Any) -> SaidVerdict | None:
    if not isinstance(doc, dict):
        return None
    ci = doc.get("relative_change_ci")
    return SaidVerdict(
        state=doc.get("state") or "insufficient",
        run_id=str(doc.get("run_id")),
        against_run_id=doc.get("against_run_id"),
        relative_change=doc.get("relative_change"),
        interval=(ci[0], ci[1]) if isinstance(ci, list) and len(ci) == 2 else None,
        p_value=doc.get("p_value"),
        needs_more=int(doc.get("needs_more_intervals") or 0),
        good=said_verdict(doc.get("against_last_good")),
        said=str(doc.get("words") or ""),
    )


def main(url: str, sources: list[str], fmt: str) -> int:
    """Print the agent's runs and verdicts as ``acceptmon runs`` prints a log's; the exit status
    as for logs (3 worse somewhere, 2 the agent could not be asked)."""
    from acceptmon.apps.runs import BAD_SOURCE, WORSE, fleet
    from acceptmon.detect import table as render

    try:
        where = agent(url)
        rows, verdicts = fetch(where, "/api/runs", sources), fetch(where, "/api/verdict", sources)
        if not isinstance(rows, list) or not isinstance(verdicts, list):
            raise RemoteError(
                f"{where.url}: /api/runs or /api/verdict is not a list (is this an acceptmon agent?)"
            )
        runs: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            runs.setdefault(str(row["source"]), []).append(row)
        said = {str(v["source"]): v.get("verdict") for v in verdicts}
    except (RemoteError, KeyError, TypeError) as exc:
        message = str(exc) if isinstance(exc, RemoteError) else f"{_shown(url)}: unexpected answer"
        print(f"acceptmon: {printable(message)}", file=sys.stderr)
        return BAD_SOURCE
    names = sorted({*runs, *said})
    if fmt == "json":
        doc = [{"source": n, "runs": runs.get(n, []), "verdict": said.get(n)} for n in names]
        print(json.dumps({"sources": doc, "fleet": fleet.as_json([])}, indent=2, allow_nan=False))
    else:
        blocks = [
            render.plain(n, [RemoteRun(r) for r in runs.get(n, [])], said_verdict(said.get(n)), [])
            for n in names
        ]
        print("\n\n".join(blocks) if blocks else f"{where.url}: the agent follows no source yet")
    worse = any(isinstance(v, dict) and v.get("state") == "worse" for v in said.values())
    return WORSE if worse else 0
