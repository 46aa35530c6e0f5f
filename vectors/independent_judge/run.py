"""Runs the independent judge on every session case of vectors/manifest.json."""
import json
import sys

from inputs import session_inputs
from judge import judge


def main():
    for case_id, client, server in session_inputs():
        j = judge(client, server)
        print(case_id, json.dumps(j.as_dict()))


if __name__ == "__main__":
    sys.exit(main())
