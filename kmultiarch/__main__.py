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

    code = run(args)
    if argv is None:  # the process's entry point (the console script), not a caller's
        _spare_the_final_collection()
    return code


def _spare_the_final_collection() -> None:
    """The process is about to end: the interpreter's last cyclic collection would walk every
    object still alive (the modules, what the run kept), 0.015 s of CPU of a warm run of 2,000
    resources. Frozen, they are still freed by reference counting as the interpreter clears
    its modules; atexit handlers and stream flushes run as before."""
    import gc

    gc.freeze()


def krm_main() -> int:
    """``kmultiarch-fn``: the KRM function, for runners that cannot pass arguments."""
    _skip_unused_async_backends()
    from kmultiarch.cli.app import run

    return run(["fn", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
