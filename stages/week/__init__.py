"""PM-Bench week: seeded generator, validator, perfect-play audit, runtime, scorer, policies.

See ``docs/pmbench.md`` for the definitions (due set, late window, metrics) and
``stages/week/cli.py`` for the ``triggerbench week ...`` commands.
"""
