"""Word-level text utilities shared by blueprint lint, filters and the lexical audit.

Content words follow the paper's Table 8 convention: lowercase word tokens, minus the
scikit-learn English stopword list (318 words, bundled in its wheel), minus words
shorter than 4 characters.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

STOPWORD_LIST_NAME = "scikit-learn ENGLISH_STOP_WORDS (318 words)"
MIN_WORD_LENGTH = 4
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_TIMESTAMP = re.compile(r"^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}\]\s*")


def strip_timestamp(text: str) -> str:
    """Remove a leading ``[YYYY-MM-DDTHH:MM] `` prefix."""
    return _TIMESTAMP.sub("", text, count=1)


def words(text: str) -> list[str]:
    """Lowercase word tokens (letters/digits, with an optional apostrophe suffix)."""
    return _WORD.findall(text.lower())


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """The set of content words of ``text`` (stopwords and words under 4 chars removed).

    Possessive/contraction suffixes are dropped (``alice's`` -> ``alice``).
    """
    found = set()
    for token in words(strip_timestamp(text)):
        token = re.split(r"['’]", token, maxsplit=1)[0]
        if len(token) >= MIN_WORD_LENGTH and token not in ENGLISH_STOP_WORDS:
            found.add(token)
    return frozenset(found)


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a whole word/phrase, case-insensitively."""
    phrase = phrase.strip()
    if not phrase:
        return False
    pattern = r"(?<![A-Za-z0-9])" + re.escape(phrase) + r"(?![A-Za-z0-9])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None
