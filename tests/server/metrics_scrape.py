"""`GET /metrics` read with prometheus_client's own text parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from .http_probe import get


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of `url`/metrics: (name, labels) -> value."""
    status, content_type, body = get(url + "/metrics")
    assert status == 200 and content_type.startswith("text/plain"), (status, content_type, body[:200])
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """A sample's value; 0 for a labelled series not counted yet."""
    return samples.get((name, frozenset(labels.items())), 0.0)
