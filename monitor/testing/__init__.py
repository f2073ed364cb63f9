"""Test doubles that ship with framewatch (fault-injecting OpenAI-compatible server)."""
