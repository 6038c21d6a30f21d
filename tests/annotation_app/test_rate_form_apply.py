"""Applying the rating form's state (``annotation_app.rate_form.apply``) reads the item as few
times as it can: once for a conversation's sub-axes (their values do not depend on each other),
again after each answer of a question form (an answer decides which questions later fields reach),
and every field of the state is stored either way. Each read is a dozen queries on the form's
fragment run, which every key of every annotator waits for (``bench_app.py --annotators``).
Which versions a tab's states wrote is recorded for every app process."""

from __future__ import annotations

import pytest
from appkit import DEMO_CODE, SYSTEM, make_workspace, viewer

from annotation_app import rate_form as rf
from annotation_app.demo import QUESTION_STUDY
from annotation_app.forms import RateAction
from annotation_app.services import Workspace
from annotation_app.store.common import Stale


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = Workspace.item

    def item(self, v, aid):
        reads.append(aid)
        return real(self, v, aid)

    monkeypatch.setattr(Workspace, "item", item)
    return reads


def test_a_conversation_state_is_stored_on_one_read_of_the_item(demo_ws, monkeypatch) -> None:
    v = viewer(demo_ws, "demo", DEMO_CODE)
    aid = demo_ws.queue(v, 1)[0].assignment_id
    subs = [s.id for s in demo_ws.subaxes()]
    reads = _counting(monkeypatch)
    act = RateAction(tab="t", seq=1, item=aid, values={subs[0]: "3", subs[1]: "5", subs[2]: "2"},
                     texts={"justification": "why"}, version=0)
    version, writes = rf.apply(demo_ws, v, act, 0)
    assert (writes, len(reads)) == (4, 1)
    item = demo_ws.item(v, aid)
    assert item.values == {subs[0]: 3, subs[1]: 5, subs[2]: 2}
    assert (item.justification, item.version) == ("why", version)


def test_a_question_state_reaching_later_questions_is_stored_whole(tmp_db_url: str, monkeypatch) -> None:
    ws = make_workspace(tmp_db_url, unit_studies=True)
    try:
        v = viewer(ws, "demo", DEMO_CODE)
        aid = ws.queue(v, ws.study(SYSTEM, QUESTION_STUDY).id)[0].assignment_id
        reads = _counting(monkeypatch)
        # the second question is reached only once the first is answered "Yes"
        act = RateAction(tab="t", seq=1, item=aid, values={"q-n_cue_present": "Yes", "q-n_cue_direct": "Yes"},
                         version=0)
        _, writes = rf.apply(ws, v, act, 0)
        assert writes == 2 and len(reads) == 3  # the first read, then one after each answer
        assert ws.item(v, aid).answers == {"n_cue_present": "yes", "n_cue_direct": "yes"}
    finally:
        ws.close()


def test_a_state_sent_to_another_process_is_based_past_its_own_tabs_writes(any_db_url: str) -> None:
    """A browser whose process died sends its next state to another process (its own memory
    empty): the state is based on the version its form showed, moved past the versions the same
    tab's earlier states wrote there (recorded in the database), and stored; a Submit re-sent with
    the same seq too. A version another tab wrote in between still refuses it. Failed before: the
    record was one process's memory, and the second process refused the tab's own writes."""
    first = make_workspace(any_db_url)
    second = Workspace(any_db_url)  # another app process on the same database
    try:
        v = viewer(first, "demo", DEMO_CODE)
        aid = first.queue(v, 1)[0].assignment_id
        subs = [s.id for s in first.subaxes()]
        shown = first.item(v, aid).version
        rf.apply(first, v, RateAction(tab="t1", seq=1, item=aid, values={subs[0]: "3", subs[1]: "4"}, version=shown),
                 shown)
        act = RateAction(tab="t1", seq=2, item=aid, values={subs[0]: "3", subs[1]: "4", subs[2]: "5"}, version=shown)
        assert rf.base_version(second, v, act) == shown + 2
        rf.apply(second, v, act, rf.base_version(second, v, act))
        assert second.item(v, aid).values == {subs[0]: 3, subs[1]: 4, subs[2]: 5}
        again = act.model_copy(update={"values": {**act.values, subs[3]: "6"}})  # the same seq, re-sent
        assert rf.base_version(first, v, again) == shown + 3

        first.save_value(v, aid, subs[4], 2, version=shown + 3)  # another tab (no form state)
        late = RateAction(tab="t1", seq=3, item=aid, values={subs[5]: "1"}, version=shown)
        assert rf.base_version(second, v, late) == shown + 3
        with pytest.raises(Stale):
            rf.apply(second, v, late, rf.base_version(second, v, late))
        assert subs[5] not in first.item(v, aid).values
    finally:
        second.close()
        first.close()
