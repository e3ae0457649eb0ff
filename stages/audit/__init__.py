"""Leakage audits of a release (TriggerBench appendix A.8, Tables 8 and 9), rerunnable on any release.

``run_audit(source, out_dir)`` reads every ``pm_*`` / ``explicit_*`` config of a release directory
or Hub id through ``datasets`` and writes ``lexical.csv``, ``semantic.csv``, ``rows.parquet``,
``report.md`` and PNG plots; ``cli`` is the ``triggerbench audit`` verb.
"""

from stages.audit.embeddings import (
    BUNDLED_MODEL_ID,
    PAPER_MODEL_ID,
    Embedder,
    EmbeddingModelChoice,
    EmbeddingModelError,
    load_embedding_model,
)
from stages.audit.reader import AuditSourceError
from stages.audit.run import AuditResult, default_cache_dir, run_audit

__all__ = [
    "AuditResult", "AuditSourceError", "BUNDLED_MODEL_ID", "Embedder", "EmbeddingModelChoice", "EmbeddingModelError",
    "PAPER_MODEL_ID", "default_cache_dir", "load_embedding_model", "run_audit",
]
