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
from kmultiarch.core.schema import Where, check_keys
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
    where = Where(source, (), base_dir)
    if not isinstance(document, Mapping):
        raise where.error("expected a MultiArchPolicy object (a YAML mapping)")
    check_keys(document, {"apiVersion", "kind", "metadata", "spec"}, where)
    if document.get("apiVersion") != API_VERSION or document.get("kind") != KIND:
        raise where.error(
            f"expected apiVersion: {API_VERSION} and kind: {KIND}, got "
            f"apiVersion: {document.get('apiVersion')!r}, kind: {document.get('kind')!r}"
        )
    spec = document.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise (where / "spec").error("expected a mapping")
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
    root = Where(source, ("spec",), base_dir)
    check_keys(spec, SPEC_KEYS, root)
    defaults = Policy()
    platforms = defaults.platforms
    node_selectors: dict[Platform, dict[str, str]] = {}
    if "platforms" in spec:
        platforms, node_selectors = _cluster_platforms(spec["platforms"], root / "platforms")
    tolerations = defaults.tolerations
    if "tolerations" in spec:
        tolerations = _tolerations(spec["tolerations"], root / "tolerations", platforms)
    lock, embedded_lock = _lock(spec.get("lock"), root / "lock")
    cache_url, cache_ca, cache_key_file, cache_key = _cache(spec.get("cache"), root / "cache")
    return Policy(
        platforms=platforms,
        tolerations=tolerations,
        node_affinity=cast(
            NodeAffinityMode,
            _choice(
                spec.get("nodeAffinity", defaults.node_affinity),
                root / "nodeAffinity",
                NODE_AFFINITY_MODES,
            ),
        ),
        failure_policy=cast(
            FailurePolicy,
            _choice(
                spec.get("failurePolicy", defaults.failure_policy),
                root / "failurePolicy",
                FAILURE_POLICIES,
            ),
        ),
        overrides=_overrides(spec.get("overrides"), root / "overrides"),
        exclude=_exclusions(spec.get("exclude"), root / "exclude"),
        registries=_registries(spec.get("registries"), root / "registries"),
        lock=lock,
        embedded_lock=embedded_lock,
        stale_if_error=_stale_if_error(
            spec.get("staleIfError", DEFAULT_STALE_IF_ERROR), root / "staleIfError"
        ),
        cache_url=cache_url,
        cache_ca=cache_ca,
        cache_key_file=cache_key_file,
        cache_key=cache_key,
        pod_specs=_pod_specs(spec.get("podSpecs"), root / "podSpecs"),
        annotate=_flag(spec.get("annotate", False), root / "annotate"),
        mode=cast(Mode, _choice(spec.get("mode", "optOut"), root / "mode", MODES)),
        preferences=_preferences(spec.get("preferences"), root / "preferences", platforms),
        node_selectors=node_selectors,
        verify=_verify(spec.get("verify"), root / "verify"),
        injections=_injections(spec.get("injections"), root / "injections"),
        namespace_labels=_namespace_labels(spec.get("namespaceLabels"), root / "namespaceLabels"),
        fallback_platforms=tuple(
            dict.fromkeys(
                _platform_list(spec.get("fallbackPlatforms") or [], root / "fallbackPlatforms")
            )
        ),
        source=source,
    )


def _lock(value: object, where: Where) -> tuple[Path | None, ImageLock | None]:
    """``spec.lock``: a lock file's path, or the lock file's content written out."""
    if isinstance(value, Mapping):
        try:
            # The lock's own messages name where it is written out: policy.yaml: spec.lock: ...
            return None, lock_from_object(value, str(where))
        except LockFileError as exc:
            raise PolicyError(str(exc)) from exc
    if value is not None and not isinstance(value, str):
        raise where.error(
            "expected a file path string, or a lock file's content "
            "(apiVersion, kind: ImageLock, images)"
        )
    return (where.file(value) if value else None), None


