"""Following one path across rotation and copytruncate, resumed exactly from a checkpoint.

The follower reads through a ``fs.FileSystem`` with inodes: ``localfs`` in
production, an in-memory one in tests. SFTP (no inodes) has its own follower
over the same protocol in ``ssh/follow.py``.
"""
