"""No secret from the inference server's start line leaves acceptmon, by any output.

Secrets are planted in every shape a real start line carries them (see ``SHAPES``): keys
named as secrets, credentials inside URLs (``user:pass@``, presigned S3/GCS/Azure queries,
``token=``/``apikey=``/``access_token=``), ``Authorization``/``Cookie`` headers, ``NAME=value``
environment text, ``--flag value``, well-known token prefixes, JSON inside a string
(``json_model_override_args``), high-entropy blobs, in SGLang's dict and ``ServerArgs(…)``
reprs and in vLLM's ``non-default args`` dict. The second run of each log drops after a config
change (or none), with the API key rotated and every presigned URL signed anew. Then every
output is searched (see ``OUTPUTS``). Failures name the output and the shape, never the secret.
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

from acceptmon.testing import changes, synth
from tests.support.agentproc import AgentProcess
from tests.support.slack_server import FakeSlack
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]

#: shape → the secret values planted in that shape (none may appear in any output).
SHAPES: dict[str, tuple[str, ...]] = {
    "api_key (secret key name)": ("sk-live-PLANTEDapikey0001", "sk-live-PLANTEDapikey0002"),
    "admin_api_key (plain value)": ("PLANTEDadminKey-93af",),
    "ssl_keyfile_password": ("PLANTEDkeyfilePass!7",),
    "passphrase key and passphrase= text": ("PLANTEDkeyPhrase", "PLANTEDtextPhrase"),
    "hf_ token in json_model_override_args and a path": ("hf_PLANTEDhfTokenAbCdEf123",),
    "URL user:password@": ("PLANTEDurlPass55",),
    "Authorization: Bearer": ("PLANTEDbearerTok9876",),
    "Authorization: Basic": ("UExBTlRFRDpiYXNpY1Bhc3M",),
    "Basic inside a JSON override": ("UExBTlRFRDpqc29uQmFzaWM",),
    "Cookie / Set-Cookie": ("PLANTEDcookieSess", "PLANTEDsetCookieSid"),
    "S3 presigned (X-Amz-Signature, X-Amz-Credential)": (
        "c0ffee00PLANTED5e1ab1e0000000000000000000000000000000000000000001",
        "c0ffee00PLANTED5e1ab1e0000000000000000000000000000000000000000002",
        "AKIAPLANTEDS3CRED123",
    ),
    "GCS presigned (X-Goog-Signature)": ("PLANTEDgoogSig0001", "PLANTEDgoogSig0002"),
    "Azure SAS (sv=…&sig=)": ("PLANTEDazureSig0001", "PLANTEDazureSig0002"),
    "query token= / apikey= / access_token=": ("PLANTEDqToken", "PLANTEDqApikey", "PLANTEDqAccess"),
    "HF_TOKEN= / *_API_KEY= / *_SECRET= / *_PASSWORD= text": (
        "PLANTEDenvHf",
        "PLANTEDenvOpenai",
        "PLANTEDenvSecret",
        "PLANTEDenvPassword",
    ),
    "--api-key flag in a command line": ("PLANTEDflagKey",),
    "token prefixes (ghp_, xoxb-, AKIA, JWT)": (
        "ghp_PLANTEDgithub0123",
        "xoxb-PLANTED-slack-0123",
        "AKIAPLANTEDAWSKEY123",
        "eyJhbGciOiJIUzI1NiJ9.eyJQTEFOVEVEIjoxfQ.PLANTEDjwtSignature",
    ),
    "high-entropy blobs (base64, hex)": (
        "YkZdZmuPBxStDzmGHslOXg9qR4",
        "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
    ),
    "vLLM non-default args (api_key, hf_overrides, presigned draft)": (
        "PLANTEDvllmKey0001",
        "PLANTEDvllmKey0002",
        "hf_PLANTEDvllmOverride",
        "PLANTEDvllmSig0001",
        "PLANTEDvllmSig0002",
    ),
}

#: Keys whose only change between the two starts is a re-signed URL: never a diff.
RESIGNED = (
    "args.download_url",
    "args.draft_download_url",
    "args.weights_sas_url",
    "args.speculative_config.model",
)


def _presigned(run: int) -> dict[str, str]:
    s3 = SHAPES["S3 presigned (X-Amz-Signature, X-Amz-Credential)"]
    gcs_sig = SHAPES["GCS presigned (X-Goog-Signature)"][run - 1]
    azure_sig = SHAPES["Azure SAS (sv=…&sig=)"][run - 1]
    day = f"2026120{run}"
    return {
        "download_url": (
            "https://models.s3.amazonaws.com/qwen3/model.safetensors?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Credential={s3[2]}%2F{day}%2Fus-east-1%2Fs3%2Faws4_request"
            f"&X-Amz-Date={day}T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s3[run - 1]}"
        ),
        "draft_download_url": (
            "https://storage.googleapis.com/drafts/eagle3.bin?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            f"&X-Goog-Credential=svc%40proj.iam.gserviceaccount.com%2F{day}&X-Goog-Date={day}T0000Z"
            f"&X-Goog-Signature={gcs_sig}"
        ),
        "weights_sas_url": (
            "https://acct.blob.core.windows.net/w/model.bin?sv=2022-11-02&ss=b&srt=o&sp=r"
            f"&se=2026-12-0{run}T01:00:00Z&sig={azure_sig}"
        ),
    }


def _args(run: int, steps: int) -> dict[str, object]:
    s = SHAPES
    override = {
        "hf_token": s["hf_ token in json_model_override_args and a path"][0],
        "rope_scaling": None,
        "headers": {"authorization": f"Basic {s['Basic inside a JSON override'][0]}=="},
    }
    return {
        "api_key": s["api_key (secret key name)"][run - 1],
        "admin_api_key": s["admin_api_key (plain value)"][0],
        "ssl_keyfile": "/etc/ssl/private/server.key",
        "ssl_keyfile_password": s["ssl_keyfile_password"][0],
        "ssl_keyfile_passphrase": s["passphrase key and passphrase= text"][0],
        "json_model_override_args": json.dumps(override),
        "tokenizer_path": f"https://svc:{s['URL user:password@'][0]}@models.internal/qwen3",
        "custom_headers": f"Authorization: Bearer {s['Authorization: Bearer'][0]}",
        "proxy_headers": f"Authorization: Basic {s['Authorization: Basic'][0]}=\nCookie: session={s['Cookie / Set-Cookie'][0]}",
        "response_headers": f"Set-Cookie: sid={s['Cookie / Set-Cookie'][1]}; Path=/",
        "download_dir": f"/cache/{s['hf_ token in json_model_override_args and a path'][0]}",
        **_presigned(run),
        "mirror_url": "https://mirror.internal/q?token={}&apikey={}&access_token={}".format(
            *s["query token= / apikey= / access_token="]
        ),
        "launcher_env": "HF_TOKEN={} OPENAI_API_KEY={} MY_SERVICE_SECRET={} DB_PASSWORD={} passphrase={}".format(
            *s["HF_TOKEN= / *_API_KEY= / *_SECRET= / *_PASSWORD= text"],
            s["passphrase key and passphrase= text"][1],
        ),
        "launch_command": f"python -m sglang.launch_server --api-key {s['--api-key flag in a command line'][0]}",
        "tags": list(s["token prefixes (ghp_, xoxb-, AKIA, JWT)"]),
        "cache_salt": s["high-entropy blobs (base64, hex)"][0],
        "build_blob": f"seed {s['high-entropy blobs (base64, hex)'][1]}",
        "speculative_num_steps": steps,
        "speculative_num_draft_tokens": steps + 1,
    }


def _repr_start(lines: list[str], ts: datetime, run: int, steps: int) -> list[str]:
    """The same start in SGLang ≤0.5.18's ``server_args=ServerArgs(k=v, …)`` form."""
    args = {**synth.BASE_ARGS, "random_seed": run, **_args(run, steps)}
    lines[0] = (
        f"[{synth.stamp(ts)}] server_args=ServerArgs("
        + ", ".join(f"{k}={v!r}" for k, v in args.items())
        + ")"
    )
    return lines


