"""``acceptmon grafana sync``: put the bundled dashboard into Grafana through its HTTP API.

Idempotent and careful with other people's edits: the dashboard has a stable
uid; each sync tags it with a hash of what it pushed, so the next sync can
tell an untouched dashboard (updated) from one someone edited in Grafana
(kept, unless ``--force``). The update is version-checked, so an edit saved
between our read and our write is not clobbered either. The dashboard is
pointed at a Prometheus data source that must exist. The token is read from
an environment variable and never printed. No reply is read past
``MAX_REPLY`` bytes: a larger one is refused, not buffered.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import logging
from dataclasses import dataclass
from importlib import resources
from typing import Any

from acceptmon import extras

log = logging.getLogger("acceptmon.dashboard")

UID = "acceptmon"
_SYNC_TAG = "acceptmon-sync:"
#: Exit status when a newer edit in Grafana was kept (nothing was changed).
KEPT = 3
#: The most of any one reply read (decompressed): the bundled dashboard is ~40 kB.
MAX_REPLY = 16 << 20
_CHUNK = 64 << 10


class SyncError(Exception):
    """Grafana could not be reached or refused; the message is safe to print."""


class ReplyTooLarge(Exception):
    """A reply ran past ``MAX_REPLY``; raised from the response hook, before the body is kept."""

    def __str__(self) -> str:
        return f"Grafana's reply is larger than {MAX_REPLY >> 20} MiB: refused (is --url Grafana?)"


@dataclass(frozen=True, slots=True)
class Outcome:
    state: str  # created, updated, unchanged, kept
    version: int | None
    folder: str
    datasource: str
    url: str


def bundled() -> dict[str, Any]:
    """The dashboard shipped with acceptmon (also ``dashboards/acceptmon.json`` in the repository)."""
    return dict(
        json.loads(resources.files("acceptmon.apps.dashboard").joinpath("acceptmon.json").read_text())
    )


def content_hash(dashboard: dict[str, Any]) -> str:
    """A hash of what a person edits: title, panels, templating, annotations, links."""
    keys = ("title", "panels", "templating", "annotations", "links")
    picked = {k: _without_current(k, dashboard.get(k)) for k in keys}
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:12]


def _without_current(key: str, value: Any) -> Any:
    """Grafana stores the selected data source in each variable; that is not an edit."""
    if key != "templating" or not isinstance(value, dict):
        return value
    out = copy.deepcopy(value)
    for var in out.get("list", []):
        if isinstance(var, dict):
            var.pop("current", None)
            var.pop("options", None)
    return out


def _api(url: str, token: str, timeout: float) -> Any:
    from grafana_client.api import GrafanaApi

    api = GrafanaApi.from_url(url, credential=token, timeout=timeout)
    api.client.s.hooks["response"].append(_bounded)
    return api


def _bounded(response: Any, **_kwargs: Any) -> Any:
    """Read the body here, at most ``MAX_REPLY`` bytes, before the client reads it whole.

    The session runs response hooks before it loads the body; the body read
    here replaces the connection's stream, so the client then reads the copy.
    """
    raw = response.raw
    if raw is None or not hasattr(raw, "stream"):
        return response
    chunks, size = [], 0
    for chunk in raw.stream(_CHUNK, decode_content=True):
        size += len(chunk)
        if size > MAX_REPLY:
            raw.close()
            raise ReplyTooLarge
        chunks.append(chunk)
    raw.release_conn()
    response.raw = io.BytesIO(b"".join(chunks))
    return response


def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """One API call; every failure becomes a SyncError naming the step (never the token)."""
    from grafana_client.client import GrafanaClientError, GrafanaException, GrafanaUnauthorizedError

    try:
        return fn(*args, **kwargs)
    except GrafanaUnauthorizedError:
        raise SyncError(
            f"{what}: Grafana refused the token (401): is it valid, with Editor rights?"
        ) from None
    except GrafanaClientError as exc:
        raise SyncError(f"{what}: Grafana answered {exc.status_code}: {_message(exc)}") from None
    except GrafanaException as exc:
        raise SyncError(f"{what}: {_message(exc)}") from None
    except ReplyTooLarge as exc:
        raise SyncError(f"{what}: {exc}") from None
    except OSError as exc:
        raise SyncError(f"{what}: cannot reach Grafana ({type(exc).__name__})") from None


def _message(exc: Any) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("message"):
        return str(response["message"])[:200]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:200]


def _datasource(api: Any, name: str | None) -> dict[str, Any]:
    sources = [
        d
        for d in _call("listing data sources", api.datasource.list_datasources)
        if d.get("type") == "prometheus"
    ]
    if name is not None:
        sources = [d for d in sources if d.get("name") == name]
    if not sources:
        wanted = f"Prometheus data source named {name!r}" if name else "Prometheus data source"
        raise SyncError(f"Grafana has no {wanted}: add the Prometheus that scrapes the agents first")
    return next((d for d in sources if d.get("isDefault")), sources[0])


def _folder(api: Any, title: str | None) -> tuple[str | None, str]:
    if not title:
        return None, "General"
    hits = _call("finding the folder", api.search.search_dashboards, query=title, type_="dash-folder")
    found = next((h for h in hits if h.get("title") == title), None)
    if found is None:
        found = _call("creating the folder", api.folder.create_folder, title)
        log.info("created folder %r", title)
    return str(found["uid"]), title


def _existing(api: Any) -> dict[str, Any] | None:
    from grafana_client.client import GrafanaClientError

    try:
        return dict(api.dashboard.get_dashboard(UID))
    except ReplyTooLarge as exc:
        raise SyncError(f"reading the dashboard: {exc}") from None
    except GrafanaClientError as exc:
        if exc.status_code == 404:
            return None
        return dict(_call("reading the dashboard", api.dashboard.get_dashboard, UID))


def _pointed(dashboard: dict[str, Any], ds: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dashboard)
    out["uid"] = UID
    for var in out.get("templating", {}).get("list", []):
        if var.get("type") == "datasource":
            var["current"] = {"selected": True, "text": ds.get("name"), "value": ds.get("uid")}
    digest = content_hash(out)
    out["tags"] = [t for t in out.get("tags", []) if not str(t).startswith(_SYNC_TAG)] + [_SYNC_TAG + digest]
    return out


def _synced_hash(remote: dict[str, Any]) -> str | None:
    return next(
        (str(t)[len(_SYNC_TAG) :] for t in remote.get("tags", []) if str(t).startswith(_SYNC_TAG)), None
    )


def sync(
    url: str,
    token: str,
    *,
    folder: str | None = None,
    datasource: str | None = None,
    force: bool = False,
    timeout: float = 10.0,
) -> Outcome:
    """Create or update the dashboard; raises SyncError with a printable reason (MissingExtra
    without grafana-client)."""
    extras.require("grafana", "grafana sync")
    api = _api(url, token, timeout)
    try:
        return _sync(api, url, folder, datasource, force)
    finally:
        api.client.s.close()  # its connection-pool watcher thread ends with it


def _sync(api: Any, url: str, folder: str | None, datasource: str | None, force: bool) -> Outcome:
    health = _call("checking Grafana's health", api.client.GET, "/health")
    if isinstance(health, dict) and health.get("database") not in (None, "ok"):
        raise SyncError(f"Grafana reports its database as {health.get('database')!r}")
    ds = _datasource(api, datasource)
    folder_uid, folder_title = _folder(api, folder)
    ours = _pointed(bundled(), ds)
    remote = _existing(api)
    state = "created"
    if remote is not None:
        current = remote.get("dashboard", {})
        edited = _synced_hash(current) != content_hash(current)
        if edited and not force:
            return Outcome("kept", current.get("version"), folder_title, str(ds.get("name")), _link(url))
        if not edited and _synced_hash(current) == _synced_hash(ours):
            return Outcome("unchanged", current.get("version"), folder_title, str(ds.get("name")), _link(url))
        ours["id"] = current.get("id")
        ours["version"] = current.get("version")
        state = "updated"
    else:
        ours.pop("id", None)
        ours.pop("version", None)
    body: dict[str, Any] = {"dashboard": ours, "overwrite": force, "message": "acceptmon grafana sync"}
    if folder_uid is not None:
        body["folderUid"] = folder_uid
    saved = _call("saving the dashboard", api.dashboard.update_dashboard, body)
    return Outcome(state, saved.get("version"), folder_title, str(ds.get("name")), _link(url))


def _link(url: str) -> str:
    """Where the dashboard is, without any credentials the URL carried."""
    from acceptmon.text.redact import redact_text

    return f"{redact_text(url).rstrip('/')}/d/{UID}"
