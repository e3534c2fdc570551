"""Views over the engine's result: check verdicts, the image inventory."""
