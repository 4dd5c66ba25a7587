"""The agent's HTTP face: the server (``server.py``: one reactor, a fixed pool of workers), its
admission lanes and auth throttle (``admission.py``), request heads (``request.py``) and routes
(``routes.py``). TLS and basic auth come from the exporter-toolkit web config (``settings/web.py``)."""
