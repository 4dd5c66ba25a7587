"""Routes of the agent's HTTP face: a path → a producer of (content type, body).

Producers only read snapshots the agent hands over, so the server has no state of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST


class HttpError(Exception):
    """Raised by a route to answer with another status (e.g. 503 from /healthz)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Routes = dict[str, Callable[[], tuple[str, bytes]]]
#: Routes by path prefix (``/api/runs/``): the handler gets the rest of the path.
PrefixRoutes = dict[str, Callable[[str], tuple[str, bytes]]]
#: Routes that filter by the query string (``/api/runs?source=…``): the handler gets its parameters.
QueryRoutes = dict[str, Callable[[dict[str, list[str]]], tuple[str, bytes]]]


def json_route(produce: Callable[[], Any]) -> Callable[[], tuple[str, bytes]]:
    def route() -> tuple[str, bytes]:
        return "application/json", json.dumps(produce(), indent=1, default=str, allow_nan=False).encode()

    return route


def json_prefix_route(produce: Callable[[str], Any]) -> Callable[[str], tuple[str, bytes]]:
    def route(rest: str) -> tuple[str, bytes]:
        return "application/json", json.dumps(produce(rest), indent=1, default=str, allow_nan=False).encode()

    return route


def json_query_route(
    produce: Callable[[dict[str, list[str]]], Any],
) -> Callable[[dict[str, list[str]]], tuple[str, bytes]]:
    def route(query: dict[str, list[str]]) -> tuple[str, bytes]:
        return "application/json", json.dumps(produce(query), indent=1, default=str, allow_nan=False).encode()

    return route


def metrics_route(render: Callable[[], str]) -> Callable[[], tuple[str, bytes]]:
    def route() -> tuple[str, bytes]:
        return CONTENT_TYPE_LATEST, render().encode()

    return route
