"""Stage 1: bytes → Chunks of lines with positions; ``poll()`` never blocks.

Local files (``local``), remote files over SFTP (``ssh/``), journald and stdin.
Following one path across rotation, truncation and restarts lives in ``tail/``.
"""
