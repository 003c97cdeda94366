"""What a build keeps in temporary files: `TempFile`, `ExtractionSpool`, and the stages that read
the spool instead of a list (`_raw_components`, the offline extractor's `extract_to`)."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from demo_builds import demo_copies

from graphseek.errors import CorpusError
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.memory.spool import ExtractionSpool, PassageSpool, TempFile
from graphseek.knowledge.graph.models import Extraction, Mention, RawFact, RawRelation
from graphseek.knowledge.passages import Passage

spool_module = importlib.import_module("graphseek.knowledge.graph.memory.spool")
align_stage = importlib.import_module("graphseek.knowledge.graph.stages.align")


def extraction(k: int) -> Extraction:
    pid = f"p{k}"
    mentions = [
        Mention(id=f"{pid}#m{j}", passage_id=pid, name=f"Name {k} {j}", types=["PERSON"])
        for j in range(k % 4)
    ]
    relations = [
        RawRelation(passage_id=pid, source=a.id, label="knows", target=b.id)
        for a, b in zip(mentions, mentions[1:], strict=False)
    ]
    facts = [
        RawFact(id=f"{pid}#f0", passage_id=pid, relation="met", mentions=[m.id for m in mentions])
    ]
    return Extraction(passage_id=pid, mentions=mentions, relations=relations, facts=facts)


def test_temp_file_appends_and_reads_by_offset() -> None:
    f = TempFile("graphseek-test-")
    assert f.append(b"abc") == 0 and f.append(b"") == 3 and f.append(b"defg") == 3
    assert f.size == 7
    assert f.read(0, 7) == b"abcdefg" and f.read(3, 4) == b"defg" and f.read(7, 0) == b""
    with pytest.raises(ValueError, match="of a file of 7"):
        f.read(5, 3)


def test_spool_keeps_the_extractions_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [extraction(k) for k in range(2500)]  # more than one block of `of`
    spool = ExtractionSpool.of(iter(items))
    digests = [spool_module.id_digest(x.passage_id) for x in items]
    assert len(spool) == 2500 and list(spool.passage_digests) == digests
    assert list(spool) == items
    assert spool[0] == items[0] and spool[-1] == items[-1] and spool[1234] == items[1234]
    assert spool[10:13] == items[10:13] and spool[::1000] == items[::1000]
    with pytest.raises(IndexError):
        spool[2500]
    # iteration reads blocks of about READ_BYTES: the same records across block edges
    monkeypatch.setattr(spool_module, "READ_BYTES", 300)
    assert list(spool) == items
    monkeypatch.setattr(spool_module, "READ_BYTES", 1)  # a record longer than a block
    assert list(spool) == items


def test_spool_reads_give_new_objects_and_extend_appends() -> None:
    spool = ExtractionSpool()
    assert len(spool) == 0 and list(spool) == []
    spool.extend([extraction(1), extraction(2)])
    spool.extend([])
    spool.extend([extraction(3)])
    first = spool[0]
    first.mentions.clear()  # a stage that changes what it read changes nothing stored
    assert spool[0] == extraction(1) and [x.passage_id for x in spool] == ["p1", "p2", "p3"]


def test_a_passage_spool_gives_back_the_passages_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [
        Passage(id=f"p{k}", title=f"T {k % 7}", text="word " * (k % 50) + "é", source=f"s{k % 3}")
        for k in range(2500)
    ]
    spool = PassageSpool.of(iter(items))
    assert len(spool) == 2500 and list(spool) == items
    assert spool[0] == items[0] and spool[-1] == items[-1] and spool[1234] == items[1234]
    assert spool[10:1500] == items[10:1500] and spool[::700] == items[::700]
    assert spool[5:5] == [] and spool[-3:] == items[-3:]
    assert isinstance(spool[3], Passage) and spool[3].content == items[3].content
    with pytest.raises(IndexError, match="passage 2500 of 2500"):
        spool[2500]
    monkeypatch.setattr(spool_module, "READ_BYTES", 100)  # blocks of a record or two
    assert list(spool) == items and spool[100:300] == items[100:300]


def test_a_passage_spool_checks_what_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (Passage(id=f"p{k}", text=f"text {k}") for k in range(3))
    with pytest.raises(CorpusError, match="Empty corpus"):
        PassageSpool.of([])
    with pytest.raises(TypeError, match="item 1 is dict"):
        PassageSpool.of([a, {"id": "p9"}])  # type: ignore[list-item]
    with pytest.raises(CorpusError, match=r"Duplicate passage id 'p0' \(item 3\)"):
        PassageSpool.of([a, b, c, a])
    # ids are told apart by an 8-byte digest, and equal digests by the ids themselves: every
    # id with one digest is still a corpus of distinct ids, and a repeated one still found
    monkeypatch.setattr(spool_module, "id_digest", lambda pid: 7)
    assert list(PassageSpool.of([a, b, c])) == [a, b, c]
    with pytest.raises(CorpusError, match=r"Duplicate passage id 'p1' \(item 3\)"):
        PassageSpool.of([a, b, c, b])


def test_raw_components_equal_the_pairwise_reference() -> None:
    from test_bounded_build import reference_raw_components

    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    passages = demo_copies(2, "spool")
    items = OfflineExtractor(show_progress=False, n_process=1).extract(passages)
    ids = sorted(m.id for x in items for m in x.mentions)
    # raw nodes as alignment numbers them; a few shared so that the graph has joins
    node_of = {mid: k // 3 for k, mid in enumerate(ids)}
    n = len(ids) // 3 + 1
    spool = ExtractionSpool.of(items)
    for scope in ("sentence", "passage", "none"):
        expected = reference_raw_components(items, node_of, n, scope)
        assert align_stage._raw_components(spool, node_of, n, scope) == expected
        assert 1 < expected < n
    assert align_stage._raw_components([], {}, 0, "sentence") == 0


def test_offline_extract_to_streams_the_extractions_of_extract() -> None:
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    passages = demo_copies(1, "stream")
    extractor = OfflineExtractor(show_progress=False, n_process=1)
    blocks: list[int] = []

    class Sink(list[Extraction]):
        def extend(self, extractions) -> None:  # type: ignore[no-untyped-def, override]
            block = list(extractions)
            blocks.append(len(block))
            super().extend(block)

    sink = Sink()
    extractor.extract_to(passages, sink)
    assert list(sink) == extractor.extract(passages)
    assert sum(blocks) == len(passages) and len([b for b in blocks if b]) >= 2


def test_spilled_array_reads_its_rows_back_in_blocks() -> None:
    import numpy as np

    from graphseek.knowledge.graph.memory.spool import SpilledArray

    array = np.arange(35, dtype=np.float32).reshape(7, 5)
    spilled = SpilledArray(array)
    assert spilled.shape == (7, 5) and spilled.ndim == 2 and len(spilled) == 7
    assert spilled.size == 35 and spilled.dtype == np.float32
    np.testing.assert_array_equal(spilled.load(), array)
    blocks = list(spilled.blocks(3))
    assert [len(b) for b in blocks] == [3, 3, 1]
    np.testing.assert_array_equal(np.vstack(blocks), array)
    array[0, 0] = -1  # a copy: the file keeps what was spilled
    assert spilled.load()[0, 0] == 0
    assert list(SpilledArray(np.zeros((0, 5), dtype=np.float32)).blocks(3)) == []
    with pytest.raises(ValueError, match="2 dimensions"):
        SpilledArray(np.zeros(3))


def test_a_spilled_array_gives_and_takes_rows_by_number() -> None:
    from graphseek.knowledge.graph.memory.spool import SpilledArray

    array = np.arange(40, dtype=np.float32).reshape(8, 5)
    spilled = SpilledArray(array)
    rows = [6, 0, 0, 3, 4, 5]  # any order, repeats, runs of neighbours
    np.testing.assert_array_equal(spilled.take(rows), array[rows])
    assert spilled.take([]).shape == (0, 5)
    np.testing.assert_array_equal(np.asarray(spilled), array)
    assert np.asarray(spilled, dtype=np.float64).dtype == np.float64
    spilled.put([7, 2], np.full((2, 5), -1, dtype=np.float32))
    array[[7, 2]] = -1
    np.testing.assert_array_equal(spilled.load(), array)
    with pytest.raises(IndexError, match="of 8"):
        spilled.take([8])
    with pytest.raises(IndexError, match="row 8 of 8"):
        spilled.put([8], np.zeros((1, 5), dtype=np.float32))


def test_a_spilled_array_of_zeros_is_filled_by_rows_and_grows_by_blocks() -> None:
    from graphseek.knowledge.graph.memory.spool import SpilledArray

    spilled = SpilledArray.zeros(6, 4)  # the passage pass: rows filled in the blocks' order
    assert spilled.shape == (6, 4) and spilled.dtype == np.float32
    np.testing.assert_array_equal(spilled.load(), np.zeros((6, 4), dtype=np.float32))
    block = np.arange(8, dtype=np.float32).reshape(2, 4)
    spilled.put([5, 1], block)
    expected = np.zeros((6, 4), dtype=np.float32)
    expected[[5, 1]] = block
    np.testing.assert_array_equal(spilled.load(), expected)
    spilled.append(block)  # a shard's rows after the others' (`MappedJoin`)
    assert spilled.shape == (8, 4)
    np.testing.assert_array_equal(spilled.load(), np.vstack([expected, block]))
    loaded = spilled.load()
    loaded[0, 0] = 7  # a new array of its own: the file is not changed
    assert loaded.flags.writeable and spilled.load()[0, 0] == 0
    with pytest.raises(ValueError, match="for 4"):
        spilled.append(np.zeros((1, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="for 4"):
        spilled.append(np.zeros((1, 4), dtype=np.float64))
    assert SpilledArray.zeros(0, 4).load().shape == (0, 4)


def test_a_temp_file_grows_with_zeros_and_reads_into_a_buffer() -> None:
    f = TempFile("graphseek-test-")
    f.append(b"ab")
    f.grow(5)
    assert f.size == 5 and f.read(0, 5) == b"ab\0\0\0"
    buffer = bytearray(3)
    f.read_into(1, memoryview(buffer))
    assert bytes(buffer) == b"b\0\0"
    with pytest.raises(ValueError, match="cannot grow to 4"):
        f.grow(4)
    with pytest.raises(ValueError, match="of a file of 5"):
        f.read_into(4, memoryview(bytearray(2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_save_blocks_writes_what_np_save_writes(tmp_path: Path, dtype: type) -> None:
    from graphseek.knowledge.npy import save_blocks

    array = np.arange(21, dtype=np.float32).reshape(7, 3)
    np.save(tmp_path / "whole.npy", array.astype(dtype))
    save_blocks(tmp_path / "blocks.npy", [array[:4], array[4:]], (7, 3), dtype)
    assert (tmp_path / "blocks.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()
    save_blocks(tmp_path / "none.npy", [], (0, 3), dtype)
    np.save(tmp_path / "empty.npy", np.zeros((0, 3), dtype=dtype))
    assert (tmp_path / "none.npy").read_bytes() == (tmp_path / "empty.npy").read_bytes()
    with pytest.raises(ValueError, match="6 rows written for an array of 7"):
        save_blocks(tmp_path / "short.npy", [array[:6]], (7, 3), dtype)
    with pytest.raises(ValueError, match="for rows of 3"):
        save_blocks(tmp_path / "wide.npy", [np.zeros((1, 4))], (1, 3), dtype)


def test_temp_file_writes_over_what_it_holds() -> None:
    f = TempFile("graphseek-test-")
    f.append(b"abcdefg")
    f.write_at(2, b"XY")
    f.write_at(7, b"")
    assert f.read(0, 7) == b"abXYefg" and f.size == 7
    with pytest.raises(ValueError, match="of a file of 7"):
        f.write_at(6, b"ZZ")  # past the end: append grows a file, this does not


def test_a_spilled_array_is_saved_as_np_save_saves_it(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from graphseek.knowledge.graph.memory.spool import SpilledArray

    store_writer = importlib.import_module("graphseek.knowledge.graph.store.writer")
    monkeypatch.setattr(store_writer, "WRITE_ROWS", 4)
    rng = np.random.default_rng(1)
    for array in (
        rng.standard_normal((11, 6)).astype(np.float32),
        rng.standard_normal((5, 6)).astype(np.float16),  # saved as float32, as np.save would
        np.zeros((0, 0), dtype=np.float32),  # empty: (0, dim)
    ):
        store_writer._save_npy(tmp_path / "a.npy", SpilledArray(array), 6)
        store_writer._save_npy(tmp_path / "b.npy", array, 6)
        assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
        assert np.load(tmp_path / "a.npy").shape == (len(array), 6)


def test_alignment_reads_the_mentions_as_columns_with_shared_lists() -> None:
    items = [extraction(k) for k in range(40)]
    for x in items:  # names' spans past 256: int objects of their own
        for m in x.mentions:
            m.start, m.end = 1000 + len(m.id), 1010 + len(m.id)
    spool = ExtractionSpool.of(items)
    mentions = memory.mention_columns(spool)
    # sorted by id; the spans served the passage pass and are dropped, with the sentences
    # (alignment reads neither); the rest is the extractions'
    expected = sorted(
        (replace(m, start=-1, end=-1, sentence=-1) for x in items for m in x.mentions),
        key=lambda m: m.id,
    )
    assert list(mentions) == expected and mentions.ids == [m.id for m in expected]
    assert len({id(m.types) for m in mentions}) == 1  # every mention is ["PERSON"]
    assert len({id(m.aliases) for m in mentions}) == 1 and mentions[0].aliases == []
    # a list of extractions (a caller's objects) gives the same columns
    plain = memory.mention_columns(items)
    assert list(plain) == expected


def test_npy_rows_read_a_stored_array_by_key(tmp_path: Path) -> None:
    """`NpyRows` gives the rows of a saved array by key, one at a time or stacked (any order,
    repeats), as the array holds them; a file whose rows do not match the keys is refused."""
    from graphseek.knowledge.graph.memory.spool import NpyRows

    rows = np.random.default_rng(2).normal(size=(9, 5)).astype(np.float32)
    np.save(tmp_path / "v.npy", rows)
    keys = [f"b{k}" for k in range(9)]
    stored = NpyRows(tmp_path / "v.npy", keys)
    assert len(stored) == 9 and "b3" in stored and "b9" not in stored and list(stored) == keys
    np.testing.assert_array_equal(stored["b4"], rows[4])
    wanted = ["b8", "b0", "b1", "b2", "b8", "b5"]
    np.testing.assert_array_equal(stored.take(wanted), rows[[8, 0, 1, 2, 8, 5]])
    assert stored.take([]).shape == (0, 5)
    with pytest.raises(ValueError, match="rows for 8 keys"):
        NpyRows(tmp_path / "v.npy", keys[:8])


def test_extractions_are_checked_against_their_passages_by_digest() -> None:
    """A build's check that extraction k is passage k's reads no spooled extraction, and
    names both ids when one is not."""
    extract = importlib.import_module("graphseek.knowledge.graph.stages.extract")
    passages = [Passage(id=f"p{k}", text=f"text {k}") for k in range(4)]
    spool = ExtractionSpool.of(extraction(k) for k in range(4))
    extract.check_extractions(passages, spool, "the test")
    extract.check_extractions(passages, list(spool), "the test")
    swapped = ExtractionSpool.of(extraction(k) for k in (0, 2, 1, 3))
    for made in (swapped, list(swapped)):
        with pytest.raises(
            RuntimeError, match="the test returned the extraction of p2 for passage p1"
        ):
            extract.check_extractions(passages, made, "the test")
    with pytest.raises(RuntimeError, match="3 extractions for 4 passages"):
        extract.check_extractions(passages, spool[:3], "the test")
