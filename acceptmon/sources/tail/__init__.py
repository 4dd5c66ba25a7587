"""Following one local path across rotation and copytruncate, resumed exactly from a checkpoint."""
