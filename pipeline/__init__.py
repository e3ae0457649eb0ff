"""triggerbench: build, audit, load and publish prospective-memory benchmarks.

The orchestration lives here (stage contract, cache, runner, release writer, CLI);
each stage lives in ``stages/``. ``pipeline.registry`` lists every stage of a build.
"""

__version__ = "0.1.0"
