"""Rule-based control of the reasoning loop (offline policy of the Seeker role).

Each turn the Seeker looks at the plan and at the Librarian's drafts so far, and:

1. asks every sub-question whose dependencies are answered and that was not asked yet, all at
   once, with `#N` placeholders filled by the answers of earlier steps;
2. re-asks once, rephrased, a step whose draft came back empty or with low confidence (or, for
   a step that depends on another, with the other's next candidate answer);
3. answers when every step is resolved: with the last step's answer, or for a comparison plan
   by comparing the steps' answers (earlier / later date, larger / smaller number, same country
   or not) and naming the winning option; the evidence is the drafts' passages;
4. abstains when the answer's confidence is below `abstain_threshold`, when a step cannot be
   answered, or when the turn budget is spent with no usable answer.

With sentence bridges (`SeekerView.bridges`, when the run's retrieval bridges), a step whose
hop has no answer is asked about the hop's best bridge; beside a weak step's retry, the step is
asked about the hop's answer written longer by a bridge, or, when that answer is unsure, about
another bridge; an answer through a bridge is as sure as its least sure hop, the bridge's as its
activation (`graphseek.agents.offline.bridges`). Without bridges nothing of this applies.

A step whose text is itself a comparison of the question's options ("Which film came out first,
A or B?") with dependencies is resolved here, never sent to the Librarian.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rapidfuzz import fuzz

from graphseek.agents.offline.answer_types import (
    TITLE_SEPARATOR,
    Comparison,
    countries_in,
    country_of,
    expected_answer,
    parse_comparison,
)
from graphseek.agents.offline.bridges import (
    asked_through,
    bridge_draft,
    chain_bridges,
    extends,
    subjects,
)
from graphseek.agents.profiles import GENERAL, Profile, get_profile
from graphseek.agents.roles import SeekerView, Step
from graphseek.agents.text import (
    PLACEHOLDER,
    fill_placeholders,
    normalize,
    parse_date,
    parse_number,
)
from graphseek.state.models import Draft, SeekerAction, SentenceBridge, SubQuestion

#: questions a step is asked through sentence bridges at most
MAX_BRIDGE_ASKS = 2

# ---------------------------------------------------------------------------------------------
# comparing values


def _date_key(text: str) -> float | None:
    parsed = parse_date(text)
    if parsed is None:
        return None
    year, month, day = parsed
    return year * 372.0 + max(month - 1, 0) * 31.0 + max(day - 1, 0)


def _same(attribute: str, a: str, b: str, profile: Profile) -> bool:
    if attribute == "country" or attribute in profile.nationality_relations:
        ca, cb = countries_in(a), countries_in(b)
        if ca and cb:
            return bool(ca & cb)
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return False
    if na == nb or f" {na} " in f" {nb} " or f" {nb} " in f" {na} ":
        return True
    if attribute in profile.place_relations:
        pa, pb = country_of(a), country_of(b)
        if pa and pb and pa != pb:
            return False
    return fuzz.ratio(na, nb) >= 85


def compare_values(
    comparison: Comparison, values: Mapping[str, Sequence[str]], profile: Profile = GENERAL
) -> str | None:
    """The winning option (or "yes"/"no") from each option's looked-up values; None if unsure.

    `values[option]` holds the answers of the option's steps, in plan order; for a duration
    attribute (`Profile.duration_attributes`) the start date comes first, then the end date.
    """
    options = comparison.options
    if any(not values.get(o) or not all(values[o]) for o in options):
        return None
    if comparison.pick == "same":
        firsts = [values[o][0] for o in options]
        same = all(_same(comparison.attribute, firsts[0], other, profile) for other in firsts[1:])
        return "yes" if same else "no"
    keys: dict[str, float] = {}
    for option in options:
        vals = values[option]
        key: float | None
        if comparison.attribute in profile.duration_attributes:
            if len(vals) < 2:
                return None
            start, end = _date_key(vals[0]), _date_key(vals[1])
            key = None if start is None or end is None else end - start
        elif comparison.attribute == "quantity":
            key = parse_number(vals[0])
        else:
            key = _date_key(vals[0])
        if key is None:
            return None
        keys[option] = key
    ordered = sorted(options, key=lambda o: keys[o], reverse=comparison.pick == "max")
    if len(ordered) > 1 and keys[ordered[0]] == keys[ordered[1]]:
        return None
    return ordered[0]


# ---------------------------------------------------------------------------------------------
# rephrasing


def rephrasings(question: str, profile: Profile = GENERAL) -> list[str]:
    """Other wordings of a one-hop question for a re-ask, best first: the title-entity form
    (the question followed by its entity, which pulls the entity's own page up in retrieval),
    then a template rephrasing."""
    out: list[str] = []
    qa = expected_answer(question, profile)
    base = question.split(TITLE_SEPARATOR, 1)[0].strip()
    if qa.focus:
        out.append(f"{base}{TITLE_SEPARATOR}{qa.focus}")
    other = rephrase(base, profile)
    if other:
        out.append(other)
    return out


def rephrase(question: str, profile: Profile = GENERAL) -> str | None:
    """Another wording of a one-hop question from the profile's templates for its relation
    (entity first, relation named differently); None where the profile has none."""
    qa = expected_answer(question, profile)
    focus = qa.focus
    if not focus:
        return None
    if qa.category and qa.relation in profile.titled_relations:
        focus = f"{focus} ({qa.category})" if "(" not in focus else focus
    for template in profile.rephrasings.get(qa.relation or "", []):
        text = template.format(f=focus)
        if normalize(text) != normalize(question):
            return text
    return None


# ---------------------------------------------------------------------------------------------
# the policy


class OfflineSeeker:
    """Seeker role, offline policy: follow the plan, compare, answer or abstain."""

    def __init__(
        self,
        abstain_threshold: float = 0.15,
        retry_below: float = 0.35,
        branch_below: float = 0.6,
        profile: str | Profile | None = None,
    ) -> None:
        self.profile = get_profile(profile)
        self.abstain_threshold = abstain_threshold
        self.retry_below = retry_below
        self.branch_below = branch_below

    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        return Step(self._decide(view))

    def _decide(self, view: SeekerView) -> SeekerAction:
        plan = list(view.plan) or [SubQuestion(id=1, question=view.question)]
        comparison = parse_comparison(view.question, self.profile)
        virtual = _comparison_steps(plan, comparison, self.profile)
        drafts_by_step = _drafts_by_step(plan, view.drafts)
        best = {sid: _best(ds) for sid, ds in drafts_by_step.items()}
        answers: dict[str, str] = {}
        for sid, draft in best.items():
            if draft is not None and draft.answer:
                answers[str(sid)] = draft.answer
        for key, value in view.step_answers.items():
            if key not in answers and value and int(key) not in drafts_by_step:
                answers[key] = str(value)
        last_turn = view.turn >= view.max_turns - 1

        questions: list[str] = []
        step_ids: list[int | None] = []
        dead: list[int] = []
        bridges = chain_bridges(view.question, view.bridges, self.profile)
        for step in plan:
            if step.id in virtual:
                continue
            tried = drafts_by_step.get(step.id, [])
            needs = set(step.depends_on) | {int(n) for n in PLACEHOLDER.findall(step.question)}
            asked_texts = {normalize(d.question) for d in tried}
            draft = best.get(step.id)
            settled = bool(draft and draft.answer and draft.confidence >= self.retry_below)
            if not all(str(d) in answers for d in needs):
                # a hop the reader left unanswered: its next step on a sentence bridge instead
                follow = (
                    None if settled else self._follow(step, plan, answers, best, bridges, tried)
                )
                if follow is not None:
                    questions.append(follow)
                    step_ids.append(step.id)
                continue
            filled = fill_placeholders(step.question, answers)
            if not tried:
                questions.append(filled)
                step_ids.append(step.id)
                continue
            if settled:
                continue
            retry = self._retry(step, filled, answers, best, asked_texts, plan)
            if retry is not None and len(tried) < 3:
                questions.append(retry)
                step_ids.append(step.id)
            elif draft is None or not draft.answer:
                dead.append(step.id)
            # beside the retry, the step on a sentence bridge (the hop's answer written longer,
            # or, when that answer is unsure, another entity the question's sentences reach)
            follow = self._follow(step, plan, answers, best, bridges, tried, also=retry)
            if follow is not None:
                questions.append(follow)
                step_ids.append(step.id)

        if questions and not last_turn:
            return SeekerAction(
                reason=f"Asking the Librarian for {len(questions)} step(s) whose inputs are known.",
                action="ask_librarian",
                questions=questions,
                step_ids=step_ids,
            )
        return self._conclude(view, plan, comparison, virtual, best, answers, dead, drafts_by_step)

    def _follow(
        self,
        step: SubQuestion,
        plan: Sequence[SubQuestion],
        answers: Mapping[str, str],
        best: Mapping[int, Draft | None],
        bridges: Sequence[SentenceBridge],
        tried: Sequence[Draft],
        also: str | None = None,
    ) -> str | None:
        """`step` asked with a hop's answer replaced by a sentence bridge
        (`graphseek.agents.offline.bridges`), or None: for a hop that was asked and has no
        answer, its best bridge; for one whose answer is below `branch_below`, a bridge other
        than its answer; for a settled one, only its answer written longer. At most
        `MAX_BRIDGE_ASKS` such questions per step."""
        if not bridges or len(step.depends_on) != 1:
            return None
        dep = step.depends_on[0]
        hop = next((s for s in plan if s.id == dep), None)
        upstream = best.get(dep)
        if hop is None or upstream is None:  # the hop was not asked yet
            return None
        through = [
            d for d in tried if asked_through(d.question, step, answers, bridges) is not None
        ]
        if len(through) >= MAX_BRIDGE_ASKS:
            return None
        answer = answers.get(str(dep), "")
        options = subjects(bridges, hop, answer, self.profile)
        if answer and upstream.confidence >= self.branch_below:
            options = [b for b in options if extends(b.entity, answer)]
        asked = {normalize(d.question) for d in tried} | ({normalize(also)} if also else set())
        for bridge in options:
            text = fill_placeholders(step.question, {**answers, str(dep): bridge.entity})
            if normalize(text) not in asked:
                return text
        return None

    def _retry(
        self,
        step: SubQuestion,
        filled: str,
        answers: Mapping[str, str],
        best: Mapping[int, Draft | None],
        asked: set[str],
        plan: Sequence[SubQuestion],
    ) -> str | None:
        """A new wording of a weak step: rephrased, or built on an upstream alternative (first
        when the upstream answer itself is uncertain)."""
        alternatives: list[str] = []
        shaky = False
        for dep in step.depends_on:
            upstream = best.get(dep)
            if upstream is None:
                continue
            shaky = shaky or upstream.confidence < self.branch_below
            for alternative in upstream.candidates[:2]:
                alternatives.append(
                    fill_placeholders(step.question, {**answers, str(dep): alternative})
                )
        wordings = rephrasings(filled, self.profile)
        own = best.get(step.id)
        if own is not None:
            # rewrite the query with a bridge entity found in the weak draft's evidence: the
            # next hop's passage often shares no word with the question itself
            wordings += [f"{filled} ({bridge})" for bridge in own.bridges[:2]]
        ordered = alternatives + wordings if shaky else wordings + alternatives
        for text in ordered:
            if normalize(text) not in asked:
                return text
        return None

    def _conclude(
        self,
        view: SeekerView,
        plan: Sequence[SubQuestion],
        comparison: Comparison | None,
        virtual: set[int],
        best: Mapping[int, Draft | None],
        answers: Mapping[str, str],
        dead: Sequence[int],
        drafts_by_step: Mapping[int, Sequence[Draft]] | None = None,
    ) -> SeekerAction:
        used = [d for d in best.values() if d is not None and d.answer]
        evidence = _evidence_ids(used)
        if comparison is not None and virtual:
            final_step = max(virtual)
            step = next(s for s in plan if s.id == final_step)
            values, confs = _option_values(plan, step, comparison, best)
            verdict = compare_values(comparison, values, self.profile)
            confidence = min(confs) if confs else 0.0
            if verdict is None:
                return _abstain("The compared values could not all be found or compared.")
            if confidence < self.abstain_threshold:
                return _abstain(
                    f"Comparison answer {verdict!r} is too weakly supported "
                    f"(confidence {confidence:.2f} < {self.abstain_threshold:.2f})."
                )
            return SeekerAction(
                reason=f"Compared {comparison.attribute} of {', '.join(comparison.options)}.",
                action="answer",
                answer=verdict,
                evidence=evidence,
                confidence=round(confidence, 4),
            )
        answerable = [s for s in plan if s.id not in virtual]
        if not answerable:
            return _abstain("The plan has no step to answer.")
        final = answerable[-1]
        bridged = self._through_bridge(view, plan, final, best, answers, drafts_by_step or {})
        if bridged is not None:
            return bridged
        draft = best.get(final.id)
        answer = answers.get(str(final.id), "")
        if not answer:
            reason = "The last step could not be answered"
            if dead:
                reason += f" (no answer for step(s) {', '.join(map(str, dead))})"
            return _abstain(reason + ".")
        chain = _ancestors(plan, final.id) | {final.id}
        confs = [best[s].confidence for s in chain if best.get(s) is not None]  # type: ignore[union-attr]
        confidence = min(confs) if confs else (draft.confidence if draft else 0.0)
        if confidence < self.abstain_threshold:
            return _abstain(
                f"Best answer {answer!r} is too weakly supported "
                f"(confidence {confidence:.2f} < {self.abstain_threshold:.2f})."
            )
        chain_drafts = [best[s] for s in sorted(chain) if best.get(s) is not None]
        return SeekerAction(
            reason=f"All {len(answerable)} step(s) answered; the last step gives the answer.",
            action="answer",
            answer=answer,
            evidence=_evidence_ids([d for d in chain_drafts if d is not None]),
            confidence=round(confidence, 4),
        )

    def _through_bridge(
        self,
        view: SeekerView,
        plan: Sequence[SubQuestion],
        final: SubQuestion,
        best: Mapping[int, Draft | None],
        answers: Mapping[str, str],
        drafts_by_step: Mapping[int, Sequence[Draft]],
    ) -> SeekerAction | None:
        """The answer through a sentence bridge, when the last step was asked on one and that
        chain is the surest: each chain is as sure as its least sure hop, a bridge's hop as
        sure as its activation (a bridge that writes the hop's answer longer confirms it: the
        surer of the two). None (the usual rule decides) when no draft of the last step went
        through a bridge, or a chain through the hop's own answer is as sure."""
        bridges = chain_bridges(view.question, view.bridges, self.profile)
        finals = [d for d in drafts_by_step.get(final.id, []) if d.answer]
        if not bridges or not finals:
            return None
        chain = _ancestors(plan, final.id)
        hops = {s.id: s for s in plan}

        def sureness(draft: Draft) -> tuple[float, tuple[int, SentenceBridge] | None]:
            via = asked_through(draft.question, final, answers, bridges)
            confs = [draft.confidence]
            for sid in chain:
                upstream = best.get(sid)
                read = upstream.confidence if upstream and upstream.answer else 0.0
                if via is not None and sid == via[0]:
                    confirms = upstream is not None and extends(via[1].entity, upstream.answer)
                    confs.append(max(read, via[1].weight) if confirms else via[1].weight)
                else:
                    confs.append(read)
            return min(confs), via

        scored = [(*sureness(d), d) for d in finals]
        through = [(c, via, d) for c, via, d in scored if via is not None]
        if not through:
            return None
        confidence, via, draft = max(through, key=lambda x: x[0])
        own = max((c for c, v, _ in scored if v is None), default=-1.0)
        if via is None or confidence <= own:
            return None
        dep, bridge = via
        if confidence < self.abstain_threshold:
            return _abstain(
                f"Best answer {draft.answer!r}, through the bridge {bridge.entity!r}, is too "
                f"weakly supported (confidence {confidence:.2f} < {self.abstain_threshold:.2f})."
            )
        used = [bridge_draft(hops[dep], bridge), draft]
        own_read = best.get(dep)
        confirmed = own_read is not None and extends(bridge.entity, own_read.answer)
        others = [
            best[s] for s in sorted(chain) if (s != dep or confirmed) and best.get(s) is not None
        ]
        return SeekerAction(
            reason=f"The last step answered through the bridge {bridge.entity!r}, which "
            f"{bridge.source!r} reaches in the sentence {bridge.sentence[:120]!r}.",
            action="answer",
            answer=draft.answer,
            evidence=_evidence_ids([*[d for d in others if d is not None], *used]),
            confidence=round(confidence, 4),
        )


def _abstain(reason: str) -> SeekerAction:
    return SeekerAction(reason=reason, action="abstain", answer="", confidence=0.0)


def _comparison_steps(
    plan: Sequence[SubQuestion], comparison: Comparison | None, profile: Profile = GENERAL
) -> set[int]:
    """Steps that restate the question's comparison: the Seeker resolves them itself."""
    if comparison is None:
        return set()
    out = set()
    for step in plan:
        if not step.depends_on:
            continue
        own = parse_comparison(step.question, profile)
        if own is not None or normalize(step.question) == normalize_question(comparison):
            out.add(step.id)
    if not out and len(plan) > 1:
        last = plan[-1]
        mentioned = sum(1 for o in comparison.options if normalize(o) in normalize(last.question))
        if last.depends_on and mentioned >= 2:
            out.add(last.id)
    return out


def normalize_question(comparison: Comparison) -> str:
    return normalize(" ".join(comparison.options))


def _drafts_by_step(plan: Sequence[SubQuestion], drafts: Sequence[Draft]) -> dict[int, list[Draft]]:
    """Drafts grouped by the plan step they answer (by step id, else by question text)."""
    ids = {s.id for s in plan}
    out: dict[int, list[Draft]] = {}
    texts = {normalize(s.question): s.id for s in plan}
    for draft in drafts:
        sid = draft.step_id if draft.step_id in ids else texts.get(normalize(draft.question))
        if sid is not None:
            out.setdefault(sid, []).append(draft)
    return out


def _best(drafts: Sequence[Draft]) -> Draft | None:
    with_answer = [d for d in drafts if d.answer]
    if not with_answer:
        return drafts[-1] if drafts else None
    return max(with_answer, key=lambda d: d.confidence)


def _ancestors(plan: Sequence[SubQuestion], step_id: int) -> set[int]:
    by_id = {s.id: s for s in plan}
    out: set[int] = set()
    stack = list(by_id[step_id].depends_on) if step_id in by_id else []
    while stack:
        sid = stack.pop()
        if sid in out or sid not in by_id:
            continue
        out.add(sid)
        stack.extend(by_id[sid].depends_on)
    return out


def _option_values(
    plan: Sequence[SubQuestion],
    final: SubQuestion,
    comparison: Comparison,
    best: Mapping[int, Draft | None],
) -> tuple[dict[str, list[str]], list[float]]:
    """Each option's compared answers (in plan order) and the confidences they rest on."""
    by_id = {s.id: s for s in plan}
    value_ids = [d for d in final.depends_on if d in by_id]
    values: dict[str, list[str]] = {o: [] for o in comparison.options}
    confs: list[float] = []
    for vid in value_ids:
        texts = [by_id[vid].question] + [by_id[a].question for a in _ancestors(plan, vid)]
        option = _option_for(texts, comparison.options)
        draft = best.get(vid)
        answer = draft.answer if draft is not None else ""
        if option is None:
            continue
        for sid in _ancestors(plan, vid) | {vid}:
            d = best.get(sid)
            confs.append(d.confidence if d is not None and d.answer else 0.0)
        # in plan order: a duration's start step comes before its end step
        values[option].append(answer)
    return values, confs


def _option_for(texts: Sequence[str], options: Sequence[str]) -> str | None:
    best: tuple[int, str] | None = None
    for option in options:
        norm = normalize(option)
        for text in texts:
            if norm and f" {norm} " in f" {normalize(text)} ":
                if best is None or len(norm) > best[0]:
                    best = (len(norm), option)
    return best[1] if best else None


def _evidence_ids(drafts: Sequence[Draft]) -> list[str]:
    seen: list[str] = []
    for draft in drafts:
        for item in draft.evidence[:1]:
            if item.passage_id not in seen:
                seen.append(item.passage_id)
    return seen
