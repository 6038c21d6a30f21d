"""Role-play: an annotator plays a patient profile against the clinician model.

Each session is a ``roleplay`` run in the run store with one interaction; every
turn is a committed ``turns`` row (human patient turns, model clinician turns) and
every model call goes through :class:`~mindeval.store.CallLog` with a per-turn tag,
so a refresh, a closed tab or a server restart loses nothing and a reply that was
already received is never requested again. The clinician sees the study's clinician
prompt (its target's; MindEval's default) rendered with the intake fields only.

A message sent while the clinician is still answering is never dropped: it waits in the
session's queue (``ann_roleplay_queue``) and becomes the next turn once the reply is
stored, in order, each answered in turn. :data:`_busy` names the sessions whose reply is
being written in this server, so the page shows "writing" instead of a retry button.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from sqlalchemy.exc import IntegrityError

from annotation_app.store import roleplay as sessions_store
from annotation_app.store.common import Conflict, ReplyFailed, TimeUp, attribute_pairs
from annotation_app.store.models import Message, RoleplayView, SessionEntry
from annotation_app.store.tables import (
    RoleplaySessionRow,
    StudyProfileRow,
    StudyRow,
    as_utc,
    utcnow,
)
from mindeval.errors import MindEvalError, ModelCallError
from mindeval.llm.gateway import ModelSpec
from mindeval.prompts import PromptTemplate, load_template, render_clinician
from mindeval.records import Profile, Turn, profile_from_json
from mindeval.run_config import spec_with_defaults
from mindeval.simulate import model_turn, role_view
from mindeval.store import CallLog, Database
from mindeval.store.runs import RunStore, ensure_run, load_turns, save_turn
from mindeval.targets import load_target

MAX_MESSAGE = 4000
REPLY_FAILED = "The clinician did not answer; try again"
# The embedded clinician answers in at most this many sentences, like a person in a chat.
EMBEDDED_MAX_SENTENCES = 4
logger = logging.getLogger(__name__)
_busy: set[int] = set()  # sessions whose clinician reply is being written by this process
_busy_lock = threading.Lock()  # also orders "queue a message" against "the last reply is done"
# The reply being streamed per session, as written so far: a page that reruns meanwhile (the
# patient sent another message) shows it until the stored reply replaces it.
_partial: dict[int, str] = {}


def _profile(sp: StudyProfileRow) -> Profile:
    return profile_from_json(sp.profile_json, path=f"study profile {sp.profile_id}")


def clinician_spec(study: StudyRow) -> ModelSpec:
    spec = ModelSpec(model=study.clinician_model, max_tokens=study.clinician_max_tokens,
                     temperature=study.clinician_temperature)
    if spec.is_embedded:
        # In-process compute, shown to the annotator as it is written: a busy machine makes it
        # slow, never lost (the gateway cuts no in-process call by a timeout).
        spec = spec.model_copy(update={"extra": {"max_sentences": EMBEDDED_MAX_SENTENCES}})
    return spec_with_defaults("clinician", spec)


def sessions(db: Database, annotator_id: int, study_id: int) -> list[SessionEntry]:
    out = []
    for n, (sess, sp) in enumerate(sessions_store.session_rows(db, annotator_id, study_id), start=1):
        turns = _turns(db, sess) if sess.interaction_id else []
        out.append(SessionEntry(session_id=sess.id, position=n, status=sess.status,
                                member_name=str(sp.profile_json["member_attributes"].get("name", "member")),
                                n_messages=len(turns)))
    return out


def _turns(db: Database, sess: RoleplaySessionRow) -> list[Turn]:
    if not sess.interaction_id:
        return []
    return load_turns(db, sess.interaction_id)


def view(db: Database, annotator_id: int, session_id: int) -> RoleplayView:
    sess, study, sp = sessions_store.load_session(db, annotator_id, session_id)
    turns = _turns(db, sess)
    attrs = sp.profile_json["member_attributes"]
    left = None
    if sess.deadline_at is not None:
        left = (as_utc(sess.deadline_at) - utcnow()).total_seconds()
    return RoleplayView(
        session_id=sess.id, study_id=study.id, study_name=study.name, status=sess.status,
        member_name=str(attrs.get("name", "member")), attributes=attribute_pairs(attrs),
        backstory=str(sp.profile_json.get("member_narrative") or ""),
        messages=[Message(role=t.role, content=t.content) for t in turns],
        awaiting_reply=bool(turns) and turns[-1].role == "patient" and sess.status == "active",
        queued=sessions_store.queued(db, sess.id), replying=sess.id in _busy,
        partial=_partial.get(sess.id, "") if sess.id in _busy and turns and turns[-1].role == "patient" else "",
        minutes=study.minutes or 0, seconds_left=left, time_up=left is not None and left <= 0,
    )


def clinician_template(study: StudyRow) -> PromptTemplate:
    """The study's clinician prompt: the one stored with it (``mindeval``), else its target's."""
    if study.clinician_prompt:
        return load_template(study.clinician_prompt, kind="clinician")
    return load_target(study.target).template("clinician")


def _clinician_system(study: StudyRow, profile: Profile) -> str:
    """The clinician's system prompt: intake fields, and a profile label only where the target
    declares it visible to the clinician and its template names it."""
    tpl = clinician_template(study)
    labels = load_target(study.target).template_labels([tpl], [profile]) if tpl.labels else {}
    return render_clinician(tpl, profile, labels.get(profile.id))


def start(db: Database, annotator_id: int, session_id: int) -> None:
    """Start the clock and create the session's run and interaction (idempotent)."""
    sess, study, sp = sessions_store.load_session(db, annotator_id, session_id)
    if sess.status != "not_started":
        return
    profile = _profile(sp)
    tpl = clinician_template(study)
    spec = clinician_spec(study)
    run_id = f"roleplay-{study.id}-{sess.id}"
    iid = f"{run_id}-{profile.id}"
    config = {"kind": "roleplay", "study": study.name, "clinician": spec.model_dump(mode="json"),
              "prompt": {"ref": tpl.ref, "sha256": tpl.sha256}, "profile_id": profile.id,
              "minutes": study.minutes}
    ensure_run(db, run_id, config, "roleplay")
    with db.write() as s:
        RunStore(db, run_id).ensure_interaction(iid, 0, profile, spec.model, "human")(s)
        sessions_store.mark_started(s, sess.id, run_id, iid, study.minutes or 0)


