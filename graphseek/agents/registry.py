"""Pick each role's policy for a run: the LLM policy when a chat model is configured for the role,
the offline reasoner's deterministic policy otherwise. Nodes only ever call `get_roles(context)`.

`Roles` are built once per run: the first `get_roles(context)` of a run builds them into the run's
scope (`graphseek.state.run_scope.run_scope(context)`, which travels on the run's `Context`) and
every later call of the run (each node, parallel branches and subgraphs) gets the same `Roles`;
they go with the `Context`. Each LLM policy is handed the run's budget guard
(`graphseek.llm.budget.run_callbacks`) and passes it with every model call.

With `Context.on_model_failure="offline"`, each LLM policy is built to fall back to the role's
offline policy for a step whose model call failed after its retries
(`graphseek.agents.structured_role.falls_back`); the offline policy is built on the first failure,
and each fallback is noted in the run's degraded notes (`graphseek.state.run_scope.degraded_notes`,
which `finalize_answer` reads).

Every role is one row of `ROLES`: the interface its two policies implement, its LLM policy
(`agents/<role>.py`, prompts in `agents/prompts/`), its offline policy (`agents/offline/`) and the
`llm={...}` key whose model it uses; `build_roles` takes each LLM policy from there, and
`tests/test_role_table.py` checks the rest against what it builds. docs/python-api.md lists them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphseek.agents.answerer import LLMAnswerer
from graphseek.agents.clarifier import LLMClarifier
from graphseek.agents.context_filter import LLMContextFilter
from graphseek.agents.coverage import CoverageGate, LLMCoverageGate
from graphseek.agents.decomposer import LLMDecomposer
from graphseek.agents.drafter import Drafter, LLMDrafter
from graphseek.agents.expander import Expander, LLMExpander
from graphseek.agents.graph_librarian import GraphLibrarian, LLMGraphLibrarian
from graphseek.agents.grounder import LLMQueryGrounder, QueryGrounder
from graphseek.agents.knowledge_updater import LLMKnowledgeUpdater
from graphseek.agents.librarian import LLMLibrarian
from graphseek.agents.offline.branching import BranchingSeeker
from graphseek.agents.offline.clarifier import OfflineClarifier
from graphseek.agents.offline.coverage import OfflineCoverageGate
from graphseek.agents.offline.decomposer import OfflineDecomposer
from graphseek.agents.offline.drafter import OfflineDrafter
from graphseek.agents.offline.expander import OfflineExpander
from graphseek.agents.offline.graph_librarian import OfflineGraphLibrarian
from graphseek.agents.offline.grounder import OfflineQueryGrounder
from graphseek.agents.offline.kair import (
    RESOLVE_THRESHOLD,
    OfflineAnswerer,
    OfflineContextFilter,
    OfflineKnowledgeUpdater,
    OfflinePlanner,
)
from graphseek.agents.offline.librarian import OfflineLibrarian
from graphseek.agents.offline.refiner import OfflineContextRefiner
from graphseek.agents.offline.rewriter import OfflineQueryRewriter
from graphseek.agents.offline.seeker import OfflineSeeker
from graphseek.agents.offline.sufficiency import OfflineSufficiencyChecker
from graphseek.agents.offline.thinker import OfflineThinker
from graphseek.agents.offline.verifier import OfflineEvidenceVerifier, OfflineTripleChecker
from graphseek.agents.planner import LLMPlanner
from graphseek.agents.profiles import get_profile
from graphseek.agents.readers import OFFLINE_READER, Reader, model_point
from graphseek.agents.reading.chains import JointChooser
from graphseek.agents.refiner import ContextRefiner, LLMContextRefiner
from graphseek.agents.rewriter import LLMQueryRewriter, QueryRewriter
from graphseek.agents.roles import (
    Answerer,
    Clarifier,
    ContextFilter,
    Decomposer,
    KnowledgeUpdater,
    Librarian,
    Planner,
    Seeker,
)
from graphseek.agents.seeker import LLMSeeker
from graphseek.agents.structured_role import falls_back, with_fallback
from graphseek.agents.sufficiency import LLMSufficiencyChecker, SufficiencyChecker
from graphseek.agents.thinker import LLMThinker, Thinker
from graphseek.agents.verifier import (
    EvidenceVerifier,
    LLMEvidenceVerifier,
    LLMTripleChecker,
    TripleChecker,
)
from graphseek.llm import model_for_context
from graphseek.llm.budget import run_callbacks
from graphseek.llm.factory import model_for, model_options, parse_spec
from graphseek.state.context import Context, reader_specs
from graphseek.state.run_scope import degraded_notes, run_scope


@dataclass(frozen=True)
class RoleSpec:
    """One role: the interface, the LLM policy, the offline policy, the module of the LLM
    policy's prompts, and the role whose model (`Context.llm`) the LLM policy runs on."""

    protocol: type
    llm: type
    offline: type
    prompts: str
    model: str


