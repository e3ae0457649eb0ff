"""triggerbench: build, audit, load and publish prospective-memory benchmarks.

The orchestration lives here (stage contract, cache, runner, release writer, CLI);
each stage lives in ``stages/``. ``pipeline.registry`` lists every stage of a build.
"""

import os

__version__ = "0.1.0"

# OpenMP threads (torch's MiniLM encodes, scikit-learn's boosted trees) busy-wait between parallel regions by
# default. On a 2-core machine shared with other processes (a build beside a test run, the audit's worker
# processes) the spinning takes the cores from the work: two processes encoding at once took 49.5 CPU-seconds
# spinning and 29.9 passive, with the same vectors. Set before any OpenMP runtime loads; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
