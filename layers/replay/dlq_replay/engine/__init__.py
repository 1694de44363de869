"""The replay engine: one decision for every kind of record, and the replayer that carries a
batch's decisions out.

- `kinds`: a kind of record is a strategy (`kinds.Kind`), one module each: how it is
  recognised, where it goes, whether its destination takes a delay, how it is delivered and
  what a refusal means. A new kind adds one module there and one line in `kinds.KIND_MODULES`.
- `decide`: the one skeleton (count, limits, backoff, then replay / defer / hold / release /
  park) that every kind's records go through, SQS included.
- `replayer` and `report`: one batch in, one outcome per record out; SQS copies are written
  with `sqs.sending`, the serverless kinds' deliveries with `targets` (loaded only for them).
"""
