"""Retrieval engines: the protocol every engine meets, the registry, and the built-in engines."""

from .base import Engine, EngineRegistry
from .keyword import KeywordEngine

__all__ = ["Engine", "EngineRegistry", "KeywordEngine"]
