"""Errors raised by graphseek. Every message names what is wrong and, where it helps, what to do."""

from __future__ import annotations


class GraphseekError(Exception):
    """Base class for every error graphseek raises on purpose."""


class CorpusError(GraphseekError):
    """The corpus is empty, missing, unreadable or malformed."""


class IndexNotFoundError(GraphseekError):
    """No index (or an incomplete one) exists at the given directory."""


class IndexFormatError(GraphseekError):
    """An index directory exists but its manifest or files are malformed or incompatible."""


class IndexBusyError(GraphseekError):
    """Another process (or thread) is writing the same index or graph store right now."""


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
