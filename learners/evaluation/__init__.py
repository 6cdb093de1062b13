"""Evaluation of the learners on labelled data: not needed to run a learner.

* :mod:`.cli` -- ``python -m learners.replay``, the papers' protocol on a labelled file;
* :mod:`.engine` -- the replay loops (per item, by blocks, compiled) and delta calibration;
* :mod:`.datasets` and :mod:`.libsvm` -- readers for LIBSVM, CSV and MATLAB files;
* :mod:`.metrics` -- online metrics and the importance-weighted accuracy estimate;
* :mod:`.evidence` -- the evidence trials of OASIS and KMC (their tests and the reproduction);
* :mod:`.charts` -- small server-drawn SVG line charts (the CLI's plot and the web dashboard).

It depends on the learners (:mod:`learners.registry`, :mod:`learners.budget`); the learners never
import it.
"""
