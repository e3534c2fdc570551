"""Rendered-manifest streams for the benchmarks, shaped like `helm template` output.

Sizes follow issue 6's measurements: about 375 bytes per resource on average (2,000 resources
~0.75 MB; 20,000 ~7.5 MB): half Deployments, a quarter Services, a quarter ConfigMaps.
"""

from __future__ import annotations

from collections.abc import Sequence


def deployment(index: int, image: str) -> str:
    return f"""---
# Source: app/templates/deployment-{index}.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{index}
  labels:
    app.kubernetes.io/name: app-{index}
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: app-{index}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: app-{index}
    spec:
      containers:
        - name: app
          image: "{image}"
          ports:
            - containerPort: 8080
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
"""


def service(index: int) -> str:
    return f"""---
# Source: app/templates/service-{index}.yaml
apiVersion: v1
kind: Service
metadata:
  name: app-{index}
spec:
  selector:
    app.kubernetes.io/name: app-{index}
  ports:
    - port: 80
      targetPort: 8080
"""


def config_map(index: int) -> str:
    return f"""---
# Source: app/templates/configmap-{index}.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-{index}
data:
  LOG_LEVEL: info
  MODE: "production"
"""


def mixed_stream(resources: int, images: Sequence[str]) -> str:
    """``resources`` documents: Deployments (cycling through ``images``), Services, ConfigMaps."""
    parts: list[str] = []
    deployments = 0
    for index in range(resources):
        slot = index % 4
        if slot in (0, 2):
            parts.append(deployment(index, images[deployments % len(images)]))
            deployments += 1
        elif slot == 1:
            parts.append(service(index))
        else:
            parts.append(config_map(index))
    return "".join(parts)


def deployments_only(count: int, images: Sequence[str]) -> str:
    return "".join(deployment(index, images[index % len(images)]) for index in range(count))
