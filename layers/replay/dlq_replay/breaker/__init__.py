"""The outage breaker. Nothing is imported here: a replay with the breaker closed imports only
what it uses (`function` makes its clients when first needed)."""