def _log(path: Path, *, change_steps: bool, repr_form: bool = False) -> None:
    """Run 1 at ~47%, run 2 at ~19%: the API key rotated, URLs re-signed (and, if asked, the draft length)."""
    rng = random.Random(11)
    start = datetime.now() - timedelta(hours=3)
    lines = synth.startup(start, 1, **_args(1, 3))
    if repr_form:
        lines = _repr_start(lines, start, 1, 3)
    lines += synth.traffic(rng, start + timedelta(seconds=50), 120, 2.41)
    lines += synth.shutdown(start + timedelta(hours=1))
    second = start + timedelta(hours=1, minutes=5)
    steps = 5 if change_steps else 3
    starts = synth.startup(second, 2, **_args(2, steps))
    lines += _repr_start(starts, second, 2, steps) if repr_form else starts
    lines += synth.traffic(rng, second + timedelta(seconds=50), 120, 1.57)
    path.write_text("\n".join(lines) + "\n")


def _vllm_log(path: Path) -> None:
    rng = random.Random(5)
    planted = SHAPES["vLLM non-default args (api_key, hf_overrides, presigned draft)"]
    start = datetime.now() - timedelta(hours=2)
    lines: list[str] = []
    for run, level in ((1, [0.8, 0.6, 0.45]), (2, [0.45, 0.25, 0.1])):
        ts = start + timedelta(minutes=40 * (run - 1))
        spec = {
            **changes.VLLM_ARGS["speculative_config"],
            "model": f"https://s3.amazonaws.com/d/eagle3?X-Amz-Date=2026120{run}&X-Amz-Signature={planted[2 + run]}",
        }
        lines.append(
            changes.non_default_args_line(
                ts, api_key=[planted[run - 1]], hf_overrides={"hf_token": planted[2]}, speculative_config=spec
            )
        )
        lines += changes.vllm_traffic(rng, ts + timedelta(seconds=30), 100, level)
    path.write_text("\n".join(lines) + "\n")


