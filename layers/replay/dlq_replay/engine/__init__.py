"""The replay engine (docs/design.md, 'Recognition, by mode'): `kinds`, a strategy per kind of
record; `decide`, the one decision every kind's records go through; `replayer` and `report`,
one batch in, one outcome per record out.
"""
