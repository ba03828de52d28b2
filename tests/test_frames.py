"""The one display rule for tables: blank for missing (never None or nan), yes/no, mixed columns as text (no Arrow
error), numeric columns kept numeric."""
import math

import pandas as pd
import pyarrow as pa

from components.frames import clean, styled


def test_missing_cells_are_blank_and_mixed_columns_are_text():
    rows = [{"row": None, "file": "a.csv", "Synthesized": "NA", "ok": True, "score": 4.25},
            {"row": 3, "file": "b.csv", "Synthesized": 4.0, "ok": False, "score": None},
            {"row": 12, "file": None, "Synthesized": float("nan"), "ok": None, "score": 3.0}]
    df = clean(rows)
    assert list(df["file"]) == ["a.csv", "b.csv", ""]
    assert list(df["Synthesized"]) == ["NA", "4", ""]  # text beside numbers: all text, written plainly
    assert list(df["ok"]) == ["yes", "no", ""]
    assert pd.api.types.is_numeric_dtype(df["score"]) and math.isnan(df["score"].iloc[1])  # sorts as numbers
    assert pd.api.types.is_numeric_dtype(df["row"])
    pa.Table.from_pandas(df)  # what st.dataframe serialises: no mixed-type column left
    html = styled(df).to_html()
    assert "None" not in html and "nan" not in html.lower()


def test_import_issue_rows_without_a_row_number_show_blank():
    df = clean([{"severity": "error", "file": "x.csv", "row": None, "line": None, "field": "", "message": "m"}])
    assert "None" not in styled(df).to_html()
