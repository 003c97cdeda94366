"""Pydantic models that cross node, tool and LLM boundaries: plan, facts, gaps, evidence, usage."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from graphseek.state.bounds import LIST_ITEMS, Name, Names, Reasoning, Sentences, head_items


class SubQuestion(BaseModel):
    """One step of a decomposition plan. `#N` in the text refers to the answer of step N."""

    id: int
    question: str
    depends_on: list[int] = Field(default_factory=list)


class SentenceBridge(BaseModel):
    """An entity that semantic bridging reached from an entity the question names, through one
    sentence that names both (the `bridge` retriever's rounds, `graphseek.tools.bridge`): a
    candidate subject for the question's next hop ("Lord Byron" for "Where did Ada Lovelace's
    father die?", through "She married Lord Byron ... the mother of Ada Lovelace.")."""

    model_config = ConfigDict(frozen=True)

    entity: str
    types: list[str] = Field(default_factory=list, description="The entity's types in the graph.")
    source: str = Field(description="The entity it was reached from (one the question names).")
    sentence: str
    passage_id: str
    round: int = 1
    weight: float = Field(
        default=0.0,
        description="Its activation: the source's score times the sentence's similarity to the "
        "question (a seed scores 1).",
    )


class EvidenceItem(BaseModel):
    """A grounding passage (and optionally the sentence inside it) for an answer."""

    model_config = ConfigDict(frozen=True)

    passage_id: str
    title: str = ""
    text: str = ""
    sentence: str = Field(
        default="", description="The sentence of the passage most likely to hold the answer."
    )
    context: str = Field(
        default="",
        description="`sentence` with its neighbouring sentences, when they help to read it "
        "(else the sentence alone; empty when `sentence` is).",
    )
    score: float = 0.0
    span: str = Field(
        default="",
        description="The candidate answer inside `sentence` (empty when the sentence holds none).",
    )
    supports_answer: bool = Field(
        default=False,
        description="Whether this passage holds the run's answer (False for every item of an "
        "abstention: they are what the run found most relevant, not a grounding).",
    )


class Reading(BaseModel):
    """One reader's turn in an escalation cascade (`Context.readers`): what it answered, whether
    its answer stood or it passed the question on, why, and what it cost."""

    reader: str = Field(description="The reader's spec: 'offline' or 'openai:<model>'.")
    outcome: Literal["answered", "passed", "abstained"] = Field(
        description="answered: its answer stands; passed: the next reader reads the question; "
        "abstained: the last reader passed, so the cascade abstains."
    )
    answer: str = ""
    confidence: float = 0.0
    threshold: float = Field(default=0.0, description="The reader's calibrated operating point.")
    reason: str = ""
    usage: Usage = Field(default_factory=lambda: Usage())


class Draft(BaseModel):
    """The Librarian's answer to one sub-question, with the evidence that supports it."""

    question: str
    answer: str
    step_id: int | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    confidence: float = 0.0
    candidates: list[str] = Field(
        default_factory=list, description="Other plausible answers, best first (multiple answers)."
    )
    candidate_confidences: list[float] = Field(
        default_factory=list,
        description="The confidence of each of `candidates` on the same scale as `confidence` "
        "(empty when the policy does not report them).",
    )
    bridges: list[str] = Field(
        default_factory=list,
        description="Names in the evidence that may link the question to its answer, best first: "
        "a follow-up query adds one to reach the next hop.",
    )
    error: str = Field(
        default="",
        description="Why no draft could be written: a model call that failed after its retries "
        "(empty otherwise).",
    )
    readings: list[Reading] = Field(
        default_factory=list,
        description="The readers that read this sub-question in an escalation cascade, in order "
        "(empty without `Context.readers`).",
    )


class Fact(BaseModel):
    """A Known fact: a short statement with the passages that support it."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    passage_ids: list[str] = Field(default_factory=list)
    source: str = ""


class Gap(BaseModel):
    """A Required gap: information still missing to answer the question."""

    model_config = ConfigDict(frozen=True)

    id: str
    description: str
    resolved: bool = False


class Usage(BaseModel):
    """Cost of a run: LLM calls, tokens, model time and wall-clock seconds.

    `llm_calls` counts every request sent, failed ones included (`failed_calls` of them);
    `estimated_calls` is how many of them had their tokens estimated (characters / 4) because
    the server reported no usage (or the call failed), so the token counts are then estimates.
    `llm_seconds` sums the calls' latencies (parallel calls add up); `seconds` is the wall time
    of a whole run (set by `graphseek.ask`), 0 inside a workflow's state.
    """

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    llm_seconds: float = 0.0
    failed_calls: int = 0
    estimated_calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
            llm_seconds=self.llm_seconds + other.llm_seconds,
            failed_calls=self.failed_calls + other.failed_calls,
            estimated_calls=self.estimated_calls + other.estimated_calls,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_estimated(self) -> bool:
        """Whether any token count here is an estimate (see `estimated_calls`)."""
        return self.estimated_calls > 0


class SeekerAction(BaseModel):
    """The Seeker's move for one turn: ask the Librarian more questions, answer, or abstain."""

    reason: Reasoning = Field(default="", description="Why this action, in one or two sentences.")
    action: Literal["ask_librarian", "answer", "abstain"] = Field(
        description="ask_librarian, answer or abstain."
    )
    questions: Sentences = Field(
        default_factory=list, description="For ask_librarian: self-contained questions, no '#N'."
    )
    step_ids: Annotated[
        list[int | None], BeforeValidator(head_items(LIST_ITEMS)), Field(max_length=LIST_ITEMS)
    ] = Field(
        default_factory=list,
        description="For ask_librarian: the plan step each question answers (None if none).",
    )
    answer: Name = Field(default="", description="For answer: the final answer, exact wording.")
    evidence: Names = Field(
        default_factory=list, description="For answer: passage ids that support the answer."
    )
    confidence: float = 1.0
