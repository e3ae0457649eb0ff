"""Distractor corpora for long contexts: loaders of the real formats, filters, source resolution.

A corpus becomes a list of :class:`~stages.distractors.units.Snippet` s: runs of whole
user/assistant exchanges (user first, assistant last) that contain no time expression.
``stages.distractors.pool`` turns the resolved sources into the ``distractor_pool``
artifact; ``stages.stretch`` injects snippets into base dialogues.
"""
