"""What a page says instead of a traceback: the error and info boxes that stop it, the guard
that turns a core call's AdvisorError into one, and names from data made safe for markdown."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

import streamlit as st

from advisor.errors import AdvisorError

T = TypeVar("T")


def stop_error(message: str) -> NoReturn:
    st.error(message)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def stop_info(message: str) -> NoReturn:
    st.info(message)
    st.stop()
    raise AssertionError("unreachable")


def guarded(fn: Callable[[], T]) -> T:
    """Run a core call; an AdvisorError becomes an error box on the page, never a traceback."""
    try:
        return fn()
    except AdvisorError as exc:
        stop_error(str(exc))


def missing_feature(what: str, module: str) -> NoReturn:
    """Stop the page: a core module this page needs is not part of this build yet."""
    stop_info(f"{what} is not available: this build has no `{module}` module yet.")


# A name markdown leaves alone: words of letters and digits joined by one space, ".", "_", "+"
# or "-" ("H100", "h100_80gb", "RTX Pro 6000"); not "www." (GitHub markdown links it).
_MD_PLAIN = re.compile(r"(?!www\.)[A-Za-z0-9]+(?:[ ._+-][A-Za-z0-9]+)*", re.IGNORECASE)


def md_name(text: str) -> str:
    """``text`` from data (a GPU type, a name) for a markdown string (st.warning, a metric
    label, a caption): shown as written, on one line, never a link (GitHub markdown turns even a
    backslash-escaped URL into one), an image, emphasis or an icon. A plain name stays as is;
    any other becomes a code span whose fence is one backtick longer than any run of backticks
    in it (CommonMark), padded when it starts or ends with one."""
    flat = " ".join(text.split()) or " "
    if _MD_PLAIN.fullmatch(flat):
        return flat
    fence = "`" * (max((len(r) for r in re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat[0] == "`" or flat[-1] == "`" else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