def _spec(protocol: type, llm: type, offline: type, prompts: str, model: str) -> RoleSpec:
    return RoleSpec(protocol, llm, offline, f"graphseek.agents.prompts.{prompts}", model)


#: every role by name (the `Roles` field): interface, LLM policy, offline policy, prompts, model
ROLES: dict[str, RoleSpec] = {
    # dual_agent (HiGraAgent)
    "clarifier": _spec(Clarifier, LLMClarifier, OfflineClarifier, "clarifier", "clarifier"),
    "decomposer": _spec(Decomposer, LLMDecomposer, OfflineDecomposer, "decomposer", "decomposer"),
    "librarian": _spec(Librarian, LLMLibrarian, OfflineLibrarian, "librarian", "librarian"),
    # the offline Seeker runs inside `BranchingSeeker` (asks again on uncertain candidates)
    "seeker": _spec(Seeker, LLMSeeker, BranchingSeeker, "seeker", "seeker"),
    # knowledge_aware (KAIR)
    "planner": _spec(Planner, LLMPlanner, OfflinePlanner, "planner", "planner"),
    "knowledge_updater": _spec(
        KnowledgeUpdater,
        LLMKnowledgeUpdater,
        OfflineKnowledgeUpdater,
        "knowledge_updater",
        "knowledge_updater",
    ),
    "context_filter": _spec(
        ContextFilter, LLMContextFilter, OfflineContextFilter, "context_filter", "context_filter"
    ),
    "answerer": _spec(Answerer, LLMAnswerer, OfflineAnswerer, "answerer", "answerer"),
    # adaptive (A2RAG)
    "coverage": _spec(CoverageGate, LLMCoverageGate, OfflineCoverageGate, "coverage", "coverage"),
    "sufficiency": _spec(
        SufficiencyChecker,
        LLMSufficiencyChecker,
        OfflineSufficiencyChecker,
        "sufficiency",
        "sufficiency",
    ),
    "triple_checker": _spec(
        TripleChecker, LLMTripleChecker, OfflineTripleChecker, "verifier", "verifier"
    ),
    "rewriter": _spec(
        QueryRewriter, LLMQueryRewriter, OfflineQueryRewriter, "rewriter", "rewriter"
    ),
    # deep_search (GraphSearch)
    "grounder": _spec(
        QueryGrounder, LLMQueryGrounder, OfflineQueryGrounder, "grounder", "grounder"
    ),
    "refiner": _spec(
        ContextRefiner, LLMContextRefiner, OfflineContextRefiner, "refiner", "refiner"
    ),
    "drafter": _spec(Drafter, LLMDrafter, OfflineDrafter, "drafter", "drafter"),
    "evidence_verifier": _spec(
        EvidenceVerifier, LLMEvidenceVerifier, OfflineEvidenceVerifier, "verifier", "verifier"
    ),
    "expander": _spec(Expander, LLMExpander, OfflineExpander, "expander", "expander"),
    # react (G-RAGent)
    "thinker": _spec(Thinker, LLMThinker, OfflineThinker, "thinker", "thinker"),
    # higra_retriever, adaptive, deep_search and the Librarian subgraph: passages + relations
    "graph_librarian": _spec(
        GraphLibrarian, LLMGraphLibrarian, OfflineGraphLibrarian, "graph_librarian", "librarian"
    ),
}


#: abstention threshold for drafts written by a chat model (its self-reported confidence)
LLM_DRAFT_THRESHOLD = 0.15


@dataclass(frozen=True)
class Roles:
    clarifier: Clarifier
    decomposer: Decomposer
    librarian: Librarian
    seeker: Seeker
    offline: frozenset[str]  # names of the roles run by the offline reasoner
    # knowledge_aware (KAIR)
    planner: Planner
    knowledge_updater: KnowledgeUpdater
    context_filter: ContextFilter
    answerer: Answerer
    # adaptive (A2RAG), deep_search (GraphSearch), react (G-RAGent), higra_retriever
    coverage: CoverageGate
    sufficiency: SufficiencyChecker
    triple_checker: TripleChecker
    evidence_verifier: EvidenceVerifier
    rewriter: QueryRewriter
    thinker: Thinker
    drafter: Drafter
    expander: Expander
    refiner: ContextRefiner
    grounder: QueryGrounder
    graph_librarian: GraphLibrarian
    # confidence below which a draft is not an answer (see `get_roles`)
    threshold: float = LLM_DRAFT_THRESHOLD
    # the offline Librarian of the run's profile, whatever `librarian` is: it reads the passages
    # a model's loop observed when the loop ends unfinished (react's last word) and gives the
    # second readings of a model's verdicts (`graphseek.graphs.common.reader_agrees`)
    reader: Librarian | None = None
    # the escalation cascade of `Context.readers` (empty: off), each drafting with its own
    # policy and judged at its own point (`graphseek.agents.readers`)
    readers: tuple[Reader, ...] = ()

    def offline_gate(self) -> CoverageGate | None:
        """The offline coverage gate over `reader`: the second reading of a model's
        out-of-scope verdict (None without a reader)."""
        return OfflineCoverageGate(self.reader) if self.reader is not None else None


