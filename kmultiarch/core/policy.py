"""The MultiArchPolicy model: defaults, validation and loading.

A policy is a Kubernetes-style object (``apiVersion: kmultiarch.dev/v1alpha1``,
``kind: MultiArchPolicy``) so that the same file serves as CLI configuration, kustomize
transformer config and KRM functionConfig. Validation names the file and the key path of
every problem; unknown keys are errors (a misspelt key must not silently do nothing).
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

from kmultiarch.core.lock import ImageLock, LockFileError, lock_from_object
from kmultiarch.core.operators import (
    CATALOGUE,
    ImageSource,
    OperatorKind,
    Placement,
    catalogue_by_kind,
)
from kmultiarch.core.patch import pointer_tokens
from kmultiarch.core.platform import Platform
from kmultiarch.core.reference import canonical_registry
from kmultiarch.core.scope import LabelSelector, parse_label_selector
from kmultiarch.errors import InvalidPlatformError, PolicyError

API_VERSION = "kmultiarch.dev/v1alpha1"
KIND = "MultiArchPolicy"
CONFIG_ENV = "KMULTIARCH_CONFIG"

NodeAffinityMode = Literal["required", "preferred", "none"]
FailurePolicy = Literal["Ignore", "Fail"]
NODE_AFFINITY_MODES: tuple[NodeAffinityMode, ...] = ("required", "preferred", "none")
FAILURE_POLICIES: tuple[FailurePolicy, ...] = ("Ignore", "Fail")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


#: A day: how long a cached tag answer may serve while its registry cannot be asked.
DEFAULT_STALE_IF_ERROR = 24 * 3600.0


@dataclass(frozen=True)
class Toleration:
    """A pod toleration, as the policy asks for it to be added."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def to_manifest(self) -> dict[str, object]:
        """The toleration as it is written into a pod spec (Kubernetes field names)."""
        manifest: dict[str, object] = {}
        if self.key:
            manifest["key"] = self.key
        manifest["operator"] = self.operator
        if self.operator != "Exists":
            manifest["value"] = self.value
        if self.effect:
            manifest["effect"] = self.effect
        if self.toleration_seconds is not None:
            manifest["tolerationSeconds"] = self.toleration_seconds
        return manifest


@dataclass(frozen=True)
class RegistrySettings:
    """How to reach one registry host, as image references name it."""

    mirror: str | None = None
    insecure: bool | None = None
    ca: Path | None = None


@dataclass(frozen=True)
class Override:
    """Platforms declared for images matching a glob, instead of looked up."""

    image: str
    platforms: frozenset[Platform]

    def matches(self, normalised_reference: str) -> bool:
        return fnmatch.fnmatchcase(normalised_reference, self.image)


@dataclass(frozen=True)
class Exclusions:
    namespaces: frozenset[str] = frozenset()  # names or shell-style globs (kube-*)
    kinds: frozenset[str] = frozenset()
    #: Evaluated on the Namespace documents of the stream.
    namespace_selector: LabelSelector | None = None


Mode = Literal["optOut", "optIn"]
VerifyMode = Literal["off", "warn", "enforce"]
VERIFY_MODES: tuple[VerifyMode, ...] = ("off", "warn", "enforce")


@dataclass(frozen=True)
class VerifySettings:
    """``spec.verify``: whether the binaries an image starts are checked against the platforms
    its registry claims (``kmultiarch verify``, in the pipeline), and the bounds of the check
    per platform manifest. ``warn``: a mismatch is a ``platform-mismatch`` warning; ``enforce``:
    the platform is dropped from the image's platforms before the decision, and the finding is
    an error under ``failurePolicy: Fail``."""

    mode: VerifyMode = "off"
    max_bytes: int = 64 * 1024 * 1024
    max_expanded_bytes: int = 1024 * 1024 * 1024
    deadline: float = 30.0


MODES: tuple[Mode, ...] = ("optOut", "optIn")


