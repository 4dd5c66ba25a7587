"""Shared fixtures for the agent's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from acceptmon.apps.agent.web.routes import Routes
from acceptmon.apps.agent.web.server import HttpServer, Limits
from acceptmon.settings.web import WebSettings


@pytest.fixture
def start() -> Iterator[Callable[..., HttpServer]]:
    """HTTP servers on a free loopback port (``Limits`` fields as keywords), stopped after the test."""
    servers: list[HttpServer] = []

    def make(routes: Routes, web: WebSettings | None = None, **limits: Any) -> HttpServer:
        server = HttpServer("127.0.0.1", 0, routes, web, limits=Limits(**limits))
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
