"""Markdown, reStructuredText and HTML to clean sections, on small documents written here."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphseek.knowledge.markup import (
    MarkupDocument,
    MarkupError,
    Section,
    convert,
    html_document,
    markdown_document,
    rst_document,
)

# ------------------------------------------------------------------------------- Markdown

README = """\
---
title: front matter is metadata
---
[![PyPI](https://img.shields.io/pypi/v/wordfreq.svg)](https://pypi.org/project/wordfreq/)
![logo](https://example.org/logo.png)

<!-- a comment that must go -->

# wordfreq

wordfreq looks up word frequencies. See the [documentation](https://example.org/docs "Docs")
or <https://example.org>.

## Tokenization

wordfreq uses the external Python library `jieba` for Chinese. <!-- inline note -->
Call `tokenize(text, lang)`.

```python
from wordfreq import tokenize

tokenize("hello world", "en")
```

### Chinese

- First *item* with **bold** and [a link](https://x.org)
- Second item

1. one
2. two

| Option | Default |
|--------|---------|
| `lang` | en      |

## Licence

Apache 2.0.
"""


def test_markdown_reads_like_the_rendered_page() -> None:
    doc = markdown_document(README)
    assert doc == MarkupDocument(
        title="wordfreq",
        sections=[
            Section(
                "",
                "wordfreq looks up word frequencies. See the documentation or https://example.org.",
            ),
            Section(
                "Tokenization",
                "wordfreq uses the external Python library `jieba` for Chinese. "
                "Call `tokenize(text, lang)`.\n\n"
                '`from wordfreq import tokenize`\n`tokenize("hello world", "en")`',
            ),
            Section(
                "Tokenization > Chinese",
                "- First item with bold and a link\n- Second item\n\n1. one\n2. two\n\n"
                "Option | Default\n`lang` | en",
            ),
            Section("Licence", "Apache 2.0."),
        ],
    )
    text = "\n".join(s.text for s in doc.sections)
    for gone in ("](", "shields.io", "logo", "comment", "inline note", "front matter", "**"):
        assert gone not in text


def test_markdown_title_is_the_lone_top_heading() -> None:
    two = markdown_document("# A\n\nx\n\n# B\n\ny\n")
    assert two == MarkupDocument("", [Section("A", "x"), Section("B", "y")])
    late = markdown_document("## Usage\n\nu\n\n# Late\n\nl\n")  # the h1 is not the first heading
    assert late.title == "" and [s.title for s in late.sections] == ["Usage", "Late"]
    none = markdown_document("Just text with `code`.")
    assert none == MarkupDocument("", [Section("", "Just text with `code`.")])
    deep = markdown_document("# T\n\n## A\n\n### B\n\nb\n\n## C\n\nc\n")
    assert deep == MarkupDocument("T", [Section("A > B", "b"), Section("C", "c")])


def test_markdown_raw_html_is_read_not_leaked() -> None:
    doc = markdown_document(
        '<h1 align="center">Tool</h1>\n\n<p align="center"><img src="x.png"> Fast <b>tool</b>'
        "</p>\n\n<details><summary>More</summary>\n\nHidden *detail*.\n\n</details>\n"
    )
    assert doc == MarkupDocument("Tool", [Section("", "Fast tool\n\nMore\n\nHidden detail.")])


def test_markdown_badges_only_leave_nothing() -> None:
    badges = "[![ci](https://ci/badge.svg)](https://ci) [![pypi](https://b.svg)](https://pypi)\n"
    assert markdown_document(badges) == MarkupDocument("", [])
    assert markdown_document("") == MarkupDocument("", [])
    assert markdown_document("<!-- only a comment -->") == MarkupDocument("", [])


def test_markdown_indented_code_and_code_in_headings() -> None:
    doc = markdown_document("# The `run()` call\n\nIt runs:\n\n    run()\n    run(fast=True)\n")
    assert doc == MarkupDocument(
        "The run() call", [Section("", "It runs:\n\n`run()`\n`run(fast=True)`")]
    )


def test_markdown_myst_roles_and_directives() -> None:
    doc = markdown_document(
        "# T\n\nSee {ref}`the guide <guide-label>`, {mod}`ensurepip` and {py:func}`~os.path.join`."
        "\n\n```{note}\nA *note* here.\n```\n\n```{toctree}\n:maxdepth: 2\n\nintro\n```\n\n"
        "```{code-block} python\nx = 1\n```\n\n```{eval-rst}\n.. note:: RST *inside*.\n```\n"
    )
    assert doc == MarkupDocument(
        "T",
        [
            Section(
                "",
                "See the guide, `ensurepip` and `os.path.join`.\n\nA note here.\n\n`x = 1`\n\n"
                "RST inside.",
            )
        ],
    )


# ------------------------------------------------------------------------ reStructuredText

RST = """\
.. image:: https://img.shields.io/pypi/v/mytool.svg
   :target: https://pypi.org/project/mytool

========
 mytool
========

|ci| mytool converts |fmt| files.

.. |ci| image:: https://github.com/x/y/badge.svg
   :target: https://github.com/x/y/actions
.. |fmt| replace:: YAML

Usage
=====

Run ``mytool --fast`` to go fast. See `the docs <https://docs.example.org>`_,
:func:`~mytool.api.run` and :ref:`the guide <guide>`.

.. code-block:: shell

   mytool --fast input.yml

   mytool --help

Options
-------

:Author: Jane Doe
:Version: 1.2

--fast       Go fast.
-q, --quiet  Be quiet.

term
   Its definition.

.. toctree::

   api

.. a comment

::

    literal text here

>>> print(1)
1
"""


def test_rst_sections_literal_blocks_and_inline_markup() -> None:
    doc = rst_document(RST)
    assert doc == MarkupDocument(
        title="mytool",
        sections=[
            Section("", "mytool converts YAML files."),
            Section(
                "Usage",
                "Run `mytool --fast` to go fast. See the docs, `mytool.api.run` and the guide.\n\n"
                "`mytool --fast input.yml`\n`mytool --help`",
            ),
            Section(
                "Usage > Options",
                "Author: Jane Doe\nVersion: 1.2\n\n`--fast`: Go fast.\n`-q, --quiet`: Be quiet."
                "\n\nterm\nIts definition.\n\n`literal text here`\n\n`>>> print(1)`\n`1`",
            ),
        ],
    )
    text = "\n".join(s.text for s in doc.sections)
    for gone in ("http", "badge", "comment", "toctree", "|", ":func:", "Unknown"):
        assert gone not in text


def test_rst_reads_no_file_and_runs_no_raw(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    doc = rst_document(
        f"Title\n=====\n\n.. include:: {secret}\n\n.. raw:: html\n\n   <b>raw</b>\n\n"
        f".. literalinclude:: {secret}\n\nBody.\n"
    )
    assert doc == MarkupDocument("Title", [Section("", "Body.")])


def test_rst_several_top_sections_have_no_title() -> None:
    doc = rst_document("A\n=\n\na text\n\nB\n=\n\nb text\n\nB1\n--\n\nb1 text\n")
    assert doc == MarkupDocument(
        "", [Section("A", "a text"), Section("B", "b text"), Section("B > B1", "b1 text")]
    )


# ------------------------------------------------------------------------------------ HTML

PAGE = """<!DOCTYPE html>
<html><head><title>Guide - Site</title><style>body { color: red }</style>
<script>var x = "<p>no</p>";</script></head>
<body>
<nav><a href="/">Home</a></nav>
<div role="navigation">Sidebar links</div>
<h1>Guide<a class="headerlink" href="#guide" title="Permalink">¶</a></h1>
<p>Intro &amp; <a href="https://x.org">link text</a>. <!-- comment -->
<img src="badge.svg" alt="badge"> <a href="#setup">see Setup</a></p>
<h2 id="setup">Setup</h2>
<p>Install with <code>pip install guide</code>.</p>
<pre><code>guide --init
guide run</code></pre>
<table><tr><th>Key</th><th>Value</th></tr><tr><td>port</td><td><code>8080</code></td></tr></table>
<noscript>Enable JS</noscript><template><p>tpl</p></template>
<script>console.log("late")</script>
</body></html>"""


def test_html_keeps_the_text_and_drops_the_rest() -> None:
    doc = html_document(PAGE)
    assert doc == MarkupDocument(
        "Guide",
        [
            Section("", "Intro & link text. see Setup"),
            Section(
                "Setup",
                "Install with `pip install guide`.\n\n`guide --init`\n`guide run`\n\n"
                "Key | Value\nport | `8080`",
            ),
        ],
    )


def test_html_title_element_when_no_lone_h1() -> None:
    doc = html_document("<html><head><title>  The  Page </title></head><body><p>x</p></body>")
    assert doc == MarkupDocument("The Page", [Section("", "x")])
    assert html_document("<h2>A</h2><p>a</p>") == MarkupDocument("", [Section("A", "a")])


def test_html_xml_declaration_and_control_characters() -> None:
    doc = html_document(
        '<?xml version="1.0" encoding="utf-8"?><html><body><p>caf\u00e9 \x00x\x01'
        "\x90y\x94</p></body></html>"
    )
    assert doc == MarkupDocument("", [Section("", "café xy")])
    assert html_document("") == MarkupDocument("", [])
    assert html_document("   \n") == MarkupDocument("", [])


# -------------------------------------------------------------------------------- dispatch


def test_convert_by_suffix() -> None:
    assert convert("# T\n\nx", ".MD").title == "T"
    assert convert("T\n=\n\nx", ".rst").title == "T"
    assert convert("<h1>T</h1><p>x</p>", ".htm").title == "T"
    with pytest.raises(MarkupError, match=r"\.pdf"):
        convert("x", ".pdf")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300), suffix=st.sampled_from([".md", ".rst", ".html"]))
def test_any_text_converts_to_clean_sections(text: str, suffix: str) -> None:
    try:
        doc = convert(text, suffix)
    except MarkupError:
        return
    for section in doc.sections:
        assert section.text and section.text == section.text.strip()
        assert not any(c in section.text for c in "\x90\x91\x92\x93\x94\x95")
