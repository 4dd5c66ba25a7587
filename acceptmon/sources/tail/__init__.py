"""Following one path across rotation and copytruncate, resumed exactly from a checkpoint.

The one follower reads through a ``fs.FileSystem``: ``localfs`` (inodes) for
local files, ``ssh/sftpfs`` (no inodes) through ``ssh/reattach`` for SFTP, an
in-memory one with either semantics in tests.
"""
