"""LLM generation behind the stage contract: filler exchanges for ``dialogues``
(:mod:`stages.generate.fillers`) and generated, oracle-verified RM probes for ``variants``
(:mod:`stages.generate.rm`). The LLM scaler lives in :mod:`stages.scale.llm`; all prompts
are in :mod:`stages.generate.prompts`. Every path runs only when the build has an LLM
(``ctx.services["llm"]``) and records its fallbacks and their reasons in provenance.
"""
