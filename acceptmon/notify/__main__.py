"""``python -m acceptmon.notify``: run the delivery queue alone, or send a test message.

    python -m acceptmon.notify run  --config acceptmon.yaml --state-dir DIR [--sample N]
    python -m acceptmon.notify test --config acceptmon.yaml

``run`` drains what earlier runs left in the state dir (``--sample N`` first
offers N sample findings) until SIGTERM/SIGINT; the crash-recovery system test
and operators draining a backlog use it. Exit codes: 0 ok, 1 test failed,
2 invalid configuration.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from acceptmon.notify.notifier import build_notifier
from acceptmon.notify.selftest import sample_finding, send_test_message
from acceptmon.notify.settings import NotifySettingsError, parse_notify_settings
from acceptmon.notify.worker import NotifyWorker
from acceptmon.text.printable import printable_logs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acceptmon.notify")
    parser.add_argument("command", choices=("run", "test"))
    parser.add_argument("--config", required=True, type=Path, help="YAML file with a notify: section")
    parser.add_argument("--state-dir", type=Path, help="queue directory (default: notify.state_dir)")
    parser.add_argument("--sample", type=int, default=0, help="offer N sample findings first (run)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    printable_logs()
    try:
        config = parse_notify_settings(_load_yaml(args.config).get("notify"))
        if args.command == "test":
            ok, message = send_test_message(config)
            print(message)
            return 0 if ok else 1
        notifier = build_notifier(config, args.state_dir)
    except NotifySettingsError as exc:
        print("invalid notify configuration:\n  " + "\n  ".join(exc.problems), file=sys.stderr)
        return 2
    worker = NotifyWorker(notifier, idle_s=0.5)
    for index in range(args.sample):
        notifier.notify(sample_finding(time.time(), index))
    _run_until_signal(worker)
    return 0


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise NotifySettingsError([f"{path}: cannot read config ({type(exc).__name__})"]) from None
    if not isinstance(data, dict):
        raise NotifySettingsError([f"{path}: top level must be a mapping"])
    return data


def _run_until_signal(worker: NotifyWorker) -> None:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    worker.start()
    logging.getLogger("acceptmon.notify").info("notify: running; pending messages are being delivered")
    stop.wait()
    worker.stop()


if __name__ == "__main__":
    sys.exit(main())
