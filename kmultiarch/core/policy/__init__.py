"""The MultiArchPolicy: the model (``model``), its key table and reader (``schema``, ``podspecs``
for the operator kinds a policy declares), the reading helpers every configuration document uses
(``reading``), which namespaces and pods a run touches (``scope``) and the node-label tables
written in the policy's own format (``nodelabels``). Pure. It may import ``operators`` (a policy
names operator kinds), ``verification``, ``images`` and the shared modules.
"""
