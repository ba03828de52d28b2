"""The one display rule for tables: a blank cell is "nothing there" (never ``None`` or ``nan``), yes/no items read
yes / no, numbers keep their own type (so columns sort) and a column mixing text and numbers (a judge's "NA"
beside its scores) is shown as text, which Arrow serialises without error."""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from engine.core import column_format


def _blank(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def clean(rows: Sequence[dict] | pd.DataFrame) -> pd.DataFrame:
    """A frame ready for ``st.dataframe`` and for CSV: missing cells blank, booleans yes/no, mixed columns as
    text (numbers written with up to 3 decimals, integers without)."""
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    for col in df.columns:
        values = [v for v in df[col].tolist() if not _blank(v)]
        if values and all(isinstance(v, bool) for v in values):
            df[col] = df[col].map(lambda v: "" if _blank(v) else "yes" if v else "no")
        elif values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            if len(values) < len(df):
                df[col] = pd.to_numeric(df[col], errors="coerce")  # numeric with gaps: NaN shown blank (na_rep)
        else:
            df[col] = df[col].map(_text)
    return df


def _text(v) -> str:
    if _blank(v):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return column_format([v]).format(v)
    return str(v)


def show(rows: Sequence[dict] | pd.DataFrame, wrap: bool = False, **kwargs) -> None:
    """Draw a table by the display rule (:func:`clean`, :func:`styled`): every table of the app goes through here.
    ``wrap``: a static table whose long cells wrap (messages a reader must read whole, e.g. an import's fixes);
    otherwise an interactive one, and ``kwargs`` reach ``st.dataframe`` (``column_config``, ``key``, ``height``,
    ``on_select``, …)."""
    import streamlit as st

    if wrap:
        st.table(styled(clean(rows)).hide(axis="index"))
        return
    st.dataframe(styled(clean(rows)), **{"hide_index": True, "width": "stretch", **kwargs})


def styled(df: pd.DataFrame):
    """``df`` (from :func:`clean`) with blank missing numbers and numbers to 3 decimals (integers without)."""
    formats = {}
    for col in df.columns:
        if pd.api.types.is_numeric_dtype(df[col].dtype) and not pd.api.types.is_bool_dtype(df[col].dtype):
            formats[col] = column_format(df[col].dropna().tolist())
    return df.style.format(formats, na_rep="")
