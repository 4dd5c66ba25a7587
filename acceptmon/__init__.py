"""acceptmon: watch speculative-decoding acceptance in SGLang and vLLM logs."""

__version__ = "0.1.0"
