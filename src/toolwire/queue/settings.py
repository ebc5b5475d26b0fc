"""How workers run and find stopped workers: concurrency, recovery time, stall limit.

One number sets the pace of recovery: ``recover_seconds``, within which the runs of a worker
that stopped (killed, or too busy to send its heartbeat) are carried on by another. A worker
sends a heartbeat every eighth of it, is taken for stopped after half of it without one (four
missed heartbeats), and every worker looks for stopped ones every twelfth of it; so a run is
taken again at most ``stalled_after + reap_seconds`` (35 s of 60) after its worker's last
heartbeat, leaving room for a slow database.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolwire.core.errors import ConfigError

RECOVER_SECONDS = 60.0  # the promise: a stopped worker's runs move on within a minute
MIN_RECOVER_SECONDS = 1.0  # below this, a busy worker's late heartbeat would look like a death
MAX_STALLS = 3  # a run whose workers stop this often is failing them; it fails instead
GRACE_SECONDS = 30.0  # on SIGTERM, running runs get this long before they are queued again
MAX_CONCURRENCY = 256  # runs one worker process executes at once; beyond, start another


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueSettings:
    """A worker's settings; every worker of a deployment should share ``recover_seconds``."""

    concurrency: int = 1
    recover_seconds: float = RECOVER_SECONDS
    max_stalls: int = MAX_STALLS
    grace_seconds: float = GRACE_SECONDS

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"concurrency must be between 1 and {MAX_CONCURRENCY}")
        if not self.recover_seconds >= MIN_RECOVER_SECONDS:
            raise ConfigError(f"recover_seconds must be at least {MIN_RECOVER_SECONDS:g}")
        if self.max_stalls < 1:
            raise ConfigError("max_stalls must be at least 1")
        if not self.grace_seconds >= 0:
            raise ConfigError("grace_seconds must be 0 or more")

    @property
    def heartbeat_seconds(self) -> float:
        return self.recover_seconds / 8

    @property
    def stalled_after(self) -> float:
        """Seconds without a heartbeat after which a worker counts as stopped."""
        return self.recover_seconds / 2

    @property
    def reap_seconds(self) -> float:
        """How often each worker looks for stopped workers' runs."""
        return self.recover_seconds / 12
