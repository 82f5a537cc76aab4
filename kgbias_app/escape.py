"""Text from data and URLs shown as text: the one Markdown escape of the app.

Streamlit renders every string it is given as Markdown (CommonMark, plus colour directives
``:red[x]``, emoji shortcodes and KaTeX ``$x$``). An entity name, a run's recorded edit or a URL
parameter value such as ``![p](http://host/x.png)`` would otherwise insert an image that makes the
viewer's browser fetch any URL, or bold, colour and formulas. :func:`md` backslash-escapes every
ASCII punctuation character that any of these syntaxes uses (CommonMark lets any of them be
escaped and shows the character itself); :func:`md_format` fills a Markdown template with
escaped values. Tables (``st.dataframe``) show plain text and need no escaping.
"""

from __future__ import annotations

import re
from typing import Any

#: The ASCII punctuation of any inline syntax: links and images, emphasis, code, tables, HTML and
#: entities, KaTeX ($), Streamlit's directives and shortcodes (:, also in ``http://`` autolinks),
#: strikethrough (~), autolinked ``www.`` hosts (.). A hyphen or plus sign matters only at a line's
#: start (a list item), where :func:`md` escapes it; elsewhere it stays readable (``tiny-transe``).
_SPECIAL = re.compile(r"""([!#$&()*.<>:=\[\\\]^_`{|}~])""")
_LINE_START = re.compile(r"^(\s*)([-+])")  # "1." and "1)" are safe already: "." and ")" are escaped


def md(text: object) -> str:
    """``text`` as literal Markdown: its syntax characters backslash-escaped (CommonMark shows an escaped
    punctuation character as itself), line breaks as spaces (a line break could start a heading)."""
    escaped = _SPECIAL.sub(r"\\\1", " ".join(str(text).splitlines()))
    return _LINE_START.sub(r"\1\\\2", escaped)


def md_format(template: str, **fields: Any) -> str:
    """``template.format(**fields)`` with every string field escaped (:func:`md`); numbers as given,
    so format specs like ``{x:.3f}`` still apply."""
    return template.format(**{k: md(v) if isinstance(v, str) else v for k, v in fields.items()})
