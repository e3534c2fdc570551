"""Where the pods of a resource live: the model of an operator's kind and its placement (``model``,
``shapes``: how its own scheduling fields read and write), the catalogue of known operators
(``catalogue/``, one module each, indexed by ``catalogued``), the built-in kinds and the pod
specs found in a resource (``workloads``), guessing at unknown kinds (``unknownkinds``), and
what an operator computes before it runs a pod: Tekton parameters, image catalogs, ClickHouse
hosts, pull secrets. Pure. It may import ``images``, ``verification`` and the shared modules at
the core's top level.
"""
