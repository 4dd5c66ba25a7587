"""Issue 19 item 2: every credential shape a start line carries is redacted, wherever it sits.

Each case plants a secret in one shape and checks that it is gone and that what an engineer
needs in a diff (model paths, layer ids, numbers) is still there.
"""

from __future__ import annotations

import json

import pytest

from acceptmon.model import Meta, ServerStart
from acceptmon.parse.sglang import parse_server_args
from acceptmon.parse.vllm import NON_DEFAULT, parse_start
from acceptmon.runs import diff, snapshot
from acceptmon.text import redact

S3 = (
    "https://models.s3.amazonaws.com/qwen3/model.safetensors?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F{day}%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date={day}T000000Z"
    "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}"
)
GCS = (
    "https://storage.googleapis.com/b/draft.bin?X-Goog-Algorithm=GOOG4-RSA-SHA256"
    "&X-Goog-Credential=svc%40proj.iam.gserviceaccount.com%2F{day}&X-Goog-Date={day}T0000Z&X-Goog-Signature={sig}"
)
AZURE = (
    "https://acct.blob.core.windows.net/m/w.bin?sv=2022-11-02&ss=b&srt=o&sp=r&se={day}T01:00:00Z&sig={sig}"
)

# (value, secret) per shape; the secret must not survive, the rest of the value may.
SHAPES = [
    (
        S3.format(day="20261203", sig="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
        "9f86d0818",
    ),
    (S3.format(day="20261203", sig="0"), "AKIAIOSFODNN7EXAMPLE"),
    (GCS.format(day="20261203", sig="5a1b2c3d4e5f60718293a4b5c6d7e8f9"), "5a1b2c3d4e5f6071"),
    (AZURE.format(day="2026-12-03", sig="PLANTEDazSig%2Bab%3D"), "PLANTEDazSig"),
    ("https://mirror.internal/qwen3?token=PLANTEDqueryTok", "PLANTEDqueryTok"),
    ("https://mirror.internal/qwen3?apikey=PLANTEDqueryKey&rev=2", "PLANTEDqueryKey"),
    ("https://mirror.internal/qwen3?access_token=PLANTEDaccess", "PLANTEDaccess"),
    ("https://mirror.internal/qwen3?sig=PLANTEDsig", "PLANTEDsig"),
    ("sv=2022-11-02&sp=r&sig=PLANTEDbareSas", "PLANTEDbareSas"),
    ("Authorization: Basic UExBTlRFRDpiYXNpYw==", "UExBTlRFRDpiYXNpYw"),
    ("Authorization: Bearer PLANTEDbearer1", "PLANTEDbearer1"),
    ("Proxy-Authorization: Basic UExBTlRFRHByb3h5", "UExBTlRFRHByb3h5"),
    ('{"Authorization": "Basic UExBTlRFRGpzb24="}', "UExBTlRFRGpzb24"),
    ("{'Authorization': 'Basic UExBTlRFRHJlcHI='}", "UExBTlRFRHJlcHI"),
    ("Cookie: session=PLANTEDcookie; theme=dark", "PLANTEDcookie"),
    ("Set-Cookie: sid=PLANTEDsetcookie; Path=/", "PLANTEDsetcookie"),
    ("passphrase=PLANTEDphrase", "PLANTEDphrase"),
    ("ssl passphrase: PLANTEDphrase2", "PLANTEDphrase2"),
    ("env HF_TOKEN=PLANTEDplainHf python -m sglang", "PLANTEDplainHf"),
    ("OPENAI_API_KEY=PLANTEDopenai", "PLANTEDopenai"),
    ("MY_SERVICE_SECRET=PLANTEDsvcSecret,OTHER=1", "PLANTEDsvcSecret"),
    ("DB_PASSWORD='PLANTED db pass'", "PLANTED db pass"),
    ("--api-key PLANTEDflagKey --tp 2", "PLANTEDflagKey"),
    ("--hf-token=PLANTEDflagHf", "PLANTEDflagHf"),
    ("https://svc:PLANTEDurlPw@mirror/q", "PLANTEDurlPw"),
    ("/cache/hf_PLANTEDhfToken01/x", "hf_PLANTEDhfToken01"),
    ("sk-PLANTEDopenaiKey1", "sk-PLANTEDopenaiKey1"),
    ("ghp_PLANTEDgithubTok1", "ghp_PLANTEDgithubTok1"),
    ("xoxb-PLANTED-slack-bot1", "xoxb-PLANTED-slack-bot1"),
    ("xoxp-PLANTED-slack-usr1", "xoxp-PLANTED-slack-usr1"),
    ("ASIAPLANTEDAWSKEY123", "ASIAPLANTEDAWSKEY123"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PLANTEDjwtSig", "PLANTEDjwtSig"),
    ("/data/YkZdZmuPBxStDzmGHslOXg9qR4/x", "YkZdZmuPBxStDzmGHslOXg9qR4"),  # base64-ish blob
    ("seed blob 6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b", "6b86b273ff34fce1"),
    ("wJalrXUtnFEMIK7MDENGbPxRfiCY+8q2/Zx9T1vW", "wJalrXUtnFEMIK7MDENGbPxRfiCY"),
]


@pytest.mark.parametrize(("value", "secret"), SHAPES, ids=[s for _, s in SHAPES])
def test_each_shape_is_redacted_inside_any_value(value: str, secret: str) -> None:
    out = redact.redact_args({"extra_args": value, "nested": {"list": [value]}})
    assert secret not in json.dumps(out) and redact.is_redacted(out["extra_args"])
    assert redact.redact_args(out) == out  # idempotent: a second pass changes nothing


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("passphrase", "PLANTEDp"),
        ("ssl_keyfile_passphrase", "PLANTEDp"),
        ("cookie", "a=PLANTEDc"),
        ("set-cookie", "a=PLANTEDc"),
        ("Authorization", "Basic PLANTEDb"),
        ("X-Amz-Signature", "PLANTEDs"),
        ("azure_sas", "sv=1&sig=PLANTEDs"),
        ("api_key", 123456789),  # a number under a secret key is a secret too
    ],
)
def test_secret_keys(key: str, value: object) -> None:
    out = redact.redact_args({key: value})
    assert redact.is_redacted(out[key]) and "PLANTED" not in json.dumps(out)


