"""The outage breaker, in one place: the rule (`rule`, pure), the controller over a store and
a switch (`controller`), its stores (`dynamo` for Lambda, `worker` in memory), Lambda's switch
and probe rule (`switch`, `function`). Nothing is imported here: a replay with the breaker
closed imports only what it uses (`function` makes its clients when first needed).
"""
