"""The pure core: what the replay decides, and nothing it has to ask AWS.

Settings (parsed once into a frozen dataclass), the backoff policy, message attributes, queue
identities (names, ARNs, URLs), the inbound record and the outbound copy, and `decide`, the
fate of one record (docs/design.md, 'What happens to one record'). No boto3, no clock, no
random source, no I/O: everything here is a value in and a value out, so it is tested without
any emulator.
"""
