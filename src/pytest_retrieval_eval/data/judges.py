"""Who judged: an LLM judge's settings (what a grade depends on besides the question and the
document) and a panel of judges read as one by majority; each has a fingerprint that the
judgments file, validations and runs key on.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Mapping

from ..types import canonical_json, sha256_text


@dataclass(frozen=True)
class Judge:
    """Who judged: what a grade depends on besides the question and the document."""

    model: str
    prompt_sha256: str
    temperature: float = 0.0
    votes: int = 1
    host: str = ""
    #: the model name sent, when the server said another model answered (``model``): how the
    #: next run finds this judge before asking; not part of who judged, so not of the fingerprint
    asked_as: str = ""

    @cached_property
    def fingerprint(self) -> str:
        """Hashed once per judge (the object is frozen): every judgment of a file carries its
        judge, and judging a run asks each one's fingerprint several times."""
        return sha256_text(canonical_json(self.to_dict(fingerprint=False)))[:16]

    def to_dict(self, *, fingerprint: bool = True) -> dict[str, Any]:
        d = {"model": self.model, "prompt_sha256": self.prompt_sha256, "temperature": self.temperature,
             "votes": self.votes, "host": self.host}
        if not fingerprint:
            return d
        return {**d, "fingerprint": self.fingerprint, **({"asked_as": self.asked_as} if self.asked_as else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Judge":
        if "panel" in d:  # a panel's record (results.json, a validation), never a line of the file
            return Panel.from_dict(d)  # type: ignore[return-value]
        return _judge(str(d["model"]), str(d["prompt_sha256"]), float(d.get("temperature", 0.0)), int(d.get("votes", 1)),
                      str(d.get("host", "")), str(d.get("asked_as") or ""))

    def describe(self) -> str:
        votes = f"{self.votes} vote{'s' if self.votes != 1 else ''}"
        asked = f", asked as {self.asked_as}" if self.asked_as else ""
        return (f"{self.model} (temperature {self.temperature:g}, {votes}, host {self.host or '?'}{asked}, "
                f"fingerprint {self.fingerprint})")


@lru_cache(maxsize=256)
def _judge(*fields: Any) -> Judge:
    """One ``Judge`` per setting: a judgments file names its judge on every line, and each
    line's judge is then the same object, its fingerprint hashed once."""
    return Judge(*fields)


@dataclass(frozen=True)
class Panel:
    """Several judges read as one: a pair's grade is the majority of the members' grades (a tie
    to the lower grade, as a judge's own votes), given only where every member graded the pair
    for the same question and document text. Its identity is its members': the fingerprint is
    the hash of theirs, in any order, so validations and runs key on it as on one judge."""

    members: tuple[Judge, ...]

    def __post_init__(self) -> None:
        unique = {m.fingerprint: m for m in self.members}
        object.__setattr__(self, "members", tuple(sorted(unique.values(), key=lambda m: (m.model, m.fingerprint))))

    @cached_property
    def fingerprint(self) -> str:
        return sha256_text(canonical_json({"panel": sorted(m.fingerprint for m in self.members)}))[:16]

    @property
    def model(self) -> str:
        return f"panel of {len(self.members)} ({', '.join(m.model for m in self.members)})"

    # what a run and a message read of any judge
    votes = property(lambda self: len(self.members))
    temperature = property(lambda self: 0.0)
    asked_as = property(lambda self: "")

    def to_dict(self, *, fingerprint: bool = True) -> dict[str, Any]:
        d = {"model": self.model, "panel": [m.to_dict(fingerprint=fingerprint) for m in self.members]}
        return {**d, "fingerprint": self.fingerprint} if fingerprint else d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Panel":
        return cls(tuple(Judge.from_dict(m) for m in d["panel"]))

    def describe(self) -> str:
        return (f"a panel of {len(self.members)} by majority (a tie to the lower grade): "
                + "; ".join(m.describe() for m in self.members) + f"; panel fingerprint {self.fingerprint}")
