"""Everything about judging a conversation, in one package.

* :mod:`.judge` — the one judge loop (:func:`~.judge.judge_sample`) every run kind calls
  with a :class:`~.job.JudgeJob`; :mod:`.call` one judgment round with its retries;
  :mod:`.items` item-level rubrics (questions, "not relevant"); :mod:`.replies` reply-level
  judging (``unit: reply``, one judgment per clinician reply).
* :mod:`.render` — the request: transcript as data, few-shot block, template fields;
  :mod:`.reply_format` the reply shape asked for; :mod:`.textguard` how a turn is shown.
* :mod:`.answer` — the answer channel (answer code, JSON schema) and strict parsing;
  :mod:`.protocols` the ``mindeval``/``paper`` protocols and their retry instruction.
* :mod:`.fewshot`, :mod:`.authors` — few-shot examples and the authors' annotation format;
  :mod:`.rubric` — item-level questions and how their answers give a level.

Nothing is imported here, so a module low in the stack (``mindeval.targets.axes`` reads
:mod:`.rubric`) can use one part without loading the rest.
"""
