"""The literals of technical writing: the kinds of value a documentation question asks for.

Documentation, whatever its genre (man pages, configuration references, READMEs, changelogs),
answers with a few kinds of literal: a command-line **option** (`-n`, `--strip-debug`), an
**envvar** (an environment variable: `CTEST_OUTPUT_ON_FAILURE`, `$XDG_DATA_HOME`), a **path** (a
file or directory: `/etc/skel`, `a.out`, `CPackConfig.cmake`), a **key** (a setting, field,
directive or keyword: `PollIntervalMaxSec=`, `Protected:`, `nofile`) and a **command** (a program
or subcommand: `basenc`, `fsck(8)`). Each is found by how such text is written, never by a table
of tools: a literal that is not an English word (`nofile`, `basenc`) is a key or a command, since
prose words are read as noun phrases elsewhere (`candidates.sentence_spans`).

`literal_spans(text)` gives the literals of a sentence with their kinds; `asked_kinds(clause)`
the kinds a question's asking clause names ("Which option ...", "Which environment variable
...", "How do I make it ..."); `asked_token(question)` what a whole answer of the named kind
looks like; `option_aliases(text)` the options written together as one. The reader
(`reader.ExtractiveReader`) weighs a span by how well its kind fits the question's, and the
model-answer check (`answer_fit`) keeps, among several grounded tokens, the one of the kind the
question asks for.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

#: the literal kinds, as `AnswerSpec.kinds` and `candidates.Span.kind` name them
LITERAL_KINDS = ("option", "envvar", "path", "key", "command")

OPTION = re.compile(r"(?<![\w/$.-])(?:--[A-Za-z0-9][\w-]*|-[A-Za-z][\w-]*)")
_OPT = r"(?:--[A-Za-z0-9][\w-]*|-[A-Za-z0-9][\w-]*)(?:[= ]?(?:<[\w-]+>|[A-Z][A-Z_]*|\[[^\]]*\]))?"
# options written together as one: "-s, --spaces", "-w, --width=WIDTH", "-q | --quiet", and
# at the start of a sentence (a term of an option list) "-a --all"
_ALIASES = re.compile(rf"(?<![\w/$.-]){_OPT}(?:\s*[,|]\s*{_OPT})+")
_TERM = re.compile(rf"^{_OPT}(?:\s+{_OPT})+(?=\s)")
ENVVAR = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"
    r"|(?<![\w$.-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w.-])"
    r"|(?<![\w$.-])[A-Z]{2,}[0-9]+(?![\w.-])"
)
PATH = re.compile(
    r"(?<![\w.:/-])(?:~|\$\{?\w+\}?|\.{1,2})?(?:/[\w.@%+,{}<>$*-]+)+/?"
    r"|(?<![\w./$-])[A-Za-z_][\w-]*(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/-])"
)
KEY = re.compile(
    r"(?<![\w.$-])[A-Za-z][\w.-]*(?==)"  # a setting written with its value: "PollIntervalMaxSec="
    r"|^[A-Z][\w-]+(?=:\s)"  # a field at the start of its line: "Protected: yes"
    r"|(?<![\w./-])\.[a-z][a-z_]{2,}(?![\w./-])"  # a dot-directive: ".include", ".pragma"
    # a dotted key with a placeholder: "submodule.<name>.shallow", "remote.<name>.url"
    r"|(?<![\w.$/-])[a-z][\w-]*(?:\.(?:<[\w-]+>|[a-z][\w-]*))*\.<[\w-]+>(?:\.[a-z][\w-]*)+"
)
MAN_REFERENCE = re.compile(r"(?<![\w.-])([a-z][\w.+-]*)\(\d[a-z]*\)")
_LOWER_WORD = re.compile(r"(?<![\w.$/-])[a-z][a-z0-9]*(?:[-_+][a-z0-9]+)*(?![\w/-]|\.\w)")
_ABBREVIATION = re.compile(r"^(?:e\.g|i\.e|etc|vs|cf|al)\.?$", re.I)


class Asked(NamedTuple):
    """A kind of value a question asks for by name: the question's `words`, the span `kinds` that
    may answer it (best first, with a weight each) and the `token` pattern of a whole answer."""

    words: re.Pattern[str]
    kinds: tuple[tuple[str, float], ...]
    token: re.Pattern[str]


_NUMBER_TOKEN = re.compile(r"^-?\d[\d.,]*[A-Za-z%]{0,3}$")
#: what a question names when it asks for a literal, in the order a model's answer is checked
ASKED: tuple[Asked, ...] = (
    Asked(re.compile(r"\benv(?:ironment)?\s+var(?:iable)?s?\b|\bvariables?\b", re.I),
          (("envvar", 1.0), ("key", 0.8), ("code", 0.7), ("name", 0.4)),
          re.compile(r"^\$?[A-Z][A-Z0-9]*_[A-Z0-9_]+$|^\$?[A-Z]{3,}[0-9]*$")),
    Asked(re.compile(r"\b(?:option|flag|switch)s?\b", re.I),
          (("option", 1.0), ("code", 0.7), ("key", 0.4), ("name", 0.3)),
          re.compile(r"^--?[A-Za-z0-9]")),
    Asked(re.compile(r"\b(?:suffix|extension)s?\b", re.I),
          (("code", 1.0), ("path", 0.6), ("name", 0.5)),
          re.compile(r"^\.[A-Za-z0-9]+$")),
    Asked(re.compile(r"\b(?:file|path|directory|folder|dir)s?\b|\bfile ?names?\b", re.I),
          (("path", 1.0), ("document", 0.8), ("code", 0.6), ("name", 0.5), ("thing", 0.3)),
          re.compile(r"/|^[\w.-]+\.[A-Za-z0-9]{1,5}$")),
    Asked(re.compile(r"\b(?:exit|return|status)\s+(?:code|status|value)s?\b|\bport\b|"
                     r"\bhow (?:many|much)\b|\bnumber\b|\blimit\b|\bsize\b|\btimeout\b", re.I),
          (("number", 1.0), ("code", 0.2)),
          _NUMBER_TOKEN),
    Asked(re.compile(r"\b(?:key|directive|field|item|setting|keyword|entry|(?<!command[- ])line|stanza)s?\b", re.I),
          (("key", 1.0), ("code", 0.85), ("name", 0.6), ("option", 0.5), ("thing", 0.4)),
          re.compile(r"^[A-Za-z][\w.<>-]*[:=]?$")),
    Asked(re.compile(r"\b(?:command(?![- ]line)|subcommand|program|utility|tool|binary|executable)s?\b",
                     re.I),
          (("command", 1.0), ("name", 0.85), ("code", 0.8), ("path", 0.6), ("org", 0.4),
           ("thing", 0.3)),
          re.compile(r"^[a-z][\w.+-]*$")),
)  # fmt: skip

#: "how do I make it ...": documentation answers with an option first, else a command or setting
HOW_TO = re.compile(r"^how (?:do|can|should|would|could|must) (?:i|we|you|one)\b")
HOW_TO_KINDS = (
    ("option", 1.0), ("command", 0.75), ("key", 0.7), ("code", 0.7), ("path", 0.5),
    ("thing", 0.5), ("name", 0.5),
)  # fmt: skip


def asked_kinds(clause: str) -> tuple[tuple[str, float], ...] | None:
    """The literal kinds the asking clause of a question names through its head noun phrase
    ("Which environment variable ...", "what option", "which directory"), or None."""
    low = clause.lower()
    if HOW_TO.match(low):
        return HOW_TO_KINDS
    m = re.match(r"^(?:\w+\s+)?(?:which|what)\s+((?:[\w.-]+\s+){0,5}[\w.-]+)", low)
    return named_kinds(m.group(1)) if m else None


def named_kinds(text: str) -> tuple[tuple[str, float], ...] | None:
    """The kinds of the value `text` names first ("option", "environment variable", ...)."""
    found = [(m.start(), i) for i, a in enumerate(ASKED) if (m := a.words.search(text))]
    return ASKED[min(found)[1]].kinds if found else None


def asked_token(question: str) -> re.Pattern[str] | None:
    """The token pattern of the first kind of `ASKED` (in its order) whose words `question`
    holds, or None: what a model's answer token must look like to be of the asked kind."""
    return next((a.token for a in ASKED if a.words.search(question)), None)