def send(db: Database, annotator_id: int, session_id: int, text: str,
         on_text: Callable[[str], None] | None = None) -> bool:
    """Commit the patient's message, then fetch the clinician's reply (see :func:`reply`).

    While the clinician is still answering (or earlier messages wait) the message is queued
    instead and ``True`` is returned: it is sent, in order, once the reply is stored.
    """
    text = text.strip()
    if not text:
        raise MindEvalError("the message is empty", field="message")
    if len(text) > MAX_MESSAGE:
        raise MindEvalError(f"a message can have at most {MAX_MESSAGE} characters", field="message")
    sess, _study, _sp = sessions_store.active_session(db, annotator_id, session_id)
    if as_utc(sess.deadline_at) <= utcnow():
        raise TimeUp(text)
    with _busy_lock:  # a reply finishing now either sees this message or is seen as finished
        turns = _turns(db, sess)
        if sess.id in _busy or (turns and turns[-1].role == "patient") or sessions_store.n_queued(db, sess.id):
            sessions_store.enqueue(db, sess.id, text)
            queued = True
        else:
            try:
                save_turn(db, sess.interaction_id,
                          Turn(index=len(turns), role="patient", content=text, author="human", model=None))
                queued = False
            except IntegrityError:  # another tab sent a message at the same moment: wait behind it
                sessions_store.enqueue(db, sess.id, text)
                queued = True
        idle = sess.id not in _busy
    if not queued or (idle and turns and turns[-1].role == "clinician"):
        reply(db, annotator_id, session_id, on_text)  # nobody else will send it
    return queued


def reply(db: Database, annotator_id: int, session_id: int, on_text: Callable[[str], None] | None = None) -> None:
    """Ask the clinician to answer the last patient message, commit the turn, then send the
    queued messages one by one, each answered in turn.

    ``on_text`` receives the first reply piece by piece while the embedded model writes it;
    when it is given (a page is waiting), the queued messages are answered in a background
    thread so the page can show the first reply at once. Returns at once while this session's
    reply is already being written.
    """
    with _busy_lock:
        if session_id in _busy:
            return
        _busy.add(session_id)
    try:
        try:
            _answer(db, annotator_id, session_id, _kept(session_id, on_text) if on_text else None)
        finally:
            _partial.pop(session_id, None)  # stored (or failed): the page shows the turn instead
        more = _next(db, annotator_id, session_id)
    except BaseException:
        _release(session_id)
        raise
    if not more:
        return
    if on_text is None:
        _answer_queue(db, annotator_id, session_id)
    else:
        threading.Thread(target=_answer_queue_logged, args=(db, annotator_id, session_id), daemon=True,
                         name=f"roleplay-{session_id}").start()


