"""Stage 2: a line of text → a record (Decode, Prefill, start, stop, crash, vLLM metrics), or nothing."""
