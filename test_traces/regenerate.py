"""Rebuild every committed scenario under test_traces/: python test_traces/regenerate.py [NAME ...]"""

import sys

from scenarios import HERE, SCENARIOS, make


def main(names):
    for scenario in SCENARIOS:
        if scenario.committed and (not names or scenario.name in names):
            path = make(scenario, HERE / scenario.name)
            print(f"{scenario.name}: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
