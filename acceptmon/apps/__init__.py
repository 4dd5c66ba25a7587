"""The commands: each reaches the stages through ingest/ and sources/; no app imports another."""
