"""The view in the URL: every page's widgets as query parameters, so that a link reproduces the view.

Streamlit's own ``bind="query-params"`` updates the URL with ``history.replaceState``, so the
browser's Back button would leave the page instead of returning to the previous view, and it drops
an unknown value without a word. So kgbias keeps the URL itself:

- a linked widget (:func:`selectbox`, :func:`multiselect`, :func:`number`, :func:`toggle`,
  :func:`radio`, :func:`tabs`) takes its value from the URL when the URL changed behind the page's back (a link
  opened, Back or Forward pressed), else from the session; an unknown value gets a warning naming
  it, and the widget its default;
- :func:`publish`, once at the end of each run (``dashboard.py``), writes every linked widget's value
  with one ``st.query_params.from_dict``: Streamlit sends the new query string and the browser
  pushes it as a history entry, so Back restores the view before;
- the sidebar's "Link to this view" shows that URL, with Streamlit's copy button.

Values are written as ``str(option)`` (an occupation's label, a model's name); a link may also give
an option's displayed title.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

import streamlit as st

from kgbias_app import texts
from kgbias_app.escape import md
from kgbias_app.reruns import fragment_run

#: Session keys: the query parameters this session wrote last, the ones of the URL still to apply in
#: this run, and the values the linked widgets of this run hold.
WRITTEN, PENDING, HELD = "_links:written", "_links:pending", "_links:held"
#: Query parameters Streamlit reserves (embedding); never touched.
RESERVED = frozenset({"embed", "embed_options"})


def _url() -> dict[str, list[str]]:
    return {k: st.query_params.get_all(k) for k in st.query_params if k.lower() not in RESERVED}


def start() -> None:
    """Before the page's first widget: take the URL's values where it changed behind the page's back.

    The URL equals what this session wrote last unless the person opened a link, pressed Back or
    Forward, or switched pages (then it holds no parameters, and the session's values stay).
    """
    url = _url()
    written = st.session_state.get(WRITTEN)
    st.session_state[PENDING] = url if url != written else {}
    st.session_state[HELD] = {}


def _linked(key: str, *, what: str, decode: Callable[[list[str]], Any], encode: Callable[[Any], list[str]],
            make: Callable[[bool], Any]) -> Any:
    """The widget ``make(seeded)`` under ``key``, seeded from a pending URL value that ``decode`` accepts.

    ``decode`` returns the widget value of the URL's strings, or raises ``ValueError``; ``make``
    draws the widget (``seeded``: its value was just put in the session, so it takes no default).
    """
    pending = st.session_state.get(PENDING, {})
    seeded = False
    if key in pending:
        raw = pending.pop(key)
        try:
            st.session_state[key] = decode(raw)
            seeded = True
        except ValueError:
            st.warning(texts.LINK_UNKNOWN.format(what=what, value=md(", ".join(raw))))
    value = make(seeded)
    st.session_state.setdefault(HELD, {})[key] = encode(value)
    return value


def _choice(options: Sequence[Any], format_func: Callable[[Any], str]) -> Callable[[str], Any]:
    """The option a URL value names: its ``str`` (a label), its displayed title, "title (label)", or the
    title's name part in any case ("actor" for "Actor (/m/02hrh1q)") where exactly one option has it."""
    by_text = {format_func(o): o for o in options} | {str(o): o for o in options}
    by_text |= {f"{format_func(o)} ({o})": o for o in options}
    plain: dict[str, list[Any]] = {}
    for o in options:
        plain.setdefault(re.sub(r" \([^()]*\)$", "", format_func(o)).strip().casefold(), []).append(o)

    def one(text: str) -> Any:
        if text in by_text:
            return by_text[text]
        named = plain.get(text.strip().casefold(), [])
        if len(named) == 1:  # a name shared by two options stays refused: never one of them at random
            return named[0]
        raise ValueError(text)
    return one


def _without(kwargs: dict[str, Any], seeded: bool, *names: str) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if not (seeded and k in names)}


def selectbox(label: str, options: Sequence[Any], *, key: str, what: str, format_func: Callable[[Any], str] = str,
              container: Any = st, **kwargs: Any) -> Any:
    """``st.selectbox`` kept in the URL under ``key``; ``what`` names the value in a warning ("occupation")."""
    one = _choice(options, format_func)
    return _linked(key, what=what, decode=lambda raw: one(raw[-1]),
                   encode=lambda v: [] if v is None else [str(v)],
                   make=lambda seeded: container.selectbox(label, options, key=key, format_func=format_func,
                                                           **_without(kwargs, seeded, "index")))


