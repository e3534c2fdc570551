"""The Kubeflow training operator's own init containers (issue 29, item 3): a PyTorchJob's
Workers wait for the Master in an init container of the operator's image (alpine:3.10 by
default; pkg/controller.v1/pytorch/initcontainer.go setInitContainer), an MPIJob v1 launcher
gets kubectl-delivery (pkg/controller.v1/mpi/mpijob_controller.go newLauncher), v2beta1 none.
Each test makes the operator's image the only amd64-only one: before, no pod was judged on it."""

from __future__ import annotations

from collections.abc import Mapping

import yaml
from support.operators import AMD64, ARCH_IN_AMD64, ARM64, ARM64_TOLERATION

from kmultiarch.api import mutate_text
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution


def _amd64_only(*names: str):  # type: ignore[no-untyped-def]
    """A resolver where the images named run on amd64 only, every other on both."""

    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        return {
            r: Resolution(
                r,
                frozenset({AMD64} if str(r) in names else {AMD64, ARM64}),
                "sha256:" + "0" * 64,
            )
            for r in references
        }

    return resolve


ALPINE = "docker.io/library/alpine:3.10"
DELIVERY = "docker.io/kubeflow/kubectl-delivery:latest"


def _pytorch(master: str | None, worker: str = "Worker") -> str:
    roles = {}
    if master:
        roles[master] = {
            "replicas": 1,
            "template": {
                "spec": {"containers": [{"name": "pytorch", "image": "registry.test/torch:2"}]}
            },
        }
    roles[worker] = {
        "replicas": 2,
        "template": {
            "spec": {"containers": [{"name": "pytorch", "image": "registry.test/torch:2"}]}
        },
    }
    return yaml.safe_dump(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "t"},
            "spec": {"pytorchReplicaSpecs": roles},
        }
    )


def _spec(text: str, *names: str) -> dict[str, object]:
    (job,) = yaml.safe_load_all(mutate_text(text, resolve=_amd64_only(*names)).stream())
    return job["spec"]  # type: ignore[no-any-return]


def test_a_pytorch_workers_wait_for_the_master_in_the_operators_init_image() -> None:
    spec = _spec(_pytorch("Master"), ALPINE)["pytorchReplicaSpecs"]
    assert spec["Worker"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    master = spec["Master"]["template"]["spec"]  # type: ignore[index]
    assert master["tolerations"] == [ARM64_TOLERATION]
    assert "affinity" not in master


def test_replica_types_in_any_case_are_the_operators_master_and_worker() -> None:
    """pytorch_defaults.go: the defaulter makes "master"/"worker" Master/Worker."""
    spec = _spec(_pytorch("master", "worker"), ALPINE)["pytorchReplicaSpecs"]
    assert spec["worker"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_without_a_master_no_init_container_is_added() -> None:
    """setInitContainer: "There is no need to set init container if no master is specified"."""
    spec = _spec(_pytorch(None), ALPINE)["pytorchReplicaSpecs"]
    worker = spec["Worker"]["template"]["spec"]  # type: ignore[index]
    assert worker["tolerations"] == [ARM64_TOLERATION]


def _mpi(version: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": f"kubeflow.org/{version}",
            "kind": "MPIJob",
            "metadata": {"name": "m"},
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "template": {
                            "spec": {"containers": [{"name": "l", "image": "registry.test/mpi:1"}]}
                        }
                    },
                    "Worker": {
                        "template": {
                            "spec": {"containers": [{"name": "w", "image": "registry.test/mpi:1"}]}
                        }
                    },
                }
            },
        }
    )


def test_an_mpijob_v1_launcher_runs_kubectl_delivery_first() -> None:
    spec = _spec(_mpi("v1"), DELIVERY)["mpiReplicaSpecs"]
    assert spec["Launcher"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert spec["Worker"]["template"]["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_an_mpijob_v2beta1_launcher_has_no_kubectl_delivery() -> None:
    """kubeflow/mpi-operator v2beta1 starts the workers over SSH: no init container."""
    spec = _spec(_mpi("v2beta1"), DELIVERY)["mpiReplicaSpecs"]
    launcher = spec["Launcher"]["template"]["spec"]  # type: ignore[index]
    assert launcher["tolerations"] == [ARM64_TOLERATION]
    assert "affinity" not in launcher
