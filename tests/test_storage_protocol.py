"""The storage backends by composition (issue 55, item 2): each implements the storage protocols
of `graphseek.knowledge.storage` on its own, and no PostgreSQL class subclasses a directory one.

mypy checks the signatures (the `TYPE_CHECKING` assignments at the end of `storage.py`, run by
`.ci/run`); these tests check the class hierarchy and that every protocol member is there.
"""

from __future__ import annotations

import inspect

import pytest

from graphseek.knowledge.graph.store import GraphStore, GraphTables, SQLiteGraphStore
from graphseek.knowledge.graph.store.neighbourhood import DirectoryNeighbourhood
from graphseek.knowledge.index import Index
from graphseek.knowledge.index_common import IndexCommon
from graphseek.knowledge.postgres.graph import PostgresGraphStore
from graphseek.knowledge.postgres.index import PostgresIndex
from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood
from graphseek.knowledge.storage import IndexStore, NeighbourhoodReads

DIRECTORY = (Index, SQLiteGraphStore, DirectoryNeighbourhood)
POSTGRES = (PostgresIndex, PostgresGraphStore, PostgresNeighbourhood)


def _members(protocol: type) -> set[str]:
    """The methods and properties a protocol declares (its dunders other than these two are
    `typing.Protocol`'s own)."""
    return {
        name
        for name, value in vars(protocol).items()
        if (inspect.isfunction(value) or isinstance(value, property))
        and (not name.startswith("_") or name in ("__len__", "__contains__"))
    }


@pytest.mark.parametrize("postgres", POSTGRES, ids=lambda c: c.__name__)
def test_no_postgres_class_subclasses_a_directory_class(postgres: type) -> None:
    for directory in DIRECTORY:
        assert not issubclass(postgres, directory), (postgres, directory)


def test_what_the_backends_share_is_a_mixin_not_a_backend() -> None:
    assert Index.__mro__[1] is IndexCommon and PostgresIndex.__mro__[1] is IndexCommon
    assert SQLiteGraphStore.__mro__[1] is GraphTables
    assert PostgresGraphStore.__mro__[1] is GraphTables


@pytest.mark.parametrize(
    ("protocol", "classes"),
    [
        (IndexStore, (Index, PostgresIndex)),
        (GraphStore, (SQLiteGraphStore, PostgresGraphStore)),
    ],
    ids=["IndexStore", "GraphStore"],
)
def test_each_backend_has_every_member_of_the_protocol(
    protocol: type, classes: tuple[type, ...]
) -> None:
    members = _members(protocol)
    assert "manifest" in members and len(members) > 15
    for cls in classes:
        missing = sorted(m for m in members if not hasattr(cls, m))
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_each_neighbourhood_reader_has_every_method_of_the_protocol() -> None:
    methods = _members(NeighbourhoodReads)
    assert "catalogue" in methods
    for cls in (DirectoryNeighbourhood, PostgresNeighbourhood):
        missing = sorted(m for m in methods if not callable(getattr(cls, m, None)))
        assert not missing, f"{cls.__name__} lacks {missing}"
