"""Provider registry: a plain dict from the config's ``provider`` to a factory. Heavy imports stay inside the factories."""

from __future__ import annotations

from collections.abc import Callable

from monitor.config import ConfigError, DeploymentConfig
from monitor.providers.base import Provider, ProviderError


def _local(dep: DeploymentConfig) -> Provider:
    from monitor.providers.llamacpp import LlamaCppProvider

    return LlamaCppProvider(dep)


def _openai(dep: DeploymentConfig) -> Provider:
    from monitor.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(dep)


FACTORIES: dict[str, Callable[[DeploymentConfig], Provider]] = {"local": _local}
FACTORIES["openai"] = _openai


def _scripted(dep: DeploymentConfig) -> Provider:
    from monitor.providers.scripted import ScriptedProvider

    return ScriptedProvider(dep)


FACTORIES["scripted"] = _scripted


def get_provider(dep: DeploymentConfig) -> Provider:
    factory = FACTORIES.get(dep.provider)
    if factory is None:
        raise ConfigError(f"deployment {dep.name!r}: unknown provider {dep.provider!r}; expected one of {sorted(FACTORIES)}")
    return factory(dep)


__all__ = ["FACTORIES", "Provider", "ProviderError", "get_provider"]
