"""Test support, the one place tests share code from (tests never import another test module):

* :mod:`.resources` -- the shared datasets and the PostgreSQL/Redis services: skip on a laptop,
  fail in CI;
* :mod:`.app` -- projects with real items, users, a real Celery worker process;
* :mod:`.browser` -- Playwright driving Debian's Chromium;
* :mod:`.decision_log` -- a project's whole decision log and the estimate over it, which the
  running totals must equal;
* :mod:`.linear` -- calibration and two-class helpers of the learner tests;
* :mod:`.raw_data` -- readers of the raw items in the shared datasets;
* :mod:`.synthetic` -- small random sparse problems.
"""
