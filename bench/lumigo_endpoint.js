// Loaded by bench_end_to_end.py into lumigo-cli (node --require): points the AWS SDK for
// JavaScript's SQS clients at the benchmark's in-memory SQS, through the SDK's own
// service-specific configuration (AWS.config.sqs.endpoint); nothing else is changed.
const AWS = require(process.env.BENCH_AWS_SDK);
AWS.config.update({ sqs: { endpoint: process.env.BENCH_SQS_ENDPOINT } }, true);