@dataclass(frozen=True)
class Conditions:
    """Labels and annotations a pod (or its namespace) must carry: each map matches when every
    key is there with the value given (``"*"``: with any value)."""

    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)

    def matching(
        self,
        namespace_labels: Mapping[str, object],
        pod_labels: Mapping[str, object],
        pod_annotations: Mapping[str, object],
    ) -> bool:
        """Whether any of the maps given matches (as an injector acts on the namespace's label
        or the pod's)."""
        return any(
            wanted and all(_holds(found, key, value) for key, value in wanted.items())
            for wanted, found in (
                (self.namespace_labels, namespace_labels),
                (self.pod_labels, pod_labels),
                (self.pod_annotations, pod_annotations),
            )
        )

    def __bool__(self) -> bool:
        return bool(self.namespace_labels or self.pod_labels or self.pod_annotations)


def _holds(found: Mapping[str, object], key: str, value: str) -> bool:
    return key in found and (value == "*" or str(found[key]) == value)


@dataclass(frozen=True)
class Injection:
    """Containers an admission webhook injects into the pods it matches (Istio's proxy, Linkerd,
    OpenTelemetry auto-instrumentation, Vault agent): their images are judged with the pod's
    own. It applies when any condition of ``when`` matches (none given: every pod) and none
    of ``unless`` does."""

    name: str
    images: tuple[str, ...]
    when: Conditions = Conditions()
    unless: Conditions = Conditions()

    def applies(
        self,
        namespace_labels: Mapping[str, object],
        pod_labels: Mapping[str, object],
        pod_annotations: Mapping[str, object],
    ) -> bool:
        found = (namespace_labels, pod_labels, pod_annotations)
        return (not self.when or self.when.matching(*found)) and not (
            self.unless and self.unless.matching(*found)
        )


ARM64_TAINT_TOLERATION = Toleration(
    key="kubernetes.io/arch", operator="Equal", value="arm64", effect="NoSchedule"
)
DEFAULT_PLATFORMS = (Platform("linux", "amd64"), Platform("linux", "arm64"))


@dataclass(frozen=True)
class Policy:
    """Everything a run decides by. ``Policy()`` is the default: a GKE-style tainted cluster."""

    platforms: tuple[Platform, ...] = DEFAULT_PLATFORMS
    tolerations: Mapping[Platform, tuple[Toleration, ...]] = field(
        default_factory=lambda: {Platform("linux", "arm64"): (ARM64_TAINT_TOLERATION,)}
    )
    node_affinity: NodeAffinityMode = "required"
    failure_policy: FailurePolicy = "Ignore"
    overrides: tuple[Override, ...] = ()
    exclude: Exclusions = Exclusions()
    registries: Mapping[str, RegistrySettings] = field(default_factory=dict)
    lock: Path | None = None
    #: A lock written out in the policy itself (``spec.lock: {apiVersion, kind: ImageLock,
    #: images}``): for runners that give a function no files, such as a Kptfile pipeline.
    embedded_lock: ImageLock | None = None
    #: Seconds a cached tag answer may still serve when revalidating it fails (HTTP's
    #: stale-if-error, for tags); 0: never.
    stale_if_error: float = DEFAULT_STALE_IF_ERROR
    #: spec.cache: a shared cache level (URL, and a CA for rediss://); the options win.
    cache_url: str | None = None
    cache_ca: Path | None = None
    #: spec.cache.keyFile / key: what signs the shared level's entries (with its URL only).
    cache_key_file: Path | None = None
    cache_key: str | None = field(default=None, repr=False)
    #: spec.podSpecs: where kinds kmultiarch does not know (or knows, extended) place their
    #: pods, in the form of the operators' catalogue.
    pod_specs: tuple[OperatorKind, ...] = ()
    annotate: bool = False
    fallback_platforms: tuple[Platform, ...] = ()
    #: optIn: only pods annotated kmultiarch.dev/enabled: "true" (on the workload, its pod
    #: template or its Namespace) are touched.
    mode: Mode = "optOut"
    #: Platform -> weight (1-100) of a preferred node affinity term for pods that run on it
    #: and elsewhere.
    preferences: Mapping[Platform, int] = field(default_factory=dict)
    #: Node labels (beyond kubernetes.io/os and arch) that the nodes of a platform carry and
    #: others do not: ``platforms: [{platform: linux/arm/v7, nodeSelector: {...}}]``. They tell
    #: apart platforms the kubelet labels alike (arm variants).
    node_selectors: Mapping[Platform, Mapping[str, str]] = field(default_factory=dict)
    verify: VerifySettings = VerifySettings()
    #: spec.injections: sidecars admission webhooks inject, judged with the pods they match.
    injections: tuple[Injection, ...] = ()
    #: spec.namespaceLabels: the labels of namespaces the stream does not carry (a Namespace
    #: document of the stream wins).
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    source: str = "(defaults)"

    @functools.cached_property
    def operators(self) -> Mapping[tuple[str, str], OperatorKind]:
        """The operators' kinds of the built-in catalogue with ``spec.podSpecs`` merged in (an
        entry for a built-in kind extends it), by (API group, kind)."""
        return catalogue_by_kind((*CATALOGUE, *self.pod_specs))

    def override_for(self, normalised_reference: str) -> Override | None:
        for override in self.overrides:
            if override.matches(normalised_reference):
                return override
        return None

    def registry_settings(self, registry: str) -> RegistrySettings:
        return self.registries.get(registry, RegistrySettings())


