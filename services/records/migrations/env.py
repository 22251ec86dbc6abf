"""Alembic environment for the records schema, async-URL aware.

Programmatic use (the service at start, see ``services.records.db.migrate``) passes an open
synchronous connection in ``config.attributes["connection"]``. From the command line the URL
comes from the Paiju config (``DATABASE_URL`` or ``config/<env>.toml``) and an async engine
is driven with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from services.records.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


def _cli_url() -> str:
    from services.common.config import load_config

    return config.get_main_option("sqlalchemy.url") or load_config().records.database_url


if context.is_offline_mode():
    context.configure(url=_cli_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
elif (shared := config.attributes.get("connection")) is not None:
    _run(shared)
else:
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    asyncio.run(_run_async(_cli_url()))
