"""Kubeflow training operator (kubeflow/training-operator, kubeflow/mpi-operator): one pod
template per replica type, and the init containers the operator adds to some of them."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_TRAINING_OPERATOR = "kubeflow/training-operator "


def _kubeflow(kind: str, replicas: str) -> OperatorKind:
    return OperatorKind(
        "kubeflow.org",
        kind,
        (Placement(_p(f"/spec/{replicas}/*/template/spec"), pod_spec=True),),
        cites=f"{kind}.spec.{replicas}.<role>.template (a PodTemplateSpec)",
    )


#: A PyTorchJob with a Master: its Workers' pods get an init container that waits for the
#: master, running the operator's --pytorch-init-container-image (alpine:3.10 by default).
#: The replica types may be written in any case (the defaulter makes them Master/Worker).
_PYTORCH_INIT = tuple(
    ImageSource(
        (),
        templates=("alpine:3.10",),
        when=((_p(f"/spec/pytorchReplicaSpecs/{master}"), ()),),
        operator_only="the init container waiting for the master (the operator's "
        "--pytorch-init-container-image)",
    )
    for master in ("Master", "master")
)
_PYTORCH_CITE = (
    _TRAINING_OPERATOR + "pkg/controller.v1/pytorch/pytorchjob_controller.go SetClusterSpec -> "
    "initcontainer.go setInitContainer (only when spec.pytorchReplicaSpecs.Master is set, "
    "only for the Worker type: image config.Config.PyTorchInitContainerImage); "
    "pkg/config/config.go PyTorchInitContainerImageDefault (alpine:3.10), cmd/training-operator."
    "v1/main.go --pytorch-init-container-image; pkg/apis/kubeflow.org/v1/pytorch_defaults.go "
    "(replica type names made Master/Worker whatever their case)"
)
#: An MPIJob v1 (the training operator's): its launcher pod gets a kubectl-delivery init
#: container; v2beta1 (kubeflow/mpi-operator) starts workers over SSH and adds none.
_MPI_CITE = (
    _TRAINING_OPERATOR + "pkg/controller.v1/mpi/mpijob_controller.go newLauncher (an init "
    "container of config.Config.MPIKubectlDeliveryImage appended to the Launcher's "
    "template); pkg/config/config.go MPIKubectlDeliveryImageDefault (kubeflow/kubectl-"
    "delivery:latest), --mpi-kubectl-delivery-image; v2beta1: kubeflow/mpi-operator "
    "pkg/controller/mpi_job_controller.go (SSH, no such init container)"
)


def _pytorch() -> OperatorKind:
    replicas = "/spec/pytorchReplicaSpecs"
    return OperatorKind(
        "kubeflow.org",
        "PyTorchJob",
        (
            *(
                Placement(_p(f"{replicas}/{role}/template/spec"), pod_spec=True)
                for role in ("Master", "master")
            ),
            *(
                Placement(
                    _p(f"{replicas}/{role}/template/spec"),
                    _PYTORCH_INIT,
                    pod_spec=True,
                    cites=_PYTORCH_CITE,
                )
                for role in ("Worker", "worker")
            ),
        ),
        cites="PyTorchJob.spec.pytorchReplicaSpecs.{Master,Worker}.template (PodTemplateSpecs)",
        adds="with a Master, the Workers' init container (the operator's "
        "--pytorch-init-container-image, alpine:3.10 by default: judged)",
    )


def _mpi() -> OperatorKind:
    replicas = "/spec/mpiReplicaSpecs"
    return OperatorKind(
        "kubeflow.org",
        "MPIJob",
        (
            Placement(
                _p(f"{replicas}/Launcher/template/spec"),
                (
                    ImageSource(
                        (),
                        templates=("kubeflow/kubectl-delivery:latest",),
                        operator_only="the kubectl-delivery init container (the operator's "
                        "--mpi-kubectl-delivery-image)",
                    ),
                ),
                pod_spec=True,
                versions=("v1",),
                cites=_MPI_CITE,
            ),
            Placement(
                _p(f"{replicas}/Launcher/template/spec"),
                pod_spec=True,
                versions=("v2beta1", "v1alpha2", "v1alpha1"),
                cites=_MPI_CITE,
            ),
            Placement(_p(f"{replicas}/Worker/template/spec"), pod_spec=True),
        ),
        cites="MPIJob.spec.mpiReplicaSpecs.{Launcher,Worker}.template (PodTemplateSpecs)",
        adds="in v1, the launcher's kubectl-delivery init container (the operator's "
        "--mpi-kubectl-delivery-image, kubeflow/kubectl-delivery:latest by default: judged)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # Kubeflow training operator: one pod template per replica type.
    _pytorch(),
    _kubeflow("TFJob", "tfReplicaSpecs"),
    _mpi(),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow("MXJob", "mxReplicaSpecs"),
    _kubeflow("JAXJob", "jaxReplicaSpecs"),
)
