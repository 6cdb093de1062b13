"""Test support, the one place tests share code from (tests never import another test module):

* :mod:`.resources` -- the shared datasets and the PostgreSQL/Redis services: skip on a laptop,
  fail in CI;
* :mod:`.app` -- projects with real items, users, a real Celery worker process;
* :mod:`.browser` -- Playwright driving Debian's Chromium;
* :mod:`.linear` -- trajectory, fixed-uniform and calibration helpers of the learner tests;
* :mod:`.raw_data` -- readers of the raw items in the shared datasets;
* :mod:`.synthetic` -- small random sparse problems.
"""