_OFFLINE_CACHE: dict[str, Any] = {}


def _offline(name: str, factory: Any) -> Any:
    """Offline policies hold loaded models (spaCy, MiniLM): build each once per process."""
    if name not in _OFFLINE_CACHE:
        _OFFLINE_CACHE[name] = factory()
    return _OFFLINE_CACHE[name]


def get_roles(context: Context) -> Roles:
    """The policies of the run whose settings are `context`, built on the run's first call only."""
    return run_scope(context).get("roles", lambda: build_roles(context))


def llm_policy(
    context: Context,
    role: str,
    llm_cls: Any,
    model: Any,
    offline: Any,
    scale: tuple[float, float] | None = None,
    **kwargs: Any,
) -> Any:
    """The LLM policy of `role`; with `on_model_failure="offline"`, one that falls back to
    `offline()` (the role's offline policy) for a step whose model call failed, its drafts'
    confidences rescaled by `scale` (`graphseek.agents.structured_role.Fallback`)."""
    callbacks = run_callbacks(context)  # the run's budget guard sees every model call
    if context.on_model_failure != "offline":
        return llm_cls(model, max_retries=context.max_retries, callbacks=callbacks, **kwargs)
    policy = falls_back(llm_cls)(
        model, max_retries=context.max_retries, callbacks=callbacks, **kwargs
    )
    return with_fallback(policy, role, offline, degraded_notes(context), scale)


def thresholds(context: Context) -> tuple[float, float]:
    """(the offline reader's abstention point, the run's draft threshold). The first is the
    context's `abstain_threshold`, else the profile's calibrated operating point; the run's is
    the same, except that drafts written by a chat model carry the model's own confidence and
    are judged by `LLM_DRAFT_THRESHOLD` (when no threshold is set)."""
    point = (
        float(context.abstain_threshold)
        if context.abstain_threshold >= 0
        else get_profile(context.profile).operating_point
    )
    llm_drafts = model_for_context(context, "librarian") is not None
    if llm_drafts and context.abstain_threshold < 0:
        return point, LLM_DRAFT_THRESHOLD
    return point, point


