"""cost: refresh or rebuild, by what earlier runs of this state cost.

What it decides. A refresh costs about a fixed overhead (its statements) plus what it reads of
the change; a rebuild costs what reading all inputs costs. Before a refresh reads any data
each state estimates both from its own history, which its metadata row keeps (the last
`KEEP` runs: mode, start, seconds, bytes changed, bytes of all inputs: `run_history.py`),
and from the change's
size, which the inputs' snapshot summaries give (bytes of the files the commits since the
watermark added and removed: a copy-on-write update of one row counts its whole file twice,
as the capture reads it twice; a merge-on-read one its delete file and, twice, the data file
that delete file points at, which the version diff reads at both versions):

    rebuild(now)   = seconds of the last rebuild in place (else of the build)
                     * inputs(now) / inputs(then)
    refresh(c)     = seconds of past refreshes at change size c, linear between the two
                     nearest sizes, the smallest refresh's seconds below them, and
                     proportional above the largest
    refresh(c)     = overhead(k) + rebuild(now) * 2 * c / inputs(now)
                                                  (no refresh timed yet; k inputs changed)
    overhead(k)    = (2 * k + 2) * statement seconds

and the policy (`ivm_refresh`) picks: `auto` rebuilds where the refresh's estimate exceeds
the rebuild's, `incremental` always refreshes, `full` always rebuilds. Either estimate unknown
(no build timed yet, a state built by an older version): refresh. A build's time is a poor
guide to a rebuild's (the first run of a process pays for the JVM's warm-up, measured at SF 1:
21.5 s against 5.4 s for its twin table): while no rebuild in place is timed among the last
`KEEP` runs, `auto` also rebuilds, to time one, where the refresh's estimate is at least half
the rebuild's. A run's seconds are
known only once its commit is: the next run reads them from the time of the state's last
commit (`Head.updated_ms`) less the time the run started, so a run's upkeep counts too; a
rebuild that a refresh turned into after its delta (`recompute_cost.py`) is timed from the
choice to refresh, without the capture and delta it threw away.
That read (and a reload of the state's table) is made only by a run that found a change, under
every policy: a run that finds none reads one head per base and records nothing.

The overhead is the prior's account of a refresh's statements, which cost before they read
anything (planning, a Spark job, a commit): per changed input its capture and the local
checkpoint that keeps it, then the delta and the commit. A statement's seconds are
`DBT_SPARK_IVM_STATEMENT_SECONDS` where set, else `STATEMENT_SECONDS` (measured on the
benchmark's 2 cores). Without it a state whose rebuild takes a second was promised a refresh of a
tenth of that for a small change and took six (TPC-H q11's first stage at SF 1, 2026-12-06),
and, the history keeping `KEEP` runs, again each time its last refresh fell out of them.

The history forgets: a model whose refreshes lost to rebuilds keeps rebuilding only until
its last refresh falls out of the `KEEP` runs, then the prior decides again, so a workload
that changed is noticed. The last build or rebuild is kept however old: it is the only
guide to a rebuild's cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from dbt.adapters.spark_ivm.compiler.capture import Snapshot, lineage
from dbt.adapters.spark_ivm.compiler.environment import number_from_env
from dbt.adapters.spark_ivm.compiler.runtime.base_tables import BaseRecord, TableMetadata
from dbt.adapters.spark_ivm.compiler.runtime.run_history import BUILD, KEEP, REBUILD, Run
from dbt.adapters.spark_ivm.compiler.runtime.settings import model_setting

#: Seconds a refresh's statement costs before it reads data (module docstring): 0.15-0.4 s a
#: statement of a refresh at SF 1 on the benchmark's 2 cores.
STATEMENT_SECONDS = 0.25
STATEMENT_SECONDS_ENV = "DBT_SPARK_IVM_STATEMENT_SECONDS"
REFRESH_ENV = "DBT_SPARK_IVM_REFRESH"


class Policy(StrEnum):
    """The model's `ivm_refresh` config."""

    AUTO = "auto"  # the cheaper of refresh and rebuild, by the estimates
    INCREMENTAL = "incremental"  # refresh; rebuild only where a refresh cannot be done
    FULL = "full"  # rebuild every run that finds a change


def refresh_policy(configured: str | None, model: str) -> Policy:
    """The model's `ivm_refresh` (config, else the environment, else auto).

    >>> refresh_policy("Full", "m")
    <Policy.FULL: 'full'>
    """
    choices = [p.value for p in Policy]
    return Policy(model_setting(model, "ivm_refresh", configured, REFRESH_ENV, choices, "auto"))


