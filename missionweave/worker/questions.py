"""Questions before work: a handler's essential questions, asked in the WorkItem's conversation
before its offer is accepted, and the acceptance held until they are settled (R10.1-02..04).

A handler declares them with a hook, ``questions(contract) -> list[str]``: what it cannot do
the work without knowing, judged from the contract of the offer (an empty list: nothing to
ask). Attach it with ``@asks(hook)`` or as a ``questions`` attribute of a callable handler
object. The worker calls it only for an offer admission would accept: a question about work it
would refuse anyway is noise.

Each question is one ``work.message`` with ``"essential": true`` (R10.1-02). Its command id —
which is the message's id — is derived from the agent, the item, the contract revision and the
question's text (``question_id``), so asking again after a restart is an idempotent replay of
the same command (wire.md §3 step 5), never a second question. While any of them is open on the
item (``open_questions``) the offer is not accepted (R10.1-03): it is looked at again each time
the group's log moves, until the coordinator or a mission owner settles every question (never
this worker: ``protocol.work.questions``), then accepted if it is still offered and admission
still takes it. A corrected contract (R10.1-04) is a new revision, so the hook is asked about
it afresh. An offer that expires while its questions are open simply lapses.

The settled answers reach the handler in its mission context (``answers``: question, answer,
who answered), read from this worker's inbox (``queues``: replies to its own messages).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from missionweave.client.errors import ApiError
from missionweave.protocol.canonical import digest

from .link import Link
from .local_store import QueueStore
from .queues import OfferRow

log = logging.getLogger("missionweave.worker")

#: what a handler's hook returns for a contract: the essential questions, in order
QuestionsHook = Callable[[Mapping[str, Any]], Sequence[str]]
#: questions asked per offer, at most (the rest are dropped, with a warning)
MAX_QUESTIONS = 5
#: the longest question sent (``work.message`` texts are at most 10,000 characters)
MAX_QUESTION_CHARS = 2000
#: how long a question the authority refused to record waits before it is asked again
RETRY_AFTER = timedelta(seconds=30)


def asks[H](hook: QuestionsHook) -> Callable[[H], H]:
    """Declare ``hook`` as the handler's essential questions (a decorator)."""

    def declare(handler: H) -> H:
        handler.questions = hook  # type: ignore[attr-defined]
        return handler

    return declare


def questions_of(handler: object, contract: Mapping[str, Any]) -> tuple[str, ...]:
    """The handler's essential questions about ``contract``: non-empty texts, each once."""
    hook = getattr(handler, "questions", None)
    if hook is None or not callable(hook):
        return ()
    found: list[str] = []
    for asked in hook(contract) or ():
        if not isinstance(asked, str) or not asked.strip():
            raise TypeError("a handler's questions are non-empty strings")
        text = asked.strip()[:MAX_QUESTION_CHARS]
        if text not in found:
            found.append(text)
    if len(found) > MAX_QUESTIONS:
        log.warning(
            "a handler asked %d questions; the first %d are sent", len(found), MAX_QUESTIONS
        )
    return tuple(found[:MAX_QUESTIONS])


def question_id(agent: str, group: str, work_item: str, revision: int, text: str) -> str:
    """The question's command (and message) id: the same question about the same revision is
    the same command, whoever restarts."""
    hashed = digest(
        {"agent": agent, "group": group, "work_item": work_item, "revision": revision, "q": text}
    )
    return f"q-{hashed.removeprefix('sha256:')[:40]}"


@dataclass(frozen=True, slots=True)
class Answer:
    """A settled question, as the handler reads it."""

    question: str
    answer: str
    by: str

    def as_dict(self) -> dict[str, str]:
        return {"question": self.question, "answer": self.answer, "by": self.by}


class QuestionDesk:
    """Asks a handler's questions about an offer and says whether the offer must wait."""

    def __init__(self, *, link: Link, store: QueueStore, agent: str) -> None:
        self.link = link
        self.store = store
        self.agent = agent
        #: (group, work item, revision) → the question ids asked (by this run)
        self._asked: dict[tuple[str, str, int], tuple[str, ...]] = {}
        #: the group sequence at which a held offer was last looked at
        self._looked: dict[tuple[str, str, str], int] = {}
        #: questions the authority refused to record: not asked again before then
        self._retry: dict[tuple[str, str, int], datetime] = {}

    def ids(self, offer: OfferRow, questions: Sequence[str]) -> tuple[str, ...]:
        group, work_item, revision = offer["group"], offer["work_item"], offer["revision"]
        return tuple(question_id(self.agent, group, work_item, revision, q) for q in questions)

    def unchanged(self, offer: OfferRow) -> bool:
        """A held offer whose group log has not moved since it was last looked at: nothing
        can have settled its questions (a reply is an event of that log)."""
        key = (offer["group"], offer["work_item"], offer["offer"])
        return self._looked.get(key) == self.store.state(offer["group"]).sequence

    def hold(
        self, offer: OfferRow, document: Mapping[str, Any], handler: object, now: datetime
    ) -> bool:
        """Whether acceptance of ``offer`` waits for questions: asked now, or still open on
        the item as the authority serves it (``document``). ``Offline`` propagates."""
        questions = questions_of(handler, document["contract"])
        if not questions:
            return False
        group, work_item = offer["group"], offer["work_item"]
        key = (group, work_item, offer["revision"])
        ids = self.ids(offer, questions)
        if key not in self._asked:
            if self._retry.get(key, now) > now:
                return True
            if not self._ask(group, work_item, questions, ids):
                self._retry[key] = now + RETRY_AFTER
                return True
            # the next look reads them open or (asked by an earlier run) already settled
            self._asked[key] = ids
            return True
        self._looked[(group, work_item, offer["offer"])] = self.store.state(group).sequence
        still_open = set(document.get("open_questions") or ()) & set(ids)
        if still_open:
            log.info("offer %s waits for %d open question(s)", offer["offer"], len(still_open))
        return bool(still_open)

    def _ask(
        self, group: str, work_item: str, questions: Sequence[str], ids: Sequence[str]
    ) -> bool:
        for text, message in zip(questions, ids, strict=True):
            body = {"work_item": work_item, "text": text, "essential": True}
            try:
                self.link.send(group, "work.message", body, command_id=message)
            except ApiError as error:
                log.warning("question on %s not recorded: %s", work_item, error)
                return False
        log.info("asked %d essential question(s) on %s/%s", len(ids), group, work_item)
        return True

    def answers(
        self,
        group: str,
        work_item: str,
        revision: int,
        contract: Mapping[str, Any],
        handler: object,
    ) -> tuple[Answer, ...]:
        """The settled answers to the handler's questions about this revision, from this
        worker's inbox: the reply that settled each (R10.1-04), in the order asked."""
        questions = questions_of(handler, contract)
        if not questions:
            return ()
        ids = {question_id(self.agent, group, work_item, revision, q): q for q in questions}
        settled: dict[str, Answer] = {}
        for entry in self.store.inbox(group):
            detail = entry["detail"]
            if entry["kind"] != "message" or entry["work_item"] != work_item:
                continue
            asked = detail.get("in_reply_to")
            if asked in ids and detail.get("resolves") and asked not in settled:
                settled[asked] = Answer(ids[asked], str(detail["text"]), str(detail["by"]))
        return tuple(settled[q] for q in ids if q in settled)
