"""The Paiju wire protocol: generated code in ``paiju.v1`` (``make protos``) and the small
hand-written helpers in :mod:`paiju.frames` that every service and client shares."""
