"""Test doubles for graphseek: nothing here is meant for a real run.

- `ScriptedChatModel`: a chat model that replays scripted replies (text, JSON, tool calls,
  errors) and records every request, so a test drives a whole workflow deterministically;
  `ScriptExhaustedError` when its script runs out.

`graphseek.llm` re-exports both for older callers, and the model spec ``"scripted"`` still builds
a `ScriptedChatModel` (tests use it); new code imports them from here.
"""

from graphseek.testing.scripted import ScriptedChatModel, ScriptExhaustedError

__all__ = ["ScriptExhaustedError", "ScriptedChatModel"]
