"""The fleet's votes in sqlite: one vote per network and group, bounded in networks, age and groups.

A report is never stored: each of its results folds into one vote in its group (sha256, runtime, class).
A group holds one vote per network (networks.py: an IPv4 /24, an IPv6 /48), the latest; the client's token
only lets a client replace its own earlier vote, from whatever network. The client is HMAC-SHA256(secret,
token)[:8] and the network HMAC-SHA256(secret, "network" + prefix)[:8]: the secret is random per store and
kept in the database, so counts survive restarts while neither the token nor an address or prefix is written.

A network creates at most `network_groups` groups an hour; when the store is full, a new group takes the
place of a group with fewer than k networks (its own network's first, then those of the network with the most
groups; oldest first) and is refused when there is none: a flood from one network never evicts an established
group, and replaces its own young groups before anyone else's.

Versioned by sqlite's `PRAGMA user_version` (SCHEMA_VERSION): a file of an older version keeps its secret and
report count, and its votes are dropped (version 1 counted tokens, not networks: they cannot be carried over).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from onnxport.json_boundary import JsonObject
from onnxport.serving.fleet import aggregation
from onnxport.serving.fleet.classes import class_key
from onnxport.serving.fleet.reports import Report

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # 1: one vote per client (token); 2: one vote per network, groups know their creator
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS groups (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, runtime TEXT NOT NULL, class TEXT NOT NULL,
    model TEXT NOT NULL, variant TEXT NOT NULL, form TEXT, seen REAL NOT NULL,
    creator BLOB NOT NULL, created REAL NOT NULL, networks INTEGER NOT NULL,
    UNIQUE (sha256, runtime, class));
CREATE INDEX IF NOT EXISTS groups_seen ON groups (seen);
CREATE INDEX IF NOT EXISTS groups_creator ON groups (creator, created);
CREATE TABLE IF NOT EXISTS votes (
    group_id INTEGER NOT NULL, client BLOB NOT NULL, network BLOB NOT NULL, at REAL NOT NULL,
    fail INTEGER NOT NULL, metric_name TEXT, metric_value REAL, create_ms REAL, first_run_ms REAL,
    warm_run_ms REAL,
    PRIMARY KEY (group_id, client)) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS votes_network ON votes (group_id, network);
CREATE INDEX IF NOT EXISTS votes_at ON votes (at);
"""
HOUR = 3600.0
PRUNE_EVERY = 60.0  # seconds between sweeps of votes past the age limit
REFRESH_EVERY = 3600.0  # a published document this old is rebuilt even with no new report (votes age out)
# A large fleet's document (about 0.2 ms a group) is rebuilt after a report only when the last build is
# older than this many times its cost: readers of a busy fleet get a second-old view, the CPU stays free.
SLOW_BUILD, REBUILD_SPACING = 0.05, 10
DAY = 86400.0


