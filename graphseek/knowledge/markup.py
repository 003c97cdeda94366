"""Markdown, reStructuredText and HTML to clean text, split into sections at their headings.

Each converter is a pure function `text -> MarkupDocument`: the document's own title (see below)
and its sections in document order, each a `Section(title, text)` whose title is the path of
headings above it below the document title, joined with " > " ("" for text before the first
heading), and whose text is what a reader of the rendered page sees:

- link text is kept and link targets dropped; a URL that is itself the visible text (an autolink,
  a bare URL) stays, as the rendered page shows it;
- images are dropped, so badges (an image inside a link, e.g. shields.io) leave nothing; so are
  HTML comments, `<script>` / `<style>` / `<template>` / embedded media, form controls,
  navigation (`<nav>`, `role="navigation"`) and permalink markers (an in-page link without
  letters or digits, as Sphinx and MkDocs put after headings: "¶");
- code spans are written between backticks (`` `jieba` ``) so readers downstream can tell
  identifiers from prose; a code block becomes its own paragraph with every non-blank line
  between backticks (so a chunk cut inside a long block still marks its code);
- paragraphs are separated by a blank line; list items are lines starting with "- " (or "1. "),
  table rows lines of cells joined by " | ", definition terms and field names lines of their own;
- headings start sections and are not repeated in the text.

The document title is the document's own title when it has one: its first heading, when that is
its only top-level heading (Markdown / HTML `h1`; the lone top-level section of
reStructuredText, as docutils' own doctitle transform decides), else an HTML `<title>`; else "".
The loader uses it instead of the file stem when present: a folder of `README.md` files gets
"wordfreq: Tokenization", not "README: Tokenization".

Parsers, and why (all well kept, permissively licensed, installed from PyPI wheels):

- Markdown: **cmarkgfm** (MIT; GitHub's C reference implementation cmark-gfm, BSD-2), with the
  GitHub extensions (tables, strikethrough, autolinks, task lists), rendered to HTML and read by
  the HTML converter below. markdown-it-py (already installed through rich) gives an equally
  good token stream, but it is pure Python: parsing alone would cost many times the whole
  plain-text load of the same files, where cmark-gfm and lxml together cost about as much as
  that load. One HTML reader for both formats also
  means raw HTML inside Markdown (`<h1 align="center">`, `<details>`) is read, not leaked.
  MyST roles ({mod}`x`) and directive fences (```{note}) of Sphinx's Markdown are read as
  reStructuredText's are (below).
- HTML: **lxml** (BSD-3; libxml2's forgiving HTML parser, in C) builds a tree with comments and
  processing instructions removed at parse time, and one small XSLT 1.0 stylesheet run by
  libxslt (also inside lxml) writes its text out with breaks, list markers and code marks,
  skipping what is not text. Walking the tree in Python instead cost more than cmark-gfm and
  the parser together.
- reStructuredText: **docutils** (public domain / BSD-2; the reference implementation, the
  parser Sphinx and PyPI use). It is parsed without running docutils' transforms (substitutions
  are resolved here: text ones inline, image ones, i.e. badges, dropped), with file insertion
  (`include`) and `raw` disabled and every report silenced; unknown (Sphinx) roles such as
  :func:`~pkg.name` keep their text, as code unless the role names prose (:ref:, :doc:,
  :term:, ...); unknown directives, comments, targets and system messages are dropped. docutils
  is pure Python: reStructuredText loads far slower than the same files as plain text (still
  small beside indexing the passages it yields).

`benchmarks/loading.py` measures each format's load against the plain-text load of the same
files.

Parse failures raise `MarkupError` naming the format; the loader turns them into its one-line
`CorpusError` for the file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import cmarkgfm
from cmarkgfm.cmark import Options
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser as RstParser
from docutils.utils import new_document
from lxml import etree

__all__ = [
    "CONVERTERS",
    "MarkupDocument",
    "MarkupError",
    "Section",
    "convert",
    "html_document",
    "markdown_document",
    "rst_document",
]

#: how the headings of a section's path are joined into its title
PATH_SEPARATOR = " > "


class MarkupError(ValueError):
    """A document its parser could not read."""


class Section(NamedTuple):
    """A run of clean text under one heading path ("" before the first heading)."""

    title: str
    text: str


@dataclass(frozen=True)
class MarkupDocument:
    """A converted document: its own title ("" if it has none) and its non-empty sections."""

    title: str
    sections: list[Section]


# ------------------------------------------------------------------------------ text builder

# Text is produced with sentinels for breaks and list markers and cleaned once by plain string
# operations (in C), which is what keeps conversion fast. The sentinels are C1 control
# characters that XML allows and Python does not count as whitespace (lxml takes no C0 control
# characters in text); they are removed from the input.
_LINE, _PARA, _MARK, _MARK_END = "\x90", "\x91", "\x92", "\x93"
_SENTINELS = re.compile("[\x90-\x95]")
# what lxml refuses in text (control characters but tab and line breaks, surrogates, U+FFFE/F)
# and the sentinels: taken out of every input
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff\x90-\x95]")
_SPACES = re.compile(r"\s+")
_BREAK_RUN = re.compile("[\x90\x91\x93][ \x90\x91\x93]*")


def _without_sentinels(text: str) -> str:
    return _SENTINELS.sub("", text) if _SENTINELS.search(text) else text


def _safe(text: str) -> str:
    return _UNSAFE.sub("", text) if _UNSAFE.search(text) else text


def _merge_breaks(match: re.Match[str]) -> str:
    run = match.group()
    if _MARK_END in run:  # a list marker eats the breaks after it
        return " "
    return "\n\n" if _PARA in run else "\n"


def _clean(raw: str) -> str:
    """Collapse whitespace, merge each run of breaks into its strongest (a blank line or a line
    break) and drop breaks right after list markers (string operations and one regular
    expression that matches at the sentinels only, all in C but a call per run of breaks)."""
    text = " ".join(raw.split())  # the sentinels are not whitespace
    text = _BREAK_RUN.sub(_merge_breaks, text).replace(_MARK, "").replace(" \n", "\n")
    return text.strip(" \n")


@dataclass
class _Heading:
    level: int
    text: str
    index: int  # order of appearance, to recognise the title heading


@dataclass
class _Builder:
    """Collects clean text section by section. Breaks are merged (two paragraph breaks in a row
    are one); inside a list item a paragraph break is a line break, inside a table cell or a
    heading a space; a break right after a list marker is dropped. Text may be appended to
    `parts` directly (its whitespace is collapsed when the section is cleaned)."""

    sections: list[tuple[tuple[_Heading, ...], str]] = field(default_factory=list)
    headings: list[_Heading] = field(default_factory=list)
    path: list[_Heading] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    in_item: int = 0
    in_cell: int = 0
    cleaned: bool = False  # the parts are clean text already

    def text(self, s: str) -> None:
        self.parts.append(s)

    def code_span(self, s: str) -> None:
        s = s.strip()
        if s:
            self.parts.append(f" `{s}` " if self.in_cell else f"`{s}`")

    def code_block(self, s: str) -> None:
        lines = [f"`{line.strip()}`" for line in s.splitlines() if line.strip()]
        if lines:
            self.brk(2)
            self.parts.append(_LINE.join(lines))
            self.brk(2)

    def marker(self, s: str) -> None:
        self.brk(1)
        self.parts.append(f"{_MARK}{s.strip()}{_MARK_END}")

    def brk(self, n: int) -> None:
        if self.in_cell:
            self.parts.append(" ")
        elif n == 1 or self.in_item:
            self.parts.append(_LINE)
        else:
            self.parts.append(_PARA)

    def inline(self) -> str:
        """The text collected so far as one line (a heading's)."""
        return _SPACES.sub(" ", _SENTINELS.sub("", "".join(self.parts))).strip()

    def heading(self, level: int, text: str) -> None:
        if not text:
            return
        self._close()
        while self.path and self.path[-1].level >= level:
            self.path.pop()
        heading = _Heading(level, text, len(self.headings))
        self.headings.append(heading)
        self.path.append(heading)

    def _close(self) -> None:
        text = "".join(self.parts)
        text = text.strip(" \n") if self.cleaned else _clean(text)
        if text:
            self.sections.append((tuple(self.path), text))
        self.parts = []

    def document(self, fallback_title: str = "") -> MarkupDocument:
        """The sections so far; the document title is the first heading when it is the only
        heading of level 1 (then it is left out of every section's path)."""
        self._close()
        top = [h for h in self.headings if h.level == 1]
        title_heading = top[0] if len(top) == 1 and self.headings[0] is top[0] else None
        sections = []
        for path, text in self.sections:
            names = [h.text for h in path if h is not title_heading]
            sections.append(Section(PATH_SEPARATOR.join(names), text))
        title = title_heading.text if title_heading else _SPACES.sub(" ", fallback_title).strip()
        return MarkupDocument(title, sections)


# ------------------------------------------------------------------------------------- HTML

_DROP = (
    "script style template noscript head img picture svg math canvas video audio source track "
    "iframe object embed map area nav button input select textarea form label dialog".split()
)
_BLOCK = frozenset(
    "p div section article main aside header footer blockquote figure figcaption center address "
    "table caption dl details summary fieldset body html hr".split()
)
_LINE_TAGS = frozenset("tr dt dd li".split())
_CODE = frozenset("code kbd samp tt var".split())
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HTML_PARSER = etree.HTMLParser(
    encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, recover=True
)
# Headings become "<_HEAD><level><text><_HEAD_END>" in the text, which is split there.
_HEAD, _HEAD_END = "\x94", "\x95"
_HEADING_MARK = re.compile("\x94([1-6])([^\x95]*)\x95")

# The page's text with the breaks, markers and marks written in as sentinels, by one XSLT 1.0
# transform run in C by libxslt (walking the tree in Python cost more than parsing it). What is
# not text (`_DROP`), hidden and navigation elements and permalink markers ("¶", as Sphinx and
# MkDocs put after headings) give nothing; other inline elements let their text flow (XSLT's
# built-in rule). Modes: inside a list item a block is a line; inside a table cell everything
# is one line.
_BLOCK_MATCH = "|".join(sorted(_BLOCK))
_LINE_MATCH = "tr|dt|dd|br"
_CODE_MATCH = "|".join(sorted(_CODE))
_HEADING_MATCH = "|".join(_HEADINGS)
_DROP_MATCH = "|".join(_DROP)
_HIDDEN_MATCH = "*[@hidden or @aria-hidden='true' or @role='navigation']"
# a permalink marker: an in-page link whose text is at most two characters, none a letter or
# digit (XPath 1.0 has no character classes: ASCII letters and digits are checked)
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_PERMALINK_MATCH = (
    "a[starts-with(@href, '#') and string-length(normalize-space()) &lt; 3"
    f" and translate(normalize-space(), '{_ALNUM}', '') = normalize-space()]"
)
_XSLT_HEAD = """<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8"/>
<xsl:template match="{skip}" priority="10"/>
<xsl:template match="{skip}" mode="item" priority="10"/>
<xsl:template match="{skip}" mode="cell" priority="10"/>
"""
_XSLT_BODY = f"""<xsl:template match="{_BLOCK_MATCH}">{_PARA}<xsl:apply-templates/>{_PARA}</xsl:template>
<xsl:template match="{_BLOCK_MATCH}|{_LINE_MATCH}" mode="item">{_LINE}<xsl:apply-templates mode="item"/>{_LINE}</xsl:template>
<xsl:template match="{_LINE_MATCH}">{_LINE}<xsl:apply-templates/>{_LINE}</xsl:template>
<xsl:template match="ul|ol" mode="item">{_LINE}<xsl:apply-templates select="*"/>{_LINE}</xsl:template>
<xsl:template match="ul|ol">{_PARA}<xsl:apply-templates select="*"/>{_PARA}</xsl:template>
<xsl:template match="li">{_LINE}{_MARK}-{_MARK_END}<xsl:apply-templates mode="item"/>{_LINE}</xsl:template>
<xsl:template match="ol/li">{_LINE}{_MARK}<xsl:number/>.{_MARK_END}<xsl:apply-templates mode="item"/>{_LINE}</xsl:template>
<xsl:template match="td|th"><xsl:if test="preceding-sibling::*"> | </xsl:if><xsl:apply-templates mode="cell"/></xsl:template>
<xsl:template match="*" mode="cell"> <xsl:apply-templates mode="cell"/> </xsl:template>
<xsl:template match="{_CODE_MATCH}">`<xsl:value-of select="normalize-space()"/>`</xsl:template>
<xsl:template match="{_CODE_MATCH}" mode="item">`<xsl:value-of select="normalize-space()"/>`</xsl:template>
<xsl:template match="{_CODE_MATCH}" mode="cell"> `<xsl:value-of select="normalize-space()"/>` </xsl:template>
<xsl:template match="pre">{_PARA}<xsl:value-of select="."/>{_PARA}</xsl:template>
<xsl:template match="pre" mode="item">{_LINE}<xsl:value-of select="."/>{_LINE}</xsl:template>
<xsl:template match="pre" mode="cell"> <xsl:value-of select="translate(., '{_LINE}', ' ')"/> </xsl:template>
<xsl:template match="{_HEADING_MATCH}">{_PARA}{_HEAD}<xsl:value-of select="substring(local-name(), 2)"/><xsl:apply-templates mode="cell"/>{_HEAD_END}{_PARA}</xsl:template>
<xsl:template match="{_HEADING_MATCH}" mode="item"> <xsl:apply-templates mode="cell"/> </xsl:template>
</xsl:stylesheet>"""


@functools.cache
def _stylesheet(hidden: bool, permalinks: bool) -> Any:
    """The text stylesheet, compiled on first use. The attribute tests cost a check of every
    element: each is left out of the stylesheet used for a page whose source never mentions its
    attribute."""
    skip = "|".join(
        [_DROP_MATCH]
        + ([_HIDDEN_MATCH] if hidden else [])
        + ([_PERMALINK_MATCH] if permalinks else [])
    )
    return etree.XSLT(etree.XML(_XSLT_HEAD.format(skip=skip) + _XSLT_BODY))


def _mark_code_blocks(root: Any) -> None:
    """Each `<pre>` becomes its non-blank lines, each between backticks, joined by line
    breaks (in Python: few elements, and XSLT 1.0 has no string split). A MyST directive fence
    (```{note}, as Sphinx's Markdown writes them) is read by what it holds: code for code
    directives, text for admonitions and the like, nothing for toctree / include / autodoc."""
    for pre in root.iter("pre"):
        content = "".join(pre.itertext())
        directive = _MYST_FENCE.fullmatch(pre.get("lang") or "")
        if directive is None or directive.group(1) in _MYST_CODE:
            lines = content.splitlines()
            text = _LINE.join(f"`{line.strip()}`" for line in lines if line.strip())
        else:
            text = _myst_directive_text(directive.group(1), content)
        for child in list(pre):
            pre.remove(child)
        pre.text = text


_MYST_FENCE = re.compile(r"\{([\w:.+-]+)\}")
_MYST_CODE = frozenset("code-block code sourcecode code-cell".split())
_MYST_NO_TEXT = frozenset("toctree contents include literalinclude image raw".split())
_DIRECTIVE_OPTION = re.compile(r"^:[\w-]+:.*$", re.M)


def _myst_directive_text(name: str, content: str) -> str:
    if name in _MYST_NO_TEXT or name.startswith("auto"):
        return ""
    content = _DIRECTIVE_OPTION.sub("", content)
    document = rst_document(content) if name == "eval-rst" else markdown_document(content)
    return _LINE.join(s.text for s in document.sections)


def _html_sections(root: Any, title: str, source: str) -> MarkupDocument:
    _mark_code_blocks(root)
    hidden = "hidden" in source or "navigation" in source
    permalinks = 'href="#' in source or "href='#" in source
    try:
        text = _clean(str(_stylesheet(hidden, permalinks)(root)))  # the heading marks stay
    except etree.XSLTError as exc:  # e.g. nesting deeper than libxslt's template depth
        raise MarkupError(f"HTML text extraction failed: {exc}") from exc
    b = _Builder(cleaned=True)
    position = 0
    for match in _HEADING_MARK.finditer(text):
        b.parts.append(text[position : match.start()])
        heading = match.group(2).replace("`", "")  # a title is plain text
        b.heading(int(match.group(1)), " ".join(heading.split()))
        position = match.end()
    b.parts.append(text[position:])
    return b.document(title)


def _html_root(html: str) -> Any:
    data = _safe(html).encode("utf-8")
    try:
        return etree.fromstring(data, _HTML_PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        if not html.strip():
            return None
        raise MarkupError(f"HTML parser failed: {exc}") from exc


def _read_html(html: str, *, use_title_element: bool) -> MarkupDocument:
    root = _html_root(html)
    b = _Builder()
    if root is None:
        return b.document()
    title = ""
    if use_title_element:
        found = root.find(".//title")
        if found is not None:
            title = "".join(found.itertext())
    return _html_sections(root.getroottree(), title, html)  # the whole document: head is skipped


def html_document(text: str) -> MarkupDocument:
    """Clean sections of an HTML page (see the module docstring)."""
    return _read_html(text, use_title_element=True)


# --------------------------------------------------------------------------------- Markdown

# YAML (---) or TOML (+++) front matter at the very start: metadata, not text
_FRONT_MATTER = re.compile(
    r"\A(?:---|\+\+\+)[ \t]*\n.*?\n(?:---|\+\+\+|\.\.\.)[ \t]*(?:\n|\Z)", re.S
)


# a MyST role as it reads once converted: {role} then its content as a code span
_MYST_ROLE = re.compile(r"\{([\w:.+-]+)\}`([^`]*)`")


def _myst_role(match: re.Match[str]) -> str:
    return _role_text(match.group(1).rsplit(":", 1)[-1], match.group(2))


def markdown_document(text: str) -> MarkupDocument:
    """Clean sections of a (GitHub-flavoured) Markdown text (see the module docstring). MyST
    roles and directives (Sphinx's Markdown) read as reStructuredText's do."""
    text = _FRONT_MATTER.sub("", text, count=1)
    html = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    document = _read_html(html, use_title_element=False)
    if "}`" not in text:
        return document
    sections = [Section(s.title, _MYST_ROLE.sub(_myst_role, s.text)) for s in document.sections]
    return MarkupDocument(document.title, sections)


# ------------------------------------------------------------------------ reStructuredText

_RST_SETTINGS = get_default_settings(RstParser)
for _name, _value in {
    "report_level": 5,  # no reports
    "halt_level": 5,  # never stop
    "warning_stream": False,
    "file_insertion_enabled": False,  # `include` and friends read nothing from disk
    "raw_enabled": False,
    "syntax_highlight": "none",  # no pygments run on code blocks
}.items():
    setattr(_RST_SETTINGS, _name, _value)
#: Sphinx roles whose text is prose, not code (other unknown roles read as code)
_PROSE_ROLES = frozenset(
    "ref doc term numref download guilabel menuselection dfn abbr keyword index".split()
)
_UNKNOWN_ROLE = re.compile(r"^(?::[\w.+-]+)*:([\w.+-]+):`(.*)`$", re.S)
_ROLE_TARGET = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)
_RST_DROP = (
    nodes.image,
    nodes.comment,
    nodes.target,
    nodes.system_message,
    nodes.raw,
    nodes.substitution_definition,
    nodes.footnote_reference,
    nodes.citation_reference,
    nodes.label,
    nodes.pending,
)
_RST_CODE_BLOCKS = (nodes.literal_block, nodes.doctest_block)
_RST_PARAGRAPHS = (nodes.paragraph, nodes.title, nodes.subtitle, nodes.rubric, nodes.caption)
_RST_LINES = (nodes.term, nodes.classifier, nodes.line, nodes.attribution, nodes.field_name)


def _role_text(role: str, content: str) -> str:
    """What a Sphinx role shows: its text (not its `<target>`), as code unless a prose role."""
    target = _ROLE_TARGET.match(content)
    content = (target.group(1) if target and target.group(1) else content).lstrip("~!").strip()
    return content if role in _PROSE_ROLES or not content else f"`{content}`"


def _rst_role(text: str, b: _Builder) -> None:
    match = _UNKNOWN_ROLE.match(text)
    b.text(text if match is None else _role_text(*match.groups()))


@dataclass
class _RstReader:
    builder: _Builder
    substitutions: dict[str, nodes.Element]

    def children(self, node: nodes.Node) -> None:
        for child in node.children:
            self.walk(child)

    def walk(self, node: nodes.Node) -> None:
        b = self.builder
        if isinstance(node, nodes.Text):
            b.text(node.astext())
        elif isinstance(node, _RST_DROP):
            return
        elif isinstance(node, nodes.section):
            title = next((c for c in node.children if isinstance(c, nodes.title)), None)
            depth = sum(1 for _ in _ancestors(node, nodes.section))
            b.heading(depth, self.heading_text(title) if title is not None else "")
            for child in node.children:
                if child is not title:
                    self.walk(child)
        elif isinstance(node, _RST_CODE_BLOCKS):
            if b.in_cell:
                b.code_span(node.astext())
            else:
                b.code_block(node.astext())
        elif isinstance(node, nodes.literal | nodes.title_reference):
            b.code_span(node.astext())
        elif isinstance(node, nodes.problematic):
            _rst_role(node.astext(), b)
        elif isinstance(node, nodes.substitution_reference):
            name = nodes.fully_normalize_name(node["refname"])
            definition = self.substitutions.pop(name, None)  # popped: no endless self-reference
            if definition is not None:
                self.children(definition)
                self.substitutions[name] = definition
        elif isinstance(node, nodes.bullet_list | nodes.enumerated_list):
            b.brk(2)
            start = node.get("start", 1)
            for i, item in enumerate(node.children):
                b.marker(f"{start + i}. " if isinstance(node, nodes.enumerated_list) else "- ")
                b.in_item += 1
                self.children(item)
                b.in_item -= 1
                b.brk(1)
            b.brk(2)
        elif isinstance(node, nodes.entry):
            b.in_cell += 1
            parent = node.parent
            if parent is not None and parent.index(node) > 0:
                b.text(" | ")
            self.children(node)
            b.in_cell -= 1
        elif isinstance(node, nodes.row):
            b.brk(1)
            self.children(node)
            b.brk(1)
        elif isinstance(node, nodes.field_name):  # the body follows on the same line
            b.marker(f"{node.astext()}:")
        elif isinstance(node, nodes.option_group):
            b.marker(f"`{node.astext()}`:")
        elif isinstance(node, nodes.field | nodes.option_list_item | nodes.definition_list_item):
            b.brk(1)  # one line (or a few) per field, option or term, as a list item
            b.in_item += 1
            self.children(node)
            b.in_item -= 1
            b.brk(1)
        elif isinstance(node, _RST_LINES):
            b.brk(1)
            self.children(node)
            b.brk(1)
        elif isinstance(node, nodes.Inline):  # emphasis, strong, reference, inline, ...
            self.children(node)
        elif isinstance(node, (*_RST_PARAGRAPHS, nodes.Structural, nodes.Body)):
            b.brk(2)
            self.children(node)
            b.brk(2)
        else:
            self.children(node)

    def heading_text(self, title: nodes.Element) -> str:
        sub = _Builder(in_cell=1)  # a heading is one line
        _RstReader(sub, self.substitutions).children(title)
        return sub.inline().replace("`", "")


def _ancestors(node: nodes.Node, kind: type) -> Iterable[nodes.Node]:
    current: nodes.Node | None = node
    while current is not None:
        if isinstance(current, kind):
            yield current
        current = current.parent


def rst_document(text: str) -> MarkupDocument:
    """Clean sections of a reStructuredText text (see the module docstring)."""
    document = new_document("<rst>", _RST_SETTINGS)
    try:
        RstParser().parse(_safe(text), document)
    except Exception as exc:  # docutils raises assorted errors on pathological input
        raise MarkupError(f"reStructuredText parser failed: {exc}") from exc
    substitutions: dict[str, nodes.Element] = {}
    for definition in document.findall(nodes.substitution_definition):
        for name in definition["names"]:
            substitutions[nodes.fully_normalize_name(name)] = definition
    b = _Builder()
    try:
        _RstReader(b, substitutions).children(document)
    except RecursionError as exc:
        raise MarkupError("reStructuredText nested too deeply to read") from exc
    return b.document()


# ------------------------------------------------------------------------------- dispatch

CONVERTERS: dict[str, Callable[[str], MarkupDocument]] = {
    ".md": markdown_document,
    ".markdown": markdown_document,
    ".rst": rst_document,
    ".html": html_document,
    ".htm": html_document,
}


def convert(text: str, suffix: str) -> MarkupDocument:
    """Convert `text` by the converter of the file suffix `suffix` (e.g. ".md")."""
    try:
        converter = CONVERTERS[suffix.lower()]
    except KeyError:
        raise MarkupError(f"no markup converter for {suffix!r}") from None
    return converter(text)
