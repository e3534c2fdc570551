"""The KRM functionConfig forms: a MultiArchPolicy, a ConfigMap with string data, nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.policy.model import Policy
from kmultiarch.errors import PolicyError
from kmultiarch.krm.function import policy_from_function_config


def configmap(**data: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data}


def test_absent_config_is_the_defaults() -> None:
    assert policy_from_function_config(None) == Policy()
    assert policy_from_function_config(configmap()).scheduling == Policy().scheduling


def test_configmap_strings_become_the_policy() -> None:
    policy = policy_from_function_config(
        configmap(
            platforms=" linux/amd64, linux/arm64 ,",
            failurePolicy="Fail",
            nodeAffinity="preferred",
            excludeNamespaces="kube-system,monitoring",
            excludeKinds="Job",
            registries="{registry.test: {mirror: 'http://127.0.0.1:5000'}}",
            overrides='[{"image": "legacy/*", "platforms": ["linux/amd64"]}]',
        )
    )
    assert policy.scheduling.platforms == (Platform("linux", "amd64"), Platform("linux", "arm64"))
    assert policy.failure_policy == "Fail"
    assert policy.scheduling.node_affinity == "preferred"
    assert policy.scope.exclude.namespaces == frozenset({"kube-system", "monitoring"})
    assert policy.scope.exclude.kinds == frozenset({"Job"})
    assert policy.resolution.registries["registry.test"].mirror == "http://127.0.0.1:5000"
    # As written, and normalised as references are (issue 36 item 16: docker.io/ added).
    assert policy.resolution.overrides[0].written == "legacy/*"
    assert policy.resolution.overrides[0].image == "docker.io/legacy/*"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodeAffinity": "sometimes"}, "functionConfig: data.nodeAffinity: expected one of"),
        ({"platform": "linux/arm64"}, "functionConfig: data.platform: unknown key"),
        ({"platforms": "linux/amd64,sparc"}, "functionConfig: data.platforms[1]"),
        ({"failurePolicy": 1}, "functionConfig: data.failurePolicy: ConfigMap values are strings"),
        ({"registries": "{a: [}"}, "functionConfig: data.registries: not valid YAML/JSON"),
        (
            {"excludeNamespaceSelector": "matchLabels: {tier: 1}"},
            "functionConfig: data.excludeNamespaceSelector.matchLabels.tier: expected a string",
        ),
        ({"excludeKinds": "Job", "podSpecs": "[x]"}, "functionConfig: data.podSpecs[0]: expected"),
    ],
)
def test_configmap_errors_name_the_data_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        policy_from_function_config(configmap(**data))
    assert str(caught.value).startswith(message), str(caught.value)
    # The key the user wrote, as a field: data.KEY..., never the spec it was read into.
    assert caught.value.source == "functionConfig"
    assert caught.value.path[0] == "data"
    assert caught.value.path[1] in data


def test_other_kinds_are_refused() -> None:
    with pytest.raises(PolicyError, match="got kind 'Secret'"):
        policy_from_function_config({"apiVersion": "v1", "kind": "Secret"})
    with pytest.raises(PolicyError, match="expected a MultiArchPolicy or a ConfigMap"):
        policy_from_function_config(["not", "a", "mapping"])


def test_relative_paths_resolve_against_the_base_dir(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("")
    policy = policy_from_function_config(
        {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "metadata": {"name": "p", "annotations": {"config.kubernetes.io/origin": "path: x"}},
            "spec": {"lock": "kmultiarch.lock", "registries": {"r.example": {"ca": "ca.pem"}}},
        },
        "transformer",
        base_dir=tmp_path,
    )
    assert policy.resolution.lock == tmp_path.resolve() / "kmultiarch.lock"
    assert policy.resolution.registries["r.example"].ca == tmp_path.resolve() / "ca.pem"
    with pytest.raises(PolicyError, match=r"CA bundle .*/nowhere\.pem not found"):
        policy_from_function_config(
            configmap(registries="{r.example: {ca: nowhere.pem}}"), base_dir=tmp_path
        )


def test_a_broken_pull_secret_is_an_error_result_naming_the_secret() -> None:
    import yaml as _yaml

    from kmultiarch.krm.function import run_function

    text = _yaml.safe_dump(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "regcred", "namespace": "ns"},
                    "type": "kubernetes.io/dockerconfigjson",
                    "data": {".dockerconfigjson": "bm90IGpzb24="},  # "not json"
                },
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "ns"},
                    "spec": {
                        "imagePullSecrets": [{"name": "regcred"}],
                        "containers": [{"name": "c", "image": "registry.internal/a:1"}],
                    },
                },
            ],
        }
    )

    def factory(policy: object, pull_secrets: object) -> object:
        raise AssertionError("no resolver is built for a broken Secret")

    output = run_function(text, factory)  # type: ignore[arg-type]
    assert output.exit_code == 1
    assert output.results == [
        {
            "message": "Secret ns/regcred: data..dockerconfigjson is not JSON; fix the Secret",
            "severity": "error",
        }
    ]
