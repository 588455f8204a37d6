#!/bin/sh
# The streaming function's handler: the Lambda Web Adapter runs this, then forwards invocations to it.
exec python -m handlers.streaming
