"""Reading a user's text files: UTF-8 decoded with the line of a bad byte, ids of a bounded length.

Every file a user hands kgbias (triples, names, schema, census, removal indices) is read through
:func:`read_text`, so that a byte that is not UTF-8 is reported as "file, line N", not as a byte
position inside a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

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


#: Every character ``str.strip`` removes, as an RE2 class: a field starting or ending with one goes to
#: the line reader, which strips it (the columnar path never changes a field).
_EDGE_SPACE = r"[\s\x{0b}\x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
_EDGE_SPACE_RE = f"^{_EDGE_SPACE}|{_EDGE_SPACE}$"


def _plain_file(path: Path) -> bool:
    """True for a file without a carriage return or a byte-order mark, which pyarrow and the line
    reader split identically (pyarrow also breaks lines at a lone "\\r"). Read in blocks: one memchr pass."""
    with path.open("rb") as handle:
        if handle.read(3) == b"\xef\xbb\xbf":
            return False
        handle.seek(0)
        while block := handle.read(1 << 24):
            if b"\r" in block:
                return False
    return True


def read_columns(path: Path, *, columns: tuple[str, ...], id_columns: tuple[str, ...] = (), nonempty: bool,
                 stripped: bool, header: bool = False) -> pa.Table | None:
    """A tab-separated file as string columns, read by pyarrow; None where the line reader must decide.

    The fast path for large graphs: pyarrow reads 20M lines in seconds where the line reader takes
    minutes. It accepts a file only when the line reader would read it to the very same fields:
    no "\\r", no byte-order mark, every line with ``len(columns)`` fields, valid UTF-8, no field
    with white space at its ends (with ``stripped``: the line reader strips fields), ``id_columns`` at
    most MAX_ID_LENGTH characters, no empty field (with ``nonempty``), and at least one row; blank
    lines are skipped, and so is a first line with ``header``. Anything else returns None, and the caller's line
    reader then names the file and the line at fault (or reads what it tolerates, such as "\\r\\n").
    """
    if not path.is_file() or not _plain_file(path):
        return None
    try:
        table = pa_csv.read_csv(
            path,
            read_options=pa_csv.ReadOptions(column_names=list(columns), block_size=1 << 24, skip_rows=int(header)),
            parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False,
                                              double_quote=False, ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(columns, pa.string()),
                                                  strings_can_be_null=False, null_values=[]),
        )
    except (pa.ArrowInvalid, OSError):  # wrong number of fields, not UTF-8, ...
        return None
    if table.num_rows == 0:
        return None
    for column in columns:
        values = table[column]
        # Lengths in bytes (read off the offsets, no decoding): a field of more than MAX_ID_LENGTH bytes
        # may still be short enough in characters, and the line reader decides it.
        lengths = pc.binary_length(values)
        if nonempty and pc.any(pc.equal(lengths, 0)).as_py():
            return None
        if column in id_columns and pc.any(pc.greater(lengths, MAX_ID_LENGTH)).as_py():
            return None
        if stripped and pc.any(pc.match_substring_regex(values, _EDGE_SPACE_RE)).as_py():
            return None
    return table
