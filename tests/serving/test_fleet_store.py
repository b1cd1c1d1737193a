"""The fleet's store (docs/reference/fleet.md): one vote per network and group (a client's token replaces its own), its
bounds (groups a network makes an hour, and a full store that never evicts an established group), the aggregation
rule, its schema version, and nothing written but the listed columns: no token, no address, no network."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fixtures.fleet import report, result, served_double
from fixtures.servers import buffered_client
from onnxport.serving.app import create_app
from onnxport.serving.fleet import aggregation
from onnxport.serving.fleet.classes import class_key, cores_bucket
from onnxport.serving.fleet.limits import RateLimit
from onnxport.serving.fleet.networks import network
from onnxport.serving.fleet.reports import Report
from onnxport.serving.fleet.store import DAY, HOUR, SCHEMA_VERSION, FleetStore

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "fleet_classes.json").read_text())
DEVICE = {
    "engine": "Firefox",
    "engine_major": 128,
    "adapter_vendor": "",
    "adapter_architecture": "",
    "software_adapter": True,
    "cores": "2",
}
SHA = "ab" * 32


def token(i: int) -> str:
    return f"client-{i:015d}"


def folded(
    store: FleetStore,
    client: int,
    verdict: str = "pass",
    warm: float | None = 1.0,
    sha: str = SHA,
    runtime: str = "wasm",
    device: dict = DEVICE,
    network: str | None = None,
) -> int:
    """client's report of one result, from `network` (by default a network of the client's own)."""
    body = report(token(client), device, [result(sha, "m", "fp32", runtime, verdict, warm)])
    return store.fold(Report.model_validate(body), network or f"198.51.{client}.0/24")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("cores", "bucket"), VECTORS["cores"])
def test_cores_buckets_match_the_shared_vectors(cores, bucket):
    assert cores_bucket(cores) == bucket


@pytest.mark.parametrize(("cls", "key"), VECTORS["keys"], ids=[key for _, key in VECTORS["keys"]])
def test_class_keys_match_the_shared_vectors(cls, key):
    assert class_key(cls) == key


@pytest.mark.parametrize(
    ("passes", "fails", "expected"),
    [
        (1, 1, "few"),
        (0, 2, "few"),
        (0, 3, "fail"),
        (1, 2, "mixed"),
        (2, 4, "fail"),
        (3, 4, "mixed"),
        (3, 0, "pass"),
        (2, 1, "mixed"),
        (4, 2, "pass"),
        (30, 70, "fail"),
        (34, 66, "mixed"),
        (10, 2, "pass"),
    ],
)
def test_the_verdict_rule(passes, fails, expected):
    assert aggregation.verdict(passes, fails, k=3) == expected


def test_times_need_k_clients_and_are_quantiles_of_one_value_each():
    assert aggregation.times([1.0, 2.0], k=3) is None
    found = aggregation.times([float(v) for v in range(1, 11)], k=3)
    assert found == {"median": 5.5, "p10": 1.9, "p25": 3.25, "p75": 7.75, "p90": 9.1, "clients": 10}
    assert aggregation.times([4.0], k=1) == {
        "median": 4.0,
        "p10": 4.0,
        "p25": 4.0,
        "p75": 4.0,
        "p90": 4.0,
        "clients": 1,
    }


@pytest.mark.parametrize("count", [2, 3, 7, 100, 1000])
def test_times_agree_with_numpy_percentiles(count):
    values = list(np.random.default_rng(count).lognormal(2, 1, count))
    found = aggregation.times(values, k=1)
    expected = np.percentile(values, [50, 10, 25, 75, 90])
    assert [found[name] for name in ("median", "p10", "p25", "p75", "p90")] == pytest.approx(expected, abs=1e-3)


def test_a_clients_later_report_replaces_its_vote(tmp_path):
    store = FleetStore(tmp_path / "f.sqlite3", k=2)
    folded(store, 1, "fail", None)
    folded(store, 1, "pass", 5.0)
    folded(store, 2, "pass", 7.0)
    group = store.published()["groups"][0]
    assert (group["clients"], group["pass"], group["fail"], group["verdict"]) == (2, 2, 0, "pass")
    assert group["times"]["warm_run_ms"]["median"] == 6.0
    assert store.published()["reports"] == 3


def test_counts_survive_a_restart_and_a_client_is_still_one(tmp_path):
    FleetStore(tmp_path / "f.sqlite3")
    folded(first := FleetStore(tmp_path / "f.sqlite3"), 1)
    first.close()
    second = FleetStore(tmp_path / "f.sqlite3")
    folded(second, 1)
    assert second.published()["groups"][0]["clients"] == 1
    assert second.published()["reports"] == 2


def test_at_most_max_clients_votes_per_group_the_oldest_go(tmp_path):
    clock = Clock()
    store = FleetStore(tmp_path / "f.sqlite3", k=1, max_clients=5, clock=clock)
    for client in range(8):
        clock.now += 1
        folded(store, client, "fail" if client < 3 else "pass")
    group = store.published()["groups"][0]
    assert (group["clients"], group["fail"], group["pass"]) == (5, 0, 5), "the 3 oldest (the fails) went"


def test_one_networks_many_tokens_are_one_vote_and_move_no_verdict_or_median(tmp_path):
    store = FleetStore(tmp_path / "f.sqlite3", k=3)
    for client in range(10):
        folded(store, client, "pass", 10.0 + client)
    for client in range(100, 700):  # 600 fresh tokens from one network, failing it at absurd times
        folded(store, client, "fail", 0.01, network="203.0.113.0/24")
    group = store.published()["groups"][0]
    assert (group["clients"], group["pass"], group["fail"], group["verdict"]) == (11, 10, 1, "pass")
    assert group["times"]["warm_run_ms"]["median"] == 14.5
    with sqlite3.connect(tmp_path / "f.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM votes").fetchone()[0] == 11, "a network keeps one vote: its latest"


def test_a_client_that_moves_to_another_network_replaces_its_own_vote(tmp_path):
    store = FleetStore(tmp_path / "f.sqlite3", k=1)
    folded(store, 1, "fail", None, network="192.0.2.0/24")
    folded(store, 1, "pass", 3.0, network="2001:db8:1::/48")
    group = store.published()["groups"][0]
    assert (group["clients"], group["pass"], group["fail"]) == (1, 1, 0)


def test_a_network_creates_at_most_network_groups_an_hour(tmp_path):
    clock = Clock()
    store = FleetStore(tmp_path / "f.sqlite3", network_groups=3, clock=clock)
    assert [folded(store, 1, runtime=f"r{i}", network="192.0.2.0/24") for i in range(5)] == [1, 1, 1, 0, 0]
    assert folded(store, 2, runtime="r0", network="192.0.2.0/24") == 1, "a vote in a group that exists is no new group"
    assert folded(store, 3, runtime="r3", network="198.51.100.0/24") == 1, "another network has its own share"
    clock.now += HOUR + 1
    assert folded(store, 1, runtime="r4", network="192.0.2.0/24") == 1
    assert len(store.published()["groups"]) == 5


def test_a_full_store_never_evicts_a_group_with_k_networks(tmp_path):
    clock = Clock()
    store = FleetStore(tmp_path / "f.sqlite3", k=2, max_groups=4, network_groups=1000, clock=clock)
    for runtime in ("good-1", "good-2"):  # established: k networks each
        for client in (1, 2):
            clock.now += 1
            folded(store, client, runtime=runtime)
    clock.now += 1
    folded(store, 3, runtime="young")  # an honest group with one network so far
    flood = [folded(store, 100 + i, runtime=f"fake-{i}", network="203.0.113.0/24") for i in range(50)]
    runtimes = sorted(g["runtime"] for g in store.published()["groups"])
    # the flooder made the most groups: its own go first, the young honest group stays
    assert runtimes == ["fake-49", "good-1", "good-2", "young"] and flood == [1] * 50
    folded(store, 4, runtime="young")  # now established too
    folded(store, 5, runtime="other-young", network="198.51.100.0/24")
    assert sorted(g["runtime"] for g in store.published()["groups"]) == ["good-1", "good-2", "other-young", "young"]
    assert folded(store, 6, runtime="refused", network="192.0.2.0/24") == 1, "other-young (one network) gives way"
    folded(store, 7, runtime="refused")  # k networks: all four groups are established
    assert folded(store, 8, runtime="no-room", network="192.0.2.0/24") == 0, "full of established groups: refused"
    assert sorted(g["runtime"] for g in store.published()["groups"]) == ["good-1", "good-2", "refused", "young"]


def test_votes_older_than_max_age_are_dropped(tmp_path):
    clock = Clock()
    store = FleetStore(tmp_path / "f.sqlite3", k=1, max_age_days=90, clock=clock)
    folded(store, 1, runtime="old")
    clock.now += 60 * DAY
    folded(store, 2, runtime="young")
    clock.now += 31 * DAY
    assert [g["runtime"] for g in store.published()["groups"]] == ["young"]
    with sqlite3.connect(tmp_path / "f.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM groups").fetchone()[0] == 1


def test_a_store_that_cannot_be_written_keeps_votes_in_memory(tmp_path, caplog):
    store = FleetStore(tmp_path / "no such folder" / "f.sqlite3", k=1)
    folded(store, 1)
    assert store.path == ":memory:" and store.published()["groups"][0]["clients"] == 1
    assert [r.message for r in caplog.records if "fleet" in r.message][0].startswith("fleet: cannot write")


def test_reading_an_empty_fleet_writes_no_file(tmp_path):
    store = FleetStore(tmp_path / "f.sqlite3")
    assert store.published()["groups"] == [] and not (tmp_path / "f.sqlite3").exists()


def test_nothing_is_written_but_the_listed_columns_no_token_no_address(tmp_path):
    root, sha256 = served_double(tmp_path)
    client = buffered_client(create_app({"repository": root, "request_log": "off"}))
    tokens = [f"secret-token-{i:012d}" for i in range(5)]
    addresses = ["127.0.0.1", "127.1.2.3", "::ffff:127.9.8.7", "2001:db8:77::1", "2001:db8:78:1:2:3:4:5"]
    for i, (client_token, address) in enumerate(zip(tokens, addresses)):
        body = report(client_token, DEVICE, [result(sha256, "double", "fp32", "wasm", "pass", 1.0 + i)])
        answer = client.post("/api/fleet/reports", json=body, environ_base={"REMOTE_ADDR": address})
        assert answer.status_code == 202
    db = sqlite3.connect(root / "fleet.sqlite3")
    columns = {
        table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert columns == {
        "meta": ["key", "value"],
        "groups": [
            "id",
            "sha256",
            "runtime",
            "class",
            "model",
            "variant",
            "form",
            "seen",
            "creator",
            "created",
            "networks",
        ],
        "votes": [
            "group_id",
            "client",
            "network",
            "at",
            "fail",
            "metric_name",
            "metric_value",
            "create_ms",
            "first_run_ms",
            "warm_run_ms",
        ],
    }
    assert sorted(row[0] for row in db.execute("SELECT key FROM meta")) == ["reports", "secret"]
    cells = [cell for table in columns for row in db.execute(f"SELECT * FROM {table}") for cell in row]
    clients = [row[0] for row in db.execute("SELECT client FROM votes")]
    networks = [row[0] for row in db.execute("SELECT network FROM votes")]
    db.close()
    assert len(set(clients)) == 5 and all(len(c) == 8 for c in clients), "8 bytes of HMAC per client"
    assert len(set(networks)) == 5 and all(len(n) == 8 for n in networks), "8 bytes of HMAC per network"
    text = b"".join(c if isinstance(c, bytes) else str(c).encode() for c in cells)
    # neither a token nor an address, nor a network's prefix in any spelling
    secrets = [
        *(t.encode() for t in tokens),
        *(a.encode() for a in addresses),
        b"127.0.0.",
        b"127.1.2.",
        b"127.9.8.",
        b"2001:db8",
        b"::ffff",
    ]
    for secret in secrets:
        assert secret not in text
    on_disk = b"".join(p.read_bytes() for p in root.glob("fleet.sqlite3*"))  # the WAL too
    for secret in secrets:
        assert secret not in on_disk


def test_a_file_of_the_older_schema_keeps_its_secret_and_count_and_counts_anew(tmp_path, caplog):
    """Version 1 (one vote per token, no network) cannot be carried over: its votes go, the rest stays."""
    path = tmp_path / "f.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
            CREATE TABLE groups (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, runtime TEXT NOT NULL,
                class TEXT NOT NULL, model TEXT NOT NULL, variant TEXT NOT NULL, form TEXT, seen REAL NOT NULL,
                UNIQUE (sha256, runtime, class));
            CREATE TABLE votes (group_id INTEGER NOT NULL, client BLOB NOT NULL, at REAL NOT NULL,
                fail INTEGER NOT NULL, metric_name TEXT, metric_value REAL, create_ms REAL, first_run_ms REAL,
                warm_run_ms REAL, PRIMARY KEY (group_id, client)) WITHOUT ROWID;
            INSERT INTO meta VALUES ('secret', x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff');
            INSERT INTO meta VALUES ('reports', 41);
            INSERT INTO groups VALUES (1, 'ab', 'wasm', '{}', 'm', 'fp32', NULL, 1.0);
            INSERT INTO votes VALUES (1, x'0011223344556677', 1.0, 1, NULL, NULL, NULL, NULL, NULL);""")
    db.close()
    store = FleetStore(path, k=1)
    assert store.published()["reports"] == 41 and store.published()["groups"] == []
    folded(store, 1)
    document = store.published()
    assert (document["reports"], len(document["groups"])) == (42, 1)
    secret = bytes.fromhex("00112233445566778899aabbccddeeff" * 2)
    assert store.client_id("x") == hmac.new(secret, b"x", hashlib.sha256).digest()[:8], "the same secret"
    assert any("fleet schema version 1" in r.message for r in caplog.records)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_a_file_of_a_newer_schema_is_left_alone_and_votes_kept_in_memory(tmp_path, caplog):
    path = tmp_path / "f.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    store = FleetStore(path, k=1)
    folded(store, 1)
    assert store.path == ":memory:" and store.published()["groups"][0]["clients"] == 1
    assert any(f"fleet schema is version {SCHEMA_VERSION + 1}" in r.message for r in caplog.records)


