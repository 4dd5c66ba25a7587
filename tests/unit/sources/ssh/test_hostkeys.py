"""Strict host key checking: fingerprints, unknown, changed, accept-new."""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest

from acceptmon.sources.ssh.hostkeys import (
    HostKeyPolicy,
    HostKeyRefused,
    check_host_key,
    fingerprint,
    known_name,
    preferred_algorithms,
)

# A public key and what `ssh-keygen -lf` printed for it.
ED25519 = "AAAAC3NzaC1lZDI1NTE5AAAAIGLUtcQrk6R91og+8cg4Y0puuDanPQKMN8GUbaLVVHRq"
ED25519_FP = "SHA256:tpXGYTsjIhtEV9gdslJ3m+LT5ZMvYUDnSC21Mffgd8k"


def ed25519() -> paramiko.PKey:
    return paramiko.PKey.from_type_string("ssh-ed25519", paramiko.message.Message(_b64(ED25519)).asbytes())


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def test_fingerprint_is_openssh_style() -> None:
    assert fingerprint(ed25519()) == ED25519_FP


def test_known_name_brackets_non_default_ports() -> None:
    assert known_name("gpu1", 22) == "gpu1"
    assert known_name("10.0.0.5", 2222) == "[10.0.0.5]:2222"


def test_unknown_key_is_refused_with_fingerprint_and_fix(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    policy = HostKeyPolicy(str(known))
    with pytest.raises(HostKeyRefused) as err:
        check_host_key(policy, "gpu1", 2222, ed25519())
    text = str(err.value)
    assert ED25519_FP in text and "ssh-ed25519" in text
    assert f"ssh-keyscan -p 2222 -t ed25519 gpu1 >> {known}" in text
    assert not known.exists()


def test_accept_unknown_records_the_key_then_refuses_a_change(tmp_path: Path) -> None:
    known = tmp_path / "sub" / "known_hosts"
    policy = HostKeyPolicy(str(known), accept_unknown=True)
    assert check_host_key(policy, "gpu1", 22, ed25519()) is True
    assert known.read_text() == f"gpu1 ssh-ed25519 {ED25519}\n"
    assert check_host_key(policy, "gpu1", 22, ed25519()) is False
    other = paramiko.ECDSAKey.generate()
    with pytest.raises(HostKeyRefused, match="CHANGED") as err:
        check_host_key(policy, "gpu1", 22, other)
    assert fingerprint(other) in str(err.value) and ED25519_FP in str(err.value)
    assert "ssh-keygen -R gpu1" in str(err.value)


def test_preferred_algorithms_follow_known_key_types(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    rsa = paramiko.RSAKey.generate(1024)
    known.write_text(f"[h]:2200 ssh-rsa {rsa.get_base64()}\nh ssh-ed25519 {ED25519}\n")
    policy = HostKeyPolicy(str(known))
    assert preferred_algorithms(policy, "h", 2200) == ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")
    assert preferred_algorithms(policy, "h", 22) == ("ssh-ed25519",)
    assert preferred_algorithms(policy, "other", 22) == ()
