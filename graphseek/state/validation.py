"""The checks of a run's request, shared by every entry: the CLI, `graphseek.api.ask`, a compiled
workflow's `invoke` / `stream`, and the LangGraph server (Studio, the SDK).

- `check_input(values, limit)`: the input state has a `question` that is text, not blank, and at
  most `max_question_chars(limit)` characters long (`check_question`).
- `check_context(context, ...)`: the names and limits of a `Context` its field types cannot
  express. `Context.__post_init__` calls it and checks the budgets itself, so a context a server
  client sends as JSON (LangGraph makes a `Context` of it) is checked as a Python caller's is.
- `check_name(kind, name, known)`: an unknown name (topology, retriever, profile, mode, data
  set, setting) is refused with the closest known ones (`difflib`), else the list of known ones.
- `confine_index_path(raw, root)` (and `graphseek.state.context.allowed_index_uri`, beside the
  PostgreSQL URI parser that imports this module): the index a served run (the LangGraph
  server, Studio) may open, a directory under the server's index root or a URI its
  configuration lists (`graphseek.state.context.ServedContext` applies them). A refusal is the
  same line whatever the path is and whether it exists, and names no path of the server.
- `check_served_reranker(raw, allowed)`: the reranker a served run may use, one its server's
  configuration lists, else one line that repeats neither the spec nor the list (a spec names a
  host that would receive the server's key, or a folder of the server).

Every check raises a `ValueError` subclass (`InvalidRequestError`, or the caller's `error`) with
one line that names the field: the CLI prints it, `ask` raises it, and the LangGraph server
reports it as the run's error (`{"error": "InvalidRequestError", "message": ...}`). The first
node of every topology checks the input and the retriever (`graphseek.graphs.entry`), so a
workflow never runs on a request the CLI would refuse.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import Any

from graphseek.errors import ContextError, InvalidRequestError

#: the longest question a run takes by default (characters); `max_question_chars` (the setting,
#: `ask`'s keyword, the CLI's --max-question-chars) or the environment variable below change it
MAX_QUESTION_CHARS = 2000
MAX_QUESTION_ENV = "GRAPHSEEK_MAX_QUESTION_CHARS"


# -- names ----------------------------------------------------------------------------------------

#: the most known names an "Unknown ..." message lists when none is close
LISTED = 20


def unknown_name(kind: str, name: object, known: Iterable[str], plural: str = "") -> str:
    """The message for a `kind` name that is not one of `known`: the closest known names
    ("Unknown topology 'dual_agnet'; did you mean 'dual_agent'?"), else all of them."""
    known = list(known)
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=3, cutoff=0.6)
    if close:
        return f"Unknown {kind} {name!r}; did you mean {' or '.join(repr(by_lower[c]) for c in close)}?"
    listed = ", ".join(known[:LISTED])
    if len(known) > LISTED:
        listed += f", … ({len(known):,} in all)"
    return f"Unknown {kind} {name!r}; known {plural or kind + 's'}: {listed}."


def check_name(
    kind: str,
    name: Any,
    known: Iterable[str],
    *,
    plural: str = "",
    error: type[Exception] = InvalidRequestError,
) -> str:
    """`name` if it is one of `known`, else `error` with `unknown_name`'s message."""
    known = list(known)
    if isinstance(name, str) and name in known:
        return name
    raise error(unknown_name(kind, name, known, plural))


# -- the question ---------------------------------------------------------------------------------


def max_question_chars(limit: int | None = None) -> int:
    """The question length limit: `limit` (0 or None: not given), else
    $GRAPHSEEK_MAX_QUESTION_CHARS, else `MAX_QUESTION_CHARS`."""
    if not limit:
        raw = os.environ.get(MAX_QUESTION_ENV, "").strip()
        if not raw:
            return MAX_QUESTION_CHARS
        try:
            limit = int(raw)
        except ValueError:
            # the variable's text is not repeated: a server client reads this message
            raise InvalidRequestError(
                f"${MAX_QUESTION_ENV} is not a whole number of characters."
            ) from None
    if limit < 1:
        raise InvalidRequestError(f"The question length limit must be at least 1, got {limit}.")
    return limit


