"""ratings: per game and season (0 all-time), their history per hand, and the seasons

Expand only: new tables; the previous release's queries never touch them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rating_seasons",
        sa.Column("game", sa.String(), primary_key=True),
        sa.Column("season", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("started_by", sa.String(), nullable=False),
    )
    op.create_table(
        "ratings",
        sa.Column("game", sa.String(), primary_key=True),
        sa.Column("season", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("user_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("hands", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_ratings_board", "ratings", ["game", "season", "score"])
    op.create_table(
        "rating_history",
        sa.Column("game", sa.String(), primary_key=True),
        sa.Column("season", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("user_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("room_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("hand_no", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("mu", sa.Float(), nullable=False),
        sa.Column("sigma", sa.Float(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rating_history")
    op.drop_index("ix_ratings_board", table_name="ratings")
    op.drop_table("ratings")
    op.drop_table("rating_seasons")