class FleetStore:
    def __init__(
        self,
        path: Path | str,
        *,
        k: int = 3,
        max_clients: int = 1000,
        max_age_days: float = 90,
        max_groups: int = 20000,
        network_groups: int = 100,
        clock: Callable[[], float] = time.time,
    ):
        """Opened on first use: an app that never hears of the fleet writes no file. max_clients bounds the
        votes (networks) of a group; network_groups the groups one network creates an hour."""
        self.path, self.k, self.max_clients, self.max_groups = str(path), k, max_clients, max_groups
        self.network_groups = network_groups
        self.max_age = max_age_days * DAY
        self.clock = clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._secret = b""
        self._published: JsonObject | None = None
        self._built_at, self._build_cost = 0.0, 0.0
        self._built_reports = -1  # the file's report counter when the document was built
        self._pruned_at = float("-inf")

    # ------------------------------------------------------------------ opening

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self._db = self._connect(self.path)
            except sqlite3.Error as exc:
                log.warning("fleet: cannot write %s (%s); fleet votes are kept in memory only", self.path, exc)
                self.path = ":memory:"
                self._db = self._connect(self.path)
        return self._db

    def _connect(self, path: str) -> sqlite3.Connection:
        # Ray replicas may share the file: sqlite's lock, waited on for up to 10 s, orders their writes.
        db = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
        try:
            if path != ":memory:":
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # a crash may lose the last votes, never corrupt
            _upgrade(db, path)
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("INSERT OR IGNORE INTO meta VALUES ('secret', ?)", (secrets.token_bytes(32),))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('reports', 0)")
            self._secret = db.execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()[0]
        except sqlite3.Error:
            db.close()
            raise
        return db

    def client_id(self, token: str) -> bytes:
        return hmac.new(self._secret, token.encode(), hashlib.sha256).digest()[:8]

    def network_id(self, network: str) -> bytes:
        # A token is [A-Za-z0-9_-]: no token's text starts with "network\0", so the two never share an id.
        return hmac.new(self._secret, b"network\0" + network.encode(), hashlib.sha256).digest()[:8]

    # ------------------------------------------------------------------ folding

    def fold(self, report: Report, network: str) -> int:
        """Each result becomes the vote of its network in its group, replacing that network's earlier vote and
        the client's own (from any network); returns how many were folded (a group a network may not create,
        or that finds no room, takes none)."""
        device = report.device.model_dump()
        cls = json.dumps(device, separators=(",", ":"))  # the model's field order: one text per class
        with self._lock:
            db = self._open()
            now = self.clock()
            client, net = self.client_id(report.client), self.network_id(network)
            folded = 0
            db.execute("BEGIN IMMEDIATE")
            try:
                for result in report.results:
                    row = db.execute(
                        "SELECT id FROM groups WHERE sha256 = ? AND runtime = ? AND class = ?",
                        (result.sha256, result.runtime, cls),
                    ).fetchone()
                    if row is None:
                        if not self._room_for_a_group(db, net, now):
                            continue
                        group: int = db.execute(  # type: ignore[assignment]  # an INSERT's rowid is set
                            "INSERT INTO groups (sha256, runtime, class, model, variant, form, seen, creator, "
                            "created, networks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                            (
                                result.sha256,
                                result.runtime,
                                cls,
                                result.model,
                                result.variant,
                                result.form,
                                now,
                                net,
                                now,
                            ),
                        ).lastrowid
                    else:
                        group = row[0]
                        db.execute(
                            "UPDATE groups SET model = ?, variant = ?, form = ?, seen = ? WHERE id = ?",
                            (result.model, result.variant, result.form, now, group),
                        )
                    metric = result.metric
                    db.execute(
                        "DELETE FROM votes WHERE group_id = ? AND (client = ? OR network = ?)", (group, client, net)
                    )
                    db.execute(
                        "INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            group,
                            client,
                            net,
                            now,
                            result.verdict == "fail",
                            metric.name if metric else None,
                            metric.value if metric else None,
                            result.create_ms,
                            result.first_run_ms,
                            result.warm_run_ms,
                        ),
                    )
                    self._bound_clients(db, group)
                    folded += 1
                if now - self._pruned_at >= PRUNE_EVERY:
                    self._prune(db, now)
                db.execute("UPDATE meta SET value = value + 1 WHERE key = 'reports'")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return folded

    def _bound_clients(self, db: sqlite3.Connection, group: int) -> None:
        """At most max_clients votes (networks) in a group: the oldest go. Keeps the group's count of networks."""
        count = db.execute("SELECT COUNT(*) FROM votes WHERE group_id = ?", (group,)).fetchone()[0]
        if count > self.max_clients:
            db.execute(
                "DELETE FROM votes WHERE group_id = ? AND client IN "
                "(SELECT client FROM votes WHERE group_id = ? ORDER BY at LIMIT ?)",
                (group, group, count - self.max_clients),
            )
        db.execute("UPDATE groups SET networks = ? WHERE id = ?", (min(count, self.max_clients), group))

    def _room_for_a_group(self, db: sqlite3.Connection, network: bytes, now: float) -> bool:
        """Whether `network` may create a group now: under its hourly share, and with room in the store, made if
        need be by evicting groups that have no verdict yet (fewer than k networks): first the network's own, then
        those of the network with the most groups; oldest first. Groups with k networks are never evicted: when
        the store holds only those, a new group is refused until votes age out."""
        made = db.execute(
            "SELECT COUNT(*) FROM groups WHERE creator = ? AND created > ?", (network, now - HOUR)
        ).fetchone()[0]
        if made >= self.network_groups:
            return False
        over = db.execute("SELECT COUNT(*) FROM groups").fetchone()[0] - self.max_groups + 1
        if over <= 0:
            return True
        gone = [
            row[0]
            for row in db.execute(
                "SELECT g.id FROM groups g JOIN (SELECT creator, COUNT(*) AS made FROM groups GROUP BY creator) c "
                "ON c.creator = g.creator WHERE g.networks < ? ORDER BY g.creator = ? DESC, c.made DESC, g.seen LIMIT ?",  # noqa: E501
                (self.k, network, over),
            )
        ]
        db.executemany("DELETE FROM votes WHERE group_id = ?", [(g,) for g in gone])
        db.executemany("DELETE FROM groups WHERE id = ?", [(g,) for g in gone])
        return len(gone) == over

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        """Votes past max_age go; so do the groups they leave empty."""
        self._pruned_at = now
        if db.execute("DELETE FROM votes WHERE at < ?", (now - self.max_age,)).rowcount:
            db.execute("DELETE FROM groups WHERE id NOT IN (SELECT DISTINCT group_id FROM votes)")
            db.execute("UPDATE groups SET networks = (SELECT COUNT(*) FROM votes WHERE group_id = groups.id)")

    # ------------------------------------------------------------------ publishing

    def published(self) -> JsonObject:
        """GET /api/fleet's document, rebuilt only after a report (or when an hour old: votes age out)."""
        with self._lock:
            now = self.clock()
            if self._db is None and self.path != ":memory:" and not Path(self.path).exists():
                return self._document([], 0, now)  # nothing reported yet: no file made for a reader
            if self._stale(now):
                db = self._open()
                if now - self._pruned_at >= PRUNE_EVERY:
                    self._prune(db, now)
                began = time.perf_counter()
                self._published, self._built_at = self._build(db, now), now
                self._built_reports = self._published["reports"]
                self._build_cost = time.perf_counter() - began
            assert self._published is not None
            return self._published

    def _reports_moved(self) -> bool:
        """Reports were folded since the last build, by this process or another on the same file (a Ray replica):
        one indexed read of the counter every fold moves."""
        if self._db is None:
            return False
        return self._db.execute("SELECT value FROM meta WHERE key = 'reports'").fetchone()[0] != self._built_reports

    def _stale(self, now: float) -> bool:
        if self._published is None or now - self._built_at >= REFRESH_EVERY:
            return True
        spaced = self._build_cost < SLOW_BUILD or now - self._built_at >= REBUILD_SPACING * self._build_cost
        return spaced and self._reports_moved()

    def _build(self, db: sqlite3.Connection, now: float) -> JsonObject:
        votes: dict[int, list[tuple]] = {}
        for row in db.execute(
            "SELECT group_id, fail, metric_name, metric_value, create_ms, first_run_ms, warm_run_ms FROM votes"
        ):
            votes.setdefault(row[0], []).append(row[1:])
        groups = []
        for gid, sha256, runtime, cls, model, variant, form in db.execute(
            "SELECT id, sha256, runtime, class, model, variant, form FROM groups"
        ):
            group_votes = votes.get(gid)
            if group_votes:
                groups.append(self._group(sha256, runtime, json.loads(cls), model, variant, form, group_votes))
        groups.sort(key=lambda g: (g["model"], g["variant"], g["sha256"], g["runtime"], g["class_key"]))
        reports = db.execute("SELECT value FROM meta WHERE key = 'reports'").fetchone()[0]
        return self._document(groups, reports, now)

    def _document(self, groups: list[JsonObject], reports: int, now: float) -> JsonObject:
        generated = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "schema": 1,
            "k": self.k,
            "fail_share": aggregation.FAIL_SHARE,
            "generated": generated,
            "reports": reports,
            "groups": groups,
        }

    def _group(
        self,
        sha256: str,
        runtime: str,
        cls: JsonObject,
        model: str,
        variant: str,
        form: str | None,
        votes: list[tuple],
    ) -> JsonObject:
        fails = [v for v in votes if v[0]]
        passes = [v for v in votes if not v[0]]
        return {
            "sha256": sha256,
            "runtime": runtime,
            "model": model,
            "variant": variant,
            "form": form,
            "class": cls,
            "class_key": class_key(cls),
            "clients": len(votes),
            "pass": len(passes),
            "fail": len(fails),
            "verdict": aggregation.verdict(len(passes), len(fails), self.k),
            "metric": aggregation.fail_metric([(v[1], v[2]) for v in fails]),
            "times": {
                name: aggregation.times([v[3 + i] for v in passes if v[3 + i] is not None], self.k)
                for i, name in enumerate(aggregation.TIMES)
            },
        }

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _upgrade(db: sqlite3.Connection, path: str) -> None:
    """A file of an older schema version: its votes go (they counted tokens), its secret and report count stay.
    A newer version than this code knows is an error (the store then keeps its votes in memory)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(f"its fleet schema is version {version}; this onnxport knows {SCHEMA_VERSION}")
    had_votes = db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'votes'").fetchone()[0]
    if version < SCHEMA_VERSION and had_votes:
        log.warning(
            "fleet: %s holds votes of fleet schema version %d (one per token); they are dropped and "
            "counting starts again by network (version %d)",
            path,
            version or 1,
            SCHEMA_VERSION,
        )
        db.executescript("BEGIN; DROP TABLE IF EXISTS votes; DROP TABLE IF EXISTS groups; COMMIT;")
