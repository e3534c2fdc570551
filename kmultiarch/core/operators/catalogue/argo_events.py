"""Argo Events (argoproj/argo-events): a Sensor's and an EventSource's Deployment."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Argo Events: the Sensor's and EventSource's Deployment, placed by spec.template, runs the
    # controller's image.
    *(
        OperatorKind(
            "argoproj.io",
            kind,
            (
                Placement(
                    _p("/spec/template"),
                    (ImageSource((), operator_only=f"the {kind}'s (the controller's image)"),),
                    creates=1,
                    cites="argoproj/argo-events pkg/apis/events/v1alpha1/template.go Template "
                    "(nodeSelector, tolerations, affinity); pkg/reconciler/"
                    f"{kind.lower()}/resource.go (Image: the controller's args.Image)",
                ),
            ),
            cites=f"{kind}.spec.template.{{nodeSelector,tolerations,affinity}}",
            adds="its container, running the controller's image (declare it as defaultImages)",
        )
        for kind in ("Sensor", "EventSource")
    ),
)
