"""General extractive reading, shared by every offline policy (and usable by LLM policies).

No part of this package knows a benchmark's templates: it reads a question's expected answer from
its wh-word, head noun and dependency parse (`question`), proposes candidate spans from spaCy's
entities, noun chunks and identifier-like tokens (`candidates`), and scores them in context with
the packaged sentence embedder, the question's words and the sentence's dependency tree
(`reader`). An answer is always a span of the sentence it is cited with; when nothing of the
expected type is supported, the reader says so and the caller abstains.

Dataset-specific knowledge (Wikipedia's relation cues, kinship chains, dump clean-up) lives in
named profiles (`graphseek.agents.profiles`), selected by `Context.profile`.
"""

from graphseek.agents.reading.question import AnswerSpec, analyse_question
from graphseek.agents.reading.reader import Candidate, ExtractiveReader, get_reader

__all__ = ["AnswerSpec", "Candidate", "ExtractiveReader", "analyse_question", "get_reader"]
