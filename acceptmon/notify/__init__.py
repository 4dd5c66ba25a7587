"""Alerts that arrive once, say what changed, and never flood.

The public surface the CLI and pipeline wire in:

- ``parse_notify_settings(section)`` → ``NotifySettings`` (raises ``NotifySettingsError``)
- ``parse_checked(section)`` → ``NotifySettings`` and every problem, URLs checked (never shown)
- ``build_notifier(config, state_dir)`` → ``Notifier`` (``notify``, ``step``, ``stats``)
- ``NotifyWorker(notifier)`` → background thread (``start``, ``notify``, ``stop``)
- ``send_test_message(config)`` → ``(ok, message)`` for ``acceptmon notify-test``
- ``build_slack_message`` / ``validate_blocks`` / ``build_webhook_payload``
- ``notify.alertmanager``: findings posted to Alertmanager's v2 API (``alertmanager.py``)
"""

from acceptmon.notify.blockkit import validate_blocks
from acceptmon.notify.notifier import Notifier, build_notifier
from acceptmon.notify.queue import OUTCOMES, DeliveryQueue, Policy, QueueStats
from acceptmon.notify.secret import Secret
from acceptmon.notify.selftest import send_test_message
from acceptmon.notify.settings import (
    ChannelSettings,
    NotifySettings,
    NotifySettingsError,
    parse_notify_settings,
)
from acceptmon.notify.slack import build_slack_message
from acceptmon.notify.urls import parse_checked
from acceptmon.notify.webhook import build_webhook_payload
from acceptmon.notify.worker import NotifyWorker

__all__ = [
    "OUTCOMES",
    "ChannelSettings",
    "DeliveryQueue",
    "Notifier",
    "NotifySettings",
    "NotifySettingsError",
    "NotifyWorker",
    "Policy",
    "QueueStats",
    "Secret",
    "build_notifier",
    "build_slack_message",
    "build_webhook_payload",
    "parse_checked",
    "parse_notify_settings",
    "send_test_message",
    "validate_blocks",
]
