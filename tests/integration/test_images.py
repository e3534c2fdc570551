"""kmultiarch's container images (``Containerfile``, built by ``scripts/build-images``), run for
real with podman and runc: the KRM function image as kpt runs it (``kpt fn eval --image``, a
Kptfile pipeline's ``image:``) and as kustomize runs it (a transformer annotated
``container: {image: ...}``; kustomize calls ``docker run``, here a ``docker`` that runs
podman), with the loopback registry reachable (host network) and without any network (a lock
file, offline); and the Argo CD sidecar image running its own plugin.yaml's ``generate`` on
the example applications.

The images must be built before the tests run (README.md's test command does it): a missing
image, or one built from other sources than this checkout's, fails here with the command to
run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import run_kmultiarch
from support.registry import RegistryServer
from support.tools import (
    EXAMPLES,
    PLUGIN,
    REPO,
    Ran,
    assert_expected,
    helm_binary,
    kpt_binary,
    kubectl_binary,
    load_all,
    mirrored_policy,
    missing,
    run_tool,
    succeeded,
    tool_env,
    write_mirrored_policy,
)

from kmultiarch.version import __version__

CONTAINERS_CONF = Path(__file__).resolve().parents[1] / "support" / "containers.conf"
BUILD_IMAGES = REPO / "scripts" / "build-images"
CONTEXT = REPO / "build" / "images"
FN_IMAGE = os.environ.get("KMULTIARCH_FN_IMAGE", "localhost/kmultiarch:dev")
CMP_IMAGE = os.environ.get("KMULTIARCH_CMP_IMAGE", "localhost/kmultiarch-argocd-cmp:dev")
PLACEHOLDER_IMAGE = "ghcr.io/your-org/kmultiarch:0.1.0"
EXAMPLE = EXAMPLES / "container-fn"
HELM_CHART = EXAMPLES / "helm-chart"
LOCK_IN_CONTAINER = "/kmultiarch/kmultiarch.lock"
BUILD_HINT = (
    "export CONTAINERS_CONF=$PWD/tests/support/containers.conf; scripts/build-images --debian-base"
)


@dataclass(frozen=True)
class Images:
    podman: Path
    env: dict[str, str]

    def run(self, args: list[str], **kwargs: Any) -> Ran:
        return run_tool([self.podman, *args], env=self.env, **kwargs)

    def inspect(self, image: str) -> dict[str, Any]:
        found = self.run(["image", "inspect", image])
        assert found.returncode == 0, found.stderr
        inspected: dict[str, Any] = json.loads(found.stdout)[0]
        return inspected


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    """podman with this project's containers.conf, and both images, built from these sources."""
    podman = shutil.which("podman")
    if podman is None:
        missing("podman is not installed: run scripts/install-tools")
    assert podman is not None
    home = tmp_path_factory.mktemp("podman-home")
    env = tool_env(home, {"CONTAINERS_CONF": str(CONTAINERS_CONF)})
    found = Images(Path(podman), env)
    digest = subprocess.run(
        [str(BUILD_IMAGES), "--print-source-digest"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for image in (FN_IMAGE, CMP_IMAGE):
        exists = found.run(["image", "exists", image])
        if exists.returncode != 0:
            pytest.fail(f"{image} is not built: {BUILD_HINT}")
        labels = found.inspect(image)["Config"]["Labels"]
        if labels.get("dev.kmultiarch.source-digest") != digest:
            pytest.fail(f"{image} was built from other sources than this checkout's: {BUILD_HINT}")
    return found


def by_identity(documents: list[Any]) -> dict[tuple[str, str], Any]:
    return {(document["kind"], document["metadata"]["name"]): document for document in documents}


def copy_example(tmp_path: Path, registry: SeededRegistry) -> Path:
    """examples/container-fn in a scratch directory: the function image is the one built here,
    registry.test is mirrored to the test registry, expected.yaml is left out (kpt would read
    it as part of the package)."""
    target = tmp_path / "container-fn"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("expected.yaml", "README.md"))
    for name in ("multiarch.yaml", "Kptfile"):
        path = target / name
        text = path.read_text()
        assert PLACEHOLDER_IMAGE in text, name
        path.write_text(text.replace(PLACEHOLDER_IMAGE, FN_IMAGE))
    # The example's own lock (spec.lock) answers offline; these tests reach the registry.
    policy = yaml.safe_load((target / "multiarch.yaml").read_text())
    del policy["spec"]["lock"]
    (target / "multiarch.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    write_mirrored_policy(target / "multiarch.yaml", registry.url, source=target / "multiarch.yaml")
    # Readable by the user the runners make the function run as (nobody).
    target.chmod(0o755)
    return target


def lock_for(config: Path, manifests: Path, tmp_path: Path) -> Path:
    """``kmultiarch lock`` of ``manifests`` under ``config``, made on the host with the
    registry, readable by the container's user."""
    lock = tmp_path / "kmultiarch.lock"
    command = ["lock", "--config", str(config), str(manifests), "-o", str(lock)]
    succeeded(run_kmultiarch(command, env=tool_env(tmp_path)))
    lock.chmod(0o644)
    return lock


def package_lock(package: Path, tmp_path: Path) -> Path:
    return lock_for(package / "multiarch.yaml", package / "workloads.yaml", tmp_path)


def assert_renders_the_example(output: str) -> None:
    """A kustomize render (its own key order and document order) holds the example's expected
    workloads."""
    rendered = by_identity(load_all(output))
    assert rendered == by_identity(load_all((EXAMPLE / "expected.yaml").read_text()))


def function_settings(package: Path, **container: Any) -> None:
    """Rewrite the transformer's ``config.kubernetes.io/function`` container settings."""
    path = package / "multiarch.yaml"
    policy = yaml.safe_load(path.read_text())
    annotations = policy["metadata"]["annotations"]
    function = yaml.safe_load(annotations["config.kubernetes.io/function"])
    function["container"].update(container)
    annotations["config.kubernetes.io/function"] = yaml.safe_dump(function)
    path.write_text(yaml.safe_dump(policy, sort_keys=False))


def kpt_env(images: Images) -> dict[str, str]:
    return {**images.env, "KPT_FN_RUNTIME": "podman"}


def kpt_eval(images: Images, package: Path, *options: str) -> Ran:
    """``kpt fn eval`` of the function image on ``package``, its multiarch.yaml the config."""
    command = [kpt_binary(), "fn", "eval", package, "--image", FN_IMAGE]
    command += ["--image-pull-policy", "never", "--fn-config", package / "multiarch.yaml"]
    return run_tool([*command, *options], env=kpt_env(images))


# --- the KRM function image ---------------------------------------------------------------


def test_function_image_is_small_non_root_and_labelled(images: Images) -> None:
    config = images.inspect(FN_IMAGE)["Config"]
    assert config["Entrypoint"] == ["kmultiarch"]
    assert config["Cmd"] == ["fn"]
    assert config["User"] == "65532:65532"
    environment = dict(item.split("=", 1) for item in config["Env"])
    assert environment["KMULTIARCH_CACHE_DIR"].startswith("/tmp/")
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == __version__
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.created"].endswith("Z")
    assert labels["org.opencontainers.image.revision"]
    assert labels["org.opencontainers.image.base.name"]
    annotations = images.inspect(FN_IMAGE)["Annotations"]
    for key in ("source", "version", "revision", "created", "licenses"):
        name = f"org.opencontainers.image.{key}"
        assert annotations[name] == labels[name], name
    # No compilers and no pip: only the wheel and its dependencies in a virtualenv.
    shell = images.run(
        [
            "run",
            "--rm",
            "--network=none",
            "--entrypoint",
            "sh",
            FN_IMAGE,
            "-c",
            "id -u; kmultiarch --version; for tool in gcc cc make pip pip3; do "
            "command -v $tool; done; true",
        ]
    )
    assert succeeded(shell).split() == ["65532", "kmultiarch", __version__]
    # What kmultiarch adds to its base, whatever the base.
    base = images.inspect(labels["org.opencontainers.image.base.name"])
    added = images.inspect(FN_IMAGE)["Size"] - base["Size"]
    # 42 MB: the admission server's extra came into the image (issue 37: uvicorn, h11 and
    # prometheus-client, 1.35 MB of sources before their bytecode); it was under 40 MB before.
    assert 0 < added < 42_000_000, added


def test_function_image_is_one_image_per_platform_under_one_name(
    images: Images, tmp_path: Path
) -> None:
    """``--platform linux/amd64,linux/arm64`` makes the function image a manifest list; pushed to
    a real registry, kmultiarch itself reads its platforms, and the arm64 image runs (emulated,
    as nobody, with no network) and mutates a ResourceList like the amd64 one."""
    shown = images.run(["manifest", "inspect", FN_IMAGE])
    if shown.returncode != 0:
        missing(
            f"{FN_IMAGE} is one platform's image: scripts/build-images --platform "
            "linux/amd64,linux/arm64 builds both (qemu-user-static for the other machine's)"
        )
    manifests = json.loads(shown.stdout)["manifests"]
    assert sorted(
        f"{entry['platform']['os']}/{entry['platform']['architecture']}" for entry in manifests
    ) == ["linux/amd64", "linux/arm64"]

    with RegistryServer(tmp_path / "registry") as server:
        pushed = f"{server.host}/tools/kmultiarch:dev"
        succeeded(
            images.run(
                ["manifest", "push", "--all", "--tls-verify=false", FN_IMAGE, f"docker://{pushed}"],
                timeout=300,
            )
        )
        inspected = run_kmultiarch(["inspect", "-o", "json", pushed], env=tool_env(tmp_path))
        assert inspected.returncode == 0, inspected.stderr
        assert inspected.json()[0]["platforms"] == ["linux/amd64", "linux/arm64"]

    resource_list = yaml.safe_dump(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": load_all((EXAMPLE / "workloads.yaml").read_text()),
            "functionConfig": {
                "apiVersion": "kmultiarch.dev/v1alpha1",
                "kind": "MultiArchPolicy",
                "metadata": {"name": "offline"},
                "spec": {
                    "failurePolicy": "Fail",
                    "overrides": [
                        {
                            "image": "registry.test/multiarch-oci:1.0",
                            "platforms": ["linux/amd64", "linux/arm64"],
                        },
                        {
                            "image": "registry.test/single-docker-amd64:1.0",
                            "platforms": ["linux/amd64"],
                        },
                        {
                            "image": "registry.test/multiarch-docker:1.0",
                            "platforms": ["linux/amd64", "linux/arm64"],
                        },
                    ],
                },
            },
        }
    )
    outputs = {}
    for architecture in ("amd64", "arm64"):
        ran = images.run(
            [
                "run",
                "--rm",
                "-i",
                "--network=none",
                "--user=nobody",
                f"--platform=linux/{architecture}",
                f"{FN_IMAGE}-{architecture}",
            ],
            stdin=resource_list,
        )
        outputs[architecture] = yaml.safe_load(succeeded(ran))
    machine = images.run(
        [
            "run",
            "--rm",
            "--platform=linux/arm64",
            "--entrypoint",
            "uname",
            f"{FN_IMAGE}-arm64",
            "-m",
        ]
    )
    assert succeeded(machine).strip() == "aarch64"
    assert outputs["arm64"] == outputs["amd64"]
    assert by_identity(outputs["arm64"]["items"]) == by_identity(
        load_all((EXAMPLE / "expected.yaml").read_text())
    )


def test_function_image_builds_reproducibly(images: Images) -> None:
    """The same context, build arguments and timestamp give the same image, layer for layer,
    without any cache."""
    if not (CONTEXT / "Containerfile").is_file():
        pytest.fail(f"{CONTEXT} (the build context scripts/build-images keeps) is missing")
    labels = images.inspect(FN_IMAGE)["Config"]["Labels"]
    # Another checkout's build (sharing the container storage) leaves its own image and this
    # checkout's older context: rebuilding that context proves nothing either way.
    context_digest = (CONTEXT / "source-digest").read_text().strip()
    if context_digest != labels["dev.kmultiarch.source-digest"]:
        pytest.fail(f"{CONTEXT} is not the context {FN_IMAGE} was built from: {BUILD_HINT}")
    created = labels["org.opencontainers.image.created"]
    epoch = subprocess.run(
        ["date", "-u", "-d", created, "+%s"], capture_output=True, text=True, check=True
    ).stdout.strip()
    arguments = {
        "VERSION": labels["org.opencontainers.image.version"],
        "REVISION": labels["org.opencontainers.image.revision"],
        "CREATED": created,
        "SOURCE": labels["org.opencontainers.image.source"],
        "BASE_IMAGE": labels["org.opencontainers.image.base.name"],
    }
    rebuilt = "localhost/kmultiarch:reproducibility-test"
    command = ["build", "--no-cache", "--quiet", "--target", "kmultiarch", "--tag", rebuilt]
    for name, value in arguments.items():
        command += ["--build-arg", f"{name}={value}"]
    command += [
        *(
            f"--annotation=org.opencontainers.image.{key}="
            + labels[f"org.opencontainers.image.{key}"]
            for key in ("source", "version", "revision", "created", "licenses")
        ),
        "--label",
        f"dev.kmultiarch.source-digest={labels['dev.kmultiarch.source-digest']}",
        "--timestamp",
        epoch,
        "--file",
        str(CONTEXT / "Containerfile"),
        str(CONTEXT),
    ]
    try:
        succeeded(images.run(command, timeout=600))
        assert images.inspect(rebuilt)["Id"] == images.inspect(FN_IMAGE)["Id"]
    finally:
        images.run(["image", "rm", "--force", rebuilt])


def test_kpt_fn_eval_image_resolves_through_the_host_network(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    package = copy_example(tmp_path, registry)
    log = registry.mark()
    result = kpt_eval(images, package, "--network")
    succeeded(result)
    # Run as nobody, the function keeps its cache in /tmp without a word about it.
    assert "[warning]" not in result.stderr
    assert "kmultiarch: 2 pod specs, 2 changed" in result.stderr
    assert log.count("GET", "/manifests/") >= 3
    assert_expected((package / "workloads.yaml").read_text(), EXAMPLE / "expected.yaml")


def test_kpt_fn_eval_image_offline_with_a_mounted_lock(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    """kpt's default: no network at all (--network none). The lock, mounted read-only, answers
    every image; without it the function fails (failurePolicy: Fail) and changes nothing."""
    package = copy_example(tmp_path, registry)
    lock = package_lock(package, tmp_path)
    original = (package / "workloads.yaml").read_text()
    refused = kpt_eval(images, package, "--env", "KMULTIARCH_OFFLINE=1")
    assert refused.returncode != 0
    assert "--offline" in refused.stderr
    assert (package / "workloads.yaml").read_text() == original

    log = registry.mark()
    mounted = kpt_eval(
        images,
        package,
        "--env",
        "KMULTIARCH_OFFLINE=1",
        "--mount",
        f"type=bind,src={lock},dst={LOCK_IN_CONTAINER}",
        "--env",
        f"KMULTIARCH_LOCK={LOCK_IN_CONTAINER}",
    )
    succeeded(mounted)
    assert log.requests() == []
    assert (package / "workloads.yaml").read_text() == (EXAMPLE / "expected.yaml").read_text()


def test_kptfile_pipeline_with_the_image(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    kpt = kpt_binary()
    package = copy_example(tmp_path, registry)
    kptfile = yaml.safe_load((package / "Kptfile").read_text())
    assert kptfile["pipeline"]["mutators"] == [{"image": FN_IMAGE, "configPath": "multiarch.yaml"}]
    result = run_tool(
        [kpt, "fn", "render", "--allow-network", "--image-pull-policy", "never", package],
        env=kpt_env(images),
    )
    succeeded(result)
    assert (package / "workloads.yaml").read_text() == (EXAMPLE / "expected.yaml").read_text()


def test_kptfile_pipeline_offline_with_the_lock_in_the_policy(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    """A Kptfile pipeline can neither mount a file nor set a variable: the lock is written out
    in the policy (spec.lock), and kpt's default --network none is all the function needs."""
    kpt = kpt_binary()
    package = copy_example(tmp_path, registry)
    lock = package_lock(package, tmp_path)
    policy_path = package / "multiarch.yaml"
    policy = yaml.safe_load(policy_path.read_text())
    policy["spec"]["lock"] = yaml.safe_load(lock.read_text())
    policy_path.write_text(yaml.safe_dump(policy, sort_keys=False))
    log = registry.mark()
    result = run_tool(
        [kpt, "fn", "render", "--image-pull-policy", "never", package], env=kpt_env(images)
    )
    succeeded(result)
    assert log.requests() == []
    assert (package / "workloads.yaml").read_text() == (EXAMPLE / "expected.yaml").read_text()


def docker_on_path(images: Images, directory: Path) -> dict[str, str]:
    """kustomize runs container functions with ``docker run``: a ``docker`` that runs podman."""
    directory.mkdir()
    docker = directory / "docker"
    docker.write_text(f'#!/bin/sh\nexec "{images.podman}" "$@"\n')
    docker.chmod(0o755)
    return {**images.env, "PATH": f"{directory}:{images.env['PATH']}"}


def test_kustomize_container_function_resolves_with_network(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    package = copy_example(tmp_path, registry)
    env = docker_on_path(images, tmp_path / "docker-bin")
    kubectl = kubectl_binary()
    # network: true in the function's settings is not enough: kustomize also wants --network.
    refused = run_tool([kubectl, "kustomize", "--enable-alpha-plugins", package], env=env)
    assert refused.returncode != 0
    result = run_tool(
        [kubectl, "kustomize", "--enable-alpha-plugins", "--network", package], env=env
    )
    assert_renders_the_example(succeeded(result))


def test_kustomize_container_function_offline_with_a_mounted_lock(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    package = copy_example(tmp_path, registry)
    lock = package_lock(package, tmp_path)
    shutil.copy2(lock, package / "kmultiarch.lock")
    function_settings(
        package,
        network=False,
        envs=["KMULTIARCH_OFFLINE=1", f"KMULTIARCH_LOCK={LOCK_IN_CONTAINER}"],
        mounts=[{"type": "bind", "src": "./kmultiarch.lock", "dst": LOCK_IN_CONTAINER}],
    )
    env = docker_on_path(images, tmp_path / "docker-bin")
    log = registry.mark()
    result = run_tool([kubectl_binary(), "kustomize", "--enable-alpha-plugins", package], env=env)
    assert_renders_the_example(succeeded(result))
    assert log.requests() == []


# --- the Argo CD sidecar image --------------------------------------------------------------


def test_sidecar_image_holds_the_plugin_and_its_tools(images: Images) -> None:
    config = images.inspect(CMP_IMAGE)["Config"]
    assert config["User"] == "999:999"
    assert config["Entrypoint"] == ["/var/run/argocd/argocd-cmp-server"]
    assert config["Labels"]["org.opencontainers.image.version"] == __version__
    assert config["Labels"]["org.opencontainers.image.licenses"] == "Apache-2.0"
    shown = images.run(
        [
            "run",
            "--rm",
            "--network=none",
            "--entrypoint",
            "bash",
            CMP_IMAGE,
            "-c",
            "set -e; id -u; kmultiarch --version; helm version --short; kustomize version; "
            "cat /home/argocd/cmp-server/config/plugin.yaml",
        ]
    )
    output = succeeded(shown)
    lines = output.splitlines()
    assert lines[0] == "999"
    assert lines[1] == f"kmultiarch {__version__}"
    assert lines[2].startswith("v3.")
    assert "Kustomize" in output or lines[3].startswith("v5")
    assert output.endswith((PLUGIN / "argocd" / "plugin.yaml").read_text())


def plugin_in_image(images: Images) -> dict[str, Any]:
    shown = images.run(
        [
            "run",
            "--rm",
            "--network=none",
            "--entrypoint",
            "cat",
            CMP_IMAGE,
            "/home/argocd/cmp-server/config/plugin.yaml",
        ]
    )
    plugin: dict[str, Any] = yaml.safe_load(succeeded(shown))
    return plugin


def run_plugin_step(
    images: Images,
    step: str,
    app: Path,
    *,
    network: str,
    mounts: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Ran:
    """``step`` of the plugin.yaml inside the image, run as argocd-cmp-server runs it: its
    command and args, in the application's directory, with ARGOCD_APP_* set; the root file
    system read-only and an empty /tmp, as plugin/argocd/README.md has the sidecar."""
    spec = plugin_in_image(images)["spec"][step]
    command, *args = spec["command"]
    options = [
        "run",
        "--rm",
        f"--network={network}",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--volume",
        f"{app}:/app",
        "--workdir",
        "/app",
        "--entrypoint",
        command,
    ]
    for mount in mounts:
        options += ["--volume", mount]
    settings = {"ARGOCD_APP_NAME": "storefront", "ARGOCD_APP_NAMESPACE": "default", **(env or {})}
    for name, value in settings.items():
        options += ["--env", f"{name}={value}"]
    return images.run([*options, CMP_IMAGE, *args, *spec["args"]])


def test_sidecar_generates_a_kustomize_application(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    """kustomize build, then kmultiarch mutate with the application's .kmultiarch.yaml,
    asking the loopback registry (host network)."""
    app = tmp_path / "app"
    app.mkdir(mode=0o755)
    shutil.copy2(EXAMPLE / "workloads.yaml", app / "workloads.yaml")
    (app / "kustomization.yaml").write_text("resources:\n- workloads.yaml\n")
    policy = yaml.safe_load((EXAMPLE / "multiarch.yaml").read_text())
    del policy["metadata"]["annotations"]
    (app / ".kmultiarch.yaml").write_text(yaml.safe_dump(mirrored_policy(policy, registry.url)))
    succeeded(run_plugin_step(images, "init", app, network="none"))
    result = run_plugin_step(images, "generate", app, network="host")
    assert_renders_the_example(succeeded(result))


def test_sidecar_generates_a_helm_application_offline(
    images: Images, registry: SeededRegistry, tmp_path: Path
) -> None:
    """helm template, then kmultiarch mutate: with no network, from a mounted lock, exactly
    what examples/helm-chart says a `helm template | kmultiarch mutate` pipe gives."""
    app = tmp_path / "chart"
    shutil.copytree(HELM_CHART / "chart", app)
    app.chmod(0o755)
    write_mirrored_policy(app / ".kmultiarch.yaml", registry.url, source=HELM_CHART / "policy.yaml")
    env = tool_env(
        tmp_path,
        {
            "HELM_DATA_HOME": str(tmp_path / "helm" / "data"),
            "HELM_CONFIG_HOME": str(tmp_path / "helm" / "config"),
            "HELM_CACHE_HOME": str(tmp_path / "helm" / "cache"),
        },
    )
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(
        succeeded(run_tool([helm_binary(3), "template", "storefront", app], env=env))
    )
    lock = lock_for(app / ".kmultiarch.yaml", rendered, tmp_path)
    offline = {"KMULTIARCH_OFFLINE": "1", "KMULTIARCH_LOCK": LOCK_IN_CONTAINER}
    mounts = (f"{lock}:{LOCK_IN_CONTAINER}:ro",)
    succeeded(run_plugin_step(images, "init", app, network="none"))
    log = registry.mark()
    result = run_plugin_step(images, "generate", app, network="none", mounts=mounts, env=offline)
    assert succeeded(result) == (HELM_CHART / "expected-template-pipe.yaml").read_text()
    assert log.requests() == []
    # Without the lock, the same render fails (the policy's failurePolicy: Fail) and prints
    # nothing, so Argo CD keeps what it has instead of applying a partial render.
    failed = run_plugin_step(images, "generate", app, network="none", env=offline)
    assert failed.returncode != 0
    assert failed.stdout == ""
