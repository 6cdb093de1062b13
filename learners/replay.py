"""``python -m learners.replay``: the replay command line (see :mod:`learners.evaluation.cli`)."""

import sys

from .evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