def test_a_rate_limit_refills_with_time():
    clock = Clock()
    limit = RateLimit(2, clock=clock, max_keys=2)
    assert [limit.take(b"a") for _ in range(3)] == [None, None, 30]
    clock.now += 30
    assert limit.take(b"a") is None
    limit.take(b"b"), limit.take(b"c")  # a is forgotten: the dict stays bounded
    assert len(limit._buckets) == 2


def test_a_second_store_on_the_same_file_publishes_the_firsts_reports(tmp_path):
    """Ray replicas share the sqlite file: each one's published document follows the others' reports."""
    path = tmp_path / "fleet.sqlite3"
    writer, reader = FleetStore(path, k=1), FleetStore(path, k=1)
    folded(writer, 1)
    assert reader.published()["reports"] == 1
    folded(writer, 2)
    document = reader.published()
    assert (document["reports"], document["groups"][0]["clients"]) == (2, 2)
    writer.close()
    reader.close()


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("203.0.113.9", "203.0.113.0/24"),
        ("203.0.113.250", "203.0.113.0/24"),
        ("127.0.0.1", "127.0.0.0/24"),
        ("::ffff:203.0.113.9", "203.0.113.0/24"),  # a dual-stack socket's IPv4 peer is that IPv4 address
        ("2001:db8:1:2::3", "2001:db8:1::/48"),
        ("2001:db8:1:ffff:1:2:3:4", "2001:db8:1::/48"),
        ("::1", "::/48"),
        ("fe80::1%eth0", "fe80::/48"),
        ("", "not-an-ip:"),
        (None, "not-an-ip:"),
        ("unix-socket", "not-an-ip:unix-socket"),
    ],
)
def test_a_reports_network_is_its_ipv4_24_or_ipv6_48(address, expected):
    assert network(address) == expected
