"""Layered configuration: later layers override earlier ones; environment overrides last."""

from __future__ import annotations

from collections.abc import Mapping

from confparse.document import DEFAULT, Config


def merge(*layers: Config) -> Config:
    """One config with every layer's keys; for a key set in several, the last layer wins."""
    result = Config()
    for layer in layers:
        for section in [DEFAULT, *layer.sections()]:
            result.add_section(section)
            for key in layer._data.get(section, {}):
                result.set(section, key, layer.raw(section, key))
    return result


def env_key(prefix: str, section: str, key: str) -> str:
    """``APP`` + ``server`` + ``max-connections`` -> ``APP_SERVER_MAX_CONNECTIONS``."""
    parts = [prefix, section, key]
    return "_".join(p.upper().replace("-", "_").replace(".", "_") for p in parts if p)


def apply_env(config: Config, environ: Mapping[str, str], prefix: str) -> list[str]:
    """Override existing keys from ``environ`` (``PREFIX_SECTION_KEY``); returns the names of
    the variables used, sorted. Keys the config does not have are never created."""
    used = []
    for section in config.sections():
        for key in config.keys(section):
            name = env_key(prefix, section, key)
            if name in environ:
                config.set(section, key, environ[name])
                used.append(name)
    return sorted(used)
