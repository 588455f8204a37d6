#!/bin/sh
# The streaming function's handler: the Lambda Web Adapter runs this, then forwards invocations to it.
# The paths follow the adapter's Python examples (github.com/awslabs/aws-lambda-web-adapter, examples/
# fastapi-response-streaming-zip/app/run.sh): the package's own scripts, then layers (/opt/python) and the
# runtime's own directory ($LAMBDA_RUNTIME_DIR, where the managed runtime keeps boto3) after the package.
export PATH="$PATH:$LAMBDA_TASK_ROOT/bin"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}/opt/python:$LAMBDA_RUNTIME_DIR"
exec python -m stratus.handlers.streaming
