"""``python -m pipeline`` is the same as the ``triggerbench`` console script."""

from pipeline.cli import main

raise SystemExit(main())
