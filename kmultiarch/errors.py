"""The exception tree of kmultiarch.

Every error a user can cause or meet derives from :class:`KmultiarchError`; its message is one
line that names the file, document or image concerned and says what to do. Library errors
(httpx, YAML parsers, OS errors) are translated at the edge with ``raise ... from exc``.

    KmultiarchError
    ├── InputError                bad input the user gave: exit 2
    │   ├── InvalidReferenceError   an image reference that does not parse
    │   ├── InvalidPlatformError    a platform string that does not parse
    │   ├── PolicyError             a MultiArchPolicy that does not validate
    │   └── ManifestStreamError     YAML that cannot be read (file, line, reason)
    ├── RegistryError             an image whose platforms could not be resolved
    │   ├── RegistryAuthError       credentials refused or token endpoint failing
    │   ├── ManifestError           a manifest that is malformed, unsupported, too large or forged
    │   └── RegistryTransportError  connection, timeout or server errors after retries
    ├── CacheError                a cache that cannot be used
    └── PolicyFailure             the policy fails the run (failurePolicy: Fail): exit 1
"""

from __future__ import annotations


class KmultiarchError(Exception):
    """Base of all errors kmultiarch reports to its users."""

    exit_code = 1


class InputError(KmultiarchError):
    """Input given by the user is wrong; the run cannot start or go on."""

    exit_code = 2


class InvalidReferenceError(InputError, ValueError):
    """An image reference that is not valid."""


class InvalidPlatformError(InputError, ValueError):
    """A platform string that is not valid."""


class PolicyError(InputError):
    """A MultiArchPolicy (or KRM functionConfig) that does not validate."""


class ManifestStreamError(InputError):
    """A YAML stream that cannot be read. The message names the file, line and reason."""


class RegistryError(KmultiarchError):
    """The platforms of an image could not be resolved from its registry."""

    #: Whether the same request may succeed later (kept out of the cache for long if so).
    transient = False


class RegistryAuthError(RegistryError):
    """The registry or its token endpoint refused the credentials, or failed."""


class ManifestError(RegistryError):
    """A manifest or config that is malformed, unsupported, oversized or not matching its digest."""


class RegistryTransportError(RegistryError):
    """Connection errors, timeouts, 5xx or 429 answers that did not recover within the retries."""

    transient = True


class CacheError(KmultiarchError):
    """The cache cannot be opened or used."""


class PolicyFailure(KmultiarchError):
    """The run fails because of the policy (``failurePolicy: Fail``) or a scheduling conflict."""

    exit_code = 1
