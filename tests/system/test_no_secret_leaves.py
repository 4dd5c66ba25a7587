"""No secret from the inference server's start line leaves acceptmon, by any output.

Secrets are planted in every place a real ``server_args`` carries them (API
keys, a key-file password, an HF token inside a JSON argument, a URL with
``user:pass@``, a bearer token) plus the Slack webhook URL, on a log whose
second run drops after a config change that also rotated the API key. Then
every output is searched: ``oneshot`` in each format, the live agent's HTTP
routes, every file in its state directory and its log, and the bodies the
fake Slack and webhook receivers got. Failures name the output, never the
secret.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.slack_server import FakeSlack
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]

SECRETS = {
    "api_key": "sk-live-PLANTEDapikey0001",
    "api_key_rotated": "sk-live-PLANTEDapikey0002",
    "admin_api_key": "PLANTEDadminKey-93af",
    "ssl_keyfile_password": "PLANTEDkeyfilePass!7",
    "hf_token": "hf_PLANTEDhfTokenAbCdEf123",
    "url_password": "PLANTEDurlPass55",
    "bearer": "PLANTEDbearerTok9876",
}


def _args(api_key: str, steps: int) -> dict[str, object]:
    return {
        "api_key": api_key,
        "admin_api_key": SECRETS["admin_api_key"],
        "ssl_keyfile": "/etc/ssl/private/server.key",
        "ssl_keyfile_password": SECRETS["ssl_keyfile_password"],
        "json_model_override_args": json.dumps({"hf_token": SECRETS["hf_token"], "rope_scaling": None}),
        "tokenizer_path": f"https://svc:{SECRETS['url_password']}@models.internal/qwen3",
        "custom_headers": f"Authorization: Bearer {SECRETS['bearer']}",
        "download_dir": f"/cache/{SECRETS['hf_token']}",
        "speculative_num_steps": steps,
        "speculative_num_draft_tokens": steps + 1,
    }


def _log(path: Path, *, change_steps: bool) -> None:
    """Run 1 at ~47%, run 2 at ~19% with the API key rotated (and, if asked, the draft length)."""
    rng = random.Random(11)
    start = datetime.now() - timedelta(hours=3)
    lines = synth.startup(start, 1, **_args(SECRETS["api_key"], 3))
    lines += synth.traffic(rng, start + timedelta(seconds=50), 120, 2.41)
    lines += synth.shutdown(start + timedelta(hours=1))
    second = start + timedelta(hours=1, minutes=5)
    steps = 5 if change_steps else 3
    lines += synth.startup(second, 2, **_args(SECRETS["api_key_rotated"], steps))
    lines += synth.traffic(rng, second + timedelta(seconds=50), 120, 1.57)
    path.write_text("\n".join(lines) + "\n")


def _leaks(what: str, text: str, extra: tuple[str, ...] = ()) -> list[str]:
    found = [name for name, value in SECRETS.items() if value in text]
    found += [f"extra secret {i}" for i, value in enumerate(extra) if value in text]
    return [f"{what}: {name}" for name in found]


def _oneshot(log: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acceptmon", "oneshot", "--format", fmt, str(log)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_planted_secret_in_any_output(tmp_path: Path) -> None:
    changed, rotated_only = tmp_path / "changed.log", tmp_path / "rotated-only.log"
    _log(changed, change_steps=True)
    _log(rotated_only, change_steps=False)
    leaks: list[str] = []
    searched: list[str] = []

    for fmt in ("prom", "jsonl", "findings"):
        done = _oneshot(changed, fmt)
        assert done.returncode == 0, f"oneshot --format {fmt} failed (exit {done.returncode})"
        leaks += _leaks(f"oneshot {fmt} stdout", done.stdout) + _leaks(f"oneshot {fmt} stderr", done.stderr)
        searched.append(f"oneshot --format {fmt}")
    findings = [json.loads(line) for line in _oneshot(changed, "findings").stdout.splitlines() if line]
    drops = [f for f in findings if f["rule"] == "acceptance_drop_after_change"]
    assert drops, "the scenario must raise a drop so findings and alerts carry content"
    assert all("args.api_key" not in json.dumps(f.get("changed_keys", [])) for f in drops)
    assert any("args.speculative_num_steps" in json.dumps(f) for f in drops)
    rotated = [json.loads(line) for line in _oneshot(rotated_only, "findings").stdout.splitlines() if line]
    for f in rotated:  # rotating a key is never named as the cause of a drop
        assert "api_key" not in json.dumps(f.get("changed_keys", [])) and "api_key" not in f["summary"]

    with FakeSlack() as slack, FakeSlack() as hook:
        settings = tmp_path / "acceptmon.yaml"
        settings.write_text(
            "notify:\n"
            "  slack:\n    webhook_url_env: ACCEPTMON_TEST_SLACK\n    allow_insecure_localhost: true\n"
            "  webhook:\n    url_env: ACCEPTMON_TEST_HOOK\n    allow_insecure_localhost: true\n"
        )
        env = {"ACCEPTMON_TEST_SLACK": slack.url, "ACCEPTMON_TEST_HOOK": hook.url}
        agent = AgentProcess(
            tmp_path / "state", ["--config", str(settings), str(changed), str(rotated_only)], env=env
        )
        try:
            wait_for(lambda: slack.count() > 0 and hook.count() > 0, 60, "no alert reached the receivers")
            wait_for(
                lambda: "acceptance_drop_after_change" in (agent.get("/api/findings") or ""),
                30,
                "the agent raised no drop",
            )
            run_ids = sorted({r["run_id"] for r in json.loads(agent.get("/api/runs") or "[]")})
            details = [f"/api/runs/{run_id}" for run_id in run_ids]
            assert details, "no runs to search"
            for route in ("/metrics", "/healthz", "/api/findings", "/api/runs", "/api/verdict", *details):
                body = agent.get(route)
                assert body, f"{route} answered nothing"
                leaks += _leaks(f"agent {route}", body, (slack.token, hook.token))
                searched.append(f"agent {route}")
            bodies = [json.dumps(r.body) for r in [*slack.requests, *hook.requests]]
            leaks += _leaks("Slack/webhook payloads", "\n".join(bodies), (slack.token, hook.token))
            searched.append(f"{len(bodies)} Slack/webhook payloads")
        finally:
            agent.stop()
        files = [p for p in (tmp_path / "state").rglob("*") if p.is_file()]
        assert files, "the agent wrote no state"
        for p in files:
            leaks += _leaks(f"state file {p.name}", p.read_bytes().decode("utf-8", "replace"), (slack.token,))
        searched.append(f"{len(files)} state files")
        leaks += _leaks("agent log", agent.stderr(), (slack.token, hook.token))
        searched.append("agent log")
    assert not leaks, f"secrets leaked (searched {', '.join(searched)}): {leaks}"
    assert os.environ.get("ACCEPTMON_TEST_SLACK") is None  # the env of this process stayed clean
