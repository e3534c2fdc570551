"""Console entry points. Kept tiny so ``kmultiarch --version`` starts fast."""

from __future__ import annotations

import sys


def _skip_unused_async_backends() -> None:
    """Imports kmultiarch's process never uses, which cost a cold run dearly when the modules
    happen to be installed: httpcore imports trio (~130 ms with attrs) to support trio event
    loops, and httpx imports its optional command line (``httpx._main``: click, pygments, rich;
    ~15 ms). kmultiarch runs on asyncio and never calls httpx's CLI. A None entry makes each
    import fail fast (both libraries expect ImportError there), and only in kmultiarch's own
    process: library users are not affected."""
    for unused in ("trio", "httpx._main"):
        sys.modules.setdefault(unused, None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from kmultiarch.version import __version__

        print(f"kmultiarch {__version__}")
        return 0
    _skip_unused_async_backends()
    from kmultiarch.cli.app import run

    return run(args)


def krm_main() -> int:
    """``kmultiarch-fn``: the KRM function, for runners that cannot pass arguments."""
    _skip_unused_async_backends()
    from kmultiarch.cli.app import run

    return run(["fn", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
