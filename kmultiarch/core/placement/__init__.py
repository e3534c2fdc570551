"""The placement decision: which platforms a pod's images allow and the tolerations and node
affinity that keep it there (``scheduling``; ``selectors``: what a pod's node selector and
affinity terms already allow), the preferred platforms (``preferences``), the platforms
annotation (``annotate``) and the cluster's nodes and node pools (``cluster``). Pure. It may
import ``policy``, ``operators``, ``verification``, ``images`` and the shared modules, never
``triage``.
"""
