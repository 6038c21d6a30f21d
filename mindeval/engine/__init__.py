"""The benchmark engine (what ``mindeval run`` runs), one module per job:

- :mod:`.prepare`: inputs checked before any call (``prepare``, ``Prepared``, ``judge_setup``);
- :mod:`.estimate`: the ``--dry-run`` estimate (``estimate_run``, ``format_estimate``);
- :mod:`.resume`: resume or start a run (``open_run``, ``OpenedRun``, ``interaction_id``);
- :mod:`.loop`: the run loop (sessions, early reply judging; ``run_benchmark``, ``arun_benchmark``, ``run_sweep``);
- :mod:`.export`: the run directory's outputs and summary figures (``export_run``, ``is_complete``);
- :mod:`.console`: the summary's console text (``format_summary``, ``format_failures``).

Import from the module that does the job; this package's face re-exports nothing, so that
importing one job (e.g. the estimate's text) does not load the run loop.
"""