def build_roles(context: Context) -> Roles:
    """Every role's policy for `context` (a fresh `Roles`; nodes use `get_roles`)."""
    profile_key = context.profile  # offline policies are cached per profile
    offline: set[str] = set()

    # the offline policies that judge the offline reader's confidences use its point; drafts a
    # failing model's step gets from the offline Librarian are rescaled to the run's threshold
    point, threshold = thresholds(context)
    scale = (point, threshold) if point != threshold else None

    def pick(
        role: str,
        offline_factory: Any,
        cache: bool = True,
        scale: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> Any:
        def offline_policy() -> Any:
            if cache:
                return _offline(f"{role}:{profile_key}", offline_factory)
            return offline_factory()

        model = model_for_context(context, role)
        if model is None:
            offline.add(role)
            return offline_policy()
        return llm_policy(context, role, ROLES[role].llm, model, offline_policy, scale, **kwargs)

    clarifier = pick("clarifier", OfflineClarifier)
    profile = context.profile
    decomposer = pick(
        "decomposer",
        lambda: OfflineDecomposer(profile),
        repair=_offline(f"decomposer:{profile_key}", lambda: OfflineDecomposer(profile)),
    )
    # the offline Librarian holds the reader's caches: one per process and profile
    librarian = pick(
        "librarian",
        lambda: OfflineLibrarian(profile=profile),
        scale=scale,
        read_by=context.read_by,
    )
    seeker_model = model_for_context(context, "seeker")
    # the general reader reports per-candidate confidences: a two-hop chain follows up to
    # three bridges and is decided by the joint support of both hops
    joint = "librarian" in offline and not get_profile(profile).reads_by_cues

    def offline_seeker() -> Seeker:
        return BranchingSeeker(
            OfflineSeeker(abstain_threshold=threshold, profile=profile),
            branch_below=0.8 if joint else 0.5,
            chooser=JointChooser() if joint else None,
        )

    seeker: Seeker
    if seeker_model is None:
        offline.add("seeker")
        seeker = offline_seeker()
    else:
        seeker = llm_policy(context, "seeker", ROLES["seeker"].llm, seeker_model, offline_seeker)
    # KAIR: the offline updater and answerer take the run's thresholds, so they are built per run
    # around the process-wide offline Librarian
    shared_librarian = _offline(
        f"librarian:{profile_key}", lambda: OfflineLibrarian(profile=profile)
    )
    planner = pick("planner", lambda: OfflinePlanner(profile))
    knowledge_updater = pick(
        "knowledge_updater",
        lambda: OfflineKnowledgeUpdater(shared_librarian, threshold=max(RESOLVE_THRESHOLD, point)),
        cache=False,
        read_by=context.read_by,
    )
    context_filter = pick("context_filter", OfflineContextFilter)
    answerer = pick(
        "answerer",
        lambda: OfflineAnswerer(shared_librarian, abstain_threshold=point),
        cache=False,
    )
    search_roles = _search_roles(context, pick, offline, shared_librarian, point, scale)
    return Roles(
        clarifier,
        decomposer,
        librarian,
        seeker,
        frozenset(offline),
        planner=planner,
        knowledge_updater=knowledge_updater,
        context_filter=context_filter,
        answerer=answerer,
        threshold=threshold,
        reader=shared_librarian,
        readers=build_readers(context, shared_librarian, point),
        **search_roles,
    )


def build_readers(context: Context, librarian: Any, point: float) -> tuple[Reader, ...]:
    """The cascade of `context.readers`: ``offline`` is the offline graph Librarian over the
    run's profile's `librarian`, at the profile's `point`; a model spec (or, from Python, a chat
    model) is the Librarian's model policy reading the best sentences, at its calibrated point
    (`model_point`). Every model call passes the run's budget guard."""
    readers = []
    for item in reader_specs(context.readers) or []:
        if isinstance(item, str) and parse_spec(item)[0] == OFFLINE_READER:
            policy = _offline(
                f"graph_librarian:{context.profile}", lambda: OfflineGraphLibrarian(librarian)
            )
            readers.append(Reader(OFFLINE_READER, policy, point))
            continue
        model = model_for(item, "librarian", **model_options(context, "librarian"))
        name = item if isinstance(item, str) else str(getattr(item, "model_name", "") or "model")
        policy = LLMGraphLibrarian(
            model,
            max_retries=context.max_retries,
            callbacks=run_callbacks(context),
            read_by=context.read_by,
            brief=True,
        )
        readers.append(Reader(name, policy, model_point(name)))
    return tuple(readers)


def _search_roles(
    context: Context,
    pick: Any,
    offline: set[str],
    librarian: Any,
    point: float,
    scale: tuple[float, float] | None,
) -> dict[str, Any]:
    """The policies of the adaptive, deep_search, react and higra_retriever roles (same pick
    pattern; the two verifiers share the model of role "verifier", the graph Librarian the
    Librarian's). The offline thinker and drafter judge the offline reader's confidences at its
    abstention `point`; the graph Librarian's fallback drafts are rescaled by `scale`."""

    def pick_as(
        model_role: str,
        name: str,
        offline_factory: Any,
        scale: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> Any:
        def offline_policy() -> Any:
            return _offline(f"{name}:{context.profile}", offline_factory)

        model = model_for_context(context, model_role)
        if model is None:
            offline.add(name)
            return offline_policy()
        return llm_policy(context, name, ROLES[name].llm, model, offline_policy, scale, **kwargs)

    return {
        "coverage": pick("coverage", lambda: OfflineCoverageGate(librarian)),
        "sufficiency": pick("sufficiency", lambda: OfflineSufficiencyChecker(librarian)),
        "triple_checker": pick_as(
            "verifier",
            "triple_checker",
            lambda: OfflineTripleChecker(context.profile),
        ),
        "evidence_verifier": pick_as(
            "verifier",
            "evidence_verifier",
            lambda: OfflineEvidenceVerifier(profile=context.profile),
        ),
        "rewriter": pick("rewriter", lambda: OfflineQueryRewriter(librarian)),
        "thinker": pick("thinker", lambda: OfflineThinker(librarian, point), cache=False),
        "drafter": pick(
            "drafter",
            lambda: OfflineDrafter(point, profile=context.profile),
            scale=scale,
            cache=False,
        ),
        "expander": pick("expander", lambda: OfflineExpander(profile=context.profile)),
        "refiner": pick("refiner", OfflineContextRefiner),
        "grounder": pick("grounder", OfflineQueryGrounder),
        "graph_librarian": pick_as(
            "librarian",
            "graph_librarian",
            lambda: OfflineGraphLibrarian(librarian),
            scale,
            read_by=context.read_by,
        ),
    }
