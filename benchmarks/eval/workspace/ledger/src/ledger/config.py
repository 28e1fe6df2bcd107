"""Settings from the environment, read once at startup."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    database_url: str
    direct_database_url: str
    fx_rate_ttl: int
    sql_echo: bool
    otel_endpoint: str


def _flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in {"1", "true", "yes"}


def load_settings() -> Settings:
    """PgBouncer for the app, the direct port for Alembic (advisory locks)."""
    url = os.environ["LEDGER_DATABASE_URL"]
    direct = os.environ.get("LEDGER_DIRECT_DATABASE_URL", url.replace(":6432", ":5432"))
    return Settings(
        database_url=url,
        direct_database_url=direct,
        fx_rate_ttl=int(os.environ.get("FX_RATE_TTL", "900")),
        sql_echo=_flag("LEDGER_SQL_ECHO"),
        otel_endpoint=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector:4317"),
    )