def policy_from_object(document: object, source: str, *, base_dir: Path | None = None) -> Policy:
    """Validate a MultiArchPolicy object (already parsed) and build the Policy. Relative paths
    in it are relative to ``base_dir``, else to the directory of the file ``source`` names."""
    if not isinstance(document, Mapping):
        raise PolicyError(f"{source}: expected a MultiArchPolicy object (a YAML mapping)")
    _check_keys(document, {"apiVersion", "kind", "metadata", "spec"}, "", source)
    if document.get("apiVersion") != API_VERSION or document.get("kind") != KIND:
        raise PolicyError(
            f"{source}: expected apiVersion: {API_VERSION} and kind: {KIND}, got "
            f"apiVersion: {document.get('apiVersion')!r}, kind: {document.get('kind')!r}"
        )
    spec = document.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise PolicyError(f"{source}: spec: expected a mapping")
    return policy_from_spec(spec, source, base_dir=base_dir)


SPEC_KEYS = frozenset(
    {
        "platforms",
        "tolerations",
        "nodeAffinity",
        "failurePolicy",
        "overrides",
        "exclude",
        "registries",
        "lock",
        "podSpecs",
        "annotate",
        "fallbackPlatforms",
        "mode",
        "preferences",
        "staleIfError",
        "cache",
        "verify",
        "injections",
        "namespaceLabels",
    }
)


