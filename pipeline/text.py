"""Word-level text utilities shared by blueprint lint, filters and the lexical audit.

Content words follow the paper's Table 8 convention: lowercase word tokens, minus the
scikit-learn English stopword list (318 words, bundled in its wheel), minus words
shorter than 4 characters.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

STOPWORD_LIST_NAME = "scikit-learn ENGLISH_STOP_WORDS (318 words)"
MIN_WORD_LENGTH = 4
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_TIMESTAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\]\s*")


def strip_timestamp(text: str) -> str:
    """Remove a leading ``[YYYY-MM-DDTHH:MM] `` prefix."""
    return _TIMESTAMP.sub("", text, count=1)


def timestamp_of(text: str) -> str | None:
    """The ``YYYY-MM-DDTHH:MM`` stamp a user turn starts with (``[...]``), or None."""
    found = _TIMESTAMP.match(text)
    return found.group(1) if found else None


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """scikit-learn's English stopwords. Read from the one module of its wheel that holds them, without
    importing ``sklearn`` (two seconds and scipy, for a word list); the public import is the fallback."""
    spec = importlib.util.find_spec("sklearn")
    folders = spec.submodule_search_locations if spec is not None else None
    path = Path(folders[0]) / "feature_extraction" / "_stop_words.py" if folders else None
    module_spec = importlib.util.spec_from_file_location("_stop_words", path) if path and path.is_file() else None
    if module_spec is not None and module_spec.loader is not None:
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        if isinstance(getattr(module, "ENGLISH_STOP_WORDS", None), frozenset):
            return module.ENGLISH_STOP_WORDS
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def word_count(text: str | None) -> int:
    """Whitespace-separated words: the length measure of turns, replies and the typing model."""
    return len((text or "").split())


def words(text: str) -> list[str]:
    """Lowercase word tokens (letters/digits, with an optional apostrophe suffix)."""
    return _WORD.findall(text.lower())


@lru_cache(maxsize=65536)
def content_words(text: str) -> frozenset[str]:
    """The set of content words of ``text`` (stopwords and words under 4 chars removed).

    Possessive/contraction suffixes are dropped (``alice's`` -> ``alice``).
    """
    found, stop_words = set(), _stop_words()
    for token in words(strip_timestamp(text)):
        token = re.split(r"['’]", token, maxsplit=1)[0]
        if len(token) >= MIN_WORD_LENGTH and token not in stop_words:
            found.add(token)
    return frozenset(found)


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a whole word/phrase, case-insensitively."""
    phrase = phrase.strip()
    if not phrase:
        return False
    if text.isascii() and phrase.isascii() and phrase.lower() not in text.lower():
        return False  # the common case, without a regex (for ASCII, lower() is the regex's case folding)
    return _phrase_pattern(phrase).search(text) is not None


@lru_cache(maxsize=8192)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(phrase) + r"(?![A-Za-z0-9])", re.IGNORECASE)


# Time expressions (shortcut audit, story-pool lint), written independently of the distractor filter in
# stages/distractors: clock times, durations, parts of the day, weekdays, dates and relative days.
_NUMBER = r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|forty-five|half an?|a couple of|a few|several)"
TIME_PATTERNS: dict[str, re.Pattern[str]] = {
    # 14:30 always; 9.30 only after a time word ("at 9.30"), so decimals and prices ($14.40, 0.25) are not times
    "clock": re.compile(r"\b(?:[01]?\d|2[0-4]):[0-5]\d\b|\b(?:at|by|until|till|from|before|after|around)\s+"
                        r"(?:[01]?\d|2[0-3])\.[0-5]\d\b(?!\s*(?:pounds|gbp|£|%))|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)\b"
                        r"|\bo'clock\b|\bnoon\b|\bmidnight\b", re.I),
    "duration": re.compile(rf"\b{_NUMBER}[ -](?:minutes?|mins?|hours?|hrs?|seconds?|days?|weeks?|months?|years?)\b", re.I),
    "part_of_day": re.compile(r"\b(?:this|tomorrow|yesterday|in the|every|on \w+day)\s+(?:morning|afternoon|evening|night)\b|\btonight\b|\bovernight\b", re.I),
    "weekday": re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)s?\b", re.I),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b|\b(?:january|february|march|april|june|july|august|september|october|november|december)\s+\d{1,2}\b", re.I),
    "relative_day": re.compile(r"\b(?:today|tomorrow|yesterday|next week|last week)\b", re.I),
}


# Words without which no pattern above can match (plus digits followed by ':', '.', am/pm or a date):
# a cheap set test lets most texts skip the regexes.
_TIME_WORDS = frozenset("""minute minutes min mins hour hours hr hrs second seconds day days week weeks month months
year years morning afternoon evening night tonight overnight monday tuesday wednesday thursday friday saturday
sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays weekend weekends today tomorrow yesterday
noon midnight o'clock am pm a.m p.m january february march april may june july august september october november
december jan feb mar apr jun jul aug sep sept oct nov dec""".split())
_TIME_TOKEN = re.compile(r"[a-z][a-z'.]*")
_DIGIT_TIME = re.compile(r"\d\s*[:.apAP]|\d{4}-\d{2}|\d(?:st|nd|rd|th)\b")


def time_expressions(text: str) -> list[str]:
    """Names of the time-expression patterns found in ``text`` (empty when none)."""
    lower = text.lower()
    if not (set(w.rstrip(".'") for w in _TIME_TOKEN.findall(lower)) & _TIME_WORDS or _DIGIT_TIME.search(lower)):
        return []
    return [name for name, pattern in TIME_PATTERNS.items() if pattern.search(text)]


# Punctuation and digits as the shortcut audit counts them (a turn written with numbers, quotes and
# clauses stands out among plain ones): shared by the audit, the story-shape matcher and the lint.
SHAPE_PUNCTUATION = re.compile(r"[!,;:\"'\d]")
