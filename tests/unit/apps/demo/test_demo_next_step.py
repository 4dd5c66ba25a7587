"""The demo ends with what to do next: the same command on the user's own log (issue 25 §10)."""

import pytest

from acceptmon.cli import main


@pytest.mark.parametrize("plain", [True, False])
def test_demo_ends_with_the_next_step(plain: bool, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", *(["--plain"] if plain else [])]) == 0
    out = capsys.readouterr().out.rstrip()
    assert out.splitlines()[-1].startswith("Now try your own log: `acceptmon runs /path/to/server.log`")
