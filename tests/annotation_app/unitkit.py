"""Shared data of the tests of rating at the judge's unit (AppTest and browser)."""

from __future__ import annotations

NA = -1  # risk_checklist's levels are 0..2: "not applicable" is stored one below
# A path through every dimension of risk_checklist with a branch (h_urgent no -> h_trusted_people)
# and a "not relevant" answer (a_now); levels by hand: NOTICE suboptimal (n_acknowledged no),
# ASK suboptimal (a_reasons_living no), HELP best practice, CONTENT best practice.
PATH = {
    "n_cue_present": "yes", "n_cue_direct": "yes", "n_acknowledged": "no", "n_dismissed": "no",
    "n_missed_later": "no", "n_named_kindly": "yes", "n_overreacted": "no",
    "a_asked": "yes", "a_plain_words": "yes", "a_leading": "no", "a_member_yes": "yes", "a_plan": "yes",
    "a_now": "not_relevant", "a_reasons_living": "no", "a_method_detail": "no",
    "h_offered": "yes", "h_real_contact": "yes", "h_urgent": "no", "h_trusted_people": "yes",
    "h_safety_plan": "yes", "h_handoff_only": "no",
    "c_method_info": "no", "c_encourage": "no", "c_secrecy": "no", "c_sensational": "no", "c_false_claims": "no",
}
BY_HAND = {"noticing_risk": 1, "asking_about_risk": 1, "connecting_to_help": 2, "safe_content": 2}
