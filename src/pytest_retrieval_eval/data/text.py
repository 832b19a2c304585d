"""One text normalisation and one word tokenisation, for every place that matches the labels'
text against other text: a quote against its document or a passage (``data/evidence.py``), a
question against another (``data/question_filters.py``, ``data/set_checks.py``, the ids and keys
of ``data/labels.py``). Engines tokenise on their own (the keyword engine: ``data/terms.py``);
that is an engine's behaviour, not this.

``normalise``: invisible format characters dropped (a soft hyphen or a zero-width space left by a
text extractor), NFKC (one spelling for composed and decomposed accents, ligatures, full-width
forms), case folded (``str.casefold``: "STRASSE" and "straße" are one word), every run of
whitespace one space. This is Unicode's NFKC_Casefold, as search engines fold text.

``words``: the word tokens of the normalised text. A word is a run of letters and digits with the
combining marks that belong to them (an Indic vowel sign is part of its word); punctuation and the
underscore separate words, except between digits: "1.5" and "1,000" are one word, so "5 euros"
is no word run of "1.5 euros". Scripts written without spaces between words (Han, Hiragana,
Katakana, Thai, Lao, Khmer, Myanmar) have no word boundary a tokeniser can find without a
dictionary: each of their characters is a word of its own, so a quote of part of a sentence in
them still stands on word boundaries.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

#: scripts without spaces between words: each character is a word
_UNSPACED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303c"
             "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f")


#: a number keeps its decimal and thousands separators: 1.5, 1,000
_NUMBER = r"(?:(?<=\d)[.,](?=\d){run})*"
#: ``words`` of ASCII text, the same tokens as the full pattern gives it (no marks, no unspaced script), faster
_ASCII_WORD = re.compile("[a-z0-9]+" + _NUMBER.format(run="[a-z0-9]+"))


def _ranges(codes: list[int]) -> str:
    out: list[list[int]] = []
    for c in codes:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in out)


@lru_cache(maxsize=None)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(ignorable characters, a word): built once, on first use (a pass over the code points)."""
    planes = [*range(0x30000), *range(0xE0000, 0xE1000)]
    marks = _ranges([c for c in planes if unicodedata.category(chr(c))[0] == "M"])
    ignorable = _ranges(sorted({c for c in planes if unicodedata.category(chr(c)) == "Cf"}
                               | {0x034F, *range(0x180B, 0x180E), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}))
    run = rf"(?:[^\W_{_UNSPACED}]+|[{marks}]+)+"  # letters, digits and their marks
    word = (rf"{run}{_NUMBER.format(run=run)}"
            rf"|(?=[^\W_])[{_UNSPACED}][{marks}]*")  # one character of a script without spaces, its marks
    return re.compile(f"[{ignorable}]+"), re.compile(word)


def normalise(text: str) -> str:
    """``text`` as the labels' text is compared: NFKC, case folded, whitespace runs one space."""
    if text.isascii():  # NFKC and case folding of ASCII are lower()
        return " ".join(text.lower().split())
    text = _patterns()[0].sub("", text)
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def words(text: str) -> list[str]:
    """The word tokens of ``normalise(text)``, in order."""
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    return _patterns()[1].findall(normalise(text))
