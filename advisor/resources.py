"""Where the files shipped with advisor are: calibration points, prices, samples, the dashboard.

In a source checkout (an editable install, or the checkout on ``PYTHONPATH``) they are the
folders beside the package, ``data/`` and ``app/``. A built wheel carries the same folders inside
the package, as ``advisor/_shipped`` and ``advisor/_dashboard/app`` (the mapping is in
``pyproject.toml``, ``[tool.setuptools.package-dir]``), found here through importlib.resources.
The checkout wins when both exist, so a developer always sees the files being edited, never an
installed copy.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from advisor.errors import NotFoundError

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE_DIR.parent


def _in_checkout() -> bool:
    # A wheel installs beside other distributions in site-packages, never beside this file.
    return (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "data").is_dir()


def _installed(*parts: str) -> Path:
    root = resources.files("advisor")
    if not isinstance(root, Path):  # a zip import has no file-system path to hand to readers
        raise NotFoundError(
            "advisor is imported from a zip archive; install it as a folder (pip install advisor)"
        )
    return root.joinpath(*parts)


def shipped_data(*parts: str) -> Path:
    """``data/<parts>`` of the checkout, or the same file or folder inside the installed wheel.

    The path may not exist (callers name it in their own messages); nothing is created.
    """
    if _in_checkout():
        return _CHECKOUT.joinpath("data", *parts)
    return _installed("_shipped", *parts)


def dashboard_dir() -> Path:
    """The Streamlit app's folder (``app/``: ``streamlit_app.py`` and ``app_pages/``)."""
    if _in_checkout() and (_CHECKOUT / "app" / "streamlit_app.py").is_file():
        return _CHECKOUT / "app"
    return _installed("_dashboard", "app")
