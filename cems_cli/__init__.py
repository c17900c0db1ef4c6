"""CEMS: long-term memory and guard rails for AI coding agents."""

__version__ = "0.1.0"


def installed_version() -> str:
    """The installed distribution's version; the package's own when running from a source tree. Here, not
    in the library: `cems mcp` answers `initialize` with it before loading anything heavy."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cems")
    except PackageNotFoundError:
        return __version__
