"""A local HTTP server speaking the parts of Grafana's HTTP API acceptmon uses, errors included.

Endpoints (as documented at grafana.com/docs/grafana/latest/developers/http_api/):
``GET /api/health``, ``GET /api/search``, ``GET /api/datasources``,
``POST /api/folders``, ``GET /api/dashboards/uid/<uid>``, ``POST /api/dashboards/db``
(version check: 412 ``version-mismatch`` unless ``overwrite``), ``POST`` and
``GET /api/annotations``. Every call needs ``Authorization: Bearer <token>``
(else 401). ``fail`` queues statuses to answer instead (a 5xx storm);
``hang_after_store`` stores the next annotation and then never answers (an
unknown outcome for the client); ``oversize`` makes ``GET /api/datasources``
stream a valid JSON reply of that many bytes (a runaway or hostile server).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class GrafanaState:
    token: str
    datasources: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"id": 1, "uid": "prom-uid", "name": "Prometheus", "type": "prometheus", "isDefault": True}
        ]
    )
    folders: list[dict[str, Any]] = field(default_factory=list)
    dashboards: dict[str, dict[str, Any]] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    fail: deque[int] = field(default_factory=deque)
    fail_paths: tuple[str, ...] = ("/api/annotations",)
    hang_after_store: int = 0
    oversize: int = 0
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: FakeGrafana

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        st = self.server.state
        url = urlsplit(self.path)
        with st.lock:
            st.requests.append((method, url.path))
        if self.headers.get("Authorization") != f"Bearer {st.token}":
            self._send(401, {"message": "Unauthorized"})
            return
        if url.path.startswith(st.fail_paths) and st.fail:
            with st.lock:
                status = st.fail.popleft()
            self._send(status, {"message": "Internal Server Error"})
            return
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        route = getattr(
            self, f"_{method.lower()}_{url.path.strip('/').replace('/', '_').split('_uid_')[0]}", None
        )
        if route is None:
            self._send(404, {"message": "Not found"})
            return
        route(url.path, query)

    # -- routes ------------------------------------------------------------------------

    def _get_api_health(self, _path: str, _q: dict[str, str]) -> None:
        self._send(200, {"database": "ok", "version": "11.3.0", "commit": "fake"})

    def _get_api_datasources(self, _path: str, _q: dict[str, str]) -> None:
        if self.server.state.oversize:
            self._send_oversize(self.server.state.oversize)
            return
        self._send(200, self.server.state.datasources)

    def _send_oversize(self, size: int) -> None:
        """``[{"name": "xxx…"}]`` of ``size`` bytes, written a chunk at a time (never held whole)."""
        head, tail = b'[{"name": "', b'"}]'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        chunk = b"x" * (1 << 16)
        left = size - len(head) - len(tail)
        try:
            self.wfile.write(head)
            while left > 0:
                self.wfile.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
            self.wfile.write(tail)
        except OSError:
            pass  # the client stopped reading: what a bounded client does

    def _get_api_search(self, _path: str, q: dict[str, str]) -> None:
        st = self.server.state
        if q.get("type") == "dash-folder":
            hits = [{"uid": f["uid"], "title": f["title"], "type": "dash-folder"} for f in st.folders]
        else:
            hits = [
                {"uid": uid, "title": d["dashboard"]["title"], "type": "dash-db"}
                for uid, d in st.dashboards.items()
            ]
        title = q.get("query", "").lower()
        self._send(200, [h for h in hits if title in h["title"].lower()])

    def _post_api_folders(self, _path: str, _q: dict[str, str]) -> None:
        body = self._body()
        st = self.server.state
        if any(f["title"] == body["title"] for f in st.folders):
            self._send(409, {"message": "a folder with the same name already exists"})
            return
        folder = {
            "id": len(st.folders) + 1,
            "uid": body.get("uid") or f"f{len(st.folders) + 1}",
            "title": body["title"],
        }
        st.folders.append(folder)
        self._send(200, folder)

    def _get_api_dashboards(self, path: str, _q: dict[str, str]) -> None:
        uid = path.rsplit("/", 1)[-1]
        found = self.server.state.dashboards.get(uid)
        if found is None:
            self._send(404, {"message": "Dashboard not found"})
            return
        self._send(200, found)

    def _post_api_dashboards_db(self, _path: str, _q: dict[str, str]) -> None:
        body = self._body()
        st = self.server.state
        dash = dict(body["dashboard"])
        uid = dash.get("uid")
        old = st.dashboards.get(uid)
        if (
            old is not None
            and not body.get("overwrite")
            and dash.get("version") != old["dashboard"]["version"]
        ):
            self._send(
                412,
                {"message": "The dashboard has been changed by someone else", "status": "version-mismatch"},
            )
            return
        dash["version"] = (old["dashboard"]["version"] if old else 0) + 1
        dash["id"] = old["dashboard"]["id"] if old else len(st.dashboards) + 1
        folder = next((f for f in st.folders if f["uid"] == body.get("folderUid")), None)
        st.dashboards[uid] = {
            "dashboard": dash,
            "meta": {
                "folderUid": body.get("folderUid"),
                "folderTitle": folder["title"] if folder else "General",
            },
        }
        self._send(200, {"id": dash["id"], "uid": uid, "status": "success", "version": dash["version"]})

    def _post_api_annotations(self, _path: str, _q: dict[str, str]) -> None:
        body = self._body()
        st = self.server.state
        with st.lock:
            body["id"] = len(st.annotations) + 1
            st.annotations.append(body)
            hang = st.hang_after_store > 0
            st.hang_after_store -= hang
        if hang:
            self.server.hung.wait(30)  # stored, but the client never hears so
            return
        self._send(200, {"id": body["id"], "message": "Annotation added"})

    def _get_api_annotations(self, _path: str, q: dict[str, str]) -> None:
        st = self.server.state
        tags = set(parse_qs(urlsplit(self.path).query).get("tags", []))
        with st.lock:
            hits = [a for a in st.annotations if tags <= set(a.get("tags", []))]
        self._send(200, hits[: int(q.get("limit", "100"))])


class FakeGrafana(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, token: str = "glsa_testtoken_0123456789") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = GrafanaState(token)
        self.hung = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, name="fake-grafana", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeGrafana:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hung.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)
