"""Why pods of a running cluster fail on their architecture: the cluster state read from a dump
(``clusterstate``) and the causes found in it (``diagnosis``). Pure: the dump is read by
kmultiarch.assess. It may import every package below ``placement`` and the shared modules, never
``placement``.
"""
