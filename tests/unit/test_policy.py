"""MultiArchPolicy: defaults, loading, and validation that names the file and the key path."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import CONFIG_ENV, Policy, RegistrySettings, Toleration
from kmultiarch.core.policy.schema import policy_from_object
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import load_policy, parse_policy_text

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
GKE_ARM64 = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}
HEADER = "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"


def _write(tmp_path: Path, body: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _spec(body: str) -> str:
    return HEADER + "spec:\n" + textwrap.indent(textwrap.dedent(body), "  ")


def test_defaults_are_a_gke_style_tainted_cluster() -> None:
    policy = Policy()
    assert policy.scheduling.platforms == (AMD64, ARM64)
    assert {
        p: [t.to_manifest() for t in ts] for p, ts in policy.scheduling.tolerations.items()
    } == {ARM64: [GKE_ARM64]}
    assert policy.scheduling.node_affinity == "required"
    assert policy.failure_policy == "Ignore"
    assert policy.resolution.overrides == ()
    assert policy.resolution.registry_settings("ghcr.io") == RegistrySettings()


def test_no_path_and_no_environment_gives_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    assert load_policy(None) == Policy()


def test_environment_names_the_policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, _spec("platforms: [linux/arm64]\nnodeAffinity: preferred\n"))
    monkeypatch.setenv(CONFIG_ENV, str(path))
    policy = load_policy(None)
    assert policy.scheduling.platforms == (ARM64,)
    assert policy.scheduling.node_affinity == "preferred"
    assert policy.source == str(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError, match=r"nope\.yaml: policy file not found"):
        load_policy(missing)


def test_a_full_policy(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_text("pem")
    path = _write(
        tmp_path,
        _spec(
            """\
            platforms: [linux/amd64, linux/aarch64, linux/arm64/v8, linux/s390x]
            tolerations:
              linux/arm64:
                - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}
              linux/s390x:
                - {key: arch, operator: Exists}
                - {operator: Exists, effect: NoExecute, tolerationSeconds: 30}
            nodeAffinity: none
            failurePolicy: Fail
            overrides:
              - image: "docker.io/library/busybox:*"
                platforms: [linux/amd64, linux/arm64]
            exclude:
              namespaces: [kube-system]
              kinds: [DaemonSet]
            registries:
              index.docker.io: {mirror: "https://mirror.internal/"}
              registry.internal:5000: {insecure: true, ca: certs/ca.pem}
            lock: platforms.lock
            """
        ),
    )
    policy = load_policy(path)
    s390x = Platform("linux", "s390x")
    assert policy.scheduling.platforms == (AMD64, ARM64, s390x)  # normalised, duplicates dropped
    assert policy.scheduling.tolerations == {
        ARM64: (Toleration("kubernetes.io/arch", "Equal", "arm64", "NoSchedule"),),
        s390x: (
            Toleration("arch", "Exists"),
            Toleration("", "Exists", "", "NoExecute", 30),
        ),
    }
    assert policy.scheduling.node_affinity == "none"
    assert policy.failure_policy == "Fail"
    override = policy.resolution.override_for("docker.io/library/busybox:1.36")
    assert override is not None and override.platforms == {AMD64, ARM64}
    assert policy.resolution.override_for("docker.io/library/nginx:1") is None
    assert policy.scope.exclude.namespaces == {"kube-system"}
    assert policy.scope.exclude.kinds == {"DaemonSet"}
    assert policy.resolution.registry_settings("docker.io").mirror == "https://mirror.internal"
    internal = policy.resolution.registry_settings("registry.internal:5000")
    assert internal.insecure is True
    assert internal.ca == (tmp_path / "certs" / "ca.pem").resolve()
    assert policy.resolution.lock == tmp_path.resolve() / "platforms.lock"
    assert policy.source == str(path)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("platforms: 'linux/amd64, linux/arm64'", (AMD64, ARM64)),
        ("platforms: [linux/arm64, linux/aarch64]", (ARM64,)),
        ("platforms: [linux/arm64]", (ARM64,)),
    ],
)
def test_platform_spellings(spec: str, expected: tuple[Platform, ...]) -> None:
    assert parse_policy_text(_spec(spec), "p.yaml").scheduling.platforms == expected


@pytest.mark.parametrize(
    "text",
    [HEADER, HEADER + "spec:\n", HEADER + "spec: {}\n", HEADER + "metadata: {name: x}\n"],
)
def test_an_empty_spec_means_the_defaults(text: str) -> None:
    policy = parse_policy_text(text, "p.yaml")
    assert policy.scheduling == Policy().scheduling


def test_null_tolerations_mean_none() -> None:
    assert parse_policy_text(_spec("tolerations: null"), "p.yaml").scheduling.tolerations == {}
    assert parse_policy_text(
        _spec("tolerations: {linux/arm64: null}"), "p.yaml"
    ).scheduling.tolerations == {ARM64: ()}


@pytest.mark.parametrize(
    ("toleration", "manifest"),
    [
        (Toleration("kubernetes.io/arch", "Equal", "arm64", "NoSchedule"), GKE_ARM64),
        (Toleration("arch", "Exists"), {"key": "arch", "operator": "Exists"}),
        (Toleration(operator="Exists"), {"operator": "Exists"}),
        (Toleration("k", "Equal", ""), {"key": "k", "operator": "Equal", "value": ""}),
        (
            Toleration("k", "Exists", "", "NoExecute", 0),
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
        ),
    ],
)
def test_toleration_manifest(toleration: Toleration, manifest: dict[str, object]) -> None:
    assert toleration.to_manifest() == manifest


# (spec body, the key path the error must name)
BAD_SPECS = [
    ("platform: [linux/amd64]", "spec.platform: unknown key"),
    ("platforms: 5", "spec.platforms: expected a list"),
    ("platforms: [linux/amd64, 7]", "spec.platforms[1]: expected a platform string"),
    ("platforms: [linux]", "spec.platforms[0]: invalid platform"),
    ("platforms: []", "spec.platforms: list at least one"),
    ("platforms: ''", "spec.platforms: list at least one"),
    ("nodeAffinity: sometimes", "spec.nodeAffinity: expected one of required, preferred, none"),
    ("nodeAffinity: Required", "spec.nodeAffinity"),
    ("nodeAffinity: null", "spec.nodeAffinity"),
    ("failurePolicy: fail", "spec.failurePolicy: expected one of Ignore, Fail"),
    ("tolerations: [a]", "spec.tolerations: expected a mapping"),
    ("tolerations: {linux/s390x: []}", "spec.tolerations.linux/s390x: linux/s390x is not in"),
    ("tolerations: {linux: []}", "spec.tolerations.linux: invalid platform"),
    ("tolerations: {linux/arm64: {key: a}}", "spec.tolerations.linux/arm64: expected a list"),
    ("tolerations: {linux/arm64: [a]}", "spec.tolerations.linux/arm64[0]: expected a toleration"),
    (
        "tolerations: {linux/arm64: [{key: a, tolerationsSeconds: 1}]}",
        "spec.tolerations.linux/arm64[0].tolerationsSeconds: unknown key",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, operator: In}]}",
        "spec.tolerations.linux/arm64[0].operator: expected Equal or Exists",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, effect: NoScheduled}]}",
        "spec.tolerations.linux/arm64[0].effect: expected one of",
    ),
    (
        "tolerations: {linux/arm64: [{key: 123}]}",
        "spec.tolerations.linux/arm64[0].key: expected a string",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, value: true}]}",
        "spec.tolerations.linux/arm64[0].value: expected a string",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, operator: Exists, value: b}]}",
        "spec.tolerations.linux/arm64[0].value: must be empty",
    ),
    (
        "tolerations: {linux/arm64: [{value: b}]}",
        "spec.tolerations.linux/arm64[0].key: an empty key needs operator Exists",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, effect: NoExecute, tolerationSeconds: '9'}]}",
        "spec.tolerations.linux/arm64[0].tolerationSeconds: expected an integer",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, effect: NoExecute, tolerationSeconds: true}]}",
        "spec.tolerations.linux/arm64[0].tolerationSeconds: expected an integer",
    ),
    (
        "tolerations: {linux/arm64: [{key: a, effect: NoSchedule, tolerationSeconds: 9}]}",
        "spec.tolerations.linux/arm64[0].tolerationSeconds: only valid with effect NoExecute",
    ),
    ("overrides: {image: x}", "spec.overrides: expected a list"),
    ("overrides: [x]", "spec.overrides[0]: expected a mapping"),
    ("overrides: [{image: x, platforms: [linux/amd64], tag: y}]", "spec.overrides[0].tag: unknown"),
    ("overrides: [{platforms: [linux/amd64]}]", "spec.overrides[0].image: expected a glob"),
    ("overrides: [{image: x}]", "spec.overrides[0].platforms: expected a list"),
    (
        "overrides: [{image: x, platforms: [linux/amd64, arm]}]",
        "spec.overrides[0].platforms[1]: invalid platform",
    ),
    ("exclude: [kube-system]", "spec.exclude: expected a mapping"),
    ("exclude: {namespace: [a]}", "spec.exclude.namespace: unknown key"),
    ("exclude: {kinds: Pod}", "spec.exclude.kinds: expected a list of strings"),
    ("exclude: {namespaces: [a, 1]}", "spec.exclude.namespaces: expected a list of strings"),
    ("registries: [r.io]", "spec.registries: expected a mapping"),
    ("registries: {r.io/x: {}}", "spec.registries.r.io/x: expected a registry host"),
    ("registries: {r.io: [a]}", "spec.registries.r.io: expected a mapping"),
    ("registries: {r.io: {mirrors: x}}", "spec.registries.r.io.mirrors: unknown key"),
    ("registries: {r.io: {mirror: ftp://m.io}}", "spec.registries.r.io.mirror: expected an http"),
    ("registries: {r.io: {mirror: m.io}}", "spec.registries.r.io.mirror: expected an http"),
    ("registries: {r.io: {mirror: 5}}", "spec.registries.r.io.mirror: expected an http"),
    ("registries: {r.io: {mirror: 'https://[::1'}}", "spec.registries.r.io.mirror"),
    ("registries: {r.io: {insecure: 'yes'}}", "spec.registries.r.io.insecure: expected true"),
    ("registries: {r.io: {ca: 5}}", "spec.registries.r.io.ca: expected a path"),
    ("registries: {r.io: {ca: missing.pem}}", "spec.registries.r.io.ca: CA bundle"),
    ("lock: [a]", "spec.lock: expected a file path"),
    ("lock: {kind: Policy}", "spec.lock: not a kmultiarch lock file"),
    (
        "lock: {apiVersion: kmultiarch.dev/v1alpha1, kind: ImageLock, images: {app: {}}}",
        "spec.lock: images.app.digest: expected a digest",
    ),
]


@pytest.mark.parametrize(("spec", "where"), BAD_SPECS)
def test_bad_specs_name_the_file_and_the_key_path(tmp_path: Path, spec: str, where: str) -> None:
    path = _write(tmp_path, _spec(spec))
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}: {where}")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("- a\n- b\n", "expected a MultiArchPolicy object"),
        ("", "expected a MultiArchPolicy object"),
        (HEADER + "spek: {}\n", "spek: unknown key"),
        (HEADER + "spec: [a]\n", "spec: expected a mapping"),
        ("apiVersion: v1\nkind: MultiArchPolicy\n", "expected apiVersion: kmultiarch.dev/v1alpha1"),
        ("apiVersion: kmultiarch.dev/v1alpha1\nkind: Policy\n", "expected apiVersion"),
        (HEADER + "spec: {platforms: [linux/amd64}\n", "policy is not valid YAML"),
        (HEADER + "---\n" + HEADER, "policy is not valid YAML"),
    ],
)
def test_bad_documents_name_the_file(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(str(path))
    assert where in str(caught.value)


def test_yaml_errors_give_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + "spec:\n  platforms: [linux/amd64\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(f"{path}:")
    line = str(caught.value)[len(str(path)) + 1 :].partition(":")[0]
    assert line.isdigit() and int(line) >= 3


def test_unreadable_file_is_a_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PolicyError, match=r"binary\.yaml: cannot read policy file"):
        load_policy(path)


def test_policy_from_object_accepts_a_parsed_function_config() -> None:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "spec": {"platforms": ["linux/arm64"], "tolerations": {"linux/arm64": []}},
    }
    policy = policy_from_object(document, "functionConfig")
    assert policy.scheduling.platforms == (ARM64,)
    assert policy.scheduling.tolerations == {ARM64: ()}
    assert policy.source == "functionConfig"


def test_a_duplicated_key_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    # A second `platforms:` would otherwise silently win over the first.
    path = _write(
        tmp_path, HEADER + "spec:\n  platforms: [linux/amd64]\n  platforms: [linux/arm64]\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:")
    assert "duplicate key 'platforms'" in message


def test_pod_specs_are_json_pointers_grouped_by_api_group() -> None:
    policy = policy_from_object(
        {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "spec": {
                "podSpecs": [
                    {
                        "apiVersion": "apps.openshift.io/v1",
                        "kind": "DeploymentConfig",
                        "path": "/spec/template/spec",
                    },
                    {"apiVersion": "x.io/v1", "kind": "Fleet", "path": "/spec/pools/0/spec"},
                    {"apiVersion": "x.io/v2", "kind": "Fleet", "path": "/spec/a~1b/spec"},
                ]
            },
        },
        "p.yaml",
    )
    operators = policy.scope.operators
    assert [p.path for p in operators[("apps.openshift.io", "DeploymentConfig")].placements] == [
        ("spec", "template", "spec")
    ]
    # Two versions of a group's kind are one kind: their placements add up.
    assert [p.path for p in operators[("x.io", "Fleet")].placements] == [
        ("spec", "pools", "0", "spec"),
        ("spec", "a/b", "spec"),
    ]
    assert all(p.pod_spec for p in operators[("x.io", "Fleet")].placements)
    # The built-in catalogue is there too.
    assert ("ray.io", "RayCluster") in operators


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("[{kind: X, path: /spec}]", "spec.podSpecs[0].apiVersion: expected a non-empty string"),
        ("[{apiVersion: v1, kind: X, path: spec}]", "spec.podSpecs[0].path: invalid JSON pointer"),
        ("[{apiVersion: v1, kind: X, path: /}]", "spec.podSpecs[0].path: expected a JSON pointer"),
        ("[{apiVersion: v1, kind: X, path: /a, extra: 1}]", "spec.podSpecs[0].extra: unknown key"),
        ("{kind: X}", "spec.podSpecs: expected a list"),
    ],
)
def test_bad_pod_specs_name_the_entry(entry: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_policy_text(_spec(f"podSpecs: {entry}\n"), "p.yaml")


def test_annotate_is_a_boolean() -> None:
    assert parse_policy_text(_spec("annotate: true\n"), "p.yaml").scheduling.annotate is True
    assert Policy().scheduling.annotate is False
    with pytest.raises(PolicyError, match=r"p.yaml: spec.annotate: expected true or false"):
        parse_policy_text(_spec("annotate: 'yes'\n"), "p.yaml")


def test_fallback_platforms() -> None:
    policy = parse_policy_text(_spec("fallbackPlatforms: [linux/amd64, linux/amd64]\n"), "p.yaml")
    assert policy.resolution.fallback_platforms == (AMD64,)
    assert Policy().resolution.fallback_platforms == ()
    with pytest.raises(PolicyError, match=r"spec.fallbackPlatforms\[0\]: invalid platform"):
        parse_policy_text(_spec("fallbackPlatforms: [amd64]\n"), "p.yaml")


def test_preferences() -> None:
    policy = parse_policy_text(_spec("preferences: {linux/arm64: 80}\n"), "p.yaml")
    assert dict(policy.scheduling.preferences) == {ARM64: 80}
    for body, message in [
        ("preferences: {linux/arm64: 0}\n", "expected a weight from 1 to 100"),
        ("preferences: {linux/arm64: high}\n", "expected a weight from 1 to 100"),
        ("preferences: {linux/s390x: 10}\n", "linux/s390x is not in spec.platforms"),
        ("preferences: [linux/arm64]\n", "expected a mapping from platform to weight"),
    ]:
        with pytest.raises(PolicyError, match=message):
            parse_policy_text(_spec(body), "p.yaml")


def test_a_lock_written_out_in_the_policy_is_its_lock(tmp_path: Path) -> None:
    """For runners that give a function no files (a Kptfile pipeline): spec.lock holds the
    lock file's content instead of its path."""
    digest = "sha256:" + "a" * 64
    path = _write(
        tmp_path,
        _spec(
            f"""\
            lock:
              apiVersion: kmultiarch.dev/v1alpha1
              kind: ImageLock
              images:
                registry.example/app:1.0:
                  digest: {digest}
                  platforms: [linux/amd64]
            """
        ),
    )
    policy = load_policy(path)
    assert policy.resolution.lock is None
    assert policy.resolution.embedded_lock is not None
    assert policy.resolution.embedded_lock.source == f"{path}: spec.lock"
    entry = policy.resolution.embedded_lock.lookup(ImageRef.parse("registry.example/app:1.0"))
    assert entry is not None
    assert (entry.digest, entry.platforms) == (digest, frozenset({AMD64}))


