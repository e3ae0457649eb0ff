"""``triggerbench audit RELEASE_DIR_OR_HUB_ID [--revision R] [--out DIR] [--embedding-model M]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stages.audit.embeddings import EmbeddingModelError
from stages.audit.reader import AuditSourceError, release_name


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the audit verb's arguments to ``parser``."""
    parser.add_argument("release", metavar="RELEASE_DIR_OR_HUB_ID",
                        help="a local release directory (releases/<version>) or a Hub dataset id (org/name)")
    parser.add_argument("--revision", default=None, help="Hub revision (tag such as v0.1.0, branch or commit)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output directory (default: ./audit-<release name>; never inside the release)")
    parser.add_argument("--embedding-model", default=None,
                        help="sentence-transformers model: local directory or Hub id "
                             "(default: BAAI/bge-base-en-v1.5 if loadable, else the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="embedding cache directory (default: $TRIGGERBENCH_CACHE, else ~/.cache/triggerbench)")
    parser.add_argument("--no-verify", action="store_true",
                        help="audit a local release even if it no longer matches its manifest (a modified copy)")


def _inside(path: Path, parent: Path) -> bool:
    return path.resolve().is_relative_to(parent.resolve())


def run(args: argparse.Namespace) -> int:
    """Run the audit; 0 when it ran and the shortcut check passed, 1 when the release or the embedding
    model cannot be read or the shortcut check failed."""
    from stages.audit.run import run_audit

    out = args.out if args.out is not None else Path.cwd() / f"audit-{release_name(args.release, args.revision)}"
    source_path = Path(args.release).expanduser()
    if source_path.is_dir() and _inside(out, source_path):
        print(f"error: {out} is inside the release {source_path}; releases are immutable, choose another --out",
              file=sys.stderr)
        return 1
    if source_path.is_dir():
        from pipeline.hub.release_files import ReleaseProblem
        from pipeline.verify import verify_release

        if args.no_verify:
            print(f"note: --no-verify: {source_path} is audited as it is, not checked against its manifest")
        else:
            try:
                verify_release(source_path)
            except ReleaseProblem as problem:
                print(f"error: {problem}\n(pass --no-verify to audit a modified copy on purpose)", file=sys.stderr)
                return 1
    try:
        result = run_audit(args.release, out, revision=args.revision, embedding_model=args.embedding_model,
                           cache_dir=args.cache_dir)
    except (AuditSourceError, EmbeddingModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(result.card_markdown())
    print(f"audit of {args.release}: {result.rows.height} rows, embedding model {result.embedding.label}")
    print(f"wrote {', '.join(result.files)} to {out}")
    shortcuts = result.shortcuts
    print(f"shortcut check: {shortcuts.verdict}" + (f" ({shortcuts.failing_count} failing cells; see "
                                                      f"{out / 'shortcuts.csv'})" if shortcuts.failing else ""))
    print(f"shortcut audit took {shortcuts.seconds:.1f} s of the audit's {result.seconds:.1f} s "
          f"({shortcuts.seconds / max(result.seconds, 1e-9):.0%})")
    return 1 if shortcuts.failing else 0