def turned(runs: Sequence[Run], attempt: Run, turned_ms: int) -> list[Run]:
    """The history with `attempt`, a refresh that turned into a rebuild in place after its
    delta asked for a recompute costing more than a rebuild (`recompute_cost.py`), recorded
    as a refresh of its change size that cost what it spent up to the turn plus the
    rebuild's estimate. The rebuild is recorded after it, as any rebuild: so the next change
    of that size is estimated at what this one cost and rebuilt at once, instead of paying
    the capture and delta again (at SF 10, 1 % changed: 15 s of a 56 s run).

    >>> runs = [Run("build", 0, 10.0, 0, 1000), Run("refresh", 1, 2.0, 10, 1000)]
    >>> new = turned(runs, Run("refresh", 5_000, None, 80, 1000), 9_000)
    >>> new[-1].seconds, new[-1].turned, estimate(new, 80, 1000).refresh
    (14.0, True, 14.0)
    >>> turned(runs[1:], Run("refresh", 5_000, None, 80, 1000), 9_000) == runs[1:]
    True
    """
    rebuild = estimate(runs, attempt.change, attempt.inputs).rebuild
    if rebuild is None:  # no rebuild timed: the recompute was not weighed against one
        return list(runs)
    spent = max(0, turned_ms - attempt.started_ms) / 1000
    return [*runs, replace(attempt, seconds=round(spent + rebuild, 3), turned=True)]


@dataclass(frozen=True)
class Change:
    """The size of an input's change since the state's watermark, before reading it."""

    relation: str
    bytes: int  # of the files the commits added and removed
    total: int  # of the input's files now

    @classmethod
    def of(cls, relation: str, commits: Sequence[Snapshot], head: int | None) -> Change:
        """From the commits since the watermark (`capture.lineage`), newest first: the
        files they added and removed, and twice the data files their delete files point at
        (the version diff reads those at both versions).

        >>> commits = [Snapshot(3, 2, 0, "overwrite", 40, 40, 100)]
        >>> Change.of("db.t", commits, 3)
        Change(relation='db.t', bytes=80, total=100)
        >>> deletes = Snapshot(4, 3, 1, "overwrite", 1, 0, 100, added_delete_files=1, data_files=2)
        >>> Change.of("db.t", [deletes, *commits], 4)  # one of two 50-byte files read twice
        Change(relation='db.t', bytes=181, total=100)
        >>> Change.of("db.t", [deletes] * 5, 4).bytes  # at most every file, twice
        205
        """
        total = next((s.total_bytes for s in commits if s.snapshot_id == head), 0)
        # several commits' deletes may point at one file, read once a side all the same
        touched = min(sum(s.touched_bytes for s in commits), total)
        size = sum(s.added_bytes + s.removed_bytes for s in commits) + 2 * touched
        return cls(relation, size, total)


def changes(
    metadata: Mapping[str, TableMetadata],
    watermarks: Mapping[str, int | None],
    heads: Mapping[str, int | None],
) -> list[Change] | None:
    """The change of each input whose metadata moved (`metadata`, read by the refresh's
    checks) from its watermark to its head; None where an input's history does not lead
    there (rolled back, replaced: the capture decides what to do)."""
    found: list[Change] = []
    for relation, now in metadata.items():
        commits = lineage(now.snapshots, watermarks.get(relation), heads[relation])
        if commits is None:
            return None
        found.append(Change.of(relation, commits, heads[relation]))
    return found


def input_bytes(bases: Mapping[str, BaseRecord]) -> int:
    """Bytes of all inputs, from what the state records of each (`base_tables.fingerprint`)."""
    return sum(b.bytes for b in bases.values())


@dataclass(frozen=True)
class Estimate:
    """Both estimates of one run, in seconds (None: not known)."""

    refresh: float | None
    rebuild: float | None
    basis: str  # what the refresh's estimate rests on
    # The rebuild's estimate rests on no recent rebuild in place (a build, or one more than
    # `KEEP` runs ago): worth timing one where the two estimates are close.
    untimed: bool = False

    def text(self) -> str:
        def show(s: float | None) -> str:
            return "unknown" if s is None else f"{s:.1f} s"

        return f"est. refresh {show(self.refresh)} ({self.basis}), rebuild {show(self.rebuild)}"


def statement_seconds() -> float:
    """The seconds of one statement the prior counts: the environment's
    `DBT_SPARK_IVM_STATEMENT_SECONDS` (a number, at least 0) where set, else
    `STATEMENT_SECONDS`.

    >>> statement_seconds()
    0.25
    """
    return number_from_env(STATEMENT_SECONDS_ENV, STATEMENT_SECONDS, 0.0, "seconds")


