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


class LLMOutputError(GraphseekError):
    """A chat model's reply stayed malformed after every retry.

    `usage` is what the failed attempts cost (a `graphseek.state.Usage`, or None) and `attempts`
    how many were made, so a workflow can still account for them when it abstains.
    """

    usage: object = None
    attempts: int = 0


class BudgetExceededError(GraphseekError):
    """A run used up its LLM-call or token budget (workflows turn this into an abstention)."""