def _leaks(what: str, text: str, extra: tuple[str, ...] = ()) -> list[str]:
    found = [f"{what}: {shape}" for shape, values in SHAPES.items() if any(v in text for v in values)]
    return found + [f"{what}: extra secret {i}" for i, value in enumerate(extra) if value in text]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acceptmon", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _resigned_in(keys: object) -> list[str]:
    text = json.dumps(keys)
    return [k for k in RESIGNED if k in text]


def test_no_planted_secret_in_any_output(tmp_path: Path) -> None:
    changed, rotated_only, vllm = (
        tmp_path / "changed.log",
        tmp_path / "rotated-only.log",
        tmp_path / "vllm.log",
    )
    _log(changed, change_steps=True)
    _log(rotated_only, change_steps=False, repr_form=True)
    _vllm_log(vllm)
    logs = [str(changed), str(rotated_only), str(vllm)]
    leaks: list[str] = []
    searched: list[str] = []

    def search(what: str, text: str, extra: tuple[str, ...] = ()) -> None:
        nonlocal leaks
        leaks += _leaks(what, text, extra)
        searched.append(what)

    for log in logs:
        for fmt in ("prom", "jsonl", "findings"):
            done = _cli("oneshot", "--format", fmt, log)
            assert done.returncode == 0, f"oneshot --format {fmt} failed (exit {done.returncode})"
            search(f"oneshot --format {fmt} {Path(log).name}", done.stdout + done.stderr)
    findings = [
        json.loads(line) for line in _cli("oneshot", "--format", "findings", str(changed)).stdout.splitlines()
    ]
    drops = [f for f in findings if f["rule"] == "acceptance_drop_after_change"]
    assert drops, "the scenario must raise a drop so findings and alerts carry content"
    assert all("args.api_key" not in json.dumps(f.get("changed_keys", [])) for f in drops)
    assert any("args.speculative_num_steps" in json.dumps(f) for f in drops)
    resigned = [f"oneshot drop names {k}" for f in drops for k in _resigned_in(f.get("changed_keys", []))]
    rotated = [
        json.loads(line)
        for line in _cli("oneshot", "--format", "findings", str(rotated_only)).stdout.splitlines()
    ]
    for f in rotated:  # rotating a key or re-signing a URL is never named as the cause of a drop
        assert "api_key" not in json.dumps(f.get("changed_keys", [])) and "api_key" not in f["summary"]
        resigned += [
            f"oneshot finding names {k}" for k in _resigned_in([f.get("changed_keys"), f["summary"]])
        ]

    table, as_json = _cli("runs", *logs), _cli("runs", "--format", "json", *logs)
    assert table.returncode in (0, 3) and as_json.returncode in (0, 3), (table.stderr, as_json.stderr)
    search("runs (table)", table.stdout + table.stderr)
    search("runs --format json", as_json.stdout + as_json.stderr)
    assert "args.speculative_num_steps" in as_json.stdout, "runs must show the real change"
    resigned += [f"runs --format json shows {k} changed" for k in _resigned_in(as_json.stdout)]

    report = _cli("report", "-o", str(tmp_path / "report.html"), *logs)
    assert report.returncode == 0, f"report failed (exit {report.returncode}): {report.stderr[-500:]}"
    search(
        "report HTML", (tmp_path / "report.html").read_text(errors="replace") + report.stdout + report.stderr
    )

    backfill = _cli("backfill", "--out", str(tmp_path / "backfill"), *logs)
    assert backfill.returncode in (0, 3), (
        f"backfill failed (exit {backfill.returncode}): {backfill.stderr[-500:]}"
    )
    written = _files(tmp_path / "backfill")
    assert written, "backfill wrote nothing"
    search(f"backfill output ({len(written)} files) and its stdout/stderr", backfill.stdout + backfill.stderr)
    for p in written:
        leaks += _leaks(f"backfill file {p.name}", p.read_bytes().decode("latin-1"))

    code = (
        "import json, sys, acceptmon\n"
        "logs = sys.argv[1:]\n"
        "for df in (acceptmon.read_log(logs), acceptmon.read_runs(logs)):\n"
        "    print(json.dumps(df.astype(str).to_dict(orient='records')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *logs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"read_log/read_runs failed: {done.stderr[-500:]}"
    search("read_log/read_runs frames", done.stdout + done.stderr)

    with FakeSlack() as slack, FakeSlack() as hook:
        settings = tmp_path / "acceptmon.yaml"
        settings.write_text(
            "notify:\n"
            "  slack:\n    webhook_url_env: ACCEPTMON_TEST_SLACK\n    allow_insecure_localhost: true\n"
            "  webhook:\n    url_env: ACCEPTMON_TEST_HOOK\n    allow_insecure_localhost: true\n"
        )
        env = {"ACCEPTMON_TEST_SLACK": slack.url, "ACCEPTMON_TEST_HOOK": hook.url}
        agent = AgentProcess(tmp_path / "state", ["--config", str(settings), *logs], env=env)
        tokens = (slack.token, hook.token)
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
                search(f"agent {route}", body, tokens)
            bodies = [json.dumps(r.body) for r in [*slack.requests, *hook.requests]]
            search(f"{len(slack.requests)} Slack payloads", "\n".join(bodies[: len(slack.requests)]), tokens)
            search(f"{len(hook.requests)} webhook payloads", "\n".join(bodies[len(slack.requests) :]), tokens)
            resigned += [f"agent /api/findings names {k}" for k in _resigned_in(agent.get("/api/findings"))]
        finally:
            agent.stop()
        files = _files(tmp_path / "state")
        assert files, "the agent wrote no state"
        for p in files:
            leaks += _leaks(f"state file {p.name}", p.read_bytes().decode("latin-1"), tokens)
        searched.append(f"{len(files)} state files")
        search("agent log (stderr)", agent.stderr(), tokens)
    print(
        f"searched {len(searched)} outputs for {sum(map(len, SHAPES.values()))} secrets in {len(SHAPES)} shapes:"
    )
    print("\n".join(f"  shape: {s}" for s in SHAPES) + "\n" + "\n".join(f"  output: {o}" for o in searched))
    assert not leaks, f"secrets leaked (searched {', '.join(searched)}): {leaks}"
    assert not resigned, f"a URL signed anew at a start shows as a config change: {resigned}"
    assert os.environ.get("ACCEPTMON_TEST_SLACK") is None  # the env of this process stayed clean