@lru_cache(maxsize=65536)
def _english(word: str) -> bool:
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en") >= 2.0


def literal_spans(text: str) -> list[tuple[str, str, int, int]]:
    """(literal, kind, start, end) of every literal of `text` (see the module docstring)."""
    out: list[tuple[str, str, int, int]] = []
    for pattern, kind in ((OPTION, "option"), (ENVVAR, "envvar"), (PATH, "path"), (KEY, "key")):
        for m in pattern.finditer(text):
            literal = m.group(0)
            if kind == "path" and ("/" not in literal and _ABBREVIATION.match(literal)):
                continue
            out.append((literal, kind, m.start(), m.end()))
    for m in MAN_REFERENCE.finditer(text):
        out.append((m.group(1), "command", m.start(1), m.end(1)))
    for m in _LOWER_WORD.finditer(text):
        word = m.group(0)
        if len(word) >= 3 and not _english(word.replace("-", " ").split()[0]):
            out.append((word, "key", m.start(), m.end()))
            out.append((word, "command", m.start(), m.end()))
    return out


def option_aliases(text: str) -> dict[str, frozenset[str]]:
    """Each option of `text` written together with others as one ("-s, --spaces"; a term that
    opens the text, "-a --all"), mapped to the names of the group: an answer and its alias."""
    out: dict[str, frozenset[str]] = {}
    runs = [m.group(0) for m in _ALIASES.finditer(text)]
    term = _TERM.match(text)
    if term:
        runs.append(term.group(0))
    for run in runs:
        names = frozenset(m.group(0) for m in OPTION.finditer(run))
        if len(names) > 1:
            for name in names:
                out[name] = out.get(name, frozenset()) | names
    return out
