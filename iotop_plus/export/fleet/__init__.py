"""The fleet client: many hosts' disks through the Prometheus HTTP API.

- :mod:`.client`: the HTTP API calls, bounded in time and depth (the server is not trusted);
- :mod:`.queries`: the PromQL, over the metric names the exporter defines;
- :mod:`.rounds`: a ranked round over every (host, device), and one device's history.
"""

from iotop_plus.export.fleet.client import (
    DEFAULT_TIMEOUT_S,
    MAX_JSON_DEPTH,
    MAX_RESPONSE_BYTES,
    PrometheusClient,
    PrometheusError,
    json_depth,
    label_text,
)
from iotop_plus.export.fleet.queries import (
    DEFAULT_WINDOW,
    FLEET_QUERIES,
    HISTORY_QUERIES,
    selector,
)
from iotop_plus.export.fleet.rounds import FleetRound, FleetRow, device_history, fleet_round

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_WINDOW",
    "FLEET_QUERIES",
    "HISTORY_QUERIES",
    "MAX_JSON_DEPTH",
    "MAX_RESPONSE_BYTES",
    "FleetRound",
    "FleetRow",
    "PrometheusClient",
    "PrometheusError",
    "device_history",
    "fleet_round",
    "json_depth",
    "label_text",
    "selector",
]