def _kept(session_id: int, on_text: Callable[[str], None]) -> Callable[[str], None]:
    """``on_text`` that also keeps the reply written so far in :data:`_partial`."""
    _partial[session_id] = ""

    def keep(piece: str) -> None:
        _partial[session_id] = _partial.get(session_id, "") + piece
        on_text(piece)

    return keep


def _release(session_id: int) -> None:
    with _busy_lock:
        _busy.discard(session_id)


def _next(db: Database, annotator_id: int, session_id: int) -> bool:
    """Make the oldest queued message the next turn (``True``), or, with nothing left to
    answer, release the session (``False``). Under the lock that :func:`send` queues under."""
    with _busy_lock:
        sess, _study, _sp = sessions_store.load_session(db, annotator_id, session_id)
        turns = _turns(db, sess)
        if turns and turns[-1].role == "patient":
            return True  # still unanswered (its reply failed to store): answer it first
        if sess.interaction_id and sessions_store.dequeue_as_turn(db, sess.id, sess.interaction_id, len(turns)):
            return True
        _busy.discard(session_id)
        return False


def _answer_queue(db: Database, annotator_id: int, session_id: int) -> None:
    """Answer the turn :func:`_next` made, and so on until the queue is empty (then release)."""
    try:
        while True:
            _answer(db, annotator_id, session_id, None)
            if not _next(db, annotator_id, session_id):
                return
    except BaseException:
        _release(session_id)
        raise


def _answer_queue_logged(db: Database, annotator_id: int, session_id: int) -> None:
    try:
        _answer_queue(db, annotator_id, session_id)
    except Exception as exc:  # the page shows "not arrived yet" and a retry button
        logger.warning("role-play session %s: a queued message was not answered: %s", session_id, exc)


def _answer(db: Database, annotator_id: int, session_id: int, on_text: Callable[[str], None] | None) -> None:
    """One clinician reply to the last patient message (nothing when it is answered)."""
    sess, study, sp = sessions_store.active_session(db, annotator_id, session_id)
    turns = _turns(db, sess)
    if not turns or turns[-1].role != "patient":
        return  # already answered (e.g. by another tab)
    system = _clinician_system(study, _profile(sp))
    spec = clinician_spec(study)
    idx = len(turns)
    from mindeval.llm import embedded  # the embedded model's module: only when a reply is due

    messages = role_view(system, turns, "clinician")
    try:
        with embedded.streaming(on_text, messages) if on_text else contextlib.nullcontext():
            call = CallLog(db, sess.run_id).call_sync("clinician", spec, messages, tag=f"turn:{idx}")
    except ModelCallError as exc:
        # The annotator is blind to the model: the detail goes to the server log only.
        logger.warning("role-play session %s, turn %s: clinician call failed: %s", session_id, idx, exc)
        raise ReplyFailed(REPLY_FAILED) from None
    try:
        save_turn(db, sess.interaction_id, model_turn(idx, "clinician", spec, call.call_id, call.completion))
    except IntegrityError:
        pass  # another tab stored this same reply first


def finish(db: Database, annotator_id: int, session_id: int) -> int:
    """End the session and store it as a rateable interaction; returns the item id."""
    sess, study, sp = sessions_store.active_session(db, annotator_id, session_id)
    turns = _turns(db, sess)
    if sessions_store.n_queued(db, sess.id):
        raise Conflict("some of your messages are still waiting for the clinician; finish once they are "
                       "answered", field="status")
    if not any(t.role == "clinician" for t in turns):
        raise Conflict("send at least one message and receive a reply before finishing", field="status")
    profile = _profile(sp)
    messages = [{"role": "user" if t.role == "patient" else "assistant", "content": t.content} for t in turns]
    return sessions_store.finish_session(
        db, sess, member_attributes=profile.member_attributes.model_dump(mode="json"), messages=messages,
        clinician_model=study.clinician_model,
        meta={"study": study.name, "session_id": sess.id, "run_id": sess.run_id,
              "interaction_id": sess.interaction_id, "profile_id": profile.id,
              "member_narrative": profile.member_narrative},
    )
