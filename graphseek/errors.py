"""Errors raised by graphseek. Every message names what is wrong and, where it helps, what to do.

No message carries a secret (issue 56): `GraphseekError` passes its message through `redact`,
which takes out API keys in OpenAI's shape (``sk-…``), bearer credentials, masked keys (a
server's ``sk-proj-****abcd``, whose visible tail is part of the key), URL passwords, credentials
in query strings, and the literal values of this process's secret-looking environment variables
(names with KEY, TOKEN, SECRET or PASSWORD). Code that cuts a provider's text to a length calls
`redact` before cutting, so that a cut cannot leave part of a secret unrecognised.
"""

from __future__ import annotations

import os
import re

#: what stands in for a secret in a message
REDACTED = "[redacted]"
#: parts of the names of environment variables whose values are secrets; names ending in TOKENS
#: are counts (GRAPHSEEK_LLM_MAX_TOKENS), not secrets
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: values shorter than this are not looked for (flags such as 'false', 'EMPTY', '1')
MIN_SECRET_CHARS = 8

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a bearer credential: "Authorization: Bearer abc…"
    (re.compile(r"(?i)\b(bearer\s+)[\w\-.~+/]+=*"), r"\1" + REDACTED),
    # a key in OpenAI's shape (sk-…, sk-proj-…), a masked one included
    (re.compile(r"\bsk-[\w*\-]{8,}"), REDACTED),
    # a masked key (gsk_ab****wxyz, ****wxyz): its visible ends are part of the key
    (re.compile(r"[\w\-]*\*{3,}[\w\-]*"), REDACTED),
    # a URL's password: scheme://user:password@host
    (re.compile(r"(://[^\s/:@]*:)[^\s/@]+@"), r"\1" + REDACTED + "@"),
    # a credential in a query string: ?api_key=…, &token=…
    (
        re.compile(
            r"(?i)([?&](?:api[_-]?key|key|access[_-]?token|token|secret|password|sig)=)[^&\s'\"]+"
        ),
        r"\1" + REDACTED,
    ),
)


def secret_values() -> list[str]:
    """The values of this process's secret-looking environment variables (see
    `SECRET_NAME_PARTS`), longest first."""
    found = set()
    for name, value in os.environ.items():
        upper, value = name.upper(), value.strip()
        if len(value) < MIN_SECRET_CHARS or upper.endswith("TOKENS"):
            continue
        if any(part in upper for part in SECRET_NAME_PARTS):
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` without secrets (see the module docstring); each becomes `REDACTED`."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class GraphseekError(Exception):
    """Base class for every error graphseek raises on purpose. Its message (each string
    argument) is redacted (`redact`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class CorpusError(GraphseekError):
    """The corpus is empty, missing, unreadable or malformed."""


class IndexNotFoundError(GraphseekError):
    """No index (or an incomplete one) exists at the given directory."""


class IndexFormatError(GraphseekError):
    """An index directory exists but its manifest or files are malformed or incompatible."""


class IndexBusyError(GraphseekError):
    """Another process (or thread) is writing the same index or graph store right now."""


class IndexChangedError(GraphseekError):
    """A directory index was rewritten (by `add`, `remove` or `index`) after this process opened
    it, before one of its files was read: open it again. Reading on would mix two versions."""


class DatabaseUnavailableError(GraphseekError):
    """The PostgreSQL server of an index stayed unreachable (stopped, restarting, the network
    down) for longer than a read waits for it (`graphseek.knowledge.postgres.connection`
    `RECONNECT_SECONDS`), or dropped the connection of a write, whose transaction then did not
    commit."""


class InvalidRequestError(GraphseekError, ValueError):
    """An argument of a run (question, topology, retriever, budget, …) is not acceptable."""


class UnknownTopologyError(GraphseekError, KeyError):
    """A topology name that the registry does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ContextError(GraphseekError, ValueError):
    """A run's settings (`graphseek.state.Context`) are invalid or name something that does not
    exist: a bad value, an index path with no index. A `ValueError`, so the LangGraph server
    reports its message to the client."""


class ModelSpecError(GraphseekError, ValueError):
    """A model spec string the LLM factory cannot resolve."""


class LLMError(GraphseekError):
    """A chat-model call gave no usable reply; workflows turn it into an abstention.

    The taxonomy (`kind`): ``"transport"`` (timeout, connection refused or reset, HTTP 5xx,
    HTTP 429 after its retry-after waits), ``"request"`` (an HTTP 4xx the server will give again:
    context overflow, bad request, authentication, unknown model), ``"malformed"`` (the reply
    stayed unparseable or invalid for its schema after the corrective retries) and ``"budget"``
    (the run's LLM-call or token budget was spent before the call). `cause` is a short phrase
    naming what happened ("timeout", "HTTP 429", "context overflow", ...).

    `usage` is what the failed attempts cost (a `graphseek.state.Usage`, or None) and `attempts`
    how many were made, so a workflow can still account for them when it abstains.
    """

    kind: str = "malformed"
    cause: str = ""
    usage: object = None
    attempts: int = 0

    def __init__(self, message: str = "", *, cause: str = "", usage: object = None,
                 attempts: int = 0) -> None:  # fmt: skip
        super().__init__(message)
        if cause:
            self.cause = cause
        self.usage = usage
        self.attempts = attempts


class LLMTransportError(LLMError):
    """The server did not answer in time, could not be reached, failed (5xx) or rate-limited
    us (429) on every attempt."""

    kind = "transport"


class LLMRequestError(LLMError):
    """The server refused the request itself (4xx: context overflow, bad request, ...);
    retrying the same request cannot help."""

    kind = "request"


class LLMOutputError(LLMError):
    """A chat model's reply stayed malformed after every retry."""

    kind = "malformed"
    cause = "malformed reply"


class BudgetExceededError(LLMError):
    """A run used up its LLM-call or token budget (workflows turn this into an abstention)."""

    kind = "budget"
    cause = "budget exhausted"
