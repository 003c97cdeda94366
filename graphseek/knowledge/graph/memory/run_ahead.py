"""`RunAhead`: the passage pass's first batches, run while the extractor loads its model.

Started by `graphseek.knowledge.graph.build.build_graph` (see `RunAhead.start`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.algorithms.contextual import AHEAD_MIN, AheadPass, begin_passages
from graphseek.knowledge.graph.algorithms.vectors import Embed, StageEmbed
from graphseek.knowledge.graph.extract.base import Extractor
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.passages import Passage


class RunAhead:
    """The passage pass's first batches, run on a thread while the extractor loads its model
    (`prepare`: importing and loading spaCy, single-threaded, while the other core idles).
    The batches are the pass's own, so the vectors are the same whoever runs them."""

    def __init__(
        self, prepare: Callable[[], None], passages: Sequence[Passage], show_progress: bool
    ) -> None:
        self.prepare = prepare
        self.stop = threading.Event()

        def start() -> tuple[StageEmbed, AheadPass | None]:
            embed = StageEmbed(show_progress)
            first = begin_passages(embed.embedder, passages)
            if first is not None:
                first.run_ahead(self.stop)
            return embed, first

        self.job = Background(start)

    @classmethod
    def start(
        cls,
        extractor: Extractor,
        settings: GraphSettings,
        embed: Embed | None,
        passages: Sequence[Passage],
        show_progress: bool,
    ) -> RunAhead | None:
        """Started for the default embedder with contextual alignment, an extractor that can
        load its model up front (`prepare`), and enough passages to fork extraction workers;
        else None."""
        prepare = getattr(extractor, "prepare", None)
        if (
            embed is not None
            or settings.alignment != "contextual"
            or not callable(prepare)
            or len(passages) < AHEAD_MIN
        ):
            return None
        return cls(prepare, passages, show_progress)

    def load_model(self) -> None:
        """The extractor's `prepare`, then stop (checked between batches: the one running
        ends beside the extraction workers)."""
        try:
            self.prepare()
        finally:
            self.stop.set()

    def close(self) -> None:
        """Stop and wait for the thread (a build that failed or was interrupted). It runs ONNX
        Runtime, whose C++ threads abort the process ("terminate called without an active
        exception", SIGABRT instead of exit 130) if it exits while a session is being made or
        run: the model load or the batch under way ends first."""
        self.stop.set()
        while True:
            try:
                self.job.wait()
                return
            except KeyboardInterrupt:  # a second Ctrl-C: still wait, the same abort awaits
                continue