def test_sglang_server_args_repr_with_json_override() -> None:
    override = json.dumps(
        {
            "rope_scaling": {"type": "yarn", "factor": 4.0},
            "hf_token": "PLANTEDinnerTok",
            "cookie": "sid=PLANTEDck",
            "eagle_layers": [1, 19, 38],
        }
    )
    text = (
        "server_args=ServerArgs(model_path='/models/Qwen3-32B', api_key='PLANTEDapi', tp_size=4, "
        f"json_model_override_args={override!r}, speculative_num_steps=3, "
        "tokenizer_path='https://x:PLANTEDtokPw@mirror/q', ssl_keyfile_passphrase='PLANTEDphr', "
        "draft_url='https://s3/d.bin?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F1&X-Amz-Signature=PLANTEDs1', revision='9f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c')"
    )
    record = parse_server_args(text, Meta("s", 1, None))
    assert isinstance(record, ServerStart)
    args = record.args
    assert "PLANTED" not in json.dumps(args)
    inner = json.loads(args["json_model_override_args"])
    assert inner["rope_scaling"] == {"type": "yarn", "factor": 4.0} and inner["eagle_layers"] == [1, 19, 38]
    assert args["model_path"] == "/models/Qwen3-32B" and args["tp_size"] == 4
    assert args["revision"] == "9f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c"  # a revision is config identity


def test_vllm_non_default_args_dict() -> None:
    body = (
        " {'model': 'meta-llama/Llama-3.1-8B-Instruct', 'api_key': ['PLANTEDvllmKey'], "
        "'hf_overrides': {'hf_token': 'PLANTEDhfo'}, 'download_dir': '/cache/hf_PLANTEDdownload1', "
        "'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3, "
        "'model': 'https://s3/d.bin?X-Amz-Signature=PLANTEDsig&X-Amz-Date=1'}, 'max_model_len': 32768}"
    )
    record = parse_start(NON_DEFAULT, body, Meta("v", 1, None))
    assert isinstance(record, ServerStart)
    assert "PLANTED" not in json.dumps(record.args)
    assert (
        record.args["model"] == "meta-llama/Llama-3.1-8B-Instruct" and record.args["max_model_len"] == 32768
    )
    assert record.args["speculative_config"]["num_speculative_tokens"] == 3


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("model_path", "/models/Qwen3-Coder-480B-A35B-Instruct-FP8"),
        ("speculative_draft_model_path", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"),
        ("architectures", ["LlamaForCausalLMEagle3", "DeepseekV3ForCausalLMNextN"]),
        ("revision", "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"),
        (
            "sha256",
            "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
        ),  # a watched file's digest
        (
            "model_path",
            "/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/9f1c2d3e4f5a6b7c8d9e0f1a",
        ),
        ("eagle_aux_hidden_state_layer_ids", [1, 23, 44]),
        ("random_seed", 123456789012345678),
        ("attention_backend", "flashinfer_trtllm_mla"),
        ("served_model_name", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"),
        ("tokenizer_path", "https://mirror.internal/qwen3?revision=main"),
    ],
)
def test_what_an_engineer_needs_stays_visible(key: str, value: object) -> None:
    assert redact.redact_args({key: value}) == {key: value}


def test_a_resigned_url_is_no_change() -> None:
    """Presigned URLs are signed anew at each start: two starts differ only in the signature."""
    for shape in (S3, GCS, AZURE):
        a = snapshot({"model_path": shape.format(day="20261203", sig="aa11bb22cc33dd44")}, None)
        b = snapshot({"model_path": shape.format(day="20261204", sig="ee55ff66aa77bb88")}, None)
        assert not diff(a, b), shape
        assert "amazonaws.com/qwen3/model.safetensors?" in json.dumps(a.server_args) or "s3" not in shape
