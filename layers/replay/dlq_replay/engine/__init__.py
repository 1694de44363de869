"""The replay engine: a strategy per kind of record, one decision, one batch in and out."""
