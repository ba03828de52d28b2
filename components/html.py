"""The components' HTML: every fragment (badges, marks, legends, note blocks, the review form's style and script) is
a macro of ``templates/fragments.html.j2``, rendered here with autoescape on. Each value a macro writes is escaped
by :func:`engine.core.untrusted.html` unless it is a ``markupsafe.Markup``: markup that the calling code built
itself (escaped text and other fragments, or a script's JSON literal) and wraps explicitly."""
from __future__ import annotations

import functools
from pathlib import Path

from engine.core import untrusted

TEMPLATES = Path(__file__).with_name("templates")
FRAGMENTS = "fragments.html.j2"


@functools.lru_cache(maxsize=1)
def _macros():
    """The fragments template's macros (loaded once per process)."""
    return untrusted.markup_environment(TEMPLATES).get_template(FRAGMENTS).module


def fragment(name: str, **values) -> str:
    """The HTML of the macro ``name`` for ``values`` (keyword arguments of the macro), as a plain string."""
    return str(getattr(_macros(), name)(**values))
