"""Scaling: seed blueprints -> many scaled blueprints (``scale``), then ``dedupe``.

``scale`` is a per-seed map: offline it fills slots with seeded distinct alternatives
(the LLM path plugs in behind the same contract). ``dedupe`` rejects near-duplicates and
keeps each dimension's target count, balanced across seed families.
"""

from stages.scale.dedupe import Dedupe
from stages.scale.offline import Scale

__all__ = ["Dedupe", "Scale"]
