"""SSHSource against a real OpenSSH sshd on loopback (see sshd.py)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.remote import read_remote_file
from acceptmon.sources.ssh.worker import HostPool
from tests.support.sshd import SSHServer, keygen, sshd, sshd_stopped
from tests.support.wait import wait_for

pytestmark = pytest.mark.system
__all__ = ["sshd", "sshd_stopped"]  # fixtures, imported for pytest

WRITER = Path(__file__).with_name("ssh_log_writer.py")
SEQ = re.compile(r"seq=(\d+)$")


class Reader:
    """Polls a source like the pipeline does: take chunks, process, commit."""

    def __init__(self, source: SSHSource) -> None:
        self.source = source
        self.lines: list[str] = []

    def numbers(self) -> list[int]:
        return [int(m.group(1)) for line in self.lines if (m := SEQ.search(line))]

    def pump(self, until: Callable[[], bool], timeout: float, what: str) -> None:
        def step() -> bool:
            for chunk in self.source.poll():
                self.lines.extend(chunk.lines)
                self.source.commit(chunk)
            return until()

        wait_for(step, timeout, what, interval=0.01)


@pytest.fixture
def pool() -> Iterator[HostPool]:
    yield HostPool()


@pytest.fixture
def sources() -> Iterator[list[SSHSource]]:
    made: list[SSHSource] = []
    yield made
    for s in made:
        s.close()


def open_source(
    made: list[SSHSource], server: SSHServer, path: Path, pool: HostPool, **kw: object
) -> SSHSource:
    host = kw.pop("host", "testhost")
    src = SSHSource(f"src{len(made)}", f"ssh://{host}{path}", server.settings(**kw), pool=pool)
    made.append(src)
    return src


def append(path: Path, *lines: str) -> None:
    with open(path, "a") as f:
        f.write("".join(f"{line}\n" for line in lines))


def test_appended_lines_arrive_within_a_second(sshd: SSHServer, tmp_path: Path, pool, sources) -> None:
    log = tmp_path / "server.log"
    append(log, "a", "b")
    reader = Reader(open_source(sources, sshd, log, pool, poll_interval=0.5))
    reader.pump(lambda: reader.lines == ["a", "b"], 10, "the first lines")
    for i in range(3):
        append(log, f"late {i}")
        t0 = time.monotonic()
        reader.pump(lambda i=i: reader.lines[-1:] == [f"late {i}"], 5, "an appended line")
        assert time.monotonic() - t0 <= 1.0
    assert reader.source.health().up


def test_no_loss_no_duplicates_across_20_cuts_and_rotations(
    sshd: SSHServer, tmp_path: Path, pool, sources
) -> None:
    log, stop, count = tmp_path / "decode.log", tmp_path / "stop", tmp_path / "count"
    writer = subprocess.Popen([sys.executable, str(WRITER), str(log), str(stop), str(count), "300", "250"])
    try:
        wait_for(log.exists, 10, "the writer's log")
        src = open_source(sources, sshd, log, pool)
        reader = Reader(src)
        for cut in range(20):
            seen = len(reader.lines)
            reader.pump(lambda seen=seen: len(reader.lines) >= seen + 120, 20, f"progress before cut {cut}")
            if cut % 5 == 4:
                sshd.restart()
            else:
                assert sshd.kill_connections() > 0
        stop.touch()
        assert writer.wait(20) == 0
    finally:
        stop.touch()
        if writer.poll() is None:
            writer.kill()
    written = int(count.read_text())
    reader.pump(lambda: len(reader.lines) >= written, 30, f"all {written} lines")
    got = reader.numbers()
    assert len(got) == len(set(got)), "duplicates"
    assert set(got) == set(range(1, written + 1))
    health = src.health()
    errors = dict(health.errors)
    assert health.rotations >= written // 250 // 2  # several rotations may pass during one cut
    assert errors.get("io", 0) >= 20


def test_checkpoint_restore_resumes_exactly_across_rotation(sshd: SSHServer, tmp_path, pool, sources) -> None:
    log = tmp_path / "app.log"
    append(log, *(f"seq={i}" for i in range(1, 51)))
    first = Reader(open_source(sources, sshd, log, pool))
    first.pump(lambda: len(first.lines) == 50, 10, "50 lines")
    state = first.source.checkpoint()
    first.source.close()
    append(log, *(f"seq={i}" for i in range(51, 61)))
    log.rename(tmp_path / "app.log.1")  # rotated while the agent was down
    append(log, *(f"seq={i}" for i in range(61, 71)))
    second_src = open_source(sources, sshd, log, pool)
    second_src.restore(state)
    second = Reader(second_src)
    second.pump(lambda: len(second.lines) >= 20, 10, "the 20 new lines")
    assert second.numbers() == list(range(51, 71))
    assert second_src.checkpoint()["files"][str(log)]["streams"][-1]["offset"] == log.stat().st_size


def test_unknown_host_key_is_refused_with_its_fingerprint(sshd: SSHServer, tmp_path, pool, sources) -> None:
    sshd.known_hosts.write_text("")
    src = open_source(sources, sshd, tmp_path / "x.log", pool)
    src.poll()
    wait_for(lambda: dict(src.health().errors).get("host_key", 0) > 0, 10, "a host_key error")
    health = src.health()
    assert not health.up
    assert sshd.fingerprint in health.last_error
    assert "ssh-keyscan -p" in health.last_error and str(sshd.known_hosts) in health.last_error
    assert sshd.known_hosts.read_text() == ""


def test_unknown_host_key_accepted_only_when_configured(sshd: SSHServer, tmp_path, pool, sources) -> None:
    sshd.known_hosts.write_text("")
    log = tmp_path / "x.log"
    append(log, "hello")
    reader = Reader(open_source(sources, sshd, log, pool, accept_unknown_host_key=True))
    reader.pump(lambda: reader.lines == ["hello"], 10, "a line after trusting the new key")
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in sshd.known_hosts.read_text()


def test_changed_host_key_is_refused_even_when_accepting_unknown(
    sshd: SSHServer, tmp_path, pool, sources
) -> None:
    other = keygen(tmp_path / "other_host_key")
    key = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {key}\n")
    src = open_source(sources, sshd, tmp_path / "x.log", pool, accept_unknown_host_key=True)
    src.poll()
    wait_for(lambda: dict(src.health().errors).get("host_key", 0) > 0, 10, "a host_key error")
    assert "CHANGED" in src.health().last_error and sshd.fingerprint in src.health().last_error


def test_wrong_client_key_is_an_auth_error(sshd: SSHServer, tmp_path, pool, sources) -> None:
    wrong = keygen(tmp_path / "wrong_key")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(sshd.ssh_config.read_text().replace(str(sshd.client_key), str(wrong)))
    src = open_source(sources, sshd, tmp_path / "x.log", pool, ssh_config=str(cfg))
    src.poll()
    wait_for(lambda: dict(src.health().errors).get("auth", 0) > 0, 10, "an auth error")
    assert not src.health().up
    assert "BEGIN" not in src.health().last_error


def test_unreachable_then_recovers(sshd_stopped: SSHServer, tmp_path, pool, sources) -> None:
    log = tmp_path / "late.log"
    append(log, "first")
    src = open_source(sources, sshd_stopped, log, pool)
    reader = Reader(src)
    reader.pump(lambda: dict(src.health().errors).get("unreachable", 0) >= 2, 10, "unreachable errors")
    assert not src.health().up
    sshd_stopped.start()
    reader.pump(lambda: reader.lines == ["first"], 15, "lines once the server is back")
    assert src.health().up


def test_dead_host_does_not_delay_a_live_one(sshd: SSHServer, tmp_path, pool, sources) -> None:
    with socket.socket() as blackhole:  # accepts TCP, never says a word
        blackhole.bind(("127.0.0.1", 0))
        blackhole.listen(8)
        dead = open_source(
            sources,
            sshd,
            tmp_path / "d.log",
            pool,
            host=f"127.0.0.1:{blackhole.getsockname()[1]}",
            connect_timeout=2.0,
        )
        dead.poll()
        log = tmp_path / "live.log"
        append(log, "x")
        live = Reader(open_source(sources, sshd, log, pool))
        live.pump(lambda: live.lines == ["x"], 10, "the live host's line")
        append(log, "y")
        t0 = time.monotonic()
        live.pump(lambda: live.lines == ["x", "y"], 5, "the next line")
        assert time.monotonic() - t0 <= 1.0
        assert not dead.health().up


def test_glob_follows_each_file_and_skips_rotated(sshd: SSHServer, tmp_path, pool, sources) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    append(logs / "a.log", "a1")
    append(logs / "a.log.1", "old")
    append(logs / "b.log.2.gz", "zipped")
    append(logs / "c.log", "c1")
    reader = Reader(open_source(sources, sshd, logs / "*.log*", pool, glob_interval=0.2))
    reader.pump(lambda: sorted(reader.lines) == ["a1", "c1"], 10, "both logs")
    append(logs / "d.log", "d1")
    reader.pump(lambda: sorted(reader.lines) == ["a1", "c1", "d1"], 10, "a new file matching the glob")


def test_proxyjump_through_a_jump_host(sshd: SSHServer, tmp_path, pool, sources) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(sshd.ssh_config.read_text() + "Host behind\n  HostName 127.0.0.1\n  ProxyJump testhost\n")
    text = cfg.read_text().replace("Host testhost\n", "Host testhost behind\n", 1)
    cfg.write_text(text)
    log = tmp_path / "j.log"
    append(log, "via jump")
    reader = Reader(open_source(sources, sshd, log, pool, ssh_config=str(cfg), host="behind"))
    reader.pump(lambda: reader.lines == ["via jump"], 10, "a line through the jump host")


def test_read_remote_file_over_the_same_connection(sshd: SSHServer, tmp_path, pool, sources) -> None:
    log = tmp_path / "s.log"
    append(log, "x")
    cfg = tmp_path / "config.json"
    cfg.write_text('{"num_hidden_layers": 1}')
    reader = Reader(open_source(sources, sshd, log, pool))
    reader.pump(lambda: reader.lines == ["x"], 10, "the connection")
    conns = sshd.connection_count()
    assert read_remote_file(reader.source, str(cfg), 4096) == cfg.read_bytes()
    assert read_remote_file(reader.source, str(tmp_path / "missing.json"), 4096) is None
    assert read_remote_file(reader.source, str(cfg), 5) is None
    assert sshd.connection_count() == conns == 1
    by_alias = read_remote_file("testhost", str(cfg), 4096, settings=sshd.settings(), pool=pool)
    assert by_alias == cfg.read_bytes()


def test_remote_zone_is_read_from_the_hosts_localtime_over_sftp(
    sshd: SSHServer, tmp_path: Path, pool, sources, caplog: pytest.LogCaptureFixture
) -> None:
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from acceptmon import log_time
    from acceptmon.sources.ssh.remote import read_remote_file

    log = tmp_path / "tz.log"
    append(log, "x")
    src = open_source(sources, sshd, log, pool)
    reader = Reader(src)
    reader.pump(lambda: reader.lines == ["x"], 10, "connected")
    tz = log_time.source_zone(None, lambda path: read_remote_file(src, path, 1 << 20))
    assert "cannot read the remote" not in caplog.text
    assert log_time.zone_name(tz) == "the remote /etc/localtime"
    with open("/etc/localtime", "rb") as f:
        here = ZoneInfo.from_file(f)
    for when in (datetime(2026, 1, 15, 12), datetime(2026, 7, 15, 12)):
        assert when.replace(tzinfo=tz).utcoffset() == when.replace(tzinfo=here).utcoffset()
    # A host without a readable zone file: UTC, with a warning naming the fix.
    assert log_time.source_zone(None, lambda _path: read_remote_file(src, "/nonexistent", 100)) is UTC
    assert "set 'timezone:'" in caplog.text
