"""`python -m bench.report results.json`: redraw a run's plots and README section."""

import sys

from bench.report import main

sys.exit(main())
