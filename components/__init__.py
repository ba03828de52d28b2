"""Rendering helpers for the Streamlit pages: they take plain data and draw it.

``state`` is the one module that holds Streamlit's caches around the engine's constructors (the workspace store,
the judge backend, the embedder, each engine view's result): it opens and loads things once per process and hands
them on, and computes nothing itself. ``html`` renders every HTML fragment the components show: each is a macro of
``templates/fragments.html.j2``, rendered with autoescape."""
