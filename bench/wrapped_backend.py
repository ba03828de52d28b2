"""A bench backend that wraps the product's backend: what it does not change (name, context size, description,
tokenizer, chat rendering) is the wrapped backend's. Light on purpose: it imports nothing, so a bench that runs on a
bare machine (``medomit_replay.py`` on a lent GPU) can use it as well as one that needs the whole environment."""
from __future__ import annotations


class WrappedBackend:
    """Passes the backend's reading methods through to ``self.b``; subclasses override the calls they change."""

    def __init__(self, backend):
        self.b = backend
        self.name = backend.name

    n_ctx = property(lambda self: self.b.n_ctx)

    def describe(self):
        return self.b.describe()

    def count_tokens(self, text):
        return self.b.count_tokens(text)

    def render(self, messages):
        return self.b.render(messages)