def _cache(value: object, where: Where) -> tuple[str | None, Path | None, Path | None, str | None]:
    """``spec.cache``: a shared cache level's URL, CA, and key file or key."""
    cache = value or {}
    if not isinstance(cache, Mapping):
        raise where.error("expected a mapping with url (and ca, keyFile or key)")
    check_keys(cache, {"url", "ca", "keyFile", "key"}, where)
    url, ca = cache.get("url"), cache.get("ca")
    key_file, key = cache.get("keyFile"), cache.get("key")
    if key_file is not None and (not isinstance(key_file, str) or not key_file):
        raise (where / "keyFile").error("expected the path of a file")
    if key is not None and (not isinstance(key, str) or len(key.strip()) < 16):
        # The message never quotes the value: it is a secret.
        raise (where / "key").error(
            "expected a string of at least 16 characters "
            "(better: keyFile, a file kept out of the repository)"
        )
    if key_file is not None and key is not None:
        raise where.error("give keyFile or key, not both")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://"))
    ):
        raise (where / "url").error("expected a redis://, rediss:// or unix:// URL")
    if ca is not None and not isinstance(ca, str):
        raise (where / "ca").error("expected a path to a PEM CA bundle")
    return (
        url,
        where.file(ca) if ca else None,
        where.file(key_file) if key_file else None,
        key,
    )


def _stale_if_error(value: object, where: Where) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise where.error("expected seconds (a number >= 0; 0 disables)")
    return float(value)


def _injections(value: object, where: Where) -> tuple[Injection, ...]:
    injections = []
    for position, item in enumerate(_listed(value, where)):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with name, images, when")
        check_keys(item, {"name", "images", "when", "unless"}, here)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise (here / "name").error("expected a non-empty string")
        images = _image_list(item.get("images"), here / "images")
        if not images:
            raise (here / "images").error("list the images it injects")
        injections.append(
            Injection(
                name,
                images,
                _conditions(item.get("when"), here / "when"),
                _conditions(item.get("unless"), here / "unless"),
            )
        )
    return tuple(injections)


def _conditions(value: object, where: Where) -> Conditions:
    if value is None:
        return Conditions()
    if not isinstance(value, Mapping):
        raise where.error("expected namespaceLabels, podLabels and/or podAnnotations")
    check_keys(value, {"namespaceLabels", "podLabels", "podAnnotations"}, where)
    maps = [
        _string_map(value.get(key), where / key)
        for key in ("namespaceLabels", "podLabels", "podAnnotations")
    ]
    return Conditions(*maps)


def _string_map(value: object, where: Where) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise where.error('expected a mapping of strings (quote values like "true")')
    return dict(value)