def policy_from_spec(
    spec: Mapping[str, object], source: str, *, base_dir: Path | None = None
) -> Policy:
    _check_keys(spec, SPEC_KEYS, "spec", source)
    defaults = Policy()
    platforms = defaults.platforms
    node_selectors: dict[Platform, dict[str, str]] = {}
    if "platforms" in spec:
        platforms, node_selectors = _cluster_platforms(spec["platforms"], source)
        if not platforms:
            raise PolicyError(f"{source}: spec.platforms: list at least one node platform")
    tolerations = defaults.tolerations
    if "tolerations" in spec:
        tolerations = _tolerations(spec["tolerations"], platforms, source)
    node_affinity = _choice(
        spec, "nodeAffinity", NODE_AFFINITY_MODES, defaults.node_affinity, source
    )
    failure_policy = _choice(
        spec, "failurePolicy", FAILURE_POLICIES, defaults.failure_policy, source
    )
    lock, embedded_lock = spec.get("lock"), None
    if isinstance(lock, Mapping):
        try:
            embedded_lock = lock_from_object(lock, f"{source}: spec.lock")
        except LockFileError as exc:
            raise PolicyError(str(exc)) from exc
        lock = None
    elif lock is not None and not isinstance(lock, str):
        raise PolicyError(
            f"{source}: spec.lock: expected a file path string, or a lock file's content "
            "(apiVersion, kind: ImageLock, images)"
        )
    cache = spec.get("cache") or {}
    if not isinstance(cache, Mapping):
        raise PolicyError(
            f"{source}: spec.cache: expected a mapping with url (and ca, keyFile or key)"
        )
    _check_keys(cache, {"url", "ca", "keyFile", "key"}, "spec.cache", source)
    cache_url, cache_ca = cache.get("url"), cache.get("ca")
    cache_key_file, cache_key = cache.get("keyFile"), cache.get("key")
    if cache_key_file is not None and (not isinstance(cache_key_file, str) or not cache_key_file):
        raise PolicyError(f"{source}: spec.cache.keyFile: expected the path of a file")
    if cache_key is not None and (not isinstance(cache_key, str) or len(cache_key.strip()) < 16):
        # The message never quotes the value: it is a secret.
        raise PolicyError(
            f"{source}: spec.cache.key: expected a string of at least 16 characters "
            "(better: keyFile, a file kept out of the repository)"
        )
    if cache_key_file is not None and cache_key is not None:
        raise PolicyError(f"{source}: spec.cache: give keyFile or key, not both")
    if cache_url is not None and (
        not isinstance(cache_url, str)
        or not cache_url.startswith(("redis://", "rediss://", "unix://"))
    ):
        raise PolicyError(
            f"{source}: spec.cache.url: expected a redis://, rediss:// or unix:// URL"
        )
    if cache_ca is not None and not isinstance(cache_ca, str):
        raise PolicyError(f"{source}: spec.cache.ca: expected a path to a PEM CA bundle")
    stale_if_error = spec.get("staleIfError", DEFAULT_STALE_IF_ERROR)
    if (
        isinstance(stale_if_error, bool)
        or not isinstance(stale_if_error, int | float)
        or stale_if_error < 0
    ):
        raise PolicyError(
            f"{source}: spec.staleIfError: expected seconds (a number >= 0; 0 disables)"
        )
    return Policy(
        platforms=platforms,
        tolerations=tolerations,
        node_affinity=cast(NodeAffinityMode, node_affinity),
        failure_policy=cast(FailurePolicy, failure_policy),
        overrides=_overrides(spec.get("overrides"), source),
        exclude=_exclusions(spec.get("exclude"), source),
        registries=_registries(spec.get("registries"), source, base_dir),
        lock=_relative_to(source, lock, base_dir) if lock else None,
        embedded_lock=embedded_lock,
        stale_if_error=float(stale_if_error),
        cache_url=cache_url,
        cache_ca=_relative_to(source, cache_ca, base_dir) if cache_ca else None,
        cache_key_file=_relative_to(source, cache_key_file, base_dir) if cache_key_file else None,
        cache_key=cache_key,
        pod_specs=_pod_specs(spec.get("podSpecs"), source),
        annotate=_flag(spec, "annotate", source),
        mode=cast(Mode, _choice(spec, "mode", MODES, "optOut", source)),
        preferences=_preferences(spec.get("preferences"), platforms, source),
        node_selectors=node_selectors,
        verify=_verify(spec.get("verify"), source),
        injections=_injections(spec.get("injections"), source),
        namespace_labels=_namespace_labels(spec.get("namespaceLabels"), source),
        fallback_platforms=tuple(
            dict.fromkeys(
                _platform_list(
                    spec.get("fallbackPlatforms") or [], "spec.fallbackPlatforms", source
                )
            )
        ),
        source=source,
    )


def _injections(value: object, source: str) -> tuple[Injection, ...]:
    injections = []
    for position, item in enumerate(_listed(value, "spec.injections", source)):
        where = f"spec.injections[{position}]"
        if not isinstance(item, Mapping):
            raise PolicyError(f"{source}: {where}: expected a mapping with name, images, when")
        _check_keys(item, {"name", "images", "when", "unless"}, where, source)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise PolicyError(f"{source}: {where}.name: expected a non-empty string")
        images = _image_list(item.get("images"), f"{where}.images", source)
        if not images:
            raise PolicyError(f"{source}: {where}.images: list the images it injects")
        injections.append(
            Injection(
                name,
                images,
                _conditions(item.get("when"), f"{where}.when", source),
                _conditions(item.get("unless"), f"{where}.unless", source),
            )
        )
    return tuple(injections)


def _conditions(value: object, where: str, source: str) -> Conditions:
    if value is None:
        return Conditions()
    if not isinstance(value, Mapping):
        raise PolicyError(
            f"{source}: {where}: expected namespaceLabels, podLabels and/or podAnnotations"
        )
    _check_keys(value, {"namespaceLabels", "podLabels", "podAnnotations"}, where, source)
    maps = [
        _string_map(value.get(key), f"{where}.{key}", source)
        for key in ("namespaceLabels", "podLabels", "podAnnotations")
    ]
    return Conditions(*maps)


