"""Reading a user's text files: UTF-8 decoded with the line of a bad byte, ids of a bounded length.

Every file a user hands kgbias (triples, names, schema, census, removal indices) is read through
:func:`read_text`, so that a byte that is not UTF-8 is reported as "file, line N", not as a byte
position inside a traceback.
"""

from __future__ import annotations

from pathlib import Path

from kgbias_core.errors import ID_TOO_LONG, MISSING_FILE, NOT_UTF8, DataError

#: Longest entity or relation id accepted. Freebase MIDs and Wikidata ids are under 100
#: characters, the longest FB15k-237 relation path under 200; a longer "id" is a broken file
#: (a missing tab or newline glued many lines together).
MAX_ID_LENGTH = 1000


def read_text(path: Path | str) -> str:
    """The file's text decoded as UTF-8 (a leading byte-order mark dropped).

    Raises :class:`DataError` naming the file when it is missing, and the file and line when
    it holds a byte sequence that is not UTF-8.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(MISSING_FILE.format(path=path))
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.end].hex(" ")
        raise DataError(NOT_UTF8.format(path=path, line=line, bad=bad)) from None
    return text.removeprefix("\ufeff")


def text_lines(path: Path | str) -> list[tuple[int, str]]:
    """(line number from 1, line without its line break) of every line of a UTF-8 file.

    Lines end at "\\n" only (a "\\r" before it is dropped), so that numbers match an editor's even
    when a field holds a form feed or another character that ``str.splitlines`` breaks at.
    """
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [(number, line.removesuffix("\r")) for number, line in enumerate(lines, start=1)]


def check_id(text: str, *, path: Path | str, line: int, column: int) -> str:
    """``text`` if it is at most :data:`MAX_ID_LENGTH` characters, else :class:`DataError` naming file and line."""
    if len(text) > MAX_ID_LENGTH:
        raise DataError(ID_TOO_LONG.format(path=path, line=line, column=column, length=len(text), limit=MAX_ID_LENGTH))
    return text
