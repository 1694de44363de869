"""The Lambda adapter: Lambda's SQS event in, the partial-batch response out.

`LambdaReplay` wires the replayer into Powertools' batch processors (`BatchProcessor`, or
`SqsFifoPartialProcessor` on FIFO), so the response shape and the FIFO rule are Powertools'
own. `functions/replay/app.py` is a thin handler over it.
"""
