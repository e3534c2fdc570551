"""The server's small parts (issue 37): the API server's ?timeout= (a Go duration, client-go
rest/request.go URL()) turned into the review's deadline."""

from __future__ import annotations

import pytest

pytest.importorskip("uvicorn")

from kmultiarch.admission.server import DEFAULT_TIMEOUT, go_duration, review_deadline


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10), ("1m0s", 60), ("2500ms", 2.5), ("1.5s", 1.5), ("1h", 3600), ("30s", 30)],
)
def test_go_durations_are_read(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten seconds", "10x", "s"])
def test_what_is_not_a_go_duration_is_refused(text: str) -> None:
    assert go_duration(text) is None


def test_the_deadline_keeps_a_margin_to_answer_in() -> None:
    assert review_deadline(b"timeout=10s", 100.0) == pytest.approx(109.75)
    # A short timeout keeps a quarter of itself.
    assert review_deadline(b"timeout=1s", 100.0) == pytest.approx(100.75)
    assert review_deadline(b"", 0.0) == pytest.approx(DEFAULT_TIMEOUT - 0.25)
    assert review_deadline(b"dryRun=true&timeout=bogus", 0.0) == pytest.approx(9.75)
