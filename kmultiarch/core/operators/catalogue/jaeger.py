"""Jaeger operator (jaegertracing/jaeger-operator): the common placement in spec, merged under
each component's own."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at
from kmultiarch.core.operators.model import ImageSource, Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_JAEGER_COMPONENTS = (
    "allInOne",
    "collector",
    "query",
    "ingester",
    "agent",
    "storage/esIndexCleaner",
    "storage/esRollover",
    "storage/dependencies",
)
#: Each component's image, named or the operator's (its flags: --jaeger-agent-image...): the
#: common placement holds for every one, so is decided on all.
_JAEGER_IMAGES = tuple(
    image_at(f"/spec/{component}/image", required=False) for component in _JAEGER_COMPONENTS
)
#: With storage.type grpc-plugin, the pods that read the storage run the plugin's image as an
#: init container (install-plugin): pkg/storage/grpc_plugin.go GetGRPCPluginInitContainers,
#: called by pkg/deployment/{all_in_one,collector,query,ingester}.go (not the agent's, nor the
#: storage cron jobs').
_GRPC_PLUGIN_IMAGE = ImageSource(
    (_p("/spec/storage/grpcPlugin/image"),),
    required=False,
    when=((_p("/spec/storage/type"), ("grpc-plugin",)),),
)
_GRPC_PLUGIN_USERS = frozenset({"allInOne", "collector", "query", "ingester"})


ENTRIES: tuple[OperatorKind, ...] = (
    # Jaeger operator: the common placement in spec, merged under each component's own.
    OperatorKind(
        "jaegertracing.io",
        "Jaeger",
        (
            Placement(
                _p("/spec"),
                (*_JAEGER_IMAGES, _GRPC_PLUGIN_IMAGE),
                # The simplest Jaeger has no spec at all: the operator chooses everything.
                creates=1,
                cites="jaegertracing/jaeger-operator pkg/storage/grpc_plugin.go "
                "GetGRPCPluginInitContainers (storage.grpcPlugin.image, the install-plugin init "
                "container of all-in-one, collector, query and ingester, when storage.type is "
                "grpc-plugin)",
            ),
            *(
                Placement(
                    _p(f"/spec/{component}"),
                    (
                        (*_JAEGER_IMAGES, _GRPC_PLUGIN_IMAGE)
                        if component in _GRPC_PLUGIN_USERS
                        else _JAEGER_IMAGES
                    ),
                    inherits=Inheritance(
                        _p("/spec"), (("affinity", "replace"), ("tolerations", "append"))
                    ),
                    cites="jaegertracing/jaeger-operator pkg/util/util.go Merge([component's "
                    "JaegerCommonSpec, spec's]): the first affinity set wins (the component's), "
                    "tolerations are appended; pkg/deployment/{all_in_one,collector,query,"
                    "ingester,agent}.go, pkg/cronjob/{es_index_cleaner,es_rollover,"
                    "spark_dependencies}.go; pkg/storage/grpc_plugin.go "
                    "GetGRPCPluginInitContainers (all-in-one, collector, query, ingester)",
                )
                for component in _JAEGER_COMPONENTS
            ),
        ),
        cites="Jaeger.spec.{affinity,tolerations}, spec.<component>.{affinity,tolerations}; "
        "images spec.<component>.image, spec.storage.grpcPlugin.image",
        adds="the image of each component of the operator's version when none is named",
    ),
)