def test_errors_carry_the_source_and_the_key_path_as_fields() -> None:
    body = "tolerations: {linux/arm64: [{key: a, effect: NoScheduled}]}"
    with pytest.raises(PolicyError) as caught:
        parse_policy_text(_spec(body), "p.yaml")
    error = caught.value
    assert error.source == "p.yaml"
    assert error.path == ("spec", "tolerations", "linux/arm64", 0, "effect")
    assert error.message == (
        "expected one of NoSchedule, PreferNoSchedule, NoExecute, got 'NoScheduled'"
    )
    assert str(error) == f"p.yaml: spec.tolerations.linux/arm64[0].effect: {error.message}"
    moved = error.rerooted(("spec", "tolerations"), ("data", "tolerations"))
    assert str(moved) == f"p.yaml: data.tolerations.linux/arm64[0].effect: {error.message}"
    with pytest.raises(ValueError, match="not under"):
        error.rerooted(("spec", "platforms"), ("data",))


def test_a_policy_is_made_of_sections_each_layer_takes_its_own() -> None:
    import kmultiarch

    policy = kmultiarch.Policy(
        scheduling=kmultiarch.SchedulingPolicy(platforms=(ARM64,), tolerations={}),
        scope=kmultiarch.ScopePolicy(mode="optIn"),
        resolution=kmultiarch.ResolutionPolicy(fallback_platforms=(AMD64,)),
        failure_policy="Fail",
    )
    parsed = parse_policy_text(
        _spec(
            "platforms: [linux/arm64]\ntolerations: {}\nmode: optIn\n"
            "fallbackPlatforms: [linux/amd64]\nfailurePolicy: Fail\n"
        ),
        "p.yaml",
    )
    assert parsed == dataclasses.replace(policy, source="p.yaml")
