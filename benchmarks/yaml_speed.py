"""Scratch timing of the YAML layer: read_stream, apply_operations, ruamel fallback and round trip.

Run: ``python benchmarks/yaml_speed.py [RESOURCES ...]`` (default 2000 20000). Numbers only; no
assertions. The stream looks like ``helm template`` output: ``# Source:`` comments, Deployments
with labels, annotations, 1-3 containers, env, resources and probes, mixed with Services,
ConfigMaps and ServiceAccounts so that 2,000 resources weigh about 0.75 MB.
"""

from __future__ import annotations

import io
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from kmultiarch.yaml.edit import apply_operations, apply_operations_roundtrip
from kmultiarch.yaml.stream import SourceDocument, join_documents, read_stream

T = TypeVar("T")

DEPLOYMENT = """\
---
# Source: {chart}/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: {name}
    app.kubernetes.io/instance: release-{i}
  annotations:
    checksum/config: "{checksum}"
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app.kubernetes.io/name: {name}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {name}
    spec:
      serviceAccountName: {name}
      containers:
{containers}"""

CONTAINER = """\
        - name: {cname}
          image: "registry.example.com/team/{cname}:v{major}.{minor}"
          env:
            - name: LOG_LEVEL
              value: info
          resources:
            limits: {{cpu: 500m, memory: 256Mi}}
          readinessProbe:
            httpGet: {{path: /healthz, port: {port}}}
"""

SERVICE_ACCOUNT = """\
---
# Source: {chart}/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {name}
"""

SERVICE = """\
---
# Source: {chart}/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: {name}
spec:
  type: ClusterIP
  ports:
    - port: 80
      targetPort: http
  selector:
    app.kubernetes.io/name: {name}
"""

CONFIGMAP = """\
---
# Source: {chart}/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config
data:
  app.conf: |
    listen {port};
    # comment inside a block scalar
    workers {replicas};
"""


def generate_stream(resources: int, seed: int = 1, *, only_deployments: bool = False) -> str:
    """A Helm-like stream of ``resources`` documents, half of them Deployments (or all)."""
    rng = random.Random(seed)
    parts: list[str] = []
    for i in range(resources):
        chart = f"chart{i % 37}"
        name = f"{chart}-app{i}"
        fields = {
            "chart": chart,
            "name": name,
            "i": i,
            "i3": i % 7,
            "replicas": rng.randint(1, 5),
            "port": rng.choice([8080, 9090, 3000]),
            "checksum": f"{rng.getrandbits(128):032x}",
        }
        kind = 0 if only_deployments else i % 8
        if kind < 4:
            containers = "".join(
                CONTAINER.format(
                    cname=f"c{n}-{name}",
                    major=rng.randint(1, 9),
                    minor=rng.randint(0, 30),
                    port=fields["port"],
                )
                for n in range(rng.choice([1, 1, 1, 2]))
            )
            parts.append(DEPLOYMENT.format(containers=containers, **fields))
        elif kind in (4, 5):
            parts.append(SERVICE.format(**fields))
        elif kind == 6:
            parts.append(CONFIGMAP.format(**fields))
        else:
            parts.append(SERVICE_ACCOUNT.format(**fields))
    return "".join(parts)


TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": ["amd64", "arm64"],
                        }
                    ]
                }
            ]
        }
    }
}
OPERATIONS = [
    {"op": "add", "path": "/spec/template/spec/tolerations", "value": [TOLERATION]},
    {"op": "add", "path": "/spec/template/spec/affinity", "value": AFFINITY},
]


def timed(label: str, function: Callable[[], T], repeat: int = 1) -> T:
    """Best of ``repeat`` runs, in CPU seconds of this process (other work on the machine
    disturbs wall-clock times much more), with the wall-clock time beside it."""
    best = float("inf")
    wall = float("inf")
    result: T | None = None
    for _ in range(repeat):
        start, start_wall = time.process_time(), time.perf_counter()
        result = function()
        best = min(best, time.process_time() - start)
        wall = min(wall, time.perf_counter() - start_wall)
    print(f"{label:<72} {best:7.3f} s CPU ({wall:.3f} s wall)")
    assert result is not None
    return result


def ruamel_round_trip(text: str) -> str:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 30
    out = io.StringIO()
    yaml.dump_all(list(yaml.load_all(text)), out)
    return out.getvalue()


def edit_all(documents: list[SourceDocument]) -> list[str]:
    return [
        apply_operations(document, OPERATIONS) if _is_deployment(document) else document.text
        for document in documents
    ]


def _is_deployment(document: SourceDocument) -> bool:
    return isinstance(document.value, dict) and document.value.get("kind") == "Deployment"


def measure(size: int, *, round_trip: bool) -> None:
    text = generate_stream(size)
    print(f"--- {size} resources, {len(text) / 1e6:.2f} MB")
    documents = timed(f"read_stream ({size} documents)", lambda: read_stream(text, "bench"), 3)
    deployments = [document for document in documents if _is_deployment(document)]
    outputs = timed(
        f"apply_operations, tolerations + affinity ({len(deployments)} Deployments)",
        lambda: edit_all(documents),
        3,
    )
    assert sum(a != b.text for a, b in zip(outputs, documents, strict=True)) == len(deployments)

    def whole_run() -> str:
        return join_documents(edit_all(read_stream(text, "bench")))

    timed("whole run: read_stream + apply_operations + join_documents", whole_run, 3)
    tracemalloc.start()
    read_stream(text, "bench")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{'read_stream peak traced memory':<64} {peak / 1e6:8.1f} MB")
    sample = deployments[:50]
    only_deployments = read_stream(generate_stream(size, only_deployments=True), "bench")
    timed(
        f"apply_operations, tolerations + affinity ({size} Deployments of a second stream)",
        lambda: edit_all(only_deployments),
        3,
    )
    fallback = timed(
        f"apply_operations_roundtrip ({len(sample)} Deployments)",
        lambda: [apply_operations_roundtrip(document, OPERATIONS) for document in sample],
    )
    del fallback
    if round_trip:
        timed(
            "ruamel round trip of the whole stream (load_all + dump_all)",
            lambda: ruamel_round_trip(text),
        )


def main(argv: list[str]) -> None:
    sizes = [int(arg) for arg in argv] or [2000, 20000]
    for size in sizes:
        measure(size, round_trip=size <= 2000)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
