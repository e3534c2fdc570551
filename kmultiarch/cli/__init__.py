"""The command line: the only place that imports click."""
