"""How many threads in-process llama.cpp computes with, chosen from the decoding speeds it measures.

llama.cpp's threads meet at a barrier after every operation of the model's graph. When another process takes one
of the cores they run on, the thread that lost its core holds every other one at each barrier, and more threads
become slower than fewer: on 2 cores with one core kept busy by another process, the 1.5B judge decoded 3.3
tokens/s with 2 threads and 5.9 with 1 (10.6 with 2 on idle cores; bench/judge_realdev.py's set, see
docs/benchmarks.md). A laptop shares its cores with the browser and whatever else runs, so the count is not fixed
at load time.

:class:`ThreadGovernor` times the decoding steps in windows of :attr:`ThreadGovernor.WINDOW` tokens:

* with more than one thread, a window slower than one fewer thread has ever decoded switches to one fewer (the
  speed with one fewer is learnt once, from one window, the first time it is needed);
* below the configured count, every :attr:`ThreadGovernor.PROBE_EVERY` windows one window tries one more thread,
  and that count is kept when the window is faster than the last one with the present count.

The count never changes a number the model computes: ggml gives each thread whole rows of a product, so the same
tokens get the same logits with any count (the judge's expected scores on a real set were identical with 1 and 2
threads, idle or loaded).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ThreadGovernor:
    """The thread count for the next decoding step (see the module docstring)."""

    most: int
    now: int = 0
    best: dict[int, float] = field(default_factory=dict)  # the fastest window seen per thread count (tokens/s)
    recent: dict[int, float] = field(default_factory=dict)  # the latest window per thread count (tokens/s)
    switches: int = 0

    WINDOW = 8  # decoding steps timed together
    PROBE_EVERY = 24  # windows below the configured count between two tries of one more thread

    def __post_init__(self) -> None:
        self.most = max(1, int(self.most))
        self.now = self.now or self.most
        self._tokens, self._seconds = 0, 0.0
        self._trial_from = 0  # during a trial window: the count to return to if it is not faster
        self._since_probe = 0

    def step(self, seconds: float) -> int:
        """Record one decoding step's seconds; returns the thread count for the next step."""
        self._tokens += 1
        self._seconds += max(0.0, seconds)
        if self._tokens < self.WINDOW:
            return self.now
        rate = self._tokens / self._seconds if self._seconds > 0 else float("inf")
        self._tokens, self._seconds = 0, 0.0
        n = self.now
        self.recent[n] = rate
        self.best[n] = max(self.best.get(n, 0.0), rate)
        if self._trial_from:
            back, self._trial_from = self._trial_from, 0
            if rate <= self.recent.get(back, 0.0):
                self._set(back)
            return self.now
        if n > 1:
            fewer = self.best.get(n - 1)
            if fewer is None:
                self._trial_from = n  # learn the speed with one fewer thread: one window
                self._set(n - 1)
            elif rate < fewer:
                self._set(n - 1)
        if self.now < self.most and not self._trial_from:
            self._since_probe += 1
            if self._since_probe >= self.PROBE_EVERY:
                self._trial_from = self.now
                self._set(self.now + 1)
        return self.now

    def _set(self, n: int) -> None:
        if n != self.now:
            self.now = n
            self.switches += 1
        self._since_probe = 0
