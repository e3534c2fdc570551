"""``kmultiarch admission``: the engine served as a mutating admission webhook (issue 37).

An adapter, as ``cli`` and ``krm`` are: :mod:`~kmultiarch.admission.review` reads an
AdmissionReview and writes the answer (a plain function), the decision comes from
:mod:`kmultiarch.run.admission` (the engine ``mutate`` runs), and the server around it is thin.
Its dependencies (the ``admission`` extra) are imported only by the command that serves.
"""
