"""``triggerbench eval``: score any OpenAI-compatible model on a release with the paper's metrics."""
