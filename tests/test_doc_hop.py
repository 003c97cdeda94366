"""The second hop through document names (`graphseek.tools.doc_hop`): a tiny corpus of
configuration-file pages, one naming another whose page holds the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphseek.knowledge.passages import Hit, Passage
from graphseek.tools.doc_hop import (
    DocHop,
    DocumentNames,
    document_key,
    name_spans,
    respelled,
    spellings,
    words,
)

PAGES = {
    "deluser.conf.txt": [
        ("deluser.conf: NAME", "/etc/deluser.conf - configuration file for deluser and delgroup."),
        (
            "deluser.conf: DESCRIPTION",
            "The file /etc/deluser.conf contains defaults for the programs deluser and delgroup. "
            "deluser and delgroup also read /etc/adduser.conf, whose settings deluser.conf may "
            "override.",
        ),
    ],
    "adduser.conf.txt": [
        ("adduser.conf: NAME", "adduser.conf - defaults for adduser and addgroup."),
        ("adduser.conf: DHOME", "DHOME names the directory that holds the users' homes."),
        (
            "adduser.conf: DIR_MODE",
            "DIR_MODE: the mode of the homes it creates. Defaults to 0700.",
        ),
        ("adduser.conf: SKEL", "SKEL is the directory whose skeletal files are copied."),
    ],
    "journald.conf.txt": [
        ("journald.conf: NAME", "journald.conf - journal service configuration files."),
        ("journald.conf: Storage", "Storage controls where journal data is stored."),
    ],
    "login.defs.txt": [
        ("login.defs: NAME", "login.defs - shadow password suite configuration."),
        ("login.defs: UMASK", "UMASK is the mode mask of new files and home directories."),
        ("login.defs: HOME_MODE", "HOME_MODE: the mode of new home directories, by default."),
        ("login.defs: CREATE_HOME", "CREATE_HOME: new home directories are made by default."),
    ],
    "xz-utils-NEWS.txt": [("XZ Utils Release Notes", "5.4.0: the default soft limit is 1400 MiB.")],
    "dbus-NEWS.txt": [("NEWS", "dbus 1.14 tarballs are compressed with xz, 35% smaller.")],
    "tar-NEWS.txt": [("NEWS", "tar 1.35 reads zstd archives.")],
    "sed-NEWS.txt": [("sed-NEWS", "sed 4.9 has a new --debug option.")],
    "colord.conf.txt": [("colord.conf: NAME", "colord.conf sets the color profiles of screens.")],
}


def corpus() -> list[Passage]:
    return [
        Passage.from_title_text(title, text, source=f"/docs/{name}")
        for name, pages in PAGES.items()
        for title, text in pages
    ]


def test_words_split_like_the_names():
    assert words("/etc/adduser.conf") == ["etc", "adduser", "conf"]
    assert words("langchain_openai, Pelé") == ["langchain", "openai", "pele"]


def test_a_document_is_its_file_else_its_title():
    assert document_key(Passage.from_title_text("a: b", "x", source="/d/a.txt")) == "/d/a.txt"
    assert document_key(Passage.from_title_text("Lord Byron: Life", "x", source="2wiki")) == (
        "Lord Byron"
    )


def test_document_names():
    names = DocumentNames.of(corpus())
    doc = {Path(d).name: i for i, d in enumerate(names.documents)}
    named = {" ".join(n): Path(names.documents[d]).name for n, d in names.names.items()}
    # file stems and titles, also without the ending most names share ("conf", "news")
    assert named["adduser conf"] == named["adduser"] == "adduser.conf.txt"
    assert named["xz utils"] == named["xz utils release notes"] == "xz-utils-NEWS.txt"
    # a stem's first word that starts no other name
    assert named["xz"] == "xz-utils-NEWS.txt"
    # a title two documents share names neither
    assert "news" not in named
    assert names.mentioned("see /etc/adduser.conf and xz") == [
        doc["adduser.conf.txt"],
        doc["xz-utils-NEWS.txt"],
    ]
    assert list(names.passages[doc["adduser.conf.txt"]]) == [2, 3, 4, 5]


def test_a_wiki_title_without_its_qualifier():
    passages = [
        Passage.from_title_text("Lord Byron (poet)", "He died at Missolonghi.", source="wiki"),
        Passage.from_title_text("Ada Lovelace", "Her father was Lord Byron.", source="wiki"),
    ]
    names = DocumentNames.of(passages)
    assert names.mentioned("the daughter of Lord Byron") == [0]


@pytest.fixture(scope="module")
def hop(tmp_path_factory: pytest.TempPathFactory) -> DocHop:
    from graphseek.knowledge.index import Index

    index = Index.build(corpus(), tmp_path_factory.mktemp("doc-hop") / "index", show_progress=False)
    return DocHop.from_index(index)


QUESTION = (
    "deluser also reads the configuration file of another program. What mode does that file "
    "give new home directories by default?"
)


def test_the_first_hop_names_the_second_document(hop: DocHop):
    by_title = {p.title: p for p in hop.index.passages}
    first = [
        Hit(passage=by_title[t], score=1.0, rank=r)
        for r, t in enumerate(["journald.conf: NAME", "deluser.conf: DESCRIPTION"], start=1)
    ]
    bridges = hop.with_config(max_docs=3, entities=False).bridges(QUESTION, first)
    named = {Path(hop.names.documents[d]).name: sentences for d, sentences in bridges.items()}
    # the question names deluser; the first hop's best passage names only its own document, the
    # second names adduser.conf in its last sentence, which the second hop's query takes
    assert named == {
        "deluser.conf.txt": [],
        "adduser.conf.txt": [
            "deluser and delgroup also read /etc/adduser.conf, whose settings deluser.conf may "
            "override."
        ],
    }


def test_the_second_hop_passage_is_retrieved(hop: DocHop):
    first = [h.passage.title for h in hop.index.search(QUESTION, 3, "bm25")]
    assert "adduser.conf: DIR_MODE" not in first
    # the first hop's fourth passage names adduser.conf; its best passage for the rest of the
    # question comes after the first hop's best two
    hop = hop.with_config(
        keep=2, source_depth=5, order="sentence", max_docs=1, query="question+sentence"
    )
    ids = [h.passage.title for h in hop.retrieve(QUESTION, 3)]
    assert ids == [*first[:2], "adduser.conf: DIR_MODE"]
    assert len(ids) == len(set(ids)) == 3


def test_without_a_named_document_the_first_hop_stands(hop: DocHop):
    question = "Where is journal data stored?"
    lexical = [h.passage.id for h in hop.index.search(question, 3, "bm25")]
    # BM25's order, filled up to 3 by dense similarity where fewer passages share a word
    assert [h.passage.id for h in hop.retrieve(question, 3)][: len(lexical)] == lexical


def test_fewer_passages_sharing_a_word_than_asked_are_filled_by_meaning(hop: DocHop):
    """A question few passages share a word with still gets `k` passages: BM25's, then the
    nearest by dense similarity, ranked 1..k, none twice."""
    question = "Where does the system keep its logs?"
    lexical = hop.index.search(question, 5, "bm25")
    assert len(lexical) < 5
    hits = hop.retrieve(question, 5)
    assert len(hits) == 5 == len({h.passage.id for h in hits})
    assert [h.passage.id for h in hits[: len(lexical)]] == [h.passage.id for h in lexical]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_the_registry_runs_it(hop: DocHop):
    from graphseek.tools.retrievers import get_retriever

    hits = get_retriever("doc_hop")(hop.index, QUESTION, 3)
    assert [h.rank for h in hits] == [1, 2, 3]


def test_a_shared_entity_leads_to_the_other_documents_holding_it(hop: DocHop):
    doc = {Path(d).name: i for i, d in enumerate(hop.names.documents)}
    # the test index has no graph: no entity leads anywhere, and nothing fails
    assert hop.with_config(entities=True)._named("DHOME names the directory.", 0) == []
    shared = hop.with_config(entities=True)
    shared.shared = {("robyn", "speer"): frozenset({doc["sed-NEWS.txt"], doc["tar-NEWS.txt"]})}
    assert shared._named("Author: Robyn Speer", doc["sed-NEWS.txt"]) == [doc["tar-NEWS.txt"]]
    # only from a document that holds it
    assert shared._named("Author: Robyn Speer", doc["dbus-NEWS.txt"]) == []


def test_document_frequencies_come_from_the_bm25_index(hop: DocHop):
    """The idf's document frequencies, read from the index's lexical ranker, are those of
    tokenizing every passage again (the reference)."""
    from collections import Counter

    from graphseek.knowledge.sparse import tokenize

    bm25 = hop.index.lexical_ranker()
    assert bm25 is not None
    expected = Counter(w for p in hop.index.passages for w in set(tokenize(p.content)))
    assert bm25.document_frequencies() == dict(expected)


@pytest.mark.parametrize("query", [QUESTION, "mode of the homes", "journal storage xz", "zzz"])
def test_a_documents_passages_are_scored_alone_as_in_a_corpus_search(hop: DocHop, query: str):
    """Each document's passages get the scores of a whole-corpus BM25 search (0 where it
    does not return them), without that search."""
    every = {
        hop.index.position(h.passage.id): h.score for h in hop.index.search(query, 100, "bm25")
    }
    for group in hop.names.passages:
        lexical = hop._lexical(query, group)
        assert list(lexical) == group.tolist()
        assert lexical == {i: every.get(i, 0.0) for i in group.tolist()}


class _WithoutBM25s:
    """An index store whose lexical ranking is reached only through `search`."""

    def __init__(self, index: object) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)  # type: ignore[arg-type]

    def lexical_ranker(self) -> None:
        return None

    def __getattr__(self, name: str) -> object:
        return getattr(self._index, name)


def test_a_store_without_bm25s_ranks_the_same(hop: DocHop):
    other = DocHop.from_index(_WithoutBM25s(hop.index))  # type: ignore[arg-type]
    assert other.idf == hop.idf
    for query in (QUESTION, "mode of the homes"):
        assert [h.passage.id for h in other.retrieve(query, 5)] == [
            h.passage.id for h in hop.retrieve(query, 5)
        ]


def test_spelling_variants_either_way():
    assert spellings("licence") == ["license"]
    assert spellings("colour") == ["color"] and spellings("color") == ["colour"]
    assert "organization" in spellings("organisation")
    assert spellings("four") == []  # three letters stay before an ending
    # a word the corpus lacks is read as the variant it holds; the rest stand as written
    assert respelled("Under which Licence, and colour?", {"license", "colour", "color"}) == (
        "Under which license, and colour?"
    )
    assert respelled("the licence", {"licence", "license"}) == "the licence"


def test_a_question_in_british_spelling_retrieves_what_the_american_one_does(hop: DocHop):
    british, american = "Which colour?", "Which color?"
    assert respelled(british, hop.idf) == american
    # no passage holds the word as the question spells it
    assert hop.index.search(british, 3, "bm25") == []
    assert [h.passage.id for h in hop.retrieve(british, 3)] == [
        h.passage.id for h in hop.retrieve(american, 3)
    ]
    assert hop.retrieve(british, 3)[0].passage.title == "colord.conf: NAME"


def test_a_name_starts_no_identifier_midway():
    names = {("apt",), ("sources", "list"), ("langgraph", "cli"), ("gzip",), ("pam",)}
    entities = {("cli",), ("sources", "list", "5")}
    spans = name_spans
    # "cli" inside "langgraph-cli" is no name; a name may start one ("pam" of "pam_limits"),
    # not whole; a version after a hyphen is not part of the identifier
    assert spans("uv add langgraph-cli", [names, entities]) == [(("langgraph", "cli"), True)]
    assert spans("the pam_limits module", [names]) == [(("pam",), False)]
    assert spans("apt-get reads sources.list(5)", [names]) == [
        (("apt",), False),
        (("sources", "list"), True),
    ]
    assert spans("since gzip-1.3.10", [names]) == [(("gzip",), True)]
    # a document's name before a longer entity starting at the same word
    assert spans("see sources.list(5)", [names, entities]) == [(("sources", "list"), True)]
    assert spans("see sources.list(5)", [entities, names]) == [(("sources", "list", "5"), True)]


def test_a_whole_name_is_surer_than_the_start_of_an_identifier(hop: DocHop):
    doc = {Path(d).name: i for i, d in enumerate(hop.names.documents)}
    # "adduser" starts the identifier "adduser-helper": named, after the whole name (bridges
    # tied on one sentence's weight keep this order)
    named = hop._named("Run adduser-helper, then read login.defs.", doc["sed-NEWS.txt"])
    assert named == [doc["login.defs.txt"], doc["adduser.conf.txt"]]


def test_an_entity_of_a_documents_own_name_leads_nowhere_from_it(hop: DocHop):
    doc = {Path(d).name: i for i, d in enumerate(hop.names.documents)}
    shared = hop.with_config(entities=True)
    shared.shared = {("utils",): frozenset({doc["xz-utils-NEWS.txt"], doc["dbus-NEWS.txt"]})}
    # xz-utils's page saying "utils" speaks of itself; dbus's page means the other holder
    assert shared._named("the utils are fast", doc["xz-utils-NEWS.txt"]) == []
    assert shared._named("the utils are fast", doc["dbus-NEWS.txt"]) == [doc["xz-utils-NEWS.txt"]]