def _string_map(value: object, where: str, source: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise PolicyError(
            f'{source}: {where}: expected a mapping of strings (quote values like "true")'
        )
    return dict(value)


def _namespace_labels(value: object, source: str) -> dict[str, Mapping[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(
            f"{source}: spec.namespaceLabels: expected a mapping of namespace -> labels"
        )
    return {
        str(name): _string_map(labels, f"spec.namespaceLabels.{name}", source)
        for name, labels in value.items()
    }


def _verify(value: object, source: str) -> VerifySettings:
    if value is None:
        return VerifySettings()
    if not isinstance(value, Mapping):
        raise PolicyError(
            f"{source}: spec.verify: expected a mapping like {{mode: warn}} (mode: off, warn "
            "or enforce; maxBytes, maxExpandedBytes, deadline)"
        )
    _check_keys(value, {"mode", "maxBytes", "maxExpandedBytes", "deadline"}, "spec.verify", source)
    defaults = VerifySettings()
    mode = value.get("mode", defaults.mode)
    if mode is False:
        mode = "off"  # YAML 1.1, as the policy is read, takes an unquoted off for false
    if mode not in VERIFY_MODES:
        raise PolicyError(
            f"{source}: spec.verify.mode: expected one of {', '.join(VERIFY_MODES)}, got {mode!r}"
        )
    numbers: dict[str, float] = {}
    for key, default in (
        ("maxBytes", defaults.max_bytes),
        ("maxExpandedBytes", defaults.max_expanded_bytes),
        ("deadline", defaults.deadline),
    ):
        number = value.get(key, default)
        if isinstance(number, bool) or not isinstance(number, int | float) or number <= 0:
            raise PolicyError(f"{source}: spec.verify.{key}: expected a number above 0")
        numbers[key] = number
    return VerifySettings(
        cast(VerifyMode, mode),
        int(numbers["maxBytes"]),
        int(numbers["maxExpandedBytes"]),
        float(numbers["deadline"]),
    )


def _relative_to(source: str, path: str, base_dir: Path | None = None) -> Path:
    """Paths in a policy file are relative to the file, as kustomize does."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return candidate
    if base_dir is not None:
        return base_dir.resolve() / candidate
    if source.startswith("("):
        return candidate
    return Path(source).resolve().parent / candidate


def _check_keys(
    mapping: Mapping[str, object], allowed: frozenset[str] | set[str], where: str, source: str
) -> None:
    for key in mapping:
        if key not in allowed:
            location = f"{where}.{key}" if where else str(key)
            known = ", ".join(sorted(allowed))
            raise PolicyError(f"{source}: {location}: unknown key (known keys: {known})")


def _choice(
    spec: Mapping[str, object], key: str, allowed: tuple[str, ...], default: str, source: str
) -> str:
    value = spec.get(key, default)
    if value not in allowed:
        raise PolicyError(
            f"{source}: spec.{key}: expected one of {', '.join(allowed)}, got {value!r}"
        )
    return str(value)


def _platform_list(value: object, where: str, source: str) -> list[Platform]:
    if isinstance(value, str):
        value = [item for item in (part.strip() for part in value.split(",")) if item]
    if not isinstance(value, list):
        raise PolicyError(f"{source}: {where}: expected a list of platforms like linux/arm64")
    platforms = []
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise PolicyError(f"{source}: {where}[{position}]: expected a platform string")
        try:
            platforms.append(Platform.parse(item))
        except InvalidPlatformError as exc:
            raise PolicyError(f"{source}: {where}[{position}]: {exc}") from exc
    return platforms


def _cluster_platforms(
    value: object, source: str
) -> tuple[tuple[Platform, ...], dict[Platform, dict[str, str]]]:
    """``spec.platforms``: platform strings, or ``{platform, nodeSelector}`` mappings naming the
    node labels that tell a platform's nodes apart (arm variants share kubernetes.io/arch)."""
    where = "spec.platforms"
    if not isinstance(value, list):
        return tuple(dict.fromkeys(_platform_list(value, where, source))), {}
    platforms: list[Platform] = []
    selectors: dict[Platform, dict[str, str]] = {}
    for position, item in enumerate(value):
        if not isinstance(item, Mapping):
            platforms.append(_one_platform(item, f"{where}[{position}]", source))
            continue
        _check_keys(item, {"platform", "nodeSelector"}, f"{where}[{position}]", source)
        platform = _one_platform(item.get("platform"), f"{where}[{position}].platform", source)
        selector = item.get("nodeSelector") or {}
        if not isinstance(selector, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k for k, v in selector.items()
        ):
            raise PolicyError(
                f"{source}: {where}[{position}].nodeSelector: expected a mapping of node label "
                'to value, like {example.com/arm-variant: "v7"}'
            )
        platforms.append(platform)
        if selector:
            selectors[platform] = dict(selector)
    return tuple(dict.fromkeys(platforms)), selectors


def _one_platform(value: object, where: str, source: str) -> Platform:
    if not isinstance(value, str):
        raise PolicyError(
            f"{source}: {where}: expected a platform string, or {{platform, nodeSelector}}"
        )
    try:
        return Platform.parse(value)
    except InvalidPlatformError as exc:
        raise PolicyError(f"{source}: {where}: {exc}") from exc


def _tolerations(
    value: object, platforms: tuple[Platform, ...], source: str
) -> dict[Platform, tuple[Toleration, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(
            f"{source}: spec.tolerations: expected a mapping from platform to a list of tolerations"
        )
    result: dict[Platform, tuple[Toleration, ...]] = {}
    for platform_text, items in value.items():
        where = f"spec.tolerations.{platform_text}"
        try:
            platform = Platform.parse(str(platform_text))
        except InvalidPlatformError as exc:
            raise PolicyError(f"{source}: {where}: {exc}") from exc
        if platform not in platforms:
            raise PolicyError(
                f"{source}: {where}: {platform} is not in spec.platforms; list it there or remove "
                "these tolerations"
            )
        entries = [] if items is None else items
        if not isinstance(entries, list):
            raise PolicyError(f"{source}: {where}: expected a list of tolerations")
        result[platform] = tuple(
            _toleration(item, f"{where}[{position}]", source)
            for position, item in enumerate(entries)
        )
    return result


def _toleration(value: object, where: str, source: str) -> Toleration:
    if not isinstance(value, Mapping):
        raise PolicyError(f"{source}: {where}: expected a toleration mapping")
    _check_keys(value, {"key", "operator", "value", "effect", "tolerationSeconds"}, where, source)
    for key in ("key", "operator", "value", "effect"):
        if key in value and not isinstance(value[key], str):
            raise PolicyError(f"{source}: {where}.{key}: expected a string")
    operator = str(value.get("operator", "Equal"))
    if operator not in TOLERATION_OPERATORS:
        raise PolicyError(f"{source}: {where}.operator: expected Equal or Exists, got {operator!r}")
    effect = str(value.get("effect", ""))
    if effect and effect not in TAINT_EFFECTS:
        raise PolicyError(
            f"{source}: {where}.effect: expected one of {', '.join(TAINT_EFFECTS)}, got {effect!r}"
        )
    key, toleration_value = str(value.get("key", "")), str(value.get("value", ""))
    if operator == "Exists" and toleration_value:
        raise PolicyError(f"{source}: {where}.value: must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise PolicyError(f"{source}: {where}.key: an empty key needs operator Exists")
    seconds = value.get("tolerationSeconds")
    if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
        raise PolicyError(f"{source}: {where}.tolerationSeconds: expected an integer")
    if seconds is not None and effect != "NoExecute":
        raise PolicyError(f"{source}: {where}.tolerationSeconds: only valid with effect NoExecute")
    return Toleration(key, operator, toleration_value, effect, seconds)


def _overrides(value: object, source: str) -> tuple[Override, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PolicyError(f"{source}: spec.overrides: expected a list of {{image, platforms}}")
    overrides = []
    for position, item in enumerate(value):
        where = f"spec.overrides[{position}]"
        if not isinstance(item, Mapping):
            raise PolicyError(f"{source}: {where}: expected a mapping with image and platforms")
        _check_keys(item, {"image", "platforms"}, where, source)
        image = item.get("image")
        if not isinstance(image, str) or not image:
            raise PolicyError(f"{source}: {where}.image: expected a glob string")
        platforms = _platform_list(item.get("platforms"), f"{where}.platforms", source)
        overrides.append(Override(_pattern_with_canonical_host(image), frozenset(platforms)))
    return tuple(overrides)


def _pattern_with_canonical_host(pattern: str) -> str:
    """An image glob whose registry host is spelt as references normalise it (lower case,
    Docker Hub's aliases as docker.io), so that it matches them."""
    first, slash, rest = pattern.partition("/")
    if slash and (any(c in first for c in ".:") or first.lower() == "localhost"):
        return f"{canonical_registry(first)}/{rest}"
    return pattern


def _preferences(
    value: object, platforms: tuple[Platform, ...], source: str
) -> dict[Platform, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(
            f"{source}: spec.preferences: expected a mapping from platform to weight, like "
            "{linux/arm64: 80}"
        )
    preferences: dict[Platform, int] = {}
    for platform_text, weight in value.items():
        where = f"spec.preferences.{platform_text}"
        try:
            platform = Platform.parse(str(platform_text))
        except InvalidPlatformError as exc:
            raise PolicyError(f"{source}: {where}: {exc}") from exc
        if platform not in platforms:
            raise PolicyError(f"{source}: {where}: {platform} is not in spec.platforms")
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise PolicyError(
                f"{source}: {where}: expected a weight from 1 to 100 (the scheduler's range), "
                f"got {weight!r}"
            )
        preferences[platform] = weight
    return preferences


def _flag(spec: Mapping[str, object], key: str, source: str, where: str = "spec") -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise PolicyError(f"{source}: {where}.{key}: expected true or false, got {value!r}")
    return value


def _pod_specs(value: object, source: str) -> tuple[OperatorKind, ...]:
    """``spec.podSpecs``: per kind, pod spec paths (``path``, ``*`` for every item) or
    placements (objects holding the scheduling fields, with the pointers of their images),
    images the operator adds and images it runs by default."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PolicyError(
            f"{source}: spec.podSpecs: expected a list of {{apiVersion, kind, path}} or "
            "{apiVersion, kind, placements}"
        )
    entries = []
    for position, item in enumerate(value):
        where = f"spec.podSpecs[{position}]"
        if not isinstance(item, Mapping):
            raise PolicyError(f"{source}: {where}: expected a mapping with apiVersion, kind, path")
        _check_keys(
            item,
            {"apiVersion", "kind", "path", "placements", "operatorImages", "defaultImages"},
            where,
            source,
        )
        for key in ("apiVersion", "kind"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise PolicyError(f"{source}: {where}.{key}: expected a non-empty string")
        placements: list[Placement] = []
        if item.get("path") is not None:
            placements.append(
                Placement(_pointer(item["path"], f"{where}.path", source), pod_spec=True)
            )
        for index, raw in enumerate(_listed(item.get("placements"), f"{where}.placements", source)):
            placements.append(_placement(raw, f"{where}.placements[{index}]", source))
        if not placements and not item.get("defaultImages") and not item.get("operatorImages"):
            raise PolicyError(
                f"{source}: {where}: give path (a pod spec, like /spec/template/spec) or "
                "placements (objects holding affinity, tolerations and nodeSelector)"
            )
        api_version = str(item["apiVersion"])
        entries.append(
            OperatorKind(
                api_version.rpartition("/")[0] if "/" in api_version else "",
                str(item["kind"]),
                tuple(placements),
                _image_list(item.get("operatorImages"), f"{where}.operatorImages", source),
                _image_list(item.get("defaultImages"), f"{where}.defaultImages", source),
                cites=f"{source}: {where}",
            )
        )
    return tuple(entries)


def _listed(value: object, where: str, source: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PolicyError(f"{source}: {where}: expected a list")
    return value


def _pointer(value: object, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, str) or not value:
        raise PolicyError(f"{source}: {where}: expected a JSON pointer like /spec/template/spec")
    try:
        tokens = pointer_tokens(value)
    except ValueError as exc:
        raise PolicyError(f"{source}: {where}: {exc} (e.g. /spec/template/spec)") from exc
    if not tokens or not all(tokens):
        raise PolicyError(
            f"{source}: {where}: expected a JSON pointer to an object, like /spec/template/spec"
        )
    return tokens


def _placement(value: object, where: str, source: str) -> Placement:
    if not isinstance(value, Mapping):
        raise PolicyError(f"{source}: {where}: expected a mapping with path and images")
    _check_keys(value, {"path", "images", "podSpec", "creates", "shape"}, where, source)
    path = _pointer(value.get("path"), f"{where}.path", source)
    images: list[ImageSource] = []
    for index, element in enumerate(_listed(value.get("images"), f"{where}.images", source)):
        spot = f"{where}.images[{index}]"
        if isinstance(element, str):
            images.append(ImageSource((_pointer(element, spot, source),), required=False))
        elif isinstance(element, list) and element:
            images.append(
                ImageSource(
                    tuple(
                        _pointer(pointer, f"{spot}[{n}]", source)
                        for n, pointer in enumerate(element)
                    )
                )
            )
        else:
            raise PolicyError(
                f"{source}: {spot}: expected a pointer (every match is an image) or a list of "
                "pointers (alternatives: the first that exists wins)"
            )
    creates = value.get("creates", 0)
    if isinstance(creates, bool) or not isinstance(creates, int) or not 0 <= creates <= len(path):
        raise PolicyError(
            f"{source}: {where}.creates: expected how many of the path's last tokens kmultiarch "
            f"may create (0 to {len(path)})"
        )
    shape = value.get("shape", "affinity")
    if shape not in ("affinity", "node-affinity"):
        raise PolicyError(f"{source}: {where}.shape: expected affinity or node-affinity")
    return Placement(
        path,
        tuple(images),
        creates=creates,
        pod_spec=_flag(value, "podSpec", source, where),
        shape=cast(Literal["affinity", "node-affinity"], shape),
    )


def _image_list(value: object, where: str, source: str) -> tuple[str, ...]:
    items = _listed(value, where, source)
    if not all(isinstance(item, str) and item for item in items):
        raise PolicyError(f"{source}: {where}: expected a list of image references")
    return tuple(str(item) for item in items)


def _exclusions(value: object, source: str) -> Exclusions:
    if value is None:
        return Exclusions()
    if not isinstance(value, Mapping):
        raise PolicyError(f"{source}: spec.exclude: expected a mapping with namespaces and kinds")
    _check_keys(value, {"namespaces", "kinds", "namespaceSelector"}, "spec.exclude", source)
    lists = {}
    for key in ("namespaces", "kinds"):
        items = value.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise PolicyError(f"{source}: spec.exclude.{key}: expected a list of strings")
        lists[key] = frozenset(items)
    selector = value.get("namespaceSelector")
    return Exclusions(
        lists["namespaces"],
        lists["kinds"],
        parse_label_selector(selector, "spec.exclude.namespaceSelector", source)
        if selector is not None
        else None,
    )


def _registries(
    value: object, source: str, base_dir: Path | None = None
) -> dict[str, RegistrySettings]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(f"{source}: spec.registries: expected a mapping from registry host")
    registries = {}
    for host, settings in value.items():
        where = f"spec.registries.{host}"
        if not isinstance(host, str) or not host or "/" in host:
            raise PolicyError(
                f"{source}: {where}: expected a registry host like registry.internal:5000"
            )
        entry = {} if settings is None else settings
        if not isinstance(entry, Mapping):
            raise PolicyError(f"{source}: {where}: expected a mapping")
        _check_keys(entry, {"mirror", "insecure", "ca"}, where, source)
        mirror = entry.get("mirror")
        if mirror is not None:
            try:
                parts = urlsplit(mirror) if isinstance(mirror, str) else None
            except ValueError:  # e.g. an unclosed IPv6 bracket
                parts = None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise PolicyError(
                    f"{source}: {where}.mirror: expected an http(s) URL like https://mirror.internal"
                )
        insecure = entry.get("insecure")
        if insecure is not None and not isinstance(insecure, bool):
            raise PolicyError(f"{source}: {where}.insecure: expected true or false")
        ca = entry.get("ca")
        if ca is not None and not isinstance(ca, str):
            raise PolicyError(f"{source}: {where}.ca: expected a path to a PEM CA bundle")
        ca_path = _relative_to(source, ca, base_dir) if ca else None
        if ca_path is not None and not ca_path.is_file():
            raise PolicyError(f"{source}: {where}.ca: CA bundle {ca_path} not found")
        registries[canonical_registry(host)] = RegistrySettings(
            mirror.rstrip("/") if isinstance(mirror, str) else None, insecure, ca_path
        )
    return registries
