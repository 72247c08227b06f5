"""What one harness run found: per round its changes and seconds, per family its failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RoundLog:
    """What one round did to the base tables."""

    number: int
    kind: str
    statements: dict[str, list[str]] = field(default_factory=dict)
    # The models run with `ivm_refresh=full` in this round (`config.rebuilt_models`).
    rebuilt: list[str] = field(default_factory=list)

    def describe(self, tables: Sequence[str] | None = None) -> str:
        """The statements of this round (of `tables` first, then the others)."""
        if not any(self.statements.values()):
            return "  (no change to any base table)"
        order = list(tables or []) + sorted(t for t in self.statements if t not in (tables or []))
        lines: list[str] = []
        for name in order:
            stmts = self.statements.get(name)
            if not stmts:
                continue
            lines.append(f"  -- {name}")
            lines.extend("  " + s.replace("\n", "\n  ") + ";" for s in stmts)
        return "\n".join(lines)


@dataclass(frozen=True)
class Failure:
    """One family failing in one round."""

    family: str
    round: int
    kind: str
    text: str


@dataclass
class RoundTiming:
    """Seconds spent in one round."""

    number: int
    kind: str
    changes: float
    dbt: float
    check: float


@dataclass
class HarnessReport:
    """Everything a harness run found."""

    seed: int
    workdir: Path
    families: list[str]
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    timings: list[RoundTiming] = field(default_factory=list)
    setup_seconds: float = 0.0
    #: dbt's execution time per model, summed over the rounds: what a family costs the suite
    model_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """One paragraph: seed, rounds, time, failing families."""
        total = self.setup_seconds + sum(t.changes + t.dbt + t.check for t in self.timings)
        lines = [
            (
                f"ivm harness: seed {self.seed}, {len(self.families)} families, "
                f"{len(self.timings)} rounds, {total:.0f}s (setup {self.setup_seconds:.0f}s), "
                f"project {self.workdir}"
            ),
        ]
        for t in self.timings:
            lines.append(
                f"  round {t.number} {t.kind:<6} changes {t.changes:5.1f}s  dbt {t.dbt:5.1f}s"
                f"  check {t.check:5.1f}s"
            )
        slowest = sorted(self.model_seconds.items(), key=lambda kv: -kv[1])[:8]
        if slowest:
            lines.append(
                "  slowest models (dbt seconds, all rounds): "
                + ", ".join(f"{name} {seconds:.0f}" for name, seconds in slowest)
            )
        bad = {f: v for f, v in self.failures.items() if v}
        if bad:
            lines.append(
                "  failing: "
                + ", ".join(
                    f"{f} (rounds {', '.join(str(x.round) for x in v)})" for f, v in bad.items()
                )
            )
        return "\n".join(lines)