def radio(label: str, options: Sequence[Any], *, key: str, what: str, format_func: Callable[[Any], str] = str,
          container: Any = st, **kwargs: Any) -> Any:
    """``st.radio`` kept in the URL under ``key``."""
    one = _choice(options, format_func)
    return _linked(key, what=what, decode=lambda raw: one(raw[-1]), encode=lambda v: [str(v)],
                   make=lambda seeded: container.radio(label, options, key=key, format_func=format_func,
                                                       **_without(kwargs, seeded, "index")))


def multiselect(label: str, options: Sequence[Any], *, key: str, what: str, format_func: Callable[[Any], str] = str,
                container: Any = st, **kwargs: Any) -> list[Any]:
    """``st.multiselect`` kept in the URL under ``key`` (one parameter per value; none chosen: empty)."""
    one = _choice(options, format_func)
    most = kwargs.get("max_selections")

    def decode(raw: list[str]) -> list[Any]:
        chosen = [one(v) for v in raw if v != ""]
        if most is not None and len(chosen) > most:
            raise ValueError(f"{len(chosen)} values, at most {most}")
        return chosen
    return _linked(key, what=what, decode=decode,
                   encode=lambda v: [str(x) for x in v] or [""],
                   make=lambda seeded: container.multiselect(label, options, key=key, format_func=format_func,
                                                             **_without(kwargs, seeded, "default")))


def number(widget: Callable[..., Any], label: str, low: float, high: float, default: float, *, key: str, what: str,
           kind: type = int, **kwargs: Any) -> Any:
    """``st.slider`` or ``st.number_input`` (``widget``) of a number in [low, high], kept in the URL under ``key``."""
    def decode(raw: list[str]) -> Any:
        value = kind(raw[-1])  # ValueError for text that is no number
        if not low <= value <= high:
            raise ValueError(raw[-1])
        return value
    return _linked(key, what=what, decode=decode, encode=lambda v: [str(v)],
                   make=lambda seeded: widget(label, low, high, key=key,
                                              **_without({"value": default, **kwargs}, seeded, "value")))


def text_input(label: str, *, key: str, what: str, **kwargs: Any) -> str:
    """``st.text_input`` kept in the URL under ``key`` (any text is valid: the page says what it finds)."""
    return _linked(key, what=what, decode=lambda raw: raw[-1], encode=lambda v: [v] if v else [],
                   make=lambda seeded: st.text_input(label, key=key, **_without(kwargs, seeded, "value")))


def toggle(label: str, *, key: str, what: str, **kwargs: Any) -> bool:
    """``st.toggle`` kept in the URL under ``key`` (``true``/``false``)."""
    words = {"true": True, "false": False, "1": True, "0": False}

    def decode(raw: list[str]) -> bool:
        if raw[-1].lower() not in words:
            raise ValueError(raw[-1])
        return words[raw[-1].lower()]
    return _linked(key, what=what, decode=decode, encode=lambda v: [str(bool(v)).lower()],
                   make=lambda seeded: st.toggle(label, key=key, **kwargs))


def tabs(labels: Sequence[str], *, key: str, what: str = "tab") -> list[Any]:
    """``st.tabs`` that track the open tab (``tab.open``: draw only that one), kept in the URL under ``key``."""
    one = _choice(labels, str)
    return _linked(key, what=what, decode=lambda raw: one(raw[-1]),
                   encode=lambda made: [next((t for t, tab in zip(labels, made, strict=True) if tab.open), labels[0])],
                   make=lambda seeded: list(st.tabs(labels, key=key, on_change="rerun")))


def publish(url_path: str) -> None:
    """At the end of a full run: write the linked widgets' values to the URL (one history entry when
    they changed) and show the link to page ``url_path`` in the sidebar."""
    wanted = dict(st.session_state.get(HELD, {}))
    _write(wanted)
    with st.sidebar.expander(texts.LINK_HEADING):
        st.code(link(url_path, wanted), language=None, wrap_lines=True)
        st.caption(texts.LINK_HELP)


def publish_fragment() -> None:
    """At the end of a fragment (``@st.fragment``) that holds linked widgets: when the fragment reran
    alone, write its widgets' values (the page's others are in the URL already); else nothing."""
    if fragment_run():
        _write(_url() | st.session_state.get(HELD, {}))


def _write(wanted: dict[str, list[str]]) -> None:
    if wanted != _url():
        st.query_params.from_dict(wanted)
    st.session_state[WRITTEN] = wanted


def link(url_path: str, params: dict[str, list[str]]) -> str:
    """The URL of page ``url_path`` with ``params``, on the host the browser reached the app by."""
    parts = urlsplit(st.context.url or "")
    root = "/".join(p for p in (str(st.get_option("server.baseUrlPath")).strip("/"), url_path) if p)
    query = urlencode(params, doseq=True)
    return (f"{parts.scheme}://{parts.netloc}" if parts.netloc else "") + f"/{root}" + (f"?{query}" if query else "")
