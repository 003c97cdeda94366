"""Postgres index URIs: ``postgresql://[user[:password]@][host][:port]/db[?param=value&...]``.

One extra query parameter, ``schema`` (default ``graphseek``), names the PostgreSQL schema that
holds the index, so one database can hold several indexes. Every other parameter goes to libpq
unchanged (e.g. ``host=/path/to/socket/dir`` for a Unix socket, ``sslmode=require``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from graphseek.knowledge.storage import POSTGRES, scheme_of

DEFAULT_SCHEMA = "graphseek"
#: the URI schemes of this backend (the storage registry's)
SCHEMES = POSTGRES.schemes
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def is_postgres_uri(target: object) -> bool:
    """Whether `target` is a ``postgresql://`` (or ``postgres://``) URI string."""
    return scheme_of(target) in SCHEMES


@dataclass(frozen=True)
class PostgresLocation:
    """Where an index lives: a libpq connection URI and a schema name."""

    conninfo: str
    schema: str

    @property
    def display(self) -> str:
        """The URI with any password removed (for messages and `Index.path`)."""
        parts = urlsplit(self.conninfo)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            netloc = f"{user.split(':', 1)[0]}@{host}"
        query = parse_qsl(parts.query, keep_blank_values=True)
        query = [(k, v) for k, v in query if k != "password"] + [("schema", self.schema)]
        return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="/"), ""))

    @property
    def lock_key(self) -> str:
        """The text hashed into this index's advisory-lock key."""
        return f"graphseek-index:{self.schema}"


def parse_postgres_uri(uri: str) -> PostgresLocation:
    """Split the ``schema`` parameter off a Postgres URI; `ValueError` naming what is wrong."""
    if not is_postgres_uri(uri):
        raise ValueError(f"{uri!r} is not a postgresql:// URI")
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"Bad schema name {schema!r} in the index URI: use lowercase letters, digits and "
            "underscores, starting with a letter or underscore (at most 63 characters)."
        )
    rest = [(k, v) for k, v in query if k != "schema"]
    conninfo = urlunsplit(
        ("postgresql", parts.netloc, parts.path, urlencode(rest, safe="/"), parts.fragment)
    )
    return PostgresLocation(conninfo=conninfo, schema=schema)
