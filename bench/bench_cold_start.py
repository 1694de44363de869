"""Cold start of the built artifact: importing the handler and the first invocation's setup.

Each sample is a fresh Python process that imports the way Lambda does: `import boto3` (the
runtime provides it; measured alone as the baseline), then `app` from `.aws-sam/build` with the
function's folder and the layer's `python/` first on the path, then the handler's first-call
work (`app._replay()`: settings parsed, SQS client made, replayer built). Bytecode is never
written (`/opt` is read-only in Lambda), so the same run measures the layer as built (with
its unchecked-hash .pyc files) against a copy without them, the layer as it was built before.

    make build && python bench/bench_cold_start.py           # 15 processes a case
    python bench/bench_cold_start.py --smoke                   # CI: 3 a case
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".aws-sam" / "build"
ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "MAIN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/main",
    "OPERATOR_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/operator",
    "POWERTOOLS_SERVICE_NAME": "sqs-dlq-replay",
    "POWERTOOLS_METRICS_NAMESPACE": "SqsDlqReplay",
    "PYTHONDONTWRITEBYTECODE": "1",
}
# Runs in the fresh process: times in milliseconds, and where app came from.
PROBE = """
import json, sys, time
started = time.perf_counter()
import boto3
boto3_done = time.perf_counter()
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import app
app_done = time.perf_counter()
app._replay()
setup_done = time.perf_counter()
print(json.dumps({
    "boto3": (boto3_done - started) * 1000,
    "app": (app_done - boto3_done) * 1000,
    "setup": (setup_done - app_done) * 1000,
    "origin": app.__file__,
    "dlq_replay": sys.modules["dlq_replay"].__file__,
}))
"""


def sample(build: Path) -> dict[str, float]:
    function, layer = build / "ReplayFunction", build / "ReplayLayer" / "python"
    env = {**os.environ, **ENV}
    env.pop("PYTHONPATH", None)
    found = subprocess.run(
        [sys.executable, "-c", PROBE, str(function), str(layer)],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(found.stdout)
    if not str(result["dlq_replay"]).startswith(str(layer)):
        raise SystemExit(f"dlq_replay came from {result['dlq_replay']}, not from {layer}")
    return {key: float(result[key]) for key in ("boto3", "app", "setup")}


def without_bytecode(build: Path, into: Path) -> Path:
    copy = into / "build"
    shutil.copytree(build, copy)
    for cache in list(copy.rglob("__pycache__")):
        shutil.rmtree(cache)
    return copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="3 processes a case, for CI")
    parser.add_argument("--build-dir", type=Path, default=BUILD)
    args = parser.parse_args(argv)
    if not (args.build_dir / "ReplayLayer" / "python").is_dir():
        print(f"bench_cold_start: no build in {args.build_dir}: run `make build`", file=sys.stderr)
        return 1
    runs = 3 if args.smoke else 15
    command = "python bench/bench_cold_start.py" + (" --smoke" if args.smoke else "")
    print(f"bench_cold_start: median of {runs} fresh processes each ({command})")
    print(f"{'case':34} {'import boto3':>13} {'import app':>11} {'first call':>11}")
    with tempfile.TemporaryDirectory() as scratch:
        cases = {
            "layer without bytecode (before)": without_bytecode(args.build_dir, Path(scratch)),
            "layer as built (unchecked-hash)": args.build_dir,
        }
        medians: dict[str, dict[str, float]] = {}
        for name, build in cases.items():
            sample(build)  # warm the file cache
            samples = [sample(build) for _ in range(runs)]
            medians[name] = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            m = medians[name]
            print(f"{name:34} {m['boto3']:10.1f} ms {m['app']:8.1f} ms {m['setup']:8.1f} ms")
    before, after = medians.values()
    print(
        f"import app over boto3: {after['app']:.1f} ms, {before['app'] / after['app']:.1f}x faster "
        f"than without bytecode; first call's setup {after['setup']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
