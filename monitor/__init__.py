"""framewatch: continuous audit of identity-conditioned news framing by LLMs."""

__version__ = "0.1.0"
