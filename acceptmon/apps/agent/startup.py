"""Exit codes, and the start-up failures that are not invalid settings.

A service manager (and the operator reading ``systemctl status``) should
tell "fix the settings" from "the port is taken" from "the disk is read-only"
by the exit code alone, and the one line on stderr says what to do.
"""

from __future__ import annotations

import os
import tempfile

from acceptmon.statefiles import UnsafeStateDir, ensure_private_dir

OK = 0
#: A failure while running (an internal error; please report it).
RUNTIME = 1
#: The settings (YAML file or flags) are invalid: every problem is listed.
SETTINGS = 2
#: The listen address cannot be bound (in use, not an address of this host, no permission).
LISTEN = 3
#: The state directory cannot be created or written, or is owned by another user.
STATE_DIR = 4

EPILOG = """\
exit status:
  0  stopped cleanly (SIGTERM, SIGINT)
  1  runtime failure (an internal error: please report it)
  2  invalid settings: every problem is listed (check with `acceptmon check-config FILE`)
  3  the listen address is unavailable (in use, not local, or a privileged port)
  4  the state directory cannot be created or written, or is owned by another user
A log file that is missing or unreadable is not fatal: it is followed once it
appears and counted in acceptmon_source_errors_total meanwhile.
"""


class StartupError(Exception):
    """A start-up failure with its exit code; ``str()`` is the one line to print."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def reason(exc: OSError) -> str:
    """The errno's own words: ``socket.create_server`` appends the address to ``strerror``."""
    if exc.errno:
        return os.strerror(exc.errno).lower()
    return str(exc.strerror or exc).lower() if exc.strerror else str(exc)


def check_state_dir(path: str) -> None:
    """Create the state directory (0700, ours: ``statedir.ensure_private_dir``) and prove it
    writable, or raise ``StartupError``."""
    try:
        ensure_private_dir(path)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-"):
            pass
    except UnsafeStateDir as exc:
        raise StartupError(STATE_DIR, f"state directory {exc.filename} refused: {exc.strerror}") from None
    except OSError as exc:
        raise StartupError(STATE_DIR, f"state directory {path} is unusable: {reason(exc)}") from None


def listen_failed(listen: str, exc: OSError) -> StartupError:
    return StartupError(LISTEN, f"cannot listen on {listen}: {reason(exc)}")