def overhead(changed: int) -> float:
    """What a refresh of `changed` changed inputs costs before it reads any data, by the
    prior: a capture and its checkpoint per input, the delta, the commit.

    >>> overhead(3)
    2.0
    """
    return (2 * changed + 2) * statement_seconds()


def estimate(runs: Sequence[Run], change: int, inputs: int, fixed: float = 0.0) -> Estimate:
    """Refresh and rebuild seconds for a change of `change` bytes over `inputs` bytes;
    `fixed`: the prior's overhead of a refresh (`overhead`), counted until one is timed.

    >>> runs = [Run("build", 0, 10.0, 0, 1000), Run("refresh", 1, 2.0, 10, 1000),
    ...         Run("refresh", 2, 6.0, 50, 1000)]
    >>> estimate(runs, 30, 2000)  # between the two refreshes; inputs doubled since the build
    Estimate(refresh=4.0, rebuild=20.0, basis='2 timed refreshes', untimed=True)
    >>> estimate(runs, 500, 1000).refresh  # ten times the largest change timed
    60.0
    >>> estimate(runs[:1], 300, 1000)  # no refresh timed: a prior from the build
    Estimate(refresh=6.0, rebuild=10.0, basis='no refresh timed yet', untimed=True)
    >>> estimate(runs[:1], 300, 1000, fixed=2.0).refresh  # and its statements' overhead
    8.0
    >>> estimate(runs, 30, 2000, fixed=2.0).refresh  # a timed refresh has it in its seconds
    4.0
    >>> estimate([*runs, Run("rebuild", 3, 4.0, 0, 1000)], 30, 1000).rebuild
    4.0
    """
    timed_builds = [r for r in runs if r.mode in (BUILD, REBUILD) and r.seconds is not None]
    in_place = [r for r in timed_builds if r.mode == REBUILD]
    rebuild = None
    untimed = True
    if timed_builds:
        last = (in_place or timed_builds)[-1]
        assert last.seconds is not None
        scale = inputs / last.inputs if last.inputs > 0 and inputs > 0 else 1.0
        rebuild = last.seconds * scale
        untimed = not in_place or last not in runs[-KEEP:]
    points = sorted(
        (r.change, r.seconds) for r in runs if r.mode == "refresh" and r.seconds is not None
    )
    if not points:
        if rebuild is None or inputs <= 0:
            return Estimate(None, rebuild, "no refresh timed yet", untimed)
        prior = fixed + rebuild * 2 * change / inputs
        return Estimate(prior, rebuild, "no refresh timed yet", untimed)
    basis = f"{len(points)} timed refresh{'es' if len(points) > 1 else ''}"
    return Estimate(_interpolate(points, change), rebuild, basis, untimed)


def _interpolate(points: Sequence[tuple[int, float]], change: int) -> float:
    low_change, low_seconds = points[0]
    if change <= low_change:
        return low_seconds
    for high_change, high_seconds in points[1:]:
        if change <= high_change:
            if high_change == low_change:
                return max(low_seconds, high_seconds)
            share = (change - low_change) / (high_change - low_change)
            return low_seconds + share * (high_seconds - low_seconds)
        low_change, low_seconds = high_change, high_seconds
    return low_seconds * change / low_change if low_change > 0 else low_seconds


@dataclass(frozen=True)
class Choice:
    """Refresh or rebuild, and why (the log line's words)."""

    rebuild: bool
    why: str
    guess: Estimate | None = None  # what it rests on
    # A rebuild chosen to time one (`Estimate.untimed`), not because it is the cheaper.
    exploring: bool = False


