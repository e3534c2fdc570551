"""Strimzi (strimzi/strimzi-kafka-operator): template.pod of each component; a node pool's
pod template replaces its Kafka's."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_CONNECT_BUILD_CITE = (
    "strimzi/strimzi-kafka-operator cluster-operator/src/main/java/io/strimzi/operator/"
    "cluster/operator/assembly/KafkaConnectAssemblyOperator.java and ConnectBuildOperator.java "
    "kubernetesBuildWaitForFinish (the Connect container's image: the build container's "
    "termination message, spec.build.output.image@<the digest just pushed>); "
    "model/KafkaConnectBuild.java fromCrd (baseImage: "
    "spec.image or the version's; templatePod: spec.template.buildPod), generateBuilderPod "
    "(Kaniko, or Buildah, builds in that pod, for its node's architecture)"
)


def _strimzi_pod(component: str, *images: ImageSource) -> Placement:
    return Placement(_p(f"/spec/{component}/template/pod"), (*images,), creates=2)


ENTRIES: tuple[OperatorKind, ...] = (
    # Strimzi: template.pod of each component (a pool's template overrides the Kafka's; the
    # images of a pool are those of its Kafka, named by the strimzi.io/cluster label).
    OperatorKind(
        "kafka.strimzi.io",
        "Kafka",
        (
            _strimzi_pod("kafka", image_at("/spec/kafka/image")),
            _strimzi_pod("zookeeper", image_at("/spec/zookeeper/image")),
            _strimzi_pod(
                "entityOperator",
                image_at("/spec/entityOperator/topicOperator/image", required=False),
                image_at("/spec/entityOperator/userOperator/image", required=False),
            ),
            _strimzi_pod("cruiseControl", image_at("/spec/cruiseControl/image")),
            _strimzi_pod("kafkaExporter", image_at("/spec/kafkaExporter/image")),
        ),
        cites="Kafka.spec.{kafka,zookeeper,entityOperator,cruiseControl,kafkaExporter}."
        "template.pod.{affinity,tolerations}; images spec.<component>.image",
        adds="the images of the Kafka version (spec.kafka.version) when no image is named",
    ),
    OperatorKind(
        "kafka.strimzi.io",
        "KafkaNodePool",
        (
            Placement(
                _p("/spec/template/pod"),
                (
                    ImageSource(
                        (_p("/spec/kafka/image"),),
                        related=("kafka.strimzi.io", "Kafka", "strimzi.io/cluster"),
                    ),
                ),
                # Never created: a pool without its own pod template takes the Kafka's
                # spec.kafka.template.pod, which one on the pool would replace whole (its
                # volumes, security context...); that one is written instead.
                creates=2,
                judged_only_when_missing=True,
                cites="strimzi/strimzi-kafka-operator cluster-operator/src/main/java/io/"
                "strimzi/operator/cluster/model/nodepools/KafkaPool.java fromCrd "
                "(templatePod = spec.template.pod of the pool, replacing the Kafka's "
                "spec.kafka.template.pod when set)",
            ),
        ),
        cites="KafkaNodePool.spec.template.pod.{affinity,tolerations}; images of the Kafka "
        "its strimzi.io/cluster label names (spec.kafka.image)",
    ),
    # A KafkaConnect with spec.build runs the image the operator builds and pushes to
    # spec.build.output.image; its build pod (placed by template.buildPod) runs Kaniko on
    # spec.image, and builds for the architecture of the node it lands on.
    OperatorKind(
        "kafka.strimzi.io",
        "KafkaConnect",
        (
            Placement(
                _p("/spec/template/pod"),
                (image_at("/spec/image"),),
                creates=2,
                unless=((_p("/spec/build"), ()),),
                cites="strimzi/strimzi-kafka-operator cluster-operator/src/main/java/io/"
                "strimzi/operator/cluster/model/KafkaConnectCluster.java (the Connect "
                "container's image: spec.image, else the version's)",
            ),
            # With spec.build, the pods run output.image@<digest of the new build>, made by the
            # build pod for the architecture of its node alone: judged on no registry image
            # (the one pushed before may be of another architecture); both pod templates must
            # select one architecture alike, else a warning says so.
            Placement(
                _p("/spec/template/pod"),
                creates=2,
                when=((_p("/spec/build"), ()),),
                image_built_by=_p("/spec/template/buildPod"),
                cites=_CONNECT_BUILD_CITE,
            ),
            Placement(
                _p("/spec/template/buildPod"),
                (
                    image_at("/spec/image"),
                    ImageSource(
                        (),
                        operator_only="Kaniko (the operator's "
                        "STRIMZI_DEFAULT_KANIKO_EXECUTOR_IMAGE)",
                    ),
                ),
                creates=2,
                when=((_p("/spec/build"), ()),),
                cites=_CONNECT_BUILD_CITE,
            ),
        ),
        cites="KafkaConnect.spec.template.{pod,buildPod}.{affinity,tolerations}, spec.image, "
        "spec.build.output.image",
        adds="with spec.build, the image it builds (for the build node's architecture alone: "
        "give template.buildPod and template.pod one nodeSelector kubernetes.io/arch) and "
        "Kaniko in the build pod",
    ),
    *(
        OperatorKind(
            "kafka.strimzi.io",
            kind,
            (Placement(_p("/spec/template/pod"), (image_at("/spec/image"),), creates=2),),
            cites=f"{kind}.spec.template.pod.{{affinity,tolerations}}, spec.image",
        )
        for kind in ("KafkaMirrorMaker2", "KafkaBridge")
    ),
)
