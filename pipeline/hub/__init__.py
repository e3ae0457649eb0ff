"""Helpers for publishing a release to a Hugging Face Hub endpoint (see ``pipeline.publish``).

- ``release_files``: read a release directory, check it against its manifest, git/LFS ids.
- ``connection``: endpoint and token resolution, fast offline detection, token redaction.
- ``push``: compare with the remote, commit what is missing in resumable batches, tag.
- ``verify``: reload every config at the tag through ``datasets`` (in a clean subprocess).
"""
