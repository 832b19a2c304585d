"""One text normalisation and one word tokenisation, for every place that matches the labels'
text against other text: a quote against its document or a passage (``data/evidence.py``), a
question against another (``data/question_filters.py``, ``data/set_checks.py``, the ids and keys
of ``data/label_files.py``). Engines tokenise on their own (the keyword engine: ``data/terms.py``);
that is an engine's behaviour, not this.

``normalise``: invisible format characters dropped (a soft hyphen or a zero-width space left by a
text extractor), NFKC (one spelling for composed and decomposed accents, ligatures, full-width
forms), case folded (``str.casefold``: "STRASSE" and "straße" are one word), every run of
whitespace one space: close to Unicode's NFKC_Casefold, as search engines fold text.

``words``: the word tokens of the normalised text. A word is a run of letters and digits with the
combining marks that belong to them (an Indic vowel sign is part of its word); punctuation and the
underscore separate words, except between digits: "1.5" and "1,000" are one word, so "5 euros"
is no word run of "1.5 euros". A sign ('-', '+', the minus sign '−', read as '-') directly before
a digit at a word's start is part of its number: "-5" and "+5" are words of their own, not "5", so
"temp 5" is no word run of "temp -5"; between words or numbers a hyphen separates them
("2020-2021", "COVID-19", "1e-5" are two words each). Scripts written without spaces between words (Han, Hiragana,
Katakana, Thai, Lao, Khmer, Myanmar) have no word boundary a tokeniser can find without a
dictionary: each of their characters is a word of its own, so a quote of part of a sentence in
them still stands on word boundaries.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Iterable, Sequence

#: scripts without spaces between words (Thai, Lao, Myanmar, Khmer, CJK radicals and marks,
#: Hiragana, Katakana, Han): each character is a word
_UNSPACED = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x2E80, 0x2FDF), (0x3005, 0x3007),
             (0x3021, 0x3029), (0x3038, 0x303C), (0x3040, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
             (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))
#: invisible characters dropped besides the format characters (Cf): the combining grapheme joiner
#: and the variation selectors, as Unicode's NFKC_Casefold drops them
_IGNORABLE = frozenset({0x034F, *range(0x180B, 0x180E), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)})
#: a number keeps its decimal and thousands separators: 1.5, 1,000
_NUMBER = r"(?:(?<=\d)[.,](?=\d){run})*"


def _signed(run: str, letter: str, mark: str = "") -> str:
    """A word of ``run``s (a number keeping its separators), or a number with its sign: '-' or '+'
    directly before a digit, at a word's start (after no ``letter`` or digit, nor a ``mark``: a
    hyphen between words or numbers is no sign). Two alternatives, not an optional sign: the
    scan for the next word stays as fast as without signs."""
    word = run + _NUMBER.format(run=run)
    after = f"(?<![{mark}][-+])" if mark else ""
    return rf"{word}|[-+](?<!{letter}[-+]){after}(?=\d){word}"


#: ``words`` of a text with no combining mark and no character of a script without spaces (ASCII,
#: most Latin, Greek and Cyrillic text): the full pattern's words, faster
_ASCII_WORD = re.compile(_signed("[a-z0-9]+", "[a-z0-9]"))
_PLAIN_WORD = re.compile(_signed(r"[^\W_]+", r"[^\W_]"))
_PLAIN, _DROPPED, _MARKED = 0, 1, 2
_MINUS = "\u2212"


def _class(ranges: Iterable[Sequence[int]]) -> str:
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges)


@lru_cache(maxsize=None)
def _word() -> re.Pattern[str]:
    """A word of any text: built once, on first use (a pass over the code points for the marks)."""
    marks: list[list[int]] = []
    for c in (*range(0x30000), *range(0xE0000, 0xE1000)):
        if unicodedata.category(chr(c))[0] == "M":
            if marks and marks[-1][1] == c - 1:
                marks[-1][1] = c
            else:
                marks.append([c, c])
    unspaced, mark = _class(_UNSPACED), _class(marks)
    run = rf"(?:[^\W_{unspaced}]+|[{mark}]+)+"  # letters, digits and their marks
    return re.compile(_signed(run, r"[^\W_]", mark)
                      + rf"|(?=[^\W_])[{unspaced}][{mark}]*")  # one character of a script without spaces, its marks


@lru_cache(maxsize=8192)
def _kind(c: str) -> int:
    """What a non-ASCII character asks of the tokeniser: nothing, to be dropped, or the full pattern."""
    category, code = unicodedata.category(c), ord(c)
    if category == "Cf" or code in _IGNORABLE:
        return _DROPPED
    if category[0] == "M" or any(a <= code <= b for a, b in _UNSPACED):
        return _MARKED
    return _PLAIN


def _folded(text: str) -> tuple[str, bool]:
    """(NFKC, case folded, invisible characters dropped, whether it holds a combining mark or a
    character of a script without spaces): ``normalise`` before the whitespace, read once."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    odd = [c for c in set(text) if not c.isascii()]
    dropped = {ord(c): None for c in odd if _kind(c) == _DROPPED}
    if dropped:
        text = unicodedata.normalize("NFKC", text.translate(dropped))
    return text, any(_kind(c) == _MARKED for c in odd)


def normalise(text: str) -> str:
    """``text`` as the labels' text is compared: NFKC, case folded, whitespace runs one space."""
    if text.isascii():  # NFKC and case folding of ASCII are lower()
        return " ".join(text.lower().split())
    return " ".join(_folded(text)[0].split())


def words(text: str) -> list[str]:
    """The word tokens of ``normalise(text)``, in order."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    text, marked = _folded(text)
    if _MINUS in text:  # the minus sign signs a number as the hyphen-minus does; elsewhere both separate words
        text = text.replace(_MINUS, "-")
    return (_word() if marked else _PLAIN_WORD).findall(text)
