"""Rendering helpers for the Streamlit pages: they take plain data and draw it."""