def check_question(question: Any, limit: int | None = None) -> str:
    """The question, stripped; `InvalidRequestError` if it is empty, too long or not text."""
    # the corpus loader's test for binary data (a lazy import: state sits below knowledge)
    from graphseek.knowledge.loaders import text_problem

    if not isinstance(question, str) or not question.strip():
        raise InvalidRequestError("The question is empty; pass a non-empty string.")
    question = question.strip()
    most = max_question_chars(limit)
    if len(question) > most:
        raise InvalidRequestError(
            f"The question is {len(question):,} characters long; the limit is {most:,} "
            f"(raise it with --max-question-chars, max_question_chars= or {MAX_QUESTION_ENV})."
        )
    problem = text_problem(question)
    if problem:
        raise InvalidRequestError(f"The question is not text: {problem}.")
    return question


def check_input(values: Any, limit: int | None = None) -> str:
    """The question of a run's input state (`{"question": ...}`), checked by `check_question`;
    `InvalidRequestError` naming `question` when the input has none."""
    if not isinstance(values, Mapping):
        raise InvalidRequestError(
            f'The input must be an object with a "question", got {type(values).__name__}.'
        )
    if values.get("question") is None:
        raise InvalidRequestError('The input has no "question"; send {"question": "..."}.')
    return check_question(values["question"], limit)


# -- settings -------------------------------------------------------------------------------------


def check_context(context: Any, *, profiles: Iterable[str], modes: Iterable[str]) -> None:
    """What `Context.__post_init__` checks here (it checks the budgets itself): the profile
    and mode names, the question limit and the model timeout. `ContextError` naming the field.
    The retriever is checked against the registry when a run starts (`graphseek.graphs.entry`)
    or a CLI / `ask` run is checked (`graphseek.api.check_settings`)."""
    check_name("profile", context.profile, profiles, error=ContextError)
    check_name("knowledge_aware mode", context.mode, modes, plural="modes", error=ContextError)
    limit = context.max_question_chars
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise ContextError(
            f"max_question_chars must be an integer >= 0 (0: ${MAX_QUESTION_ENV}, else "
            f"{MAX_QUESTION_CHARS}), got {limit!r}."
        )
    timeout = context.llm_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise ContextError(f"llm_timeout must be a number of seconds >= 0, got {timeout!r}.")


# -- the index of a served run --------------------------------------------------------------------

#: the refusal of a served `index_path` that is not under the index root (one line whatever the
#: path, so that it tells nothing of what exists on the server or where)
PATH_REFUSED = (
    "index_path must name an index directory by its path relative to the server's index root "
    "(no absolute path, no '..', no link out of the root); the server's $GRAPHSEEK_INDEX_DIR "
    "sets the root, else the directory it was started in."
)
#: the refusal of a served `index_path` URI that the server's configuration does not list
URI_REFUSED = (
    "index_path names a URI this server does not open: a served run opens only the "
    "postgresql:// indexes listed in the server's $GRAPHSEEK_INDEX_URIS."
)


def confine_index_path(raw: str, root: Path) -> Path:
    """The directory a served `index_path` names under `root` (an absolute path, symlinks
    resolved); `ContextError` (`PATH_REFUSED`) when `raw` is absolute (``~`` included), has a
    ``..`` part or resolves, through a link, outside `root`. Whether the path exists is not
    looked at here."""
    text = raw[len("file://") :] if raw.lower().startswith("file://") else raw
    if "\x00" in text or text.startswith("~"):
        raise ContextError(PATH_REFUSED)
    parts = PurePath(text)
    if parts.is_absolute() or ".." in parts.parts:
        raise ContextError(PATH_REFUSED)
    real_root = root.resolve()
    try:
        path = (real_root / parts).resolve()
    except (OSError, RuntimeError):  # a link loop, a name too long
        raise ContextError(PATH_REFUSED) from None
    if not path.is_relative_to(real_root):
        raise ContextError(PATH_REFUSED)
    return path


# -- the reranker of a served run -----------------------------------------------------------------

#: the refusal of a served `reranker` that the server's configuration does not list (one line
#: whatever the spec, so that it tells nothing of the server's list or of what exists)
RERANKER_REFUSED = (
    "reranker names a reranker this server does not run: a served run uses no reranker or one "
    "listed in the server's $GRAPHSEEK_RERANKERS."
)


def check_served_reranker(raw: Any, allowed: Iterable[str]) -> None:
    """Accept a served `reranker` that is empty (none) or, apart from surrounding blanks,
    exactly one of `allowed` (the server's own list); else `ContextError` (`RERANKER_REFUSED`).
    An ``http:`` spec names the host that receives the server's rerank key, a ``ce:`` spec a
    folder of the server that is loaded: neither is a client's to choose."""
    if isinstance(raw, str) and (not raw.strip() or raw.strip() in set(allowed)):
        return
    raise ContextError(RERANKER_REFUSED)
