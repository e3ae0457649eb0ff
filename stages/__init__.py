"""Pipeline stages, one module or package each; ``pipeline.registry`` lists them in build order."""
