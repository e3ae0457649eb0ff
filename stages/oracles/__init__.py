"""Oracle filters of the paper's appendix A.5: sufficiency (open-book skeleton is solvable,
with a human review round) and necessity (the trigger alone does not give the answer away).

Each runs with the build's LLM (``ctx.services["llm"]``) or, offline, as a labelled
rule-based stand-in. Decisions and reasons are recorded on each item under ``"oracles"``.
"""

from stages.oracles.necessity import OracleNecessity
from stages.oracles.sufficiency import OracleSufficiency

__all__ = ["OracleNecessity", "OracleSufficiency"]
