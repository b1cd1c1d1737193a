"""The fleet in /metrics: reports by outcome, and the distinct networks of each group by verdict.

Its labels come only from the served manifest (model, variant), the browser runtimes and a closed set of
device classes (classes.metric_class): the scrape's size depends on the repository, never on the reports.
"""

from __future__ import annotations

from typing import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from onnxport.accuracy.browser_runtimes import NAMES as BROWSER_RUNTIMES
from onnxport.serving.fleet.classes import metric_class
from onnxport.serving.fleet.served import ServedFiles
from onnxport.serving.fleet.store import FleetStore

OUTCOMES = ("accepted", "invalid", "rate_limited")


class FleetMetrics:
    def __init__(self, store: FleetStore, registry: CollectorRegistry, served: Callable[[], ServedFiles]):
        self.reports = Counter("onnxport_fleet_reports", "Fleet reports by outcome", ["outcome"], registry=registry)
        for outcome in OUTCOMES:  # every outcome shows from the start, at 0
            self.reports.labels(outcome)
        registry.register(_Clients(store, served))

    def count(self, outcome: str) -> None:
        self.reports.labels(outcome).inc()


class _Clients(Collector):
    """Read at each scrape from the published document (cached): the groups of files served now, summed over
    the classes that share a metric class."""

    def __init__(self, store: FleetStore, served: Callable[[], ServedFiles]):
        self.store, self.served = store, served

    def collect(self) -> Iterator[GaugeMetricFamily]:
        served = self.served().by_sha256
        counts: dict[tuple[str, str, str, str], list[int]] = {}
        for group in self.store.published()["groups"]:
            files = served.get(group["sha256"], ())
            if group["runtime"] not in BROWSER_RUNTIMES or not any(
                (f.model, f.variant) == (group["model"], group["variant"]) for f in files
            ):
                continue  # a file no longer served (a new build): its votes stay, its series go
            labels = (group["model"], group["variant"], group["runtime"], metric_class(group["class"]))
            count = counts.setdefault(labels, [0, 0])
            count[0] += group["pass"]
            count[1] += group["fail"]
        family = _clients_family()
        for labels, (passes, fails) in sorted(counts.items()):
            family.add_metric([*labels, "pass"], passes)
            family.add_metric([*labels, "fail"], fails)
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        # Without it, register() would call collect() (and open the store) to learn the names.
        yield _clients_family()


def _clients_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "onnxport_fleet_clients",
        "Distinct networks voting in the fleet's groups of a served file, runtime and device class, by their verdict",
        labels=["model", "variant", "runtime", "device_class", "verdict"],
    )