def weigh(policy: Policy, runs: Sequence[Run], found: Sequence[Change], inputs: int) -> Choice:
    """The choice for the changes `found` over inputs of `inputs` bytes (`estimate`, then
    `choose`).

    >>> weigh(Policy.AUTO, [Run("build", 0, 1.0, 0, 100)], [Change("db.t", 90, 100)], 100).rebuild
    True

    A small change of three inputs of a state that rebuilds in 0.9 s: its refresh's eight
    statements cost more than that, before reading anything.

    >>> small = [Change(f"db.t{i}", 1, 100) for i in range(3)]
    >>> weigh(Policy.AUTO, [Run("build", 0, 0.9, 0, 300)], small, 300).why
    "the change's files are 1 % of db.t0's bytes; est. refresh 2.0 s (no refresh timed yet), rebuild 0.9 s"

    A state every remembered run rebuilt is said to be a table's work.

    >>> lost = [Run("refresh", 0, 5.0, 3, 300)] + [Run("rebuild", i, 0.9) for i in range(KEEP)]
    >>> print(weigh(Policy.AUTO, lost, small, 300).why)  # doctest: +ELLIPSIS
    the change's files ... rebuild 0.9 s; each of its last 8 runs rebuilt it too: \
materialized='table' would run the model's own SQL with no state to keep
    """
    guess = estimate(runs, sum(c.bytes for c in found), inputs, overhead(len(found)))
    choice = replace(choose(policy, guess, found), guess=guess)
    if choice.rebuild and not choice.exploring:
        return replace(choice, why=with_table_hint(choice.why, policy, runs))
    return choice


#: Said where `auto` rebuilds a state that every run it remembers rebuilt: its refreshes
#: lose, and a rebuild of the state costs more than the model's table would (its helper
#: columns, every group of a LIMIT, its reads around the statement: 0.1-0.2 s).
TABLE_HINT = (
    f"each of its last {KEEP} runs rebuilt it too: materialized='table' would run the "
    "model's own SQL with no state to keep"
)


def with_table_hint(why: str, policy: Policy, runs: Sequence[Run]) -> str:
    """`why` a rebuild is made, with `TABLE_HINT` where `auto` makes it and every run the
    state remembers rebuilt it (`rebuilt_only`): a flat state's choice (`weigh`), or a
    model's state rebuilt past its earlier states (`refresh.py`), whose `why` quotes the
    earlier state's, which may say it already: said once.

    >>> rebuilds = [Run("rebuild", i, 1.0) for i in range(KEEP)]
    >>> earlier = with_table_hint("s0 would be rebuilt", Policy.AUTO, rebuilds)
    >>> with_table_hint(f"({earlier}); past it", Policy.AUTO, rebuilds).count(TABLE_HINT)
    1
    """
    if policy is Policy.AUTO and rebuilt_only(runs) and TABLE_HINT not in why:
        return f"{why}; {TABLE_HINT}"
    return why


def rebuilt_only(runs: Sequence[Run]) -> bool:
    """Did each of the last `KEEP` runs (a full history) rebuild the state in place, or
    turn into a rebuild after its delta?

    >>> rebuilt_only([Run("rebuild", i, 1.0) for i in range(KEEP)])
    True
    >>> rebuilt_only([Run("build", 0, 1.0)] + [Run("rebuild", i, 1.0) for i in range(KEEP - 1)])
    False
    >>> rebuilt_only([Run("rebuild", i, 1.0) for i in range(KEEP - 1)])  # not a full history
    False
    """
    recent = runs[-KEEP:]
    return len(recent) == KEEP and all(r.mode == REBUILD or r.turned for r in recent)


def choose(policy: Policy, guess: Estimate, changes: Sequence[Change]) -> Choice:
    """What the run does under `policy`.

    >>> guess = Estimate(41.0, 9.0, "3 timed refreshes")
    >>> choose(Policy.AUTO, Estimate(6.0, 9.0, "3 timed refreshes", untimed=True), []).why
    'timing a rebuild in place (none timed lately); est. refresh 6.0 s (3 timed refreshes), rebuild 9.0 s'

    >>> choose(Policy.AUTO, guess, [Change("db.lineitem", 830, 1000)]).why
    "the change's files are 83 % of db.lineitem's bytes; est. refresh 41.0 s (3 timed refreshes), rebuild 9.0 s"
    >>> choose(Policy.INCREMENTAL, guess, []).rebuild
    False
    """
    largest = max(changes, key=lambda c: c.bytes / c.total if c.total else 0, default=None)
    said = guess.text()
    if largest is not None and largest.total > 0:
        share = largest.bytes / largest.total
        size = f"{share:.0%}".replace("%", " %") if share < 1 else f"{share:.1f}x"
        said = f"the change's files are {size} of {largest.relation}'s bytes; {said}"
    if policy is Policy.FULL:
        return Choice(True, f"ivm_refresh='full'; {said}")
    if policy is Policy.INCREMENTAL or guess.refresh is None or guess.rebuild is None:
        return Choice(False, said)
    if guess.refresh <= guess.rebuild and guess.untimed and 2 * guess.refresh >= guess.rebuild:
        return Choice(
            True, f"timing a rebuild in place (none timed lately); {said}", exploring=True
        )
    return Choice(guess.refresh > guess.rebuild, said)
