"""The ServerFrame bytes the lobby writes by hand (paiju/frames.py: a relayed frame's seq
field, a batch written around its frames' serializations) are byte for byte what protobuf
writes for the same message."""

from __future__ import annotations

from paiju import frames
from paiju.v1 import client_pb2, lobby_msgs_pb2

# one-, two-, three- and ten-byte varints, and the edges between them
SEQS = [1, 2, 127, 128, 255, 300, 16_383, 16_384, 2**21, 2**32 + 5, 2**63 + 1, 2**64 - 1]


def alert(size: int, seq: int, *, reply_to: int = 0, event_uid: str = "") -> client_pb2.ServerFrame:
    frame = frames.server_frame(lobby_msgs_pb2.DistanceAlert(alert="x" * size),
                                reply_to=reply_to, event_uid=event_uid)
    frame.seq = seq
    return frame


def test_the_seq_field_is_what_protobuf_writes() -> None:
    for seq in [*range(0, 1000), *SEQS]:
        assert frames.seq_field(seq) == client_pb2.ServerFrame(seq=seq).SerializeToString()


def test_a_seq_field_in_front_of_a_frame_without_seq_is_the_frame_with_it() -> None:
    body = alert(40, 0, reply_to=9, event_uid="500001:3:17").SerializeToString()
    for seq in SEQS:
        expected = alert(40, seq, reply_to=9, event_uid="500001:3:17")
        assert frames.seq_field(seq) + body == expected.SerializeToString()


def test_a_batch_is_byte_for_byte_the_message_protobuf_makes() -> None:
    # frames of one-, two- and three-byte lengths, seqs of several widths; a batch of one,
    # and a batch whose own length needs three bytes
    for sizes in [(1,), (1, 2, 200, 5000), (100, 20_000), (0,) * 64]:
        batch = [alert(size, seq) for size, seq in zip(sizes, SEQS * 6, strict=False)]
        made = frames.encode_batch([f.SerializeToString() for f in batch])
        expected = client_pb2.ServerFrame(
            event_id=frames.event_id_of(client_pb2.ServerFrames()))
        expected.batch.frames.extend(batch)
        assert made == expected.SerializeToString()
        back = client_pb2.ServerFrame.FromString(made)
        assert back.WhichOneof("payload") == "batch" and list(back.batch.frames) == batch
