"""Container runtime log formats (Docker json-file, CRI) decoded to the engine's own lines."""
