"""initial records schema: players, hands, ledger, hand_events

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "players",
        sa.Column("user_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("nickname", sa.String(), nullable=False),
        sa.Column("head_url", sa.String(), nullable=False),
        sa.Column("sex", sa.Integer(), nullable=False),
        sa.Column("coins", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "hands",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("room_id", sa.BigInteger(), nullable=False),
        sa.Column("hand_no", sa.Integer(), nullable=False),
        sa.Column("game", sa.String(), nullable=False),
        sa.Column("is_final", sa.Boolean(), nullable=False),
        sa.Column("base_score", sa.Integer(), nullable=False),
        sa.Column("seats", sa.JSON(), nullable=False),
        sa.Column("deltas", sa.JSON(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("settled_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("room_id", "hand_no", name="uq_hands_room_hand"),
    )
    op.create_table(
        "ledger",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("room_id", sa.BigInteger(), nullable=False),
        sa.Column("hand_no", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("delta", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("counterparty_user_id", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_ledger_room_id", "ledger", ["room_id"])
    op.create_index("ix_ledger_user_id", "ledger", ["user_id"])
    op.create_table(
        "hand_events",
        sa.Column("room_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("hand_no", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("idx", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("to_seat", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("frame", sa.LargeBinary(), nullable=False),
        sa.Column("json", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("hand_events")
    op.drop_index("ix_ledger_user_id", table_name="ledger")
    op.drop_index("ix_ledger_room_id", table_name="ledger")
    op.drop_table("ledger")
    op.drop_table("hands")
    op.drop_table("players")
