"""The composition root: one place that assembles a run.

:mod:`~kmultiarch.run.config` turns what the user said (options, the API's arguments), a policy
and the defaults into one :class:`~kmultiarch.run.config.RunConfig`; :mod:`~kmultiarch.run.session`
builds the run's parts from it (cache, lock, credentials, resolver); :mod:`~kmultiarch.run.runs`
runs the engine with them. The CLI commands, :mod:`kmultiarch.api`, the KRM function and the
Helm post-renderer are adapters: options -> configuration -> run -> formatter.
"""
