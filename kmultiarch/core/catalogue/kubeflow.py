"""Kubeflow training operator (kubeflow/training-operator, kubeflow/mpi-operator): one pod
template per replica type."""

from __future__ import annotations

from kmultiarch.core.operators import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _kubeflow(kind: str, replicas: str) -> OperatorKind:
    return OperatorKind(
        "kubeflow.org",
        kind,
        (Placement(_p(f"/spec/{replicas}/*/template/spec"), pod_spec=True),),
        cites=f"{kind}.spec.{replicas}.<role>.template (a PodTemplateSpec)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # Kubeflow training operator: one pod template per replica type.
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs"),
    _kubeflow("TFJob", "tfReplicaSpecs"),
    _kubeflow("MPIJob", "mpiReplicaSpecs"),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow("MXJob", "mxReplicaSpecs"),
    _kubeflow("JAXJob", "jaxReplicaSpecs"),
)
