"""`python bench/moto_serve.py TABLE`: moto's DynamoDB server with TABLE created, in a process of its own.

Prints the endpoint on one line, then serves until its stdin closes. It runs apart from bench/run.py so that the
parent stays small: a child's peak RSS (from `wait4`) starts from its parent's size at fork.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import boto3

from stratus.stores.dynamodb.schema import create_table
from tests.fixtures.moto_server import SerialMotoServer


def main() -> None:
    server = SerialMotoServer()
    endpoint = server.start()
    keys = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
    create_table(boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **keys), sys.argv[1])
    print(endpoint, flush=True)
    sys.stdin.read()
    server.stop()


main()
