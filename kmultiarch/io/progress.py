"""A progress line on stderr while images are resolved: only on a terminal, only when there are
more than a handful of images, never with ``--quiet``. Redrawn in place with a carriage return
and erased when resolving is over, so it leaves nothing in logs or in the terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

#: Up to this many images, resolving is over before a progress line could be read.
HANDFUL = 5
#: Redraws are at most this often (seconds), but the first and the last always show.
REDRAW_INTERVAL = 0.1


class ProgressLine:
    """Callable as the resolver's progress callback ``(done, total)``."""

    def __init__(
        self,
        stream: TextIO,
        cache_hits: Callable[[], int],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.cache_hits = cache_hits
        self.clock = clock
        self.shown = False
        self._last = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        if total <= HANDFUL:
            return
        now = self.clock()
        if done < total and now - self._last < REDRAW_INTERVAL:
            return
        self._last = now
        hits = self.cache_hits()
        self.stream.write(
            f"\r\x1b[Kkmultiarch: resolving images {done}/{total} ({hits} from cache or lock)"
        )
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        """Erase the line (the summary that follows says what happened)."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def progress_line(
    quiet: bool, cache_hits: Callable[[], int], stream: TextIO | None = None
) -> ProgressLine | None:
    """A progress line for ``stream`` (stderr), or None when it must stay silent."""
    target = stream if stream is not None else sys.stderr
    if quiet or not _is_terminal(target):
        return None
    return ProgressLine(target, cache_hits)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
