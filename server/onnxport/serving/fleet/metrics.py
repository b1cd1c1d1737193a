"""The fleet in /metrics: reports by outcome, and the distinct clients of each group by verdict."""

from __future__ import annotations

from typing import Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from onnxport.serving.fleet.store import FleetStore

OUTCOMES = ("accepted", "invalid", "rate_limited")


class FleetMetrics:
    def __init__(self, store: FleetStore, registry: CollectorRegistry):
        self.reports = Counter("onnxport_fleet_reports", "Fleet reports by outcome", ["outcome"], registry=registry)
        for outcome in OUTCOMES:  # every outcome shows from the start, at 0
            self.reports.labels(outcome)
        registry.register(_Clients(store))

    def count(self, outcome: str) -> None:
        self.reports.labels(outcome).inc()


class _Clients(Collector):
    """Read at each scrape from the published document (cached; bounded by fleet_max_groups)."""

    def __init__(self, store: FleetStore):
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = _clients_family()
        for group in self.store.published()["groups"]:
            for verdict in ("pass", "fail"):
                family.add_metric([group["model"], group["variant"], group["runtime"], group["class_key"], verdict],
                                  group[verdict])
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        # Without it, register() would call collect() (and open the store) to learn the names.
        yield _clients_family()


def _clients_family() -> GaugeMetricFamily:
    return GaugeMetricFamily("onnxport_fleet_clients", "Distinct clients of a fleet group, by their verdict",
                             labels=["model", "variant", "runtime", "device_class", "verdict"])