def _namespace_labels(value: object, where: Where) -> dict[str, Mapping[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping of namespace -> labels")
    return {str(name): _string_map(labels, where / str(name)) for name, labels in value.items()}


def _verify(value: object, where: Where) -> VerifySettings:
    if value is None:
        return VerifySettings()
    if not isinstance(value, Mapping):
        raise where.error(
            "expected a mapping like {mode: warn} (mode: off, warn "
            "or enforce; maxBytes, maxExpandedBytes, deadline)"
        )
    check_keys(value, {"mode", "maxBytes", "maxExpandedBytes", "deadline"}, where)
    defaults = VerifySettings()
    mode = value.get("mode", defaults.mode)
    if mode is False:
        mode = "off"  # YAML 1.1, as the policy is read, takes an unquoted off for false
    if mode not in VERIFY_MODES:
        raise (where / "mode").error(f"expected one of {', '.join(VERIFY_MODES)}, got {mode!r}")
    numbers: dict[str, float] = {}
    for key, default in (
        ("maxBytes", defaults.max_bytes),
        ("maxExpandedBytes", defaults.max_expanded_bytes),
        ("deadline", defaults.deadline),
    ):
        number = value.get(key, default)
        if isinstance(number, bool) or not isinstance(number, int | float) or number <= 0:
            raise (where / key).error("expected a number above 0")
        numbers[key] = number
    return VerifySettings(
        cast(VerifyMode, mode),
        int(numbers["maxBytes"]),
        int(numbers["maxExpandedBytes"]),
        float(numbers["deadline"]),
    )


def _choice(value: object, where: Where, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise where.error(f"expected one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _platform_list(value: object, where: Where) -> list[Platform]:
    if isinstance(value, str):
        value = [item for item in (part.strip() for part in value.split(",")) if item]
    if not isinstance(value, list):
        raise where.error("expected a list of platforms like linux/arm64")
    platforms = []
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise (where / position).error("expected a platform string")
        try:
            platforms.append(Platform.parse(item))
        except InvalidPlatformError as exc:
            raise (where / position).error(str(exc)) from exc
    return platforms


def _cluster_platforms(
    value: object, where: Where
) -> tuple[tuple[Platform, ...], dict[Platform, dict[str, str]]]:
    """``spec.platforms``: platform strings, or ``{platform, nodeSelector}`` mappings naming the
    node labels that tell a platform's nodes apart (arm variants share kubernetes.io/arch)."""
    platforms: list[Platform] = []
    selectors: dict[Platform, dict[str, str]] = {}
    if not isinstance(value, list):
        platforms = _platform_list(value, where)
    for position, item in enumerate(value if isinstance(value, list) else ()):
        here = where / position
        if not isinstance(item, Mapping):
            platforms.append(_one_platform(item, here))
            continue
        check_keys(item, {"platform", "nodeSelector"}, here)
        platform = _one_platform(item.get("platform"), here / "platform")
        selector = item.get("nodeSelector") or {}
        if not isinstance(selector, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k for k, v in selector.items()
        ):
            raise (here / "nodeSelector").error(
                'expected a mapping of node label to value, like {example.com/arm-variant: "v7"}'
            )
        platforms.append(platform)
        if selector:
            selectors[platform] = dict(selector)
    if not platforms:
        raise where.error("list at least one node platform")
    return tuple(dict.fromkeys(platforms)), selectors


def _one_platform(value: object, where: Where) -> Platform:
    if not isinstance(value, str):
        raise where.error("expected a platform string, or {platform, nodeSelector}")
    try:
        return Platform.parse(value)
    except InvalidPlatformError as exc:
        raise where.error(str(exc)) from exc


def _platform_key(
    text: object, where: Where, platforms: tuple[Platform, ...], unlisted: str = ""
) -> Platform:
    """A platform as a mapping's key (tolerations, preferences): one of ``spec.platforms``
    (``unlisted``: what the message adds when it is not)."""
    try:
        platform = Platform.parse(str(text))
    except InvalidPlatformError as exc:
        raise where.error(str(exc)) from exc
    if platform not in platforms:
        raise where.error(f"{platform} is not in spec.platforms{unlisted}")
    return platform


def _tolerations(
    value: object, where: Where, platforms: tuple[Platform, ...]
) -> dict[Platform, tuple[Toleration, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from platform to a list of tolerations")
    result: dict[Platform, tuple[Toleration, ...]] = {}
    for platform_text, items in value.items():
        here = where / str(platform_text)
        platform = _platform_key(
            platform_text, here, platforms, "; list it there or remove these tolerations"
        )
        entries = [] if items is None else items
        if not isinstance(entries, list):
            raise here.error("expected a list of tolerations")
        result[platform] = tuple(
            _toleration(item, here / position) for position, item in enumerate(entries)
        )
    return result


def _toleration(value: object, where: Where) -> Toleration:
    if not isinstance(value, Mapping):
        raise where.error("expected a toleration mapping")
    check_keys(value, {"key", "operator", "value", "effect", "tolerationSeconds"}, where)
    for key in ("key", "operator", "value", "effect"):
        if key in value and not isinstance(value[key], str):
            raise (where / key).error("expected a string")
    operator = str(value.get("operator", "Equal"))
    if operator not in TOLERATION_OPERATORS:
        raise (where / "operator").error(f"expected Equal or Exists, got {operator!r}")
    effect = str(value.get("effect", ""))
    if effect and effect not in TAINT_EFFECTS:
        raise (where / "effect").error(
            f"expected one of {', '.join(TAINT_EFFECTS)}, got {effect!r}"
        )
    key, toleration_value = str(value.get("key", "")), str(value.get("value", ""))
    if operator == "Exists" and toleration_value:
        raise (where / "value").error("must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise (where / "key").error("an empty key needs operator Exists")
    seconds = value.get("tolerationSeconds")
    if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
        raise (where / "tolerationSeconds").error("expected an integer")
    if seconds is not None and effect != "NoExecute":
        raise (where / "tolerationSeconds").error("only valid with effect NoExecute")
    return Toleration(key, operator, toleration_value, effect, seconds)


def _overrides(value: object, where: Where) -> tuple[Override, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error("expected a list of {image, platforms}")
    overrides = []
    for position, item in enumerate(value):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with image and platforms")
        check_keys(item, {"image", "platforms"}, here)
        image = item.get("image")
        if not isinstance(image, str) or not image:
            raise (here / "image").error("expected a glob string")
        platforms = _platform_list(item.get("platforms"), here / "platforms")
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
    value: object, where: Where, platforms: tuple[Platform, ...]
) -> dict[Platform, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from platform to weight, like {linux/arm64: 80}")
    preferences: dict[Platform, int] = {}
    for platform_text, weight in value.items():
        here = where / str(platform_text)
        platform = _platform_key(platform_text, here, platforms)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise here.error(
                f"expected a weight from 1 to 100 (the scheduler's range), got {weight!r}"
            )
        preferences[platform] = weight
    return preferences


def _flag(value: object, where: Where) -> bool:
    if not isinstance(value, bool):
        raise where.error(f"expected true or false, got {value!r}")
    return value


def _pod_specs(value: object, where: Where) -> tuple[OperatorKind, ...]:
    """``spec.podSpecs``: per kind, pod spec paths (``path``, ``*`` for every item) or
    placements (objects holding the scheduling fields, with the pointers of their images),
    images the operator adds and images it runs by default."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error(
            "expected a list of {apiVersion, kind, path} or {apiVersion, kind, placements}"
        )
    entries = []
    for position, item in enumerate(value):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with apiVersion, kind, path")
        check_keys(
            item,
            {"apiVersion", "kind", "path", "placements", "operatorImages", "defaultImages"},
            here,
        )
        for key in ("apiVersion", "kind"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise (here / key).error("expected a non-empty string")
        placements: list[Placement] = []
        if item.get("path") is not None:
            placements.append(Placement(_pointer(item["path"], here / "path"), pod_spec=True))
        for index, raw in enumerate(_listed(item.get("placements"), here / "placements")):
            placements.append(_placement(raw, here / "placements" / index))
        if not placements and not item.get("defaultImages") and not item.get("operatorImages"):
            raise here.error(
                "give path (a pod spec, like /spec/template/spec) or "
                "placements (objects holding affinity, tolerations and nodeSelector)"
            )
        api_version = str(item["apiVersion"])
        entries.append(
            OperatorKind(
                api_version.rpartition("/")[0] if "/" in api_version else "",
                str(item["kind"]),
                tuple(placements),
                _image_list(item.get("operatorImages"), here / "operatorImages"),
                _image_list(item.get("defaultImages"), here / "defaultImages"),
                cites=str(here),
            )
        )
    return tuple(entries)


def _listed(value: object, where: Where) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error("expected a list")
    return value


def _pointer(value: object, where: Where) -> tuple[str, ...]:
    if not isinstance(value, str) or not value:
        raise where.error("expected a JSON pointer like /spec/template/spec")
    try:
        tokens = pointer_tokens(value)
    except ValueError as exc:
        raise where.error(f"{exc} (e.g. /spec/template/spec)") from exc
    if not tokens or not all(tokens):
        raise where.error("expected a JSON pointer to an object, like /spec/template/spec")
    return tokens


def _placement(value: object, where: Where) -> Placement:
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping with path and images")
    check_keys(value, {"path", "images", "podSpec", "creates", "shape"}, where)
    path = _pointer(value.get("path"), where / "path")
    images: list[ImageSource] = []
    for index, element in enumerate(_listed(value.get("images"), where / "images")):
        spot = where / "images" / index
        if isinstance(element, str):
            images.append(ImageSource((_pointer(element, spot),), required=False))
        elif isinstance(element, list) and element:
            images.append(
                ImageSource(tuple(_pointer(pointer, spot / n) for n, pointer in enumerate(element)))
            )
        else:
            raise spot.error(
                "expected a pointer (every match is an image) or a list of "
                "pointers (alternatives: the first that exists wins)"
            )
    creates = value.get("creates", 0)
    if isinstance(creates, bool) or not isinstance(creates, int) or not 0 <= creates <= len(path):
        raise (where / "creates").error(
            f"expected how many of the path's last tokens kmultiarch may create (0 to {len(path)})"
        )
    shape = value.get("shape", "affinity")
    if shape not in ("affinity", "node-affinity"):
        raise (where / "shape").error("expected affinity or node-affinity")
    return Placement(
        path,
        tuple(images),
        creates=creates,
        pod_spec=_flag(value.get("podSpec", False), where / "podSpec"),
        shape=cast(Literal["affinity", "node-affinity"], shape),
    )


def _image_list(value: object, where: Where) -> tuple[str, ...]:
    items = _listed(value, where)
    if not all(isinstance(item, str) and item for item in items):
        raise where.error("expected a list of image references")
    return tuple(str(item) for item in items)


def _exclusions(value: object, where: Where) -> Exclusions:
    if value is None:
        return Exclusions()
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping with namespaces and kinds")
    check_keys(value, {"namespaces", "kinds", "namespaceSelector"}, where)
    lists = {}
    for key in ("namespaces", "kinds"):
        items = value.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise (where / key).error("expected a list of strings")
        lists[key] = frozenset(items)
    selector = value.get("namespaceSelector")
    return Exclusions(
        lists["namespaces"],
        lists["kinds"],
        parse_label_selector(selector, where / "namespaceSelector")
        if selector is not None
        else None,
    )


def _registries(value: object, where: Where) -> dict[str, RegistrySettings]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from registry host")
    registries = {}
    for host, settings in value.items():
        here = where / str(host)
        if not isinstance(host, str) or not host or "/" in host:
            raise here.error("expected a registry host like registry.internal:5000")
        entry = {} if settings is None else settings
        if not isinstance(entry, Mapping):
            raise here.error("expected a mapping")
        check_keys(entry, {"mirror", "insecure", "ca"}, here)
        mirror = entry.get("mirror")
        if mirror is not None:
            try:
                parts = urlsplit(mirror) if isinstance(mirror, str) else None
            except ValueError:  # e.g. an unclosed IPv6 bracket
                parts = None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise (here / "mirror").error(
                    "expected an http(s) URL like https://mirror.internal"
                )
        insecure = entry.get("insecure")
        if insecure is not None and not isinstance(insecure, bool):
            raise (here / "insecure").error("expected true or false")
        ca = entry.get("ca")
        if ca is not None and not isinstance(ca, str):
            raise (here / "ca").error("expected a path to a PEM CA bundle")
        ca_path = here.file(ca) if ca else None
        if ca_path is not None and not ca_path.is_file():
            raise (here / "ca").error(f"CA bundle {ca_path} not found")
        registries[canonical_registry(host)] = RegistrySettings(
            mirror.rstrip("/") if isinstance(mirror, str) else None, insecure, ca_path
        )
    return registries
